/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The apps/v1 document kinds (Deployment, ReplicaSet, DaemonSet): their defaults and entries
 * (kind_apps.c), validation (kind_apps_validate.c), tables (kind_apps_table.c) and protobuf
 * messages (kind_apps_proto.c).
 */

#include "schema.h"
#include "xpool/doc.h"

struct pb_message;
struct xp_table_kind;

int xp_apps_deployment_validate(struct xp_decode_ctx *ctx,
                                const struct xp_doc *doc,
                                const struct xp_doc *old);
int xp_apps_replicaset_validate(struct xp_decode_ctx *ctx,
                                const struct xp_doc *doc,
                                const struct xp_doc *old);
int xp_apps_daemonset_validate(struct xp_decode_ctx *ctx,
                               const struct xp_doc *doc,
                               const struct xp_doc *old);

/*
 * An IntOrString at path of body (absent: fine): an integer >= 0, or "N%" (at most 100% when
 * max100), in apps validation's words; *ret_zero tells whether it is 0 or "0%". 0 or -EINVAL.
 */
int xp_apps_check_intstr(
    struct xp_decode_ctx *ctx, const json_t *body, const char *path, bool max100, bool *ret_zero);

extern const struct xp_table_kind xp_table_deployment;
extern const struct xp_table_kind xp_table_replicaset;
extern const struct xp_table_kind xp_table_daemonset;

extern const struct pb_message xp_pb_deployment;
extern const struct pb_message xp_pb_replicaset;
extern const struct pb_message xp_pb_daemonset;
