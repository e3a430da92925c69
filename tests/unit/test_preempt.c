/* SPDX-License-Identifier: Apache-2.0 */
/* Preemption in the scheduler core on hand-made clusters: the documented victims (lowest
 * priority, fewest, the NVLink island freed), gangs evicted whole, preemptionPolicy Never, the
 * devices held for the nominated pod, and a gang as preemptor (all its members or none). */
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
#include "xpool/preempt.h"
#include "xpool/sched.h"
#include "xpool/strmap.h"

/* A node with 8 GPUs in two NVLink islands: the even ones and the odd ones. */
static void add_node(struct xp_sched *sched, const char *name, const char *taint)
{
        json_t *devices = json_array(), *links = json_array(), *node;
        struct xp_node *decoded = NULL;
        struct xp_error err = {0};

        for (int i = 0; i < 8; i++) {
                json_array_append_new(devices,
                                      json_pack("{s:o, s:s, s:s, s:s, s:i, s:i, s:I}",
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
                                                "numaNode",
                                                0,
                                                "memoryBytes",
                                                (json_int_t)(80LL << 30)));
                for (int j = 0; j < i; j++) {
                        json_t *l = json_pack("{s:o, s:o, s:s}",
                                              "a",
                                              json_sprintf("%s-gpu-%d", name, j),
                                              "b",
                                              json_sprintf("%s-gpu-%d", name, i),
                                              "level",
                                              i % 2 == j % 2 ? "NVLink" : "SYS");
                        if (i % 2 == j % 2)
                                json_object_set_new(l, "nvlinks", json_integer(12));
                        json_array_append_new(links, l);
                }
        }
        node = json_pack("{s:{s:s, s:{s:s}}, s:{}, s:{s:{s:s, s:s, s:s, s:s}, s:[{s:s, s:s}], "
                         "s:{s:[{s:i, s:s}], s:o, s:o}}}",
                         "metadata",
                         "name",
                         name,
                         "labels",
                         "kubernetes.io/hostname",
                         name,
                         "spec",
                         "status",
                         "allocatable",
                         "cpu",
                         "96",
                         "memory",
                         "512Gi",
                         "pods",
                         "110",
                         "nvidia.com/gpu",
                         "8",
                         "conditions",
                         "type",
                         "Ready",
                         "status",
                         "True",
                         "xpool",
                         "numaNodes",
                         "id",
                         0,
                         "cpus",
                         "0-95",
                         "devices",
                         devices,
                         "links",
                         links);
        assert_non_null(node);
        if (taint)
                json_object_set_new(
                    json_object_get(node, "spec"),
                    "taints",
                    json_pack("[{s:s, s:s}]", "key", taint, "effect", "NoSchedule"));
        if (xp_node_from_json(node, NULL, XP_DECODE_TRUSTED, &decoded, &err) < 0)
                fail_msg("node: %s", err.msg);
        assert_int_equal(xp_sched_node_set(sched, decoded, &err), 0);
        xp_node_free(decoded);
        json_decref(node);
}

/*
 * A pod of `gpus` GPUs at priority. node NULL: pending; else bound there holding the GPUs listed
 * in devs ("0,2,4,6"). meta: extra metadata members.
 */
static struct xp_pod *
pod(const char *name, int gpus, int priority, const char *node, const char *devs, const char *meta)
{
        char *text = NULL, *placement = NULL, *devlist = NULL;
        struct xp_pod *p = NULL;
        struct xp_error err = {0};
        size_t len = 0;
        FILE *f;

        if (node) {
                f = open_memstream(&devlist, &len);
                assert_non_null(f);
                for (const char *d = devs; *d; d++) {
                        if (*d == ',')
                                continue;
                        fprintf(
                            f,
                            "%s{\\\"resource\\\":\\\"nvidia.com/gpu\\\",\\\"id\\\":\\\"%s-gpu-%c\\\",\\\"index\\\":%c,\\\"milli\\\":1000}",
                            d == devs ? "" : ",",
                            node,
                            *d,
                            *d);
                }
                fclose(f);
                assert_true(
                    asprintf(
                        &placement,
                        ",\"annotations\":{\"xpool.io/placement\":\"{\\\"node\\\":\\\"%s\\\",\\\"devices\\\":[%s]}\"}",
                        node,
                        devlist) > 0);
        }
        assert_true(
            asprintf(
                &text,
                "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"%s%s%s},"
                "\"spec\":{\"priority\":%d,%s%s%s\"containers\":[{\"name\":\"c\",\"image\":\"i\","
                "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]}}",
                name,
                placement ? placement : "",
                meta ? "," : "",
                meta ? meta : "",
                priority,
                node ? "\"nodeName\":\"" : "",
                node ? node : "",
                node ? "\"," : "",
                gpus) > 0);
        if (xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &p, &err) < 0)
                fail_msg("pod: %s in %s", err.msg, text);
        free(text);
        free(placement);
        free(devlist);
        return p;
}

static void bind(struct xp_sched *sched,
                 const char *name,
                 int gpus,
                 int priority,
                 const char *node,
                 const char *devs,
                 const char *meta)
{
        struct xp_pod *p = pod(name, gpus, priority, node, devs, meta);
        struct xp_error err = {0};

        if (xp_sched_pod_add(sched, p, &err) < 0)
                fail_msg("pod_add: %s", err.msg);
        xp_pod_free(p);
}

static struct xp_sched *cluster(void)
{
        struct xp_sched_options options = {.profile = XP_SCHED_BINPACK, .seed = 1};
        struct xp_sched *sched = NULL;

        assert_int_equal(xp_sched_new(&options, &sched), 0);
        return sched;
}

/* The victims' names, sorted and joined by ",". */
static char *names(const struct xp_preemption *pre)
{
        char *out = NULL, *sorted[64];
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        assert_true(pre->n_victims < 64);
        for (size_t i = 0; i < pre->n_victims; i++)
                sorted[i] = pre->victims[i].name;
        for (size_t i = 0; i < pre->n_victims; i++)
                for (size_t j = i + 1; j < pre->n_victims; j++)
                        if (strcmp(sorted[j], sorted[i]) < 0) {
                                char *t = sorted[i];
                                sorted[i] = sorted[j];
                                sorted[j] = t;
                        }
        for (size_t i = 0; i < pre->n_victims; i++)
                fprintf(f, "%s%s", i ? "," : "", sorted[i]);
        fclose(f);
        return out;
}

static int preempt(struct xp_sched *sched, struct xp_pod *p, struct xp_preemption *ret)
{
        struct xp_error err = {0};
        int r = xp_sched_preempt(sched, p, NULL, ret, &err);

        if (r < 0)
                fail_msg("preempt: %s", err.msg);
        return r;
}

static void expect(struct xp_sched *sched, struct xp_pod *p, const char *node, const char *victims)
{
        struct xp_preemption pre = {0};
        char *got;

        assert_int_equal(preempt(sched, p, &pre), 1);
        assert_string_equal(pre.node, node);
        got = names(&pre);
        assert_string_equal(got, victims);
        free(got);
        xp_preemption_done(&pre);
}

/*
 * The documented order: lowest highest priority first. n1 holds one 4-GPU pod of priority 5 (one
 * victim), n2 four 1-GPU pods of priority 0 on its even island (four victims) and a 4-GPU pod of
 * priority 7 on its odd one: n2's four low pods go, though they are more.
 */
static void lowest_priority_first(void **state)
{
        (void)state;
        struct xp_sched *sched = cluster();
        struct xp_pod *p;

        add_node(sched, "n1", NULL);
        add_node(sched, "n2", NULL);
        bind(sched, "mid", 4, 5, "n1", "0,2,4,6", NULL);
        bind(sched, "n1-busy", 4, 9, "n1", "1,3,5,7", NULL);
        bind(sched, "low-0", 1, 0, "n2", "0", NULL);
        bind(sched, "low-2", 1, 0, "n2", "2", NULL);
        bind(sched, "low-4", 1, 0, "n2", "4", NULL);
        bind(sched, "low-6", 1, 0, "n2", "6", NULL);
        bind(sched, "high", 4, 7, "n2", "1,3,5,7", NULL);
        p = pod("train", 4, 8, NULL, NULL, NULL);
        expect(sched, p, "n2", "low-0,low-2,low-4,low-6");
        xp_pod_free(p);
        xp_sched_free(sched);
}

/*
 * Fewest victims, then the island: at equal priority, n1's one 4-GPU pod on the odd island goes
 * rather than the four 1-GPU pods of its even island; and on a node of eight 1-GPU pods, the four
 * evicted share one NVLink island (every set of four is weighed), so the pod's devices do.
 */
static void fewest_then_island(void **state)
{
        (void)state;
        struct xp_sched *sched = cluster();
        struct xp_preemption pre = {0};
        struct xp_pod *p;
        char name[16], dev[4];

        add_node(sched, "n1", NULL);
        for (int i = 0; i < 8; i += 2) {
                snprintf(name, sizeof(name), "one-%d", i);
                snprintf(dev, sizeof(dev), "%d", i);
                bind(sched, name, 1, 0, "n1", dev, NULL);
        }
        bind(sched, "four", 4, 0, "n1", "1,3,5,7", NULL);
        p = pod("train", 4, 10, NULL, NULL, NULL);
        expect(sched, p, "n1", "four");

        xp_sched_free(sched);
        sched = cluster();
        add_node(sched, "n1", NULL);
        for (int i = 0; i < 8; i++) {
                snprintf(name, sizeof(name), "one-%d", i);
                snprintf(dev, sizeof(dev), "%d", i);
                bind(sched, name, 1, 0, "n1", dev, NULL);
        }
        assert_int_equal(preempt(sched, p, &pre), 1);
        assert_int_equal(pre.n_victims, 4);
        for (size_t i = 1; i < pre.n_victims; i++)
                assert_int_equal(pre.victims[i].name[4] % 2, pre.victims[0].name[4] % 2);
        assert_int_equal(pre.placement.devices.n, 4);
        for (size_t i = 0; i < pre.placement.devices.n; i++)
                assert_int_equal(pre.placement.devices.items[i].index % 2,
                                 pre.victims[0].name[4] % 2);
        xp_preemption_done(&pre);
        xp_pod_free(p);
        xp_sched_free(sched);
}

/* A gang goes whole: its member on n2 is a victim of a preemption on n1. */
static void gang_whole(void **state)
{
        (void)state;
        struct xp_sched *sched = cluster();
        struct xp_pod *p;

        add_node(sched, "n1", NULL);
        add_node(sched, "n2", NULL);
        bind(sched, "g-0", 4, 0, "n1", "0,2,4,6", "\"labels\":{\"xpool.io/gang\":\"g\"}");
        bind(sched, "g-1", 4, 0, "n1", "1,3,5,7", "\"labels\":{\"xpool.io/gang\":\"g\"}");
        bind(sched, "g-2", 4, 0, "n2", "0,2,4,6", "\"labels\":{\"xpool.io/gang\":\"g\"}");
        bind(sched, "solo", 4, 3, "n2", "1,3,5,7", NULL);
        p = pod("big", 8, 10, NULL, NULL, NULL);
        expect(sched, p, "n1", "g-0,g-1,g-2");
        xp_pod_free(p);
        /* for 4 GPUs the gang (priority 0) still goes before solo (priority 3), though it is
         * three victims to one; on n2, where its member frees exactly the 4 GPUs needed, rather
         * than on n1, where 4 freed GPUs would stay idle (fragmentation left behind) */
        p = pod("small", 4, 10, NULL, NULL, NULL);
        expect(sched, p, "n2", "g-0,g-1,g-2");
        xp_pod_free(p);
        xp_sched_free(sched);
}

/* Nobody is evicted for a pod whose policy is Never, nor pods of its own priority, nor on a node
 * whose taint refuses it, nor when it fits as it is. */
static void who_is_never_a_victim(void **state)
{
        (void)state;
        struct xp_sched *sched = cluster();
        struct xp_preemption pre = {0};
        struct xp_pod *p;

        add_node(sched, "n1", NULL);
        add_node(sched, "tainted", "dedicated");
        p = pod("fits", 8, 0, NULL, NULL, NULL);
        assert_int_equal(preempt(sched, p, &pre), 0);
        xp_pod_free(p);
        bind(sched, "peer", 8, 5, "n1", "01234567", NULL);
        bind(sched, "cheap", 8, 0, "tainted", "01234567", NULL);
        p = pod("same", 8, 5, NULL, NULL, NULL);
        assert_int_equal(preempt(sched, p, &pre), 0);
        xp_pod_free(p);
        p = pod("never", 8, 100, NULL, NULL, NULL);
        if (!p->spec.extra)
                p->spec.extra = json_object();
        json_object_set_new(p->spec.extra, "preemptionPolicy", json_string("Never"));
        assert_int_equal(preempt(sched, p, &pre), 0);
        json_object_set_new(p->spec.extra, "preemptionPolicy", json_string("PreemptLowerPriority"));
        expect(sched, p, "n1", "peer"); /* not "cheap" on the tainted node */
        xp_pod_free(p);
        xp_sched_free(sched);
}

/* The freed devices are held for the nominated pod: another pod cannot take them. */
static void held_for_the_nominee(void **state)
{
        (void)state;
        struct xp_sched *sched = cluster();
        struct xp_preemption pre = {0};
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        struct xp_pod *p, *other;
        char *reason = NULL;

        add_node(sched, "n1", NULL);
        bind(sched, "low", 4, 0, "n1", "0,2,4,6", NULL);
        bind(sched, "keep", 4, 9, "n1", "1,3,5,7", NULL);
        p = pod("train", 4, 5, NULL, NULL, NULL);
        assert_int_equal(preempt(sched, p, &pre), 1);
        assert_int_equal(xp_sched_hold(sched, p, &pre.placement, &err), 0);
        assert_int_equal(xp_sched_pod_remove(sched, "default", "low"), 0); /* the victim went */
        other = pod("other", 4, 5, NULL, NULL, NULL);
        assert_int_equal(xp_sched_place(sched, other, &pl, &reason, &err), 0);
        assert_string_equal(reason, "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
        free(reason);
        /* the nominee's hold is not a victim of another preemption at its own priority either */
        assert_int_equal(xp_sched_preempt(sched, other, NULL, &(struct xp_preemption){0}, &err), 0);
        assert_int_equal(xp_sched_release(sched, "default", "train"), 0);
        assert_int_equal(xp_sched_place(sched, p, &pl, &reason, &err), 1);
        assert_int_equal(pl.devices.n, 4);
        assert_int_equal(pl.devices.items[0].index % 2, 0);
        xp_placement_done(&pl);
        assert_int_equal(xp_sched_release(sched, "default", "train"), -ENOENT);
        xp_preemption_done(&pre);
        xp_pod_free(p);
        xp_pod_free(other);
        xp_sched_free(sched);
}

/* A member of a gang of n 8-GPU pods at priority 10 (pods[i], caller frees). */
static void gang_of(struct xp_pod **pods, size_t n)
{
        char name[16];

        for (size_t i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "g-%zu", i);
                pods[i] = pod(name, 8, 10, NULL, NULL, "\"labels\":{\"xpool.io/gang\":\"g\"}");
        }
}

/*
 * A gang as preemptor: two 8-GPU members take n1 and n2 (each its own node: the second does not
 * count on what the first freed), and keep (priority 20) stays. Three members cannot all have
 * room (keep is not a victim): nothing is chosen for any. The snapshot ends as it began.
 */
static void gang_preempts_all_or_nothing(void **state)
{
        (void)state;
        struct xp_sched *sched = cluster();
        struct xp_preemption pre[3];
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        struct xp_pod *pods[3], *probe;
        char *reason = NULL, *got;

        add_node(sched, "n1", NULL);
        add_node(sched, "n2", NULL);
        add_node(sched, "n3", NULL);
        bind(sched, "low-a", 8, 0, "n1", "01234567", NULL);
        bind(sched, "low-b", 8, 0, "n2", "01234567", NULL);
        bind(sched, "keep", 8, 20, "n3", "01234567", NULL);
        gang_of(pods, 3);
        assert_int_equal(
            xp_sched_preempt_gang(sched, (const struct xp_pod *const *)pods, 2, NULL, pre, &err),
            1);
        assert_string_not_equal(pre[0].node, pre[1].node);
        got = names(&pre[0]);
        assert_string_equal(got, strcmp(pre[0].node, "n1") == 0 ? "low-a" : "low-b");
        free(got);
        got = names(&pre[1]);
        assert_string_equal(got, strcmp(pre[1].node, "n1") == 0 ? "low-a" : "low-b");
        free(got);
        assert_int_equal(pre[0].placement.devices.n, 8);
        xp_preemption_done(&pre[0]);
        xp_preemption_done(&pre[1]);
        assert_int_equal(
            xp_sched_preempt_gang(sched, (const struct xp_pod *const *)pods, 3, NULL, pre, &err),
            0);
        for (size_t i = 0; i < 3; i++) {
                assert_null(pre[i].node);
                assert_int_equal(pre[i].n_victims, 0);
                assert_int_equal(xp_sched_release(sched, "default", pods[i]->metadata.name),
                                 -ENOENT);
        }
        /* nothing held, nobody taken out: an 8-GPU pod of priority 0 still fits nowhere */
        probe = pod("probe", 8, 0, NULL, NULL, NULL);
        assert_int_equal(xp_sched_place(sched, probe, &pl, &reason, &err), 0);
        free(reason);
        xp_pod_free(probe);
        for (size_t i = 0; i < 3; i++)
                xp_pod_free(pods[i]);
        xp_sched_free(sched);
}

/* The test's budget: a pod labelled app=db is selected by one PodDisruptionBudget, which allows
 * *userdata disruptions (none when NULL). */
static size_t db_budget(void *userdata,
                        const struct xp_sched_placed *victim,
                        struct xp_sched_budget *ret,
                        size_t max)
{
        const char *app = xp_strmap_get(victim->labels, "app");

        if (!app || strcmp(app, "db") != 0 || max < 1)
                return 0;
        ret[0] = (struct xp_sched_budget){.id = 7, .allowed = userdata ? *(int64_t *)userdata : 0};
        return 1;
}

static void expect_allowing(struct xp_sched *sched,
                            struct xp_pod *p,
                            int64_t *allowed,
                            const char *node,
                            const char *victims)
{
        struct xp_preempt_options options = {.budgets_of = db_budget, .budget_userdata = allowed};
        struct xp_preemption pre = {0};
        struct xp_error err = {0};
        char *got;

        assert_int_equal(xp_sched_preempt(sched, p, &options, &pre, &err), 1);
        assert_string_equal(pre.node, node);
        got = names(&pre);
        assert_string_equal(got, victims);
        free(got);
        xp_preemption_done(&pre);
}

static void
expect_with_budgets(struct xp_sched *sched, struct xp_pod *p, const char *node, const char *victims)
{
        expect_allowing(sched, p, NULL, node, victims);
}

/*
 * One choice's victims use up a budget's allowance one by one, as kube-scheduler counts them: a
 * 2-GPU pod needs both app=db pods of priority 0 on n1, or both unguarded pods of priority 5 on
 * n2. With an allowance of 2 (or more) n1's go; with 1, the second breaks the budget and n2's go
 * (counting only budgets already at 0 chose n1 there); with 0, both would break it. A pod that
 * needs one victim takes n1's within an allowance of 1.
 */
static void allowance_counts_each_victim(void **state)
{
        (void)state;
        const char *db = "\"labels\":{\"app\":\"db\"}";
        struct xp_sched *sched = cluster();
        struct xp_pod *two = pod("train", 2, 10, NULL, NULL, NULL);
        struct xp_pod *one = pod("infer", 1, 10, NULL, NULL, NULL);
        int64_t allowed;

        add_node(sched, "n1", NULL);
        add_node(sched, "n2", NULL);
        bind(sched, "big-1", 6, 20, "n1", "0,1,2,3,4,6", NULL);
        bind(sched, "db-a", 1, 0, "n1", "5", db);
        bind(sched, "db-b", 1, 0, "n1", "7", db);
        bind(sched, "big-2", 6, 20, "n2", "0,1,2,3,4,6", NULL);
        bind(sched, "web-a", 1, 5, "n2", "5", NULL);
        bind(sched, "web-b", 1, 5, "n2", "7", NULL);
        allowed = 2;
        expect_allowing(sched, two, &allowed, "n1", "db-a,db-b");
        allowed = 1;
        expect_allowing(sched, two, &allowed, "n2", "web-a,web-b");
        expect_allowing(sched, one, &allowed, "n1", "db-a");
        allowed = 0;
        expect_allowing(sched, two, &allowed, "n2", "web-a,web-b");
        expect_allowing(sched, one, &allowed, "n2", "web-a");
        xp_pod_free(two);
        xp_pod_free(one);
        xp_sched_free(sched);
}

/*
 * Disruption budgets first, as kube-scheduler's candidate choice: a guarded pod of priority 0 on
 * n1 stays and n2's unguarded pod of priority 5 goes; on one node of eight 1-GPU pods, the four
 * unguarded ones (the odd island) go; with nothing but guarded pods, they go all the same.
 */
static void budgets_steer_the_victims(void **state)
{
        (void)state;
        const char *db = "\"labels\":{\"app\":\"db\"}";
        struct xp_sched *sched = cluster();
        struct xp_pod *p = pod("train", 8, 10, NULL, NULL, NULL);
        char name[16], dev[4];

        add_node(sched, "n1", NULL);
        add_node(sched, "n2", NULL);
        bind(sched, "guarded", 8, 0, "n1", "01234567", db);
        bind(sched, "free", 8, 5, "n2", "01234567", NULL);
        expect(sched, p, "n1", "guarded");
        expect_with_budgets(sched, p, "n2", "free");
        xp_sched_free(sched);

        sched = cluster();
        add_node(sched, "n1", NULL);
        for (int i = 0; i < 8; i++) {
                snprintf(name, sizeof(name), "one-%d", i);
                snprintf(dev, sizeof(dev), "%d", i);
                bind(sched, name, 1, 0, "n1", dev, i % 2 ? NULL : db);
        }
        xp_pod_free(p);
        p = pod("train", 4, 10, NULL, NULL, NULL);
        expect_with_budgets(sched, p, "n1", "one-1,one-3,one-5,one-7");
        xp_sched_free(sched);

        sched = cluster();
        add_node(sched, "n1", NULL);
        bind(sched, "guarded", 8, 0, "n1", "01234567", db);
        expect_with_budgets(sched, p, "n1", "guarded");
        xp_pod_free(p);
        xp_sched_free(sched);
}

static uint64_t nodes_searched(const struct xp_sched *sched)
{
        struct xp_sched_stats stats;

        xp_sched_stats(sched, &stats);
        return stats.preempt_nodes_searched;
}

/*
 * Only pods of lower priority may go, so a node whose pods are all of the preemptor's priority or
 * above is not searched at all: n1 is full of equals, n2 holds one lower pod. Once that one is
 * gone, no node is searched and nothing is evicted.
 */
static void equals_are_not_searched(void **state)
{
        (void)state;
        struct xp_sched *sched = cluster();
        struct xp_preemption pre = {0};
        struct xp_error err = {0};
        struct xp_pod *p = pod("train", 4, 5, NULL, NULL, NULL);
        char name[16];

        add_node(sched, "n1", NULL);
        add_node(sched, "n2", NULL);
        for (int i = 0; i < 8; i++) {
                char dev[2] = {(char)('0' + i), 0};
                snprintf(name, sizeof(name), "equal-%d", i);
                bind(sched, name, 1, 5, "n1", dev, NULL);
        }
        bind(sched, "high", 4, 9, "n2", "1,3,5,7", NULL);
        bind(sched, "low", 4, 1, "n2", "0,2,4,6", NULL);
        expect(sched, p, "n2", "low");
        assert_int_equal(nodes_searched(sched), 1);

        assert_int_equal(xp_sched_pod_remove(sched, "default", "low"), 0);
        bind(sched, "mid", 4, 5, "n2", "0,2,4,6", NULL);
        assert_int_equal(xp_sched_preempt(sched, p, NULL, &pre, &err), 0);
        assert_int_equal(nodes_searched(sched), 1);

        /* a lower pod again: searched again (the index follows the pods both ways) */
        assert_int_equal(xp_sched_pod_remove(sched, "default", "mid"), 0);
        bind(sched, "low-again", 4, 2, "n2", "0,2,4,6", NULL);
        expect(sched, p, "n2", "low-again");
        assert_int_equal(nodes_searched(sched), 2);
        xp_pod_free(p);
        xp_sched_free(sched);
}

/*
 * The refusal's count of nodes no eviction could help is the pod's own, not the last failed
 * placement's: picky (no toleration of n1's taint) failed last, and tolerant, asked about without
 * a placement of its own, finds both nodes merely full.
 */
static void refusal_counts_the_pod_asked_about(void **state)
{
        (void)state;
        struct xp_sched *sched = cluster();
        static const char tolerant_text[] =
            "{\"metadata\":{\"name\":\"tolerant\",\"namespace\":\"default\"},"
            "\"spec\":{\"priority\":5,\"tolerations\":[{\"key\":\"dedicated\",\"operator\":"
            "\"Exists\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\","
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}";
        struct xp_pod *picky = pod("picky", 1, 5, NULL, NULL, NULL), *tolerant = NULL;
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        char *reason = NULL, *said = NULL, name[16];

        add_node(sched, "n1", "dedicated");
        add_node(sched, "n2", NULL);
        for (int i = 0; i < 16; i++) {
                char dev[2] = {(char)('0' + i % 8), 0};
                snprintf(name, sizeof(name), "full-%d", i);
                bind(sched, name, 1, 5, i < 8 ? "n1" : "n2", dev, NULL);
        }
        assert_int_equal(
            xp_pod_from_json_text(
                tolerant_text, strlen(tolerant_text), "pod", XP_DECODE_TRUSTED, &tolerant, &err),
            0);
        assert_int_equal(xp_sched_place(sched, picky, &pl, &reason, &err), 0);
        assert_int_equal(xp_sched_preempt_refusal(sched, tolerant, &said), 0);
        assert_string_equal(
            said,
            "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.");
        free(said);
        assert_int_equal(xp_sched_preempt_refusal(sched, picky, &said), 0);
        assert_string_equal(
            said,
            "preemption: 0/2 nodes are available: 1 No preemption victims found for "
            "incoming pod, 1 Preemption is not helpful for scheduling.");
        free(said);
        free(reason);
        xp_pod_free(picky);
        xp_pod_free(tolerant);
        xp_sched_free(sched);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(lowest_priority_first),
            cmocka_unit_test(fewest_then_island),
            cmocka_unit_test(gang_whole),
            cmocka_unit_test(who_is_never_a_victim),
            cmocka_unit_test(held_for_the_nominee),
            cmocka_unit_test(gang_preempts_all_or_nothing),
            cmocka_unit_test(equals_are_not_searched),
            cmocka_unit_test(budgets_steer_the_victims),
            cmocka_unit_test(allowance_counts_each_victim),
            cmocka_unit_test(refusal_counts_the_pod_asked_about),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
