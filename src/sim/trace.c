/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The trace's CSV files: a node list and a pod list. Columns are found by the header's names, in
 * any order; the columns the method needs must be there, the optional ones may be missing, others
 * are ignored. Blank lines, CRLF line ends, a UTF-8 byte order mark, spaces around fields and
 * quoted fields ("a,b", "" for a quote) are read as a spreadsheet writes them. Every row is
 * checked (field count against the header, integers, ranges), and a bad one is named by file and
 * line. A line is at most SIM_LINE_MAX bytes and a file at most SIM_ROWS_MAX rows, so what a file
 * can make the reader hold is bounded before it is read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_csv.h"
#include "sim_internal.h"
#include "xpool/macro.h"
#include "xpool/sim.h"

enum {
        NODE_SN,
        NODE_CPU,
        NODE_MEM,
        NODE_GPU,
        NODE_MODEL,
        NODE_COLS
};
enum {
        POD_NAME,
        POD_CPU,
        POD_MEM,
        POD_NUM_GPU,
        POD_GPU_MILLI,
        POD_SPEC,
        POD_CREATION,
        POD_DELETION,
        POD_COLS
};

static const struct sim_column node_columns[] = {
    {"sn", true}, {"cpu_milli", true}, {"memory_mib", true}, {"gpu", true}, {"model", false}};
static const struct sim_column pod_columns[] = {{"name", true},
                                                {"cpu_milli", true},
                                                {"memory_mib", true},
                                                {"num_gpu", true},
                                                {"gpu_milli", true},
                                                {"gpu_spec", false},
                                                {"creation_time", false},
                                                {"deletion_time", false}};

static int bad(struct xp_error *err, const char *path, size_t line, const char *what, const char *v)
{
        return xp_errorf(err, -EINVAL, "%s:%zu: %s: \"%s\"", path, line, what, v);
}

/* An optional column's text: "" where the file has no such column. */
static const char *opt(char **f, const ssize_t *col, size_t which)
{
        return col[which] < 0 ? "" : f[col[which]];
}

static int node_row(
    char **f, const ssize_t *col, const char *path, size_t line, void *out, struct xp_error *err)
{
        struct xp_sim_node *ret = out;
        int64_t *dst[] = {&ret->cpu_milli, &ret->memory_mib, &ret->gpus};
        const char *model = opt(f, col, NODE_MODEL);

        if (!f[col[NODE_SN]][0])
                return bad(err, path, line, "sn: must not be empty", f[col[NODE_SN]]);
        for (size_t i = 0; i < 3; i++)
                if (sim_csv_int(f[col[NODE_CPU + i]], 0, dst[i]) < 0)
                        return bad(
                            err, path, line, node_columns[NODE_CPU + i].name, f[col[NODE_CPU + i]]);
        if (ret->gpus > 8)
                return bad(err, path, line, "gpu: at most 8", f[col[NODE_GPU]]);
        ret->line = line;
        ret->name = strdup(f[col[NODE_SN]]);
        ret->model = model[0] ? strdup(model) : NULL;
        if (!ret->name || (model[0] && !ret->model))
                return xp_errorf(err, -ENOMEM, "%s:%zu: out of memory", path, line);
        return 0;
}

static int pod_times(char **f,
                     const ssize_t *col,
                     const char *path,
                     size_t line,
                     struct xp_sim_pod *p,
                     struct xp_error *err)
{
        const char *created = opt(f, col, POD_CREATION), *deleted = opt(f, col, POD_DELETION);

        p->creation = p->deletion = -1;
        if (created[0] && sim_csv_int(created, 0, &p->creation) < 0)
                return bad(err, path, line, "creation_time", created);
        if (deleted[0] && sim_csv_int(deleted, 0, &p->deletion) < 0)
                return bad(err, path, line, "deletion_time", deleted);
        return 0;
}

static int pod_row(
    char **f, const ssize_t *col, const char *path, size_t line, void *out, struct xp_error *err)
{
        struct xp_sim_pod *ret = out;
        int64_t *dst[] = {&ret->cpu_milli, &ret->memory_mib, &ret->num_gpu, &ret->gpu_milli};
        const char *spec = opt(f, col, POD_SPEC), *milli = f[col[POD_GPU_MILLI]];

        if (!f[col[POD_NAME]][0])
                return bad(err, path, line, "name: must not be empty", f[col[POD_NAME]]);
        for (size_t i = 0; i < 4; i++)
                if (sim_csv_int(f[col[POD_CPU + i]], 0, dst[i]) < 0)
                        return bad(
                            err, path, line, pod_columns[POD_CPU + i].name, f[col[POD_CPU + i]]);
        if (ret->num_gpu > 8)
                return bad(err, path, line, "num_gpu: at most 8", f[col[POD_NUM_GPU]]);
        if (ret->num_gpu == 1 && (ret->gpu_milli < 1 || ret->gpu_milli > 1000))
                return bad(err, path, line, "gpu_milli: must be 1..1000 for one GPU", milli);
        if (ret->num_gpu > 1 && ret->gpu_milli != 1000)
                return bad(err, path, line, "gpu_milli: must be 1000 for several GPUs", milli);
        if (pod_times(f, col, path, line, ret, err) < 0)
                return -EINVAL;
        ret->name = strdup(f[col[POD_NAME]]);
        ret->gpu_spec = spec[0] ? strdup(spec) : NULL;
        if (!ret->name || (spec[0] && !ret->gpu_spec))
                return xp_errorf(err, -ENOMEM, "%s:%zu: out of memory", path, line);
        return 0;
}

static void node_done(void *p)
{
        struct xp_sim_node *n = p;

        free(n->name);
        free(n->model);
        free(n->manifest);
}

static void pod_done(void *q)
{
        struct xp_sim_pod *p = q;

        free(p->name);
        free(p->gpu_spec);
        free(p->manifest);
}

int xp_sim_read_nodes(const char *path, struct xp_sim_trace *trace, struct xp_error *err)
{
        struct sim_table table = {.columns = node_columns,
                                  .n_columns = NODE_COLS,
                                  .size = sizeof(*trace->nodes),
                                  .items = (void **)&trace->nodes,
                                  .n = &trace->n_nodes,
                                  .row = node_row,
                                  .done = node_done};

        size_t n0 = trace->n_nodes;
        int r = sim_csv_read(path, &table, err);

        if (r >= 0 && (r = sim_nodes_unique(trace, path, err)) < 0)
                while (trace->n_nodes > n0)
                        node_done(&trace->nodes[--trace->n_nodes]);
        if (r < 0 && trace->n_nodes == 0) {
                free(trace->nodes);
                trace->nodes = NULL;
        }
        return r;
}

int xp_sim_read_pods(const char *path, struct xp_sim_trace *trace, struct xp_error *err)
{
        struct sim_table table = {.columns = pod_columns,
                                  .n_columns = POD_COLS,
                                  .size = sizeof(*trace->pods),
                                  .items = (void **)&trace->pods,
                                  .n = &trace->n_pods,
                                  .row = pod_row,
                                  .done = pod_done};

        return sim_csv_read(path, &table, err);
}

void xp_sim_trace_done(struct xp_sim_trace *trace)
{
        for (size_t i = 0; i < trace->n_nodes; i++)
                node_done(&trace->nodes[i]);
        for (size_t i = 0; i < trace->n_pods; i++)
                pod_done(&trace->pods[i]);
        free(trace->nodes);
        free(trace->pods);
        *trace = (struct xp_sim_trace){0};
}

int64_t xp_sim_pod_demand(const struct xp_sim_pod *pod)
{
        return pod->num_gpu == 1 ? pod->gpu_milli : pod->num_gpu * 1000;
}
