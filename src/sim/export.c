/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One replay as files another scheduler can be held against: the Nodes, the Pods in the order
 * they arrived (named p0, p1, ... in namespace sim, as the replay named them), and where each
 * went. Creating them through the API server in that order must give the same placements
 * (test 32-sim-server).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sim_internal.h"
#include "xpool/macro.h"

static void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

static FILE *open_in(const char *dir, const char *name, struct xp_error *err)
{
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        if (!f)
                xp_errorf(err, -errno, "%s: cannot write: %m", path);
        return f;
}

/* A List of items, one JSON object a line. */
static int write_list(FILE *f, size_t n, char *(*item)(const void *, size_t), const void *arg)
{
        fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n", f);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = item(arg, i);
                if (!text)
                        return -ENOMEM;
                fprintf(f, "%s%s\n", text, i + 1 < n ? "," : "");
        }
        fputs("]}\n", f);
        return 0;
}

/* text (freed) as a manifest of kind: apiVersion and kind first, as kubectl wants them. */
static char *with_kind(char *text, const char *kind)
{
        json_t *j = text ? json_loads(text, 0, NULL) : NULL;
        char *out = NULL;

        free(text);
        if (json_is_object(j)) {
                json_object_set_new(j, "apiVersion", json_string("v1"));
                json_object_set_new(j, "kind", json_string(kind));
                out = json_dumps(j, JSON_COMPACT);
        }
        json_decref(j);
        return out;
}

static char *node_item(const void *arg, size_t i)
{
        const struct xp_sim_trace *t = arg;

        return with_kind(sim_node_json(&t->nodes[i]), "Node");
}

struct pods_arg {
        const struct xp_sim_trace *t;
        const struct xp_sim_result *r;
};

static char *pod_item(const void *arg, size_t i)
{
        const struct pods_arg *a = arg;
        char name[64];

        snprintf(name, sizeof(name), "p%zu", i);
        return with_kind(sim_pod_json_as(&a->t->pods[a->r->placements[i].pod], name), "Pod");
}

static int write_placements(FILE *f, const struct xp_sim_trace *t, const struct xp_sim_result *r)
{
        fputs("pod,node,devices\n", f);
        for (size_t i = 0; i < r->arrived; i++) {
                const struct xp_sim_placement *p = &r->placements[i];
                fprintf(f, "p%zu,%s,", i, p->node >= 0 ? t->nodes[p->node].name : "");
                for (size_t d = 0; d < p->n_dev; d++)
                        fprintf(f, "%s%" PRId64 ":%" PRId64, d ? ";" : "", p->dev[d], p->milli[d]);
                fputc('\n', f);
        }
        return 0;
}

int xp_sim_export(const struct xp_sim_trace *trace,
                  const struct xp_sim_result *result,
                  const char *dir,
                  struct xp_error *err)
{
        _cleanup_(fclosep) FILE *nodes = open_in(dir, "nodes.json", err);
        _cleanup_(fclosep) FILE *pods = nodes ? open_in(dir, "pods.json", err) : NULL;
        _cleanup_(fclosep) FILE *where = pods ? open_in(dir, "placements.csv", err) : NULL;
        struct pods_arg a = {.t = trace, .r = result};

        if (!where)
                return err->code ? err->code : -EIO;
        if (write_list(nodes, trace->n_nodes, node_item, trace) < 0 ||
            write_list(pods, result->arrived, pod_item, &a) < 0)
                return xp_errorf(err, -ENOMEM, "%s: out of memory", dir);
        write_placements(where, trace, result);
        if (fflush(nodes) != 0 || fflush(pods) != 0 || fflush(where) != 0 || ferror(nodes) ||
            ferror(pods) || ferror(where))
                return xp_errorf(err, -EIO, "%s: write failed", dir);
        return 0;
}
