/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A list's Table (kubectl get) from the store's text. Each object is decoded less the members no
 * row reads (xp_table_object_decode()) rather than parsed whole: a pod's managedFields, projected
 * token volume and default tolerations are most of its text, and their parse was most of the
 * server's time on a Table of pods. The rows are built and paged as before (handle_list()).
 *
 * A row's PartialObjectMetadata (?includeObject=Metadata, kube-apiserver's and so kubectl's
 * default) holds the whole metadata, managedFields too: it is copied as the store's text, which is
 * what encoding it again would write (text that is not ASCII is parsed and written escaped, as
 * the general path's answer has it). ?includeObject=Object takes the general path (list_read()),
 * whose objects are whole, and so does a list at an older version (a continued page's snapshot,
 * resourceVersionMatch=Exact).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
        size_t decoded_max; /* items past it only count (list_page()'s remainingItemCount) */
        json_t *items;
        json_t *metadata_texts; /* NULL when rows hold no metadata */
};

/* The metadata's text as reply_json() writes it: the store's when ASCII, else escaped. */
static json_t *metadata_text(const char *text, size_t len)
{
        json_t *metadata;
        char *escaped;

        if (len == 0)
                return json_string("{}"); /* a row without metadata holds an empty one */
        if (text_is_ascii(text, len))
                return json_stringn(text, len);
        metadata = json_loadb(text, len, 0, NULL);
        escaped = metadata ? json_dumps(metadata, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        json_decref(metadata);
        metadata = escaped ? json_string(escaped) : NULL;
        free(escaped);
        return metadata;
}

/* "namespace/name" of an item, as list_key() orders them. */
static void item_key(const json_t *item, char *buf, size_t size)
{
        const json_t *metadata = json_object_get(item, "metadata");
        const char *ns = json_string_value(json_object_get(metadata, "namespace"));
        const char *name = json_string_value(json_object_get(metadata, "name"));

        snprintf(buf, size, "%s/%s", ns ? ns : "", name ? name : "");
}

static int add_metadata_text(struct table_read *t, const json_t *item, const char *text, size_t len)
{
        char key[3 * XP_STORE_KEY_MAX + 8];

        item_key(item, key, sizeof key);
        return json_object_set_new(t->metadata_texts, key, metadata_text(text, len)) < 0 ? -ENOMEM
                                                                                         : 0;
}

static int add_item(const char *ns, const char *name, const char *text, size_t len, void *userdata)
{
        struct table_read *t = userdata;
        size_t start = 0, n = 0;
        json_t *item = NULL;
        int r;

        if (t->filtered) {
                r = text_matches(t->labels, t->fields, text, len);
                if (r <= 0)
                        return r;
        }
        if (json_array_size(t->items) >= t->decoded_max)
                return json_array_append_new(t->items, json_null()) < 0 ? -ENOMEM : 0;
        r = xp_table_object_decode(text, len, &item, &start, &n);
        if (r == -EBADMSG) {
                /* the store wrote it: text it cannot follow is a broken store */
                xp_log(LOG_WARNING, "a stored object %s/%s is not JSON", ns, name);
                return -EIO;
        }
        if (r >= 0 && t->metadata_texts)
                r = add_metadata_text(t, item, text + start, n);
        if (r < 0) {
                json_decref(item);
                return r;
        }
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
                    json_t **ret_metadata_texts,
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
            /* the page, and the first item after it (list_page() reads its key) */
            .decoded_max = o->limit > 0 && !o->continue_token ? (size_t)o->limit + 1 : SIZE_MAX,
            .items = json_array(),
            .metadata_texts = include == XP_TABLE_INCLUDE_METADATA ? json_object() : NULL,
        };
        r = t.items && (t.metadata_texts || include != XP_TABLE_INCLUDE_METADATA)
                ? xp_store_list_open(req->api->store,
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
                json_decref(t.metadata_texts);
                return r == -ENOMEM ? r : reply_store_error(ret, r, kind, NULL, &err);
        }
        *ret_filtered = t.filtered;
        *ret_items = t.items;
        *ret_metadata_texts = t.metadata_texts;
        return 1;
}

/* A row's text (reply_json()'s), its PartialObjectMetadata holding the metadata's text. */
static int write_row(FILE *out, const json_t *row, const json_t *item, const json_t *texts)
{
        char key[3 * XP_STORE_KEY_MAX + 8];
        const char *metadata;
        char *text;
        size_t n;
        int r;

        item_key(item, key, sizeof key);
        metadata = json_string_value(json_object_get(texts, key));
        text = json_dumps(row, JSON_COMPACT | JSON_ENSURE_ASCII);
        if (!text || !metadata) {
                free(text);
                return -ENOMEM; /* every item has its text: only memory can be missing */
        }
        n = strlen(text); /* a row is an object with cells: "{...}" */
        r = fprintf(out,
                    "%.*s,\"object\":{\"kind\":\"PartialObjectMetadata\","
                    "\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":%s}}",
                    (int)(n - 1),
                    text,
                    metadata);
        free(text);
        return r < 0 ? -ENOMEM : 0;
}

/* The Table's text up to its rows' "[" (rows last, as xp_table_build() orders members). */
static int write_head(FILE *out, json_t *table)
{
        json_t *rows = json_incref(json_object_get(table, "rows"));
        char *text;
        int r;

        if (json_object_set_new(table, "rows", json_array()) < 0) {
                json_decref(rows);
                return -ENOMEM;
        }
        text = json_dumps(table, JSON_COMPACT | JSON_ENSURE_ASCII);
        r = json_object_set_new(table, "rows", rows);
        if (!text || r < 0) {
                free(text);
                return -ENOMEM;
        }
        r = fprintf(out, "%.*s", (int)(strlen(text) - 2), text); /* less "]}" */
        free(text);
        return r < 0 ? -ENOMEM : 0;
}

int reply_table_text(const struct xp_kind *kind,
                     const json_t *page,
                     json_t *list_meta,
                     const json_t *metadata_texts,
                     struct reply *ret)
{
        json_t *table = NULL, *rows;
        char *text = NULL;
        size_t len = 0;
        FILE *out;
        int r;

        r = xp_table_build(kind->kind, page, NULL, time(NULL), XP_TABLE_INCLUDE_NONE, &table);
        if (r < 0)
                return r;
        out = open_memstream(&text, &len);
        r = out && json_object_set(table, "metadata", list_meta) >= 0 ? 0 : -ENOMEM;
        if (r >= 0)
                r = write_head(out, table);
        rows = json_object_get(table, "rows");
        for (size_t i = 0; r >= 0 && i < json_array_size(rows); i++) {
                r = i && fputc(',', out) == EOF ? -ENOMEM : 0;
                if (r >= 0)
                        r = write_row(
                            out, json_array_get(rows, i), json_array_get(page, i), metadata_texts);
        }
        if (r >= 0 && fputs("]}", out) == EOF)
                r = -ENOMEM;
        if (out && fclose(out) != 0 && r >= 0)
                r = -ENOMEM;
        json_decref(table);
        if (r < 0) {
                free(text);
                return r;
        }
        json_decref(ret->body);
        ret->body = NULL;
        ret->code = 200;
        ret->text = text;
        ret->content_type = "application/json";
        return 0;
}
