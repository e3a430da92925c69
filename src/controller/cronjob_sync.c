/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CronJob controller in the workload loop (docs/workloads.md): each sync reads the CronJob and
 * the Jobs it controls from the cache, lets xp_cronjob_decide() say what is due, and creates the
 * Job of that start time (named after it, so a restart finds it), deletes what Replace and the
 * history limits remove, writes the status and comes back at the next start time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"
#include "workloads.h"
#include "workqueue.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define JOBS_MAX 256 /* Jobs of one CronJob looked at */

static int64_t time_at(const json_t *o, const char *a, const char *b)
{
        int64_t t = 0;
        const char *text = json_string_value(json_object_get(json_object_get(o, a), b));
        if (text)
                (void)xp_time_parse_rfc3339(text, &t);
        return t;
}

/* Whether a Job finished, and how: 0 running, 1 Complete, 2 Failed. */
static int job_outcome(const json_t *job)
{
        const json_t *c;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(job, "status"), "conditions"), i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *status = json_string_value(json_object_get(c, "status"));
                if (!type || !status || strcmp(status, "True") != 0)
                        continue;
                if (strcmp(type, "Complete") == 0)
                        return 1;
                if (strcmp(type, "Failed") == 0)
                        return 2;
        }
        return 0;
}

struct jobs {
        const char *uid;
        const json_t *all[JOBS_MAX];
        size_t n;
};

static int collect(json_t *job, void *userdata)
{
        struct jobs *j = userdata;
        const char *uid = json_string_value(json_object_get(xp_owner_controller_ref(job), "uid"));

        if (uid && strcmp(uid, j->uid) == 0 && j->n < JOBS_MAX)
                j->all[j->n++] = job;
        return 0;
}

static void delete_job(struct xp_workloads *w, const json_t *cj, const json_t *job)
{
        struct xp_error err = {0};
        int r = xp_registry_delete(
            w->registry, "jobs", wl_meta(job, "namespace"), wl_meta(job, "name"), 0, NULL, &err);

        if (r >= 0)
                wl_event(
                    w, cj, "Normal", "SuccessfulDelete", "Deleted job %s", wl_meta(job, "name"));
        else if (r != -ENOENT)
                wl_event(w, cj, "Warning", "FailedDelete", "Deleted job: %s", err.msg);
}

/* The Job of start time at from the CronJob's jobTemplate. NULL: -ENOMEM. */
static json_t *job_json(const json_t *cj, const char *name, int64_t at)
{
        const json_t *template = json_object_get(json_object_get(cj, "spec"), "jobTemplate");
        json_t *meta = json_deep_copy(json_object_get(template, "metadata"));
        json_t *spec = json_deep_copy(json_object_get(template, "spec"));
        json_t *ref = xp_owner_ref_new("batch/v1", "CronJob", cj);
        char when[XP_RFC3339_MAX];
        json_t *job = NULL;

        if (!meta)
                meta = json_object();
        if (!spec)
                spec = json_object();
        if (meta && spec && ref && xp_time_format_rfc3339(at, when) == 0) {
                json_t *annotations = json_object_get(meta, "annotations");
                if (!json_is_object(annotations))
                        json_object_set_new(meta, "annotations", annotations = json_object());
                json_object_set_new(annotations,
                                    "batch.kubernetes.io/cronjob-scheduled-timestamp",
                                    json_string(when));
                json_object_set_new(meta, "name", json_string(name));
                json_object_set_new(meta, "namespace", json_string(wl_meta(cj, "namespace")));
                json_object_set_new(meta, "ownerReferences", json_pack("[O]", ref));
                job = json_pack("{s:s, s:s, s:O, s:O}",
                                "apiVersion",
                                "batch/v1",
                                "kind",
                                "Job",
                                "metadata",
                                meta,
                                "spec",
                                spec);
        }
        json_decref(meta);
        json_decref(spec);
        json_decref(ref);
        return job;
}

/* Creates the Job of start time at; its reference for status.active in *ret_ref. */
static int create_job(struct xp_workloads *w, const json_t *cj, int64_t at, json_t **ret_ref)
{
        const struct xp_kind *kind = xp_kind_by_name("Job");
        struct xp_error err = {0};
        char name[300];
        json_t *job, *out = NULL;
        int r;

        if (!kind || xp_cronjob_job_name(wl_meta(cj, "name"), at, name, sizeof(name)) < 0)
                return -EINVAL;
        job = job_json(cj, name, at);
        r = job ? wl_create_object(w, kind, wl_meta(cj, "namespace"), job, &out, &err) : -ENOMEM;
        json_decref(job);
        if (r <= 0) {
                wl_event(w,
                         cj,
                         "Warning",
                         "FailedCreate",
                         "Error creating job: %s",
                         err.msg[0] ? err.msg : strerror(r < 0 ? -r : EPERM));
                return r < 0 ? r : -EPERM;
        }
        wl_event(w, cj, "Normal", "SuccessfulCreate", "Created job %s", name);
        *ret_ref =
            json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                      "kind",
                      "Job",
                      "namespace",
                      wl_meta(out, "namespace"),
                      "name",
                      wl_meta(out, "name"),
                      "uid",
                      wl_meta(out, "uid") ? wl_meta(out, "uid") : "",
                      "apiVersion",
                      "batch/v1",
                      "resourceVersion",
                      wl_meta(out, "resourceVersion") ? wl_meta(out, "resourceVersion") : "");
        json_decref(out);
        return *ret_ref ? 0 : -ENOMEM;
}

static json_t *job_ref(const json_t *job)
{
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                         "kind",
                         "Job",
                         "namespace",
                         wl_meta(job, "namespace") ? wl_meta(job, "namespace") : "",
                         "name",
                         wl_meta(job, "name") ? wl_meta(job, "name") : "",
                         "uid",
                         wl_meta(job, "uid") ? wl_meta(job, "uid") : "",
                         "apiVersion",
                         "batch/v1",
                         "resourceVersion",
                         wl_meta(job, "resourceVersion") ? wl_meta(job, "resourceVersion") : "");
}

static int set_time(json_t *status, const char *key, int64_t t)
{
        char buf[XP_RFC3339_MAX];

        if (t <= 0 || xp_time_format_rfc3339(t, buf) < 0)
                return 0;
        return json_object_set_new(status, key, json_string(buf)) < 0 ? -ENOMEM : 0;
}

/* What a sync knows of a CronJob and its Jobs. */
struct cj_sync {
        const json_t *cj;
        struct xp_cron cron;
        struct xp_tz *tz;
        struct xp_cronjob_state state;
        struct jobs jobs;
        json_t *active; /* status.active being built */
        int64_t last_success_s;
};

/* Reads the Jobs: the running ones into active, the finished ones through the history limits. */
static int survey(struct xp_workloads *w, struct cj_sync *s)
{
        const json_t *spec = json_object_get(s->cj, "spec");
        struct xp_cronjob_finished finished[JOBS_MAX];
        size_t idx[JOBS_MAX], n = 0;
        bool del[JOBS_MAX];

        for (size_t i = 0; i < s->jobs.n; i++) {
                const json_t *job = s->jobs.all[i];
                int outcome = job_outcome(job);
                if (outcome == 0) {
                        if (json_array_append_new(s->active, job_ref(job)) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (outcome == 1 && time_at(job, "status", "completionTime") > s->last_success_s)
                        s->last_success_s = time_at(job, "status", "completionTime");
                finished[n] = (struct xp_cronjob_finished){
                    .start_s = time_at(job, "status", "startTime"), .failed = outcome == 2};
                idx[n++] = i;
        }
        s->state.n_active = (unsigned)json_array_size(s->active);
        int64_t ok = json_is_integer(json_object_get(spec, "successfulJobsHistoryLimit"))
                         ? json_integer_value(json_object_get(spec, "successfulJobsHistoryLimit"))
                         : 3;
        int64_t bad = json_is_integer(json_object_get(spec, "failedJobsHistoryLimit"))
                          ? json_integer_value(json_object_get(spec, "failedJobsHistoryLimit"))
                          : 1;
        xp_cronjob_history(finished, n, (int32_t)ok, (int32_t)bad, del);
        for (size_t k = 0; k < n; k++)
                if (del[k])
                        delete_job(w, s->cj, s->jobs.all[idx[k]]);
        return 0;
}

static const char *rfc1123z(int64_t t, char *buf, size_t size)
{
        struct tm tm;
        time_t tt = (time_t)t;

        if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%a, %d %b %Y %H:%M:%S +0000", &tm) == 0)
                snprintf(buf, size, "%lld", (long long)t);
        return buf;
}

/* Acts on the decision; the new lastScheduleTime in *ret_last (0: unchanged). */
static int act(struct xp_workloads *w,
               struct cj_sync *s,
               const struct xp_cronjob_decision *d,
               int64_t *ret_last)
{
        char when[64];
        json_t *ref = NULL;
        size_t i;
        json_t *a;
        int r;

        if (d->too_many_missed)
                wl_event(
                    w,
                    s->cj,
                    "Warning",
                    "TooManyMissedTimes",
                    "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew");
        switch (d->action) {
        case XP_CRONJOB_WAIT:
                return 0;
        case XP_CRONJOB_MISSED:
                wl_event(w,
                         s->cj,
                         "Warning",
                         "MissSchedule",
                         "Missed scheduled time to start a job: %s",
                         rfc1123z(d->scheduled_s, when, sizeof(when)));
                return 0;
        case XP_CRONJOB_FORBIDDEN:
                wl_event(
                    w,
                    s->cj,
                    "Normal",
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid");
                return 0;
        case XP_CRONJOB_CREATE:
                break;
        }
        if (d->replace) {
                json_array_foreach(
                    s->active,
                    i,
                    a) for (size_t k = 0; k < s->jobs.n;
                            k++) if (xp_streq0(wl_meta(s->jobs.all[k], "uid"),
                                               json_string_value(json_object_get(a, "uid"))))
                    delete_job(w, s->cj, s->jobs.all[k]);
                json_array_clear(s->active);
        }
        r = create_job(w, s->cj, d->scheduled_s, &ref);
        if (r < 0)
                return r;
        if (json_array_append_new(s->active, ref) < 0)
                return -ENOMEM;
        *ret_last = d->scheduled_s;
        return 0;
}

/* Reads the schedule and the zone; false (with a Warning) when the CronJob cannot run. */
static bool prepare(struct xp_workloads *w, struct cj_sync *s)
{
        const json_t *spec = json_object_get(s->cj, "spec");
        const char *schedule = json_string_value(json_object_get(spec, "schedule"));
        const char *zone = json_string_value(json_object_get(spec, "timeZone"));
        const char *policy = json_string_value(json_object_get(spec, "concurrencyPolicy"));
        struct xp_error err = {0};

        if (xp_cron_parse(schedule ? schedule : "", &s->cron, &err) < 0) {
                wl_event(w,
                         s->cj,
                         "Warning",
                         "UnparseableSchedule",
                         "unparseable schedule: \"%s\" : %s",
                         schedule ? schedule : "",
                         err.msg);
                return false;
        }
        if (zone && xp_tz_load(XP_ZONEINFO_ROOT, zone, &s->tz, &err) < 0) {
                wl_event(w,
                         s->cj,
                         "Warning",
                         "UnknownTimeZone",
                         "invalid timeZone: \"%s\": %s",
                         zone,
                         err.msg);
                return false;
        }
        s->state = (struct xp_cronjob_state){
            .created_s = time_at(s->cj, "metadata", "creationTimestamp"),
            .last_schedule_s = time_at(s->cj, "status", "lastScheduleTime"),
            .starting_deadline =
                json_is_integer(json_object_get(spec, "startingDeadlineSeconds"))
                    ? json_integer_value(json_object_get(spec, "startingDeadlineSeconds"))
                    : -1,
            .concurrency = policy && strcmp(policy, "Forbid") == 0    ? XP_CRONJOB_FORBID
                           : policy && strcmp(policy, "Replace") == 0 ? XP_CRONJOB_REPLACE
                                                                      : XP_CRONJOB_ALLOW,
            .suspend = json_is_true(json_object_get(spec, "suspend")),
        };
        return true;
}

static int
write_status(struct xp_workloads *w, const char *key, struct cj_sync *s, int64_t last_schedule)
{
        json_t *status = json_object();
        int r = status ? 0 : -ENOMEM;

        if (r == 0 && json_array_size(s->active) > 0)
                r = json_object_set(status, "active", s->active) < 0 ? -ENOMEM : 0;
        if (r == 0)
                r = set_time(status,
                             "lastScheduleTime",
                             last_schedule ? last_schedule : s->state.last_schedule_s);
        if (r == 0)
                r = set_time(status,
                             "lastSuccessfulTime",
                             s->last_success_s ? s->last_success_s
                                               : time_at(s->cj, "status", "lastSuccessfulTime"));
        if (r == 0)
                r = wl_write_status(w, "cronjobs", key, status);
        json_decref(status);
        return r == -ENOENT ? 0 : r;
}

int wl_cronjob_sync(struct xp_workloads *w, const char *key)
{
        struct cj_sync s = {.cj = wl_cache_get(&w->cache[WL_CRONJOBS], key)};
        struct xp_cronjob_decision d;
        struct xp_error err = {0};
        int64_t now = wl_now_s(w), last = 0;
        int r = 0;

        if (!s.cj || json_object_get(json_object_get(s.cj, "metadata"), "deletionTimestamp") ||
            !prepare(w, &s)) {
                xp_tz_free(s.tz);
                return 0;
        }
        s.jobs.uid = wl_meta(s.cj, "uid");
        s.active = json_array();
        if (!s.active || !s.jobs.uid)
                r = -ENOMEM;
        if (r >= 0)
                r = wl_cache_each(&w->cache[WL_JOBS], collect, &s.jobs);
        if (r >= 0)
                r = survey(w, &s);
        if (r >= 0 && xp_cronjob_decide(&s.cron, s.tz, &s.state, now, &d, &err) < 0) {
                wl_event(w, s.cj, "Warning", "InvalidSchedule", "invalid schedule: %s", err.msg);
                d = (struct xp_cronjob_decision){.action = XP_CRONJOB_WAIT};
        }
        if (r >= 0) {
                char name[300];
                if (d.action == XP_CRONJOB_CREATE &&
                    xp_cronjob_job_name(wl_meta(s.cj, "name"), d.scheduled_s, name, sizeof(name)) ==
                        0) {
                        char jkey[600];
                        snprintf(jkey, sizeof(jkey), "%s/%s", wl_meta(s.cj, "namespace"), name);
                        if (wl_cache_get(&w->cache[WL_JOBS], jkey))
                                d.action = XP_CRONJOB_WAIT; /* made before a restart */
                }
                r = act(w, &s, &d, &last);
        }
        if (r >= 0)
                r = write_status(w, key, &s, last);
        if (r >= 0 && d.next_s > 0)
                (void)xp_workqueue_add_after(w->cronjob_queue, key, (d.next_s - now) * 1000 + 100);
        json_decref(s.active);
        xp_tz_free(s.tz);
        return r;
}
