/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator on a slice of the trace (tests/data/sim): what it placed is checked from the
 * placements alone, against the trace, not against the simulator's own counters: no node over
 * its CPU or memory, no GPU above 1000 milli, every gpu_spec respected, each pod's GPUs as it
 * asked, and the allocation ratio recomputed. Bad rows are named by file and line.
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

static void read_slice(struct xp_sim_trace *t)
{
        struct xp_error err = {0};

        assert_int_equal(xp_sim_read_nodes(XPOOL_TEST_DATA "/sim/nodes.csv", t, &err), 0);
        assert_int_equal(xp_sim_read_pods(XPOOL_TEST_DATA "/sim/pods.csv", t, &err), 0);
        assert_int_equal(t->n_nodes, 41);
        assert_int_equal(t->n_pods, 327);
}

static bool spec_allows(const char *spec, const char *model)
{
        size_t len = strlen(model);

        for (const char *p = spec; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL)
                if (strncmp(p, model, len) == 0 && (p[len] == '|' || p[len] == '\0'))
                        return true;
        return false;
}

/* Every invariant, from the placements; returns the allocated GPU milli. */
static int64_t check_placements(const struct xp_sim_trace *t, const struct xp_sim_result *r)
{
        int64_t *cpu = calloc(t->n_nodes, sizeof(*cpu)), *mem = calloc(t->n_nodes, sizeof(*mem));
        int64_t(*gpu)[8] = calloc(t->n_nodes, sizeof(*gpu)), allocated = 0;

        assert_non_null(cpu);
        assert_non_null(mem);
        assert_non_null(gpu);
        for (size_t i = 0; i < r->arrived; i++) {
                const struct xp_sim_placement *p = &r->placements[i];
                const struct xp_sim_pod *pod = &t->pods[p->pod];
                const struct xp_sim_node *node;
                if (p->node < 0)
                        continue;
                node = &t->nodes[p->node];
                cpu[p->node] += pod->cpu_milli;
                mem[p->node] += pod->memory_mib;
                assert_true(cpu[p->node] <= node->cpu_milli);
                assert_true(mem[p->node] <= node->memory_mib);
                if (pod->gpu_spec)
                        assert_true(spec_allows(pod->gpu_spec, node->model));
                assert_int_equal(p->n_dev, pod->num_gpu);
                for (size_t d = 0; d < p->n_dev; d++) {
                        assert_true(p->dev[d] >= 0 && p->dev[d] < node->gpus);
                        assert_int_equal(p->milli[d], pod->num_gpu == 1 ? pod->gpu_milli : 1000);
                        gpu[p->node][p->dev[d]] += p->milli[d];
                        assert_true(gpu[p->node][p->dev[d]] <= 1000);
                        allocated += p->milli[d];
                }
        }
        free(cpu);
        free(mem);
        free(gpu);
        return allocated;
}

static void every_policy_keeps_the_invariants(void **state)
{
        struct xp_sim_trace t = {0};
        int64_t capacity = 0;

        (void)state;
        read_slice(&t);
        for (size_t i = 0; i < t.n_nodes; i++)
                capacity += t.nodes[i].gpus * 1000;
        for (int prof = XP_SCHED_RANDOM; prof < _XP_SCHED_PROFILE_MAX; prof++) {
                struct xp_sim_options o = {.profile = prof, .seed = 42, .percent = 130};
                struct xp_sim_result r = {0};
                struct xp_error err = {0};
                int64_t allocated, dropped_demand = 0, demand = 0;
                assert_int_equal(xp_sim_run(&t, &o, &r, &err), 0);
                allocated = check_placements(&t, &r);
                /* the ratio at the end is what the placements hold */
                assert_true(r.ratio[130] * (double)capacity > (double)allocated - 0.5 &&
                            r.ratio[130] * (double)capacity < (double)allocated + 0.5);
                for (size_t i = 0; i < r.arrived; i++) {
                        int64_t d = xp_sim_pod_demand(&t.pods[r.placements[i].pod]);
                        demand += d;
                        if (r.placements[i].node < 0)
                                dropped_demand += d;
                }
                assert_true(demand * 100 >= 130 * capacity);
                assert_int_equal(allocated, demand - dropped_demand);
                assert_true(r.frag_rate >= 0 && r.frag_rate <= 1);
                xp_sim_result_done(&r);
        }
        xp_sim_trace_done(&t);
}

static void departures_free_what_leaves(void **state)
{
        struct xp_sim_trace t = {0};
        struct xp_sim_options o = {.profile = XP_SCHED_XPOOL, .departures = true};
        struct xp_sim_result r = {0};
        struct xp_error err = {0};

        (void)state;
        read_slice(&t);
        assert_int_equal(xp_sim_run(&t, &o, &r, &err), 0);
        assert_int_equal(r.arrived, t.n_pods);
        assert_true(r.time_avg > 0 && r.time_avg <= 1);
        xp_sim_result_done(&r);
        xp_sim_trace_done(&t);
}

static void bad_rows_are_named_by_file_and_line(void **state)
{
        static const char *const bad[] = {
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,1,1500\n",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,1,500\nq,x,10,0,0\n",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10\n",
            "pod,cpu\np,1\n",
        };
        static const char *const want[] = {":2: gpu_milli",
                                           ":3: cpu_milli",
                                           ":2: expected 5 fields",
                                           "header: no column \"name\""};
        char path[] = "/tmp/xpool-test-sim-XXXXXX";
        int fd = mkstemp(path);

        (void)state;
        assert_true(fd >= 0);
        close(fd);
        for (size_t i = 0; i < 4; i++) {
                struct xp_sim_trace t = {0};
                struct xp_error err = {0};
                FILE *f = fopen(path, "w");
                assert_non_null(f);
                fputs(bad[i], f);
                fclose(f);
                assert_int_equal(xp_sim_read_pods(path, &t, &err), -EINVAL);
                assert_non_null(strstr(err.msg, want[i]));
                assert_non_null(strstr(err.msg, path));
                assert_int_equal(t.n_pods, 0);
                xp_sim_trace_done(&t);
        }
        unlink(path);
}

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* Two nodes (one with an NVLink-less inventory of its own, one without: its GPUs become
 * devices), a share pod pinned to a model, a whole-GPU pod and a CPU pod, as manifests; then
 * replayed, the placements checked against what the manifests ask. */
static void manifests_replay_nodes_and_pods(void **state)
{
        static const char text[] =
            "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {nvidia.com/gpu.product: T4}}\n"
            "status:\n  allocatable: {cpu: \"16\", memory: 64Gi, nvidia.com/gpu: \"2\"}\n"
            "---\napiVersion: v1\nkind: Node\nmetadata: {name: b, labels: {nvidia.com/gpu.product: "
            "V100M16}}\nstatus:\n  allocatable: {cpu: \"32\", memory: 64Gi, pods: \"10\", "
            "nvidia.com/gpu: \"1\"}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: share}\nspec:\n  affinity:\n"
            "    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "        nodeSelectorTerms:\n        - matchExpressions:\n"
            "          - {key: nvidia.com/gpu.product, operator: In, values: [V100M16, V100M32]}\n"
            "  containers:\n  - {name: c, image: i, resources: {requests: {cpu: \"2\", memory: 1Gi, "
            "nvidia.com/gpu: 460m}, limits: {nvidia.com/gpu: 460m}}}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: whole}\nspec:\n  containers:\n"
            "  - {name: c, image: i, resources: {limits: {cpu: \"4\", memory: 2Gi, nvidia.com/gpu: "
            "\"2\"}}}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: cpu}\nspec:\n  containers:\n"
            "  - {name: c, image: i, resources: {requests: {cpu: 500m, memory: 256Mi}}}\n";
        char path[] = "/tmp/xpool-test-sim-XXXXXX.yaml";
        int fd = mkstemps(path, 5);
        struct xp_sim_trace t = {0};
        struct xp_error err = {0};
        struct xp_sim_options o = {.profile = XP_SCHED_BESTFIT, .seed = 1, .percent = 100};
        struct xp_sim_result r = {0};

        (void)state;
        assert_true(fd >= 0);
        close(fd);
        write_file(path, text);
        assert_int_equal(xp_sim_read_manifests(path, &t, &err), 0);
        assert_int_equal(t.n_nodes, 2);
        assert_int_equal(t.n_pods, 3);
        assert_string_equal(t.nodes[0].model, "T4");
        assert_int_equal(t.nodes[0].cpu_milli, 16000);
        assert_int_equal(t.nodes[0].gpus, 2);
        assert_string_equal(t.pods[0].gpu_spec, "V100M16|V100M32");
        assert_int_equal(t.pods[0].num_gpu, 1);
        assert_int_equal(t.pods[0].gpu_milli, 460);
        assert_int_equal(t.pods[1].num_gpu, 2);
        assert_int_equal(t.pods[1].cpu_milli, 4000);
        assert_int_equal(t.pods[2].num_gpu, 0);
        assert_int_equal(t.pods[2].memory_mib, 256);
        assert_int_equal(xp_sim_run(&t, &o, &r, &err), 0);
        for (size_t i = 0; i < r.arrived; i++) {
                const struct xp_sim_placement *pl = &r.placements[i];
                const struct xp_sim_pod *p = &t.pods[pl->pod];
                /* the first three arrivals are the manifests' pods, which all fit; those drawn
                 * again to reach 100 % of the GPUs may not */
                assert_true(pl->node >= 0 || i >= 3);
                if (pl->node < 0)
                        continue;
                if (p->gpu_spec)
                        assert_string_equal(t.nodes[pl->node].name, "b");
                if (p->num_gpu == 2) {
                        assert_string_equal(t.nodes[pl->node].name, "a");
                        assert_int_equal(pl->n_dev, 2);
                }
        }
        xp_sim_result_done(&r);
        xp_sim_trace_done(&t);

        /* another kind stops the read, named by file and line, and appends nothing */
        write_file(path,
                   "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: v1\n"
                   "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: c, image: i, "
                   "resources: {limits: {nvidia.com/gpu: 1500m}}}\n");
        assert_int_equal(xp_sim_read_manifests(path, &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, ":1: Namespace: only Nodes and Pods are replayed"));
        assert_int_equal(t.n_nodes + t.n_pods, 0);
        write_file(path,
                   "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                   "  - {name: c, image: i, resources: {limits: {nvidia.com/gpu: 1500m}}}\n");
        assert_int_equal(xp_sim_read_manifests(path, &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "nvidia.com/gpu: a share of one device"));
        assert_int_equal(t.n_pods, 0);
        xp_sim_trace_done(&t);
        unlink(path);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(every_policy_keeps_the_invariants),
            cmocka_unit_test(departures_free_what_leaves),
            cmocka_unit_test(bad_rows_are_named_by_file_and_line),
            cmocka_unit_test(manifests_replay_nodes_and_pods),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
