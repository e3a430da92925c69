/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The headroom (src/sched/headroom.c) against the fit filter (src/sched/filters.c, and the fit
 * summaries of src/sched/fitsum.c): hand-made nodes and pods, each pod asked of the node by the
 * filters (with and without the summaries) and by a fresh headroom. For every rule the headroom
 * checks (cpu, memory, a pod's place, extended resources, whole devices, shares of a device, a
 * resource no node has) all three give the same verdict, and the verdict expected; taken pod by
 * pod, the headroom refuses the pod the filter refuses once the ones before are bound. For the
 * rules it does not check (taints, selectors, cordons, readiness, hostPorts) the filter refuses
 * and the headroom lets the pod through: a necessary condition only.
 */
#include <errno.h>
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

/* cpu 4, memory 8Gi, 5 pods, example.com/foo 2, two GPUs of 16Gi */
#define NODE_PLAIN                                                                                 \
        "{\"metadata\":{\"name\":\"n\",\"labels\":{\"zone\":\"a\"}},\"spec\":{%s},"                \
        "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"5\","            \
        "\"example.com/foo\":\"2\",\"nvidia.com/gpu\":\"2\"},"                                     \
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}],"                                 \
        "\"xpool\":{\"devices\":[" GPU(0) "," GPU(1) "]}}}"
#define GPU(i)                                                                                     \
        "{\"id\":\"gpu-" #i "\",\"kind\":\"gpu\",\"vendor\":\"NVIDIA\","                           \
        "\"resourceName\":\"nvidia.com/gpu\",\"index\":" #i ",\"memoryBytes\":17179869184,"        \
        "\"health\":\"Healthy\"}"

/* A pod asking limits; spec_extra ("field":value,) goes in its spec, extra (,"field":value) in
 * its container. */
static struct xp_pod *make_pod(const char *name,
                               const char *node,
                               const char *limits,
                               const char *spec_extra,
                               const char *extra)
{
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        char *text;

        assert_true(asprintf(&text,
                             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
                             "\"spec\":{%s%s%s%s\"containers\":[{\"name\":\"c\",\"image\":\"i\","
                             "\"resources\":{\"limits\":{%s}}%s}]}}",
                             name,
                             node ? "\"nodeName\":\"" : "",
                             node ? node : "",
                             node ? "\"," : "",
                             spec_extra ? spec_extra : "",
                             limits,
                             extra ? extra : "") >= 0);
        if (xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0)
                fail_msg("pod: %s in %s", err.msg, text);
        free(text);
        return pod;
}

/* Puts a pod with limits (and extra in its container) on node n. */
static void bind(struct xp_sched *sched, const char *name, const char *limits, const char *extra)
{
        struct xp_pod *pod = make_pod(name, "n", limits, NULL, extra);
        struct xp_error err = {0};

        if (xp_sched_pod_add(sched, pod, &err) < 0)
                fail_msg("pod_add %s: %s", name, err.msg);
        xp_pod_free(pod);
}

/* A snapshot of node n (NODE_PLAIN with spec and readiness), its pods holding 1 cpu and half a
 * GPU: free are 3 cpu, 8Gi, 3 pods, 2 foo, 1 whole GPU and a whole GPU's share. */
static struct xp_sched *snapshot(const char *spec, const char *ready)
{
        struct xp_sched_options o = {.seed = 1};
        struct xp_sched *sched = NULL;
        struct xp_node *node = NULL;
        struct xp_error err = {0};
        char *text;

        assert_int_equal(xp_sched_new(&o, &sched), 0);
        assert_true(asprintf(&text, NODE_PLAIN, spec, ready) >= 0);
        if (xp_node_from_json_text(text, strlen(text), "node", XP_DECODE_TRUSTED, &node, &err) < 0)
                fail_msg("node: %s in %s", err.msg, text);
        if (xp_sched_node_set(sched, node, &err) < 0)
                fail_msg("node_set: %s", err.msg);
        xp_node_free(node);
        free(text);
        bind(sched, "one-cpu", "\"cpu\":\"1\"", NULL);
        bind(sched, "half-gpu", "\"nvidia.com/gpu\":\"500m\"", NULL);
        return sched;
}

/* The filters' verdict on node n, with the summaries (summed) or without. */
static int filter_fits(struct xp_sched *sched, const struct xp_pod *pod, bool summed)
{
        const char *const names[] = {"n"};
        struct xp_sched_verdicts v;
        struct xp_error err = {0};
        int fit;

        if (xp_sched_evaluate(sched, pod, names, 1, summed ? 0 : XP_SCHED_EVALUATE_FULL, &v, &err) <
            0)
                fail_msg("evaluate: %s", err.msg);
        assert_int_equal(v.n, 1);
        fit = v.items[0].fit;
        xp_sched_verdicts_done(&v);
        return fit;
}

static int headroom_takes(struct xp_sched_headroom *h, const struct xp_pod *pod)
{
        struct xp_error err = {0};
        int r = xp_sched_headroom_take(h, pod, NULL, &err);

        if (r < 0)
                fail_msg("headroom: %s", err.msg);
        return r;
}

/* The three verdicts on a pod asking limits (extra in its container) of a fresh snapshot. */
static void verdicts(const char *spec,
                     const char *ready,
                     const char *limits,
                     const char *spec_extra,
                     const char *extra,
                     int *ret_full,
                     int *ret_summed,
                     int *ret_headroom)
{
        struct xp_sched *sched = snapshot(spec, ready);
        struct xp_pod *pod = make_pod("asked", NULL, limits, spec_extra, extra);
        struct xp_sched_headroom *h = NULL;

        if (extra) /* a pod of the node holds what the asked one's container asks (its port) */
                bind(sched, "holder", "\"cpu\":\"1m\"", extra);
        *ret_full = filter_fits(sched, pod, false);
        *ret_summed = filter_fits(sched, pod, true);
        assert_int_equal(xp_sched_headroom_new(sched, &h), 0);
        *ret_headroom = headroom_takes(h, pod);
        xp_sched_headroom_free(h);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

struct counted_case {
        const char *limits;
        int fits;
};

static void same_verdict_on_every_counted_rule(void **state)
{
        static const struct counted_case cases[] = {
            {"\"cpu\":\"3\"", 1},
            {"\"cpu\":\"3500m\"", 0},
            {"\"memory\":\"8Gi\"", 1},
            {"\"memory\":\"9Gi\"", 0},
            {"\"example.com/foo\":\"2\"", 1},
            {"\"example.com/foo\":\"3\"", 0},
            {"\"example.com/bar\":\"1\"", 0}, /* no node has any */
            {"\"nvidia.com/gpu\":\"1\"", 1},
            {"\"nvidia.com/gpu\":\"2\"", 0}, /* one GPU is half used */
            {"\"nvidia.com/gpu\":\"1500m\"", 1},
            {"\"nvidia.com/gpu\":\"500m\"", 1},
            {"\"nvidia.com/gpu\":\"1001m\"", 1},
            {"\"cpu\":\"1\",\"nvidia.com/gpu\":\"2\"", 0},
            {"\"cpu\":\"3\",\"memory\":\"8Gi\",\"example.com/foo\":\"2\",\"nvidia.com/gpu\":\"1\"",
             1},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int full, summed, headroom;

                verdicts("", "True", cases[i].limits, NULL, NULL, &full, &summed, &headroom);
                if (full != cases[i].fits || summed != full || headroom != full)
                        fail_msg("%s: filter %d, summaries %d, headroom %d, expected %d",
                                 cases[i].limits,
                                 full,
                                 summed,
                                 headroom,
                                 cases[i].fits);
        }
}

/* A node whose pods take all its places refuses one more pod, whatever it asks. */
static void same_verdict_on_a_full_node(void **state)
{
        struct xp_sched *sched = snapshot("", "True");
        struct xp_pod *pod = make_pod("asked", NULL, "\"cpu\":\"1m\"", NULL, NULL);
        struct xp_sched_headroom *h = NULL;
        int bound = 0;

        (void)state;
        while (bound < 10 && filter_fits(sched, pod, false)) {
                char name[16];

                snprintf(name, sizeof(name), "filler-%d", bound++);
                bind(sched, name, "\"cpu\":\"1m\"", NULL);
        }
        assert_int_equal(bound, 3);
        assert_int_equal(filter_fits(sched, pod, true), 0);
        assert_int_equal(xp_sched_headroom_new(sched, &h), 0);
        assert_int_equal(headroom_takes(h, pod), 0);
        xp_sched_headroom_free(h);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* Pod after pod: what the headroom takes is what binding the pod takes, so the pod that no longer
 * fits is the same for both. */
static void taking_follows_binding(void **state)
{
        static const char *const series[][3] = {
            {"\"cpu\":\"2\"", "\"cpu\":\"1\"", "\"cpu\":\"1\""},
            {"\"example.com/foo\":\"1\"", "\"example.com/foo\":\"1\"", "\"example.com/foo\":\"1\""},
            {"\"nvidia.com/gpu\":\"1\"", "\"nvidia.com/gpu\":\"1\"", "\"cpu\":\"1\""},
            {"\"memory\":\"5Gi\"", "\"memory\":\"3Gi\"", "\"memory\":\"1\""},
        };

        (void)state;
        for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
                struct xp_sched *sched = snapshot("", "True");
                struct xp_sched_headroom *h = NULL;
                int refused = 0;

                assert_int_equal(xp_sched_headroom_new(sched, &h), 0);
                for (size_t k = 0; k < 3; k++) {
                        char name[16];
                        struct xp_pod *pod = make_pod("asked", NULL, series[s][k], NULL, NULL);
                        int fit = filter_fits(sched, pod, false), took = headroom_takes(h, pod);

                        if (fit != took)
                                fail_msg(
                                    "series %zu pod %zu: filter %d, headroom %d", s, k, fit, took);
                        refused += !fit;
                        snprintf(name, sizeof(name), "bound-%zu", k);
                        if (fit)
                                bind(sched, name, series[s][k], NULL);
                        xp_pod_free(pod);
                }
                assert_int_equal(refused, 1); /* each series runs out of something once */
                xp_sched_headroom_free(h);
                xp_sched_free(sched);
        }
}

struct unchecked_case {
        const char *rule, *spec, *ready, *pod_spec, *container;
};

static void what_it_does_not_check_it_lets_through(void **state)
{
        static const struct unchecked_case cases[] = {
            {"taint",
             "\"taints\":[{\"key\":\"dedicated\",\"value\":\"x\",\"effect\":\"NoSchedule\"}]",
             "True",
             NULL,
             NULL},
            {"cordon", "\"unschedulable\":true", "True", NULL, NULL},
            {"readiness", "", "False", NULL, NULL},
            {"node selector", "", "True", "\"nodeSelector\":{\"zone\":\"b\"},", NULL},
            {"hostPort", "", "True", NULL, ",\"ports\":[{\"containerPort\":80,\"hostPort\":80}]"},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct unchecked_case *c = &cases[i];
                int full, summed, headroom;

                verdicts(c->spec,
                         c->ready,
                         "\"cpu\":\"1\"",
                         c->pod_spec,
                         c->container,
                         &full,
                         &summed,
                         &headroom);
                if (full != 0 || summed != 0 || headroom != 1)
                        fail_msg("%s: filter %d, summaries %d, headroom %d",
                                 c->rule,
                                 full,
                                 summed,
                                 headroom);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(same_verdict_on_every_counted_rule),
            cmocka_unit_test(same_verdict_on_a_full_node),
            cmocka_unit_test(taking_follows_binding),
            cmocka_unit_test(what_it_does_not_check_it_lets_through),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
