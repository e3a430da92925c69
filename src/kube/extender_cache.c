/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The extender's picture of the cluster: a scheduling core snapshot fed from the watches of
 * Nodes and bound Pods. What a Node does not say in Kubernetes (its devices, their topology and
 * which pod holds which) comes from its xpool.io/inventory annotation, put into the Node as its
 * status.xpool before the core reads it.
 *
 * Which devices a pod holds: the node's inventory says what the kubelet allocated, and that wins
 * over the pod's xpool.io/placement annotation (the extender's own choice at bind time), which
 * wins over the core's guess for a pod that has neither. A device the inventory gives a pod the
 * watch has not delivered (yet, or ever: another scheduler's) is held by a stand-in of that
 * name, replaced when the pod itself arrives. So each pod is accounted again when its node's
 * allocation of it changes, and the pods are kept in a small stripped form for that.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "xpool/codec.h"
#include "xpool/kubeinventory.h"
#include "xpool/log.h"
#include "xpool/strutil.h"

struct ext_cache {
        struct xp_sched *sched;
        json_t *pods;   /* "ns/name" -> the bound pod, stripped */
        json_t *allocs; /* node -> {"ns/name": [[resource, id, index], ...]}: every known node */
        json_t *holder; /* "ns/name" -> the node whose inventory gives it devices */
        /* "ns/name" -> what the watch had said of a pod the extender assumed bound (null:
         * nothing), until the watch speaks of it again: a binding that fails goes back to it */
        json_t *assumed;
        size_t n_nodes;
        uint64_t generation; /* moved by every change */
};

int ext_cache_new(const struct xp_sched_options *options, struct ext_cache **ret)
{
        struct ext_cache *c = calloc(1, sizeof(*c));
        struct xp_sched_options o = *options;
        int r;

        if (!c)
                return -ENOMEM;
        o.feasible_nodes_to_find = 0;
        c->pods = json_object();
        c->allocs = json_object();
        c->holder = json_object();
        c->assumed = json_object();
        r = c->pods && c->allocs && c->holder && c->assumed ? xp_sched_new(&o, &c->sched) : -ENOMEM;
        if (r < 0) {
                ext_cache_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

void ext_cache_free(struct ext_cache *c)
{
        if (!c)
                return;
        xp_sched_free(c->sched);
        json_decref(c->pods);
        json_decref(c->allocs);
        json_decref(c->holder);
        json_decref(c->assumed);
        free(c);
}

struct xp_sched *ext_cache_sched(struct ext_cache *c)
{
        return c->sched;
}

bool ext_cache_has_node(const struct ext_cache *c, const char *name)
{
        return json_object_get(c->allocs, name) != NULL;
}

uint64_t ext_cache_generation(const struct ext_cache *c)
{
        return c->generation;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
        return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* ---- pods ---------------------------------------------------------------------------------- */

/* Copies the members of from named in keys (NULL-terminated) into a new object. */
static json_t *pick(const json_t *from, const char *const *keys)
{
        json_t *to = json_object();

        for (size_t i = 0; to && keys[i]; i++) {
                json_t *v = json_object_get(from, keys[i]);
                if (v && json_object_set(to, keys[i], v) < 0) {
                        json_decref(to);
                        return NULL;
                }
        }
        return to;
}

/* What accounting a bound pod needs: its identity, labels, xpool's annotations, requests (with
 * each container's restartPolicy: a sidecar's count beside the containers'), anti-affinity and
 * phase. A pod's images, volumes and status take far more room. */
static json_t *strip(const json_t *pod)
{
        static const char *const meta[] = {"name", "namespace", "uid", "labels", NULL};
        static const char *const spec[] = {"nodeName", "overhead", NULL};
        static const char *const container[] = {"name", "resources", "restartPolicy", NULL};
        static const char *const lists[] = {"containers", "initContainers"};
        const json_t *m = json_object_get(pod, "metadata"), *s = json_object_get(pod, "spec");
        json_auto_t *out = json_pack("{s:o, s:o, s:{s:O*}}",
                                     "metadata",
                                     pick(m, meta),
                                     "spec",
                                     pick(s, spec),
                                     "status",
                                     "phase",
                                     json_object_get(json_object_get(pod, "status"), "phase"));
        json_t *ann = json_object(), *value;
        const char *key;

        if (!out || !ann ||
            json_object_set_new(json_object_get(out, "metadata"), "annotations", ann) < 0)
                return NULL;
        json_object_foreach(json_object_get(m, "annotations"),
                            key,
                            value) if (strncmp(key, "xpool.io/", 9) == 0 &&
                                       json_object_set(ann, key, value) < 0) return NULL;
        for (size_t l = 0; l < XP_ELEMENTSOF(lists); l++) {
                const json_t *from = json_object_get(s, lists[l]), *c;
                json_t *to = json_array();
                size_t i;
                if (!to || json_object_set_new(json_object_get(out, "spec"), lists[l], to) < 0)
                        return NULL;
                json_array_foreach(from, i, c) if (json_array_append_new(to, pick(c, container)) <
                                                   0) return NULL;
        }
        value = json_object_get(json_object_get(s, "affinity"), "podAntiAffinity");
        if (value && json_object_set_new(json_object_get(out, "spec"),
                                         "affinity",
                                         json_pack("{s:O}", "podAntiAffinity", value)) < 0)
                return NULL;
        return TAKE_PTR(out);
}

/* The placement annotation the node's inventory gives the pod: its devices, whole. */
static int placement_from(const char *node, const json_t *devices, char **ret)
{
        json_auto_t *pl = json_pack("{s:s, s:[], s:i}", "node", node, "devices", "numaNode", -1);
        const json_t *d;
        size_t i;

        if (!pl)
                return -ENOMEM;
        json_array_foreach(
            devices, i, d) if (json_array_append_new(json_object_get(pl, "devices"),
                                                     json_pack("{s:O, s:O, s:O, s:i}",
                                                               "resource",
                                                               json_array_get(d, 0),
                                                               "id",
                                                               json_array_get(d, 1),
                                                               "index",
                                                               json_array_get(d, 2),
                                                               "milli",
                                                               1000)) < 0) return -ENOMEM;
        *ret = json_dumps(pl, JSON_COMPACT);
        return *ret ? 0 : -ENOMEM;
}

/* A stand-in for a pod the inventory names and the watch has not delivered. */
static json_t *stand_in(const char *key, const char *node, const json_t *devices)
{
        const char *slash = strchr(key, '/');
        json_t *limits = json_object(), *pod;
        const json_t *d;
        size_t i;

        if (!limits)
                return NULL;
        json_array_foreach(devices, i, d)
        {
                const char *res = json_string_value(json_array_get(d, 0));
                json_int_t n = json_integer_value(json_object_get(limits, res));
                char buf[32];
                snprintf(buf, sizeof(buf), "%lld", (long long)(n + 1));
                json_object_set_new(limits, res, json_string(buf));
        }
        pod = json_pack("{s:{s:s%, s:s}, s:{s:s, s:[{s:s, s:{s:o}}]}}",
                        "metadata",
                        "namespace",
                        key,
                        (size_t)(slash - key),
                        "name",
                        slash + 1,
                        "spec",
                        "nodeName",
                        node,
                        "containers",
                        "name",
                        "held",
                        "resources",
                        "limits",
                        limits);
        return pod;
}

/* Accounts the pod of key in the snapshot as it stands now: the watch's pod, the inventory's
 * devices of it, or a stand-in; or nothing. */
static int account(struct ext_cache *c, const char *key, struct xp_error *err)
{
        const json_t *stored = json_object_get(c->pods, key);
        const char *node = json_string_value(json_object_get(c->holder, key)),
                   *slash = strchr(key, '/');
        const json_t *devices =
            node ? json_object_get(json_object_get(c->allocs, node), key) : NULL;
        _cleanup_(xp_pod_freep) struct xp_pod *pod = NULL;
        json_auto_t *held = NULL;
        _cleanup_free_ char *placement = NULL, *ns = NULL;
        int r;

        if (!stored && !devices) {
                ns = strndup(key, (size_t)(slash - key));
                if (ns)
                        (void)xp_sched_pod_remove(c->sched, ns, slash + 1);
                return ns ? 0 : -ENOMEM;
        }
        if (!stored)
                stored = held = stand_in(key, node, devices);
        if (!stored)
                return -ENOMEM;
        r = xp_pod_from_json(stored, NULL, XP_DECODE_TRUSTED, &pod, err);
        if (r < 0)
                return r;
        /* the kubelet's allocation is the truth where the pod runs where the inventory says */
        if (devices && xp_streq0(pod->spec.node_name, node)) {
                r = placement_from(node, devices, &placement);
                if (r >= 0)
                        r = xp_strmap_set(
                            &pod->metadata.annotations, XP_PLACEMENT_ANNOTATION, placement);
                if (r < 0)
                        return r;
        }
        return xp_sched_pod_add(c->sched, pod, err);
}

static bool is_bound_and_running(const json_t *pod)
{
        const char *node = str_at(pod, "spec", "nodeName"), *phase = str_at(pod, "status", "phase");

        return node && *node && !xp_streq0(phase, "Succeeded") && !xp_streq0(phase, "Failed");
}

/* The pod stored as it says and accounted, its key into key. */
static int
pod_store(struct ext_cache *c, const json_t *pod, char key[static 512], struct xp_error *err)
{
        const char *ns = str_at(pod, "metadata", "namespace"),
                   *name = str_at(pod, "metadata", "name");
        json_t *s;

        c->generation++;
        if (!ns || !name)
                return xp_errorf(
                    err, -EINVAL, "a pod without metadata.namespace and metadata.name");
        snprintf(key, 512, "%s/%s", ns, name);
        if (!is_bound_and_running(pod)) {
                json_object_del(c->pods, key);
        } else {
                s = strip(pod);
                if (!s || json_object_set_new(c->pods, key, s) < 0)
                        return -ENOMEM;
        }
        return account(c, key, err);
}

int ext_cache_pod_set(struct ext_cache *c, const json_t *pod, struct xp_error *err)
{
        char key[512] = "";
        int r = pod_store(c, pod, key, err);

        json_object_del(c->assumed, key); /* the watch has spoken */
        return r;
}

const char *
ext_cache_pod_node(const struct ext_cache *c, const char *ns, const char *name, const char *uid)
{
        char key[512];
        const json_t *pod;
        const char *cached_uid;

        snprintf(key, sizeof(key), "%s/%s", ns, name);
        pod = json_object_get(c->pods, key);
        cached_uid = str_at(pod, "metadata", "uid");
        /* a pod deleted and made again under its name is another pod, not yet bound */
        if (uid && *uid && cached_uid && *cached_uid && strcmp(uid, cached_uid) != 0)
                return NULL;
        return str_at(pod, "spec", "nodeName");
}

int ext_cache_pod_remove(struct ext_cache *c,
                         const char *ns,
                         const char *name,
                         struct xp_error *err)
{
        char key[512];

        c->generation++;
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        json_object_del(c->pods, key);
        json_object_del(c->assumed, key);
        return account(c, key, err);
}

int ext_cache_unassume(
    struct ext_cache *c, const char *ns, const char *name, bool bound, struct xp_error *err)
{
        char key[512];
        json_t *before;

        snprintf(key, sizeof(key), "%s/%s", ns, name);
        before = json_object_get(c->assumed, key);
        if (bound || !before) {
                /* bound: the assumed pod is the truth now; or the watch spoke since */
                json_object_del(c->assumed, key);
                return 0;
        }
        c->generation++;
        if (json_is_null(before))
                json_object_del(c->pods, key);
        else if (json_object_set(c->pods, key, before) < 0)
                return -ENOMEM;
        json_object_del(c->assumed, key);
        return account(c, key, err);
}

/* ---- nodes --------------------------------------------------------------------------------- */

/* {"ns/name": [[resource, id, index], ...]} from the inventory's allocation. */
static json_t *alloc_map(const struct xp_node_inventory *inv, const struct xp_kube_allocation *a)
{
        json_t *map = json_object();

        for (size_t i = 0; map && a && i < a->uses.n; i++) {
                const struct xp_kube_device_use *u = &a->uses.items[i];
                char key[512];
                json_t *list;
                int64_t index = 0;

                for (size_t k = 0; inv && k < inv->devices.n; k++)
                        if (xp_streq0(inv->devices.items[k].id, u->device_id))
                                index = inv->devices.items[k].index;
                snprintf(key, sizeof(key), "%s/%s", u->namespace, u->name);
                list = json_object_get(map, key);
                if (!list && json_object_set_new(map, key, list = json_array()) < 0)
                        list = NULL;
                if (!list || json_array_append_new(list,
                                                   json_pack("[s, s, I]",
                                                             u->resource ? u->resource : "",
                                                             u->device_id,
                                                             (json_int_t)index)) < 0) {
                        json_decref(map);
                        return NULL;
                }
        }
        return map;
}

/* The node decoded, with its devices from the inventory annotation; the allocation into *ret_map.
 */
static int
decode_node(const json_t *json, struct xp_node **ret, json_t **ret_map, struct xp_error *err)
{
        _cleanup_(xp_node_freep) struct xp_node *node = NULL;
        struct xp_node_inventory *inv = NULL;
        struct xp_kube_allocation alloc = {0};
        const char *text;
        int r;

        r = xp_node_from_json(json, NULL, XP_DECODE_TRUSTED, &node, err);
        if (r < 0)
                return r;
        text = xp_strmap_get(&node->metadata.annotations, XP_INVENTORY_ANNOTATION);
        if (text) {
                r = xp_kube_inventory_decode(text, strlen(text), &inv, &alloc, err);
                if (r < 0)
                        return r;
                xp_node_inventory_free(node->status.xpool);
                node->status.xpool = inv;
        }
        *ret_map = alloc_map(node->status.xpool, &alloc);
        xp_kube_allocation_done(&alloc);
        if (!*ret_map)
                return -ENOMEM;
        *ret = TAKE_PTR(node);
        return 0;
}

/* Accounts again every pod whose devices on node differ between old and new. */
static int reaccount(struct ext_cache *c,
                     const char *node,
                     const json_t *old,
                     const json_t *new,
                     struct xp_error *err)
{
        json_auto_t *keys = json_object();
        const char *key;
        json_t *v;
        int r = 0;

        if (!keys)
                return -ENOMEM;
        json_object_foreach((json_t *)old, key, v) if (!json_equal(v, json_object_get(new, key)))
            json_object_set_new(keys, key, json_null());
        json_object_foreach((json_t *)new, key, v) if (!json_equal(v, json_object_get(old, key)))
            json_object_set_new(keys, key, json_null());
        json_object_foreach(keys, key, v)
        {
                if (json_object_get(new, key)) {
                        if (json_object_set_new(c->holder, key, json_string(node)) < 0)
                                return -ENOMEM;
                } else if (xp_streq0(json_string_value(json_object_get(c->holder, key)), node)) {
                        json_object_del(c->holder, key);
                }
                /* one pod that cannot be accounted does not stop the others */
                if (account(c, key, err) < 0 && r == 0)
                        r = -EINVAL;
        }
        return r;
}

int ext_cache_node_set(struct ext_cache *c, const json_t *json, struct xp_error *err)
{
        _cleanup_(xp_node_freep) struct xp_node *node = NULL;
        const char *name = str_at(json, "metadata", "name");
        json_t *map = NULL, *old;
        int r;

        c->generation++;
        if (!name || !*name)
                return xp_errorf(err, -EINVAL, "a node without metadata.name");
        r = decode_node(json, &node, &map, err);
        if (r >= 0)
                r = xp_sched_node_set(c->sched, node, err);
        if (r < 0) {
                /* a node the core cannot read serves no pod of ours rather than a wrong picture */
                json_decref(map);
                ext_cache_node_remove(c, name, NULL);
                return xp_error_prefix(err, r, "node %s", name);
        }
        old = json_incref(json_object_get(c->allocs, name));
        if (!old)
                c->n_nodes++;
        if (json_object_set_new(c->allocs, name, map) < 0) {
                json_decref(old);
                return -ENOMEM;
        }
        r = reaccount(c, name, old, map, err);
        json_decref(old);
        return r < 0 ? xp_error_prefix(err, r, "node %s: accounting its pods", name) : 0;
}

void ext_cache_node_remove(struct ext_cache *c, const char *name, struct xp_error *err)
{
        json_t *old = json_incref(json_object_get(c->allocs, name));

        c->generation++;
        (void)xp_sched_node_remove(c->sched, name);
        if (!old)
                return;
        c->n_nodes--;
        json_object_del(c->allocs, name);
        /* devices of a node that is gone hold nothing: its stand-ins go, its pods stay */
        (void)reaccount(c, name, old, NULL, err);
        json_decref(old);
}

size_t ext_cache_nodes(const struct ext_cache *c)
{
        return c->n_nodes;
}

/* After a list: what the list lacks is gone. items: the list's objects. */
static int
forget_missing(struct ext_cache *c, bool nodes, const json_t *items, struct xp_error *err)
{
        json_auto_t *seen = json_object(), *gone = json_array();
        const json_t *it;
        const char *key;
        json_t *v;
        size_t i;

        if (!seen || !gone)
                return -ENOMEM;
        json_array_foreach(items, i, it)
        {
                char k[512];
                const char *ns = str_at(it, "metadata", "namespace"),
                           *name = str_at(it, "metadata", "name");
                snprintf(k,
                         sizeof(k),
                         "%s%s%s",
                         nodes ? ""
                         : ns  ? ns
                               : "",
                         nodes ? "" : "/",
                         name ? name : "");
                if (json_object_set_new(seen, k, json_true()) < 0)
                        return -ENOMEM;
        }
        json_object_foreach(
            nodes ? c->allocs : c->pods, key, v) if (!json_object_get(seen, key) &&
                                                     json_array_append_new(gone, json_string(key)) <
                                                         0) return -ENOMEM;
        json_array_foreach(gone, i, v)
        {
                const char *k = json_string_value(v);
                if (nodes) {
                        ext_cache_node_remove(c, k, err);
                } else {
                        json_object_del(c->pods, k);
                        (void)account(c, k, err);
                }
        }
        return 0;
}

int ext_cache_replace(struct ext_cache *c, bool nodes, const json_t *items, struct xp_error *err)
{
        const json_t *it;
        size_t i, failed = 0;
        int r = forget_missing(c, nodes, items, err);

        c->generation++;
        if (r < 0)
                return r;
        if (!nodes)
                json_object_clear(c->assumed); /* the list is the watch's word on every pod */
        json_array_foreach(items, i, it)
        {
                struct xp_error one = {0};
                r = nodes ? ext_cache_node_set(c, it, &one) : ext_cache_pod_set(c, it, &one);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && failed++ == 0)
                        xp_errorf(err, r, "%s", xp_error_message(&one));
        }
        return failed ? xp_error_prefix(err,
                                        -EINVAL,
                                        "%zu of %zu %s left out, the first",
                                        failed,
                                        json_array_size(items),
                                        nodes ? "nodes" : "pods")
                      : 0;
}

/* Accounts the pod as bound by the extender before the watch says so. */
int ext_cache_assume(struct ext_cache *c,
                     const struct xp_pod *pod,
                     const char *node,
                     const char *placement,
                     struct xp_error *err)
{
        json_auto_t *json = NULL;
        json_t *meta, *ann, *before;
        char key[512];
        int r = xp_pod_to_json(pod, &json);

        c->generation++;
        if (r < 0)
                return r;
        meta = json_object_get(json, "metadata");
        ann = json_object_get(meta, "annotations");
        if (!ann && json_object_set_new(meta, "annotations", ann = json_object()) < 0)
                return -ENOMEM;
        if (json_object_set_new(json_object_get(json, "spec"), "nodeName", json_string(node)) < 0 ||
            (placement &&
             json_object_set_new(ann, XP_PLACEMENT_ANNOTATION, json_string(placement)) < 0))
                return -ENOMEM;
        snprintf(key,
                 sizeof(key),
                 "%s/%s",
                 pod->metadata.namespace ? pod->metadata.namespace : "",
                 pod->metadata.name ? pod->metadata.name : "");
        before = json_object_get(c->pods, key);
        if (!json_object_get(c->assumed, key) &&
            json_object_set_new(c->assumed, key, before ? json_incref(before) : json_null()) < 0)
                return -ENOMEM;
        return pod_store(c, json, key, err);
}
