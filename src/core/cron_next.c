/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The next time a schedule fires: walks forward over instants, jumping to the next local month,
 * day, hour or minute that can match, and never across a change of the zone's offset (it stops
 * at the change and looks again), so that no local time is skipped that exists.
 */
#include <errno.h>
#include <time.h>

#include "xpool/cron.h"

#define SEARCH_S   (5LL * 366 * 86400)
#define ROUNDS_MAX 1000000
#define SHIFT_MAX  (3 * 3600) /* no zone changes its offset by more in one step */

static int64_t days_from_civil(int64_t y, int m, int d)
{
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

static int64_t ceil_minute(int64_t t)
{
        int64_t r = t % 60;
        return r == 0 ? t : t + (r > 0 ? 60 - r : -r);
}

/* The next candidate on the way to target (an instant at which local time is a boundary, if the
 * offset off holds until then): target itself, or where the offset changes first. */
static int64_t advance(const struct xp_tz *tz, int64_t from, int32_t off, int64_t target)
{
        if (target <= from)
                return from + 60;
        if (xp_tz_offset(tz, target) == off)
                return target;
        int64_t lo = from, hi = target; /* offset(lo) == off, offset(hi) != off */
        while (hi - lo > 1) {
                int64_t mid = lo + (hi - lo) / 2;
                if (xp_tz_offset(tz, mid) == off)
                        lo = mid;
                else
                        hi = mid;
        }
        return ceil_minute(hi);
}

static bool day_matches(const struct xp_cron *c, const struct tm *tm)
{
        bool dom = c->days >> tm->tm_mday & 1;
        bool dow = c->weekdays >> tm->tm_wday & 1;
        return c->days_star || c->weekdays_star ? dom && dow : dom || dow;
}

/* Whether the local time at t occurred already, before a change that set clocks back. */
static bool repeated(const struct xp_tz *tz, int64_t t, int32_t off)
{
        int32_t before = xp_tz_offset(tz, t - SHIFT_MAX);
        if (before <= off)
                return false;
        int64_t twin = t - (before - off);
        return xp_tz_offset(tz, twin) == before;
}

int xp_cron_next(const struct xp_cron *cron, const struct xp_tz *tz, int64_t t, int64_t *ret)
{
        if (cron->every_s > 0) {
                *ret = t + cron->every_s;
                return 0;
        }
        int64_t c = t - (t % 60 + 60) % 60 + 60; /* the first minute boundary after t */
        for (unsigned round = 0; round < ROUNDS_MAX && c <= t + SEARCH_S; round++) {
                int32_t off = xp_tz_offset(tz, c);
                time_t local = (time_t)(c + off);
                struct tm tm;
                if (!gmtime_r(&local, &tm))
                        return -ERANGE;
                int64_t y = (int64_t)tm.tm_year + 1900;
                int64_t day = days_from_civil(y, tm.tm_mon + 1, tm.tm_mday) * 86400;
                if (!(cron->months >> (tm.tm_mon + 1) & 1)) {
                        int64_t next = tm.tm_mon == 11 ? days_from_civil(y + 1, 1, 1)
                                                       : days_from_civil(y, tm.tm_mon + 2, 1);
                        c = advance(tz, c, off, next * 86400 - off);
                } else if (!day_matches(cron, &tm)) {
                        c = advance(tz, c, off, day + 86400 - off);
                } else if (!(cron->hours >> tm.tm_hour & 1)) {
                        c = advance(tz, c, off, day + (tm.tm_hour + 1) * 3600 - off);
                } else if (!(cron->minutes >> tm.tm_min & 1) || repeated(tz, c, off)) {
                        c += 60;
                } else {
                        *ret = c;
                        return 0;
                }
        }
        return -ERANGE;
}
