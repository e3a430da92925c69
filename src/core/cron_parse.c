/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The five-field cron schedule as Kubernetes parses it (robfig/cron v3's standard parser), with
 * its messages, so that `kubectl create cronjob` is refused for the same schedules and in the
 * same words.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xpool/cron.h"
#include "xpool/duration.h"
#include "xpool/macro.h"

#define FIELD_MAX 128

struct bounds {
        unsigned min, max;
        const char *const *names; /* names[i] is the value min + i, NULL when the field has none */
};

static const char *const month_names[] = {
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const day_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static const struct bounds fields[5] = {
    {0, 59, NULL},
    {0, 23, NULL},
    {1, 31, NULL},
    {1, 12, month_names},
    {0, 6, day_names},
};

/* Go's strconv.Atoi, with robfig's messages around it. */
static int parse_int(const char *text, unsigned *ret, struct xp_error *err)
{
        const char *p = text;
        bool negative = *p == '-' || *p == '+' ? *p++ == '-' : false;
        unsigned long v = 0;

        if (!*p)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "failed to parse int from %s: strconv.Atoi: parsing \"%s\": invalid syntax",
                    text,
                    text);
        for (; *p; p++) {
                if (*p < '0' || *p > '9')
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "failed to parse int from %s: strconv.Atoi: parsing \"%s\": invalid syntax",
                            text,
                            text);
                v = v * 10 + (unsigned long)(*p - '0');
                if (v > INT_MAX)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "failed to parse int from %s: strconv.Atoi: parsing \"%s\": value out of range",
                            text,
                            text);
        }
        if (negative && v > 0)
                return xp_errorf(err, -EINVAL, "negative number (-%lu) not allowed: %s", v, text);
        *ret = (unsigned)v;
        return 0;
}

static int
parse_value(const char *text, const struct bounds *b, unsigned *ret, struct xp_error *err)
{
        if (b->names)
                for (unsigned i = 0; i <= b->max - b->min; i++)
                        if (strcasecmp(text, b->names[i]) == 0) {
                                *ret = b->min + i;
                                return 0;
                        }
        return parse_int(text, ret, err);
}

/* One comma-separated part: "*", "?", "N", "N-M", with "/step"; robfig's getRange. */
static int
parse_range(char *expr, const struct bounds *b, uint64_t *bits, bool *star, struct xp_error *err)
{
        char whole[FIELD_MAX];
        unsigned start, end, step = 1;
        int r;

        snprintf(whole, sizeof(whole), "%s", expr);
        char *slash = strchr(expr, '/');
        if (slash) {
                *slash++ = '\0';
                if (strchr(slash, '/'))
                        return xp_errorf(err, -EINVAL, "too many slashes: %s", whole);
        }
        char *dash = strchr(expr, '-');
        bool single = !dash;
        bool is_star = strcmp(expr, "*") == 0 || strcmp(expr, "?") == 0;
        if (is_star) {
                start = b->min;
                end = b->max;
        } else {
                if (dash) {
                        *dash++ = '\0';
                        if (strchr(dash, '-'))
                                return xp_errorf(err, -EINVAL, "too many hyphens: %s", whole);
                }
                r = parse_value(expr, b, &start, err);
                if (r < 0)
                        return r;
                end = start;
                if (dash && (r = parse_value(dash, b, &end, err)) < 0)
                        return r;
        }
        if (slash) {
                r = parse_int(slash, &step, err);
                if (r < 0)
                        return r;
                if (single) /* "N/step" means "N-max/step" */
                        end = b->max;
                if (step > 1)
                        is_star = false;
        }
        if (start < b->min)
                return xp_errorf(err,
                                 -EINVAL,
                                 "beginning of range (%u) below minimum (%u): %s",
                                 start,
                                 b->min,
                                 whole);
        if (end > b->max)
                return xp_errorf(
                    err, -EINVAL, "end of range (%u) above maximum (%u): %s", end, b->max, whole);
        if (start > end)
                return xp_errorf(err,
                                 -EINVAL,
                                 "beginning of range (%u) beyond end of range (%u): %s",
                                 start,
                                 end,
                                 whole);
        if (step == 0)
                return xp_errorf(
                    err, -EINVAL, "step of range should be a positive number: %s", whole);
        for (unsigned v = start; v <= end; v += step)
                *bits |= UINT64_C(1) << v;
        *star = *star || is_star;
        return 0;
}

static int parse_field(
    const char *text, const struct bounds *b, uint64_t *bits, bool *star, struct xp_error *err)
{
        char copy[FIELD_MAX];

        if (strlen(text) >= sizeof(copy))
                return xp_errorf(err, -EINVAL, "field too long: %.32s...", text);
        snprintf(copy, sizeof(copy), "%s", text);
        *bits = 0;
        *star = false;
        char *save = NULL;
        for (char *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
                int r = parse_range(part, b, bits, star, err);
                if (r < 0)
                        return r;
        }
        if (*bits == 0)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "failed to parse int from %s: strconv.Atoi: parsing \"%s\": invalid syntax",
                    text,
                    text);
        return 0;
}

static const struct {
        const char *name, *fields;
} macros[] = {
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

static int parse_every(const char *text, struct xp_cron *ret, struct xp_error *err)
{
        struct xp_error why = {0};
        int64_t ms;

        if (xp_duration_parse(text, 0, 100 * XP_DURATION_YEAR_MS, &ms, &why) < 0)
                return xp_errorf(err, -EINVAL, "failed to parse duration %s: %s", text, why.msg);
        *ret = (struct xp_cron){.every_s = ms < 1000 ? 1 : ms / 1000};
        return 0;
}

static int parse_descriptor(const char *text, struct xp_cron *ret, struct xp_error *err)
{
        if (strncmp(text, "@every ", 7) == 0)
                return parse_every(text + 7, ret, err);
        for (size_t i = 0; i < XP_ELEMENTSOF(macros); i++)
                if (strcmp(text, macros[i].name) == 0)
                        return xp_cron_parse(macros[i].fields, ret, err);
        return xp_errorf(err, -EINVAL, "unrecognized descriptor: %s", text);
}

int xp_cron_parse(const char *text, struct xp_cron *ret, struct xp_error *err)
{
        char copy[5 * FIELD_MAX], *f[5 * FIELD_MAX / 2], listed[5 * FIELD_MAX + 8] = "[";
        size_t n = 0;
        struct xp_cron c = {0};
        uint64_t bits[5];
        bool stars[5];

        if (strlen(text) >= sizeof(copy))
                return xp_errorf(err,
                                 -EINVAL,
                                 "schedule too long (%zu bytes, at most %zu)",
                                 strlen(text),
                                 sizeof(copy) - 1);
        if (strstr(text, "TZ"))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
        snprintf(copy, sizeof(copy), "%s", text);
        char *save = NULL;
        for (char *t = strtok_r(copy, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
                f[n++] = t;
        if (n == 0)
                return xp_errorf(err, -EINVAL, "empty spec string");
        if (f[0][0] == '@')
                return parse_descriptor(text + strspn(text, " \t\n"), ret, err);
        if (n != 5) {
                for (size_t i = 0; i < n; i++)
                        snprintf(listed + strlen(listed),
                                 sizeof(listed) - strlen(listed),
                                 "%s%s",
                                 i ? " " : "",
                                 f[i]);
                return xp_errorf(
                    err, -EINVAL, "expected exactly 5 fields, found %zu: %s]", n, listed);
        }
        for (size_t i = 0; i < 5; i++) {
                int r = parse_field(f[i], &fields[i], &bits[i], &stars[i], err);
                if (r < 0)
                        return r;
        }
        c.minutes = bits[0];
        c.hours = (uint32_t)bits[1];
        c.days = (uint32_t)bits[2];
        c.months = (uint32_t)bits[3];
        c.weekdays = (uint32_t)bits[4];
        c.days_star = stars[2];
        c.weekdays_star = stars[4];
        *ret = c;
        return 0;
}
