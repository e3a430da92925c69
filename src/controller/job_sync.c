/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Job controller in the workload loop (docs/workloads.md): each sync reads the Job and the pods
 * it controls from the cache, lets xp_job_sync() decide, and writes what it planned: pods made
 * from the template (an Indexed Job's with their index), deletions, the status, Events, the
 * Job's own deletion after ttlSecondsAfterFinished. Counts are taken again from the pods each
 * time (never below what the status said), so a restart decides the same.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "workloads.h"
#include "workqueue.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/store.h"

#define INDEX_ENV_PATH "metadata.annotations['" XP_JOB_INDEX_ANNOTATION "']"

struct owned {
        const char *uid;
        const json_t **pods;
        size_t n, cap;
};

static int collect(json_t *pod, void *userdata)
{
        struct owned *o = userdata;
        const json_t *ref = xp_owner_controller_ref(pod);
        const char *uid = json_string_value(json_object_get(ref, "uid"));

        if (!uid || strcmp(uid, o->uid) != 0)
                return 0;
        if (o->n == o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 16;
                const json_t **grown = realloc(o->pods, cap * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                o->pods = grown;
                o->cap = cap;
        }
        o->pods[o->n++] = pod;
        return 0;
}

/* Adds name=value to the object at o[key], made when missing. */
static int add_string(json_t *o, const char *key, const char *name, const char *value)
{
        json_t *m = json_object_get(o, key);
        if (!json_is_object(m)) {
                m = json_object();
                if (!m || json_object_set_new(o, key, m) < 0)
                        return -ENOMEM;
        }
        return json_object_set_new(m, name, json_string(value)) < 0 ? -ENOMEM : 0;
}

/* JOB_COMPLETION_INDEX in every container, from the pod's annotation (as Kubernetes adds it). */
static int add_index_env(json_t *spec)
{
        static const char *const lists[] = {"initContainers", "containers"};
        json_t *c;
        size_t i;

        for (size_t l = 0; l < 2; l++)
                json_array_foreach(json_object_get(spec, lists[l]), i, c)
                {
                        json_t *env = json_object_get(c, "env");
                        if (!json_is_array(env) &&
                            json_object_set_new(c, "env", env = json_array()) < 0)
                                return -ENOMEM;
                        json_t *var = json_pack("{s:s, s:{s:{s:s, s:s}}}",
                                                "name",
                                                XP_JOB_INDEX_ENV,
                                                "valueFrom",
                                                "fieldRef",
                                                "apiVersion",
                                                "v1",
                                                "fieldPath",
                                                INDEX_ENV_PATH);
                        if (!var || json_array_append_new(env, var) < 0)
                                return -ENOMEM;
                }
        return 0;
}

/* The pod of one creation: the template, the Job's labels, its index and owner. NULL: -ENOMEM. */
static json_t *
pod_json(const json_t *job, const struct xp_job_spec *spec, const struct xp_job_create *c)
{
        const json_t *template = json_object_get(json_object_get(job, "spec"), "template");
        const char *name = wl_meta(job, "name"), *uid = wl_meta(job, "uid");
        bool manual = json_is_true(json_object_get(json_object_get(job, "spec"), "manualSelector"));
        json_t *meta = json_deep_copy(json_object_get(template, "metadata"));
        json_t *pspec = json_deep_copy(json_object_get(template, "spec"));
        json_t *pod = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "Pod");
        json_t *ref = xp_owner_ref_new("batch/v1", "Job", job);
        char prefix[300], index[16], failures[16], host[300];
        int r = meta && pspec && pod && ref ? 0 : -ENOMEM;

        snprintf(index, sizeof(index), "%d", c->index);
        snprintf(failures, sizeof(failures), "%d", c->failures);
        if (c->index >= 0)
                snprintf(prefix, sizeof(prefix), "%s-%d-", name, c->index);
        else
                snprintf(prefix, sizeof(prefix), "%s-", name);
        if (r == 0)
                r = json_object_del(meta, "name") < 0 ? 0 : 0;
        if (r == 0 &&
            (json_object_set_new(meta, "generateName", json_string(prefix)) < 0 ||
             json_object_set_new(meta, "namespace", json_string(wl_meta(job, "namespace"))) < 0 ||
             json_object_set_new(meta, "ownerReferences", json_pack("[O]", ref)) < 0))
                r = -ENOMEM;
        /* a manual selector's pods carry the template's labels only, as in Kubernetes */
        if (r == 0 && !manual)
                r = add_string(
                    meta, "labels", "batch.kubernetes.io/controller-uid", uid ? uid : "");
        if (r == 0 && !manual)
                r = add_string(meta, "labels", "batch.kubernetes.io/job-name", name);
        if (r == 0 && !manual)
                r = add_string(meta, "labels", "controller-uid", uid ? uid : "");
        if (r == 0 && !manual)
                r = add_string(meta, "labels", "job-name", name);
        if (r == 0 && c->index >= 0) {
                r = add_string(meta, "annotations", XP_JOB_INDEX_ANNOTATION, index);
                if (r == 0)
                        r = add_string(meta, "labels", XP_JOB_INDEX_ANNOTATION, index);
                if (r == 0 && spec->backoff_limit_per_index >= 0)
                        r = add_string(meta, "annotations", XP_JOB_FAILURES_ANNOTATION, failures);
                snprintf(host, sizeof(host), "%s-%d", name, c->index);
                if (r == 0 && !json_object_get(pspec, "hostname") && strlen(host) <= 63)
                        r = json_object_set_new(pspec, "hostname", json_string(host)) < 0 ? -ENOMEM
                                                                                          : 0;
                if (r == 0)
                        r = add_index_env(pspec);
        }
        if (r == 0 &&
            (json_object_set(pod, "metadata", meta) < 0 || json_object_set(pod, "spec", pspec) < 0))
                r = -ENOMEM;
        json_decref(meta);
        json_decref(pspec);
        json_decref(ref);
        if (r < 0) {
                json_decref(pod);
                return NULL;
        }
        return pod;
}

static int create_pod(struct xp_workloads *w,
                      const json_t *job,
                      const struct xp_job_spec *spec,
                      const struct xp_job_create *c)
{
        struct xp_error err = {0};
        json_t *pod = pod_json(job, spec, c), *out = NULL;
        int r = pod ? wl_create_object(w, &xp_kind_pod, wl_meta(job, "namespace"), pod, &out, &err)
                    : -ENOMEM;

        json_decref(pod);
        if (r > 0) {
                wl_event(
                    w, job, "Normal", "SuccessfulCreate", "Created pod: %s", wl_meta(out, "name"));
                json_decref(out);
                return 0;
        }
        wl_event(w,
                 job,
                 "Warning",
                 "FailedCreate",
                 "Error creating: %s",
                 err.msg[0] ? err.msg : strerror(r < 0 ? -r : EPERM));
        return r < 0 ? r : -EPERM;
}

/* The status for a sync: as stored, with the counts to be taken again from the pods. */
static void status_for_sync(const json_t *job,
                            struct xp_job_status *s,
                            int32_t *old_succeeded,
                            int32_t *old_failed)
{
        xp_job_status_from_json(json_object_get(job, "status"), s);
        *old_succeeded = s->succeeded;
        *old_failed = s->failed;
        s->succeeded = s->failed = 0;
        s->failures_since_success = 0;
        s->last_failure_s = 0;
        /* completedIndexes and failedIndexes stay: an index done is done, even if its pod was
         * deleted since (adding it again changes nothing) */
}

static void apply_deletes(struct xp_workloads *w,
                          const json_t *job,
                          const struct owned *o,
                          const struct xp_job_plan *plan)
{
        for (size_t i = 0; i < plan->n_delete; i++)
                (void)wl_delete_pod(w, job, o->pods[plan->delete[i]]); /* the next sync sees it */
}

static void delete_job(struct xp_workloads *w, const json_t *job)
{
        struct xp_error err = {0};
        int r = xp_registry_delete(
            w->registry, "jobs", wl_meta(job, "namespace"), wl_meta(job, "name"), 0, NULL, &err);

        if (r < 0 && r != -ENOENT)
                xp_log(LOG_WARNING,
                       "job %s/%s: not deleted after its TTL: %s",
                       wl_meta(job, "namespace"),
                       wl_meta(job, "name"),
                       err.msg);
}

struct job_sync {
        struct xp_job_spec spec;
        struct xp_job_spec_store store;
        struct xp_job_status status;
        struct xp_job_plan plan;
        struct xp_job_pod *pods;
        struct xp_job_pod_store *stores;
        struct owned owned;
};

static void job_sync_done(struct job_sync *s)
{
        xp_job_plan_done(&s->plan);
        xp_job_status_done(&s->status);
        free(s->pods);
        free(s->stores);
        free(s->owned.pods);
}

/* Writes what a sync planned; -errno when something must be tried again. */
static int write_plan(struct xp_workloads *w,
                      const char *key,
                      const json_t *job,
                      struct job_sync *s,
                      int32_t old_succeeded,
                      int32_t old_failed)
{
        int r = 0;

        for (size_t i = 0; i < s->plan.n_create && r >= 0; i++)
                r = create_pod(w, job, &s->spec, &s->plan.create[i]);
        apply_deletes(w, job, &s->owned, &s->plan);
        if (s->spec.indexed)
                s->status.succeeded = s->status.completed.count;
        else if (s->status.succeeded < old_succeeded)
                s->status.succeeded = old_succeeded;
        if (s->status.failed < old_failed)
                s->status.failed = old_failed;
        json_t *status = xp_job_status_to_json(&s->spec, &s->status);
        if (!status)
                return -ENOMEM;
        int w_r = wl_write_status(w, "jobs", key, status);
        json_decref(status);
        if (w_r < 0 && w_r != -ENOENT)
                return w_r;
        if (s->plan.event_reason)
                wl_event(w,
                         job,
                         s->plan.event_warning ? "Warning" : "Normal",
                         s->plan.event_reason,
                         "%s",
                         s->plan.event_message);
        if (s->plan.delete_job)
                delete_job(w, job);
        if (s->plan.requeue_s > 0) {
                int64_t ms = (s->plan.requeue_s - wl_now_s(w)) * 1000;
                (void)xp_workqueue_add_after(w->job_queue, key, ms > 0 ? ms : 0);
        }
        return r;
}

int wl_job_sync(struct xp_workloads *w, const char *key)
{
        const json_t *job = wl_cache_get(&w->cache[WL_JOBS], key);
        struct job_sync s = {0};
        struct xp_error err = {0};
        int32_t old_succeeded, old_failed;
        int r;

        if (!job || json_object_get(json_object_get(job, "metadata"), "deletionTimestamp"))
                return 0;
        if (xp_job_spec_from_json(job, &s.spec, &s.store, &err) < 0) {
                xp_log(LOG_DEBUG, "job %s: %s", key, err.msg);
                return 0; /* validation refuses such Jobs: nothing to do until it changes */
        }
        r = xp_job_status_init(&s.status, &s.spec);
        if (r < 0)
                return r;
        status_for_sync(job, &s.status, &old_succeeded, &old_failed);
        s.owned.uid = wl_meta(job, "uid");
        r = s.owned.uid ? wl_cache_each(&w->cache[WL_PODS], collect, &s.owned) : 0;
        s.pods = calloc(s.owned.n + 1, sizeof(*s.pods));
        s.stores = calloc(s.owned.n + 1, sizeof(*s.stores));
        if (r < 0 || !s.pods || !s.stores) {
                job_sync_done(&s);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s.owned.n; i++)
                xp_job_pod_from_json(s.owned.pods[i], &s.pods[i], &s.stores[i]);
        r = xp_job_sync(&s.spec, s.pods, s.owned.n, wl_now_s(w), &s.status, &s.plan);
        if (r >= 0)
                r = write_plan(w, key, job, &s, old_succeeded, old_failed);
        job_sync_done(&s);
        return r;
}
