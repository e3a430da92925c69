/* SPDX-License-Identifier: Apache-2.0 */
/* Gangs in the scheduler core on hand-made clusters: all or nothing, rollback, topology. */
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
#include "xpool/gang.h"
#include "xpool/sched.h"
#include "xpool/why.h"

/* A node with gpus whole NVIDIA GPUs (no links) and the labels of a "k=v,k=v" list. */
static void gpu_node(struct xp_sched *sched, const char *name, int gpus, const char *labels)
{
        json_t *json =
            json_pack("{s:{s:s, s:{}}, s:{s:{s:s, s:s, s:s, s:o}, s:[{s:s, s:s}], s:{s:[]}}}",
                      "metadata",
                      "name",
                      name,
                      "labels",
                      "status",
                      "allocatable",
                      "cpu",
                      "64",
                      "memory",
                      "512Gi",
                      "pods",
                      "110",
                      "nvidia.com/gpu",
                      json_sprintf("%d", gpus),
                      "conditions",
                      "type",
                      "Ready",
                      "status",
                      "True",
                      "xpool",
                      "devices");
        json_t *lab = json_object_get(json_object_get(json, "metadata"), "labels");
        json_t *devs =
            json_object_get(json_object_get(json_object_get(json, "status"), "xpool"), "devices");
        struct xp_node *node = NULL;
        struct xp_error err = {0};
        char buf[256];

        assert_non_null(json);
        snprintf(buf, sizeof(buf), "%s", labels ? labels : "");
        for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv;
             kv = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '=');
                *eq = '\0';
                json_object_set_new(lab, kv, json_string(eq + 1));
        }
        for (int i = 0; i < gpus; i++)
                json_array_append_new(devs,
                                      json_pack("{s:o, s:s, s:s, s:s, s:i, s:I}",
                                                "id",
                                                json_sprintf("%s-gpu-%d", name, i),
                                                "kind",
                                                "gpu",
                                                "vendor",
                                                "NVIDIA",
                                                "resourceName",
                                                "nvidia.com/gpu",
                                                "index",
                                                i,
                                                "memoryBytes",
                                                (json_int_t)(80LL << 30)));
        if (xp_node_from_json(json, NULL, XP_DECODE_TRUSTED, &node, &err) < 0)
                fail_msg("node: %s", err.msg);
        if (xp_sched_node_set(sched, node, &err) < 0)
                fail_msg("node_set: %s", err.msg);
        xp_node_free(node);
        json_decref(json);
}

static struct xp_pod *gpu_pod(const char *name, int gpus)
{
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        char *text;

        assert_true(asprintf(&text,
                             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
                             "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\","
                             "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]}}",
                             name,
                             gpus) >= 0);
        if (xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0)
                fail_msg("pod: %s", err.msg);
        free(text);
        return pod;
}

struct gang {
        struct xp_pod *pods[64];
        size_t n;
};

static void gang_make(struct gang *g, const char *prefix, size_t n, int gpus)
{
        char name[64];

        g->n = n;
        for (size_t i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "%s-%zu", prefix, i);
                g->pods[i] = gpu_pod(name, gpus);
        }
}

static void gang_free(struct gang *g)
{
        for (size_t i = 0; i < g->n; i++)
                xp_pod_free(g->pods[i]);
}

static struct xp_sched *new_sched(void)
{
        struct xp_sched_options o = {.profile = XP_SCHED_SPREAD, .seed = 1};
        struct xp_sched *sched = NULL;

        assert_int_equal(xp_sched_new(&o, &sched), 0);
        return sched;
}

static int place_gang(struct xp_sched *sched,
                      struct gang *g,
                      const struct xp_gang_options *o,
                      struct xp_gang_result *res,
                      char **reason)
{
        struct xp_error err = {0};
        int r = xp_sched_gang_place(
            sched, (const struct xp_pod *const *)g->pods, g->n, o, res, reason, &err);

        if (r < 0)
                fail_msg("gang: %s", err.msg);
        return r;
}

/* The probe's verdict on every node, as one string: what the snapshot holds, seen from outside. */
static char *probe(struct xp_sched *sched, const char *const *names, size_t n)
{
        struct xp_pod *pod = gpu_pod("probe", 1);
        struct xp_sched_verdicts v = {0};
        struct xp_error err = {0};
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        assert_int_equal(xp_sched_evaluate(sched, pod, names, n, XP_SCHED_EVALUATE_SCORE, &v, &err),
                         0);
        for (size_t i = 0; i < n; i++)
                fprintf(f,
                        "%s:%d:%lld:%s;",
                        names[i],
                        v.items[i].fit,
                        (long long)v.items[i].score,
                        v.items[i].reason ? v.items[i].reason : "");
        fclose(f);
        xp_sched_verdicts_done(&v);
        xp_pod_free(pod);
        return out;
}

/* The case: 4 members of 8 GPUs, 3 free 8-GPU nodes: none is placed. */
static void four_by_eight_on_three_nodes_places_none(void **state)
{
        struct xp_sched *sched = new_sched();
        struct xp_gang_result res = {0};
        struct xp_sched_stats st;
        struct gang g;
        char *reason = NULL;

        (void)state;
        gpu_node(sched, "n1", 8, NULL);
        gpu_node(sched, "n2", 8, NULL);
        gpu_node(sched, "n3", 8, NULL);
        gang_make(&g, "w", 4, 8);
        assert_int_equal(place_gang(sched, &g, NULL, &res, &reason), 0);
        assert_string_equal(reason, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
        assert_int_equal(res.failed, 3);
        assert_null(res.placements);
        xp_sched_stats(sched, &st);
        assert_int_equal(st.pods, 0);
        free(reason);
        /* three of them do fit, whole */
        g.n = 3;
        assert_int_equal(place_gang(sched, &g, NULL, &res, NULL), 1);
        assert_int_equal(res.n, 3);
        for (size_t i = 0; i < 3; i++) {
                assert_int_equal(res.placements[i].devices.n, 8);
                for (size_t k = 0; k < i; k++)
                        assert_string_not_equal(res.placements[i].node, res.placements[k].node);
        }
        xp_gang_result_done(&res);
        g.n = 4;
        gang_free(&g);
        xp_sched_free(sched);
}

/* A failed gang leaves every node as it was; a committed one holds its devices. */
static void rollback_leaves_snapshot_unchanged(void **state)
{
        static const char *const names[] = {"n1", "n2", "n3"};
        struct xp_gang_options o = {.commit = true};
        struct xp_sched *sched = new_sched();
        struct xp_gang_result res = {0};
        struct xp_sched_stats st;
        struct gang small, big;
        char *before, *after, *reason = NULL;

        (void)state;
        gpu_node(sched, "n1", 8, NULL);
        gpu_node(sched, "n2", 8, NULL);
        gpu_node(sched, "n3", 4, NULL);
        gang_make(&small, "s", 2, 4);
        assert_int_equal(place_gang(sched, &small, &o, &res, NULL), 1);
        xp_gang_result_done(&res);
        xp_sched_stats(sched, &st);
        assert_int_equal(st.pods, 2);
        before = probe(sched, names, 3);
        /* 6 members of 3 GPUs: 12 GPUs free as 4+4+4 (or 4+8) hold three of them */
        gang_make(&big, "b", 6, 3);
        assert_int_equal(place_gang(sched, &big, &o, &res, &reason), 0);
        assert_int_equal(res.failed, 3);
        assert_string_equal(reason, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
        after = probe(sched, names, 3);
        assert_string_equal(before, after);
        xp_sched_stats(sched, &st);
        assert_int_equal(st.pods, 2);
        /* a member already placed is refused */
        {
                struct xp_error err = {0};
                assert_int_equal(xp_sched_gang_place(sched,
                                                     (const struct xp_pod *const *)small.pods,
                                                     1,
                                                     &o,
                                                     &res,
                                                     &reason,
                                                     &err),
                                 -EINVAL);
                assert_string_equal(err.msg, "gang member default/s-0: already placed");
        }
        free(reason);
        free(before);
        free(after);
        gang_free(&small);
        gang_free(&big);
        xp_sched_free(sched);
}

static const char *zone_of(const char *node)
{
        return node[0] == 'a' ? "a" : node[0] == 'b' ? "b" : "c";
}

/* Members land in as few domains as the labels allow: the smallest domain that holds the whole
 * gang, an NVLink clique before a zone, and the fullest zones first when none holds it. */
static void topology_packing(void **state)
{
        struct xp_sched *sched = new_sched();
        struct xp_gang_options o;
        struct xp_gang_result res = {0};
        struct gang g;

        (void)state;
        xp_gang_options_default(&o);
        o.commit = true;
        /* zone a: 2 nodes; zone b: 4 nodes, two cliques of 2; c: 3 nodes */
        gpu_node(sched, "a1", 8, "topology.kubernetes.io/zone=a");
        gpu_node(sched, "b1", 8, "topology.kubernetes.io/zone=b,nvidia.com/gpu.clique=b-x");
        gpu_node(sched, "c1", 8, "topology.kubernetes.io/zone=c");
        gpu_node(sched, "b2", 8, "topology.kubernetes.io/zone=b,nvidia.com/gpu.clique=b-y");
        gpu_node(sched, "a2", 8, "topology.kubernetes.io/zone=a");
        gpu_node(sched, "b3", 8, "topology.kubernetes.io/zone=b,nvidia.com/gpu.clique=b-x");
        gpu_node(sched, "c2", 8, "topology.kubernetes.io/zone=c");
        gpu_node(sched, "b4", 8, "topology.kubernetes.io/zone=b,nvidia.com/gpu.clique=b-y");
        gpu_node(sched, "c3", 8, "topology.kubernetes.io/zone=c");

        /* 2 x 8: one clique holds it (b-x, the first of the equal smallest) */
        gang_make(&g, "p", 2, 8);
        assert_int_equal(place_gang(sched, &g, &o, &res, NULL), 1);
        assert_string_equal(res.key, "nvidia.com/gpu.clique");
        assert_int_equal(res.domains, 1);
        assert_string_equal(res.placements[0].node[0] == 'b' ? "b" : "", "b");
        for (size_t i = 0; i < 2; i++)
                assert_true(strcmp(res.placements[i].node, "b1") == 0 ||
                            strcmp(res.placements[i].node, "b3") == 0);
        xp_gang_result_done(&res);
        gang_free(&g);

        /* 3 x 8: no clique has room; zones a (2) no, b (2 left) no, c (3) yes */
        gang_make(&g, "q", 3, 8);
        assert_int_equal(place_gang(sched, &g, &o, &res, NULL), 1);
        assert_string_equal(res.key, "topology.kubernetes.io/zone");
        assert_int_equal(res.domains, 1);
        for (size_t i = 0; i < 3; i++)
                assert_string_equal(zone_of(res.placements[i].node), "c");
        xp_gang_result_done(&res);
        gang_free(&g);

        /* 4 x 8: 2 free in a, 2 in b: no zone holds it, so two zones and never three */
        gang_make(&g, "r", 4, 8);
        assert_int_equal(place_gang(sched, &g, &o, &res, NULL), 1);
        assert_string_equal(res.key, "topology.kubernetes.io/zone");
        assert_int_equal(res.domains, 2);
        xp_gang_result_done(&res);
        gang_free(&g);
        xp_sched_free(sched);
}

/* Filling domains: the one with most room first, members kept together. */
static void spread_fills_fullest_first(void **state)
{
        struct xp_sched *sched = new_sched();
        struct xp_gang_options o;
        struct xp_gang_result res = {0};
        struct gang g;
        size_t in_b = 0;

        (void)state;
        xp_gang_options_default(&o);
        gpu_node(sched, "a1", 8, "topology.kubernetes.io/zone=a");
        gpu_node(sched, "b1", 8, "topology.kubernetes.io/zone=b");
        gpu_node(sched, "b2", 8, "topology.kubernetes.io/zone=b");
        gpu_node(sched, "b3", 8, "topology.kubernetes.io/zone=b");
        gpu_node(sched, "c1", 8, "topology.kubernetes.io/zone=c");
        gang_make(&g, "m", 4, 8);
        assert_int_equal(place_gang(sched, &g, &o, &res, NULL), 1);
        assert_int_equal(res.domains, 2);
        for (size_t i = 0; i < 4; i++)
                in_b += strcmp(zone_of(res.placements[i].node), "b") == 0;
        assert_int_equal(in_b, 3);
        xp_gang_result_done(&res);
        gang_free(&g);
        xp_sched_free(sched);
}

static void options_parse(void **state)
{
        struct xp_gang_options o;
        struct xp_error err = {0};

        (void)state;
        xp_gang_options_default(&o);
        assert_int_equal(o.n_topology_keys, 2);
        assert_string_equal(o.topology_keys[0], "nvidia.com/gpu.clique");
        assert_int_equal(xp_gang_options_set_keys(&o, "rack", &err), 0);
        assert_int_equal(o.n_topology_keys, 1);
        assert_int_equal(xp_gang_options_set_keys(&o, "a,,b", &err), -EINVAL);
        assert_string_equal(err.msg, "topology keys 'a,,b': an empty or too long key");
        assert_int_equal(o.n_topology_keys, 1); /* unchanged */
        assert_int_equal(xp_gang_options_set_keys(&o, "a,b,c,d,e", &err), -EINVAL);
        assert_int_equal(xp_gang_options_set_keys(&o, "", &err), 0);
        assert_int_equal(o.n_topology_keys, 0);
}

/* Why pending: the nodes by what blocks the pod, and what would unblock it. */
static void why_by_node_class(void **state)
{
        struct xp_gang_options o = {.commit = true};
        struct xp_sched *sched = new_sched();
        struct xp_gang_result res = {0};
        struct xp_error err = {0};
        struct xp_pod *pod = gpu_pod("train", 4);
        struct gang busy;
        char *text = NULL;

        (void)state;
        gpu_node(sched, "n1", 2, NULL);
        gpu_node(sched, "n2", 2, NULL);
        gpu_node(sched, "n3", 2, NULL);
        gpu_node(sched, "small", 2, "x=y");
        /* the last one has 1 of its 2 GPUs taken */
        gang_make(&busy, "busy", 1, 1);
        assert_int_equal(xp_strmap_set(&busy.pods[0]->spec.node_selector, "x", "y"), 0);
        assert_int_equal(place_gang(sched, &busy, &o, &res, NULL), 1);
        assert_string_equal(res.placements[0].node, "small");
        xp_gang_result_done(&res);
        assert_int_equal(xp_sched_why(sched, pod, &text, &err), 0);
        assert_string_equal(text,
                            "4 nodes (n1, n2, n3 and 1 more): Insufficient nvidia.com/gpu\n"
                            "to unblock: needs 4 nvidia.com/gpu on one node; the most free on one "
                            "node is 2, on 3 nodes\n");
        free(text);
        xp_pod_free(pod);
        /* a pod that fits is said to */
        pod = gpu_pod("one", 1);
        assert_int_equal(xp_sched_why(sched, pod, &text, &err), 0);
        assert_string_equal(
            text, "4 nodes (n1, n2, n3 and 1 more): fit now; the pod waits for its next attempt\n");
        free(text);
        xp_pod_free(pod);
        gang_free(&busy);
        xp_sched_free(sched);
}

/* A class names its alphabetically first nodes, sorted, whatever order the nodes came in. */
static void why_names_nodes_in_order(void **state)
{
        struct xp_sched *sched = new_sched();
        struct xp_error err = {0};
        struct xp_pod *pod = gpu_pod("train", 4);
        char *text = NULL;

        (void)state;
        gpu_node(sched, "n4", 2, NULL);
        gpu_node(sched, "n2", 2, NULL);
        gpu_node(sched, "n3", 2, NULL);
        gpu_node(sched, "n1", 2, NULL);
        assert_int_equal(xp_sched_why(sched, pod, &text, &err), 0);
        assert_string_equal(text,
                            "4 nodes (n1, n2, n3 and 1 more): Insufficient nvidia.com/gpu\n"
                            "to unblock: needs 4 nvidia.com/gpu on one node; the most free on one "
                            "node is 2, on 4 nodes\n");
        free(text);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(four_by_eight_on_three_nodes_places_none),
            cmocka_unit_test(rollback_leaves_snapshot_unchanged),
            cmocka_unit_test(topology_packing),
            cmocka_unit_test(spread_fills_fullest_first),
            cmocka_unit_test(options_parse),
            cmocka_unit_test(why_by_node_class),
            cmocka_unit_test(why_names_nodes_in_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
