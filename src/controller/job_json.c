/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Job, its pods and its status between the API's JSON and the Job controller's structs
 * (job.h), with Kubernetes' defaults for what a stored Job leaves out.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "xpool/timeutil.h"

static const json_t *at(const json_t *o, const char *a, const char *b)
{
        const json_t *v = json_object_get(o, a);
        return b ? json_object_get(v, b) : v;
}

static int64_t int_or(const json_t *v, int64_t def)
{
        return json_is_integer(v) ? json_integer_value(v) : def;
}

static int64_t time_of(const json_t *v)
{
        int64_t t = 0;
        if (json_string_value(v))
                (void)xp_time_parse_rfc3339(json_string_value(v), &t);
        return t;
}

static enum xp_job_action action_of(const char *s)
{
        if (s && strcmp(s, "FailJob") == 0)
                return XP_JOB_ACTION_FAIL_JOB;
        if (s && strcmp(s, "FailIndex") == 0)
                return XP_JOB_ACTION_FAIL_INDEX;
        if (s && strcmp(s, "Ignore") == 0)
                return XP_JOB_ACTION_IGNORE;
        return XP_JOB_ACTION_COUNT;
}

static void rule_from_json(const json_t *r, struct xp_job_rule *rule)
{
        const json_t *codes = json_object_get(r, "onExitCodes"),
                     *conds = json_object_get(r, "onPodConditions"), *v;
        size_t i;

        *rule = (struct xp_job_rule){
            .action = action_of(json_string_value(json_object_get(r, "action")))};
        if (json_is_object(codes)) {
                rule->has_exit_codes = true;
                rule->container = json_string_value(json_object_get(codes, "containerName"));
                const char *op = json_string_value(json_object_get(codes, "operator"));
                rule->not_in = op && strcmp(op, "NotIn") == 0;
                json_array_foreach(json_object_get(codes, "values"),
                                   i,
                                   v) if (rule->n_values < XP_JOB_VALUES_MAX && json_is_integer(v))
                    rule->values[rule->n_values++] = (int32_t)json_integer_value(v);
                return;
        }
        json_array_foreach(conds, i, v)
        {
                if (rule->n_conditions == XP_JOB_RULES_MAX)
                        break;
                const char *status = json_string_value(json_object_get(v, "status"));
                rule->conditions[rule->n_conditions++] = (struct xp_job_pod_condition){
                    .type = json_string_value(json_object_get(v, "type")),
                    .status = !status || strcmp(status, "True") == 0,
                };
        }
}

int xp_job_spec_from_json(const json_t *job,
                          struct xp_job_spec *ret,
                          struct xp_job_spec_store *store,
                          struct xp_error *err)
{
        const json_t *spec = json_object_get(job, "spec");
        const json_t *rules = at(spec, "podFailurePolicy", "rules"), *r;
        const char *mode = json_string_value(json_object_get(spec, "completionMode"));
        const char *replacement = json_string_value(json_object_get(spec, "podReplacementPolicy"));
        struct xp_job_spec s = {
            .namespace = json_string_value(at(job, "metadata", "namespace")),
            .parallelism = (int32_t)int_or(json_object_get(spec, "parallelism"), 1),
            .completions = (int32_t)int_or(json_object_get(spec, "completions"), -1),
            .indexed = mode && strcmp(mode, "Indexed") == 0,
            .backoff_limit_per_index =
                (int32_t)int_or(json_object_get(spec, "backoffLimitPerIndex"), -1),
            .max_failed_indexes = (int32_t)int_or(json_object_get(spec, "maxFailedIndexes"), -1),
            .active_deadline_s = int_or(json_object_get(spec, "activeDeadlineSeconds"), -1),
            .suspend = json_is_true(json_object_get(spec, "suspend")),
            .ttl_after_finished_s = int_or(json_object_get(spec, "ttlSecondsAfterFinished"), -1),
            .rules = store->rules,
        };
        size_t i;

        if (!json_object_get(spec, "completions") && !json_object_get(spec, "parallelism"))
                s.completions = 1;
        s.backoff_limit = (int32_t)int_or(json_object_get(spec, "backoffLimit"),
                                          s.backoff_limit_per_index >= 0 ? INT32_MAX : 6);
        json_array_foreach(rules, i, r) if (s.n_rules < XP_JOB_RULES_MAX)
            rule_from_json(r, &store->rules[s.n_rules++]);
        s.replace_failed_only = replacement ? strcmp(replacement, "Failed") == 0 : s.n_rules > 0;
        if (s.indexed && s.completions < 0)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "spec.completions: Required value: when completion mode is Indexed");
        if (s.indexed && s.completions > XP_JOB_INDEXES_MAX)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "spec.completions: Invalid value: %d: must be less than or equal to %d when completion mode is Indexed",
                    s.completions,
                    XP_JOB_INDEXES_MAX);
        if (s.parallelism < 0 || s.backoff_limit < 0)
                return xp_errorf(
                    err, -EINVAL, "spec: Invalid value: must be greater than or equal to 0");
        *ret = s;
        return 0;
}

static enum xp_job_phase phase_of(const char *s)
{
        if (s && strcmp(s, "Running") == 0)
                return XP_JOB_POD_RUNNING;
        if (s && strcmp(s, "Succeeded") == 0)
                return XP_JOB_POD_SUCCEEDED;
        if (s && strcmp(s, "Failed") == 0)
                return XP_JOB_POD_FAILED;
        return XP_JOB_POD_PENDING;
}

static int32_t annotation_int(const json_t *pod, const char *key, int32_t def)
{
        const char *text =
            json_string_value(at(json_object_get(pod, "metadata"), "annotations", key));
        char *end;

        if (!text || !*text)
                return def;
        long v = strtol(text, &end, 10);
        return *end || v < 0 || v > INT32_MAX ? def : (int32_t)v;
}

/* The exits of a list of container statuses; the latest finish time in *finished. */
static void exits_of(const json_t *list,
                     struct xp_job_pod *pod,
                     struct xp_job_pod_store *store,
                     int64_t *finished)
{
        const json_t *cs;
        size_t i;

        json_array_foreach(list, i, cs)
        {
                const json_t *term = at(cs, "state", "terminated");
                if (!term)
                        term = at(cs, "lastState", "terminated");
                if (!term || pod->n_exits == XP_JOB_POD_EXITS_MAX)
                        continue;
                store->exits[pod->n_exits++] = (struct xp_job_exit){
                    .container = json_string_value(json_object_get(cs, "name")),
                    .terminated = true,
                    .code = (int32_t)int_or(json_object_get(term, "exitCode"), 0),
                };
                int64_t t = time_of(json_object_get(term, "finishedAt"));
                *finished = t > *finished ? t : *finished;
        }
}

void xp_job_pod_from_json(const json_t *pod, struct xp_job_pod *ret, struct xp_job_pod_store *store)
{
        const json_t *meta = json_object_get(pod, "metadata"),
                     *status = json_object_get(pod, "status"), *c;
        struct xp_job_pod p = {
            .name = json_string_value(json_object_get(meta, "name")),
            .phase = phase_of(json_string_value(json_object_get(status, "phase"))),
            .deleting = json_object_get(meta, "deletionTimestamp") != NULL,
            .index = annotation_int(pod, XP_JOB_INDEX_ANNOTATION, -1),
            .failures = annotation_int(pod, XP_JOB_FAILURES_ANNOTATION, 0),
            .created_s = time_of(json_object_get(meta, "creationTimestamp")),
            .exits = store->exits,
            .conditions = store->conditions,
        };
        int64_t finished = 0;
        size_t i;

        exits_of(json_object_get(status, "initContainerStatuses"), &p, store, &finished);
        exits_of(json_object_get(status, "containerStatuses"), &p, store, &finished);
        json_array_foreach(json_object_get(status, "conditions"), i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *st = json_string_value(json_object_get(c, "status"));
                bool is_true = st && strcmp(st, "True") == 0;
                if (type && strcmp(type, "Ready") == 0)
                        p.ready = is_true;
                if (type && p.n_conditions < XP_JOB_POD_CONDITIONS_MAX)
                        store->conditions[p.n_conditions++] =
                            (struct xp_job_pod_condition){type, is_true};
                if (type && strcmp(type, "Ready") == 0 && p.phase >= XP_JOB_POD_SUCCEEDED &&
                    finished == 0)
                        finished = time_of(json_object_get(c, "lastTransitionTime"));
        }
        p.finished_s = p.phase >= XP_JOB_POD_SUCCEEDED ? finished : 0;
        *ret = p;
}

static int condition_type(const char *s)
{
        for (int t = 0; t < XP_JOB_CONDITIONS; t++)
                if (s && strcmp(s, xp_job_condition_to_string((enum xp_job_condition_type)t)) == 0)
                        return t;
        return -1;
}

void xp_job_status_from_json(const json_t *j, struct xp_job_status *s)
{
        const json_t *c;
        size_t i;

        s->start_s = time_of(json_object_get(j, "startTime"));
        s->completion_s = time_of(json_object_get(j, "completionTime"));
        s->succeeded = (int32_t)int_or(json_object_get(j, "succeeded"), 0);
        s->failed = (int32_t)int_or(json_object_get(j, "failed"), 0);
        if (json_string_value(json_object_get(j, "completedIndexes")))
                (void)xp_job_indexes_parse(
                    json_string_value(json_object_get(j, "completedIndexes")), &s->completed, NULL);
        if (json_string_value(json_object_get(j, "failedIndexes")))
                (void)xp_job_indexes_parse(json_string_value(json_object_get(j, "failedIndexes")),
                                           &s->failed_indexes,
                                           NULL);
        json_array_foreach(json_object_get(j, "conditions"), i, c)
        {
                int t = condition_type(json_string_value(json_object_get(c, "type")));
                if (t < 0)
                        continue;
                struct xp_job_condition *cond = &s->conditions[t];
                const char *st = json_string_value(json_object_get(c, "status"));
                cond->set = true;
                cond->status = st && strcmp(st, "True") == 0;
                snprintf(cond->reason,
                         sizeof(cond->reason),
                         "%s",
                         json_string_value(json_object_get(c, "reason")) ?: "");
                snprintf(cond->message,
                         sizeof(cond->message),
                         "%s",
                         json_string_value(json_object_get(c, "message")) ?: "");
                cond->at_s = time_of(json_object_get(c, "lastTransitionTime"));
        }
}

static int set_time(json_t *o, const char *key, int64_t t)
{
        char buf[XP_RFC3339_MAX];
        if (t <= 0 || xp_time_format_rfc3339(t, buf) < 0)
                return 0;
        return json_object_set_new(o, key, json_string(buf));
}

static int set_indexes(json_t *o, const char *key, const struct xp_job_indexes *set)
{
        char *text;
        if (set->count == 0)
                return 0;
        if (xp_job_indexes_format(set, &text) < 0)
                return -1;
        int r = json_object_set_new(o, key, json_string(text));
        free(text);
        return r;
}

static int add_conditions(json_t *o, const struct xp_job_status *s)
{
        static const enum xp_job_condition_type order[] = {XP_JOB_SUSPENDED,
                                                           XP_JOB_FAILURE_TARGET,
                                                           XP_JOB_SUCCESS_CRITERIA_MET,
                                                           XP_JOB_FAILED,
                                                           XP_JOB_COMPLETE};
        json_t *list = json_array();
        char at[XP_RFC3339_MAX];
        int r = list ? json_object_set_new(o, "conditions", list) : -1;

        for (size_t i = 0; r == 0 && i < sizeof(order) / sizeof(order[0]); i++) {
                const struct xp_job_condition *c = &s->conditions[order[i]];
                if (!c->set)
                        continue;
                if (xp_time_format_rfc3339(c->at_s, at) < 0)
                        snprintf(at, sizeof(at), "1970-01-01T00:00:00Z");
                r = json_array_append_new(list,
                                          json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                                                    "type",
                                                    xp_job_condition_to_string(order[i]),
                                                    "status",
                                                    c->status ? "True" : "False",
                                                    "lastProbeTime",
                                                    at,
                                                    "lastTransitionTime",
                                                    at,
                                                    "reason",
                                                    c->reason,
                                                    "message",
                                                    c->message));
        }
        if (r == 0 && json_array_size(list) == 0)
                r = json_object_del(o, "conditions");
        return r;
}

json_t *xp_job_status_to_json(const struct xp_job_spec *spec, const struct xp_job_status *s)
{
        json_t *o = json_object();
        int r = o ? 0 : -1;

        if (r == 0)
                r = set_time(o, "startTime", s->start_s);
        if (r == 0)
                r = set_time(o, "completionTime", s->completion_s);
        if (r == 0 && s->active > 0)
                r = json_object_set_new(o, "active", json_integer(s->active));
        if (r == 0 && s->succeeded > 0)
                r = json_object_set_new(o, "succeeded", json_integer(s->succeeded));
        if (r == 0 && s->failed > 0)
                r = json_object_set_new(o, "failed", json_integer(s->failed));
        if (r == 0)
                r = json_object_set_new(o, "terminating", json_integer(s->terminating));
        if (r == 0)
                r = json_object_set_new(o, "ready", json_integer(s->ready));
        if (r == 0)
                r = json_object_set_new(o, "uncountedTerminatedPods", json_object());
        if (r == 0 && spec->indexed)
                r = set_indexes(o, "completedIndexes", &s->completed);
        if (r == 0 && spec->indexed && spec->backoff_limit_per_index >= 0)
                r = set_indexes(o, "failedIndexes", &s->failed_indexes);
        if (r == 0)
                r = add_conditions(o, s);
        if (r != 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}
