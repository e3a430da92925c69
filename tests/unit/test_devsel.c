/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/devsel.h"
#include "xpool/macro.h"
#include "xpool/object.h"

#define GIB   ((int64_t)1 << 30)
#define SCALE ((int64_t)1 << 27)

struct topo {
        size_t n;
        struct devsel_device dev[DEVSEL_MAX];
        uint16_t aff[DEVSEL_MAX * DEVSEL_MAX];
};

static void topo_init(struct topo *t, size_t n)
{
        memset(t, 0, sizeof(*t));
        t->n = n;
        for (size_t i = 0; i < n; i++)
                t->dev[i] = (struct devsel_device){
                    .numa = -1, .memory_bytes = 80 * GIB, .used_milli = 0, .healthy = true};
}

static void topo_link(struct topo *t, size_t i, size_t j, int level, int64_t nvlinks)
{
        uint16_t a = devsel_link_affinity(level, nvlinks);

        t->aff[i * t->n + j] = a;
        t->aff[j * t->n + i] = a;
}

static struct devsel_node topo_node(const struct topo *t)
{
        return (struct devsel_node){.n = t->n, .devices = t->dev, .affinity = t->aff};
}

/* NVSwitch: every pair NV12; GPUs 0-3 on NUMA 0, 4-7 on NUMA 1. */
static void dgx(struct topo *t)
{
        topo_init(t, 8);
        for (size_t i = 0; i < 8; i++) {
                t->dev[i].numa = i < 4 ? 0 : 1;
                for (size_t j = i + 1; j < 8; j++)
                        topo_link(t, i, j, XP_LINK_NVLINK, 12);
        }
}

/* Two islands of 4 (NUMA 0 and 1): NV6 for pairs 0-1, 2-3, 4-5, 6-7, NV4 for the other pairs
 * inside an island, SYS across. */
static void islands(struct topo *t)
{
        topo_init(t, 8);
        for (size_t i = 0; i < 8; i++) {
                t->dev[i].numa = (int)(i / 4);
                for (size_t j = i + 1; j < 8; j++) {
                        if (i / 4 != j / 4)
                                topo_link(t, i, j, XP_LINK_SYS, 0);
                        else
                                topo_link(t, i, j, XP_LINK_NVLINK, i / 2 == j / 2 ? 6 : 4);
                }
        }
}

/* PCIe only: 2 switches x 4 GPUs, one switch per NUMA node; PIX within, SYS across. */
static void pcie(struct topo *t)
{
        topo_init(t, 8);
        for (size_t i = 0; i < 8; i++) {
                t->dev[i].numa = (int)(i / 4);
                t->dev[i].memory_bytes = 48 * GIB;
                for (size_t j = i + 1; j < 8; j++)
                        topo_link(t, i, j, i / 4 == j / 4 ? XP_LINK_PIX : XP_LINK_SYS, 0);
        }
}

/* Ascend: 8 NPUs, HCCS full mesh in 2 groups of 4 (link count unknown), SYS across. */
static void ascend(struct topo *t)
{
        topo_init(t, 8);
        for (size_t i = 0; i < 8; i++) {
                t->dev[i].numa = (int)(i / 4);
                t->dev[i].memory_bytes = 64 * GIB;
                for (size_t j = i + 1; j < 8; j++)
                        topo_link(t, i, j, i / 4 == j / 4 ? XP_LINK_NVLINK : XP_LINK_SYS, 0);
        }
}

static int
choose(const struct topo *t, int64_t milli, int numa, int64_t min_memory, struct devsel_result *ret)
{
        struct devsel_node node = topo_node(t);
        struct devsel_request req = {.milli = milli, .min_memory_bytes = min_memory, .numa = numa};

        return devsel_choose(&node, &req, ret);
}

/* Asserts a whole-device choice of exactly the given indices. */
static void expect_whole(
    const struct topo *t, int64_t k, int numa, const size_t *want, struct devsel_result *ret)
{
        assert_int_equal(choose(t, k * 1000, numa, 0, ret), 1);
        assert_int_equal(ret->n, (size_t)k);
        for (size_t i = 0; i < (size_t)k; i++) {
                if (ret->index[i] != want[i])
                        fail_msg("k=%lld: index[%zu] is %zu, want %zu",
                                 (long long)k,
                                 i,
                                 ret->index[i],
                                 want[i]);
                assert_int_equal(ret->milli[i], 1000);
        }
}

static void link_affinity_order(void **state)
{
        (void)state;
        assert_true(devsel_link_affinity(XP_LINK_NVLINK, 1) > devsel_link_affinity(XP_LINK_PIX, 0));
        assert_true(devsel_link_affinity(XP_LINK_NVLINK, 12) >
                    devsel_link_affinity(XP_LINK_NVLINK, 4));
        assert_true(devsel_link_affinity(XP_LINK_PIX, 0) > devsel_link_affinity(XP_LINK_PXB, 0));
        assert_true(devsel_link_affinity(XP_LINK_PXB, 0) > devsel_link_affinity(XP_LINK_PHB, 0));
        assert_true(devsel_link_affinity(XP_LINK_PHB, 0) > devsel_link_affinity(XP_LINK_NODE, 0));
        assert_true(devsel_link_affinity(XP_LINK_NODE, 0) > devsel_link_affinity(XP_LINK_SYS, 0));
        assert_true(devsel_link_affinity(XP_LINK_SYS, 0) > 0);
        assert_int_equal(devsel_link_affinity(XP_LINK_UNSET, 0), 0);
        assert_int_equal(devsel_link_affinity(99, 3), 0);
        assert_int_equal(devsel_link_affinity(-1, 3), 0);
        /* an NVLink of unknown count counts as one link; huge counts saturate */
        assert_int_equal(devsel_link_affinity(XP_LINK_NVLINK, 0),
                         devsel_link_affinity(XP_LINK_NVLINK, 1));
        assert_int_equal(devsel_link_affinity(XP_LINK_NVLINK, INT64_MAX), UINT16_MAX);
        /* the level decides, not the count, below NVLink */
        assert_int_equal(devsel_link_affinity(XP_LINK_PIX, 7),
                         devsel_link_affinity(XP_LINK_PIX, 0));
}

static void dgx_pairs(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        dgx(&t);
        expect_whole(&t, 2, -1, (size_t[]){0, 1}, &r);
        assert_int_equal(r.numa, 0);
        /* within NV12 = 20; cross: 2 devices x 6 free others x 20 */
        assert_int_equal(r.score, 20 * SCALE - 2 * 6 * 20);

        /* every pair is NV12 alike: the pair on one socket wins over 3+4 across sockets */
        t.dev[0].used_milli = t.dev[1].used_milli = t.dev[2].used_milli = 1000;
        expect_whole(&t, 2, -1, (size_t[]){4, 5}, &r);
        assert_int_equal(r.numa, 1);

        dgx(&t);
        expect_whole(&t, 8, -1, (size_t[]){0, 1, 2, 3, 4, 5, 6, 7}, &r);
        assert_int_equal(r.numa, -1);
        assert_int_equal(r.score, 28 * 20 * SCALE);
        expect_whole(&t, 1, -1, (size_t[]){0}, &r);
        assert_int_equal(r.score, -7 * 20);
}

static void islands_whole(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        islands(&t);
        /* the NV6 pair, in the island with the lower indices */
        expect_whole(&t, 2, -1, (size_t[]){0, 1}, &r);
        expect_whole(&t, 4, -1, (size_t[]){0, 1, 2, 3}, &r);
        assert_int_equal(r.numa, 0);
        /* within: 2 x NV6 (14) + 4 x NV4 (12); cross: 4 x 4 SYS */
        assert_int_equal(r.score, (2 * 14 + 4 * 12) * SCALE - 16);
        expect_whole(&t, 3, -1, (size_t[]){0, 1, 2}, &r);

        /* island A partly used: a pair stays in A, 4 take B whole */
        t.dev[0].used_milli = 1000;
        expect_whole(&t, 2, -1, (size_t[]){2, 3}, &r);
        expect_whole(&t, 4, -1, (size_t[]){4, 5, 6, 7}, &r);
        assert_int_equal(r.numa, 1);
        /* one device: the one least connected to what stays free, in A */
        expect_whole(&t, 1, -1, (size_t[]){1}, &r);
        expect_whole(&t, 3, -1, (size_t[]){1, 2, 3}, &r);

        islands(&t);
        t.dev[6].used_milli = 250; /* shared: not free for whole devices */
        expect_whole(&t, 4, -1, (size_t[]){0, 1, 2, 3}, &r);
        expect_whole(&t, 2, -1, (size_t[]){4, 5}, &r);
        /* 5 across both islands: all of the island that is whole stays together */
        expect_whole(&t, 5, -1, (size_t[]){0, 1, 2, 3, 7}, &r);
        assert_int_equal(r.numa, -1);
}

static void pcie_switches(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        pcie(&t);
        expect_whole(&t, 2, -1, (size_t[]){0, 1}, &r);
        assert_int_equal(r.numa, 0);
        expect_whole(&t, 4, -1, (size_t[]){0, 1, 2, 3}, &r);

        t.dev[1].used_milli = 1000;
        /* the switch that is already split gives the pair */
        expect_whole(&t, 2, -1, (size_t[]){0, 2}, &r);
        expect_whole(&t, 4, -1, (size_t[]){4, 5, 6, 7}, &r);

        /* 3 free per switch: 3 + 1 beats 2 + 2 */
        t.dev[5].used_milli = 1000;
        expect_whole(&t, 4, -1, (size_t[]){0, 2, 3, 4}, &r);
        assert_int_equal(r.numa, -1);
        assert_int_equal(r.score, (3 * 5 + 3 * 1) * SCALE - (1 * 5 * 2 + 3 * 2 * 1));
}

static void ascend_groups(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        ascend(&t);
        expect_whole(&t, 4, -1, (size_t[]){0, 1, 2, 3}, &r);
        expect_whole(&t, 2, -1, (size_t[]){0, 1}, &r);
        t.dev[0].used_milli = 1000;
        expect_whole(&t, 4, -1, (size_t[]){4, 5, 6, 7}, &r);
        t.dev[0].used_milli = 0;
        t.dev[5].used_milli = 1000;
        expect_whole(&t, 2, -1, (size_t[]){4, 6}, &r);
        assert_int_equal(r.numa, 1);
        expect_whole(&t, 8 - 1, -1, (size_t[]){0, 1, 2, 3, 4, 6, 7}, &r);
}

static void numa_required(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        pcie(&t);
        expect_whole(&t, 2, 1, (size_t[]){4, 5}, &r);
        assert_int_equal(r.numa, 1);
        expect_whole(&t, 4, 1, (size_t[]){4, 5, 6, 7}, &r);
        assert_int_equal(choose(&t, 5000, 1, 0, &r), 0);
        assert_int_equal(choose(&t, 1000, 2, 0, &r), 0); /* no such node */
        t.dev[4].used_milli = 1000;
        assert_int_equal(choose(&t, 4000, 1, 0, &r), 0);
        expect_whole(&t, 3, 1, (size_t[]){5, 6, 7}, &r);

        /* a device of unknown NUMA node never meets a requirement, and makes the set mixed */
        pcie(&t);
        t.dev[0].numa = -1;
        expect_whole(&t, 3, 0, (size_t[]){1, 2, 3}, &r);
        /* equal links: the switch whose devices all share a known NUMA node wins */
        expect_whole(&t, 4, -1, (size_t[]){4, 5, 6, 7}, &r);
        assert_int_equal(r.numa, 1);
        t.dev[4].used_milli = 1000;
        expect_whole(&t, 4, -1, (size_t[]){0, 1, 2, 3}, &r);
        assert_int_equal(r.numa, -1);
}

static void unhealthy_and_small_skipped(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        islands(&t);
        t.dev[0].healthy = false;
        expect_whole(&t, 4, -1, (size_t[]){4, 5, 6, 7}, &r);
        expect_whole(&t, 2, -1, (size_t[]){2, 3}, &r);

        islands(&t);
        t.dev[1].memory_bytes = 40 * GIB;
        t.dev[2].memory_bytes = 0; /* unknown */
        assert_int_equal(choose(&t, 2000, -1, 80 * GIB, &r), 1);
        assert_int_equal(r.index[0], 4);
        assert_int_equal(r.index[1], 5);
        /* without the minimum they are fine */
        expect_whole(&t, 2, -1, (size_t[]){0, 1}, &r);
        assert_int_equal(choose(&t, 4000, -1, 80 * GIB + 1, &r), 0);

        for (size_t i = 0; i < t.n; i++)
                t.dev[i].healthy = false;
        assert_int_equal(choose(&t, 1000, -1, 0, &r), 0);
        assert_int_equal(choose(&t, 500, -1, 0, &r), 0);
}

static void fractions_pack(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        islands(&t);
        t.dev[2].used_milli = 300; /* room 700 */
        t.dev[3].used_milli = 900; /* room 100 */
        t.dev[5].used_milli = 500; /* room 500 */
        assert_int_equal(choose(&t, 250, -1, 0, &r), 1);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.index[0], 5);
        assert_int_equal(r.milli[0], 250);
        assert_int_equal(r.numa, 1);
        assert_int_equal(r.score, -(500 - 250) * SCALE);
        /* an exact fit leaves nothing over */
        assert_int_equal(choose(&t, 100, -1, 0, &r), 1);
        assert_int_equal(r.index[0], 3);
        assert_int_equal(r.score, 0);
        assert_int_equal(choose(&t, 700, -1, 0, &r), 1);
        assert_int_equal(r.index[0], 2);
        /* NUMA 0's shared devices only */
        assert_int_equal(choose(&t, 400, 0, 0, &r), 1);
        assert_int_equal(r.index[0], 2);
        /* nothing shared has 800 left: a fresh device */
        assert_int_equal(choose(&t, 800, -1, 0, &r), 1);
        assert_int_equal(r.milli[0], 800);
        assert_true(t.dev[r.index[0]].used_milli == 0);

        /* a shared device that is unhealthy or too small is passed over */
        t.dev[5].healthy = false;
        assert_int_equal(choose(&t, 250, -1, 0, &r), 1);
        assert_int_equal(r.index[0], 2);
        t.dev[2].memory_bytes = 16 * GIB;
        assert_int_equal(choose(&t, 250, -1, 32 * GIB, &r), 1);
        assert_int_equal(t.dev[r.index[0]].used_milli, 0);
}

static void fractions_keep_islands_whole(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        islands(&t);
        t.dev[0].used_milli = 1000;
        /* 1 has only NV4 neighbours left free; 2 and 3 still have NV6 pairs; B is whole */
        assert_int_equal(choose(&t, 500, -1, 0, &r), 1);
        assert_int_equal(r.index[0], 1);
        assert_int_equal(r.score, -(500 * SCALE + 2 * 12 + 4 * 1));

        islands(&t);
        t.dev[4].used_milli = 1000;
        t.dev[5].used_milli = 1000;
        assert_int_equal(choose(&t, 300, -1, 0, &r), 1);
        assert_int_equal(r.index[0], 6);

        /* every device fully used: nothing */
        for (size_t i = 0; i < t.n; i++)
                t.dev[i].used_milli = 1000;
        assert_int_equal(choose(&t, 1, -1, 0, &r), 0);

        /* PCIe: the split switch takes the share */
        pcie(&t);
        t.dev[6].used_milli = 1000;
        assert_int_equal(choose(&t, 500, -1, 0, &r), 1);
        assert_int_equal(r.index[0], 4);
        assert_int_equal(choose(&t, 500, 0, 0, &r), 1);
        assert_int_equal(r.index[0], 0);
        assert_int_equal(r.numa, 0);
}

static void scores_compare_across_nodes(void **state)
{
        struct devsel_result a, b;
        struct topo t, u;

        (void)state;
        /* 4 GPUs: an NVLink island beats a PCIe switch */
        islands(&t);
        pcie(&u);
        assert_int_equal(choose(&t, 4000, -1, 0, &a), 1);
        assert_int_equal(choose(&u, 4000, -1, 0, &b), 1);
        assert_true(a.score > b.score);

        /* the same interconnect: the node where nothing is left behind wins */
        islands(&u);
        for (size_t i = 2; i < 8; i++)
                u.dev[i].used_milli = 1000;
        assert_int_equal(choose(&t, 2000, -1, 0, &a), 1);
        assert_int_equal(choose(&u, 2000, -1, 0, &b), 1);
        assert_true(b.score > a.score);
        assert_int_equal(b.score, 14 * SCALE);

        /* a share: a shared device beats a fresh one on another node */
        islands(&u);
        u.dev[7].used_milli = 100;
        assert_int_equal(choose(&t, 500, -1, 0, &a), 1);
        assert_int_equal(choose(&u, 500, -1, 0, &b), 1);
        assert_int_equal(b.index[0], 7);
        assert_true(b.score > a.score);
}

static void impossible_returns_0(void **state)
{
        struct devsel_result r, before;
        struct devsel_node node;
        struct topo t;

        (void)state;
        islands(&t);
        memset(&r, 0xa5, sizeof(r));
        before = r;
        assert_int_equal(choose(&t, 9000, -1, 0, &r), 0);
        assert_int_equal(choose(&t, 64000, -1, 0, &r), 0);
        assert_int_equal(choose(&t, INT64_MAX - INT64_MAX % 1000, -1, 0, &r), 0);
        t.dev[3].used_milli = 1;
        assert_int_equal(choose(&t, 8000, -1, 0, &r), 0);
        assert_memory_equal(&r, &before, sizeof(r));

        node = (struct devsel_node){.n = 0};
        assert_int_equal(
            devsel_choose(&node, &(struct devsel_request){.milli = 1000, .numa = -1}, &r), 0);
        assert_int_equal(
            devsel_choose(&node, &(struct devsel_request){.milli = 500, .numa = -1}, &r), 0);
        assert_memory_equal(&r, &before, sizeof(r));
}

static void bad_requests_einval(void **state)
{
        static const int64_t bad_milli[] = {0, -1, -1000, 1001, 1500, 2999, INT64_MIN};
        struct devsel_result r, before;
        struct devsel_request req = {.milli = 1000, .numa = -1};
        struct devsel_node node;
        struct topo t;

        (void)state;
        islands(&t);
        node = topo_node(&t);
        memset(&r, 0x5a, sizeof(r));
        before = r;
        for (size_t i = 0; i < XP_ELEMENTSOF(bad_milli); i++)
                assert_int_equal(choose(&t, bad_milli[i], -1, 0, &r), -EINVAL);
        assert_int_equal(choose(&t, 1000, -2, 0, &r), -EINVAL);
        assert_int_equal(choose(&t, 500, -1, -1, &r), -EINVAL);
        assert_int_equal(devsel_choose(NULL, &req, &r), -EINVAL);
        assert_int_equal(devsel_choose(&node, NULL, &r), -EINVAL);
        assert_int_equal(devsel_choose(&node, &req, NULL), -EINVAL);

        node.n = DEVSEL_MAX + 1;
        assert_int_equal(devsel_choose(&node, &req, &r), -EINVAL);
        node = topo_node(&t);
        node.devices = NULL;
        assert_int_equal(devsel_choose(&node, &req, &r), -EINVAL);
        t.dev[3].used_milli = 1001;
        assert_int_equal(choose(&t, 1000, -1, 0, &r), -EINVAL);
        t.dev[3].used_milli = -1;
        assert_int_equal(choose(&t, 500, -1, 0, &r), -EINVAL);
        t.dev[3].used_milli = 0;
        t.dev[3].memory_bytes = -1;
        assert_int_equal(choose(&t, 1000, -1, 0, &r), -EINVAL);
        assert_memory_equal(&r, &before, sizeof(r));

        /* still fine after all that */
        t.dev[3].memory_bytes = 0;
        assert_int_equal(choose(&t, 1000, -1, 0, &r), 1);
}

static void null_affinity_is_unknown(void **state)
{
        struct devsel_device dev[3] = {{.numa = 0, .healthy = true},
                                       {.numa = 0, .healthy = true},
                                       {.numa = 0, .healthy = true}};
        struct devsel_node node = {.n = 3, .devices = dev, .affinity = NULL};
        struct devsel_request req = {.milli = 2000, .numa = -1};
        struct devsel_result r;

        (void)state;
        assert_int_equal(devsel_choose(&node, &req, &r), 1);
        assert_int_equal(r.index[0], 0);
        assert_int_equal(r.index[1], 1);
        assert_int_equal(r.score, 0);
        assert_int_equal(r.numa, 0);
}

/*
 * Reference: every k-subset, the same order of keys, written independently of the library's
 * search, so the exhaustive search and the greedy one are both checked against it.
 */
struct ref {
        const struct topo *t;
        size_t k;
        size_t cur[DEVSEL_MAX];
        bool found;
        int64_t within, cross, numa_pairs;
        size_t best[DEVSEL_MAX];
};

static bool ref_free(const struct topo *t, size_t i)
{
        return t->dev[i].healthy && t->dev[i].used_milli == 0;
}

static void ref_leaf(struct ref *f)
{
        const struct topo *t = f->t;
        int64_t within = 0, cross = 0, np = 0;
        bool in[DEVSEL_MAX] = {false};
        int better = 0;

        for (size_t i = 0; i < f->k; i++)
                in[f->cur[i]] = true;
        for (size_t i = 0; i < f->k; i++) {
                size_t a = f->cur[i];

                for (size_t j = i + 1; j < f->k; j++) {
                        size_t b = f->cur[j];

                        within += t->aff[a * t->n + b];
                        np += t->dev[a].numa >= 0 && t->dev[a].numa == t->dev[b].numa;
                }
                for (size_t b = 0; b < t->n; b++)
                        if (!in[b] && ref_free(t, b))
                                cross += t->aff[a * t->n + b];
        }
        if (!f->found)
                better = 1;
        else if (within != f->within)
                better = within > f->within;
        else if (cross != f->cross)
                better = cross < f->cross;
        else if (np != f->numa_pairs)
                better = np > f->numa_pairs;
        if (better) {
                f->found = true;
                f->within = within;
                f->cross = cross;
                f->numa_pairs = np;
                memcpy(f->best, f->cur, sizeof(f->cur));
        }
}

static void ref_walk(struct ref *f, size_t depth, size_t from)
{
        if (depth == f->k) {
                ref_leaf(f);
                return;
        }
        for (size_t i = from; i < f->t->n; i++) {
                if (!ref_free(f->t, i))
                        continue;
                f->cur[depth] = i;
                ref_walk(f, depth + 1, i + 1);
        }
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rng(void)
{
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static void random_topo(struct topo *t, size_t n)
{
        static const int levels[] = {XP_LINK_NVLINK,
                                     XP_LINK_PIX,
                                     XP_LINK_PXB,
                                     XP_LINK_PHB,
                                     XP_LINK_NODE,
                                     XP_LINK_SYS,
                                     XP_LINK_UNSET};

        topo_init(t, n);
        for (size_t i = 0; i < n; i++) {
                t->dev[i].numa = (int)(rng() % 3) - 1;
                t->dev[i].used_milli = rng() % 4 == 0 ? (int64_t)(rng() % 2) * 1000 : 0;
                t->dev[i].healthy = rng() % 10 != 0;
                for (size_t j = i + 1; j < n; j++)
                        topo_link(t,
                                  i,
                                  j,
                                  levels[rng() % XP_ELEMENTSOF(levels)],
                                  (int64_t)(rng() % 3) * 2);
        }
}

/* Up to 16 candidates the search is exhaustive: the exact reference answer, tie-breaks too. */
static void exhaustive_matches_reference(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        for (int round = 0; round < 300; round++) {
                size_t n = 2 + rng() % 15;
                size_t k = 1 + rng() % n;
                struct ref f = {.t = &t, .k = k};
                int got;

                random_topo(&t, n);
                ref_walk(&f, 0, 0);
                got = choose(&t, (int64_t)k * 1000, -1, 0, &r);
                if (!f.found) {
                        assert_int_equal(got, 0);
                        continue;
                }
                assert_int_equal(got, 1);
                assert_int_equal(r.n, k);
                for (size_t i = 0; i < k; i++)
                        if (r.index[i] != f.best[i])
                                fail_msg("round %d n=%zu k=%zu: index[%zu] %zu, want %zu",
                                         round,
                                         n,
                                         k,
                                         i,
                                         r.index[i],
                                         f.best[i]);
                assert_int_equal(r.score, f.within * SCALE - f.cross);
        }
}

/* 32 GPUs in 8 NVLink islands of 4, SYS across: the greedy search still finds islands. */
/* Must-include devices (the kubelet's): in every choice, with the rest chosen around them. */
static void required_devices(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        islands(&t);
        t.dev[5].required = true;
        expect_whole(&t, 4, -1, (size_t[]){4, 5, 6, 7}, &r);
        /* 2 with 5: its NV6 partner */
        expect_whole(&t, 2, -1, (size_t[]){4, 5}, &r);
        expect_whole(&t, 1, -1, (size_t[]){5}, &r);
        /* two required across the islands: both, and the best of the rest */
        t.dev[0].required = true;
        assert_int_equal(choose(&t, 2000, -1, 0, &r), 1);
        assert_int_equal(r.n, 2);
        assert_int_equal(r.index[0], 0);
        assert_int_equal(r.index[1], 5);
        /* a third: the partner of either is as good, the lower indices win */
        expect_whole(&t, 3, -1, (size_t[]){0, 1, 5}, &r);
        /* more required than asked, a required one held or off the NUMA node: no choice */
        assert_int_equal(choose(&t, 1000, -1, 0, &r), 0);
        assert_int_equal(choose(&t, 2000, 0, 0, &r), 0);
        t.dev[0].used_milli = 1000;
        assert_int_equal(choose(&t, 4000, -1, 0, &r), 0);
        t.dev[0].used_milli = 0;
        t.dev[0].healthy = false;
        assert_int_equal(choose(&t, 4000, -1, 0, &r), 0);
        /* a share goes to the required device */
        t.dev[0].healthy = true;
        t.dev[0].required = false;
        t.dev[1].used_milli = 500; /* a best fit elsewhere is not taken */
        assert_int_equal(choose(&t, 300, -1, 0, &r), 1);
        assert_int_equal(r.index[0], 5);
}

/* Above 16 candidates the greedy search keeps required devices too. */
static void required_devices_greedy(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        topo_init(&t, 32);
        for (size_t i = 0; i < 32; i++) {
                t.dev[i].numa = (int)(i / 16);
                for (size_t j = i + 1; j < 32; j++)
                        topo_link(&t, i, j, i / 4 == j / 4 ? XP_LINK_NVLINK : XP_LINK_SYS, 4);
        }
        t.dev[13].required = true;
        expect_whole(&t, 4, -1, (size_t[]){12, 13, 14, 15}, &r);
        t.dev[30].required = true;
        assert_int_equal(choose(&t, 8000, -1, 0, &r), 1);
        for (size_t want = 0; want < 2; want++) {
                size_t idx = want ? 30 : 13;
                bool found = false;

                for (size_t i = 0; i < r.n; i++)
                        found = found || r.index[i] == idx;
                assert_true(found);
        }
}

static void large_node_islands(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        topo_init(&t, 32);
        for (size_t i = 0; i < 32; i++) {
                t.dev[i].numa = (int)(i / 16);
                for (size_t j = i + 1; j < 32; j++)
                        topo_link(&t, i, j, i / 4 == j / 4 ? XP_LINK_NVLINK : XP_LINK_SYS, 4);
        }
        t.dev[0].used_milli = 1000;
        t.dev[5].used_milli = 1000;
        expect_whole(&t, 4, -1, (size_t[]){8, 9, 10, 11}, &r);
        expect_whole(&t, 3, -1, (size_t[]){1, 2, 3}, &r);
        expect_whole(&t, 8, -1, (size_t[]){8, 9, 10, 11, 12, 13, 14, 15}, &r);
        assert_int_equal(r.numa, 0);
        expect_whole(&t, 4, 1, (size_t[]){16, 17, 18, 19}, &r);
        expect_whole(&t,
                     30,
                     -1,
                     (size_t[]){1,  2,  3,  4,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31},
                     &r);

        /* against the reference where it is affordable */
        for (size_t k = 3; k <= 5; k++) {
                struct ref f = {.t = &t, .k = k};

                ref_walk(&f, 0, 0);
                assert_int_equal(choose(&t, (int64_t)k * 1000, -1, 0, &r), 1);
                assert_memory_equal(r.index, f.best, k * sizeof(size_t));
                assert_int_equal(r.score, f.within * SCALE - f.cross);
        }
}

/* Above 16 candidates the answer is heuristic: always a valid set, never above the optimum. */
static void greedy_valid_on_random_nodes(void **state)
{
        struct devsel_result r;
        struct topo t;

        (void)state;
        for (int round = 0; round < 40; round++) {
                size_t n = 20 + rng() % 13;
                size_t k = 3 + rng() % 2;
                struct ref f = {.t = &t, .k = k};
                int got;

                random_topo(&t, n);
                ref_walk(&f, 0, 0);
                got = choose(&t, (int64_t)k * 1000, -1, 0, &r);
                assert_int_equal(got, f.found ? 1 : 0);
                if (!f.found)
                        continue;
                assert_int_equal(r.n, k);
                for (size_t i = 0; i < k; i++) {
                        assert_true(ref_free(&t, r.index[i]));
                        if (i > 0)
                                assert_true(r.index[i] > r.index[i - 1]);
                }
                assert_true(r.score <= f.within * SCALE - f.cross);
                /* the interconnect itself is rarely missed by much: at least 3/4 of the best */
                assert_true(r.score / SCALE * 4 >= f.within * 3);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(link_affinity_order),
            cmocka_unit_test(dgx_pairs),
            cmocka_unit_test(islands_whole),
            cmocka_unit_test(pcie_switches),
            cmocka_unit_test(ascend_groups),
            cmocka_unit_test(numa_required),
            cmocka_unit_test(unhealthy_and_small_skipped),
            cmocka_unit_test(fractions_pack),
            cmocka_unit_test(fractions_keep_islands_whole),
            cmocka_unit_test(scores_compare_across_nodes),
            cmocka_unit_test(impossible_returns_0),
            cmocka_unit_test(bad_requests_einval),
            cmocka_unit_test(null_affinity_is_unknown),
            cmocka_unit_test(exhaustive_matches_reference),
            cmocka_unit_test(large_node_islands),
            cmocka_unit_test(required_devices),
            cmocka_unit_test(required_devices_greedy),
            cmocka_unit_test(greedy_valid_on_random_nodes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
