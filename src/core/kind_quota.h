/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A ResourceQuota's scope checks (kind_quota_scopes.c), called from kind_quota.c. */

#include <jansson.h>
#include <stdbool.h>

struct xp_decode_ctx;

/*
 * kube-apiserver's validateResourceQuotaScopes and validateScopeSelector over spec: known scopes,
 * each scope fitting every standard resource of spec.hard (BestEffort: pods only; Terminating,
 * NotTerminating, NotBestEffort, PriorityClass, CrossNamespacePodAffinity: pods and cpu/memory
 * requests and limits), no conflicting pair, and each selector requirement's operator and values
 * as its scope wants them. The first error in Kubernetes' order and words (values shown as Go's
 * %#v shows them). 0 or -EINVAL through ctx, -ENOMEM.
 */
int xp_quota_scopes_validate(struct xp_decode_ctx *ctx, const json_t *spec);
/* IsStandardQuotaResourceName: a name the quota system counts (pods, cpu, requests.memory,
 * configmaps, services.nodeports, hugepages-<size>, ...). */
bool xp_quota_standard_resource(const char *name);
