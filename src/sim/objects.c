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

/* text inside a JSON string: a trace's names and models may hold quotes or backslashes */
static void json_chars(FILE *f, const char *text, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)text[i];
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
}

static void json_text(FILE *f, const char *text, size_t len)
{
        fputc('"', f);
        json_chars(f, text, len);
        fputc('"', f);
}

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
        fputs("{\"metadata\":{\"name\":", f);
        json_text(f, n->name, strlen(n->name));
        fputs(",\"labels\":{", f);
        if (n->model) {
                fprintf(f, "\"%s\":", XP_SIM_MODEL_LABEL);
                json_text(f, n->model, strlen(n->model));
        }
        fprintf(f,
                "}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                "\"allocatable\":{\"cpu\":\"%" PRId64 "m\",\"memory\":\"%" PRId64
                "Mi\",\"pods\":\"10000\"",
                n->cpu_milli,
                n->memory_mib);
        if (n->gpus)
                fprintf(f, ",\"%s\":\"%" PRId64 "\"", XP_SIM_GPU_RESOURCE, n->gpus);
        fprintf(f, "},\"xpool\":{\"devices\":[");
        for (int64_t d = 0; d < n->gpus; d++) {
                fprintf(f, "%s{\"id\":\"", d ? "," : "");
                json_chars(f, n->name, strlen(n->name));
                fprintf(
                    f, "-gpu%" PRId64 "\",\"kind\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":", d);
                json_text(f, n->model ? n->model : "", n->model ? strlen(n->model) : 0);
                fprintf(
                    f, ",\"resourceName\":\"%s\",\"index\":%" PRId64 "}", XP_SIM_GPU_RESOURCE, d);
        }
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
                fputs(first ? "" : ",", f);
                json_text(f, p, (size_t)len);
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
        fputs("{\"metadata\":{\"name\":", f);
        json_text(f, name, strlen(name));
        fputs(",\"namespace\":\"sim\"},\"spec\":{", f);
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

static int cmp_node_name(const void *a, const void *b)
{
        const struct xp_sim_node *x = *(const struct xp_sim_node *const *)a;
        const struct xp_sim_node *y = *(const struct xp_sim_node *const *)b;
        int c = strcmp(x->name, y->name);

        return c ? c : (x->line > y->line) - (x->line < y->line);
}

int sim_nodes_unique(const struct xp_sim_trace *t, const char *path, struct xp_error *err)
{
        _cleanup_free_ const struct xp_sim_node **by_name =
            calloc(t->n_nodes + 1, sizeof(*by_name));
        int r = 0;

        if (!by_name)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < t->n_nodes; i++)
                by_name[i] = &t->nodes[i];
        qsort(by_name, t->n_nodes, sizeof(*by_name), cmp_node_name);
        for (size_t i = 1; i < t->n_nodes && r == 0; i++)
                if (strcmp(by_name[i - 1]->name, by_name[i]->name) == 0)
                        r = xp_errorf(err,
                                      -EINVAL,
                                      "%s:%zu: node \"%s\" again (first on line %zu)",
                                      path,
                                      by_name[i]->line,
                                      by_name[i]->name,
                                      by_name[i - 1]->line);
        return r;
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
        *ret = pods;
        return 0;
}

int sim_pod_get(const struct xp_sim_trace *t,
                struct xp_pod **pods,
                size_t i,
                struct xp_pod **ret,
                struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        int r;

        if (!pods[i]) {
                text = sim_pod_json(&t->pods[i], t->pods[i].name);
                r = text
                        ? xp_pod_from_json_text(
                              text, strlen(text), t->pods[i].name, XP_DECODE_TRUSTED, &pods[i], err)
                        : xp_errorf(err, -ENOMEM, "out of memory");
                if (r < 0)
                        return r;
        }
        *ret = pods[i];
        return 0;
}

void sim_pods_free(struct xp_pod **pods, size_t n)
{
        for (size_t i = 0; pods && i < n; i++)
                xp_pod_free(pods[i]);
        free(pods);
}
