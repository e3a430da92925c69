/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ControllerRevision (apps/v1), a document kind (xpool/doc.h): an immutable snapshot of a
 * controller's state (the DaemonSet controller keeps one per pod template it has run, data being
 * the patch that puts that template back), what `kubectl rollout history|undo daemonset` read.
 * Kubernetes' validation (revision not negative, data set and immutable) and kubectl's table
 * (NAME CONTROLLER REVISION AGE).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/macro.h"

static int
revision_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const json_t *revision = json_object_get(doc->body, "revision");
        struct xp_ge_msg m;

        if (json_is_integer(revision) && json_integer_value(revision) < 0)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "revision",
                                     "%s",
                                     xp_ge_msg_int(&m, json_integer_value(revision), 0));
        if (!json_is_object(json_object_get(doc->body, "data")))
                return xp_fail_field(ctx, -EINVAL, "data", "Required value");
        if (old &&
            !json_equal(json_object_get(doc->body, "data"), json_object_get(old->body, "data")))
                return xp_fail_field(ctx, -EINVAL, "data", "Invalid value: field is immutable");
        return 0;
}

/* ---- kubectl get controllerrevisions: NAME CONTROLLER REVISION AGE ------------------------ */

static const struct table_column revision_columns[] = {
    {.name = "Name",
     .type = "string",
     .format = "name",
     .description = "Name must be unique within a namespace."},
    {.name = "Controller", .type = "string", .description = "Controller of the object"},
    {.name = "Revision",
     .type = "integer",
     .description = "Revision indicates the revision of the state represented by Data."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
};

/* kind.group/name of the controller owner ("daemonset.apps/fluentd"), or NULL. */
static const char *controller_name(const json_t *o, char *buf, size_t size)
{
        const json_t *ref;
        size_t i;

        json_array_foreach(table_array(o, "metadata.ownerReferences"), i, ref)
        {
                if (!json_is_true(json_object_get(ref, "controller")))
                        continue;
                const char *api = table_str0(ref, "apiVersion"), *slash = strchr(api, '/');
                char kind[64];
                size_t k = 0;
                for (const char *p = table_str0(ref, "kind"); *p && k + 1 < sizeof(kind); p++)
                        kind[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
                kind[k] = '\0';
                if (slash)
                        snprintf(buf,
                                 size,
                                 "%s.%.*s/%s",
                                 kind,
                                 (int)(slash - api),
                                 api,
                                 table_str0(ref, "name"));
                else
                        snprintf(buf, size, "%s/%s", kind, table_str0(ref, "name"));
                return buf;
        }
        return NULL;
}

static int revision_row(const json_t *o, time_t now, json_t *cells, json_t *row)
{
        char controller[512];
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(o, "metadata.name"));
        if (r >= 0)
                r = table_cell_or_none(cells, controller_name(o, controller, sizeof(controller)));
        if (r >= 0)
                r = table_cell_int(cells, table_int(o, "revision"));
        if (r >= 0)
                r = table_cell_age(cells, o, "metadata.creationTimestamp", now);
        return r;
}

static const struct xp_table_kind revision_table = {
    .kind = "ControllerRevision",
    .columns = revision_columns,
    .n_columns = XP_ELEMENTSOF(revision_columns),
    .row = revision_row,
};

static const char *const revision_short_names[] = {NULL};

XP_DOC_KIND_DECODER(xp_kind_controllerrevision)

const struct xp_kind xp_kind_controllerrevision = {
    .kind = "ControllerRevision",
    .list_kind = "ControllerRevisionList",
    .group = "apps",
    .version = "v1",
    .api_version = "apps/v1",
    .plural = "controllerrevisions",
    .singular = "controllerrevision",
    .short_names = revision_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_controllerrevision),
    .doc_validate = revision_validate,
    .table = &revision_table,
};
