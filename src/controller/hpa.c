/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One sync of an autoscaler (Kubernetes' reconcileAutoscaler and computeReplicasForMetrics): the
 * largest proposal of the metrics wins; metrics that fail only block a scale-down (a failing
 * metric might have asked for more) or, when all fail, the whole sync.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hpa.h"

static void
set_condition(struct xp_hpa_condition *c, bool status, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
set_condition(struct xp_hpa_condition *c, bool status, const char *reason, const char *fmt, ...)
{
        va_list ap;

        c->set = true;
        c->status = status;
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        va_start(ap, fmt);
        vsnprintf(c->message, sizeof(c->message), fmt, ap);
        va_end(ap);
}

/* The largest proposal, or -1 (with ScalingActive False) when the metrics can't be trusted. */
static int32_t from_metrics(const struct xp_hpa_metric_result *metrics,
                            size_t n,
                            int32_t spec_replicas,
                            const char **ret_name,
                            struct xp_hpa_decision *d)
{
        int32_t replicas = 0;
        const struct xp_hpa_metric_result *first_invalid = NULL;
        size_t invalid = 0;

        *ret_name = "";
        for (size_t i = 0; i < n; i++) {
                if (!metrics[i].ok) {
                        if (!first_invalid)
                                first_invalid = &metrics[i];
                        invalid++;
                        continue;
                }
                if (replicas == 0 || metrics[i].replicas > replicas) {
                        replicas = metrics[i].replicas;
                        *ret_name = metrics[i].name;
                }
        }
        if (first_invalid && (invalid >= n || replicas < spec_replicas)) {
                set_condition(&d->active,
                              false,
                              first_invalid->reason,
                              "the HPA was unable to compute the replica count: %s",
                              first_invalid->error);
                return -1;
        }
        if (n == 0) {
                set_condition(
                    &d->active,
                    false,
                    "FailedGetResourceMetric",
                    "the HPA was unable to compute the replica count: no metrics to compute");
                return -1;
        }
        set_condition(&d->active,
                      true,
                      "ValidMetricFound",
                      "the HPA was able to successfully calculate a replica count from %s",
                      *ret_name);
        return replicas;
}

int xp_hpa_decide(const struct xp_hpa_behavior *behavior,
                  const struct xp_hpa_limits *limits,
                  const struct xp_hpa_metric_result *metrics,
                  size_t n_metrics,
                  struct xp_hpa_history *history,
                  struct xp_hpa_decision *ret)
{
        struct xp_hpa_decision d = {0};
        int32_t current = limits->current;

        if (current == 0 && limits->min != 0) {
                set_condition(&d.active,
                              false,
                              "ScalingDisabled",
                              "scaling is disabled since the replica count of the target is zero");
                *ret = d;
                return 0;
        }
        if (current > limits->max) {
                d.desired = limits->max;
                snprintf(d.reason,
                         sizeof(d.reason),
                         "Current number of replicas above Spec.MaxReplicas");
        } else if (current < limits->min) {
                d.desired = limits->min;
                snprintf(d.reason,
                         sizeof(d.reason),
                         "Current number of replicas below Spec.MinReplicas");
        } else {
                const char *name;
                int32_t proposal = from_metrics(metrics, n_metrics, current, &name, &d);
                if (proposal < 0) {
                        d.failed = true;
                        d.desired = current;
                        *ret = d;
                        return 0;
                }
                if (proposal > current)
                        snprintf(d.reason, sizeof(d.reason), "%s above target", name);
                else if (proposal < current)
                        snprintf(d.reason, sizeof(d.reason), "All metrics below target");
                int r = xp_hpa_normalize(
                    behavior, limits, proposal, history, &d.desired, &d.able, &d.limited);
                if (r < 0)
                        return r;
        }
        d.rescale = d.desired != current;
        *ret = d;
        return 0;
}
