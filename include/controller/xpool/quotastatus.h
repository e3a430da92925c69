/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The ResourceQuota status controller: keeps each quota's status.hard (its spec.hard) and
 * status.used (what the namespace's pods that are not done hold of each resource) current,
 * level-triggered over the informer: a change of a quota or of a pod queues its namespace, and
 * the namespace's quotas are recomputed from the store. kubectl describe quota and kubectl get
 * quota show what it writes; admission (src/registry/quota.c) counts from the pods themselves.
 *
 * Lifecycle as every controller's (docs/development.md): _new (listed, no thread), _start (with
 * its thread), _step (one round, for tests), _free (stops the thread first).
 */

#include "xpool/error.h"

struct xp_registry;
struct xp_quotastatus;

int xp_quotastatus_new(struct xp_registry *registry,
                       struct xp_quotastatus **ret,
                       struct xp_error *err);
int xp_quotastatus_start(struct xp_registry *registry,
                         struct xp_quotastatus **ret,
                         struct xp_error *err);
/* Informer sync and the queued namespaces; 0 or the store's errors. */
int xp_quotastatus_step(struct xp_quotastatus *c, struct xp_error *err);
/* NULL is fine. */
void xp_quotastatus_free(struct xp_quotastatus *c);
