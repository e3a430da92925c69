/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The disruption controller's second queue: stale DisruptionTarget marks (disruption_stale.c). */

#include "nsqueue.h"

/* kube-controller-manager's stalePodDisruptionTimeout */
#define XP_DISRUPTION_STALE_SECONDS 120

/* Listed, no thread (xp_nsqueue_start(), xp_nsqueue_step(), xp_nsqueue_free()). */
int disruption_stale_new(struct xp_registry *registry,
                         struct xp_nsqueue **ret,
                         struct xp_error *err);
