/* SPDX-License-Identifier: Apache-2.0 */
/* The core's sampling of nodes for pods that ask no device (kube-scheduler's
 * percentageOfNodesToScore): its counts, its rotating start and its determinism. */
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

static void add_node(struct xp_sched *sched, int i)
{
        struct xp_node *node = NULL;
        struct xp_error err = {0};
        char *text;

        assert_true(
            asprintf(
                &text,
                "{\"metadata\":{\"name\":\"n%03d\"},\"status\":{\"allocatable\":{\"cpu\":\"64\","
                "\"memory\":\"256Gi\",\"pods\":\"110\",\"ephemeral-storage\":\"1Ti\","
                "\"example.com/dev\":\"8\"},"
                "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                i) >= 0);
        if (xp_node_from_json_text(text, strlen(text), "node", XP_DECODE_TRUSTED, &node, &err) < 0)
                fail_msg("node: %s", err.msg);
        if (xp_sched_node_set(sched, node, &err) < 0)
                fail_msg("node_set: %s", err.msg);
        xp_node_free(node);
        free(text);
}

/* Pod i asking limits (a JSON object's members). */
static struct xp_pod *new_pod(int i, const char *limits)
{
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        char *text;

        assert_true(asprintf(&text,
                             "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"default\"},\"spec\":{"
                             "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{"
                             "\"limits\":{%s}}}]}}",
                             i,
                             limits) >= 0);
        if (xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0)
                fail_msg("pod: %s", err.msg);
        free(text);
        return pod;
}

static struct xp_sched *new_cluster(unsigned percentage, size_t nodes)
{
        struct xp_sched_options o = {.profile = XP_SCHED_SPREAD,
                                     .seed = 3,
                                     .sample_plain_pods = true,
                                     .percentage_of_nodes_to_score = percentage};
        struct xp_sched *sched = NULL;

        assert_int_equal(xp_sched_new(&o, &sched), 0);
        for (size_t i = 0; i < nodes; i++)
                add_node(sched, (int)i);
        return sched;
}

/* Places and binds pod i; returns the node's number and how many nodes the placement filtered. */
static int place(struct xp_sched *sched, int i, const char *limits, uint64_t *ret_filtered)
{
        struct xp_pod *pod = new_pod(i, limits);
        struct xp_placement pl = {0};
        struct xp_sched_stats before, after;
        struct xp_error err = {0};
        char *why = NULL;
        int node;

        xp_sched_stats(sched, &before);
        if (xp_sched_place(sched, pod, &pl, &why, &err) != 1)
                fail_msg("place p%d: %s %s", i, err.msg, why ? why : "");
        xp_sched_stats(sched, &after);
        *ret_filtered = after.nodes_filtered - before.nodes_filtered;
        assert_int_equal(sscanf(pl.node, "n%d", &node), 1);
        assert_int_equal(xp_sched_pod_assume(sched, pod, &pl, &err), 0);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        return node;
}

static void counts_as_kube_scheduler(void **state)
{
        (void)state;
        /* under 100 nodes, or 100 %: every node */
        assert_int_equal(xp_sched_nodes_to_score(0, 0), 0);
        assert_int_equal(xp_sched_nodes_to_score(99, 0), 99);
        assert_int_equal(xp_sched_nodes_to_score(99, 10), 99);
        assert_int_equal(xp_sched_nodes_to_score(5000, 100), 5000);
        /* adaptive: 50 % less one per 125 nodes, at least 5 %, at least 100 nodes */
        assert_int_equal(xp_sched_nodes_to_score(150, 0), 100);
        assert_int_equal(xp_sched_nodes_to_score(1000, 0), 420);
        assert_int_equal(xp_sched_nodes_to_score(5000, 0), 500);
        assert_int_equal(xp_sched_nodes_to_score(6000, 0), 300);
        assert_int_equal(xp_sched_nodes_to_score(100000, 0), 5000);
        /* a set percentage, at least 100 nodes */
        assert_int_equal(xp_sched_nodes_to_score(5000, 30), 1500);
        assert_int_equal(xp_sched_nodes_to_score(500, 1), 100);
}

/* 200 equal nodes, half of them per plain pod: the start moves on, so spread places the 200 pods
 * one per node. Starting every pod at the first node would leave the second half empty. */
static void rotating_start_is_fair(void **state)
{
        struct xp_sched *sched = new_cluster(50, 200);
        int count[200] = {0};
        uint64_t filtered;

        (void)state;
        for (int i = 0; i < 200; i++) {
                count[place(sched, i, "\"cpu\":\"1\",\"memory\":\"1Gi\"", &filtered)]++;
                assert_int_equal(filtered, 100);
        }
        for (int n = 0; n < 200; n++)
                assert_int_equal(count[n], 1);
        xp_sched_free(sched);
}

/* A pod asking a device (an extended resource) is filtered on every node, sampled or not. */
static void device_pods_see_every_node(void **state)
{
        struct xp_sched *sched = new_cluster(0, 300);
        uint64_t filtered;

        (void)state;
        (void)place(sched, 0, "\"cpu\":\"1\",\"example.com/dev\":\"1\"", &filtered);
        assert_int_equal(filtered, 300);
        (void)place(sched, 1, "\"cpu\":\"1\",\"ephemeral-storage\":\"1Gi\"", &filtered);
        assert_int_equal(filtered, xp_sched_nodes_to_score(300, 0));
        xp_sched_free(sched);
}

/* Two schedulers given the same nodes and pods place them alike, sampling or not. */
static void deterministic(void **state)
{
        for (unsigned pct = 0; pct <= 100; pct += 20) {
                struct xp_sched *a = new_cluster(pct, 250), *b = new_cluster(pct, 250);
                uint64_t fa, fb;

                (void)state;
                for (int i = 0; i < 300; i++) {
                        const char *limits = i % 7 == 3 ? "\"cpu\":\"2\",\"example.com/dev\":\"1\""
                                                        : "\"cpu\":\"500m\",\"memory\":\"1Gi\"";
                        assert_int_equal(place(a, i, limits, &fa), place(b, i, limits, &fb));
                        assert_int_equal(fa, fb);
                }
                xp_sched_free(a);
                xp_sched_free(b);
        }
}

/* Too few fit in the sample: the scan goes on around every node, and a pod no node fits is
 * told about all of them. */
static void scan_goes_on_until_enough_fit(void **state)
{
        struct xp_sched *sched = new_cluster(10, 200);
        struct xp_pod *big = new_pod(1000, "\"cpu\":\"1000\"");
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        char *why = NULL;
        uint64_t filtered;

        (void)state;
        /* fill 150 of the 200 nodes: 100 fit of the 200 a 10 % sample needs checked */
        for (int i = 0; i < 150; i++)
                (void)place(sched, i, "\"cpu\":\"64\"", &filtered);
        (void)place(sched, 500, "\"cpu\":\"1\"", &filtered);
        assert_int_equal(filtered, 200);
        assert_int_equal(xp_sched_place(sched, big, &pl, &why, &err), 0);
        assert_non_null(why);
        assert_non_null(strstr(why, "0/200 nodes are available"));
        free(why);
        xp_pod_free(big);
        xp_sched_free(sched);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(counts_as_kube_scheduler),
            cmocka_unit_test(rotating_start_is_fair),
            cmocka_unit_test(device_pods_see_every_node),
            cmocka_unit_test(deterministic),
            cmocka_unit_test(scan_goes_on_until_enough_fit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
