/* SPDX-License-Identifier: Apache-2.0 */
/* Objects as the store keeps them: keys, and bodies without metadata.resourceVersion. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "xpool/macro.h"

const char *store_key_ns(const char *namespace)
{
        return namespace[0] ? "/" : "";
}

int store_check_key(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    struct xp_error *err)
{
        if (!kind || !namespace || !name || !kind[0] || !name[0] ||
            strlen(kind) > XP_STORE_KEY_MAX || strlen(namespace) > XP_STORE_KEY_MAX ||
            strlen(name) > XP_STORE_KEY_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "store %s: a key needs a kind and a name of 1 to %d bytes and a "
                                 "namespace of at most %d",
                                 store->path,
                                 XP_STORE_KEY_MAX,
                                 XP_STORE_KEY_MAX);
        return 0;
}

/* Most bodies fit: one pass into it, then one allocation of the text's size (json_dumps() grows
 * its buffer from 16 bytes by doubling, a realloc and a copy each time). */
#define SERIALISE_STACK 8192

/* object as compact JSON, malloc'ed: its length, 0 when it cannot be written (out of memory), or
 * the length past max with *ret NULL. */
static size_t dump_compact(const json_t *object, size_t max, char **ret)
{
        char stack[SERIALISE_STACK];
        size_t n = json_dumpb(object, stack, sizeof(stack), JSON_COMPACT);
        char *text;

        *ret = NULL;
        if (n == 0 || n > max)
                return n;
        text = malloc(n + 1);
        if (!text)
                return 0;
        if (n <= sizeof(stack)) {
                memcpy(text, stack, n);
        } else if (json_dumpb(object, text, n, JSON_COMPACT) != n) {
                free(text);
                return 0;
        }
        text[n] = '\0';
        *ret = text;
        return n;
}

int store_serialise(struct xp_store *store,
                    json_t *object,
                    char **ret,
                    size_t *ret_len,
                    struct store_text_mark *ret_mark,
                    struct xp_error *err)
{
        const json_t *metadata = json_object_get(object, "metadata");
        int r = -EBADMSG;

        if (json_is_object(object) && (!metadata || json_is_object(metadata)))
                r = store_json_compact_marked(
                    object, "resourceVersion", XP_STORE_BODY_MAX, ret, ret_len, ret_mark);
        if (r == -ENOMEM)
                return xp_errorf(
                    err, -ENOMEM, "store %s: cannot serialise the object", store->path);
        if (r >= 0)
                return 0;
        /* what it declines, and a body too long (whose error says by how much), jansson writes */
        r = store_serialise_jansson(store, object, ret, ret_len, err);
        if (r >= 0 && store_text_mark_find(*ret, *ret_len, ret_mark) < 0)
                ret_mark->bad = true;
        return r;
}

int store_serialise_jansson(
    struct xp_store *store, json_t *object, char **ret, size_t *ret_len, struct xp_error *err)
{
        json_t *metadata, *copy = NULL, *meta_copy = NULL;
        char *text;
        size_t len;

        if (!json_is_object(object))
                return xp_errorf(
                    err, -EINVAL, "store %s: the object is not a JSON object", store->path);
        metadata = json_object_get(object, "metadata");
        if (metadata && !json_is_object(metadata))
                return xp_errorf(
                    err, -EINVAL, "store %s: metadata is not a JSON object", store->path);
        if (metadata && json_object_get(metadata, "resourceVersion")) {
                /* shallow copies: the caller's object stays untouched until the write is done */
                copy = json_copy(object);
                meta_copy = json_copy(metadata);
                if (!copy || !meta_copy || json_object_del(meta_copy, "resourceVersion") < 0 ||
                    json_object_set_new(copy, "metadata", meta_copy) < 0) {
                        json_decref(copy);
                        return xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
                }
                object = copy;
        }
        len = dump_compact(object, XP_STORE_BODY_MAX, &text);
        json_decref(copy);
        if (len == 0)
                return xp_errorf(
                    err, -ENOMEM, "store %s: cannot serialise the object", store->path);
        if (!text)
                return xp_errorf(err,
                                 -E2BIG,
                                 "store %s: the object is %zu bytes, more than the %d allowed",
                                 store->path,
                                 len,
                                 XP_STORE_BODY_MAX);
        *ret = text;
        *ret_len = len;
        return 0;
}

int store_set_resource_version(json_t *object, uint64_t version)
{
        json_t *metadata = json_object_get(object, "metadata");
        char buf[24];

        if (!metadata) {
                metadata = json_object();
                if (!metadata || json_object_set_new(object, "metadata", metadata) < 0)
                        return -ENOMEM;
        }
        snprintf(buf, sizeof(buf), "%" PRIu64, version);
        return json_object_set_new(metadata, "resourceVersion", json_string(buf)) < 0 ? -ENOMEM : 0;
}

/* The stored text as an object with metadata.resourceVersion filled in. */
json_t *store_parse_body(const char *text, size_t len, uint64_t version)
{
        json_t *object = json_loadb(text, len, 0, NULL);

        if (object &&
            (!json_is_object(object) || store_set_resource_version(object, version) < 0)) {
                json_decref(object);
                return NULL;
        }
        return object;
}

int store_corrupt_body(struct xp_store *store,
                       const char *kind,
                       const char *namespace,
                       const char *name,
                       uint64_t version,
                       struct xp_error *err)
{
        return xp_errorf(err,
                         -EBADMSG,
                         "store %s: %s %s%s%s at version %" PRIu64
                         ": the stored body is not a JSON object (or out of memory)",
                         store->path,
                         kind,
                         namespace,
                         store_key_ns(namespace),
                         name,
                         version);
}
