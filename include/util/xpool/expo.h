/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Prometheus exposition formats (docs/monitoring.md): a writer for the text format 0.0.4
 * and OpenMetrics 1.0, and a parser that checks every line of either against the format's rules
 * (names, HELP and TYPE, label syntax and escaping, values, families kept together, one series
 * once, histogram buckets, OpenMetrics' "# EOF") and hands each sample to a callback. The agent's
 * and the server's /metrics write with it; the server reads the agents' resource metrics with
 * it; the tests check every exposition with it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xpool/error.h"

enum xp_expo_format {
        XP_EXPO_TEXT,        /* text/plain; version=0.0.4 */
        XP_EXPO_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

enum xp_expo_type {
        XP_EXPO_GAUGE,
        XP_EXPO_COUNTER,
        XP_EXPO_HISTOGRAM,
        XP_EXPO_UNTYPED,
};

struct xp_expo_label {
        const char *name;
        const char *value; /* NULL is written as "" */
};

/* The writer: a growing buffer; a failure (out of memory) is remembered until the end. */
struct xp_expo {
        FILE *f;
        char *text;
        size_t len;
        enum xp_expo_format format;
        enum xp_expo_type type; /* of the current family */
        char family[128];       /* its name as the samples are written */
        bool om_total;          /* OpenMetrics counter: samples get "_total" */
};

/* The format an Accept header asks for: OpenMetrics when it names it, else the text format. */
enum xp_expo_format xp_expo_negotiate(const char *accept);
const char *xp_expo_content_type(enum xp_expo_format format);

/* -ENOMEM or 0; then families and samples; then xp_expo_finish() or xp_expo_done(). */
int xp_expo_init(struct xp_expo *w, enum xp_expo_format format);

/*
 * Starts a family: its HELP and TYPE lines. name as the series are named (a counter's name ends
 * in _total by convention, DCGM's do not: in OpenMetrics a counter without _total is declared
 * "unknown" so that its series keep their exact name).
 */
void xp_expo_family(struct xp_expo *w, const char *name, enum xp_expo_type type, const char *help);

/* One sample of the current family (name + suffix: "" or "_bucket", "_sum", "_count"). */
void xp_expo_sample(struct xp_expo *w,
                    const char *suffix,
                    const struct xp_expo_label *labels,
                    size_t n_labels,
                    double value);

struct xp_histogram_snapshot;
/* A histogram's _bucket (le added to labels), _sum and _count series. */
void xp_expo_histogram(struct xp_expo *w,
                       const struct xp_expo_label *labels,
                       size_t n_labels,
                       const struct xp_histogram_snapshot *h);

/* The text (caller frees) and its length; "# EOF" ends OpenMetrics. -ENOMEM, nothing returned. */
int xp_expo_finish(struct xp_expo *w, char **ret_text, size_t *ret_len);
void xp_expo_done(struct xp_expo *w);

/*
 * The process metrics of Prometheus' Go client (process_cpu_seconds_total, process_open_fds,
 * process_max_fds, process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_start_time_seconds) of the calling process, from /proc/self.
 */
void xp_expo_process(struct xp_expo *w);

/* Writes a label value or HELP text escaped (\\, \n, and \" for label values). */
void xp_expo_escape(FILE *f, const char *s, bool quote);

/* ---- parsing and checking ------------------------------------------------------------------- */

/* One parsed sample; everything borrowed for the callback. */
struct xp_expo_sample {
        const char *name;
        const struct xp_expo_label *labels;
        size_t n_labels;
        double value;
        const char *family; /* the family it belongs to (the TYPE line's name), or name */
        enum xp_expo_type type;
};

typedef int (*xp_expo_sample_fn)(const struct xp_expo_sample *sample, void *userdata);

#define XP_EXPO_LABELS_MAX 32

/*
 * Parses and checks text: 0, or -EINVAL with err saying "line N: what" at the first line that
 * breaks the format; a callback's negative return stops and is returned. cb may be NULL.
 */
int xp_expo_parse(const char *text,
                  size_t len,
                  enum xp_expo_format format,
                  xp_expo_sample_fn cb,
                  void *userdata,
                  struct xp_error *err);

/* The value of label name in sample, or NULL. */
const char *xp_expo_sample_label(const struct xp_expo_sample *sample, const char *name);
