/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exposition writer (xpool/expo.h). The text format's rules: a family is one HELP line, one
 * TYPE line and its samples together; label values escape backslash, double quote and newline,
 * HELP text backslash and newline. OpenMetrics adds: a counter family is named without _total
 * and its samples with it, and the exposition ends with "# EOF".
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xpool/expo.h"
#include "xpool/histogram.h"

static const char *const type_names[] = {
    [XP_EXPO_GAUGE] = "gauge",
    [XP_EXPO_COUNTER] = "counter",
    [XP_EXPO_HISTOGRAM] = "histogram",
    [XP_EXPO_UNTYPED] = "untyped",
};

enum xp_expo_format xp_expo_negotiate(const char *accept)
{
        return accept && strcasestr(accept, "application/openmetrics-text") ? XP_EXPO_OPENMETRICS
                                                                            : XP_EXPO_TEXT;
}

const char *xp_expo_content_type(enum xp_expo_format format)
{
        return format == XP_EXPO_OPENMETRICS
                   ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                   : "text/plain; version=0.0.4; charset=utf-8";
}

int xp_expo_init(struct xp_expo *w, enum xp_expo_format format)
{
        *w = (struct xp_expo){.format = format};
        w->f = open_memstream(&w->text, &w->len);
        return w->f ? 0 : -ENOMEM;
}

void xp_expo_escape(FILE *f, const char *s, bool quote)
{
        for (; s && *s; s++) {
                if (*s == '\\')
                        fputs("\\\\", f);
                else if (*s == '\n')
                        fputs("\\n", f);
                else if (*s == '"' && quote)
                        fputs("\\\"", f);
                else
                        fputc(*s, f);
        }
}

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);

        return n >= m && strcmp(s + n - m, suffix) == 0;
}

void xp_expo_family(struct xp_expo *w, const char *name, enum xp_expo_type type, const char *help)
{
        const char *type_name = type_names[type];
        size_t n = strlen(name);

        w->type = type;
        w->om_total = false;
        snprintf(w->family, sizeof(w->family), "%s", name);
        if (w->format == XP_EXPO_OPENMETRICS) {
                if (type == XP_EXPO_UNTYPED)
                        type_name = "unknown";
                if (type == XP_EXPO_COUNTER && ends_with(name, "_total")) {
                        n -= strlen("_total");
                        w->om_total = true;
                } else if (type == XP_EXPO_COUNTER) {
                        type_name = "unknown"; /* DCGM's counters keep their names */
                }
        }
        fprintf(w->f, "# HELP %.*s ", (int)n, name);
        xp_expo_escape(w->f, help, false);
        fprintf(w->f, "\n# TYPE %.*s %s\n", (int)n, name, type_name);
}

/* The shortest text that reads back as v, as Go's strconv 'g' -1 writes it. */
static const char *value_text(double v, char buf[static 64])
{
        if (isnan(v))
                return "NaN";
        if (isinf(v))
                return v > 0 ? "+Inf" : "-Inf";
        for (int precision = 15; precision <= 17; precision++) {
                snprintf(buf, 64, "%.*g", precision, v);
                if (strtod(buf, NULL) == v)
                        break;
        }
        return buf;
}

static void write_labels(
    FILE *f, const struct xp_expo_label *labels, size_t n, const char *le_name, const char *le)
{
        if (n == 0 && !le_name)
                return;
        fputc('{', f);
        for (size_t i = 0; i < n; i++) {
                fprintf(f, "%s%s=\"", i ? "," : "", labels[i].name);
                xp_expo_escape(f, labels[i].value, true);
                fputc('"', f);
        }
        if (le_name)
                fprintf(f, "%s%s=\"%s\"", n ? "," : "", le_name, le);
        fputc('}', f);
}

void xp_expo_sample(struct xp_expo *w,
                    const char *suffix,
                    const struct xp_expo_label *labels,
                    size_t n_labels,
                    double value)
{
        char buf[64];

        fputs(w->family, w->f);
        fputs(suffix ? suffix : "", w->f);
        write_labels(w->f, labels, n_labels, NULL, NULL);
        fprintf(w->f, " %s\n", value_text(value, buf));
}

void xp_expo_histogram(struct xp_expo *w,
                       const struct xp_expo_label *labels,
                       size_t n_labels,
                       const struct xp_histogram_snapshot *h)
{
        uint64_t cumulative = 0;
        char buf[64];

        for (size_t i = 0; i <= h->n_bounds; i++) {
                cumulative += h->counts[i];
                fprintf(w->f, "%s_bucket", w->family);
                write_labels(w->f,
                             labels,
                             n_labels,
                             "le",
                             i < h->n_bounds ? value_text(h->bounds[i], buf) : "+Inf");
                fprintf(w->f, " %llu\n", (unsigned long long)cumulative);
        }
        xp_expo_sample(w, "_sum", labels, n_labels, h->sum);
        xp_expo_sample(w, "_count", labels, n_labels, (double)h->count);
}

int xp_expo_finish(struct xp_expo *w, char **ret_text, size_t *ret_len)
{
        int r;

        if (w->format == XP_EXPO_OPENMETRICS)
                fputs("# EOF\n", w->f);
        r = ferror(w->f) ? -ENOMEM : 0;
        if (fclose(w->f) != 0)
                r = -ENOMEM;
        w->f = NULL;
        if (r < 0) {
                xp_expo_done(w);
                return r;
        }
        *ret_text = w->text;
        *ret_len = w->len;
        w->text = NULL;
        return 0;
}

void xp_expo_done(struct xp_expo *w)
{
        if (w->f)
                fclose(w->f);
        free(w->text);
        *w = (struct xp_expo){0};
}
