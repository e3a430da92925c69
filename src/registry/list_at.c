/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A list as it was at an earlier version (xp_registry_list_at()): the current objects, with each
 * one written since taken back to what the store's event log says it was then. This is what
 * lets a paged list (?continue) and ?resourceVersionMatch=Exact answer one consistent snapshot,
 * as etcd's multi-version reads do for kube-apiserver.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/registry.h"
#include "xpool/store.h"

#define SCAN_BATCH 256 /* events read from the log at a time */

/* "namespace/name": the order the store lists in. */
static void key_of(const char *namespace, const char *name, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", namespace ? namespace : "", name ? name : "");
}

static void key_of_object(const json_t *object, char *buf, size_t size)
{
        const json_t *meta = json_object_get(object, "metadata");

        key_of(json_string_value(json_object_get(meta, "namespace")),
               json_string_value(json_object_get(meta, "name")),
               buf,
               size);
}

/* The keys written after version, each with the first event's type (as an integer). */
static int written_since(struct xp_store *store,
                         const char *kind,
                         const char *namespace,
                         uint64_t version,
                         json_t *written,
                         struct xp_error *err)
{
        uint64_t since = version, through = version;

        for (;;) {
                struct xp_store_event *events = NULL;
                size_t n = 0;
                int r = xp_store_events_scan(
                    store, kind, namespace, since, SCAN_BATCH, &events, &n, &through, err);

                if (r < 0)
                        return r;
                for (size_t i = 0; i < n && r >= 0; i++) {
                        char key[2 * XP_STORE_KEY_MAX + 2];

                        key_of(events[i].namespace, events[i].name, key, sizeof(key));
                        if (!json_object_get(written, key))
                                r = json_object_set_new(written, key, json_integer(events[i].type));
                }
                xp_store_events_free(events, n);
                if (r < 0)
                        return -ENOMEM;
                if (n < SCAN_BATCH || through <= since)
                        return 0;
                since = through;
        }
}

/* What one written key was at version: 1 with *ret (NULL: absent then), or -EXPIRED. */
static int state_at(struct xp_store *store,
                    const char *kind,
                    const char *key,
                    json_int_t first_type,
                    uint64_t version,
                    json_t **ret,
                    struct xp_error *err)
{
        const char *slash = strchr(key, '/');
        enum xp_store_event_type type;
        char namespace[XP_STORE_KEY_MAX + 1];
        json_t *object = NULL;
        int r;

        *ret = NULL;
        snprintf(namespace, sizeof(namespace), "%.*s", (int)(slash - key), key);
        r = xp_store_event_before(store, kind, namespace, slash + 1, version, &type, &object, err);
        if (r < 0)
                return r;
        if (r > 0 && type != XP_STORE_DELETED) {
                *ret = object;
                return 1;
        }
        json_decref(object);
        /* created after version: it was not there; else its state then is older than the log */
        if (r > 0 || first_type == XP_STORE_ADDED)
                return 1;
        return xp_errorf(err,
                         -XP_STORE_EXPIRED,
                         "the state of %s at resourceVersion %llu is no longer kept",
                         key,
                         (unsigned long long)version);
}

static int by_key(const void *a, const void *b)
{
        char ka[2 * XP_STORE_KEY_MAX + 2], kb[2 * XP_STORE_KEY_MAX + 2];

        key_of_object(*(json_t *const *)a, ka, sizeof(ka));
        key_of_object(*(json_t *const *)b, kb, sizeof(kb));
        return strcmp(ka, kb);
}

/* items sorted by namespace and name, as the store lists them. */
static int sort_items(json_t *items)
{
        size_t n = json_array_size(items);
        json_t **all = calloc(n ? n : 1, sizeof(*all));

        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                all[i] = json_incref(json_array_get(items, i));
        qsort(all, n, sizeof(*all), by_key);
        json_array_clear(items);
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(items, all[i]) < 0)
                        all[i] = NULL;
        free(all);
        return json_array_size(items) == n ? 0 : -ENOMEM;
}

/* The current items with the written keys replaced by their states at version. */
static int rewind_items(struct xp_store *store,
                        const char *kind,
                        const json_t *current,
                        const json_t *written,
                        uint64_t version,
                        json_t *out,
                        struct xp_error *err)
{
        const char *key;
        json_t *item, *type;
        size_t i;

        json_array_foreach(current, i, item)
        {
                char k[2 * XP_STORE_KEY_MAX + 2];

                key_of_object(item, k, sizeof(k));
                if (!json_object_get(written, k) && json_array_append(out, item) < 0)
                        return -ENOMEM;
        }
        json_object_foreach((json_t *)written, key, type)
        {
                json_t *then = NULL;
                int r = state_at(store, kind, key, json_integer_value(type), version, &then, err);

                if (r < 0)
                        return r;
                if (then && json_array_append_new(out, then) < 0)
                        return -ENOMEM;
        }
        return sort_items(out);
}

int xp_registry_list_at(struct xp_store *store,
                        const char *kind,
                        const char *namespace,
                        uint64_t version,
                        json_t **ret_items,
                        uint64_t *ret_version,
                        struct xp_error *err)
{
        json_t *current = NULL, *written = NULL, *out = NULL;
        uint64_t now;
        int r;

        r = xp_store_list(store, kind, namespace, &current, &now, err);
        if (r < 0)
                return r;
        if (version == 0 || version >= now) {
                *ret_items = current;
                *ret_version = now;
                return 0;
        }
        written = json_object();
        out = json_array();
        r = written && out ? 0 : -ENOMEM;
        if (r >= 0)
                r = written_since(store, kind, namespace, version, written, err);
        if (r >= 0)
                r = rewind_items(store, kind, current, written, version, out, err);
        json_decref(current);
        json_decref(written);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret_items = out;
        *ret_version = version;
        return 0;
}
