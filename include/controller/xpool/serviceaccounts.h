/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What kube-controller-manager's serviceaccount and root-ca-cert-publisher controllers keep in
 * every namespace that is not being deleted: the ServiceAccount `default`, and the ConfigMap
 * `kube-root-ca.crt` whose `ca.crt` is the certificate pods trust the API server by. Level-
 * triggered over the informer: a namespace added, or one of the two objects changed or deleted,
 * queues the namespace, whose objects are then set right (created, or ca.crt set back).
 * docs/security.md, "Service accounts".
 *
 * Lifecycle as every controller's (docs/development.md): _new (listed, no thread), _start (with
 * its thread), _step (one round, for tests), _free (stops the thread first).
 */

#include "xpool/error.h"

#define XP_SERVICEACCOUNT_DEFAULT "default"
#define XP_ROOT_CA_CONFIGMAP      "kube-root-ca.crt"
#define XP_ROOT_CA_KEY            "ca.crt"

struct xp_registry;
struct xp_serviceaccounts;

/* ca_pem: the certificate (PEM) to publish; NULL publishes no ConfigMap (a server without TLS,
 * or one whose certificate is signed by a CA clients already trust). Copied. */
int xp_serviceaccounts_new(struct xp_registry *registry,
                           const char *ca_pem,
                           struct xp_serviceaccounts **ret,
                           struct xp_error *err);
int xp_serviceaccounts_start(struct xp_registry *registry,
                             const char *ca_pem,
                             struct xp_serviceaccounts **ret,
                             struct xp_error *err);
/* Informer sync and the queued namespaces; 0 or the store's errors. */
int xp_serviceaccounts_step(struct xp_serviceaccounts *c, struct xp_error *err);
/* NULL is fine. */
void xp_serviceaccounts_free(struct xp_serviceaccounts *c);

/*
 * Creates the ServiceAccount `default` in ns unless it exists (admission calls it too, so that
 * a pod created right after its namespace does not wait for the controller). 0 or -errno.
 */
int xp_serviceaccount_default_ensure(struct xp_registry *registry,
                                     const char *ns,
                                     struct xp_error *err);
