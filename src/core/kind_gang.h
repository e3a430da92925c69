/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the scheduling.k8s.io/v1alpha2 gang kinds share (kind_gang_podgroup.c,
 * kind_gang_workload.c): a PodGroup's spec.schedulingPolicy and a Workload template's are one
 * type, checked in the same words.
 */

#include <jansson.h>
#include <stddef.h>

struct xp_decode_ctx;
struct xp_table_kind;

#define XP_GANG_MIN_MAX 10000 /* xpool's largest gang (XP_GANG_MEMBERS_MAX) */

/*
 * A union of which exactly one member is set, in the words of Kubernetes' declarative
 * validation of unions ("field: Invalid value: \"\": must specify exactly one of: `basic`,
 * `gang`"); expected lists the members as that message shows them. 0 or -EINVAL.
 */
int xp_gang_union_check(struct xp_decode_ctx *ctx,
                        const json_t *object,
                        const char *field,
                        const char *const members[],
                        size_t n,
                        const char *expected);

/* A name at field that must be given and be a DNS label (a pod group's, a template's, a
 * Workload's named by a template reference). 0 or -EINVAL. */
int xp_gang_name_check(struct xp_decode_ctx *ctx, const char *name, const char *field);

/* A schedulingPolicy at field: required, basic or gang, gang.minCount 1..XP_GANG_MIN_MAX. */
int xp_gang_policy_check(struct xp_decode_ctx *ctx, const json_t *policy, const char *field);

/* kubectl's table of a Workload, both versions: rows come from the stored (v1alpha1) form. */
extern const struct xp_table_kind xp_table_workload;
