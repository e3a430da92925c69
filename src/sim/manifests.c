/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A cluster and workload from Node and Pod manifests (YAML or JSON, what `kubectl apply -f`
 * takes), so operators replay their own mix. Each object is kept whole (taints, tolerations,
 * affinity, NVLink topology all reach the core); the simulator reads from it only what its
 * method needs: a node's CPU, memory, GPU count and model label, a pod's requests and the
 * models its required node affinity allows. A node without an xpool inventory gets its GPUs as
 * devices, as the trace's nodes do.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xpool/codec.h"
#include "xpool/macro.h"
#include "xpool/manifest.h"
#include "xpool/sim.h"

static int64_t quantity_milli(const struct xp_resource_list *l, const char *name)
{
        const struct xp_quantity *q = xp_resource_list_get(l, name);
        int64_t v = 0;

        return q && xp_quantity_to_milli(q, &v) >= 0 ? v : 0;
}

/* The pod's request of name: the sum over its containers of requests, else limits. */
static int64_t pod_request(const struct xp_pod *pod, const char *name)
{
        int64_t sum = 0;

        for (size_t i = 0; i < pod->spec.containers.n; i++) {
                const struct xp_resource_requirements *r = &pod->spec.containers.items[i].resources;
                int64_t v = quantity_milli(&r->requests, name);
                sum += v > 0 ? v : quantity_milli(&r->limits, name);
        }
        return sum;
}

/* The models a required node affinity on the model label allows, "|"-joined; NULL: any. */
static char *pod_models(const struct xp_pod *pod)
{
        const struct xp_affinity *a = pod->spec.affinity;
        const struct xp_node_selector *req =
            a && a->node_affinity ? a->node_affinity->required : NULL;
        char *out = NULL;
        size_t len = 0;

        for (size_t t = 0; req && t < req->terms.n; t++)
                for (size_t e = 0; e < req->terms.items[t].match_expressions.n; e++) {
                        const struct xp_selector_requirement *s =
                            &req->terms.items[t].match_expressions.items[e];
                        if (!s->key || strcmp(s->key, XP_SIM_MODEL_LABEL) != 0 ||
                            s->op != XP_SELECTOR_OP_IN)
                                continue;
                        for (size_t v = 0; v < s->values.n; v++) {
                                size_t add = strlen(s->values.items[v]) + 2;
                                char *m = realloc(out, len + add);
                                if (!m) {
                                        free(out);
                                        return NULL;
                                }
                                out = m;
                                len += (size_t)snprintf(
                                    out + len, add, "%s%s", len ? "|" : "", s->values.items[v]);
                        }
                }
        return out;
}

static char *dump(json_t *j)
{
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

        json_decref(j);
        return text;
}

static int add_pod(struct xp_sim_trace *t, const struct xp_pod *pod, const char *where)
{
        struct xp_sim_pod *m = realloc(t->pods, (t->n_pods + 1) * sizeof(*m)), *p;
        int64_t gpu;
        json_t *j = NULL;

        if (!m)
                return -ENOMEM;
        t->pods = m;
        p = &m[t->n_pods];
        *p = (struct xp_sim_pod){.creation = -1, .deletion = -1};
        p->cpu_milli = pod_request(pod, "cpu");
        p->memory_mib = pod_request(pod, "memory") / 1000 / (1024 * 1024);
        gpu = pod_request(pod, XP_SIM_GPU_RESOURCE);
        if (gpu > 1000 && gpu % 1000 != 0)
                return -EDOM;
        p->num_gpu = gpu <= 0 ? 0 : gpu < 1000 ? 1 : gpu / 1000;
        p->gpu_milli = gpu <= 0 ? 0 : gpu < 1000 ? gpu : 1000;
        p->name = strdup(pod->metadata.name ? pod->metadata.name : where);
        p->gpu_spec = pod_models(pod);
        if (xp_pod_to_json(pod, &j) >= 0) {
                json_t *spec = json_object_get(j, "spec");
                /* the simulator places it: a bound copy would skip the core */
                json_object_del(spec, "nodeName");
                json_object_del(j, "status");
                /* one namespace for the replay, as the trace's pods have */
                json_object_set_new(
                    json_object_get(j, "metadata"), "namespace", json_string("sim"));
        }
        p->manifest = dump(j);
        t->n_pods++;
        return p->name && p->manifest ? 0 : -ENOMEM;
}

/* The trace's device list for a node without an inventory; a Ready condition and a pod count
 * where the manifest has none. */
static void node_complete(json_t *j, const struct xp_sim_node *n)
{
        json_t *status = json_object_get(j, "status"), *alloc, *devs;

        if (!json_is_object(status))
                json_object_set_new(j, "status", status = json_object());
        alloc = json_object_get(status, "allocatable");
        if (json_is_object(alloc) && !json_object_get(alloc, "pods"))
                json_object_set_new(alloc, "pods", json_string("110"));
        if (!json_object_get(status, "conditions"))
                json_object_set_new(status,
                                    "conditions",
                                    json_pack("[{s:s,s:s}]", "type", "Ready", "status", "True"));
        if (json_object_get(status, "xpool") || n->gpus == 0)
                return;
        devs = json_array();
        for (int64_t d = 0; d < n->gpus; d++) {
                char id[300];
                snprintf(id, sizeof(id), "%s-gpu%" PRId64, n->name, d);
                json_array_append_new(devs,
                                      json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}",
                                                "id",
                                                id,
                                                "kind",
                                                "gpu",
                                                "vendor",
                                                "NVIDIA",
                                                "model",
                                                n->model ? n->model : "",
                                                "resourceName",
                                                XP_SIM_GPU_RESOURCE,
                                                "index",
                                                (json_int_t)d));
        }
        json_object_set_new(status, "xpool", json_pack("{s:o}", "devices", devs));
}

static int add_node(struct xp_sim_trace *t, const struct xp_node *node, const char *where)
{
        struct xp_sim_node *m = realloc(t->nodes, (t->n_nodes + 1) * sizeof(*m)), *n;
        const char *model = xp_strmap_get(&node->metadata.labels, XP_SIM_MODEL_LABEL);
        json_t *j = NULL;

        if (!m)
                return -ENOMEM;
        t->nodes = m;
        n = &m[t->n_nodes];
        *n = (struct xp_sim_node){0};
        n->cpu_milli = quantity_milli(&node->status.allocatable, "cpu");
        n->memory_mib = quantity_milli(&node->status.allocatable, "memory") / 1000 / (1024 * 1024);
        n->gpus = quantity_milli(&node->status.allocatable, XP_SIM_GPU_RESOURCE) / 1000;
        n->name = strdup(node->metadata.name ? node->metadata.name : where);
        n->model = model ? strdup(model) : NULL;
        if (xp_node_to_json(node, &j) >= 0 && n->name)
                node_complete(j, n);
        n->manifest = dump(j);
        t->n_nodes++;
        return n->name && n->manifest && (!model || n->model) ? 0 : -ENOMEM;
}

static int read_file(const char *path, struct xp_sim_trace *t, struct xp_error *err)
{
        struct xp_manifest m = {0};
        int r = xp_manifest_load_file(path, XP_DECODE_STRICT, &m, err);

        for (size_t i = 0; r >= 0 && i < m.n; i++) {
                const struct xp_manifest_object *o = &m.objects[i];
                char where[64];
                snprintf(where, sizeof(where), "object%zu", t->n_nodes + t->n_pods);
                if (o->kind == XP_OBJECT_POD)
                        r = add_pod(t, o->pod, where);
                else if (o->kind == XP_OBJECT_NODE)
                        r = add_node(t, o->node, where);
                else
                        r = -EPROTOTYPE;
                if (r == -EPROTOTYPE)
                        r = xp_errorf(err,
                                      -EINVAL,
                                      "%s:%u: %s: only Nodes and Pods are replayed",
                                      path,
                                      o->pos.line,
                                      xp_object_kind_to_string(o->kind)
                                          ? xp_object_kind_to_string(o->kind)
                                          : "this kind");
                else if (r == -EDOM)
                        r = xp_errorf(err,
                                      -EINVAL,
                                      "%s:%u: %s: a share of one device (below 1) or whole devices",
                                      path,
                                      o->pos.line,
                                      XP_SIM_GPU_RESOURCE);
                else if (r < 0)
                        r = xp_errorf(err, r, "%s: out of memory", path);
        }
        xp_manifest_done(&m);
        return r;
}

static bool is_manifest(const char *name)
{
        const char *dot = strrchr(name, '.');

        return name[0] != '.' && dot &&
               (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 || strcmp(dot, ".json") == 0);
}

static void free_names(struct dirent **names, int n)
{
        for (int i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* Drops what a failed read appended: the trace is as it was. */
static void roll_back(struct xp_sim_trace *t, size_t n_nodes, size_t n_pods)
{
        while (t->n_nodes > n_nodes) {
                struct xp_sim_node *n = &t->nodes[--t->n_nodes];
                free(n->name);
                free(n->model);
                free(n->manifest);
        }
        while (t->n_pods > n_pods) {
                struct xp_sim_pod *p = &t->pods[--t->n_pods];
                free(p->name);
                free(p->gpu_spec);
                free(p->manifest);
        }
}

static int read_dir(const char *path, struct xp_sim_trace *trace, struct xp_error *err)
{
        struct dirent **names = NULL;
        int n, r = 0;

        /* the files in name order, so a directory replays the same way every time */
        n = scandir(path, &names, NULL, alphasort);
        if (n < 0)
                return xp_errorf(err, -errno, "%s: cannot read: %m", path);
        for (int i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *file = NULL;
                if (!is_manifest(names[i]->d_name))
                        continue;
                if (asprintf(&file, "%s/%s", path, names[i]->d_name) < 0) {
                        file = NULL;
                        r = xp_errorf(err, -ENOMEM, "%s: out of memory", path);
                        break;
                }
                r = read_file(file, trace, err);
        }
        free_names(names, n);
        return r;
}

int xp_sim_read_manifests(const char *path, struct xp_sim_trace *trace, struct xp_error *err)
{
        size_t n_nodes = trace->n_nodes, n_pods = trace->n_pods;
        struct stat st;
        int r;

        if (stat(path, &st) < 0)
                return xp_errorf(err, -errno, "%s: cannot open: %m", path);
        r = S_ISDIR(st.st_mode) ? read_dir(path, trace, err) : read_file(path, trace, err);
        if (r < 0)
                roll_back(trace, n_nodes, n_pods);
        return r;
}
