/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-scheduler's extender protocol, both ways (xpool/extender.h). The Go types behind it have
 * no json tags, so the members are named as the Go fields ("Pod", "NodeNames", "FailedNodes"),
 * nil pointers and maps travel as null, and Go's decoder matches names case-insensitively, the
 * exact spelling first: the reader here does the same, so what kube-scheduler sends and what a
 * person types with curl both work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kube/kube_internal.h"
#include "xpool/codec.h"
#include "xpool/extender.h"

/* The member of that name: the exact spelling, else the first equal ignoring case (Go's rule). */
static json_t *member(const json_t *object, const char *name)
{
        json_t *exact = json_object_get(object, name), *value;
        const char *key;

        if (exact)
                return exact;
        json_object_foreach((json_t *)object, key, value) if (strcasecmp(key, name) ==
                                                              0) return value;
        return NULL;
}

void xp_extender_args_done(struct xp_extender_args *args)
{
        if (!args)
                return;
        xp_pod_free(args->pod);
        free(args->names);
        json_decref(args->root);
        *args = (struct xp_extender_args){0};
}

static int node_names(const json_t *root, struct xp_extender_args *a, struct xp_error *err)
{
        const json_t *names = member(root, "NodeNames"), *nodes = member(root, "Nodes"), *v;
        const json_t *items = json_is_object(nodes) ? member(nodes, "items") : NULL;
        size_t i, n;

        if (json_is_array(names)) {
                a->cache_capable = true;
        } else if (names && !json_is_null(names)) {
                return xp_errorf(err, -EINVAL, "NodeNames: must be a list of node names or null");
        } else if (json_is_array(items)) {
                a->nodes = (json_t *)items;
        } else if (nodes && !json_is_null(nodes)) {
                return xp_errorf(
                    err, -EINVAL, "Nodes: must be a NodeList with an items list, or null");
        } else {
                return xp_errorf(
                    err,
                    -EINVAL,
                    "neither Nodes nor NodeNames: kube-scheduler sends one of them (NodeNames when the extender is nodeCacheCapable)");
        }
        n = json_array_size(a->cache_capable ? names : items);
        if (n > XP_EXTENDER_NODES_MAX)
                return xp_errorf(err,
                                 -E2BIG,
                                 "%s: more than %d nodes",
                                 a->cache_capable ? "NodeNames" : "Nodes.items",
                                 XP_EXTENDER_NODES_MAX);
        a->names = calloc(n + 1, sizeof(*a->names));
        if (!a->names)
                return -ENOMEM;
        json_array_foreach(a->cache_capable ? names : items, i, v)
        {
                const char *name = a->cache_capable
                                       ? json_string_value(v)
                                       : json_string_value(member(member(v, "metadata"), "name"));
                if (!name || !*name)
                        return a->cache_capable
                                   ? xp_errorf(
                                         err, -EINVAL, "NodeNames[%zu]: must be a node name", i)
                                   : xp_errorf(err,
                                               -EINVAL,
                                               "Nodes.items[%zu].metadata.name: required",
                                               i);
                a->names[a->n_names++] = name;
        }
        return 0;
}

int xp_extender_args_decode(const char *body,
                            size_t len,
                            struct xp_extender_args *ret,
                            struct xp_error *err)
{
        struct xp_extender_args a = {0};
        struct xp_decode_source source = {.name = "Pod"};
        const json_t *pod;
        json_error_t jerr;
        int r;

        a.root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!a.root)
                return xp_errorf(err,
                                 -EINVAL,
                                 "the body is not JSON: line %d, column %d: %s",
                                 jerr.line,
                                 jerr.column,
                                 jerr.text);
        r = -EINVAL;
        if (!json_is_object(a.root)) {
                xp_errorf(
                    err,
                    r,
                    "the body must be an ExtenderArgs object {\"Pod\", \"Nodes\" or \"NodeNames\"}");
                goto fail;
        }
        pod = member(a.root, "Pod");
        if (!json_is_object(pod)) {
                xp_errorf(err, r, "Pod: required, the pod being scheduled");
                goto fail;
        }
        r = xp_pod_from_json(pod, &source, 0, &a.pod, err);
        if (r >= 0)
                r = node_names(a.root, &a, err);
        if (r < 0)
                goto fail;
        *ret = a;
        return 0;
fail:
        xp_extender_args_done(&a);
        return r;
}

void xp_extender_binding_done(struct xp_extender_binding *b)
{
        if (!b)
                return;
        free(b->pod_name);
        free(b->pod_namespace);
        free(b->pod_uid);
        free(b->node);
        *b = (struct xp_extender_binding){0};
}

int xp_extender_binding_decode(const char *body,
                               size_t len,
                               struct xp_extender_binding *ret,
                               struct xp_error *err)
{
        static const char *const required[] = {"PodName", "PodNamespace", "Node"};
        struct xp_extender_binding b = {0};
        json_error_t jerr;
        json_auto_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        const json_t *uid;

        if (!root)
                return xp_errorf(err,
                                 -EINVAL,
                                 "the body is not JSON: line %d, column %d: %s",
                                 jerr.line,
                                 jerr.column,
                                 jerr.text);
        if (!json_is_object(root))
                return xp_errorf(err, -EINVAL, "the body must be an ExtenderBindingArgs object");
        for (size_t i = 0; i < XP_ELEMENTSOF(required); i++) {
                const char *v = json_string_value(member(root, required[i]));
                if (!v || !*v)
                        return xp_errorf(err, -EINVAL, "%s: required, a string", required[i]);
        }
        uid = member(root, "PodUID");
        if (uid && !json_is_null(uid) && !json_is_string(uid))
                return xp_errorf(err, -EINVAL, "PodUID: must be a string");
        b.pod_name = strdup(json_string_value(member(root, "PodName")));
        b.pod_namespace = strdup(json_string_value(member(root, "PodNamespace")));
        b.node = strdup(json_string_value(member(root, "Node")));
        b.pod_uid =
            json_is_string(uid) && *json_string_value(uid) ? strdup(json_string_value(uid)) : NULL;
        if (!b.pod_name || !b.pod_namespace || !b.node ||
            (json_is_string(uid) && *json_string_value(uid) && !b.pod_uid)) {
                xp_extender_binding_done(&b);
                return -ENOMEM;
        }
        *ret = b;
        return 0;
}

int xp_extender_filter_result(const struct xp_extender_args *args,
                              const struct xp_sched_verdict *v,
                              const char *unknown_reason,
                              json_t **ret)
{
        json_auto_t *out = json_pack("{s:n, s:n, s:{}, s:{}, s:s}",
                                     "Nodes",
                                     "NodeNames",
                                     "FailedNodes",
                                     "FailedAndUnresolvableNodes",
                                     "Error",
                                     "");
        json_t *passed = json_array(), *failed, *unresolvable;
        int r = 0;

        if (!out || !passed ||
            json_object_set_new(out,
                                args->cache_capable ? "NodeNames" : "Nodes",
                                args->cache_capable
                                    ? passed
                                    : json_pack("{s:{}, s:o}", "metadata", "items", passed)) < 0)
                return -ENOMEM;
        failed = json_object_get(out, "FailedNodes");
        unresolvable = json_object_get(out, "FailedAndUnresolvableNodes");
        for (size_t i = 0; i < args->n_names; i++) {
                if (v[i].fit == 1) {
                        r |= json_array_append(
                            passed,
                            args->cache_capable ? json_array_get(member(args->root, "NodeNames"), i)
                                                : json_array_get(args->nodes, i));
                        continue;
                }
                r |= json_object_set_new(v[i].unresolvable ? unresolvable : failed,
                                         args->names[i],
                                         json_string(v[i].fit == 0 ? v[i].reason : unknown_reason));
        }
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

int64_t xp_extender_scale(int64_t score, int64_t best, bool is_best)
{
        int64_t s;

        if (is_best)
                return XP_EXTENDER_MAX_PRIORITY;
        if (best <= 0 || score <= 0)
                return 0;
        /* below the best, so kube-scheduler's own scores decide only among equals */
        s = (int64_t)((__int128)score * XP_EXTENDER_MAX_PRIORITY / best);
        return s >= XP_EXTENDER_MAX_PRIORITY ? XP_EXTENDER_MAX_PRIORITY - 1 : s;
}

int xp_extender_priorities(const struct xp_extender_args *args,
                           const struct xp_sched_verdict *v,
                           json_t **ret)
{
        json_auto_t *out = json_array();
        int64_t best = 0;
        int r = 0;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < args->n_names; i++)
                if (v[i].fit == 1 && v[i].best)
                        best = v[i].score;
        for (size_t i = 0; i < args->n_names; i++) {
                int64_t s = v[i].fit == 1 ? xp_extender_scale(v[i].score, best, v[i].best) : 0;
                r |= json_array_append_new(
                    out, json_pack("{s:s, s:I}", "Host", args->names[i], "Score", (json_int_t)s));
        }
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}
