/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Kubernetes' admission rules on a write the handlers have decoded and validated, before it is
 * stored (docs/security.md, "Node restriction"):
 *
 *   - NodeRestriction, for node tokens: a node registers its Node only with labels a kubelet may
 *     set, and afterwards changes neither its taints nor the labels that steer workloads
 *     (node-restriction.kubernetes.io/, and kubernetes.io/ or k8s.io/ labels other than the
 *     kubelet's own), so a stolen node token cannot attract pods; nor a configSource. Answered
 *     403 Forbidden in kube-apiserver's words.
 *   - A pod's spec changes only as kube-apiserver's ValidatePodUpdate allows
 *     (xp_registry_pod_update_check(): the images, activeDeadlineSeconds, added tolerations, ...;
 *     spec.nodeName only through the binding subresource): 422 Invalid in its words.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/*
 * object is what the write would store (encoded by the codec); stored is the object it
 * replaces and expected the version the write is based on (NULL and 0 for a create). A write
 * based on another version than stored's passes: the store's precondition answers it with 409,
 * as Kubernetes checks the version before admission. Returns 1 when the write may go on, 0 with
 * ret filled, or -ENOMEM.
 */
int admission_check(const struct request *req,
                    const struct xp_kind *kind,
                    const json_t *stored,
                    uint64_t expected,
                    const json_t *object,
                    struct reply *ret);

/* Whether NodeRestriction forbids a node to set, change or remove the label of that key. */
bool admission_node_label_forbidden(const char *key);

/*
 * A new pod against the ResourceQuotas of its namespace (src/registry/quota.c): 1 when it fits,
 * else 0 with ret filled (403 Forbidden: pods "x" is forbidden: exceeded quota: ...), or -ENOMEM.
 */
int admission_quota(const struct request *req, const json_t *pod, struct reply *ret);
/* ResourceQuota's object counts (count/configmaps, services, ...) of a new object of a kind that
 * is not a pod: 1 go on, 0 with ret (403, "exceeded quota: ..."), -ENOMEM. */
int admission_object_quota(const struct request *req,
                           const struct xp_kind *kind,
                           const json_t *object,
                           struct reply *ret);
/*
 * A new pod (JSON, changed in place) through the registry's pod admission, the one the workload
 * controllers' pods get too (xp_registry_pod_admit(): ServiceAccount, Priority, LimitRanger,
 * defaults): 1, or 0 with ret filled (403 Forbidden: pods "x" is forbidden: ...), or -ENOMEM.
 */
int admission_pod(const struct request *req, json_t *pod, struct reply *ret);

/* admission_downward.c: a new pod's fieldRef paths (env, downwardAPI volumes) as
 * kube-apiserver checks them: 1 when fine, 0 with ret filled (422 Invalid), -ENOMEM. */
int admission_downward(const struct xp_kind *kind, const json_t *pod, struct reply *ret);

/*
 * admission_serviceaccount.c: the namespace's `default` ServiceAccount is made when a new pod
 * runs as it and it is missing, before the namespace is held (admission_pod() then requires the
 * account): 1, -ENOMEM.
 */
int admission_serviceaccount(const struct request *req, const json_t *pod);
