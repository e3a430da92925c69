/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The CronJob controller's decisions, with no I/O (cronjob.c): which start time is due, missed
 * or already taken, and what the concurrency policy makes of it (Kubernetes' syncCronJob and
 * mostRecentScheduleTime); the history limits. Schedules and zones: xpool/cron.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/cron.h"
#include "xpool/error.h"

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
