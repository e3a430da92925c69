/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CronJob controller's decision for one CronJob at one time (Kubernetes' syncCronJob and
 * mostRecentScheduleTime): the most recent start time not yet taken, whether it is too late for
 * startingDeadlineSeconds, and what the concurrency policy makes of the Jobs still running. It
 * reads only the CronJob's status and the time, so a restarted controller decides the same.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "cron.h"

#define MANY_MISSED 100

/* The most recent start time in (earliest, now], 0 when none; and how many were missed. */
static int most_recent(const struct xp_cron *cron,
                       const struct xp_tz *tz,
                       int64_t earliest,
                       int64_t now,
                       int64_t *ret,
                       int64_t *ret_missed,
                       struct xp_error *err)
{
        int64_t t1, t2;
        int r;

        *ret = 0;
        *ret_missed = 0;
        if ((r = xp_cron_next(cron, tz, earliest, &t1)) < 0 ||
            (r = xp_cron_next(cron, tz, t1, &t2)) < 0)
                return xp_errorf(err, r, "the schedule never fires");
        if (now < t1)
                return 0;
        *ret_missed = 1;
        if (now < t2) {
                *ret = t1;
                return 0;
        }
        int64_t between = t2 - t1;
        if (between < 1)
                return xp_errorf(
                    err, -ERANGE, "time difference between two schedules is less than 1 second");
        /* A rough count, as Kubernetes makes it: intervals of the first two that fit. */
        int64_t missed = (now - t1) / between + 1;
        *ret_missed = missed;
        int64_t t = t1 + (missed - 2) * between;
        if (t < earliest)
                t = earliest;
        /* Walk the last ones exactly (irregular schedules such as "30 6-16/4 * * 1-5"). */
        for (unsigned round = 0; round < 100000; round++) {
                int64_t next;
                if (xp_cron_next(cron, tz, t, &next) < 0 || next > now)
                        break;
                *ret = next;
                t = next;
        }
        return 0;
}

int xp_cronjob_decide(const struct xp_cron *cron,
                      const struct xp_tz *tz,
                      const struct xp_cronjob_state *s,
                      int64_t now_s,
                      struct xp_cronjob_decision *ret,
                      struct xp_error *err)
{
        struct xp_cronjob_decision d = {.action = XP_CRONJOB_WAIT};
        int64_t earliest = s->last_schedule_s > 0 ? s->last_schedule_s : s->created_s;
        int64_t scheduled, missed;
        int r;

        if (s->starting_deadline >= 0 && now_s - s->starting_deadline > earliest)
                earliest = now_s - s->starting_deadline; /* nothing before this can start */
        r = most_recent(cron, tz, earliest, now_s, &scheduled, &missed, err);
        if (r < 0)
                return r;
        if (xp_cron_next(cron, tz, now_s, &d.next_s) < 0)
                d.next_s = 0;
        if (s->suspend || scheduled == 0) {
                *ret = d;
                return 0;
        }
        d.scheduled_s = scheduled;
        d.too_many_missed = missed > MANY_MISSED;
        if (s->starting_deadline >= 0 && scheduled + s->starting_deadline < now_s)
                d.action = XP_CRONJOB_MISSED;
        else if (s->scheduled_exists || s->last_schedule_s == scheduled)
                d.action = XP_CRONJOB_WAIT; /* taken already */
        else if (s->concurrency == XP_CRONJOB_FORBID && s->n_active > 0)
                d.action = XP_CRONJOB_FORBIDDEN;
        else {
                d.action = XP_CRONJOB_CREATE;
                d.replace = s->concurrency == XP_CRONJOB_REPLACE && s->n_active > 0;
        }
        *ret = d;
        return 0;
}

int xp_cronjob_job_name(const char *cronjob, int64_t scheduled_s, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s-%lld", cronjob, (long long)(scheduled_s / 60));
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Marks the oldest jobs of one outcome beyond limit. */
static void
prune(const struct xp_cronjob_finished *jobs, size_t n, bool failed, int32_t limit, bool *del)
{
        size_t count = 0;

        for (size_t i = 0; i < n; i++)
                count += jobs[i].failed == failed;
        for (; limit >= 0 && count > (size_t)limit; count--) {
                size_t oldest = SIZE_MAX;
                for (size_t i = 0; i < n; i++)
                        if (jobs[i].failed == failed && !del[i] &&
                            (oldest == SIZE_MAX || jobs[i].start_s < jobs[oldest].start_s))
                                oldest = i;
                del[oldest] = true;
        }
}

void xp_cronjob_history(const struct xp_cronjob_finished *jobs,
                        size_t n,
                        int32_t success_limit,
                        int32_t failed_limit,
                        bool *ret_delete)
{
        for (size_t i = 0; i < n; i++)
                ret_delete[i] = false;
        prune(jobs, n, false, success_limit, ret_delete);
        prune(jobs, n, true, failed_limit, ret_delete);
}
