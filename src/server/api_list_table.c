/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The items of a list's Table (kubectl get) read from the store's text: each object decoded less
 * the members no row reads (xp_table_object_decode()), rather than parsed whole. A pod's
 * managedFields, projected token volume and default tolerations are most of its text, and their
 * parse was most of the server's time on a Table of pods. The rows themselves are built and paged
 * as before (handle_list()), so the Table is the same one.
 *
 * What a row's object must show whole is not left out: with ?includeObject=Metadata the metadata
 * (managedFields too, as kube-apiserver's PartialObjectMetadata has them), and
 * ?includeObject=Object takes the general path (list_read()), whose objects are whole. A list at
 * an older version (a continued page's snapshot, resourceVersionMatch=Exact) also does.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "xpool/log.h"
#include "xpool/selector.h"
#include "xpool/store.h"
#include "xpool/table.h"

/* objects read from the store per step */
#define TABLE_READ_ROWS 64

struct table_read {
        const struct xp_label_selector *labels;
        const struct xp_field_selector *fields;
        bool filtered;
        bool whole_metadata;
        json_t *items;
};

static int add_item(const char *ns, const char *name, const char *text, size_t len, void *userdata)
{
        struct table_read *t = userdata;
        json_t *item = NULL;
        int r;

        if (t->filtered) {
                r = text_matches(t->labels, t->fields, text, len);
                if (r <= 0)
                        return r;
        }
        r = xp_table_object_decode(text, len, t->whole_metadata, &item);
        if (r == -EBADMSG) {
                /* the store wrote it: text it cannot follow is a broken store */
                xp_log(LOG_WARNING, "a stored object %s/%s is not JSON", ns, name);
                return -EIO;
        }
        if (r < 0)
                return r;
        return json_array_append_new(t->items, item) < 0 ? -ENOMEM : 0;
}

/* Whether the Table's items can be read here: the current list, rows without whole objects. */
static bool table_readable(const struct request *req,
                           const struct list_options *o,
                           enum xp_table_include *ret_include)
{
        if (!request_wants_table(req))
                return false;
        if (o->continue_token ? o->continue_rv > 0 : o->match == LIST_MATCH_EXACT && o->version)
                return false; /* an older snapshot: list_read() rewinds the objects */
        /* a bad value is answered by the general path */
        if (!table_include_parse(request_query(req, "includeObject"), ret_include))
                return false;
        return *ret_include != XP_TABLE_INCLUDE_OBJECT;
}

static int read_all(struct xp_store_cursor *cursor, struct table_read *t, struct xp_error *err)
{
        int r;

        do
                r = xp_store_list_next(cursor, TABLE_READ_ROWS, add_item, t, err);
        while (r > 0);
        return r;
}

int list_table_read(const struct request *req,
                    const struct xp_kind *kind,
                    const struct list_options *o,
                    json_t **ret_items,
                    uint64_t *ret_version,
                    bool *ret_filtered,
                    struct reply *ret)
{
        struct xp_label_selector *labels = NULL;
        struct xp_field_selector *fields = NULL;
        struct xp_store_cursor *cursor = NULL;
        enum xp_table_include include;
        struct xp_error err = {0};
        struct table_read t = {0};
        int r;

        if (!table_readable(req, o, &include))
                return 2;
        r = selectors_parse(req, kind, &labels, &fields, ret);
        if (r <= 0)
                return r;
        t = (struct table_read){
            .labels = labels,
            .fields = fields,
            .filtered = !xp_label_selector_is_empty(labels) || !xp_field_selector_is_empty(fields),
            .whole_metadata = include == XP_TABLE_INCLUDE_METADATA,
            .items = json_array(),
        };
        r = t.items ? xp_store_list_open(req->api->store,
                                         kind->plural,
                                         kind->namespaced ? req->namespace : "",
                                         &cursor,
                                         ret_version,
                                         &err)
                    : -ENOMEM;
        if (r >= 0)
                r = read_all(cursor, &t, &err);
        xp_store_list_close(cursor);
        xp_label_selector_free(labels);
        xp_field_selector_free(fields);
        if (r < 0) {
                json_decref(t.items);
                return r == -ENOMEM ? r : reply_store_error(ret, r, kind, NULL, &err);
        }
        *ret_filtered = t.filtered;
        *ret_items = t.items;
        return 1;
}
