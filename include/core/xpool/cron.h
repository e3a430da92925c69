/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Cron schedules and time zones, as a CronJob uses them (docs/workloads.md, "CronJobs"):
 *
 * cron_parse.c: the five-field schedule as Kubernetes reads it (robfig/cron's standard parser):
 *   lists, ranges, steps, month and weekday names, "?" and the @yearly/@monthly/@weekly/@daily/
 *   @midnight/@hourly macros and "@every <duration>", with that parser's error messages;
 * tzfile.c, tzrule.c: IANA time zones from the system's zoneinfo (TZif files and the POSIX rule
 *   of their footer for times past the table), read without touching the process' TZ;
 * cron_next.c: the next time a schedule fires after an instant, in a zone.
 *
 * The API's validation (kind_batch_cronjob.c) and the CronJob controller use the same code, so
 * what is accepted is what runs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

#define XP_ZONEINFO_ROOT "/usr/share/zoneinfo"

struct xp_cron {
        uint64_t minutes;   /* bit n: minute n */
        uint32_t hours;     /* bit n: hour n */
        uint32_t days;      /* bit n: day of month n (1-31) */
        uint32_t months;    /* bit n: month n (1-12) */
        uint32_t weekdays;  /* bit n: weekday n (0 Sunday - 6) */
        bool days_star;     /* day of month was "*" or "?": days and weekdays must both match */
        bool weekdays_star; /* likewise for the weekday field */
        int64_t every_s;    /* "@every": a constant delay instead of the fields */
};

/* Parses a schedule. -EINVAL with robfig/cron's message ("expected exactly 5 fields, found 4:
 * * * * *") in err; ret untouched on failure. */
int xp_cron_parse(const char *text, struct xp_cron *ret, struct xp_error *err);

struct xp_tz;

/*
 * Loads the IANA zone name (e.g. "Europe/Berlin") from root (XP_ZONEINFO_ROOT, settable for
 * tests). "UTC" and "Etc/UTC" need no file. -EINVAL "unknown time zone NAME" for a name that is
 * not a zone (paths that climb out of root, "Local", files that are not TZif), -ENOMEM.
 * Caller frees with xp_tz_free().
 */
int xp_tz_load(const char *root, const char *name, struct xp_tz **ret, struct xp_error *err);
void xp_tz_free(struct xp_tz *tz);

/* The zone's offset east of UTC at instant t (s since the epoch). NULL is UTC. */
int32_t xp_tz_offset(const struct xp_tz *tz, int64_t t);

/*
 * The first time after t (strictly) at which the schedule fires in zone tz (NULL: UTC). A local
 * time that a daylight-saving change skips does not fire; one that it repeats fires once (at
 * its first occurrence). -ERANGE when the schedule never fires within five years (such as
 * "0 0 31 2 *").
 */
int xp_cron_next(const struct xp_cron *cron, const struct xp_tz *tz, int64_t t, int64_t *ret);
