/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device selection inside one node (docs/scheduler.md, "Device selection").
 *
 * Whole devices: among the eligible free devices, the k-set that maximizes, in this order,
 *   1. within: the sum of the pairwise affinity inside the set (the interconnect the job gets);
 *   2. -cross: the affinity between the set and the free devices it leaves behind, so the set
 *      least woven into what stays free is taken and the rest stays connected for the next
 *      request (a pair from a half-used island rather than one that splits a free island);
 *   3. the number of pairs that share a NUMA node (an NVSwitch box reports the same NV# for
 *      every pair, so only this tells a pair on one socket from a pair across sockets);
 *   4. the lowest indices.
 * Up to 16 candidates (and any k <= 2) the search is exhaustive, depth first in lexicographic
 * order with a bound on what the remaining picks can add; above that, a greedy set grown from
 * every candidate as a seed, each improved by single swaps. Required devices are in every set
 * considered: the search never skips one, the greedy sets grow from them and never swap one out.
 *
 * Shares: best fit onto an already shared device (the least room that still fits), else the
 * fresh device whose affinity to the other free devices is lowest.
 *
 * Scores, higher is better and comparable across nodes for one request:
 *   whole devices: within * 2^27 - cross
 *   a share:       -((room left on the device after it) * 2^27 + cross of the device)
 * where cross of a shared device is 0 (it is no longer whole) and of a fresh one its affinity to
 * every other free device. cross < 2^27 for any input (at most 32 * 32 pairs of 65535), so the
 * first term always dominates.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "devsel.h"
#include "xpool/object.h"

/* NVLink affinities start above every PCIe level (PIX is 5). */
#define NVLINK_BASE 8

#define SCORE_SCALE ((int64_t)1 << 27)

/* Up to this many candidates every k-subset is searched (C(16, 8) = 12870 at most). */
#define EXHAUSTIVE_MAX_CANDIDATES 16

/* Bounds the swap passes per greedy seed; each accepted swap strictly improves the set. */
#define IMPROVE_MAX_PASSES 64

uint16_t devsel_link_affinity(int level, int64_t nvlinks)
{
        switch (level) {
        case XP_LINK_NVLINK:
                /* a link whose count the backend could not read is still at least one link */
                if (nvlinks < 1)
                        nvlinks = 1;
                if (nvlinks > UINT16_MAX - NVLINK_BASE)
                        nvlinks = UINT16_MAX - NVLINK_BASE;
                return (uint16_t)(NVLINK_BASE + nvlinks);
        case XP_LINK_PIX:
                return 5;
        case XP_LINK_PXB:
                return 4;
        case XP_LINK_PHB:
                return 3;
        case XP_LINK_NODE:
                return 2;
        case XP_LINK_SYS:
                return 1;
        default:
                return 0;
        }
}

struct key {
        int64_t within;
        int64_t cross;
        int64_t numa_pairs;
};

struct choice {
        struct key key;
        size_t pos[DEVSEL_MAX]; /* ascending positions into search.cand */
};

struct search {
        size_t k;
        size_t m;                           /* candidates */
        size_t cand[DEVSEL_MAX];            /* their device indices, ascending */
        int numa[DEVSEL_MAX];               /* per candidate */
        int64_t deg[DEVSEL_MAX];            /* per candidate: affinity to every other free device */
        uint16_t a[DEVSEL_MAX][DEVSEL_MAX]; /* affinity between candidates */
        int64_t max_pair;
        int64_t cand_deg[DEVSEL_MAX];     /* greedy only: affinity to every other candidate */
        size_t pick[DEVSEL_MAX];          /* the depth-first search's partial set */
        bool req[DEVSEL_MAX];             /* per candidate: required */
        size_t req_after[DEVSEL_MAX + 1]; /* required candidates at positions >= p */
        size_t n_req;
        bool found;
        struct choice best;
};

static int64_t affinity(const struct devsel_node *node, size_t i, size_t j)
{
        if (!node->affinity || i == j)
                return 0;
        /* the upper triangle only, so an asymmetric matrix still gives one answer */
        return i < j ? node->affinity[i * node->n + j] : node->affinity[j * node->n + i];
}

static bool is_free(const struct devsel_device *d)
{
        return d->healthy && d->used_milli == 0;
}

static bool fits(const struct devsel_device *d, const struct devsel_request *req)
{
        if (!d->healthy)
                return false;
        if (req->numa >= 0 && d->numa != req->numa)
                return false;
        /* unknown memory cannot be shown to be enough */
        if (req->min_memory_bytes > 0 && d->memory_bytes < req->min_memory_bytes)
                return false;
        return true;
}

/* Affinity of device i to every other free device of the node. */
static int64_t free_degree(const struct devsel_node *node, size_t i)
{
        int64_t sum = 0;

        for (size_t j = 0; j < node->n; j++)
                if (j != i && is_free(&node->devices[j]))
                        sum += affinity(node, i, j);
        return sum;
}

static int same_numa(const struct search *s, size_t p, size_t q)
{
        return s->numa[p] >= 0 && s->numa[p] == s->numa[q];
}

/* > 0 when (within, cross, numa_pairs) of a beats b, < 0 when b beats a, 0 when equal. */
static int compare_key(const struct key *a, const struct key *b)
{
        if (a->within != b->within)
                return a->within > b->within ? 1 : -1;
        if (a->cross != b->cross)
                return a->cross < b->cross ? 1 : -1;
        if (a->numa_pairs != b->numa_pairs)
                return a->numa_pairs > b->numa_pairs ? 1 : -1;
        return 0;
}

/* Takes c when it beats the best so far; equal keys go to the lexicographically lower set. */
static void consider(struct search *s, const struct choice *c)
{
        int r;

        if (!s->found) {
                s->best = *c;
                s->found = true;
                return;
        }
        r = compare_key(&c->key, &s->best.key);
        if (r == 0)
                for (size_t i = 0; i < s->k && r == 0; i++)
                        if (c->pos[i] != s->best.pos[i])
                                r = c->pos[i] < s->best.pos[i] ? 1 : -1;
        if (r > 0)
                s->best = *c;
}

static void
dfs(struct search *s, size_t depth, size_t from, int64_t within, int64_t degsum, int64_t numa_pairs)
{
        size_t r = s->k - depth;

        /* a required candidate left behind can never be picked again */
        if (s->req_after[from] > r)
                return;
        if (r == 0) {
                int64_t cross = degsum - 2 * within;

                /* the search runs in lexicographic order: only a strictly better key replaces */
                if (s->found) {
                        struct key key = {
                            .within = within, .cross = cross, .numa_pairs = numa_pairs};
                        if (compare_key(&key, &s->best.key) <= 0)
                                return;
                }
                s->best.key.within = within;
                s->best.key.cross = cross;
                s->best.key.numa_pairs = numa_pairs;
                memcpy(s->best.pos, s->pick, s->k * sizeof(s->pick[0]));
                s->found = true;
                return;
        }
        /* every pair still to be formed at the best affinity cannot catch up: prune */
        if (s->found &&
            within + (int64_t)(r * depth + r * (r - 1) / 2) * s->max_pair < s->best.key.within)
                return;

        for (size_t c = from; c + r <= s->m; c++) {
                int64_t gain = 0, np = 0;

                for (size_t d = 0; d < depth; d++) {
                        gain += s->a[s->pick[d]][c];
                        np += same_numa(s, s->pick[d], c);
                }
                s->pick[depth] = c;
                dfs(s, depth + 1, c + 1, within + gain, degsum + s->deg[c], numa_pairs + np);
                if (s->req[c])
                        break; /* every later set would skip it */
        }
}

static void sort_positions(size_t *pos, size_t n)
{
        for (size_t i = 1; i < n; i++) {
                size_t v = pos[i], j = i;

                for (; j > 0 && pos[j - 1] > v; j--)
                        pos[j] = pos[j - 1];
                pos[j] = v;
        }
}

/*
 * Grows a set from one seed, each step adding the candidate best linked to the set, on a tie the
 * one with the most to offer the picks still to come (growth serves within; what is left behind
 * is weighed by the swaps), then swaps single members while that improves the set.
 */
static void greedy_from(struct search *s, size_t seed)
{
        bool in[DEVSEL_MAX] = {false};
        int64_t link[DEVSEL_MAX], numa_link[DEVSEL_MAX]; /* to the members of the set */
        struct choice c;                                 /* pos is written as the set grows */
        size_t size = 0;

        c.key = (struct key){0};
        for (size_t x = 0; x < s->m; x++) {
                link[x] = 0;
                numa_link[x] = 0;
        }

        for (size_t add = seed; size < s->k;) {
                in[add] = true;
                c.pos[size++] = add;
                c.key.within += link[add];
                c.key.numa_pairs += numa_link[add];
                c.key.cross += s->deg[add];
                for (size_t x = 0; x < s->m; x++) {
                        link[x] += s->a[add][x];
                        numa_link[x] += x != add && same_numa(s, add, x);
                }
                if (size == s->k)
                        break;
                add = SIZE_MAX;
                for (size_t x = 0; x < s->m; x++) {
                        if (in[x] || (size < s->n_req && !s->req[x]))
                                continue; /* the required ones first */
                        if (add == SIZE_MAX || link[x] > link[add] ||
                            (link[x] == link[add] && s->cand_deg[x] > s->cand_deg[add]))
                                add = x;
                }
        }
        /* c.key.cross holds the sum of degrees until here */

        for (unsigned pass = 0; pass < IMPROVE_MAX_PASSES; pass++) {
                bool improved = false;

                for (size_t pi = 0; pi < s->k; pi++) {
                        size_t out = c.pos[pi];

                        if (s->req[out])
                                continue;
                        for (size_t x = 0; x < s->m; x++) {
                                struct key cur, next;

                                if (in[x])
                                        continue;
                                cur = (struct key){.within = c.key.within,
                                                   .cross = c.key.cross - 2 * c.key.within,
                                                   .numa_pairs = c.key.numa_pairs};
                                next.within = c.key.within - link[out] + link[x] - s->a[out][x];
                                next.cross =
                                    c.key.cross - s->deg[out] + s->deg[x] - 2 * next.within;
                                next.numa_pairs = c.key.numa_pairs - numa_link[out] + numa_link[x] -
                                                  same_numa(s, out, x);
                                if (compare_key(&next, &cur) <= 0)
                                        continue;

                                in[out] = false;
                                in[x] = true;
                                c.pos[pi] = x;
                                c.key.cross += s->deg[x] - s->deg[out];
                                c.key.within = next.within;
                                c.key.numa_pairs = next.numa_pairs;
                                for (size_t y = 0; y < s->m; y++) {
                                        link[y] += s->a[x][y] - s->a[out][y];
                                        numa_link[y] += (y != x && same_numa(s, x, y)) -
                                                        (y != out && same_numa(s, out, y));
                                }
                                out = x;
                                improved = true;
                        }
                }
                if (!improved)
                        break;
        }

        c.key.cross -= 2 * c.key.within;
        sort_positions(c.pos, s->k);
        consider(s, &c);
}

/*
 * One pass over the pairs of free devices (free[i]; pos_of[i] their candidate position, SIZE_MAX
 * if none): each candidate's degree (affinity to every other free device) and the candidates'
 * matrix.
 */
static void pair_matrix(const struct devsel_node *node,
                        const bool free[static DEVSEL_MAX],
                        const size_t pos_of[static DEVSEL_MAX],
                        struct search *s)
{
        int64_t deg[DEVSEL_MAX] = {0};

        for (size_t i = 0; i < node->n; i++) {
                if (!free[i])
                        continue;
                if (pos_of[i] != SIZE_MAX)
                        s->a[pos_of[i]][pos_of[i]] = 0;
                for (size_t j = i + 1; j < node->n; j++) {
                        uint16_t v;

                        if (!free[j])
                                continue;
                        v = node->affinity ? node->affinity[i * node->n + j] : 0;
                        deg[i] += v;
                        deg[j] += v;
                        if (pos_of[i] != SIZE_MAX && pos_of[j] != SIZE_MAX) {
                                s->a[pos_of[i]][pos_of[j]] = s->a[pos_of[j]][pos_of[i]] = v;
                                if (v > s->max_pair)
                                        s->max_pair = v;
                        }
                }
        }
        for (size_t p = 0; p < s->m; p++)
                s->deg[p] = deg[s->cand[p]];
}

/* The best set of s->k of the s->m candidates into s->best: exhaustive where that is cheap. */
static void search_best(struct search *s)
{
        if (s->k == s->m) {
                /* one set only: the search would find it slowly for a large node */
                struct choice c = {.key = {0}};

                for (size_t p = 0; p < s->m; p++) {
                        c.pos[p] = p;
                        c.key.cross += s->deg[p];
                        for (size_t q = p + 1; q < s->m; q++) {
                                c.key.within += s->a[p][q];
                                c.key.numa_pairs += same_numa(s, p, q);
                        }
                }
                c.key.cross -= 2 * c.key.within;
                consider(s, &c);
        } else if (s->m <= EXHAUSTIVE_MAX_CANDIDATES || s->k <= 2) {
                dfs(s, 0, 0, 0, 0, 0);
        } else {
                for (size_t p = 0; p < s->m; p++) {
                        s->cand_deg[p] = 0;
                        for (size_t q = 0; q < s->m; q++)
                                s->cand_deg[p] += s->a[p][q];
                }
                for (size_t seed = 0; seed < s->m; seed++)
                        if (s->n_req == 0 || s->req[seed])
                                greedy_from(s, seed);
        }
}

static int choose_whole(const struct devsel_node *node,
                        size_t k,
                        const struct devsel_request *req,
                        struct devsel_result *ret)
{
        size_t pos_of[DEVSEL_MAX]; /* device index to candidate position, SIZE_MAX if none */
        bool free[DEVSEL_MAX];
        struct search s;
        int numa;

        s.k = k;
        s.m = 0;
        s.n_req = 0;
        s.max_pair = 0;
        s.found = false;
        for (size_t i = 0; i < node->n; i++) {
                const struct devsel_device *d = &node->devices[i];

                free[i] = is_free(d);
                pos_of[i] = SIZE_MAX;
                if (!free[i] || !fits(d, req)) {
                        if (d->required)
                                return 0;
                        continue;
                }
                pos_of[i] = s.m;
                s.cand[s.m] = i;
                s.numa[s.m] = d->numa;
                s.req[s.m] = d->required;
                s.n_req += d->required;
                s.m++;
        }
        if (s.m < k || s.n_req > k)
                return 0;
        s.req_after[s.m] = 0;
        for (size_t p = s.m; p-- > 0;)
                s.req_after[p] = s.req_after[p + 1] + s.req[p];
        pair_matrix(node, free, pos_of, &s);
        search_best(&s);

        numa = s.numa[s.best.pos[0]];
        ret->n = k;
        for (size_t i = 0; i < k; i++) {
                ret->index[i] = s.cand[s.best.pos[i]];
                ret->milli[i] = 1000;
                if (s.numa[s.best.pos[i]] != numa)
                        numa = -1;
        }
        ret->score = s.best.key.within * SCORE_SCALE - s.best.key.cross;
        ret->numa = numa < 0 ? -1 : numa;
        return 1;
}

/* A share goes to a required device when there is one. */
static bool share_allowed(const struct devsel_node *node, size_t i)
{
        if (node->devices[i].required)
                return true;
        for (size_t j = 0; j < node->n; j++)
                if (node->devices[j].required)
                        return false;
        return true;
}

static int choose_share(const struct devsel_node *node,
                        const struct devsel_request *req,
                        struct devsel_result *ret)
{
        size_t best = SIZE_MAX;
        int64_t best_room = 0, best_cross = 0;

        /* best fit onto a device already shared: the least room that still fits */
        for (size_t i = 0; i < node->n; i++) {
                const struct devsel_device *d = &node->devices[i];
                int64_t room = 1000 - d->used_milli;

                if (!fits(d, req) || d->used_milli == 0 || room < req->milli ||
                    !share_allowed(node, i))
                        continue;
                if (best == SIZE_MAX || room < best_room) {
                        best = i;
                        best_room = room;
                }
        }

        /* else the fresh device whose loss hurts the free devices' connectivity least */
        if (best == SIZE_MAX)
                for (size_t i = 0; i < node->n; i++) {
                        const struct devsel_device *d = &node->devices[i];
                        int64_t cross;

                        if (!fits(d, req) || d->used_milli != 0 || !share_allowed(node, i))
                                continue;
                        cross = free_degree(node, i);
                        if (best == SIZE_MAX || cross < best_cross) {
                                best = i;
                                best_room = 1000;
                                best_cross = cross;
                        }
                }

        if (best == SIZE_MAX)
                return 0;
        ret->n = 1;
        ret->index[0] = best;
        ret->milli[0] = req->milli;
        ret->score = -((best_room - req->milli) * SCORE_SCALE + best_cross);
        ret->numa = node->devices[best].numa < 0 ? -1 : node->devices[best].numa;
        return 1;
}

static bool node_valid(const struct devsel_node *node)
{
        if (node->n > DEVSEL_MAX || (node->n > 0 && !node->devices))
                return false;
        for (size_t i = 0; i < node->n; i++) {
                const struct devsel_device *d = &node->devices[i];

                if (d->used_milli < 0 || d->used_milli > 1000 || d->memory_bytes < 0)
                        return false;
        }
        return true;
}

int devsel_choose(const struct devsel_node *node,
                  const struct devsel_request *req,
                  struct devsel_result *ret)
{
        if (!node || !req || !ret || !node_valid(node))
                return -EINVAL;
        if (req->milli <= 0 || (req->milli >= 1000 && req->milli % 1000 != 0) ||
            req->min_memory_bytes < 0 || req->numa < -1)
                return -EINVAL;

        if (req->milli < 1000)
                return choose_share(node, req, ret);
        if (req->milli / 1000 > (int64_t)node->n)
                return 0;
        return choose_whole(node, (size_t)(req->milli / 1000), req, ret);
}
