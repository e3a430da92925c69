/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a list or a watch asks for in its query and headers: label and field selectors, and
 * Tables (kubectl get). Shared by api_objects.c and api_watch.c.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "xpool/selector.h"

bool query_flag(const char *value)
{
        return value && strcmp(value, "0") != 0 && strcasecmp(value, "false") != 0;
}

/* kubectl asks for Tables with Accept: application/json;as=Table;v=v1;g=meta.k8s.io,... */
bool request_wants_table(const struct request *req)
{
        const char *accept = request_header(req, "Accept");

        return accept && strstr(accept, "as=Table") && strstr(accept, "g=meta.k8s.io");
}

bool table_include_parse(const char *value, enum xp_table_include *ret)
{
        if (!value || !value[0] || strcmp(value, "Metadata") == 0)
                *ret = XP_TABLE_INCLUDE_METADATA;
        else if (strcmp(value, "None") == 0)
                *ret = XP_TABLE_INCLUDE_NONE;
        else if (strcmp(value, "Object") == 0)
                *ret = XP_TABLE_INCLUDE_OBJECT;
        else
                return false;
        return true;
}

/* Parses ?labelSelector= and ?fieldSelector=: 1 with both set, 0 with ret filled. */
int selectors_parse(const struct request *req,
                    const struct xp_kind *kind,
                    struct xp_label_selector **ret_labels,
                    struct xp_field_selector **ret_fields,
                    struct reply *ret)
{
        struct xp_label_selector *labels = NULL;
        struct xp_field_selector *fields = NULL;
        struct xp_error err = {0};
        const char *text;
        int r;

        text = request_query(req, "labelSelector");
        r = xp_label_selector_parse(text ? text : "", &labels, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_status(
                    ret, 400, "BadRequest", NULL, NULL, "%s", xp_error_message(&err));
        text = request_query(req, "fieldSelector");
        r = xp_field_selector_parse(text ? text : "", kind->kind, &fields, &err);
        if (r < 0) {
                xp_label_selector_free(labels);
                if (r == -ENOMEM)
                        return r;
                return reply_status(
                    ret, 400, "BadRequest", NULL, NULL, "%s", xp_error_message(&err));
        }
        *ret_labels = labels;
        *ret_fields = fields;
        return 1;
}

bool selectors_match(const struct xp_label_selector *labels,
                     const struct xp_field_selector *fields,
                     const json_t *object)
{
        return xp_label_selector_matches(
                   labels, json_object_get(json_object_get(object, "metadata"), "labels")) &&
               xp_field_selector_matches(fields, object);
}
