/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One metric's replica proposal (Kubernetes' replica calculator): per-pod metrics grouped into
 * ready, unready, missing and ignored pods; Object and External metrics against a value or an
 * average value. Integer sums and divisions stay where Kubernetes has them.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "hpa.h"

enum group {
        READY,
        UNREADY, /* pending, or (cpu) not yet past its start-up */
        MISSING, /* no sample */
        IGNORED, /* deleting or failed */
};

/* Kubernetes' groupPods: cpu samples taken while a pod starts up are not trusted. */
static enum group group_of(const struct xp_hpa_pod *pod, const struct xp_hpa_pods_args *args)
{
        if (pod->deleting || pod->phase == XP_HPA_PHASE_FAILED)
                return IGNORED;
        if (pod->phase == XP_HPA_PHASE_PENDING)
                return UNREADY;
        if (!pod->has_sample)
                return MISSING;
        if (!args->cpu || pod->start_s == 0)
                return READY;
        bool unready;
        if (pod->start_s + XP_HPA_CPU_INIT_PERIOD_S > args->now_s)
                /* starting: unready until ready and sampled over a window after it got ready */
                unready = !pod->ready || pod->sample_s < pod->ready_change_s + pod->window_s;
        else
                /* started: unready only if it never became ready since its start */
                unready =
                    !pod->ready && pod->start_s + XP_HPA_READINESS_DELAY_S > pod->ready_change_s;
        return unready ? UNREADY : READY;
}

/* The sums over the pods counted, with each group's stand-in value for the pods without one. */
struct sums {
        int64_t values, requests;
        size_t entries;
};

static void add(struct sums *s, int64_t value, int64_t request)
{
        s->values += value;
        s->requests += request;
        s->entries++;
}

/* The usage ratio of the sums and the status value (utilization % or average). */
static double ratio_of(const struct sums *s, const struct xp_hpa_pods_args *args, int64_t *current)
{
        if (args->target_type == XP_HPA_UTILIZATION) {
                int32_t utilization = (int32_t)(s->values * 100 / s->requests);
                *current = utilization;
                return (double)utilization / (double)args->target;
        }
        *current = s->values / (int64_t)s->entries;
        return (double)*current / (double)args->target;
}

/* The value a missing pod counts for on a scale-down: its whole request (or the target, if the
 * target is over 100%), or the target value. */
static int64_t fallback(const struct xp_hpa_pod *pod, const struct xp_hpa_pods_args *args)
{
        if (args->target_type == XP_HPA_AVERAGE_VALUE)
                return args->target;
        int64_t percent = args->target > 100 ? args->target : 100;
        return pod->request * percent / 100;
}

static int check_pods(const struct xp_hpa_pods_args *args, struct xp_error *err)
{
        if (args->n_pods == 0)
                return xp_errorf(
                    err, -EINVAL, "no pods returned by selector while calculating replica count");
        if (args->target <= 0)
                return xp_errorf(err, -EINVAL, "the target must be above zero");
        if (args->target_type != XP_HPA_UTILIZATION)
                return 0;
        for (size_t i = 0; i < args->n_pods; i++)
                if (!args->pods[i].has_request && group_of(&args->pods[i], args) != IGNORED)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "missing request for %s in pod %s",
                                         args->cpu ? "cpu" : "the resource",
                                         args->pods[i].name ? args->pods[i].name : "?");
        return 0;
}

int xp_hpa_pods_replicas(const struct xp_hpa_pods_args *args,
                         struct xp_hpa_proposal *ret,
                         struct xp_error *err)
{
        struct sums ready = {0};
        size_t n_unready = 0, n_missing = 0;
        int r;

        r = check_pods(args, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < args->n_pods; i++) {
                const struct xp_hpa_pod *pod = &args->pods[i];
                switch (group_of(pod, args)) {
                case READY:
                        add(&ready, pod->value, pod->request);
                        break;
                case UNREADY:
                        n_unready++;
                        break;
                case MISSING:
                        n_missing++;
                        break;
                case IGNORED:
                        break;
                }
        }
        if (ready.entries == 0 || (args->target_type == XP_HPA_UTILIZATION && ready.requests == 0))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "did not receive metrics for targeted pods (pods might be unready)");

        int64_t current;
        double ratio = ratio_of(&ready, args, &current);
        struct xp_hpa_proposal p = {.replicas = args->current, .current = current};
        p.average = ready.values / (int64_t)ready.entries;
        bool up_with_unready = n_unready > 0 && ratio > 1.0;
        if (!up_with_unready && n_missing == 0) {
                if (fabs(1.0 - ratio) > args->tolerance)
                        p.replicas = (int32_t)ceil(ratio * (double)ready.entries);
                *ret = p;
                return 0;
        }

        /* Count the pods set aside at the value that moves the ratio least in its direction. */
        struct sums all = ready;
        for (size_t i = 0; i < args->n_pods; i++) {
                const struct xp_hpa_pod *pod = &args->pods[i];
                enum group g = group_of(pod, args);
                if (g == MISSING && ratio < 1.0)
                        add(&all, fallback(pod, args), pod->request);
                else if (g == MISSING && ratio > 1.0)
                        add(&all, 0, pod->request);
                else if (g == UNREADY && up_with_unready)
                        add(&all, 0, pod->request);
        }
        int64_t ignored_current;
        double again = ratio_of(&all, args, &ignored_current);
        if (fabs(1.0 - again) <= args->tolerance || (ratio < 1.0 && again > 1.0) ||
            (ratio > 1.0 && again < 1.0)) {
                *ret = p;
                return 0;
        }
        int32_t replicas = (int32_t)ceil(again * (double)all.entries);
        if (!((again < 1.0 && replicas > args->current) ||
              (again > 1.0 && replicas < args->current)))
                p.replicas = replicas;
        *ret = p;
        return 0;
}

void xp_hpa_object_replicas(int64_t value,
                            int64_t target,
                            bool average,
                            int32_t current,
                            int32_t ready,
                            double tolerance,
                            struct xp_hpa_proposal *ret)
{
        struct xp_hpa_proposal p = {.replicas = current, .current = value};

        if (target <= 0)
                target = 1;
        if (average) {
                /* GetObjectPerPodMetricReplicas / GetExternalPerPodMetricReplicas */
                p.replicas = (int32_t)ceil((double)value / (double)target);
                if (current > 0) {
                        double ratio = (double)value / ((double)target * (double)current);
                        if (fabs(ratio - 1.0) <= tolerance)
                                p.replicas = current;
                        p.current = (value + current - 1) / current;
                }
        } else {
                /* getUsageRatioReplicaCount: at zero replicas the ratio alone decides */
                double ratio = (double)value / (double)target;
                if (current == 0)
                        p.replicas = (int32_t)ceil(ratio);
                else if (fabs(1.0 - ratio) > tolerance)
                        p.replicas = (int32_t)ceil(ratio * (double)ready);
        }
        p.average = p.current;
        *ret = p;
}
