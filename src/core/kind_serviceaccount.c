/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ServiceAccount (v1), a document kind (xpool/doc.h): the identity a pod's processes speak to the
 * API with (docs/security.md, "Service accounts"). Its tokens are not stored: TokenRequest signs
 * them on demand (src/server/api_token.c), so secrets lists only what the user wrote there.
 */
#include "protobuf_internal.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/kind.h"

/* ---- kubectl get serviceaccounts: NAME SECRETS AGE ------------------------------------------ */

static const struct table_column serviceaccount_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Secrets", .type = "string", .description = "The number of secrets listed."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
};

static int serviceaccount_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_int(cells,
                                   (int64_t)json_array_size(json_object_get(object, "secrets")));
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        return r;
}

static const struct xp_table_kind serviceaccount_table = {
    .kind = "ServiceAccount",
    .columns = serviceaccount_columns,
    .n_columns = XP_ELEMENTSOF(serviceaccount_columns),
    .row = serviceaccount_row,
};

/* core/v1 ServiceAccount's generated.proto */
MESSAGE(serviceaccount_pb,
        "core/v1 ServiceAccount",
        MSG(1, "metadata", xp_pb_object_meta),
        MSGS(2, "secrets", xp_pb_object_reference),
        MSGS(3, "imagePullSecrets", xp_pb_local_object_reference),
        BOOL_P(4, "automountServiceAccountToken"));

static const char *const serviceaccount_short_names[] = {"sa", NULL};

XP_DOC_KIND_DECODER(xp_kind_serviceaccount)

const struct xp_kind xp_kind_serviceaccount = {
    .kind = "ServiceAccount",
    .list_kind = "ServiceAccountList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "serviceaccounts",
    .singular = "serviceaccount",
    .short_names = serviceaccount_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_serviceaccount),
    .table = &serviceaccount_table,
    .protobuf = &serviceaccount_pb,
};
