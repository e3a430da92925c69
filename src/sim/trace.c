/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The trace's CSV files: a node list and a pod list with the columns the trace's README names.
 * Every row is checked (field count, integers, ranges), and a bad one is named by file and line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/macro.h"
#include "xpool/sim.h"

#define FIELDS_MAX 16

static void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

/* Splits line (changed in place) at commas; the count, or FIELDS_MAX + 1 for too many. */
static size_t split(char *line, char **f)
{
        size_t n = 0;

        line[strcspn(line, "\r\n")] = '\0';
        for (char *p = line;; p++) {
                if (n > FIELDS_MAX)
                        return n;
                f[n++] = p;
                p = strchr(p, ',');
                if (!p)
                        return n;
                *p = '\0';
        }
}

static int int_field(const char *text, int64_t min, int64_t *ret)
{
        char *end;
        long long v;

        if (!text[0])
                return -EINVAL;
        errno = 0;
        v = strtoll(text, &end, 10);
        if (errno || *end || v < min)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int bad(struct xp_error *err, const char *path, size_t line, const char *what, const char *v)
{
        return xp_errorf(err, -EINVAL, "%s:%zu: %s: \"%s\"", path, line, what, v);
}

static int
node_row(char **f, size_t n, const char *path, size_t line, void *out, struct xp_error *err)
{
        static const char *const what[] = {"cpu_milli", "memory_mib", "gpu"};
        struct xp_sim_node *ret = out;
        int64_t *dst[] = {&ret->cpu_milli, &ret->memory_mib, &ret->gpus};

        if (n != 5)
                return xp_errorf(
                    err, -EINVAL, "%s:%zu: expected 5 fields, found %zu", path, line, n);
        if (!f[0][0])
                return bad(err, path, line, "sn: must not be empty", f[0]);
        for (size_t i = 0; i < 3; i++)
                if (int_field(f[i + 1], 0, dst[i]) < 0)
                        return bad(err, path, line, what[i], f[i + 1]);
        if (ret->gpus > 8)
                return bad(err, path, line, "gpu: at most 8", f[3]);
        ret->name = strdup(f[0]);
        ret->model = f[4][0] ? strdup(f[4]) : NULL;
        if (!ret->name || (f[4][0] && !ret->model))
                return xp_errorf(err, -ENOMEM, "%s:%zu: out of memory", path, line);
        return 0;
}

static int
pod_row(char **f, size_t n, const char *path, size_t line, void *out, struct xp_error *err)
{
        static const char *const what[] = {"cpu_milli", "memory_mib", "num_gpu", "gpu_milli"};
        struct xp_sim_pod *ret = out;
        int64_t *dst[] = {&ret->cpu_milli, &ret->memory_mib, &ret->num_gpu, &ret->gpu_milli};

        if (n != 5 && n != 11)
                return xp_errorf(
                    err, -EINVAL, "%s:%zu: expected 5 or 11 fields, found %zu", path, line, n);
        if (!f[0][0])
                return bad(err, path, line, "name: must not be empty", f[0]);
        for (size_t i = 0; i < 4; i++)
                if (int_field(f[i + 1], 0, dst[i]) < 0)
                        return bad(err, path, line, what[i], f[i + 1]);
        if (ret->num_gpu > 8)
                return bad(err, path, line, "num_gpu: at most 8", f[3]);
        if (ret->num_gpu == 1 && (ret->gpu_milli < 1 || ret->gpu_milli > 1000))
                return bad(err, path, line, "gpu_milli: must be 1..1000 for one GPU", f[4]);
        if (ret->num_gpu > 1 && ret->gpu_milli != 1000)
                return bad(err, path, line, "gpu_milli: must be 1000 for several GPUs", f[4]);
        ret->creation = ret->deletion = -1;
        if (n == 11 && (int_field(f[8], 0, &ret->creation) < 0))
                return bad(err, path, line, "creation_time", f[8]);
        if (n == 11 && f[9][0] && int_field(f[9], 0, &ret->deletion) < 0)
                return bad(err, path, line, "deletion_time", f[9]);
        ret->name = strdup(f[0]);
        ret->gpu_spec = n == 11 && f[5][0] ? strdup(f[5]) : NULL;
        if (!ret->name || (n == 11 && f[5][0] && !ret->gpu_spec))
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

/* Reads the rows of path into *items (size each), the header checked against header. */
static int read_rows(const char *path,
                     const char *header,
                     size_t size,
                     void **items,
                     size_t *n,
                     int (*row)(char **, size_t, const char *, size_t, void *, struct xp_error *),
                     void (*done)(void *),
                     struct xp_error *err)
{
        _cleanup_(fclosep) FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0, line_no = 0, n0 = *n;
        char *fields[FIELDS_MAX + 1];
        int r = 0;

        if (!f)
                return xp_errorf(err, -errno, "%s: cannot open: %m", path);
        while (getline(&line, &cap, f) > 0) {
                char *m;
                line_no++;
                if (line_no == 1) {
                        if (strncmp(line, header, strlen(header)) != 0)
                                r = xp_errorf(err,
                                              -EINVAL,
                                              "%s:1: expected a header starting \"%s\"",
                                              path,
                                              header);
                        if (r < 0)
                                break;
                        continue;
                }
                m = realloc(*items, (*n + 1) * size);
                if (!m) {
                        r = xp_errorf(err, -ENOMEM, "%s: out of memory", path);
                        break;
                }
                *items = m;
                memset(m + *n * size, 0, size);
                r = row(fields, split(line, fields), path, line_no, m + *n * size, err);
                (*n)++;
                if (r < 0)
                        break;
        }
        if (r >= 0 && line_no == 0)
                r = xp_errorf(err, -EINVAL, "%s: empty file", path);
        if (r < 0) {
                while (*n > n0)
                        done((char *)*items + --(*n) * size);
        }
        return r;
}

int xp_sim_read_nodes(const char *path, struct xp_sim_trace *trace, struct xp_error *err)
{
        void *items = trace->nodes;
        int r = read_rows(path,
                          "sn,cpu_milli,memory_mib,gpu,model",
                          sizeof(*trace->nodes),
                          &items,
                          &trace->n_nodes,
                          node_row,
                          node_done,
                          err);

        trace->nodes = items;
        return r;
}

int xp_sim_read_pods(const char *path, struct xp_sim_trace *trace, struct xp_error *err)
{
        void *items = trace->pods;
        int r = read_rows(path,
                          "name,cpu_milli,memory_mib,num_gpu,gpu_milli",
                          sizeof(*trace->pods),
                          &items,
                          &trace->n_pods,
                          pod_row,
                          pod_done,
                          err);

        trace->pods = items;
        return r;
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
