/* SPDX-License-Identifier: Apache-2.0 */
/* Durations: the flags' grammar and the two printed forms (include/util/xpool/duration.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/duration.h"
#include "xpool/macro.h"

static const struct {
        const char *unit;
        int64_t ms;
} units[] = {
    {"ms", 1},
    {"s", 1000},
    {"m", 60 * 1000},
    {"h", 60 * 60 * 1000},
};

/* The unit at p, the longest that matches (ms, not m); XP_ELEMENTSOF(units) when none does. */
static size_t unit_at(const char *p)
{
        size_t best = XP_ELEMENTSOF(units);

        for (size_t i = 0; i < XP_ELEMENTSOF(units); i++)
                if (strncmp(p, units[i].unit, strlen(units[i].unit)) == 0 &&
                    (best == XP_ELEMENTSOF(units) ||
                     strlen(units[i].unit) > strlen(units[best].unit)))
                        best = i;
        return best;
}

/* A bound for a message: Go's form without its zero tail ("24h", not "24h0m0s"). */
static const char *bound(int64_t ms, char buf[static XP_DURATION_MAX])
{
        size_t len;

        xp_duration_format(ms, buf);
        len = strlen(buf);
        if (len > 4 && strcmp(buf + len - 4, "0m0s") == 0 && buf[len - 5] == 'h')
                buf[len - 4] = '\0';
        else if (len > 2 && strcmp(buf + len - 2, "0s") == 0 && buf[len - 3] == 'm')
                buf[len - 2] = '\0';
        return buf;
}

/* x (>= 0) without its fraction; what no int64_t holds stays as it is: out of any range. */
static double whole_ms(double x)
{
        return x < 9e18 ? (double)(int64_t)x : x;
}

/* The sum of text's number-unit pairs in ms (a plain number: seconds), each cut to whole ms. */
static int sum(const char *text, double *ret, struct xp_error *err)
{
        const char *p = text;
        double total = 0;

        for (;;) {
                char *end;
                double v;
                size_t u;

                if (*p < '0' || *p > '9')
                        return xp_errorf(
                            err, -EINVAL, "duration '%s': expected a number at '%s'", text, p);
                errno = 0;
                v = strtod(p, &end);
                if (errno != 0 || end == p)
                        return xp_errorf(
                            err, -EINVAL, "duration '%s': bad number at '%s'", text, p);
                p = end;
                if (!*p && p != text && total == 0) {
                        *ret = whole_ms(v * 1000); /* a plain number: seconds */
                        return 0;
                }
                u = unit_at(p);
                if (u == XP_ELEMENTSOF(units))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "duration '%s': unknown unit at '%s' (ms, s, m or h)",
                                         text,
                                         p);
                total += whole_ms(v * (double)units[u].ms);
                p += strlen(units[u].unit);
                if (!*p)
                        break;
        }
        *ret = total;
        return 0;
}

int xp_duration_parse(
    const char *text, int64_t min_ms, int64_t max_ms, int64_t *ret_ms, struct xp_error *err)
{
        char b[XP_DURATION_MAX];
        double ms = 0;
        int r;

        if (!text || !text[0])
                return xp_errorf(err, -EINVAL, "an empty duration: expected e.g. 40s or 5m");
        r = sum(text, &ms, err);
        if (r < 0)
                return r;
        if (ms > (double)max_ms)
                return xp_errorf(
                    err, -ERANGE, "duration '%s': longer than %s", text, bound(max_ms, b));
        if (ms < (double)min_ms)
                return xp_errorf(
                    err, -ERANGE, "duration '%s': shorter than %s", text, bound(min_ms, b));
        *ret_ms = (int64_t)ms;
        return 0;
}

void xp_duration_format(int64_t ms, char buf[static XP_DURATION_MAX])
{
        int64_t s = ms / 1000, frac = ms % 1000;
        char sec[16];

        if (ms == 0) {
                snprintf(buf, XP_DURATION_MAX, "0s");
                return;
        }
        if (ms < 1000) {
                snprintf(buf, XP_DURATION_MAX, "%" PRId64 "ms", ms);
                return;
        }
        if (frac)
                snprintf(sec, sizeof(sec), "%" PRId64 ".%03" PRId64, s % 60, frac);
        else
                snprintf(sec, sizeof(sec), "%" PRId64, s % 60);
        if (frac) /* trailing zeros go, as in Go */
                for (size_t n = strlen(sec); sec[n - 1] == '0'; n--)
                        sec[n - 1] = 0;
        if (s >= 3600)
                snprintf(buf,
                         XP_DURATION_MAX,
                         "%" PRId64 "h%" PRId64 "m%ss",
                         s / 3600,
                         s / 60 % 60,
                         sec);
        else if (s >= 60)
                snprintf(buf, XP_DURATION_MAX, "%" PRId64 "m%ss", s / 60, sec);
        else
                snprintf(buf, XP_DURATION_MAX, "%ss", sec);
}

void xp_duration_human(int64_t seconds, char *buf, size_t size)
{
        int64_t minutes, hours, days;

        if (size == 0)
                return;
        /* kubectl tolerates a second of clock skew between client and server */
        if (seconds < -1) {
                snprintf(buf, size, "<invalid>");
                return;
        }
        if (seconds < 0) {
                snprintf(buf, size, "0s");
                return;
        }
        if (seconds < 2 * 60) {
                snprintf(buf, size, "%" PRId64 "s", seconds);
                return;
        }

        minutes = seconds / 60;
        if (minutes < 10) {
                if (seconds % 60 == 0)
                        snprintf(buf, size, "%" PRId64 "m", minutes);
                else
                        snprintf(buf, size, "%" PRId64 "m%" PRId64 "s", minutes, seconds % 60);
                return;
        }
        if (minutes < 3 * 60) {
                snprintf(buf, size, "%" PRId64 "m", minutes);
                return;
        }

        hours = minutes / 60;
        if (hours < 8) {
                if (minutes % 60 == 0)
                        snprintf(buf, size, "%" PRId64 "h", hours);
                else
                        snprintf(buf, size, "%" PRId64 "h%" PRId64 "m", hours, minutes % 60);
                return;
        }
        if (hours < 48) {
                snprintf(buf, size, "%" PRId64 "h", hours);
                return;
        }

        days = hours / 24;
        if (hours < 8 * 24) {
                if (hours % 24 == 0)
                        snprintf(buf, size, "%" PRId64 "d", days);
                else
                        snprintf(buf, size, "%" PRId64 "d%" PRId64 "h", days, hours % 24);
                return;
        }
        if (days < 2 * 365) {
                snprintf(buf, size, "%" PRId64 "d", days);
                return;
        }
        if (days < 8 * 365 && days % 365 != 0) {
                snprintf(buf, size, "%" PRId64 "y%" PRId64 "d", days / 365, days % 365);
                return;
        }
        snprintf(buf, size, "%" PRId64 "y", days / 365);
}
