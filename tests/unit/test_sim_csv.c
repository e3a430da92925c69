/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's CSV reader on files as others write them (columns reordered, missing optional
 * or extra columns, blank lines, CRLF, quotes, a byte order mark) and on bad ones, each named by
 * file and line with nothing read; and the replay on what such files may hold: CPU-only nodes,
 * names and models that need escaping, a workload without GPU demand.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/sim.h"

static char path[] = "/tmp/xpool-test-simcsv-XXXXXX";

static int setup(void **state)
{
        int fd = mkstemp(path);

        (void)state;
        if (fd < 0)
                return -1;
        close(fd);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        unlink(path);
        return 0;
}

static void write_text(const char *text)
{
        FILE *f = fopen(path, "w");

        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void spreadsheet_files_are_read(void **state)
{
        struct xp_sim_trace t = {0};
        struct xp_error err = {0};

        (void)state;
        /* a byte order mark, CRLF, columns in another order, one unknown, blank lines, spaces,
         * quoted fields (a comma and a quote inside), a float for an integer, a trailing comma */
        write_text("\xEF\xBB\xBFgpu_milli,name,num_gpu,extra,memory_mib,cpu_milli,gpu_spec\r\n"
                   "\r\n"
                   "460, p1 ,1,x,1024,2000,\"V100M16|V100M32\"\r\n"
                   "   \r\n"
                   "1000,\"p,\"\"2\"\"\",2,\"y\",2048.0,4000,,\r\n"
                   "0,p3,0,,512,500,\r\n");
        assert_int_equal(xp_sim_read_pods(path, &t, &err), 0);
        assert_int_equal(t.n_pods, 3);
        assert_string_equal(t.pods[0].name, "p1");
        assert_int_equal(t.pods[0].gpu_milli, 460);
        assert_int_equal(t.pods[0].cpu_milli, 2000);
        assert_string_equal(t.pods[0].gpu_spec, "V100M16|V100M32");
        assert_int_equal(t.pods[0].creation, -1); /* no such column */
        assert_string_equal(t.pods[1].name, "p,\"2\"");
        assert_int_equal(t.pods[1].num_gpu, 2);
        assert_int_equal(t.pods[1].memory_mib, 2048);
        assert_null(t.pods[1].gpu_spec);
        assert_int_equal(t.pods[2].num_gpu, 0);

        /* a node list without the model column, a CPU-only node */
        write_text("sn,gpu,memory_mib,cpu_milli\nn1,8,262144,96000\nn2,0,65536,32000\n");
        assert_int_equal(xp_sim_read_nodes(path, &t, &err), 0);
        assert_int_equal(t.n_nodes, 2);
        assert_int_equal(t.nodes[0].gpus, 8);
        assert_int_equal(t.nodes[0].cpu_milli, 96000);
        assert_null(t.nodes[0].model);
        assert_int_equal(t.nodes[1].gpus, 0);
        xp_sim_trace_done(&t);
}

static void bad_files_are_named_by_file_and_line(void **state)
{
        static const char *const bad[][2] = {
            {"name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n", "header: no column \"gpu_milli\""},
            {"pod,cpu\np,1\n", "header: no column \"name\""},
            {"name,name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", "column \"name\" twice"},
            {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\np,1,1,0,0,7\n",
             ":3: expected 5 fields"},
            {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0\n", ":2: expected 5 fields"},
            {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,\"1,1,0,0\n", ":2: a quoted field"},
            {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1.5,1,0,0\n", ":2: cpu_milli"},
            {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,-1,1,0,0\n", ":2: cpu_milli"},
            {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,99999999999999,1,0,0\n",
             ":2: cpu_milli"},
            {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1500\n", ":2: gpu_milli"},
            {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,9,1000\n", ":2: num_gpu"},
            {"\n\n", "empty file"},
        };
        struct xp_sim_trace t = {0};
        struct xp_error err = {0};

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                write_text(bad[i][0]);
                assert_int_equal(xp_sim_read_pods(path, &t, &err), -EINVAL);
                if (!strstr(err.msg, bad[i][1]) || !strstr(err.msg, path))
                        fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.msg, bad[i][1]);
                assert_int_equal(t.n_pods, 0);
        }
        write_text("sn,cpu_milli,memory_mib,gpu,model\na,1,1,1,T4\n\nb,1,1,1,T4\na,1,1,2,T4\n");
        assert_int_equal(xp_sim_read_nodes(path, &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, ":5: node \"a\" again (first on line 2)"));
        assert_int_equal(t.n_nodes, 0);
}

/* A line beyond the bound is refused without reading it whole into memory. */
static void a_huge_line_is_refused(void **state)
{
        struct xp_sim_trace t = {0};
        struct xp_error err = {0};
        FILE *f = fopen(path, "w");

        (void)state;
        assert_non_null(f);
        fputs("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,0\np", f);
        for (int i = 0; i < 100000; i++)
                fputc('x', f);
        fputs(",1,1,0,0\n", f);
        fclose(f);
        assert_int_equal(xp_sim_read_pods(path, &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, ":3: line longer than"));
        assert_int_equal(t.n_pods, 0);
}

/* Quotes and backslashes in names and models, a CPU-only node, a model no node has: the replay
 * runs; a workload that asks no GPU is refused instead of drawn for ever. */
static void awkward_clusters_replay(void **state)
{
        struct xp_sim_trace t = {0};
        struct xp_error err = {0};
        struct xp_sim_options o = {.profile = XP_SCHED_XPOOL, .seed = 42, .percent = 130};
        struct xp_sim_result r = {0};
        size_t placed_on_quoted = 0;

        (void)state;
        write_text("sn,cpu_milli,memory_mib,gpu,model\n\"n\"\"1\\\\\",64000,262144,4,\"A\"\"100\"\n"
                   "cpu-only,32000,65536,0,\n");
        assert_int_equal(xp_sim_read_nodes(path, &t, &err), 0);
        write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np1,1000,100,1,500,"
                   "\"A\"\"100\"\np2,1000,100,1,500,H100\np3,1000,100,0,0,\n");
        assert_int_equal(xp_sim_read_pods(path, &t, &err), 0);
        assert_int_equal(xp_sim_run(&t, &o, &r, &err), 0);
        for (size_t i = 0; i < r.arrived; i++) {
                const struct xp_sim_placement *p = &r.placements[i];
                if (t.pods[p->pod].gpu_spec && strcmp(t.pods[p->pod].gpu_spec, "H100") == 0)
                        assert_true(p->node < 0);
                if (p->node == 0)
                        placed_on_quoted++;
        }
        assert_true(placed_on_quoted > 0);
        assert_true(r.ratio[130] > 0);
        xp_sim_result_done(&r);
        for (size_t i = 0; i < t.n_pods; i++)
                t.pods[i].num_gpu = 0;
        assert_int_equal(xp_sim_run(&t, &o, &r, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "no pods asking GPUs"));
        xp_sim_trace_done(&t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(spreadsheet_files_are_read),
            cmocka_unit_test(bad_files_are_named_by_file_and_line),
            cmocka_unit_test(a_huge_line_is_refused),
            cmocka_unit_test(awkward_clusters_replay),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
