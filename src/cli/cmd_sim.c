/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool sim: replays a GPU trace through the scheduling core under each policy asked, over
 * several seeds, and prints per policy the allocation at 100 % and at the end of the arrived
 * demand, the fragmentation and the speed (docs/simulator.md).
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_sim_jobs.h"
#include "xpool/sim.h"

#define SIM_FILES_MAX    16
#define SIM_POLICIES_MAX _XP_SCHED_PROFILE_MAX

static const char usage[] =
    "usage: xpool sim --nodes FILE --pods FILE [--pods FILE...] [options]\n"
    "       xpool sim --manifests DIR|FILE [options]\n"
    "  replays a GPU trace (Alibaba cluster-trace-gpu-v2023 CSV files, or Node and Pod\n"
    "  manifests) through xpool's scheduling core and prints the GPU allocation per policy\n"
    "      --nodes FILE        the node list (sn,cpu_milli,memory_mib,gpu,model)\n"
    "      --pods FILE         a pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli,...);\n"
    "                          several: one table block each\n"
    "      --manifests PATH    Node and Pod manifests (YAML/JSON; a directory: its *.yaml,\n"
    "                          *.yml, *.json files); with --nodes, the Nodes of both; several:\n"
    "                          one table block each\n"
    "      --live-mix          fgd and xpool measure fragmentation against the pods placed\n"
    "                          so far, as the server does, not the trace's typical pods\n"
    "      --export DIR        write the first policy's first replay into DIR: nodes.json,\n"
    "                          pods.json (arrival order) and placements.csv\n"
    "      --policy LIST       comma-separated: random,dotprod,gpuclustering,gpupacking,\n"
    "                          bestfit,fgd,xpool (the default: all seven), spread, binpack\n"
    "      --seed N            the first seed (42)\n"
    "      --seeds N           how many seeds, N, N+1, ... (10)\n"
    "      --percent N         arrive pods until their GPU demand is N % of the GPUs (130)\n"
    "      --departures        pods arrive and leave at their traced times instead\n"
    "      --jobs N            run N replays at once, one process each (the CPUs online)\n"
    "      --csv FILE          also write the figures as CSV\n"
    "      --plot FILE         draw the allocation curves (the last pod list's) into\n"
    "                          FILE.svg or FILE.png\n";

struct sim_args {
        const char *nodes;
        const char *pods[SIM_FILES_MAX];
        bool manifests[SIM_FILES_MAX]; /* pods[i] is a manifest path */
        size_t n_pods;
        const char *export;
        enum xp_sched_profile policies[SIM_POLICIES_MAX];
        size_t n_policies;
        unsigned long seed, seeds, percent, jobs;
        bool departures, live_mix;
        const char *csv, *plot;
};

static int parse_policies(const char *text, struct sim_args *a)
{
        _cleanup_free_ char *copy = strdup(text);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        a->n_policies = 0;
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
                if (a->n_policies == SIM_POLICIES_MAX ||
                    xp_sched_profile_from_string(p, &a->policies[a->n_policies]) < 0) {
                        fprintf(stderr, "xpool sim: --policy: unknown policy '%s'\n", p);
                        return -EINVAL;
                }
                a->n_policies++;
        }
        return a->n_policies ? 0 : -EINVAL;
}

static int parse_number(const char *opt, const char *text, unsigned long max, unsigned long *ret)
{
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(text, &end, 10);
        if (errno || *end || !text[0] || v > max) {
                fprintf(stderr,
                        "xpool sim: %s: expected a number up to %lu, got '%s'\n",
                        opt,
                        max,
                        text);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static bool ends_with(const char *path, const char *suffix)
{
        size_t len = strlen(path), n = strlen(suffix);

        return len >= n && strcasecmp(path + len - n, suffix) == 0;
}

static int parse_args(int argc, char **argv, struct sim_args *a)
{
        static const struct option opts[] = {
            {"nodes", required_argument, NULL, 'n'},
            {"pods", required_argument, NULL, 'p'},
            {"policy", required_argument, NULL, 'P'},
            {"seed", required_argument, NULL, 's'},
            {"seeds", required_argument, NULL, 'S'},
            {"percent", required_argument, NULL, 'c'},
            {"departures", no_argument, NULL, 'd'},
            {"csv", required_argument, NULL, 'C'},
            {"plot", required_argument, NULL, 'g'},
            {"manifests", required_argument, NULL, 'm'},
            {"export", required_argument, NULL, 'x'},
            {"live-mix", no_argument, NULL, 'L'},
            {"jobs", required_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},
            {0},
        };
        int c, r = 0;

        optind = 1;
        while (r >= 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'n':
                        a->nodes = optarg;
                        break;
                case 'p':
                case 'm':
                        if (a->n_pods == SIM_FILES_MAX)
                                r = -EINVAL;
                        else {
                                a->manifests[a->n_pods] = c == 'm';
                                a->pods[a->n_pods++] = optarg;
                        }
                        break;
                case 'x':
                        a->export = optarg;
                        break;
                case 'L':
                        a->live_mix = true;
                        break;
                case 'P':
                        r = parse_policies(optarg, a);
                        break;
                case 's':
                        r = parse_number("--seed", optarg, UINT32_MAX, &a->seed);
                        break;
                case 'S':
                        r = parse_number("--seeds", optarg, 1000, &a->seeds);
                        break;
                case 'c':
                        r = parse_number("--percent", optarg, XP_SIM_PERCENT_MAX, &a->percent);
                        break;
                case 'j':
                        r = parse_number("--jobs", optarg, SIM_JOBS_MAX, &a->jobs);
                        break;
                case 'd':
                        a->departures = true;
                        break;
                case 'C':
                        a->csv = optarg;
                        break;
                case 'g':
                        a->plot = optarg;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return 1;
                default:
                        r = -EINVAL;
                }
        }
        if (r >= 0 && a->plot && !ends_with(a->plot, ".svg") && !ends_with(a->plot, ".png")) {
                fprintf(stderr,
                        "xpool sim: --plot %s: the curves are drawn as SVG or PNG; name the file "
                        ".svg or .png\n",
                        a->plot);
                return -EINVAL;
        }
        if (r >= 0 && (a->n_pods == 0 || (!a->nodes && !a->manifests[0]) || optind < argc ||
                       a->seeds == 0 || a->percent < 100 || a->jobs == 0))
                r = -EINVAL;
        if (r < 0)
                fputs(usage, stderr);
        return r;
}

/* The trace's name as a CSV field: quoted when a file's name holds a comma or a quote. */
static void csv_name(FILE *csv, const char *name)
{
        if (!strpbrk(name, ",\"\r\n")) {
                fputs(name, csv);
                return;
        }
        fputc('"', csv);
        for (const char *p = name; *p; p++)
                fputs(*p == '"' ? "\"\"" : (char[]){*p, 0}, csv);
        fputc('"', csv);
}

static void print_row(const struct xp_sim_summary *s, bool departures, FILE *csv)
{
        const char *name = xp_sched_profile_to_string(s->profile);

        if (departures) {
                printf("%-14s %-14s %8.2f %%      %12.0f\n",
                       s->trace,
                       name,
                       100 * s->time_avg,
                       s->placements_per_s);
                if (csv)
                        csv_name(csv, s->trace);
                if (csv)
                        fprintf(csv,
                                ",%s,%zu,%.4f,%.0f\n",
                                name,
                                s->runs,
                                100 * s->time_avg,
                                s->placements_per_s);
                return;
        }
        printf("%-14s %-14s %6.2f ± %-5.2f %6.2f ± %-5.2f %6.2f %%  %12.0f\n",
               s->trace,
               name,
               100 * s->mean[100],
               100 * s->sd100,
               100 * s->mean[s->percent],
               100 * s->sd_end,
               100 * s->frag_rate,
               s->placements_per_s);
        if (csv)
                csv_name(csv, s->trace);
        if (csv)
                fprintf(csv,
                        ",%s,%zu,%.4f,%.4f,%.4f,%.4f,%.4f,%.0f\n",
                        name,
                        s->runs,
                        100 * s->mean[100],
                        100 * s->sd100,
                        100 * s->mean[s->percent],
                        100 * s->sd_end,
                        100 * s->frag_rate,
                        s->placements_per_s);
}

/* The short name of a pod file: openb_pod_list_default.csv -> default. */
static const char *trace_name(const char *path, char *buf, size_t size)
{
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        const char *p = strncmp(base, "openb_pod_list_", 15) == 0 ? base + 15 : base;
        size_t len = strcspn(p, ".");

        snprintf(buf, size, "%.*s", (int)len, p);
        return buf;
}

/* The table's header, once, when the first file has been read (an error prints no table). */
static void print_header(const struct sim_args *a)
{
        static bool printed;

        if (printed)
                return;
        printed = true;
        if (a->departures)
                printf("%-14s %-14s %-16s %12s\n",
                       "TRACE",
                       "POLICY",
                       "TIME-AVG ALLOC",
                       "PLACEMENTS/S");
        else
                printf("%-14s %-14s %-15s %-15s %-9s %12s\n",
                       "TRACE",
                       "POLICY",
                       "ALLOC@100%",
                       a->percent == 130 ? "ALLOC@130%" : "ALLOC@END",
                       "FRAG",
                       "PLACEMENTS/S");
}

/* The first policy's first replay, in this process: --export writes its placements. */
static int run_export(const struct sim_args *a,
                      const struct xp_sim_trace *t,
                      const struct xp_sim_options *o,
                      struct xp_sim_result *r)
{
        struct xp_error err = {0};

        if (xp_sim_run(t, o, r, &err) < 0) {
                fprintf(stderr, "xpool sim: seed %u: %s\n", (unsigned)o->seed, err.msg);
                return -EINVAL;
        }
        if (xp_sim_export(t, r, a->export, &err) < 0) {
                fprintf(stderr, "xpool sim: --export: %s\n", err.msg);
                xp_sim_result_done(r);
                return -EIO;
        }
        xp_sim_result_done(r);
        return 0;
}

/* Every policy's seeds of one pod list, res[policy * seeds + k]; the export's replay first. */
static int run_replays(const struct sim_args *a,
                       const struct xp_sim_trace *t,
                       struct xp_sim_options *opts,
                       struct xp_sim_result *res)
{
        size_t n = a->n_policies * a->seeds, first = a->export ? 1 : 0;
        struct sim_job_error e;

        for (size_t j = 0; j < n; j++)
                opts[j] = (struct xp_sim_options){.profile = a->policies[j / a->seeds],
                                                  .seed = a->seed + j % a->seeds,
                                                  .percent = (unsigned)a->percent,
                                                  .departures = a->departures,
                                                  .live_mix = a->live_mix};
        if (first && run_export(a, t, &opts[0], &res[0]) < 0)
                return -EINVAL;
        if (sim_jobs_run(t, opts + first, res + first, n - first, (unsigned)a->jobs, &e) < 0) {
                fprintf(stderr,
                        "xpool sim: %s, seed %u: %s\n",
                        xp_sched_profile_to_string(opts[first + e.job].profile),
                        (unsigned)opts[first + e.job].seed,
                        e.msg);
                return -EINVAL;
        }
        return 0;
}

static bool cluster_has_model(const struct xp_sim_trace *t, const char *model, size_t len)
{
        for (size_t i = 0; i < t->n_nodes; i++)
                if (t->nodes[i].model && strlen(t->nodes[i].model) == len &&
                    strncmp(t->nodes[i].model, model, len) == 0)
                        return true;
        return false;
}

/* A gpu_spec naming only models no node has is allowed (the pod is dropped) but worth a word. */
static void warn_unknown_models(const struct xp_sim_trace *t, const char *path)
{
        size_t n = 0;
        const char *example = NULL;

        for (size_t i = 0; i < t->n_pods; i++) {
                const char *p = t->pods[i].gpu_spec;
                bool known = p == NULL;
                while (p && !known) {
                        size_t len = strcspn(p, "|");
                        known = cluster_has_model(t, p, len);
                        p = p[len] ? p + len + 1 : NULL;
                }
                if (!known && n++ == 0)
                        example = t->pods[i].gpu_spec;
        }
        if (n)
                fprintf(stderr,
                        "xpool sim: %s: %zu pods ask only for GPU models no node has (such as "
                        "\"%s\"); they will fit nowhere\n",
                        path,
                        n,
                        example);
}

static int run_file(const struct sim_args *a,
                    size_t f,
                    char *name,
                    size_t name_size,
                    struct xp_sim_summary *sums,
                    FILE *csv)
{
        struct xp_sim_trace t = {0};
        struct xp_error err = {0};
        struct xp_sim_options *opts = NULL;
        struct xp_sim_result *res = NULL;
        int r = a->nodes ? xp_sim_read_nodes(a->nodes, &t, &err) : 0;

        if (r >= 0)
                r = a->manifests[f] ? xp_sim_read_manifests(a->pods[f], &t, &err)
                                    : xp_sim_read_pods(a->pods[f], &t, &err);
        if (r < 0) {
                fprintf(stderr, "xpool sim: %s\n", err.msg);
                xp_sim_trace_done(&t);
                return r;
        }
        warn_unknown_models(&t, a->pods[f]);
        print_header(a);
        trace_name(a->pods[f], name, name_size);
        opts = calloc(a->n_policies * a->seeds, sizeof(*opts));
        res = calloc(a->n_policies * a->seeds, sizeof(*res));
        r = opts && res ? run_replays(a, &t, opts, res) : -ENOMEM;
        if (r == -ENOMEM)
                fprintf(stderr, "xpool sim: out of memory\n");
        /* summed in seed order, whichever replay finished first */
        for (size_t i = 0; i < a->n_policies && r >= 0; i++) {
                sums[i] = (struct xp_sim_summary){
                    .trace = name, .profile = a->policies[i], .percent = (unsigned)a->percent};
                for (size_t k = 0; k < a->seeds; k++)
                        xp_sim_summary_add(&sums[i], &res[i * a->seeds + k]);
                xp_sim_summary_finish(&sums[i]);
                print_row(&sums[i], a->departures, csv);
        }
        fflush(stdout);
        free(opts);
        free(res);
        xp_sim_trace_done(&t);
        return r;
}

static int write_plot(const char *path, const char *title, const struct xp_sim_summary *s, size_t n)
{
        bool png = ends_with(path, ".png");
        struct xp_error err = {0};
        FILE *f = fopen(path, "we");
        int r;

        if (!f) {
                fprintf(stderr, "xpool sim: --plot %s: %m\n", path);
                return -errno;
        }
        r = png ? xp_sim_plot_png(f, title, s, n, &err) : xp_sim_plot_svg(f, title, s, n);
        if (fclose(f) != 0 || r < 0) {
                fprintf(stderr,
                        "xpool sim: --plot %s: %s\n",
                        path,
                        err.code ? xp_error_message(&err) : "write failed");
                return -EIO;
        }
        return 0;
}

int xp_cmd_sim(int argc, char **argv)
{
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        struct sim_args a = {.seed = 42,
                             .seeds = 10,
                             .percent = 130,
                             .jobs = cpus < 1              ? 1
                                     : cpus > SIM_JOBS_MAX ? SIM_JOBS_MAX
                                                           : (unsigned long)cpus};
        struct xp_sim_summary sums[SIM_POLICIES_MAX];
        char name[128] = "", title[200];
        struct xp_error err = {0};
        FILE *csv = NULL;
        int r;

        parse_policies("random,dotprod,gpuclustering,gpupacking,bestfit,fgd,xpool", &a);
        r = parse_args(argc, argv, &a);
        if (r != 0)
                return r > 0 ? 0 : 2;
        /* made before the replays, so a bad directory stops the run before minutes of work */
        if (a.export && mkdir(a.export, 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "xpool sim: --export %s: %m\n", a.export);
                return 1;
        }
        /* cairo is loaded before the replays too: a PNG it cannot draw would waste them */
        if (a.plot && ends_with(a.plot, ".png") && xp_sim_plot_png_ready(&err) < 0) {
                fprintf(stderr, "xpool sim: --plot %s: %s\n", a.plot, xp_error_message(&err));
                return 1;
        }
        if (a.csv && !(csv = fopen(a.csv, "we"))) {
                fprintf(stderr, "xpool sim: --csv %s: %m\n", a.csv);
                return 1;
        }
        if (csv)
                fputs(
                    a.departures
                        ? "trace,policy,seeds,time_avg_pct,placements_per_s\n"
                        : "trace,policy,seeds,alloc100_pct,alloc100_sd,allocend_pct,allocend_sd,frag_pct,placements_per_s\n",
                    csv);
        for (size_t f = 0; f < a.n_pods && r >= 0; f++)
                r = run_file(&a, f, name, sizeof(name), sums, csv);
        if (csv && fclose(csv) != 0 && r >= 0) {
                fprintf(stderr, "xpool sim: --csv %s: write failed\n", a.csv);
                r = -EIO;
        }
        if (r >= 0 && a.plot && !a.departures) {
                snprintf(title,
                         sizeof(title),
                         "GPU allocation, trace %s, %lu seed%s from %lu",
                         name,
                         a.seeds,
                         a.seeds == 1 ? "" : "s",
                         a.seed);
                r = write_plot(a.plot, title, sums, a.n_policies);
        }
        return r < 0 ? 1 : 0;
}
