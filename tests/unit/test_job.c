/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Job controller's decisions (src/controller/job*.c) on recorded sequences of pod events:
 * the test keeps the pods, applies each plan as the controller would (creates pods, marks the
 * deleted ones terminating then gone, counts finished ones) and moves the time itself.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <limits.h>

#include "controller/job.h"

#define PODS_MAX 128

struct world {
        struct xp_job_spec spec;
        struct xp_job_status status;
        struct xp_job_pod pods[PODS_MAX];
        char names[PODS_MAX][32];
        struct xp_job_exit exits[PODS_MAX];
        struct xp_job_pod_condition conds[PODS_MAX][2];
        size_t n;
        unsigned serial;
        int64_t now;
        unsigned most_live; /* the most pods live at once */
        struct xp_job_plan last;
};

static void world_init(struct world *w, int32_t completions, int32_t parallelism, bool indexed)
{
        memset(w, 0, sizeof(*w));
        w->spec = (struct xp_job_spec){
            .namespace = "default",
            .parallelism = parallelism,
            .completions = completions,
            .indexed = indexed,
            .backoff_limit = 6,
            .backoff_limit_per_index = -1,
            .max_failed_indexes = -1,
            .active_deadline_s = -1,
            .ttl_after_finished_s = -1,
        };
        w->now = 1000;
        assert_int_equal(xp_job_status_init(&w->status, &w->spec), 0);
}

static void world_done(struct world *w)
{
        xp_job_plan_done(&w->last);
        xp_job_status_done(&w->status);
}

static unsigned live(const struct world *w)
{
        unsigned n = 0;
        for (size_t i = 0; i < w->n; i++)
                n += w->pods[i].phase == XP_JOB_POD_PENDING ||
                     w->pods[i].phase == XP_JOB_POD_RUNNING;
        return n;
}

/* Removes pods that finished terminating (deleting and no longer live, or deleted pending). */
static void reap(struct world *w)
{
        size_t k = 0;
        for (size_t i = 0; i < w->n; i++) {
                if (w->pods[i].deleting)
                        continue;
                if (k != i) {
                        w->pods[k] = w->pods[i];
                        memcpy(w->names[k], w->names[i], sizeof(w->names[k]));
                        w->exits[k] = w->exits[i];
                        memcpy(w->conds[k], w->conds[i], sizeof(w->conds[k]));
                }
                w->pods[k].name = w->names[k];
                w->pods[k].exits = &w->exits[k];
                w->pods[k].conditions = w->conds[k];
                k++;
        }
        w->n = k;
}

/* One sync, its plan applied: deletions mark pods terminating (gone at the next sync). */
static const struct xp_job_plan *step(struct world *w)
{
        reap(w);
        xp_job_plan_done(&w->last);
        assert_int_equal(xp_job_sync(&w->spec, w->pods, w->n, w->now, &w->status, &w->last), 0);
        for (size_t i = 0; i < w->last.n_counted; i++)
                w->pods[w->last.counted[i]].counted = true;
        for (size_t i = 0; i < w->last.n_delete; i++)
                w->pods[w->last.delete[i]].deleting = true;
        for (size_t i = 0; i < w->last.n_create; i++) {
                assert_true(w->n < PODS_MAX);
                size_t k = w->n++;
                snprintf(w->names[k], sizeof(w->names[k]), "job-%u", w->serial++);
                w->pods[k] = (struct xp_job_pod){
                    .name = w->names[k],
                    .phase = XP_JOB_POD_PENDING,
                    .index = w->last.create[i].index,
                    .failures = w->last.create[i].failures,
                    .created_s = w->now,
                    .exits = &w->exits[k],
                    .conditions = w->conds[k],
                };
        }
        unsigned l = live(w);
        /* terminating pods still run: count them until reaped */
        w->most_live = l > w->most_live ? l : w->most_live;
        return &w->last;
}

static void run_all(struct world *w)
{
        for (size_t i = 0; i < w->n; i++)
                if (w->pods[i].phase == XP_JOB_POD_PENDING && !w->pods[i].deleting) {
                        w->pods[i].phase = XP_JOB_POD_RUNNING;
                        w->pods[i].ready = true;
                }
}

static void finish(struct world *w, size_t i, bool ok, int32_t code)
{
        w->pods[i].phase = ok ? XP_JOB_POD_SUCCEEDED : XP_JOB_POD_FAILED;
        w->pods[i].finished_s = w->now;
        w->exits[i] =
            (struct xp_job_exit){.container = "main", .terminated = true, .code = ok ? 0 : code};
        w->pods[i].n_exits = 1;
}

/* The first running pod (of index, when index >= 0). */
static size_t running(const struct world *w, int32_t index)
{
        for (size_t i = 0; i < w->n; i++)
                if (w->pods[i].phase == XP_JOB_POD_RUNNING && !w->pods[i].deleting &&
                    (index < 0 || w->pods[i].index == index))
                        return i;
        fail_msg("no running pod of index %d", index);
        return 0;
}

static bool has(const struct world *w, enum xp_job_condition_type t)
{
        return w->status.conditions[t].set && w->status.conditions[t].status;
}

static void indexes(void **state)
{
        struct xp_job_indexes set;
        struct xp_error err = {0};
        char *text;
        (void)state;

        assert_int_equal(xp_job_indexes_init(&set, 10), 0);
        assert_int_equal(xp_job_indexes_parse("1,3-5,7-8", &set, &err), 0);
        assert_int_equal(set.count, 6);
        xp_job_indexes_add(&set, 9);
        xp_job_indexes_add(&set, 10); /* out of range: ignored */
        assert_int_equal(xp_job_indexes_format(&set, &text), 0);
        assert_string_equal(text, "1,3-5,7-9");
        free(text);
        static const struct {
                const char *text, *message;
        } bad[] = {
            {"1,a", "cannot convert string to integer for index: \"a\""},
            {"3,1", "non-increasing order, previous: 3, current: 1"},
            {"5-3", "non-increasing order, previous: 5, current: 3"},
            {"12", "too large index: 12"},
            {"1;2", "unexpected character ';' in the index list"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(xp_job_indexes_parse(bad[i].text, &set, &err), -EINVAL);
                assert_string_equal(err.msg, bad[i].message);
        }
        assert_int_equal(set.count, 7); /* untouched */
        xp_job_indexes_done(&set);
        assert_int_equal(xp_job_indexes_init(&set, 0), 0);
        assert_int_equal(xp_job_indexes_format(&set, &text), 0);
        assert_string_equal(text, "");
        free(text);
        xp_job_indexes_done(&set);
}

/* 10 completions, parallelism 2: never more than 2 at once, Complete at the end. */
static void completions_parallelism(void **state)
{
        struct world w;
        (void)state;

        world_init(&w, 10, 2, false);
        for (int round = 0; round < 40 && !xp_job_finished(&w.status); round++) {
                step(&w);
                assert_true(w.status.active <= 2);
                run_all(&w);
                w.now += 5;
                if (w.n > 0 && live(&w) > 0)
                        finish(&w, running(&w, -1), true, 0);
        }
        assert_true(has(&w, XP_JOB_COMPLETE));
        assert_true(has(&w, XP_JOB_SUCCESS_CRITERIA_MET));
        assert_string_equal(w.status.conditions[XP_JOB_COMPLETE].reason, "CompletionsReached");
        assert_int_equal(w.status.succeeded, 10);
        assert_int_equal(w.status.failed, 0);
        assert_true(w.most_live <= 2);
        assert_int_equal(w.serial,
                         10 + 0); /* exactly as many pods as completions were needed ... */
        assert_true(w.status.completion_s > 0);
        assert_string_equal(w.last.event_reason, "Completed");
        /* finished: nothing more */
        const struct xp_job_plan *p = step(&w);
        assert_int_equal(p->n_create + p->n_delete, 0);
        world_done(&w);
}

static void indexed_completion(void **state)
{
        struct world w;
        char *text;
        (void)state;

        world_init(&w, 5, 3, true);
        const struct xp_job_plan *p = step(&w);
        assert_int_equal(p->n_create, 3);
        for (int i = 0; i < 3; i++)
                assert_int_equal(p->create[i].index, i);
        run_all(&w);
        finish(&w, running(&w, 1), true, 0);
        finish(&w, running(&w, 0), false, 1);
        w.now += 1;
        p = step(&w);
        assert_int_equal(w.status.succeeded, 1);
        assert_int_equal(w.status.failed, 1);
        /* index 0 waits out its backoff; 3 takes 1's place meanwhile */
        assert_int_equal(p->n_create, 0);
        assert_int_equal(p->requeue_s, w.now - 1 + 10);
        w.now += 10;
        p = step(&w);
        assert_int_equal(p->n_create, 2);
        assert_int_equal(p->create[0].index, 0);
        assert_int_equal(p->create[1].index, 3);
        run_all(&w);
        finish(&w, running(&w, 3), true, 0);
        finish(&w, running(&w, 2), true, 0);
        step(&w);
        assert_int_equal(xp_job_indexes_format(&w.status.completed, &text), 0);
        assert_string_equal(text, "1-3");
        free(text);
        run_all(&w);
        finish(&w, running(&w, 4), true, 0);
        finish(&w, running(&w, 0), true, 0);
        /* a second success of a completed index counts no more */
        step(&w);
        assert_int_equal(w.status.succeeded, 5);
        assert_true(has(&w, XP_JOB_COMPLETE));
        assert_int_equal(xp_job_indexes_format(&w.status.completed, &text), 0);
        assert_string_equal(text, "0-4");
        free(text);
        world_done(&w);
}

static void backoff(void **state)
{
        static const int64_t delays[] = {0, 10, 20, 40, 80, 160, 320, 360, 360};
        struct world w;
        (void)state;

        for (int32_t f = 0; f < 9; f++)
                assert_int_equal(xp_job_backoff_s(f), delays[f]);
        assert_int_equal(xp_job_backoff_s(1000), 360);

        world_init(&w, 1, 1, false);
        w.spec.backoff_limit = 2;
        for (int32_t failure = 1; failure <= 3; failure++) {
                const struct xp_job_plan *p = step(&w);
                assert_int_equal(p->n_create, 1);
                run_all(&w);
                finish(&w, running(&w, -1), false, 1);
                p = step(&w);
                if (failure == 3)
                        break;
                assert_int_equal(p->n_create, 0); /* backing off */
                assert_int_equal(p->requeue_s, w.now + xp_job_backoff_s(failure));
                w.now += xp_job_backoff_s(failure) - 1;
                assert_int_equal(step(&w)->n_create, 0);
                w.now += 1;
        }
        /* the third failure is over the limit of 2 */
        assert_true(has(&w, XP_JOB_FAILED));
        assert_true(has(&w, XP_JOB_FAILURE_TARGET));
        assert_string_equal(w.status.conditions[XP_JOB_FAILED].reason, "BackoffLimitExceeded");
        assert_string_equal(w.status.conditions[XP_JOB_FAILED].message,
                            "Job has reached the specified backoff limit");
        assert_int_equal(w.status.failed, 3);
        assert_true(w.last.event_warning);
        world_done(&w);
}

static void failure_policy(void **state)
{
        struct xp_job_rule rules[2] = {
            {.action = XP_JOB_ACTION_FAIL_JOB,
             .has_exit_codes = true,
             .container = "main",
             .values = {42},
             .n_values = 1},
            {.action = XP_JOB_ACTION_IGNORE,
             .conditions = {{"DisruptionTarget", true}},
             .n_conditions = 1},
        };
        struct world w;
        (void)state;

        world_init(&w, 3, 2, false);
        w.spec.rules = rules;
        w.spec.n_rules = 2;
        w.spec.replace_failed_only = true;
        step(&w);
        run_all(&w);
        /* a pod evicted for its device: Ignore, not counted against the backoff limit */
        size_t i = running(&w, -1);
        finish(&w, i, false, 137);
        w.conds[i][0] = (struct xp_job_pod_condition){XP_JOB_DISRUPTION_CONDITION, true};
        w.conds[i][1] = (struct xp_job_pod_condition){XP_JOB_DEVICE_CONDITION, true};
        w.pods[i].n_conditions = 2;
        const struct xp_job_plan *p = step(&w);
        assert_int_equal(w.status.failed, 0);
        assert_int_equal(p->n_create, 1); /* replaced at once: no backoff for an ignored failure */
        /* exit code 1 matches no rule: counted */
        run_all(&w);
        finish(&w, running(&w, -1), false, 1);
        w.now += 20;
        step(&w);
        assert_int_equal(w.status.failed, 1);
        /* exit code 42: the Job fails, with Kubernetes' message */
        run_all(&w);
        i = running(&w, -1);
        finish(&w, i, false, 42);
        char want[256];
        snprintf(
            want,
            sizeof(want),
            "Container main for pod default/%s failed with exit code 42 matching FailJob rule at index 0",
            w.names[i]);
        p = step(&w);
        assert_true(has(&w, XP_JOB_FAILURE_TARGET));
        assert_false(has(&w, XP_JOB_FAILED)); /* one pod still runs: deleted first */
        assert_int_equal(p->n_delete, 1);
        step(&w);
        assert_true(has(&w, XP_JOB_FAILED));
        assert_string_equal(w.status.conditions[XP_JOB_FAILED].reason, "PodFailurePolicy");
        assert_string_equal(w.status.conditions[XP_JOB_FAILED].message, want);
        world_done(&w);
}

static void per_index_limits(void **state)
{
        struct xp_job_rule rules[1] = {
            {.action = XP_JOB_ACTION_FAIL_INDEX,
             .conditions = {{XP_JOB_DEVICE_CONDITION, true}},
             .n_conditions = 1},
        };
        struct world w;
        char *text;
        (void)state;

        world_init(&w, 3, 3, true);
        w.spec.backoff_limit_per_index = 1;
        w.spec.rules = rules;
        w.spec.n_rules = 1;
        step(&w);
        run_all(&w);
        finish(&w, running(&w, 0), false, 1);
        finish(&w, running(&w, 1), true, 0);
        /* index 2's device fails: FailIndex, no retry */
        size_t i = running(&w, 2);
        finish(&w, i, false, 1);
        w.conds[i][0] = (struct xp_job_pod_condition){XP_JOB_DEVICE_CONDITION, true};
        w.pods[i].n_conditions = 1;
        const struct xp_job_plan *p = step(&w);
        assert_int_equal(xp_job_indexes_format(&w.status.failed_indexes, &text), 0);
        assert_string_equal(text, "2");
        free(text);
        assert_int_equal(p->n_create, 0); /* index 0 backs off */
        w.now += 10;
        p = step(&w);
        assert_int_equal(p->n_create, 1);
        assert_int_equal(p->create[0].index, 0);
        assert_int_equal(p->create[0].failures, 1);
        run_all(&w);
        finish(
            &w, running(&w, 0), false, 1); /* its second failure: over the per-index limit of 1 */
        step(&w);
        assert_true(has(&w, XP_JOB_FAILED));
        assert_string_equal(w.status.conditions[XP_JOB_FAILED].reason, "FailedIndexes");
        assert_int_equal(xp_job_indexes_format(&w.status.failed_indexes, &text), 0);
        assert_string_equal(text, "0,2");
        free(text);
        world_done(&w);

        /* maxFailedIndexes 0: the first failed index fails the Job */
        world_init(&w, 3, 3, true);
        w.spec.backoff_limit_per_index = 0;
        w.spec.max_failed_indexes = 0;
        step(&w);
        run_all(&w);
        finish(&w, running(&w, 1), false, 3);
        step(&w);
        assert_string_equal(w.status.conditions[XP_JOB_FAILURE_TARGET].reason,
                            "MaxFailedIndexesExceeded");
        step(&w);
        assert_true(has(&w, XP_JOB_FAILED));
        world_done(&w);
}

static void deadline(void **state)
{
        struct world w;
        (void)state;

        world_init(&w, 2, 2, false);
        w.spec.active_deadline_s = 30;
        const struct xp_job_plan *p = step(&w);
        assert_int_equal(p->requeue_s, w.now + 30);
        run_all(&w);
        w.now += 29;
        assert_false(has(&w, XP_JOB_FAILURE_TARGET));
        step(&w);
        assert_false(has(&w, XP_JOB_FAILURE_TARGET));
        w.now += 1;
        p = step(&w);
        assert_true(has(&w, XP_JOB_FAILURE_TARGET));
        assert_int_equal(p->n_delete, 2);
        step(&w);
        assert_true(has(&w, XP_JOB_FAILED));
        assert_string_equal(w.status.conditions[XP_JOB_FAILED].reason, "DeadlineExceeded");
        assert_string_equal(w.status.conditions[XP_JOB_FAILED].message,
                            "Job was active longer than specified deadline");
        world_done(&w);
}

static void suspend_resume(void **state)
{
        struct world w;
        (void)state;

        world_init(&w, 4, 2, false);
        w.spec.active_deadline_s = 100;
        step(&w);
        run_all(&w);
        w.now += 50;
        w.spec.suspend = true;
        const struct xp_job_plan *p = step(&w);
        assert_int_equal(p->n_delete, 2);
        assert_true(has(&w, XP_JOB_SUSPENDED));
        assert_string_equal(p->event_reason, "Suspended");
        w.now += 500; /* suspended time does not count against the deadline */
        p = step(&w);
        assert_int_equal(p->n_create, 0);
        assert_false(has(&w, XP_JOB_FAILURE_TARGET));
        w.spec.suspend = false;
        p = step(&w);
        assert_int_equal(p->n_create, 2);
        assert_string_equal(p->event_reason, "Resumed");
        assert_false(has(&w, XP_JOB_SUSPENDED));
        assert_string_equal(w.status.conditions[XP_JOB_SUSPENDED].reason, "JobResumed");
        assert_int_equal(w.status.start_s, w.now);
        world_done(&w);
}

static void ttl_after_finished(void **state)
{
        struct world w;
        (void)state;

        world_init(&w, 1, 1, false);
        w.spec.ttl_after_finished_s = 60;
        step(&w);
        run_all(&w);
        finish(&w, running(&w, -1), true, 0);
        step(&w);
        assert_true(has(&w, XP_JOB_COMPLETE));
        int64_t done = w.now;
        w.now += 10;
        const struct xp_job_plan *p = step(&w);
        assert_false(p->delete_job);
        assert_int_equal(p->requeue_s, done + 60);
        w.now = done + 60;
        assert_true(step(&w)->delete_job);
        world_done(&w);
}

/* No completions: a work queue; once one pod succeeded no new ones start. */
static void work_queue(void **state)
{
        struct world w;
        (void)state;

        world_init(&w, -1, 3, false);
        assert_int_equal(step(&w)->n_create, 3);
        run_all(&w);
        finish(&w, running(&w, -1), true, 0);
        const struct xp_job_plan *p = step(&w);
        assert_int_equal(p->n_create + p->n_delete, 0);
        assert_false(has(&w, XP_JOB_COMPLETE));
        finish(&w, running(&w, -1), true, 0);
        finish(&w, running(&w, -1), true, 0);
        step(&w);
        assert_true(has(&w, XP_JOB_COMPLETE));
        assert_int_equal(w.status.succeeded, 3);
        world_done(&w);
}

/* A restarted controller (same status, same pods) plans nothing new; terminating pods hold
 * their place under podReplacementPolicy Failed and not otherwise. */
static void restart_and_replacement(void **state)
{
        struct world w;
        struct xp_job_plan again = {0};
        (void)state;

        world_init(&w, 4, 2, false);
        step(&w);
        assert_int_equal(xp_job_sync(&w.spec, w.pods, w.n, w.now, &w.status, &again), 0);
        assert_int_equal(again.n_create + again.n_delete + again.n_counted, 0);
        xp_job_plan_done(&again);

        run_all(&w);
        w.pods[0].deleting = true; /* deleted by someone, still terminating */
        assert_int_equal(xp_job_sync(&w.spec, w.pods, w.n, w.now, &w.status, &again), 0);
        assert_int_equal(again.n_create, 1);
        xp_job_plan_done(&again);
        w.spec.replace_failed_only = true;
        assert_int_equal(xp_job_sync(&w.spec, w.pods, w.n, w.now, &w.status, &again), 0);
        assert_int_equal(again.n_create, 0);
        xp_job_plan_done(&again);
        world_done(&w);
}

static void json_glue(void **state)
{
        struct xp_job_spec spec;
        struct xp_job_spec_store store;
        struct xp_job_pod pod;
        struct xp_job_pod_store pstore;
        struct xp_error err = {0};
        json_error_t jerr;
        (void)state;

        json_t *job = json_loads(
            "{\"metadata\":{\"namespace\":\"ml\"},\"spec\":{\"completionMode\":\"Indexed\",\"completions\":4,"
            "\"parallelism\":2,\"backoffLimitPerIndex\":1,\"podFailurePolicy\":{\"rules\":["
            "{\"action\":\"FailIndex\",\"onPodConditions\":[{\"type\":\"xpool.io/DeviceUnhealthy\"}]},"
            "{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"NotIn\",\"values\":[1,2]}}]}}}",
            0,
            &jerr);
        assert_non_null(job);
        assert_int_equal(xp_job_spec_from_json(job, &spec, &store, &err), 0);
        assert_true(spec.indexed);
        assert_int_equal(spec.completions, 4);
        assert_int_equal(spec.backoff_limit, INT32_MAX); /* unlimited with a per-index limit */
        assert_int_equal(spec.n_rules, 2);
        assert_true(spec.replace_failed_only);
        assert_string_equal(spec.rules[0].conditions[0].type, XP_JOB_DEVICE_CONDITION);
        assert_true(spec.rules[0].conditions[0].status);
        assert_true(spec.rules[1].not_in);
        assert_int_equal(spec.rules[1].n_values, 2);
        assert_string_equal(spec.namespace, "ml");
        json_decref(job);
        job = json_loads("{\"spec\":{}}", 0, &jerr);
        assert_int_equal(xp_job_spec_from_json(job, &spec, &store, &err), 0);
        assert_int_equal(spec.completions, 1);
        assert_int_equal(spec.parallelism, 1);
        assert_int_equal(spec.backoff_limit, 6);
        assert_false(spec.replace_failed_only);
        json_decref(job);
        job = json_loads("{\"spec\":{\"parallelism\":3}}", 0, &jerr);
        assert_int_equal(xp_job_spec_from_json(job, &spec, &store, &err), 0);
        assert_int_equal(spec.completions, -1); /* a work queue */
        json_decref(job);
        job = json_loads("{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":3}}", 0, &jerr);
        assert_int_equal(xp_job_spec_from_json(job, &spec, &store, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "spec.completions: Required value: when completion mode is Indexed");
        json_decref(job);

        json_t *p = json_loads(
            "{\"metadata\":{\"name\":\"j-2-abcde\",\"creationTimestamp\":\"2026-12-03T10:00:00Z\","
            "\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"2\",\"batch.kubernetes.io/job-index-failure-count\":\"1\"}},"
            "\"status\":{\"phase\":\"Failed\",\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\"}],"
            "\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"terminated\":{\"exitCode\":3,\"finishedAt\":\"2026-12-03T10:01:00Z\"}}}]}}",
            0,
            &jerr);
        assert_non_null(p);
        xp_job_pod_from_json(p, &pod, &pstore);
        assert_string_equal(pod.name, "j-2-abcde");
        assert_int_equal(pod.phase, XP_JOB_POD_FAILED);
        assert_int_equal(pod.index, 2);
        assert_int_equal(pod.failures, 1);
        assert_int_equal(pod.n_exits, 1);
        assert_int_equal(pod.exits[0].code, 3);
        assert_int_equal(pod.finished_s - pod.created_s, 60);
        assert_int_equal(pod.n_conditions, 1);
        json_decref(p);

        /* the status survives a round trip through its JSON */
        struct xp_job_status st, back;
        job = json_loads("{\"spec\":{\"completionMode\":\"Indexed\",\"completions\":6}}", 0, &jerr);
        assert_int_equal(xp_job_spec_from_json(job, &spec, &store, &err), 0);
        assert_int_equal(xp_job_status_init(&st, &spec), 0);
        assert_int_equal(xp_job_status_init(&back, &spec), 0);
        st.start_s = 1796292000;
        st.succeeded = 3;
        xp_job_indexes_add(&st.completed, 1);
        xp_job_indexes_add(&st.completed, 3);
        xp_job_indexes_add(&st.completed, 4);
        st.conditions[XP_JOB_COMPLETE] = (struct xp_job_condition){.set = true,
                                                                   .status = true,
                                                                   .reason = "CompletionsReached",
                                                                   .message = "m",
                                                                   .at_s = 1796292060};
        json_t *sj = xp_job_status_to_json(&spec, &st);
        assert_non_null(sj);
        assert_string_equal(json_string_value(json_object_get(sj, "completedIndexes")), "1,3-4");
        assert_string_equal(json_string_value(json_object_get(sj, "startTime")),
                            "2026-12-03T10:00:00Z");
        xp_job_status_from_json(sj, &back);
        assert_int_equal(back.succeeded, 3);
        assert_int_equal(back.completed.count, 3);
        assert_true(xp_job_finished(&back));
        assert_int_equal(back.conditions[XP_JOB_COMPLETE].at_s, 1796292060);
        json_decref(sj);
        json_decref(job);
        xp_job_status_done(&st);
        xp_job_status_done(&back);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(indexes),
            cmocka_unit_test(completions_parallelism),
            cmocka_unit_test(indexed_completion),
            cmocka_unit_test(backoff),
            cmocka_unit_test(failure_policy),
            cmocka_unit_test(per_index_limits),
            cmocka_unit_test(deadline),
            cmocka_unit_test(suspend_resume),
            cmocka_unit_test(ttl_after_finished),
            cmocka_unit_test(work_queue),
            cmocka_unit_test(restart_and_replacement),
            cmocka_unit_test(json_glue),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
