/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metadata.finalizers, as kube-apiserver's generic store honours them for every kind: a delete
 * of an object that carries finalizers only marks it deleting, and the object goes when an
 * update takes its last finalizer away (registry.h, "finalizers").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define DELETE_ATTEMPTS 8

static json_t *metadata(const json_t *object)
{
        return json_object_get(object, "metadata");
}

bool xp_registry_has_finalizers(const json_t *object)
{
        return json_array_size(json_object_get(metadata(object), "finalizers")) > 0;
}

int xp_registry_mark_deleting(json_t *object, int64_t now_s)
{
        json_t *meta = metadata(object), *generation = json_object_get(meta, "generation");
        json_t *grace = json_object_get(meta, "deletionGracePeriodSeconds");
        const char *marked = json_string_value(json_object_get(meta, "deletionTimestamp"));
        char now[XP_RFC3339_MAX];
        int64_t when;
        int changed = 0;

        if (!json_is_object(meta))
                return -EINVAL;
        /* the first mark is a change of the object's intent, as kube-apiserver counts it */
        if (!marked && json_is_integer(generation) && json_integer_value(generation) > 0) {
                if (json_object_set_new(
                        meta, "generation", json_integer(json_integer_value(generation) + 1)) < 0)
                        return -ENOMEM;
                changed = 1;
        }
        /* a graceful mark's later moment is brought forward: the object is due now */
        if (!marked || (xp_time_parse_rfc3339(marked, &when) >= 0 && when > now_s)) {
                if (xp_time_format_rfc3339(now_s, now) < 0)
                        return -EINVAL;
                if (json_object_set_new(meta, "deletionTimestamp", json_string(now)) < 0)
                        return -ENOMEM;
                changed = 1;
        }
        if (!json_is_integer(grace) || json_integer_value(grace) != 0) {
                if (json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(0)) < 0)
                        return -ENOMEM;
                changed = 1;
        }
        return changed;
}

bool xp_registry_update_removes(const json_t *object)
{
        const json_t *meta = metadata(object);
        const json_t *grace = json_object_get(meta, "deletionGracePeriodSeconds");

        /* a pod still within its grace goes when its agent has stopped it (pod.c); a namespace
         * (no grace) when its contents are gone (namespace.c) */
        return json_object_get(meta, "deletionTimestamp") && !xp_registry_has_finalizers(object) &&
               json_is_integer(grace) && json_integer_value(grace) == 0;
}

/* Appends ", \"NAME\"" (the first without the comma) to buf as Go's %#v of a []string does. */
static void append_quoted(char *buf, size_t size, size_t *len, bool first, const char *name)
{
        int n = snprintf(buf + *len, size - *len, "%s\"%s\"", first ? "" : ", ", name);

        if (n > 0)
                *len = *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

static bool listed(const json_t *list, const char *name)
{
        const json_t *item;
        size_t i;

        json_array_foreach(list, i, item) if (xp_streq0(json_string_value(item), name)) return true;
        return false;
}

/* Whether name is in list before index end: the sorted set kube prints has each name once. */
static bool listed_before(const json_t *list, size_t end, const char *name)
{
        for (size_t i = 0; i < end; i++)
                if (xp_streq0(json_string_value(json_array_get(list, i)), name))
                        return true;
        return false;
}

/* The names of added that old lacks, each once, in sorted order (kube's sets.List). */
static void sorted_extra(const json_t *added, const json_t *old, char *buf, size_t size)
{
        const char *last = NULL;
        size_t len = 0;

        buf[0] = '\0';
        for (;;) {
                const char *next = NULL;
                const json_t *item;
                size_t i;

                json_array_foreach(added, i, item)
                {
                        const char *name = json_string_value(item);

                        if (!name || listed(old, name) || listed_before(added, i, name) ||
                            (last && strcmp(name, last) <= 0))
                                continue;
                        if (!next || strcmp(name, next) < 0)
                                next = name;
                }
                if (!next)
                        return;
                append_quoted(buf, size, &len, last == NULL, next);
                last = next;
        }
}

int xp_registry_finalizers_check(const json_t *old, const json_t *new, struct xp_error *err)
{
        const json_t *was = json_object_get(metadata(old), "finalizers"),
                     *now = json_object_get(metadata(new), "finalizers");
        char extra[1024];

        if (!json_object_get(metadata(old), "deletionTimestamp"))
                return 0;
        sorted_extra(now, was, extra, sizeof(extra));
        if (!extra[0])
                return 0;
        return xp_errorf(
            err,
            -EINVAL,
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{%s}",
            extra);
}

/* One attempt: 1 removed, 0 kept marked, -ESTALE when the store moved on. */
static int delete_once(struct xp_registry *registry,
                       const char *resource,
                       const char *ns,
                       const char *name,
                       uint64_t expected,
                       json_t **ret_last,
                       struct xp_error *err)
{
        json_t *object;
        uint64_t version, written;
        int r;

        r = xp_store_get(registry->store, resource, ns, name, &object, &version, err);
        if (r < 0)
                return r;
        if (!xp_registry_has_finalizers(object)) {
                json_decref(object);
                r = xp_store_delete(registry->store,
                                    resource,
                                    ns,
                                    name,
                                    expected ? expected : version,
                                    ret_last,
                                    &written,
                                    err);
                return r < 0 ? r : 1;
        }
        r = xp_registry_mark_deleting(object, time(NULL));
        if (r > 0)
                r = xp_store_update(registry->store,
                                    resource,
                                    ns,
                                    name,
                                    expected ? expected : version,
                                    object,
                                    &written,
                                    err);
        if (r < 0) {
                json_decref(object);
                return r;
        }
        *ret_last = object;
        return 0;
}

int xp_registry_delete(struct xp_registry *registry,
                       const char *resource,
                       const char *ns,
                       const char *name,
                       uint64_t expected,
                       json_t **ret_last,
                       struct xp_error *err)
{
        json_t *last = NULL;
        int r = -ESTALE;

        /* a stale expected version is the caller's conflict: no second try */
        for (unsigned attempt = 0; attempt < DELETE_ATTEMPTS && r == -ESTALE; attempt++) {
                r = delete_once(registry, resource, ns, name, expected, &last, err);
                if (expected)
                        break;
        }
        if (r >= 0 && ret_last)
                *ret_last = last;
        else
                json_decref(last);
        return r;
}
