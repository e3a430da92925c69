/* SPDX-License-Identifier: Apache-2.0 */
/* The node authorizer's graph (xpool/nodegraph.h): pod events in, edge counts out. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "informer.h"
#include "xpool/map.h"
#include "xpool/nodegraph.h"
#include "xpool/store.h"

/* (kind, namespace, object, node): how many of the node's pods name the object. */
struct edge {
        char *key;
        size_t pods;
};

/*
 * A pod bound to a node, and the edges it counts in (once per name it gives, repeats too). What
 * xp_node_graph_pod() answers is kept as plain strings in the pod's one allocation (about 100
 * bytes; a JSON object of them took 1,600 per pod, 160 MB at 100,000 pods) and made into JSON
 * only when asked.
 */
struct bound_pod {
        struct edge **edges;
        size_t n_edges;
        size_t ns_len;       /* key is "namespace/name" */
        const char *uid;     /* NULL when the pod has none; else in text */
        const char *account; /* spec.serviceAccountName, "default" when it names none */
        const char *node;
        char key[]; /* then uid, account, node: each NUL-terminated */
};

struct xp_node_graph {
        pthread_mutex_t lock;
        struct xp_store *store;
        struct xp_informer *informer;
        bool listed;
        uint64_t generation; /* of the pods, when the graph last caught up */
        struct xp_map pods;  /* "namespace/name" -> struct bound_pod */
        struct xp_map edges; /* edge_key() -> struct edge */
        bool failed;         /* an allocation failed while building: relist at the next question */
};

/*
 * Each part with its length ahead, so that no name, whatever it holds, makes one key read as
 * another's.
 */
static char *edge_key(enum xp_pod_ref_kind kind, const char *ns, const char *name, const char *node)
{
        char *key = NULL;

        if (asprintf(&key,
                     "%c%zu:%s%zu:%s%zu:%s",
                     kind == XP_POD_REF_SECRET ? 's' : 'c',
                     strlen(ns),
                     ns,
                     strlen(name),
                     name,
                     strlen(node),
                     node) < 0)
                return NULL;
        return key;
}

static void edge_release(struct xp_node_graph *g, struct edge *e)
{
        if (--e->pods > 0)
                return;
        xp_map_del(&g->edges, e->key);
        free(e->key);
        free(e);
}

static void bound_pod_free(struct bound_pod *p)
{
        free(p->edges);
        free(p);
}

/* Copies s to *at and moves *at past it. */
static const char *text_put(char **at, const char *s)
{
        char *copy = *at;
        size_t n = strlen(s) + 1;

        memcpy(copy, s, n);
        *at += n;
        return copy;
}

/* The pod ns/name bound to node, with the fields a TokenRequest bound to it reads (api_token.c);
 * "default" when the pod names no ServiceAccount, as the store's pod would read. NULL: -ENOMEM. */
static struct bound_pod *
bound_pod_new(const json_t *pod, const char *ns, const char *name, const char *node)
{
        const char *uid =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        const char *account =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "serviceAccountName"));
        size_t ns_len = strlen(ns), name_len = strlen(name);
        struct bound_pod *p;
        char *at;

        account = account ? account : "default";
        p = calloc(1,
                   sizeof *p + ns_len + 1 + name_len + 1 + (uid ? strlen(uid) + 1 : 0) +
                       strlen(account) + 1 + strlen(node) + 1);
        if (!p)
                return NULL;
        p->ns_len = ns_len;
        memcpy(p->key, ns, ns_len);
        p->key[ns_len] = '/';
        memcpy(p->key + ns_len + 1, name, name_len + 1);
        at = p->key + ns_len + 1 + name_len + 1;
        p->uid = uid ? text_put(&at, uid) : NULL;
        p->account = text_put(&at, account);
        p->node = text_put(&at, node);
        return p;
}

/* What xp_node_graph_pod() answers of p, as the store's pod reads: a new object. NULL: -ENOMEM. */
static json_t *bound_pod_json(const struct bound_pod *p)
{
        json_t *meta = json_object(), *spec = json_object(), *o = json_object();
        bool ok = meta && spec && o &&
                  !json_object_set_new(meta, "namespace", json_stringn(p->key, p->ns_len)) &&
                  !json_object_set_new(meta, "name", json_string(p->key + p->ns_len + 1)) &&
                  (!p->uid || !json_object_set_new(meta, "uid", json_string(p->uid))) &&
                  !json_object_set_new(spec, "nodeName", json_string(p->node)) &&
                  !json_object_set_new(spec, "serviceAccountName", json_string(p->account));

        ok = ok && !json_object_set(o, "metadata", meta) && !json_object_set(o, "spec", spec);
        json_decref(meta);
        json_decref(spec);
        if (!ok) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static void pod_forget(struct xp_node_graph *g, const char *key)
{
        struct bound_pod *p = xp_map_del(&g->pods, key);

        if (!p)
                return;
        for (size_t i = 0; i < p->n_edges; i++)
                edge_release(g, p->edges[i]);
        bound_pod_free(p);
}

static struct edge *edge_take(struct xp_node_graph *g, char *key)
{
        struct edge *e = xp_map_get(&g->edges, key);

        if (e) {
                free(key);
                e->pods++;
                return e;
        }
        e = calloc(1, sizeof *e);
        if (!e || xp_map_put(&g->edges, key, e) < 0) {
                free(e);
                free(key);
                return NULL;
        }
        *e = (struct edge){.key = key, .pods = 1};
        return e;
}

struct pod_visit {
        struct xp_node_graph *graph;
        struct bound_pod *pod;
        enum xp_pod_ref_kind kind;
        const char *ns, *node;
};

static int pod_names(const char *name, void *userdata)
{
        struct pod_visit *v = userdata;
        struct bound_pod *p = v->pod;
        struct edge **grown, *e;
        char *key = edge_key(v->kind, v->ns, name, v->node);

        grown = key ? realloc(p->edges, (p->n_edges + 1) * sizeof *grown) : NULL;
        if (!grown) {
                free(key);
                return -ENOMEM;
        }
        p->edges = grown;
        e = edge_take(v->graph, key);
        if (!e)
                return -ENOMEM;
        p->edges[p->n_edges++] = e;
        return 0;
}

/* The pod as it is now: its old edges go, and if it is bound, the ones it names now come. */
static void pod_learn(void *userdata, const json_t *pod, uint64_t version)
{
        struct xp_node_graph *g = userdata;
        const json_t *meta = json_object_get(pod, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace")),
                   *name = json_string_value(json_object_get(meta, "name")),
                   *node =
                       json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        struct bound_pod *p;

        (void)version;
        if (!ns || !name)
                return;
        p = bound_pod_new(pod, ns, name, node ? node : "");
        if (!p) {
                g->failed = true;
                return;
        }
        pod_forget(g, p->key);
        if (!node || !node[0] || xp_map_put(&g->pods, p->key, p) < 0) {
                g->failed = g->failed || (node && node[0]);
                free(p);
                return;
        }
        struct pod_visit v = {.graph = g, .pod = p, .ns = ns, .node = node};
        for (v.kind = XP_POD_REF_SECRET; v.kind <= XP_POD_REF_CONFIGMAP; v.kind++)
                if (xp_pod_refs_visit(pod, v.kind, pod_names, &v) < 0)
                        g->failed = true;
}

static void pod_gone(void *userdata, const json_t *pod, uint64_t version)
{
        struct xp_node_graph *g = userdata;
        const json_t *meta = json_object_get(pod, "metadata");
        char *key = NULL;

        (void)version;
        if (asprintf(&key,
                     "%s/%s",
                     json_string_value(json_object_get(meta, "namespace")) ?: "",
                     json_string_value(json_object_get(meta, "name")) ?: "") < 0) {
                g->failed = true;
                return;
        }
        pod_forget(g, key);
        free(key);
}

static void forget_all(void *userdata)
{
        struct xp_node_graph *g = userdata;

        for (size_t i = 0; i < g->pods.cap; i++) {
                struct bound_pod *p = g->pods.values ? g->pods.values[i] : NULL;

                if (p)
                        bound_pod_free(p);
        }
        for (size_t i = 0; i < g->edges.cap; i++) {
                struct edge *e = g->edges.values ? g->edges.values[i] : NULL;

                if (e) {
                        free(e->key);
                        free(e);
                }
        }
        xp_map_done(&g->pods);
        xp_map_done(&g->edges);
}

static const struct xp_informer_handler followed[] = {
    {.resource = "pods", .add = pod_learn, .update = pod_learn, .delete = pod_gone},
};

int xp_node_graph_new(struct xp_store *store, struct xp_node_graph **ret)
{
        struct xp_node_graph *g = calloc(1, sizeof *g);
        struct xp_informer_options informer = {
            .store = store,
            .handlers = followed,
            .n_handlers = 1,
            .reset = forget_all,
            .userdata = g,
        };

        if (!g)
                return -ENOMEM;
        g->store = store;
        if (xp_informer_new(&informer, &g->informer) < 0) {
                free(g);
                return -ENOMEM;
        }
        pthread_mutex_init(&g->lock, NULL);
        *ret = g;
        return 0;
}

void xp_node_graph_free(struct xp_node_graph *g)
{
        if (!g)
                return;
        forget_all(g);
        xp_informer_free(g->informer);
        pthread_mutex_destroy(&g->lock);
        free(g);
}

/* Under the lock: reads what was written of the pods since the graph last did. */
static int catch_up(struct xp_node_graph *g, struct xp_error *err)
{
        uint64_t generation = xp_store_kind_generation(g->store, "pods");
        int r;

        if (g->listed && !g->failed && generation == g->generation)
                return 0;
        if (!g->listed || g->failed) {
                forget_all(g);
                g->failed = false;
                r = xp_informer_list(g->informer, err);
        } else {
                r = xp_informer_sync(g->informer, err);
        }
        if (r < 0) {
                g->listed = false; /* start again from a list next time */
                return r;
        }
        g->listed = true;
        g->generation = generation;
        return g->failed ? -ENOMEM : 0;
}

int xp_node_graph_references(struct xp_node_graph *g,
                             enum xp_pod_ref_kind kind,
                             const char *ns,
                             const char *name,
                             const char *node,
                             struct xp_error *err)
{
        char *key;
        int r;

        if (!ns || !name || !node)
                return 0;
        key = edge_key(kind, ns, name, node);
        if (!key)
                return -ENOMEM;
        pthread_mutex_lock(&g->lock);
        r = catch_up(g, err);
        if (r >= 0)
                r = xp_map_get(&g->edges, key) != NULL;
        pthread_mutex_unlock(&g->lock);
        free(key);
        return r;
}

int xp_node_graph_pod(
    struct xp_node_graph *g, const char *ns, const char *name, json_t **ret, struct xp_error *err)
{
        struct bound_pod *p;
        char *key = NULL;
        int r;

        *ret = NULL;
        if (!ns || !name)
                return 0;
        if (asprintf(&key, "%s/%s", ns, name) < 0)
                return -ENOMEM;
        pthread_mutex_lock(&g->lock);
        r = catch_up(g, err);
        if (r >= 0) {
                p = xp_map_get(&g->pods, key);
                *ret = p ? bound_pod_json(p) : NULL;
                r = p ? (*ret ? 1 : -ENOMEM) : 0;
        }
        pthread_mutex_unlock(&g->lock);
        free(key);
        return r;
}

int xp_node_graph_size(struct xp_node_graph *g,
                       size_t *ret_pods,
                       size_t *ret_edges,
                       struct xp_error *err)
{
        int r;

        pthread_mutex_lock(&g->lock);
        r = catch_up(g, err);
        *ret_pods = g->pods.n;
        *ret_edges = g->edges.n;
        pthread_mutex_unlock(&g->lock);
        return r < 0 ? r : 0;
}
