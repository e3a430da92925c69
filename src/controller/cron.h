/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * CronJob schedules and the CronJob controller's decisions, with no I/O but reading a zone file:
 *
 * cron_parse.c: the five-field schedule as Kubernetes reads it (robfig/cron's standard parser):
 *   lists, ranges, steps, month and weekday names, "?" and the @yearly/@monthly/@weekly/@daily/
 *   @midnight/@hourly macros and "@every <duration>", with that parser's error messages;
 * tzfile.c, tzrule.c: IANA time zones from the system's zoneinfo (TZif files and the POSIX rule
 *   of their footer for times past the table);
 * cron_next.c: the next time a schedule fires after an instant, in a zone;
 * cronjob.c: which start time is due, missed or already taken, and what the concurrency policy
 *   makes of it (Kubernetes' mostRecentScheduleTime and syncCronJob).
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

/* ---- the CronJob controller's decision (cronjob.c) ---------------------------------------- */

enum xp_cronjob_concurrency {
        XP_CRONJOB_ALLOW,
        XP_CRONJOB_FORBID,
        XP_CRONJOB_REPLACE,
};

struct xp_cronjob_state {
        int64_t created_s;         /* metadata.creationTimestamp */
        int64_t last_schedule_s;   /* status.lastScheduleTime, 0 when never */
        int64_t starting_deadline; /* spec.startingDeadlineSeconds, -1 when unset */
        enum xp_cronjob_concurrency concurrency;
        bool suspend;
        unsigned n_active;     /* status.active */
        bool scheduled_exists; /* a Job for the due time exists already (its name) */
};

enum xp_cronjob_action {
        XP_CRONJOB_WAIT,      /* nothing due */
        XP_CRONJOB_CREATE,    /* create the Job of scheduled_s (Replace: delete the active first) */
        XP_CRONJOB_MISSED,    /* due but past startingDeadlineSeconds: event MissSchedule */
        XP_CRONJOB_FORBIDDEN, /* due, but a Job runs and the policy is Forbid: JobAlreadyActive */
};

struct xp_cronjob_decision {
        enum xp_cronjob_action action;
        int64_t scheduled_s;  /* the due start time (CREATE, MISSED, FORBIDDEN) */
        bool replace;         /* CREATE under Replace with active Jobs: delete them first */
        bool too_many_missed; /* more than 100 start times missed: event TooManyMissedTimes */
        int64_t next_s;       /* when to look again (the next start time), 0 when never */
};

/* What the controller does now for a CronJob. -ERANGE "time difference between two schedules
 * is less than 1 second" or when the schedule never fires. */
int xp_cronjob_decide(const struct xp_cron *cron,
                      const struct xp_tz *tz,
                      const struct xp_cronjob_state *state,
                      int64_t now_s,
                      struct xp_cronjob_decision *ret,
                      struct xp_error *err);

/* The name of the Job of a start time: "<cronjob>-<minutes since the epoch>", as Kubernetes
 * names it (so a restarted controller finds the Job it made). */
int xp_cronjob_job_name(const char *cronjob, int64_t scheduled_s, char *buf, size_t size);

/* A finished Job of a CronJob, for its history limits. */
struct xp_cronjob_finished {
        int64_t start_s; /* status.startTime, 0 when unset (oldest) */
        bool failed;
};

/*
 * Which finished Jobs go so that at most success_limit succeeded and failed_limit failed ones
 * stay (the oldest by start time go first; -1: no limit): marks ret_delete[i]. Kubernetes'
 * cleanupFinishedJobs.
 */
void xp_cronjob_history(const struct xp_cronjob_finished *jobs,
                        size_t n,
                        int32_t success_limit,
                        int32_t failed_limit,
                        bool *ret_delete);
