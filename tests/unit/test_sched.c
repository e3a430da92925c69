/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler core on small fake clusters: exact nodes, devices, CPUs and reasons. */
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

/* ---- fake cluster builders ---------------------------------------------------------------- */

/* The link level between GPUs a and b of a box, with its NVLink count. */
typedef int (*topology_fn)(int a, int b, int *nvlinks);

static int topo_pairs(int a, int b, int *nvlinks)
{
        /* NVLink only within the pairs {0,5} {1,4} {2,7} {3,6}: first-fit would pick 0,1 */
        static const int mate[] = {5, 4, 7, 6, 1, 0, 3, 2};
        *nvlinks = 4;
        return mate[a] == b ? 1 : 6;
}

static int topo_islands(int a, int b, int *nvlinks)
{
        /* two NVLink islands, even and odd GPUs */
        *nvlinks = 12;
        return a % 2 == b % 2 ? 1 : 6;
}

static int topo_full(int a, int b, int *nvlinks)
{
        (void)a;
        (void)b;
        *nvlinks = 12;
        return 1;
}

static const char *const levels[] = {"", "NVLink", "PIX", "PXB", "PHB", "NODE", "SYS"};

struct gpu_spec {
        const char *resource;
        const char *kind;
        const char *vendor;
        int n;
        long long memory;
        double tflops;
        topology_fn topo;
};

static json_t *node_json(const char *name, const char *cpu, const struct gpu_spec *gpus)
{
        json_t *node = json_pack("{s:{s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s}, s:[{s:s, s:s}]}}",
                                 "metadata",
                                 "name",
                                 name,
                                 "labels",
                                 "kubernetes.io/hostname",
                                 name,
                                 "status",
                                 "allocatable",
                                 "cpu",
                                 cpu,
                                 "memory",
                                 "256Gi",
                                 "pods",
                                 "110",
                                 "conditions",
                                 "type",
                                 "Ready",
                                 "status",
                                 "True");
        json_t *status = json_object_get(node, "status");
        json_t *inv = json_pack("{s:[{s:i, s:s}, {s:i, s:s}], s:[], s:[]}",
                                "numaNodes",
                                "id",
                                0,
                                "cpus",
                                "0-47",
                                "id",
                                1,
                                "cpus",
                                "48-95",
                                "devices",
                                "links");
        assert_non_null(node);
        assert_non_null(inv);
        for (; gpus && gpus->n; gpus++) {
                json_object_set_new(json_object_get(status, "allocatable"),
                                    gpus->resource,
                                    json_sprintf("%d", gpus->n));
                for (int i = 0; i < gpus->n; i++) {
                        json_t *d = json_pack("{s:s%, s:s, s:s, s:s, s:i, s:i, s:I, s:f}",
                                              "id",
                                              "",
                                              (size_t)0,
                                              "kind",
                                              gpus->kind,
                                              "vendor",
                                              gpus->vendor,
                                              "resourceName",
                                              gpus->resource,
                                              "index",
                                              i,
                                              "numaNode",
                                              i < gpus->n / 2 ? 0 : 1,
                                              "memoryBytes",
                                              (json_int_t)gpus->memory,
                                              "fp16TFLOPS",
                                              gpus->tflops);
                        json_object_set_new(d, "id", json_sprintf("%s-%s-%d", name, gpus->kind, i));
                        json_array_append_new(json_object_get(inv, "devices"), d);
                        for (int j = 0; j < i && gpus->topo; j++) {
                                int nv = 0, level = gpus->topo(j, i, &nv);
                                json_t *l = json_pack("{s:o, s:o, s:s}",
                                                      "a",
                                                      json_sprintf("%s-%s-%d", name, gpus->kind, j),
                                                      "b",
                                                      json_sprintf("%s-%s-%d", name, gpus->kind, i),
                                                      "level",
                                                      levels[level]);
                                if (level == 1)
                                        json_object_set_new(l, "nvlinks", json_integer(nv));
                                json_array_append_new(json_object_get(inv, "links"), l);
                        }
                }
        }
        json_object_set_new(status, "xpool", inv);
        return node;
}

static void add_node(struct xp_sched *sched, json_t *json)
{
        struct xp_node *node = NULL;
        struct xp_error err = {0};

        if (xp_node_from_json(json, NULL, XP_DECODE_TRUSTED, &node, &err) < 0)
                fail_msg("node: %s", err.msg);
        if (xp_sched_node_set(sched, node, &err) < 0)
                fail_msg("node_set: %s", err.msg);
        xp_node_free(node);
        json_decref(json);
}

static const struct gpu_spec nvidia8_pairs[] = {
    {"nvidia.com/gpu", "gpu", "NVIDIA", 8, 80LL << 30, 989, topo_pairs}, {0}};
static const struct gpu_spec nvidia8_islands[] = {
    {"nvidia.com/gpu", "gpu", "NVIDIA", 8, 80LL << 30, 989, topo_islands}, {0}};
static const struct gpu_spec nvidia8_full[] = {
    {"nvidia.com/gpu", "gpu", "NVIDIA", 8, 80LL << 30, 989, topo_full}, {0}};

static struct xp_pod *pod_from(const char *fmt, ...) _printf_(1, 2);
static struct xp_pod *pod_from(const char *fmt, ...)
{
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        char *text;
        va_list ap;

        va_start(ap, fmt);
        assert_true(vasprintf(&text, fmt, ap) >= 0);
        va_end(ap);
        if (xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0)
                fail_msg("pod: %s in %s", err.msg, text);
        free(text);
        return pod;
}

/* A pod with one container asking for limits (a JSON object's members) and extra spec/metadata. */
static struct xp_pod *
simple_pod(const char *name, const char *limits, const char *spec_extra, const char *meta_extra)
{
        return pod_from(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"%s%s},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{%s}}}]%s%s}}",
            name,
            meta_extra ? "," : "",
            meta_extra ? meta_extra : "",
            limits,
            spec_extra ? "," : "",
            spec_extra ? spec_extra : "");
}

/* Places the pod; returns the node (caller frees) or NULL with *reason set. Binds it when bind. */
static char *place(
    struct xp_sched *sched, struct xp_pod *pod, bool bind, struct xp_placement *ret, char **reason)
{
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        char *why = NULL, *node;
        int r = xp_sched_place(sched, pod, &pl, &why, &err);

        if (r < 0)
                fail_msg("place: %s", err.msg);
        if (r == 0) {
                assert_non_null(why);
                if (reason)
                        *reason = why;
                else
                        free(why);
                return NULL;
        }
        if (bind) {
                char *json;
                assert_int_equal(xp_placement_to_json(&pl, &json), 0);
                assert_int_equal(
                    xp_strmap_set(&pod->metadata.annotations, XP_PLACEMENT_ANNOTATION, json), 0);
                free(json);
                free(pod->spec.node_name);
                pod->spec.node_name = strdup(pl.node);
                if (xp_sched_pod_add(sched, pod, &err) < 0)
                        fail_msg("pod_add: %s", err.msg);
        }
        node = strdup(pl.node);
        if (ret)
                *ret = pl;
        else
                xp_placement_done(&pl);
        return node;
}

static struct xp_sched *new_sched(enum xp_sched_profile profile, uint64_t seed)
{
        struct xp_sched_options o = {.profile = profile, .seed = seed, .feasible_nodes_to_find = 0};
        struct xp_sched *sched = NULL;

        assert_int_equal(xp_sched_new(&o, &sched), 0);
        return sched;
}

static int device_number(const struct xp_placement_device *d)
{
        const char *dash = strrchr(d->id, '-');
        return atoi(dash + 1);
}

/* ---- topology ------------------------------------------------------------------------------ */

static void two_gpus_on_nvlink_pair(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_pod *pod = simple_pod("p", "\"nvidia.com/gpu\":\"2\"", NULL, NULL);
        struct xp_placement pl;
        char *node;
        int a, b;

        (void)state;
        add_node(sched, node_json("dgx", "96", nvidia8_pairs));
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "dgx");
        assert_int_equal(pl.devices.n, 2);
        a = device_number(&pl.devices.items[0]);
        b = device_number(&pl.devices.items[1]);
        assert_string_equal(pl.devices.items[0].resource, "nvidia.com/gpu");
        assert_int_equal(pl.devices.items[0].milli, 1000);
        assert_int_equal(pl.devices.items[0].index, a);
        /* a connected pair: {0,5} {1,4} {2,7} {3,6} */
        assert_int_equal(topo_pairs(a, b, &(int){0}), 1);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

static void four_gpus_in_one_island(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_pod *pod = simple_pod("p", "\"nvidia.com/gpu\":\"4\"", NULL, NULL);
        struct xp_placement pl;
        char *node;

        (void)state;
        add_node(sched, node_json("dgx", "96", nvidia8_islands));
        node = place(sched, pod, false, &pl, NULL);
        assert_non_null(node);
        assert_int_equal(pl.devices.n, 4);
        for (size_t i = 1; i < 4; i++)
                assert_int_equal(device_number(&pl.devices.items[i]) % 2,
                                 device_number(&pl.devices.items[0]) % 2);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* ---- reasons ------------------------------------------------------------------------------- */

static void reasons_like_kube(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_pod *pod = simple_pod(
            "p", "\"nvidia.com/gpu\":\"1\"", "\"nodeSelector\":{\"pool\":\"gpu\"}", NULL);
        json_t *a = node_json("a", "96", nvidia8_full), *b = node_json("b", "96", NULL),
               *c = node_json("c", "96", NULL);
        char *reason = NULL;

        (void)state;
        json_object_set_new(
            json_object_get(json_object_get(b, "metadata"), "labels"), "pool", json_string("gpu"));
        json_object_set_new(
            json_object_get(json_object_get(c, "metadata"), "labels"), "pool", json_string("gpu"));
        add_node(sched, a);
        add_node(sched, b);
        add_node(sched, c);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(
            reason,
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient nvidia.com/gpu.");
        free(reason);
        xp_pod_free(pod);

        /* several insufficient resources on one node each count */
        pod = simple_pod("q", "\"cpu\":\"200\",\"memory\":\"1Ti\"", NULL, NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason,
                            "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory.");
        free(reason);
        xp_pod_free(pod);
        xp_sched_free(sched);

        /* no nodes at all */
        sched = new_sched(XP_SCHED_SPREAD, 1);
        pod = simple_pod("r", "\"cpu\":\"1\"", NULL, NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason, "no nodes available to schedule pods");
        free(reason);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

static void unschedulable_and_not_ready(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        json_t *a = node_json("a", "8", NULL), *b = node_json("b", "8", NULL),
               *c = node_json("c", "8", NULL);
        struct xp_pod *pod = simple_pod("p", "\"cpu\":\"1\"", NULL, NULL);
        char *reason = NULL, *node;

        (void)state;
        json_object_set_new(a, "spec", json_pack("{s:b}", "unschedulable", 1));
        json_object_set_new(
            json_array_get(json_object_get(json_object_get(b, "status"), "conditions"), 0),
            "status",
            json_string("False"));
        json_object_set_new(
            json_array_get(json_object_get(json_object_get(c, "status"), "conditions"), 0),
            "status",
            json_string("Unknown"));
        add_node(sched, a);
        add_node(sched, b);
        add_node(sched, c);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(
            reason,
            "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, "
            "1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 1 node(s) were unschedulable.");
        free(reason);
        xp_pod_free(pod);
        /* tolerating the cordon taint lets the pod onto the cordoned node */
        pod = simple_pod(
            "q",
            "\"cpu\":\"1\"",
            "\"tolerations\":[{\"key\":\"node.kubernetes.io/unschedulable\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]",
            NULL);
        node = place(sched, pod, false, NULL, NULL);
        assert_string_equal(node, "a");
        free(node);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* ---- taints -------------------------------------------------------------------------------- */

static void taints_and_tolerations(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        json_t *a = node_json("a", "8", NULL), *b = node_json("b", "8", NULL);
        struct xp_pod *pod;
        char *reason = NULL, *node;

        (void)state;
        json_object_set_new(a,
                            "spec",
                            json_pack("{s:[{s:s, s:s, s:s}]}",
                                      "taints",
                                      "key",
                                      "dedicated",
                                      "value",
                                      "gpu",
                                      "effect",
                                      "NoSchedule"));
        json_object_set_new(
            b,
            "spec",
            json_pack("{s:[{s:s, s:s}]}", "taints", "key", "maintenance", "effect", "NoExecute"));
        add_node(sched, a);
        add_node(sched, b);

        pod = simple_pod("p", "\"cpu\":\"1\"", NULL, NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(
            reason,
            "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
            "1 node(s) had untolerated taint {maintenance: }.");
        free(reason);
        xp_pod_free(pod);

        /* Equal with the right value */
        pod = simple_pod("p",
                         "\"cpu\":\"1\"",
                         "\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"gpu\"}]",
                         NULL);
        node = place(sched, pod, false, NULL, NULL);
        assert_string_equal(node, "a");
        free(node);
        xp_pod_free(pod);

        /* Equal with a wrong value, or the wrong effect, tolerates nothing */
        pod = simple_pod(
            "p",
            "\"cpu\":\"1\"",
            "\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"cpu\"},{\"key\":\"maintenance\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]",
            NULL);
        assert_null(place(sched, pod, false, NULL, NULL));
        xp_pod_free(pod);

        /* Exists without a key tolerates everything */
        pod = simple_pod("p", "\"cpu\":\"1\"", "\"tolerations\":[{\"operator\":\"Exists\"}]", NULL);
        node = place(sched, pod, false, NULL, NULL);
        assert_non_null(node);
        free(node);
        xp_pod_free(pod);
        xp_sched_free(sched);

        /* PreferNoSchedule only scores: the pod goes to the untainted node, unless it is the only
         * one */
        for (uint64_t seed = 0; seed < 8; seed++) {
                sched = new_sched(XP_SCHED_SPREAD, seed);
                a = node_json("a", "8", NULL);
                json_object_set_new(
                    a,
                    "spec",
                    json_pack(
                        "{s:[{s:s, s:s}]}", "taints", "key", "spot", "effect", "PreferNoSchedule"));
                add_node(sched, a);
                add_node(sched, node_json("b", "8", NULL));
                pod = simple_pod("p", "\"cpu\":\"1\"", NULL, NULL);
                node = place(sched, pod, false, NULL, NULL);
                assert_string_equal(node, "b");
                free(node);
                assert_int_equal(xp_sched_node_remove(sched, "b"), 0);
                node = place(sched, pod, false, NULL, NULL);
                assert_string_equal(node, "a");
                free(node);
                xp_pod_free(pod);
                xp_sched_free(sched);
        }
}

/* ---- node affinity --------------------------------------------------------------------------- */

static void affinity_operators(void **state)
{
        static const struct {
                const char *expr;
                const char *want; /* the one node that matches, or NULL for none */
        } cases[] = {
            {"{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\",\"x\"]}", "n2"},
            {"{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\",\"b\"]}", "n3"},
            {"{\"key\":\"ssd\",\"operator\":\"Exists\"}", "n1"},
            {"{\"key\":\"zone\",\"operator\":\"DoesNotExist\"}", "n3"},
            {"{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"4\"]}", "n2"},
            {"{\"key\":\"gen\",\"operator\":\"Lt\",\"values\":[\"4\"]}", "n1"},
            {"{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"9\"]}", NULL},
        };
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        json_t *n1 = node_json("n1", "8", NULL), *n2 = node_json("n2", "8", NULL),
               *n3 = node_json("n3", "8", NULL);

        (void)state;
        {
                json_t *l1 = json_pack("{s:s, s:s, s:s}", "zone", "a", "ssd", "", "gen", "3");
                json_t *l2 = json_pack("{s:s, s:s}", "zone", "b", "gen", "5");
                json_object_update(json_object_get(json_object_get(n1, "metadata"), "labels"), l1);
                json_object_update(json_object_get(json_object_get(n2, "metadata"), "labels"), l2);
                json_decref(l1);
                json_decref(l2);
        }
        add_node(sched, n1);
        add_node(sched, n2);
        add_node(sched, n3);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char spec[512], *node, *reason = NULL;
                struct xp_pod *pod;

                snprintf(
                    spec,
                    sizeof(spec),
                    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[%s]}]}}}",
                    cases[i].expr);
                pod = simple_pod("p", "\"cpu\":\"1\"", spec, NULL);
                node = place(sched, pod, false, NULL, &reason);
                if (cases[i].want) {
                        if (!node)
                                fail_msg("case %zu: %s", i, reason);
                        assert_string_equal(node, cases[i].want);
                } else {
                        assert_null(node);
                        assert_string_equal(
                            reason,
                            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.");
                        free(reason);
                }
                free(node);
                xp_pod_free(pod);
        }
        /* preferred affinity scores: weight 80 on zone b beats 10 on zone a */
        {
                struct xp_pod *pod = simple_pod(
                    "p",
                    "\"cpu\":\"1\"",
                    "\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
                    "{\"weight\":10,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]}},"
                    "{\"weight\":80,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\"]}]}}]}}",
                    NULL);
                char *node = place(sched, pod, false, NULL, NULL);
                assert_string_equal(node, "n2");
                free(node);
                xp_pod_free(pod);
        }
        /* matchFields on metadata.name */
        {
                struct xp_pod *pod = simple_pod(
                    "p",
                    "\"cpu\":\"1\"",
                    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
                    "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n3\"]}]}]}}}",
                    NULL);
                char *node = place(sched, pod, false, NULL, NULL);
                assert_string_equal(node, "n3");
                free(node);
                xp_pod_free(pod);
        }
        xp_sched_free(sched);
}

/* ---- anti-affinity ------------------------------------------------------------------------- */

static void anti_affinity_spreads_replicas(void **state)
{
        static const char anti[] =
            "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":["
            "{\"labelSelector\":{\"matchLabels\":{\"job\":\"train\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}";
        struct xp_sched *sched = new_sched(XP_SCHED_BINPACK, 1);
        char *n1, *n2, *reason = NULL;
        struct xp_pod *p1, *p2, *p3, *other;

        (void)state;
        add_node(sched, node_json("a", "8", NULL));
        add_node(sched, node_json("b", "8", NULL));
        p1 = simple_pod("r1", "\"cpu\":\"1\"", anti, "\"labels\":{\"job\":\"train\"}");
        p2 = simple_pod("r2", "\"cpu\":\"1\"", anti, "\"labels\":{\"job\":\"train\"}");
        p3 = simple_pod("r3", "\"cpu\":\"1\"", anti, "\"labels\":{\"job\":\"train\"}");
        n1 = place(sched, p1, true, NULL, NULL);
        n2 = place(sched, p2, true, NULL, NULL);
        assert_non_null(n1);
        assert_non_null(n2);
        assert_string_not_equal(n1, n2);
        assert_null(place(sched, p3, false, NULL, &reason));
        assert_string_equal(
            reason, "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.");
        free(reason);
        /* pods of another namespace do not count */
        other = pod_from(
            "{\"metadata\":{\"name\":\"r3\",\"namespace\":\"other\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],%s}}",
            anti);
        free(n1);
        n1 = place(sched, other, false, NULL, NULL);
        assert_non_null(n1);
        /* a replica gone frees its node */
        assert_int_equal(xp_sched_pod_remove(sched, "default", "r1"), 0);
        assert_int_equal(xp_sched_pod_remove(sched, "default", "r1"), -ENOENT);
        free(n1);
        n1 = place(sched, p3, false, NULL, NULL);
        assert_non_null(n1);
        assert_string_not_equal(n1, n2);
        free(n1);
        free(n2);
        xp_pod_free(p1);
        xp_pod_free(p2);
        xp_pod_free(p3);
        xp_pod_free(other);
        xp_sched_free(sched);
}

/* ---- profiles and scores ------------------------------------------------------------------- */

/* A node labelled with its zone. */
static void add_zoned_node(struct xp_sched *sched, const char *name, const char *zone)
{
        json_t *json = node_json(name, "8", NULL);

        json_object_set_new(json_object_get(json_object_get(json, "metadata"), "labels"),
                            "zone",
                            json_string(zone));
        add_node(sched, json);
}

/* Accounts pod as bound to node (no placement annotation). */
static void bind_to(struct xp_sched *sched, struct xp_pod *pod, const char *node)
{
        struct xp_error err = {0};

        free(pod->spec.node_name);
        pod->spec.node_name = strdup(node);
        if (xp_sched_pod_add(sched, pod, &err) < 0)
                fail_msg("pod_add: %s", err.msg);
}

#define ANTI_TERM(sel, extra, key)                                                                 \
        "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{" \
        "\"labelSelector\":" sel extra ",\"topologyKey\":\"" key "\"}]}}"

static void existing_anti_affinity_is_symmetric(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_pod *guard, *guard2, *web, *web_other, *db;
        char *n, *reason = NULL;

        (void)state;
        add_zoned_node(sched, "a", "z1");
        add_zoned_node(sched, "b", "z1");
        add_zoned_node(sched, "c", "z2");
        /* guard keeps pods labelled app=web of its namespace out of its zone */
        guard = simple_pod("guard",
                           "\"cpu\":\"1\"",
                           ANTI_TERM("{\"matchLabels\":{\"app\":\"web\"}}", "", "zone"),
                           NULL);
        bind_to(sched, guard, "a");
        web = simple_pod("web", "\"cpu\":\"1\"", NULL, "\"labels\":{\"app\":\"web\"}");
        for (int i = 0; i < 4; i++) {
                n = place(sched, web, false, NULL, NULL);
                assert_non_null(n);
                assert_string_equal(n, "c");
                free(n);
        }
        assert_int_equal(xp_sched_node_remove(sched, "c"), 0);
        assert_null(place(sched, web, false, NULL, &reason));
        assert_string_equal(
            reason,
            "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules.");
        free(reason);
        /* the term selects neither another namespace nor other labels */
        web_other = pod_from(
            "{\"metadata\":{\"name\":\"web\",\"namespace\":\"other\",\"labels\":{\"app\":\"web\"}},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}");
        n = place(sched, web_other, false, NULL, NULL);
        assert_non_null(n);
        free(n);
        db = simple_pod("db", "\"cpu\":\"1\"", NULL, "\"labels\":{\"app\":\"web2\"}");
        n = place(sched, db, false, NULL, NULL);
        assert_non_null(n);
        free(n);
        /* the guard gone, its zone is open again */
        assert_int_equal(xp_sched_pod_remove(sched, "default", "guard"), 0);
        n = place(sched, web, false, NULL, NULL);
        assert_non_null(n);
        free(n);
        /* a term naming namespaces selects pods there, by hostname: only node b is closed */
        guard2 = simple_pod("guard2",
                            "\"cpu\":\"1\"",
                            ANTI_TERM("{\"matchLabels\":{\"app\":\"web\"}}",
                                      ",\"namespaces\":[\"other\"]",
                                      "kubernetes.io/hostname"),
                            NULL);
        bind_to(sched, guard2, "b");
        for (int i = 0; i < 4; i++) {
                n = place(sched, web_other, false, NULL, NULL);
                assert_non_null(n);
                assert_string_equal(n, "a");
                free(n);
        }
        n = place(sched, web, false, NULL, NULL); /* default/web is not selected */
        assert_non_null(n);
        free(n);
        /* replacing the guard by a version without the term forgets the term */
        xp_pod_free(guard2);
        guard2 = simple_pod("guard2", "\"cpu\":\"1\"", NULL, NULL);
        bind_to(sched, guard2, "b");
        assert_int_equal(xp_sched_node_remove(sched, "a"), 0);
        n = place(sched, web_other, false, NULL, NULL);
        assert_non_null(n);
        assert_string_equal(n, "b");
        free(n);
        xp_pod_free(guard);
        xp_pod_free(guard2);
        xp_pod_free(web);
        xp_pod_free(web_other);
        xp_pod_free(db);
        xp_sched_free(sched);
}

static void anti_affinity_index_and_fallback(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 7);
        struct xp_pod *db1, *db2, *x, *y;
        char *n;

        (void)state;
        add_zoned_node(sched, "a", "z1");
        add_zoned_node(sched, "b", "z1");
        add_zoned_node(sched, "c", "z2");
        /* placed before any pod has a term: the index is built from them when one comes */
        db1 = simple_pod("db1", "\"cpu\":\"1\"", NULL, "\"labels\":{\"app\":\"db\"}");
        db2 = simple_pod("db2", "\"cpu\":\"1\"", NULL, "\"labels\":{\"app\":\"db\"}");
        bind_to(sched, db1, "a");
        bind_to(sched, db2, "b");
        /* In with one value: looked up in the index */
        x = simple_pod(
            "x",
            "\"cpu\":\"1\"",
            ANTI_TERM(
                "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"db\"]}]}",
                "",
                "kubernetes.io/hostname"),
            "\"labels\":{\"app\":\"x\"}");
        for (int i = 0; i < 3; i++) {
                n = place(sched, x, false, NULL, NULL);
                assert_non_null(n);
                assert_string_equal(n, "c");
                free(n);
        }
        /* NotIn alone has nothing to look up: the scan finds db1 and db2 */
        y = simple_pod(
            "y",
            "\"cpu\":\"1\"",
            ANTI_TERM(
                "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"NotIn\",\"values\":[\"x\"]}]}",
                "",
                "kubernetes.io/hostname"),
            "\"labels\":{\"app\":\"x\"}");
        n = place(sched, y, false, NULL, NULL);
        assert_non_null(n);
        assert_string_equal(n, "c");
        free(n);
        /* the index follows removals: db2 gone, b is open to x (and c stays open) */
        assert_int_equal(xp_sched_pod_remove(sched, "default", "db2"), 0);
        assert_int_equal(xp_sched_node_remove(sched, "c"), 0);
        n = place(sched, x, false, NULL, NULL);
        assert_non_null(n);
        assert_string_equal(n, "b");
        free(n);
        /* and additions: db2 back on b leaves x nowhere */
        bind_to(sched, db2, "b");
        assert_null(place(sched, x, false, NULL, NULL));
        xp_pod_free(db1);
        xp_pod_free(db2);
        xp_pod_free(x);
        xp_pod_free(y);
        xp_sched_free(sched);
}

static void spread_and_binpack(void **state)
{
        for (int profile = XP_SCHED_SPREAD; profile <= XP_SCHED_BINPACK; profile++) {
                struct xp_sched *sched = new_sched(profile, 7);
                struct xp_pod *busy = simple_pod(
                    "busy", "\"cpu\":\"4\",\"memory\":\"64Gi\"", "\"nodeName\":\"a\"", NULL);
                struct xp_pod *pod =
                    simple_pod("p", "\"cpu\":\"1\",\"memory\":\"1Gi\"", NULL, NULL);
                struct xp_error err = {0};
                char *node;

                (void)state;
                add_node(sched, node_json("a", "16", NULL));
                add_node(sched, node_json("b", "16", NULL));
                assert_int_equal(xp_sched_pod_add(sched, busy, &err), 0);
                node = place(sched, pod, false, NULL, NULL);
                assert_string_equal(node, profile == XP_SCHED_SPREAD ? "b" : "a");
                free(node);
                xp_pod_free(busy);
                xp_pod_free(pod);
                xp_sched_free(sched);
        }
}

static void init_containers_and_pods_limit(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        json_t *a = node_json("a", "8", NULL);
        struct xp_pod *pod;
        char *node, *reason = NULL;
        struct xp_error err = {0};

        (void)state;
        json_object_set_new(
            json_object_get(json_object_get(a, "status"), "allocatable"), "pods", json_string("1"));
        add_node(sched, a);
        /* init 6 cpus vs containers 2+3: the pod needs max(6, 5) = 6 */
        pod = pod_from(
            "{\"metadata\":{\"name\":\"p\"},\"spec\":{"
            "\"initContainers\":[{\"name\":\"i\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"6\"}}}],"
            "\"containers\":[{\"name\":\"a\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}},"
            "{\"name\":\"b\",\"image\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"3\"}}}]}}");
        node = place(sched, pod, true, NULL, NULL);
        assert_string_equal(node, "a");
        free(node);
        xp_pod_free(pod);
        /* 2 cpus are left, and the node's single pod slot is taken */
        pod = simple_pod("q", "\"cpu\":\"3\"", NULL, NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason,
                            "0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods.");
        free(reason);
        xp_pod_free(pod);
        /* unbound pods cannot be added */
        pod = simple_pod("u", "\"cpu\":\"1\"", NULL, NULL);
        assert_int_equal(xp_sched_pod_add(sched, pod, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "spec.nodeName"));
        xp_pod_free(pod);
        xp_sched_free(sched);
}

static void sidecars_count_with_the_containers(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_pod *pod;
        char *node, *reason = NULL;

        (void)state;
        add_node(sched, node_json("a", "8", NULL));
        /* a sidecar of 2 cpus runs beside the containers' 3 (5) and beside the init container's
         * 5 after it (7): the pod needs 7, as Kubernetes counts it, not max(5, 3) */
        pod = pod_from(
            "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":["
            "{\"name\":\"side\",\"image\":\"i\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}},"
            "{\"name\":\"i\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"5\"}}}],"
            "\"containers\":[{\"name\":\"a\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]}}");
        node = place(sched, pod, true, NULL, NULL);
        assert_string_equal(node, "a");
        free(node);
        xp_pod_free(pod);
        pod = simple_pod("q", "\"cpu\":\"2\"", NULL, NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason, "0/1 nodes are available: 1 Insufficient cpu.");
        free(reason);
        xp_pod_free(pod);
        pod = simple_pod("r", "\"cpu\":\"1\"", NULL, NULL);
        node = place(sched, pod, false, NULL, NULL);
        assert_string_equal(node, "a");
        free(node);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* ---- fractions ----------------------------------------------------------------------------- */

static void fractions_share_devices(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 3);
        struct xp_placement pl;
        struct xp_pod *pod;
        char *node, *reason = NULL;
        int shared;

        (void)state;
        add_node(sched, node_json("a", "96", nvidia8_full));
        add_node(sched, node_json("b", "96", nvidia8_full));
        pod = simple_pod("f1", "\"nvidia.com/gpu\":\"500m\"", NULL, NULL);
        node = place(sched, pod, true, &pl, NULL);
        assert_int_equal(pl.devices.n, 1);
        assert_int_equal(pl.devices.items[0].milli, 500);
        shared = device_number(&pl.devices.items[0]);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        /* the next share goes to the same device on the same node, even under spread */
        pod = simple_pod("f2", "\"nvidia.com/gpu\":\"300m\"", NULL, NULL);
        {
                char *node2 = place(sched, pod, true, &pl, NULL);
                assert_string_equal(node2, node);
                free(node2);
        }
        assert_int_equal(device_number(&pl.devices.items[0]), shared);
        assert_int_equal(pl.devices.items[0].milli, 300);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        /* a share that no longer fits in that device takes another one */
        pod = simple_pod("f3",
                         "\"nvidia.com/gpu\":\"400m\"",
                         "\"nodeSelector\":{\"kubernetes.io/hostname\":\"a\"}",
                         NULL);
        free(place(sched, pod, false, &pl, NULL));
        if (strcmp(node, "a") == 0)
                assert_int_not_equal(device_number(&pl.devices.items[0]), shared);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        /* whole devices: 7 remain whole on the shared node */
        pod = simple_pod("w", "\"nvidia.com/gpu\":\"8\"", NULL, NULL);
        {
                char *node2 = place(sched, pod, false, &pl, NULL);
                assert_string_not_equal(node2, node);
                free(node2);
        }
        xp_placement_done(&pl);
        xp_pod_free(pod);
        pod = simple_pod("w7", "\"nvidia.com/gpu\":\"7\"", NULL, NULL);
        {
                char *node2 = place(sched, pod, false, &pl, NULL);
                for (size_t i = 0; i < pl.devices.n && strcmp(node2, node) == 0; i++)
                        assert_int_not_equal(device_number(&pl.devices.items[i]), shared);
                free(node2);
        }
        xp_placement_done(&pl);
        xp_pod_free(pod);
        /* a bad quantity for a device request */
        pod = simple_pod("bad",
                         "\"nvidia.com/gpu\":\"1500m\"",
                         "\"nodeSelector\":{\"kubernetes.io/hostname\":\"none\"}",
                         NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        free(reason);
        xp_pod_free(pod);
        free(node);
        xp_sched_free(sched);
}

/* ---- shares by device memory ---------------------------------------------------------------- */

/* A pod asking for limits, on node (a nodeSelector) unless node is NULL. */
static struct xp_pod *memory_pod(const char *name, const char *limits, const char *node)
{
        char sel[128];

        snprintf(sel, sizeof(sel), "\"nodeSelector\":{\"kubernetes.io/hostname\":\"%s\"}", node);
        return simple_pod(name, limits, node ? sel : NULL, NULL);
}

static void memory_shares(void **state)
{
        static const struct gpu_spec g40[] = {
            {"nvidia.com/gpu", "gpu", "NVIDIA", 4, 40LL << 30, 312, topo_full}, {0}};
        static const struct gpu_spec g80[] = {
            {"nvidia.com/gpu", "gpu", "NVIDIA", 4, 80LL << 30, 989, topo_full}, {0}};
        static const struct gpu_spec unknown[] = {
            {"nvidia.com/gpu", "gpu", "NVIDIA", 4, 0, 989, topo_full}, {0}};
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 5);
        struct xp_placement pl;
        struct xp_error err = {0};
        struct xp_pod *pod;
        char *node, *reason = NULL;
        int shared;

        (void)state;
        add_node(sched, node_json("small", "96", g40));
        add_node(sched, node_json("big", "96", g80));

        /* the milli is computed against each node's device */
        pod = memory_pod("m80", "\"nvidia.com/gpu-memory\":\"20Gi\"", "big");
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "big");
        assert_int_equal(pl.devices.n, 1);
        assert_string_equal(pl.devices.items[0].resource, "nvidia.com/gpu");
        assert_int_equal(pl.devices.items[0].milli, 250);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        pod = memory_pod("m1", "\"nvidia.com/gpu-memory\":\"20Gi\"", "small");
        node = place(sched, pod, true, &pl, NULL);
        assert_string_equal(node, "small");
        assert_int_equal(pl.devices.n, 1);
        assert_string_equal(pl.devices.items[0].resource, "nvidia.com/gpu");
        assert_int_equal(pl.devices.items[0].milli, 500);
        shared = device_number(&pl.devices.items[0]);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);

        /* later shares pack onto the shared device while it has room: 250 + 250 fill it */
        for (int i = 0; i < 2; i++) {
                pod = memory_pod(i ? "m3" : "m2", "\"nvidia.com/gpu-memory\":\"10Gi\"", "small");
                free(place(sched, pod, true, &pl, NULL));
                assert_int_equal(pl.devices.items[0].milli, 250);
                assert_int_equal(device_number(&pl.devices.items[0]), shared);
                xp_placement_done(&pl);
                xp_pod_free(pod);
        }
        /* full now: 1Gi (25m of 40Gi, rounded up) goes to another device */
        pod = memory_pod("m4", "\"nvidia.com/gpu-memory\":\"1Gi\"", "small");
        free(place(sched, pod, false, &pl, NULL));
        assert_int_equal(pl.devices.items[0].milli, 25);
        assert_int_not_equal(device_number(&pl.devices.items[0]), shared);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        /* 750m on a fresh device; then, without a selector, spread still prefers the node
         * with a shared device that fits */
        pod = memory_pod("m5", "\"nvidia.com/gpu-memory\":\"30Gi\"", "small");
        free(place(sched, pod, true, &pl, NULL));
        assert_int_equal(pl.devices.items[0].milli, 750);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        pod = memory_pod("m6", "\"nvidia.com/gpu-memory\":\"10Gi\"", NULL);
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "small");
        assert_int_equal(pl.devices.items[0].milli, 250);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);

        /* a whole device's memory is a whole device; more than any device has fits nowhere */
        pod = memory_pod("whole", "\"nvidia.com/gpu-memory\":\"80Gi\"", NULL);
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "big");
        assert_int_equal(pl.devices.items[0].milli, 1000);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        pod = memory_pod("huge", "\"nvidia.com/gpu-memory\":\"81Gi\"", NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason,
                            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu-memory.");
        free(reason);
        xp_pod_free(pod);

        /* devices and memory of one resource at once */
        pod = simple_pod(
            "both", "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpu-memory\":\"10Gi\"", NULL, NULL);
        assert_int_equal(xp_sched_place(sched, pod, &pl, &reason, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "nvidia.com/gpu and nvidia.com/gpu-memory both requested"));
        xp_pod_free(pod);

        /* a device whose memory is unknown cannot serve a share by memory */
        add_node(sched, node_json("dark", "96", unknown));
        pod = memory_pod("m7", "\"nvidia.com/gpu-memory\":\"1Gi\"", "dark");
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(
            reason,
            "0/3 nodes are available: 1 Insufficient nvidia.com/gpu-memory, 2 node(s) didn't match Pod's node affinity/selector.");
        free(reason);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* A bound pod without a placement annotation still holds its share by memory. */
static void memory_share_without_annotation(void **state)
{
        static const struct gpu_spec g40[] = {
            {"nvidia.com/gpu", "gpu", "NVIDIA", 1, 40LL << 30, 312, topo_full}, {0}};
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 5);
        struct xp_error err = {0};
        struct xp_placement pl;
        struct xp_pod *pod;
        char *reason = NULL;

        (void)state;
        add_node(sched, node_json("one", "96", g40));
        pod = memory_pod("held", "\"nvidia.com/gpu-memory\":\"30Gi\"", NULL);
        pod->spec.node_name = strdup("one");
        if (xp_sched_pod_add(sched, pod, &err) < 0)
                fail_msg("pod_add: %s", err.msg);
        xp_pod_free(pod);
        pod = memory_pod("more", "\"nvidia.com/gpu-memory\":\"11Gi\"", NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason,
                            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu-memory.");
        free(reason);
        xp_pod_free(pod);
        pod = memory_pod("fits", "\"nvidia.com/gpu-memory\":\"10Gi\"", NULL);
        free(place(sched, pod, false, &pl, NULL));
        assert_int_equal(pl.devices.items[0].milli, 250);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

static void accelerator_memory_shares(void **state)
{
        static const struct gpu_spec nv[] = {
            {"nvidia.com/gpu", "gpu", "NVIDIA", 4, 80LL << 30, 989, topo_full}, {0}};
        static const struct gpu_spec amd[] = {
            {"amd.com/gpu", "gpu", "AMD", 4, 192LL << 30, 1307, topo_full}, {0}};
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 2);
        struct xp_error err = {0};
        struct xp_placement pl;
        struct xp_pod *pod;
        char *node, *reason = NULL;

        (void)state;
        add_node(sched, node_json("nv", "96", nv));
        add_node(sched, node_json("amd", "96", amd));
        /* only the 192Gi devices have 100Gi: ceil(100 * 1000 / 192) = 521 milli of one */
        pod = simple_pod("a", "\"xpool.io/accelerator-memory\":\"100Gi\"", NULL, NULL);
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "amd");
        assert_int_equal(pl.devices.n, 1);
        assert_string_equal(pl.devices.items[0].resource, "amd.com/gpu");
        assert_int_equal(pl.devices.items[0].milli, 521);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        /* the constraint annotations still apply: 40Gi of an NVIDIA device is 500m */
        pod = simple_pod("b",
                         "\"xpool.io/accelerator-memory\":\"40Gi\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-vendors\":\"nvidia\"}");
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "nv");
        assert_string_equal(pl.devices.items[0].resource, "nvidia.com/gpu");
        assert_int_equal(pl.devices.items[0].milli, 500);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        pod = simple_pod("c",
                         "\"xpool.io/accelerator-memory\":\"1Gi\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-kinds\":\"npu\"}");
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason,
                            "0/2 nodes are available: 2 Insufficient xpool.io/accelerator-memory.");
        free(reason);
        xp_pod_free(pod);
        pod = simple_pod("d",
                         "\"xpool.io/accelerator\":\"1\",\"xpool.io/accelerator-memory\":\"1Gi\"",
                         NULL,
                         NULL);
        assert_int_equal(xp_sched_place(sched, pod, &pl, &reason, &err), -EINVAL);
        assert_non_null(
            strstr(err.msg, "xpool.io/accelerator and xpool.io/accelerator-memory both requested"));
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* ---- vendor-neutral requests ----------------------------------------------------------------- */

static void accelerator_requests(void **state)
{
        static const struct gpu_spec nv[] = {
            {"nvidia.com/gpu", "gpu", "NVIDIA", 4, 80LL << 30, 989, topo_full}, {0}};
        static const struct gpu_spec amd[] = {
            {"amd.com/gpu", "gpu", "AMD", 4, 192LL << 30, 1307, topo_full}, {0}};
        static const struct gpu_spec npu[] = {
            {"huawei.com/Ascend910", "npu", "Huawei", 8, 64LL << 30, 320, topo_full}, {0}};
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_placement pl;
        struct xp_pod *pod;
        struct xp_error err = {0};
        char *node, *reason = NULL;

        (void)state;
        add_node(sched, node_json("nv", "96", nv));
        add_node(sched, node_json("amd", "96", amd));
        add_node(sched, node_json("npu", "96", npu));

        pod = simple_pod("m",
                         "\"xpool.io/accelerator\":\"2\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-min-memory\":\"100Gi\"}");
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "amd");
        assert_int_equal(pl.devices.n, 2);
        assert_string_equal(pl.devices.items[0].resource, "amd.com/gpu");
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);

        pod = simple_pod(
            "v",
            "\"xpool.io/accelerator\":\"1\"",
            NULL,
            "\"annotations\":{\"xpool.io/accelerator-kinds\":\"gpu\",\"xpool.io/accelerator-vendors\":\"nvidia, amd\"}");
        node = place(sched, pod, true, &pl, NULL);
        assert_string_equal(node, "nv");
        assert_string_equal(pl.devices.items[0].resource, "nvidia.com/gpu");
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);

        pod = simple_pod("k",
                         "\"xpool.io/accelerator\":\"8\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-kinds\":\"npu\"}");
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "npu");
        assert_int_equal(pl.devices.n, 8);
        assert_string_equal(pl.devices.items[7].resource, "huawei.com/Ascend910");
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);

        pod = simple_pod("t",
                         "\"xpool.io/accelerator\":\"1\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-min-tflops\":\"1000\"}");
        node = place(sched, pod, false, &pl, NULL);
        assert_string_equal(node, "amd");
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);

        pod = simple_pod("none",
                         "\"xpool.io/accelerator\":\"5\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-kinds\":\"gpu\"}");
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason,
                            "0/3 nodes are available: 3 Insufficient xpool.io/accelerator.");
        free(reason);
        xp_pod_free(pod);

        pod = simple_pod("bad",
                         "\"xpool.io/accelerator\":\"1\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-kinds\":\"gpu,tpu\"}");
        assert_int_equal(xp_sched_place(sched, pod, &pl, &reason, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "metadata.annotations[xpool.io/accelerator-kinds]: unknown kind \"tpu\" (gpu, npu, fpga, vpu, accelerator)");
        xp_pod_free(pod);
        pod = simple_pod("bad",
                         "\"xpool.io/accelerator\":\"1\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-min-memory\":\"lots\"}");
        assert_int_equal(xp_sched_place(sched, pod, &pl, &reason, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "metadata.annotations[xpool.io/accelerator-min-memory]: \"lots\" is not a valid quantity");
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* ---- NUMA ---------------------------------------------------------------------------------- */

static void cpus_follow_devices(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_placement pl;
        struct xp_pod *pod;
        char *node, *reason = NULL;

        (void)state;
        add_node(sched, node_json("dgx", "96", nvidia8_islands));
        /* take most of NUMA node 0's CPUs */
        pod = simple_pod(
            "big", "\"cpu\":\"40\"", "\"nodeSelector\":{\"kubernetes.io/hostname\":\"dgx\"}", NULL);
        node = place(sched, pod, true, &pl, NULL);
        assert_non_null(pl.cpus);
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        /* 4 GPUs with 12 whole cpus, required on one NUMA node */
        pod = simple_pod("g",
                         "\"cpu\":\"12\",\"nvidia.com/gpu\":\"4\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/single-numa-node\":\"true\"}");
        node = place(sched, pod, true, &pl, NULL);
        assert_int_equal(pl.devices.n, 4);
        assert_true(pl.numa_node == 0 || pl.numa_node == 1);
        assert_non_null(pl.cpus);
        assert_string_equal(pl.cpus, pl.numa_node == 0 ? "0-11" : "48-59");
        free(node);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        /* 40 more cpus on one NUMA node no longer fit */
        pod = simple_pod("h",
                         "\"cpu\":\"40\",\"nvidia.com/gpu\":\"1\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/single-numa-node\":\"true\"}");
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(
            reason,
            "0/1 nodes are available: 1 node(s) couldn't align devices and CPUs on one NUMA node.");
        free(reason);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* ---- placement annotation ------------------------------------------------------------------ */

static void placement_round_trip(void **state)
{
        struct xp_placement_device devs[] = {
            {.resource = (char *)"nvidia.com/gpu",
             .id = (char *)"GPU-1",
             .index = 1,
             .milli = 1000},
            {.resource = (char *)"nvidia.com/gpu", .id = (char *)"GPU-2", .index = 2, .milli = 250},
        };
        struct xp_placement in = {.node = (char *)"n1", .cpus = (char *)"0-3,8", .numa_node = 0};
        struct xp_placement out = {0};
        struct xp_error err = {0};
        char *text = NULL;

        (void)state;
        in.devices.items = devs;
        in.devices.n = 2;
        assert_int_equal(xp_placement_to_json(&in, &text), 0);
        assert_string_equal(
            text,
            "{\"node\":\"n1\",\"devices\":[{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-1\",\"index\":1,\"milli\":1000},"
            "{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-2\",\"index\":2,\"milli\":250}],\"cpus\":\"0-3,8\",\"numaNode\":0}");
        assert_int_equal(xp_placement_from_json(text, &out, &err), 0);
        assert_string_equal(out.node, "n1");
        assert_int_equal(out.devices.n, 2);
        assert_string_equal(out.devices.items[1].id, "GPU-2");
        assert_int_equal(out.devices.items[1].milli, 250);
        assert_int_equal(out.devices.items[1].index, 2);
        assert_string_equal(out.cpus, "0-3,8");
        assert_int_equal(out.numa_node, 0);
        xp_placement_done(&out);
        free(text);

        static const struct {
                const char *text;
                const char *msg;
        } bad[] = {
            {"[1]", "xpool.io/placement: not a JSON object"},
            {"{\"devices\":[]}", "xpool.io/placement: node: must be a non-empty string"},
            {"{\"node\":\"n\",\"devices\":{}}", "xpool.io/placement: devices: must be an array"},
            {"{\"node\":\"n\",\"devices\":[{\"resource\":\"r\",\"id\":\"i\",\"milli\":0}]}",
             "xpool.io/placement: devices[0].milli: must be an integer from 1 to 1000"},
            {"{\"node\":\"n\",\"devices\":[{\"resource\":\"r\",\"id\":\"i\",\"milli\":1},{\"id\":\"i\",\"milli\":1}]}",
             "xpool.io/placement: devices[1].resource: must be a non-empty string"},
            {"{\"node\":\"n\",\"devices\":[{\"resource\":\"r\",\"milli\":1}]}",
             "xpool.io/placement: devices[0].id: must be a non-empty string"},
            {"{\"node\":\"n\",\"devices\":[{\"resource\":\"r\",\"id\":\"i\",\"index\":\"0\",\"milli\":1}]}",
             "xpool.io/placement: devices[0].index: must be an integer"},
            {"{\"node\":\"n\",\"devices\":[7]}",
             "xpool.io/placement: devices[0]: must be an object"},
            {"{\"node\":\"n\",\"cpus\":3}", "xpool.io/placement: cpus: must be a cpulist string"},
            {"{\"node\":\"n\",\"numaNode\":-2}",
             "xpool.io/placement: numaNode: must be an integer, -1 for none"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                out = (struct xp_placement){.node = (char *)"untouched"};
                assert_int_equal(xp_placement_from_json(bad[i].text, &out, &err), -EINVAL);
                assert_string_equal(err.msg, bad[i].msg);
                assert_string_equal(out.node, "untouched");
        }
        assert_int_equal(xp_placement_from_json("{\"node\":", &out, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "xpool.io/placement: "));
        assert_non_null(strstr(err.msg, "line 1"));
}

/* ---- incremental changes ------------------------------------------------------------------- */

static void incremental_changes(void **state)
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_sched_stats st;
        struct xp_pod *pod, *gpu;
        struct xp_error err = {0};
        char *node, *reason = NULL;

        (void)state;
        add_node(sched, node_json("a", "4", NULL));
        pod = simple_pod("p", "\"cpu\":\"3\"", NULL, NULL);
        node = place(sched, pod, true, NULL, NULL);
        assert_string_equal(node, "a");
        free(node);
        xp_sched_stats(sched, &st);
        assert_int_equal(st.nodes, 1);
        assert_int_equal(st.pods, 1);
        assert_int_equal(st.placements, 1);
        /* adding the same pod again replaces it: still 3 cpus held */
        assert_int_equal(xp_sched_pod_add(sched, pod, &err), 0);
        xp_sched_stats(sched, &st);
        assert_int_equal(st.pods, 1);
        {
                struct xp_pod *q = simple_pod("q", "\"cpu\":\"2\"", NULL, NULL);
                assert_null(place(sched, q, false, NULL, &reason));
                assert_string_equal(reason, "0/1 nodes are available: 1 Insufficient cpu.");
                free(reason);
                /* the node goes and comes back (a status update): the pod still counts */
                assert_int_equal(xp_sched_node_remove(sched, "a"), 0);
                assert_int_equal(xp_sched_node_remove(sched, "a"), -ENOENT);
                add_node(sched, node_json("a", "4", NULL));
                assert_null(place(sched, q, false, NULL, NULL));
                /* a bigger node replaces it */
                add_node(sched, node_json("a", "8", NULL));
                node = place(sched, q, false, NULL, NULL);
                assert_string_equal(node, "a");
                free(node);
                xp_pod_free(q);
        }
        /* a finished pod holds nothing */
        pod->status.phase = XP_POD_SUCCEEDED;
        assert_int_equal(xp_sched_pod_add(sched, pod, &err), 0);
        xp_sched_stats(sched, &st);
        assert_int_equal(st.pods, 0);
        assert_int_equal(xp_sched_pod_remove(sched, "default", "p"), -ENOENT);
        xp_pod_free(pod);

        /* a pod bound without a placement takes the devices the selector would choose */
        add_node(sched, node_json("g", "96", nvidia8_full));
        gpu = simple_pod("g1", "\"nvidia.com/gpu\":\"8\"", "\"nodeName\":\"g\"", NULL);
        assert_int_equal(xp_sched_pod_add(sched, gpu, &err), 0);
        pod = simple_pod("g2", "\"nvidia.com/gpu\":\"1\"", NULL, NULL);
        assert_null(place(sched, pod, false, NULL, &reason));
        assert_string_equal(reason, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
        free(reason);
        assert_int_equal(xp_sched_pod_remove(sched, "default", "g1"), 0);
        node = place(sched, pod, false, NULL, NULL);
        assert_string_equal(node, "g");
        free(node);
        /* a placement for another node than spec.nodeName is refused */
        assert_int_equal(
            xp_strmap_set(&gpu->metadata.annotations, XP_PLACEMENT_ANNOTATION, "{\"node\":\"a\"}"),
            0);
        assert_int_equal(xp_sched_pod_add(sched, gpu, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "metadata.annotations[xpool.io/placement]: node a differs from spec.nodeName g");
        xp_sched_stats(sched, &st);
        assert_int_equal(st.pods, 0);
        xp_pod_free(gpu);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* ---- determinism --------------------------------------------------------------------------- */

static void run_sequence(uint64_t seed, char out[40][16])
{
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, seed);

        for (int i = 0; i < 10; i++) {
                char name[16];
                snprintf(name, sizeof(name), "n%d", i);
                add_node(sched, node_json(name, "96", nvidia8_full));
        }
        for (int i = 0; i < 40; i++) {
                char name[16];
                struct xp_pod *pod;
                char *node;
                snprintf(name, sizeof(name), "p%d", i);
                pod = simple_pod(name,
                                 i % 2 ? "\"nvidia.com/gpu\":\"250m\"" : "\"nvidia.com/gpu\":\"1\"",
                                 NULL,
                                 NULL);
                node = place(sched, pod, true, NULL, NULL);
                snprintf(out[i], 16, "%s", node);
                free(node);
                xp_pod_free(pod);
        }
        xp_sched_free(sched);
}

static void deterministic_for_a_seed(void **state)
{
        char a[40][16], b[40][16], c[40][16];
        bool differ = false;

        (void)state;
        run_sequence(42, a);
        run_sequence(42, b);
        run_sequence(43, c);
        for (int i = 0; i < 40; i++) {
                assert_string_equal(a[i], b[i]);
                differ = differ || strcmp(a[i], c[i]) != 0;
        }
        assert_true(differ);
}

/* ---- verdicts for a scheduler extender ------------------------------------------------------ */

static void evaluate(struct xp_sched *sched,
                     struct xp_pod *pod,
                     const char *const *names,
                     size_t n,
                     struct xp_sched_verdicts *set)
{
        struct xp_error err = {0};

        if (xp_sched_evaluate(sched, pod, names, n, XP_SCHED_EVALUATE_SCORE, set, &err) < 0)
                fail_msg("evaluate: %s", err.msg);
        assert_int_equal(set->n, n);
}

/* The node with best set, which must also score highest. */
static const char *best_of(const char *const *names, size_t n, const struct xp_sched_verdict *v)
{
        const char *best = NULL;
        int64_t top = -1;

        for (size_t i = 0; i < n; i++) {
                if (v[i].fit == 1 && v[i].score > top)
                        top = v[i].score;
                if (v[i].best) {
                        assert_null(best);
                        best = names[i];
                }
        }
        for (size_t i = 0; best && i < n; i++)
                if (v[i].best)
                        assert_int_equal(v[i].score, top);
        return best;
}

static void verdicts_match_placement(void **state)
{
        static const char *const names[] = {"pairs", "islands", "cpu", "tainted", "gone", "pairs"};
        static const char *const pods[] = {
            "\"nvidia.com/gpu\":\"2\"",
            "\"nvidia.com/gpu\":\"4\"",
            "\"nvidia.com/gpu\":\"500m\"",
            "\"xpool.io/accelerator\":\"1\"",
            "\"cpu\":\"2\"",
        };
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 7);
        json_t *tainted = node_json("tainted", "96", nvidia8_full);
        struct xp_sched_verdicts set;
        struct xp_sched_verdict *v;
        struct xp_pod *used;

        (void)state;
        json_object_set_new(tainted,
                            "spec",
                            json_pack("{s:[{s:s, s:s, s:s}]}",
                                      "taints",
                                      "key",
                                      "dedicated",
                                      "value",
                                      "infer",
                                      "effect",
                                      "NoSchedule"));
        add_node(sched, node_json("pairs", "96", nvidia8_pairs));
        add_node(sched, node_json("islands", "96", nvidia8_islands));
        add_node(sched, node_json("cpu", "96", NULL));
        add_node(sched, tainted);
        /* one GPU of the islands box in use: 4 GPUs should take the other island whole */
        used = simple_pod("used", "\"nvidia.com/gpu\":\"1\"", NULL, NULL);
        free(place(sched, used, true, NULL, NULL));
        for (size_t p = 0; p < XP_ELEMENTSOF(pods); p++) {
                struct xp_pod *pod = simple_pod("p", pods[p], NULL, NULL);
                char *chosen;

                evaluate(sched, pod, names, 6, &set);
                v = set.items;
                /* the node place() chooses among the same nodes is the verdicts' best */
                chosen = place(sched, pod, false, NULL, NULL);
                assert_non_null(chosen);
                assert_string_equal(best_of(names, 6, v), chosen);
                free(chosen);
                assert_int_equal(v[3].fit, 0);
                assert_true(v[3].unresolvable);
                assert_string_equal(v[3].reason,
                                    "node(s) had untolerated taint {dedicated: infer}");
                assert_int_equal(v[4].fit, -ENOENT);
                assert_null(v[4].reason);
                /* a name asked twice gets the first one's verdict, and only one is best */
                assert_int_equal(v[5].fit, v[0].fit);
                assert_int_equal(v[5].score, v[0].score);
                assert_false(v[5].best);
                if (p < 4) {
                        assert_int_equal(v[2].fit, 0);
                        assert_false(v[2].unresolvable);
                        assert_non_null(strstr(v[2].reason, "Insufficient "));
                } else {
                        assert_int_equal(v[2].fit, 1);
                }
                xp_sched_verdicts_done(&set);
                xp_pod_free(pod);
        }
        xp_pod_free(used);
        xp_sched_free(sched);
}

static void verdicts_name_every_reason(void **state)
{
        static const char *const names[] = {"a", "b"};
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_pod *pod = simple_pod("q", "\"cpu\":\"200\",\"memory\":\"1Ti\"", NULL, NULL);
        struct xp_sched_verdicts set;
        struct xp_sched_verdict *v;
        struct xp_error err = {0};

        (void)state;
        add_node(sched, node_json("a", "96", NULL));
        /* filters only: nothing scored, nothing best */
        assert_int_equal(xp_sched_evaluate(sched, pod, names, 2, 0, &set, &err), 0);
        v = set.items;
        assert_int_equal(v[0].fit, 0);
        assert_string_equal(v[0].reason, "Insufficient cpu, Insufficient memory");
        assert_false(v[0].best);
        assert_int_equal(v[1].fit, -ENOENT);
        xp_sched_verdicts_done(&set);
        xp_pod_free(pod);
        /* a request the core cannot understand is an error, not a verdict */
        pod = simple_pod("bad",
                         "\"xpool.io/accelerator\":\"1\"",
                         NULL,
                         "\"annotations\":{\"xpool.io/accelerator-kinds\":\"gpu,toaster\"}");
        assert_int_equal(xp_sched_evaluate(sched, pod, names, 2, 0, &set, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "xpool.io/accelerator-kinds"));
        xp_pod_free(pod);
        xp_sched_free(sched);
}

/* The names of one call are kept for the next (resolve.c): the same names asked again must see
 * nodes added, removed and re-added since, and a different list is looked up afresh. */
static void verdicts_follow_node_changes(void **state)
{
        static const char *const names[] = {"a", "late", "b"};
        static const char *const other[] = {"b", "late"};
        struct xp_sched *sched = new_sched(XP_SCHED_SPREAD, 1);
        struct xp_pod *pod = simple_pod("q", "\"cpu\":\"2\"", NULL, NULL);
        struct xp_sched_verdicts set;

        (void)state;
        add_node(sched, node_json("a", "96", NULL));
        add_node(sched, node_json("b", "96", NULL));
        evaluate(sched, pod, names, 3, &set);
        assert_int_equal(set.items[1].fit, -ENOENT);
        xp_sched_verdicts_done(&set);
        add_node(sched, node_json("late", "96", NULL));
        evaluate(sched, pod, names, 3, &set);
        assert_int_equal(set.items[0].fit, 1);
        assert_int_equal(set.items[1].fit, 1);
        assert_int_equal(set.items[2].fit, 1);
        xp_sched_verdicts_done(&set);
        assert_int_equal(xp_sched_node_remove(sched, "a"), 0);
        evaluate(sched, pod, names, 3, &set);
        assert_int_equal(set.items[0].fit, -ENOENT);
        assert_int_equal(set.items[1].fit, 1);
        xp_sched_verdicts_done(&set);
        add_node(sched, node_json("a", "1", NULL));
        evaluate(sched, pod, names, 3, &set);
        assert_int_equal(set.items[0].fit, 0);
        assert_string_equal(set.items[0].reason, "Insufficient cpu");
        xp_sched_verdicts_done(&set);
        evaluate(sched, pod, other, 2, &set);
        assert_int_equal(set.items[0].fit, 1);
        assert_int_equal(set.items[1].fit, 1);
        xp_sched_verdicts_done(&set);
        xp_pod_free(pod);
        xp_sched_free(sched);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(two_gpus_on_nvlink_pair),
            cmocka_unit_test(four_gpus_in_one_island),
            cmocka_unit_test(reasons_like_kube),
            cmocka_unit_test(unschedulable_and_not_ready),
            cmocka_unit_test(taints_and_tolerations),
            cmocka_unit_test(affinity_operators),
            cmocka_unit_test(anti_affinity_spreads_replicas),
            cmocka_unit_test(existing_anti_affinity_is_symmetric),
            cmocka_unit_test(anti_affinity_index_and_fallback),
            cmocka_unit_test(spread_and_binpack),
            cmocka_unit_test(init_containers_and_pods_limit),
            cmocka_unit_test(sidecars_count_with_the_containers),
            cmocka_unit_test(fractions_share_devices),
            cmocka_unit_test(memory_shares),
            cmocka_unit_test(memory_share_without_annotation),
            cmocka_unit_test(accelerator_memory_shares),
            cmocka_unit_test(accelerator_requests),
            cmocka_unit_test(cpus_follow_devices),
            cmocka_unit_test(placement_round_trip),
            cmocka_unit_test(incremental_changes),
            cmocka_unit_test(deterministic_for_a_seed),
            cmocka_unit_test(verdicts_match_placement),
            cmocka_unit_test(verdicts_name_every_reason),
            cmocka_unit_test(verdicts_follow_node_changes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
