/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Job's podFailurePolicy against a failed pod (Kubernetes' matchPodFailurePolicy): rules in
 * order, the first that matches decides. onExitCodes looks at containers that terminated with
 * a non-zero code; onPodConditions at the pod's conditions (DisruptionTarget, and the
 * xpool.io/DeviceUnhealthy condition of a pod whose device failed).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "job.h"

static const char *action_name(enum xp_job_action a)
{
        switch (a) {
        case XP_JOB_ACTION_FAIL_JOB:
                return "FailJob";
        case XP_JOB_ACTION_FAIL_INDEX:
                return "FailIndex";
        case XP_JOB_ACTION_IGNORE:
                return "Ignore";
        case XP_JOB_ACTION_COUNT:
                return "Count";
        }
        return "Count";
}

static bool code_matches(const struct xp_job_rule *rule, int32_t code)
{
        bool in = false;
        for (size_t i = 0; i < rule->n_values; i++)
                in = in || rule->values[i] == code;
        return rule->not_in ? !in : in;
}

static const struct xp_job_exit *exit_match(const struct xp_job_rule *rule,
                                            const struct xp_job_pod *pod)
{
        for (size_t i = 0; i < pod->n_exits; i++) {
                const struct xp_job_exit *e = &pod->exits[i];
                if (!e->terminated || e->code == 0)
                        continue;
                if (rule->container &&
                    (!e->container || strcmp(rule->container, e->container) != 0))
                        continue;
                if (code_matches(rule, e->code))
                        return e;
        }
        return NULL;
}

static const char *condition_match(const struct xp_job_rule *rule, const struct xp_job_pod *pod)
{
        for (size_t i = 0; i < rule->n_conditions; i++)
                for (size_t j = 0; j < pod->n_conditions; j++)
                        if (pod->conditions[j].type &&
                            strcmp(pod->conditions[j].type, rule->conditions[i].type) == 0 &&
                            pod->conditions[j].status == rule->conditions[i].status)
                                return rule->conditions[i].type;
        return NULL;
}

int xp_job_policy_match(const struct xp_job_spec *spec,
                        const struct xp_job_pod *pod,
                        size_t *ret_rule,
                        char *message,
                        size_t size)
{
        const char *ns = spec->namespace ? spec->namespace : "default";

        if (pod->phase != XP_JOB_POD_FAILED)
                return -ENOENT;
        for (size_t i = 0; i < spec->n_rules; i++) {
                const struct xp_job_rule *rule = &spec->rules[i];
                const char *action = action_name(rule->action);
                if (rule->has_exit_codes) {
                        const struct xp_job_exit *e = exit_match(rule, pod);
                        if (!e)
                                continue;
                        snprintf(
                            message,
                            size,
                            "Container %s for pod %s/%s failed with exit code %d matching %s rule at index %zu",
                            e->container ? e->container : "",
                            ns,
                            pod->name,
                            e->code,
                            action,
                            i);
                } else {
                        const char *type = condition_match(rule, pod);
                        if (!type)
                                continue;
                        snprintf(message,
                                 size,
                                 "Pod %s/%s has condition %s matching %s rule at index %zu",
                                 ns,
                                 pod->name,
                                 type,
                                 action,
                                 i);
                }
                *ret_rule = i;
                return 0;
        }
        return -ENOENT;
}
