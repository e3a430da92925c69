/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The options of a pod's log: Kubernetes' PodLogOptions as the query of GET .../pods/NAME/log
 * (follow, previous, timestamps, tailLines, sinceSeconds, sinceTime, limitBytes). One module reads
 * and writes them: the API server reads kubectl's query and writes the one it sends to the
 * node's agent, the agent reads that one, and the CLI writes its own.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xp_pod_log_options {
        bool follow;           /* keep streaming as the container writes */
        bool previous;         /* the container's previous run */
        bool timestamps;       /* each line prefixed with its time */
        int64_t tail_lines;    /* the last N lines; -1: all */
        int64_t since_seconds; /* lines of the last N seconds; -1: not asked */
        int64_t since_time;    /* lines from this time on (seconds since the epoch); 0: not asked.
                                  With since_seconds too, since_seconds wins. */
        int64_t limit_bytes;   /* at most N bytes; -1: no limit */
};

#define XP_POD_LOG_OPTIONS_INIT                                                                    \
        ((struct xp_pod_log_options){.tail_lines = -1, .since_seconds = -1, .limit_bytes = -1})

/* Why a query was refused: the option, its value (borrowed from the query) and what it takes. */
struct xp_pod_log_refusal {
        const char *option;
        const char *value;
        const char *want; /* "true or false", "a number >= 0", "an RFC 3339 time" */
};

/* A query parameter's value, or NULL when absent. */
typedef const char *xp_pod_log_query_fn(void *userdata, const char *name);

/*
 * Reads the options from a query: booleans as Go's strconv.ParseBool takes them (absent: false),
 * numbers as decimals of at most 18 digits (tailLines >= 0, sinceSeconds and limitBytes >= 1),
 * sinceTime as RFC 3339. 0 with *ret filled; -EINVAL with *ret_refusal saying which option and
 * why (*ret unchanged).
 */
int xp_pod_log_options_parse(xp_pod_log_query_fn *query,
                             void *userdata,
                             struct xp_pod_log_options *ret,
                             struct xp_pod_log_refusal *ret_refusal);

/*
 * The query of o ("follow=true&tailLines=2", "" when nothing is asked; caller frees), in the
 * agent's terms: a sinceTime goes as the sinceSeconds it is at now (at least 1: a time to come
 * shows what comes from now on). -ENOMEM.
 */
int xp_pod_log_options_query(const struct xp_pod_log_options *o, int64_t now, char **ret);

/* The CLOCK_REALTIME nanosecond from which o asks for lines at now_ns (0: from the start). */
int64_t xp_pod_log_options_since_ns(const struct xp_pod_log_options *o, int64_t now_ns);

/*
 * Whether the pod's status says its container has not started yet (waiting, with neither a run
 * now nor an earlier one): then it has no log, and message (size bytes) says so as the kubelet
 * does, `container "C" in pod "P" is waiting to start: trying and failing to pull image` (or the
 * waiting reason), which the API server answers with 400. false when it has started, when the
 * status has no word of it, or when the previous run is asked for (that answer is the agent's).
 */
bool xp_pod_log_not_started(
    const json_t *pod, const char *container, bool previous, char *message, size_t size);
