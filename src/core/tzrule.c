/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The POSIX TZ rule at the end of a TZif file ("EST5EDT,M3.2.0,M11.1.0"): what a zone does
 * after its table of transitions ends (slim zone files end theirs early).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tz_internal.h"

static const char *skip_name(const char *p)
{
        if (*p == '<') {
                const char *end = strchr(p, '>');
                return end ? end + 1 : NULL;
        }
        const char *start = p;
        while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
                p++;
        return p - start >= 3 ? p : NULL;
}

static long number(const char **p, long max)
{
        char *end;
        long v = strtol(*p, &end, 10);
        if (end == *p || v < 0 || v > max)
                return -1;
        *p = end;
        return v;
}

/* [+-]hh[:mm[:ss]], in seconds; -1 (out of band: 1 day) on error */
static int64_t clock_time(const char **p, bool *ok)
{
        int sign = 1;
        long h, m = 0, s = 0;

        if (**p == '+' || **p == '-')
                sign = *(*p)++ == '-' ? -1 : 1;
        h = number(p, 167);
        if (h < 0)
                goto bad;
        if (**p == ':') {
                (*p)++;
                if ((m = number(p, 59)) < 0)
                        goto bad;
                if (**p == ':') {
                        (*p)++;
                        if ((s = number(p, 59)) < 0)
                                goto bad;
                }
        }
        return sign * (h * 3600 + m * 60 + s);
bad:
        *ok = false;
        return 0;
}

static int parse_date(const char **p, struct tz_date *d)
{
        bool ok = true;

        *d = (struct tz_date){.time_s = 7200};
        if (**p == 'M') {
                (*p)++;
                d->kind = 'M';
                d->month = (int)number(p, 12);
                if (d->month < 1 || *(*p)++ != '.')
                        return -EINVAL;
                d->week = (int)number(p, 5);
                if (d->week < 1 || *(*p)++ != '.')
                        return -EINVAL;
                d->day = (int)number(p, 6);
                if (d->day < 0)
                        return -EINVAL;
        } else {
                d->kind = **p == 'J' ? 'J' : 'D';
                if (d->kind == 'J')
                        (*p)++;
                d->day = (int)number(p, 365);
                if (d->day < (d->kind == 'J'))
                        return -EINVAL;
        }
        if (**p == '/') {
                (*p)++;
                d->time_s = clock_time(p, &ok);
        }
        return ok ? 0 : -EINVAL;
}

int tz_rule_parse(const char *text, struct tz_rule *ret)
{
        struct tz_rule r = {0};
        const char *p = skip_name(text);
        bool ok = true;

        if (!p)
                return -EINVAL;
        r.std_off = (int32_t)-clock_time(&p, &ok);
        r.dst_off = r.std_off + 3600;
        if (!ok)
                return -EINVAL;
        if (*p && *p != ',') {
                p = skip_name(p);
                if (!p)
                        return -EINVAL;
                r.has_dst = true;
                if (*p && *p != ',')
                        r.dst_off = (int32_t)-clock_time(&p, &ok);
                if (!ok)
                        return -EINVAL;
        }
        if (r.has_dst) {
                if (*p++ != ',' || parse_date(&p, &r.start) < 0 || *p++ != ',' ||
                    parse_date(&p, &r.end) < 0)
                        return -EINVAL;
        }
        if (*p)
                return -EINVAL;
        *ret = r;
        return 0;
}

static bool leap(int64_t y)
{
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days since the epoch of a civil date (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

/* The local instant (seconds since the epoch, as if UTC) of a rule's date in year y. */
static int64_t date_in_year(const struct tz_date *d, int64_t y)
{
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        int64_t day;

        if (d->kind == 'J')
                day = days_from_civil(y, 1, 1) + d->day - 1 + (leap(y) && d->day >= 60);
        else if (d->kind == 'D')
                day = days_from_civil(y, 1, 1) + d->day;
        else {
                int64_t first = days_from_civil(y, d->month, 1);
                int wday1 = (int)(((first % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
                int dim = mdays[d->month - 1] + (d->month == 2 && leap(y));
                int mday = 1 + (d->day - wday1 + 7) % 7 + (d->week - 1) * 7;
                while (mday > dim)
                        mday -= 7;
                day = first + mday - 1;
        }
        return day * 86400 + d->time_s;
}

int32_t tz_rule_offset(const struct tz_rule *rule, int64_t t)
{
        if (!rule->has_dst)
                return rule->std_off;
        struct tm tm;
        time_t local = (time_t)(t + rule->std_off);
        if (!gmtime_r(&local, &tm))
                return rule->std_off;
        int64_t y = (int64_t)tm.tm_year + 1900;
        /* the start is given in standard time, the end in daylight time */
        int64_t start = date_in_year(&rule->start, y) - rule->std_off;
        int64_t end = date_in_year(&rule->end, y) - rule->dst_off;
        bool dst = start < end ? t >= start && t < end : !(t >= end && t < start);
        return dst ? rule->dst_off : rule->std_off;
}
