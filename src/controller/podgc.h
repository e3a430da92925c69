/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod garbage collector's pure decisions (podgc_decide.c), unit-tested alone. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A terminated pod as the collector remembers it. */
struct podgc_done {
        char *key;     /* "namespace/name" */
        char *created; /* metadata.creationTimestamp, RFC 3339 in UTC: sorts as the time */
};

/* Whether pod's phase is Succeeded or Failed. */
bool podgc_terminated(const json_t *pod);

/*
 * Orders done[0..n) oldest first (creationTimestamp, then key) and returns how many of them
 * are to be deleted so that threshold are left: n - threshold, 0 when n <= threshold or
 * threshold <= 0 (collection off).
 */
size_t podgc_select_oldest(struct podgc_done *done, size_t n, int64_t threshold);

enum podgc_verdict {
        PODGC_KEEP,
        PODGC_ORPHAN,                 /* bound to a node that does not exist */
        PODGC_UNSCHEDULED_TERMINATING /* being deleted and bound to no node */
};

/* What becomes of pod, node_exists telling whether a node of that name exists. */
enum podgc_verdict podgc_judge(const json_t *pod,
                               bool (*node_exists)(void *userdata, const char *node),
                               void *userdata);
