/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The queues' private state, shared by queue.c (the tree, charges, the questions) and drf.c
 * (the fair shares). Resource names are interned to small ids, so every figure is a fixed
 * vector indexed by them.
 */

#include <stdbool.h>
#include <stdint.h>

#include "xpool/map.h"
#include "xpool/queue.h"

#define QR XP_QUEUE_RESOURCES_MAX

struct squeue {
        char *name;
        char *parent_name;
        struct squeue *parent; /* resolved by queues_resolve(); NULL: top level or orphan */
        bool defined;          /* false: only named by pods so far */
        bool orphan;           /* its parent is missing, or the chain loops */
        bool has_children;
        bool reclaimable;
        double weight;
        int64_t guaranteed[QR];
        int64_t limit[QR]; /* -1: none */
        double weights[QR];
        bool spec_has[QR]; /* the spec names the resource */
        /* the queue's own pods' (leaves) or its subtree's (parents, summed by compute) */
        int64_t allocated[QR];
        int64_t pending[QR];
        int64_t own_allocated[QR];
        int64_t own_pending[QR];
        int64_t deserved[QR];
        unsigned depth;
};

struct xp_queues {
        char *res[QR];
        size_t n_res;
        int64_t capacity[QR];
        struct squeue **items;
        size_t n, cap;
        struct xp_map by_name;
        bool managed[QR]; /* some queue's spec names the resource */
        bool resolved;
};

/* The id of a resource, interned when add; -ENOENT when absent and not added, -E2BIG when full. */
int queues_res_id(struct xp_queues *queues, const char *name, bool add);
/* Links each queue to its parent, marks orphans and depths, sums subtrees. */
void queues_resolve(struct xp_queues *queues);
/* The fair shares (drf.c): each queue's deserved, top down. */
void queues_fair_shares(struct xp_queues *queues);
