/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The history's rings, shared by its recording (history.c) and its JSON (history_json.c). */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/map.h"

struct slot {
        int64_t step; /* the step it holds; -1: none */
        double a, b;  /* allocated and capacity; or the sum of the percentages */
        unsigned n;   /* usage: the samples summed in a */
};

struct series {
        char *name[3]; /* allocation: resource, kind, node; usage: node, device, kind */
        char *key;     /* the three names joined, the series' key in its set's index */
        int64_t last;  /* the newest step with a point */
        struct slot *slots;
};

struct series_set {
        struct series *items;
        size_t n, cap;
        struct xp_map index; /* key -> position in items + 1 */
};

struct xp_history {
        pthread_mutex_t lock;
        int64_t step_s;
        size_t n_slots;
        struct series_set alloc, usage;
};
