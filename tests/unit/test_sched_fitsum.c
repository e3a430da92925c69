/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nodes' fit summaries (src/sched/fitsum.c) against the full filters: random clusters
 * (seeded) of nodes with and without devices, taints, readiness, extra resources and more device
 * kinds than a summary holds; pods bound, removed and nodes changed between rounds; and random
 * pods asked of every node both ways. Every verdict (fit, reason, unresolvable, score, best) must
 * be the same, and the summaries must have judged most nodes.
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/codec.h"
#include "xpool/sched.h"

#define NODES  48
#define ROUNDS 6
#define ASKS   24 /* pods asked each round */

static uint64_t rng_state;

static unsigned pick(unsigned n)
{
        /* xorshift64*: seeded, the same on every machine */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return (unsigned)((rng_state * 0x2545F4914F6CDD1DULL) >> 33) % n;
}

struct kind {
        const char *resource, *kind, *vendor;
};

static const struct kind kinds[] = {
    {"nvidia.com/gpu", "gpu", "NVIDIA"},
    {"huawei.com/Ascend910", "npu", "Huawei"},
    {"xilinx.com/fpga", "fpga", "AMD"},
};

/* Devices of kind k, count n, some unhealthy, into the inventory and allocatable. */
static void add_devices(json_t *inv, json_t *alloc, const char *node, size_t k, int n)
{
        for (int i = 0; i < n; i++) {
                json_t *d = json_pack("{s:o, s:s, s:s, s:s, s:i, s:i, s:I, s:s}",
                                      "id",
                                      json_sprintf("%s-%s-%d", node, kinds[k].kind, i),
                                      "kind",
                                      kinds[k].kind,
                                      "vendor",
                                      kinds[k].vendor,
                                      "resourceName",
                                      kinds[k].resource,
                                      "index",
                                      i,
                                      "numaNode",
                                      i % 2,
                                      "memoryBytes",
                                      (json_int_t)(16LL + 16 * pick(5)) << 30,
                                      "health",
                                      pick(8) ? "Healthy" : "Unhealthy");
                json_array_append_new(json_object_get(inv, "devices"), d);
        }
        if (pick(4))
                json_object_set_new(alloc, kinds[k].resource, json_sprintf("%d", n));
}

static json_t *random_node(const char *name)
{
        static const char *const cpus[] = {"4", "16", "96"};
        static const char *const mems[] = {"8Gi", "64Gi", "256Gi"};
        static const char *const readiness[] = {
            "True", "True", "True", "True", "True", "True", "True", "False", "Unknown"};
        static const char *const effects[] = {"NoSchedule", "NoExecute", "PreferNoSchedule"};
        json_t *node = json_pack("{s:{s:s, s:{s:s, s:s}}, s:{}, s:{s:{s:s, s:s, s:s}, s:[]}}",
                                 "metadata",
                                 "name",
                                 name,
                                 "labels",
                                 "kubernetes.io/hostname",
                                 name,
                                 "zone",
                                 pick(2) ? "a" : "b",
                                 "spec",
                                 "status",
                                 "allocatable",
                                 "cpu",
                                 cpus[pick(3)],
                                 "memory",
                                 mems[pick(3)],
                                 "pods",
                                 pick(4) ? "110" : "2",
                                 "conditions");
        json_t *status = json_object_get(node, "status"),
               *alloc = json_object_get(status, "allocatable");
        json_t *inv = json_pack("{s:[{s:i, s:s}, {s:i, s:s}], s:[]}",
                                "numaNodes",
                                "id",
                                0,
                                "cpus",
                                "0-47",
                                "id",
                                1,
                                "cpus",
                                "48-95",
                                "devices");
        unsigned kinds_here = pick(7); /* 0 none, 1 gpu, 2 npu, 3-5 both, 6 all three */

        if (pick(12))
                json_array_append_new(
                    json_object_get(status, "conditions"),
                    json_pack("{s:s, s:s}", "type", "Ready", "status", readiness[pick(9)]));
        if (pick(12) == 0)
                json_object_set_new(json_object_get(node, "spec"), "unschedulable", json_true());
        if (pick(8) == 0)
                json_object_set_new(json_object_get(node, "spec"),
                                    "taints",
                                    json_pack("[{s:s, s:s, s:s}]",
                                              "key",
                                              "dedicated",
                                              "value",
                                              "infer",
                                              "effect",
                                              effects[pick(3)]));
        if (pick(4) == 0)
                json_object_set_new(alloc, "example.com/foo", json_string(pick(2) ? "2" : "0"));
        if (kinds_here == 1 || kinds_here >= 3)
                add_devices(inv, alloc, name, 0, 1 + (int)pick(8));
        if (kinds_here == 2 || kinds_here >= 3)
                add_devices(inv, alloc, name, 1, 1 + (int)pick(8));
        if (kinds_here == 6)
                add_devices(inv, alloc, name, 2, 1 + (int)pick(2));
        if (kinds_here)
                json_object_set_new(status, "xpool", inv);
        else
                json_decref(inv);
        return node;
}

static void set_node(struct xp_sched *sched, const char *name)
{
        json_t *json = random_node(name);
        struct xp_node *node = NULL;
        struct xp_error err = {0};

        if (xp_node_from_json(json, NULL, XP_DECODE_TRUSTED, &node, &err) < 0)
                fail_msg("node: %s", err.msg);
        if (xp_sched_node_set(sched, node, &err) < 0)
                fail_msg("node_set: %s", err.msg);
        xp_node_free(node);
        json_decref(json);
}

/* A random pod: plain resource shapes mostly, and now and then what only the full filters judge
 * (a selector, a toleration, single-NUMA, a memory share, accelerator constraints). */
static struct xp_pod *random_pod(const char *name, const char *node_name)
{
        static const char *const limits[] = {
            "\"cpu\":\"2\"",
            "\"cpu\":\"20\",\"memory\":\"100Gi\"",
            "\"nvidia.com/gpu\":\"1\"",
            "\"nvidia.com/gpu\":\"4\",\"cpu\":\"8\"",
            "\"nvidia.com/gpu\":\"500m\"",
            "\"nvidia.com/gpu\":\"1500m\"",
            "\"huawei.com/Ascend910\":\"2\"",
            "\"xilinx.com/fpga\":\"1\"",
            "\"xpool.io/accelerator\":\"1\"",
            "\"xpool.io/accelerator\":\"3\"",
            "\"xpool.io/accelerator\":\"250m\"",
            "\"example.com/foo\":\"1\"",
            "\"example.com/bar\":\"1\"",
            "\"nvidia.com/gpu\":\"2\",\"huawei.com/Ascend910\":\"1\",\"memory\":\"300Gi\"",
            "\"nvidia.com/gpu-memory\":\"20Gi\"",
        };
        static const char *const extras[] = {
            "",
            "",
            "",
            ",\"nodeSelector\":{\"zone\":\"a\"}",
            ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\"}]",
            ",\"tolerations\":[{\"operator\":\"Exists\"}]",
        };
        static const char *const annotations[] = {
            "",
            "",
            "",
            ",\"annotations\":{\"xpool.io/accelerator-kinds\":\"npu\"}",
            ",\"annotations\":{\"" XP_NUMA_ANNOTATION "\":\"true\"}",
        };
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        char *text;

        assert_true(asprintf(&text,
                             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"%s},"
                             "\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\",\"image\":\"i\","
                             "\"resources\":{\"limits\":{%s}}}]%s}}",
                             name,
                             node_name ? "" : annotations[pick(5)],
                             node_name ? "\"nodeName\":\"" : "",
                             node_name ? node_name : "",
                             node_name ? "\"," : "",
                             limits[pick(XP_ELEMENTSOF(limits))],
                             node_name ? "" : extras[pick(6)]) >= 0);
        if (xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0)
                fail_msg("pod: %s in %s", err.msg, text);
        free(text);
        return pod;
}

static void same_verdicts(const struct xp_sched_verdicts *a, const struct xp_sched_verdicts *b)
{
        assert_int_equal(a->n, b->n);
        for (size_t i = 0; i < a->n; i++) {
                const struct xp_sched_verdict *x = &a->items[i], *y = &b->items[i];
                assert_int_equal(x->fit, y->fit);
                assert_int_equal(x->unresolvable, y->unresolvable);
                assert_int_equal(x->score, y->score);
                assert_int_equal(x->best, y->best);
                if (x->reason || y->reason) {
                        assert_non_null(x->reason);
                        assert_non_null(y->reason);
                        assert_string_equal(x->reason, y->reason);
                }
        }
}

/* Asks a random pod of every node (and one unknown name) with and without the summaries. */
static void ask(struct xp_sched *sched, const char *const *names, size_t n, int k)
{
        char name[32];
        struct xp_pod *pod;
        struct xp_sched_verdicts summed, full;
        struct xp_error err = {0};

        snprintf(name, sizeof(name), "ask-%d", k);
        pod = random_pod(name, NULL);
        if (xp_sched_evaluate(sched, pod, names, n, XP_SCHED_EVALUATE_SCORE, &summed, &err) < 0) {
                /* a request the core refuses is refused either way */
                assert_int_equal(xp_sched_evaluate(sched,
                                                   pod,
                                                   names,
                                                   n,
                                                   XP_SCHED_EVALUATE_SCORE | XP_SCHED_EVALUATE_FULL,
                                                   &full,
                                                   &err),
                                 -EINVAL);
                xp_pod_free(pod);
                return;
        }
        assert_int_equal(xp_sched_evaluate(sched,
                                           pod,
                                           names,
                                           n,
                                           XP_SCHED_EVALUATE_SCORE | XP_SCHED_EVALUATE_FULL,
                                           &full,
                                           &err),
                         0);
        same_verdicts(&summed, &full);
        xp_sched_verdicts_done(&summed);
        xp_sched_verdicts_done(&full);
        xp_pod_free(pod);
}

/* Between rounds: pods bound and removed, nodes changed and removed, so the summaries must follow
 * every kind of change. */
static void churn(struct xp_sched *sched, char names[][16], int round)
{
        struct xp_error err = {0};

        for (int k = 0; k < 30; k++) {
                char name[32];
                struct xp_pod *pod;
                snprintf(name, sizeof(name), "bound-%d-%d", round, k);
                pod = random_pod(name, names[pick(NODES)]);
                (void)xp_sched_pod_add(sched, pod, &err); /* overcommitting is the kubelet's word */
                xp_pod_free(pod);
        }
        for (int k = 0; k < 8; k++) {
                char name[32];
                snprintf(name,
                         sizeof(name),
                         "bound-%d-%d",
                         (int)pick((unsigned)round + 1),
                         (int)pick(30));
                (void)xp_sched_pod_remove(sched, "default", name);
        }
        for (int k = 0; k < 4; k++)
                set_node(sched, names[pick(NODES)]);
        (void)xp_sched_node_remove(sched, names[pick(NODES)]);
}

static void summaries_answer_as_the_filters(void **state)
{
        (void)state;
        for (uint64_t seed = 1; seed <= 4; seed++) {
                struct xp_sched_options o = {.seed = seed};
                struct xp_sched *sched = NULL;
                struct xp_sched_stats stats;
                char names[NODES][16];
                const char *list[NODES + 1];

                rng_state = 0x9E3779B97F4A7C15ULL * seed;
                assert_int_equal(xp_sched_new(&o, &sched), 0);
                for (int i = 0; i < NODES; i++) {
                        snprintf(names[i], sizeof(names[i]), "n%d", i);
                        list[i] = names[i];
                        set_node(sched, names[i]);
                }
                list[NODES] = "unknown";
                for (int round = 0; round < ROUNDS; round++) {
                        for (int k = 0; k < ASKS; k++)
                                ask(sched, list, NODES + 1, round * ASKS + k);
                        churn(sched, names, round);
                }
                xp_sched_stats(sched, &stats);
                /* half the checks are the full filters' own; of the others, a fair part (a quarter
                 * with these odds) must be the summaries', or nothing was compared */
                assert_true(stats.nodes_summed > stats.nodes_filtered / 10);
                xp_sched_free(sched);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(summaries_answer_as_the_filters),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
