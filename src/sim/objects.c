/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trace rows as the API objects the server would hold: a Node with its GPUs as devices and its
 * model as the label NVIDIA's feature discovery writes, a Pod whose gpu_spec is a required node
 * affinity on that label. The core sees exactly what it sees in the server.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "xpool/codec.h"

char *sim_node_json(const struct xp_sim_node *n)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        if (n->manifest)
                return strdup(n->manifest);
        f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        fprintf(f, "{\"metadata\":{\"name\":\"%s\",\"labels\":{", n->name);
        if (n->model)
                fprintf(f, "\"%s\":\"%s\"", XP_SIM_MODEL_LABEL, n->model);
        fprintf(f,
                "}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                "\"allocatable\":{\"cpu\":\"%" PRId64 "m\",\"memory\":\"%" PRId64
                "Mi\",\"pods\":\"10000\"",
                n->cpu_milli,
                n->memory_mib);
        if (n->gpus)
                fprintf(f, ",\"%s\":\"%" PRId64 "\"", XP_SIM_GPU_RESOURCE, n->gpus);
        fprintf(f, "},\"xpool\":{\"devices\":[");
        for (int64_t d = 0; d < n->gpus; d++)
                fprintf(f,
                        "%s{\"id\":\"%s-gpu%" PRId64 "\",\"kind\":\"gpu\",\"vendor\":\"NVIDIA\","
                        "\"model\":\"%s\",\"resourceName\":\"%s\",\"index\":%" PRId64 "}",
                        d ? "," : "",
                        n->name,
                        d,
                        n->model ? n->model : "",
                        XP_SIM_GPU_RESOURCE,
                        d);
        fprintf(f, "]}}}");
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static void affinity_json(FILE *f, const char *spec)
{
        const char *p = spec;

        fprintf(
            f,
            "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
            "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"%s\",\"operator\":\"In\","
            "\"values\":[",
            XP_SIM_MODEL_LABEL);
        for (int first = 1; p && *p; first = 0) {
                const char *e = strchr(p, '|');
                int len = e ? (int)(e - p) : (int)strlen(p);
                fprintf(f, "%s\"%.*s\"", first ? "" : ",", len, p);
                p = e ? e + 1 : NULL;
        }
        fprintf(f, "]}]}]}}},");
}

char *sim_pod_json(const struct xp_sim_pod *p, const char *name)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        if (p->manifest)
                return strdup(p->manifest);
        f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        fprintf(f, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"sim\"},\"spec\":{", name);
        if (p->gpu_spec)
                affinity_json(f, p->gpu_spec);
        fprintf(f,
                "\"containers\":[{\"name\":\"c\",\"image\":\"sim\",\"resources\":{\"limits\":{"
                "\"cpu\":\"%" PRId64 "m\",\"memory\":\"%" PRId64 "Mi\"",
                p->cpu_milli,
                p->memory_mib);
        if (p->num_gpu == 1 && p->gpu_milli < 1000)
                fprintf(f, ",\"%s\":\"%" PRId64 "m\"", XP_SIM_GPU_RESOURCE, p->gpu_milli);
        else if (p->num_gpu > 0)
                fprintf(f, ",\"%s\":\"%" PRId64 "\"", XP_SIM_GPU_RESOURCE, p->num_gpu);
        fprintf(f, "}}}]}}");
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

char *sim_pod_json_as(const struct xp_sim_pod *p, const char *name)
{
        json_t *j, *meta;
        char *text;

        if (!p->manifest)
                return sim_pod_json(p, name);
        j = json_loads(p->manifest, 0, NULL);
        meta = json_object_get(j, "metadata");
        if (!json_is_object(meta)) {
                json_decref(j);
                return NULL;
        }
        json_object_set_new(meta, "name", json_string(name));
        json_object_set_new(meta, "namespace", json_string("sim"));
        text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        return text;
}

int sim_nodes_add(struct xp_sched *sched, const struct xp_sim_trace *t, struct xp_error *err)
{
        for (size_t i = 0; i < t->n_nodes; i++) {
                _cleanup_free_ char *text = sim_node_json(&t->nodes[i]);
                _cleanup_(xp_node_freep) struct xp_node *node = NULL;
                int r;
                if (!text)
                        return xp_errorf(err, -ENOMEM, "out of memory");
                r = xp_node_from_json_text(
                    text, strlen(text), t->nodes[i].name, XP_DECODE_TRUSTED, &node, err);
                if (r >= 0)
                        r = xp_sched_node_set(sched, node, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sim_pods_build(const struct xp_sim_trace *t, struct xp_pod ***ret, struct xp_error *err)
{
        struct xp_pod **pods = calloc(t->n_pods ? t->n_pods : 1, sizeof(*pods));

        if (!pods)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < t->n_pods; i++) {
                _cleanup_free_ char *text = sim_pod_json(&t->pods[i], t->pods[i].name);
                int r =
                    text
                        ? xp_pod_from_json_text(
                              text, strlen(text), t->pods[i].name, XP_DECODE_TRUSTED, &pods[i], err)
                        : xp_errorf(err, -ENOMEM, "out of memory");
                if (r < 0) {
                        sim_pods_free(pods, i);
                        return r;
                }
        }
        *ret = pods;
        return 0;
}

void sim_pods_free(struct xp_pod **pods, size_t n)
{
        for (size_t i = 0; pods && i < n; i++)
                xp_pod_free(pods[i]);
        free(pods);
}
