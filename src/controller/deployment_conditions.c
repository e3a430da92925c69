/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Deployment's Available and Progressing conditions (Kubernetes' syncRolloutStatus,
 * checkPausedConditions and calculateStatus), with its reasons and messages word for word:
 * kubectl rollout status stops on ProgressDeadlineExceeded, describe prints them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "deployment.h"
#include "xpool/condition.h"
#include "xpool/timeutil.h"

static const char *field(const json_t *condition, const char *key)
{
        const char *v = json_string_value(json_object_get(condition, key));

        return v ? v : "";
}

static int put_condition(json_t *status, json_t *condition)
{
        json_t *conditions = json_object_get(status, "conditions");
        ssize_t at = xp_condition_index(status, field(condition, "type"));

        if (!json_is_array(conditions)) {
                conditions = json_array();
                if (!conditions || json_object_set_new(status, "conditions", conditions) < 0)
                        return -ENOMEM;
        }
        if (at >= 0)
                return json_array_set_new(conditions, (size_t)at, condition) < 0 ? -ENOMEM : 0;
        return json_array_append_new(conditions, condition) < 0 ? -ENOMEM : 0;
}

/*
 * Kubernetes' SetDeploymentCondition, and with progress its special case for Progressing: the
 * same status and reason change nothing unless progress is set (then lastUpdateTime moves).
 */
static int set_condition(json_t *status,
                         const char *type,
                         const char *value,
                         const char *reason,
                         const char *message,
                         int64_t now_s,
                         bool progress)
{
        const json_t *cur = xp_condition_get(status, type);
        char now[XP_RFC3339_MAX];
        json_t *c;

        if (cur && !progress && strcmp(field(cur, "status"), value) == 0 &&
            strcmp(field(cur, "reason"), reason) == 0)
                return 0;
        if (xp_time_format_rfc3339(now_s, now) < 0)
                return -EINVAL;
        c = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                      "type",
                      type,
                      "status",
                      value,
                      "lastUpdateTime",
                      now,
                      "lastTransitionTime",
                      now,
                      "reason",
                      reason,
                      "message",
                      message);
        if (!c)
                return -ENOMEM;
        if (cur && strcmp(field(cur, "status"), value) == 0 &&
            json_object_get(cur, "lastTransitionTime"))
                json_object_set(
                    c, "lastTransitionTime", json_object_get(cur, "lastTransitionTime"));
        return put_condition(status, c);
}

int xp_condition_set(json_t *status,
                     const char *type,
                     const char *value,
                     const char *reason,
                     const char *message,
                     int64_t now_s)
{
        return set_condition(status, type, value, reason, message, now_s, false);
}

static bool reason_is(const json_t *status, const char *reason)
{
        const json_t *c = xp_condition_get(status, "Progressing");

        return c && strcmp(field(c, "reason"), reason) == 0;
}

static int available(const struct xp_deploy_progress *p, int64_t now_s, json_t *status)
{
        if (p->now.available >= p->replicas - p->max_unavailable)
                return xp_condition_set(status,
                                        "Available",
                                        "True",
                                        "MinimumReplicasAvailable",
                                        "Deployment has minimum availability.",
                                        now_s);
        return xp_condition_set(status,
                                "Available",
                                "False",
                                "MinimumReplicasUnavailable",
                                "Deployment does not have minimum availability.",
                                now_s);
}

/* checkPausedConditions; a reported lack of progress is never overwritten by it. */
static int paused(const struct xp_deploy_progress *p, int64_t now_s, json_t *status)
{
        if (reason_is(status, "ProgressDeadlineExceeded"))
                return 0;
        if (p->paused && !reason_is(status, "DeploymentPaused"))
                return xp_condition_set(status,
                                        "Progressing",
                                        "Unknown",
                                        "DeploymentPaused",
                                        "Deployment is paused",
                                        now_s);
        if (!p->paused && reason_is(status, "DeploymentPaused"))
                return xp_condition_set(status,
                                        "Progressing",
                                        "Unknown",
                                        "DeploymentResumed",
                                        "Deployment is resumed",
                                        now_s);
        return 0;
}

static bool complete(const struct xp_deploy_progress *p)
{
        return p->now.updated == p->replicas && p->now.replicas == p->replicas &&
               p->now.available == p->replicas && p->observed;
}

static bool progressing(const struct xp_deploy_progress *p)
{
        return p->now.updated > p->before.updated ||
               p->now.replicas - p->now.updated < p->before.replicas - p->before.updated ||
               p->now.ready > p->before.ready || p->now.available > p->before.available;
}

/* DeploymentTimedOut; also when it will, for the recheck. */
static bool
timed_out(const struct xp_deploy_progress *p, int64_t now_s, const json_t *status, int64_t *ret_at)
{
        const json_t *c = xp_condition_get(status, "Progressing");
        int64_t from = 0;

        *ret_at = 0;
        if (!c || strcmp(field(c, "reason"), "NewReplicaSetAvailable") == 0)
                return false;
        if (strcmp(field(c, "reason"), "ProgressDeadlineExceeded") == 0)
                return true;
        if (xp_time_parse_rfc3339(field(c, "lastUpdateTime"), &from) < 0)
                return false;
        *ret_at = from + p->progress_deadline_s;
        return *ret_at < now_s;
}

static int
progress(const struct xp_deploy_progress *p, int64_t now_s, json_t *status, int64_t *ret_recheck_s)
{
        char msg[512];
        int64_t at;

        if (complete(p)) {
                snprintf(
                    msg, sizeof(msg), "ReplicaSet \"%s\" has successfully progressed.", p->new_rs);
                return set_condition(
                    status, "Progressing", "True", "NewReplicaSetAvailable", msg, now_s, false);
        }
        if (progressing(p)) {
                snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" is progressing.", p->new_rs);
                return set_condition(
                    status, "Progressing", "True", "ReplicaSetUpdated", msg, now_s, true);
        }
        if (timed_out(p, now_s, status, &at)) {
                snprintf(
                    msg, sizeof(msg), "ReplicaSet \"%s\" has timed out progressing.", p->new_rs);
                return set_condition(
                    status, "Progressing", "False", "ProgressDeadlineExceeded", msg, now_s, false);
        }
        if (at > 0) {
                *ret_recheck_s = at + 1;
                return 1;
        }
        return 0;
}

int xp_deploy_conditions(const struct xp_deploy_progress *p,
                         int64_t now_s,
                         json_t *status,
                         int64_t *ret_recheck_s)
{
        const json_t *cur;
        char msg[512];
        int r;

        if ((r = available(p, now_s, status)) < 0 || (r = paused(p, now_s, status)) < 0)
                return r;
        if (p->paused || !p->new_rs || p->progress_deadline_s < 0)
                return 0;
        cur = xp_condition_get(status, "Progressing");
        if (p->new_rs_created) {
                snprintf(msg, sizeof(msg), "Created new replica set \"%s\"", p->new_rs);
                r = xp_condition_set(
                    status, "Progressing", "True", "NewReplicaSetCreated", msg, now_s);
        } else if (!cur) {
                snprintf(msg, sizeof(msg), "Found new replica set \"%s\"", p->new_rs);
                r = xp_condition_set(
                    status, "Progressing", "True", "FoundNewReplicaSet", msg, now_s);
        }
        if (r < 0)
                return r;
        /* a rollout that completed stays complete until old pods appear again */
        if (p->now.replicas == p->now.updated && reason_is(status, "NewReplicaSetAvailable"))
                return 0;
        return progress(p, now_s, status, ret_recheck_s);
}
