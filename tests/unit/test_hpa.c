/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HorizontalPodAutoscaler's arithmetic (src/controller/hpa*.c): the replica calculator on the
 * cases Kubernetes' documentation and its replica calculator's tests state (inputs and expected
 * counts), the tolerance, missing and unready pods, stabilisation windows and behavior policies
 * on an injected clock.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "controller/hpa.h"

#define NOW_S   1000000
#define MAXPODS 16

/* Running, ready, started long ago, sampled now: a pod the calculator trusts. */
static struct xp_hpa_pod pod(int64_t value, int64_t request)
{
        return (struct xp_hpa_pod){
            .name = "p",
            .phase = XP_HPA_PHASE_RUNNING,
            .ready = true,
            .start_s = NOW_S - 3600,
            .ready_change_s = NOW_S - 3590,
            .has_sample = true,
            .value = value,
            .sample_s = NOW_S,
            .window_s = 30,
            .has_request = request > 0,
            .request = request,
        };
}

static int32_t calc(struct xp_hpa_pod *pods,
                    size_t n,
                    int32_t current,
                    enum xp_hpa_pod_target type,
                    int64_t target,
                    bool cpu,
                    int64_t *ret_current)
{
        struct xp_hpa_pods_args args = {
            .pods = pods,
            .n_pods = n,
            .current = current,
            .target_type = type,
            .target = target,
            .cpu = cpu,
            .now_s = NOW_S,
            .tolerance = XP_HPA_TOLERANCE,
        };
        struct xp_hpa_proposal p;
        struct xp_error err = {0};

        if (xp_hpa_pods_replicas(&args, &p, &err) < 0)
                fail_msg("calc: %s", err.msg);
        if (ret_current)
                *ret_current = p.current;
        return p.replicas;
}

/* cpu utilization: pods of 1 cpu request at the given milli-cpu. */
static int32_t
cpu_util(const int64_t *levels, size_t n, int32_t current, int64_t target, int64_t *ret_util)
{
        struct xp_hpa_pod pods[MAXPODS];
        for (size_t i = 0; i < n; i++)
                pods[i] = pod(levels[i], 1000);
        return calc(pods, n, current, XP_HPA_UTILIZATION, target, true, ret_util);
}

/* The documentation's algorithm: desired = ceil(current * value / target), skipped within 0.1. */
static void documented_ratio(void **state)
{
        struct xp_hpa_pod pods[4];
        int64_t cur;

        (void)state;
        /* "if the current metric value is 200m, and the desired value is 100m, the number of
         * replicas will be doubled" */
        for (size_t i = 0; i < 2; i++)
                pods[i] = pod(200, 0);
        assert_int_equal(calc(pods, 2, 2, XP_HPA_AVERAGE_VALUE, 100, false, &cur), 4);
        assert_int_equal(cur, 200);
        /* "If the current value is instead 50m, you'll halve the number of replicas" */
        for (size_t i = 0; i < 4; i++)
                pods[i] = pod(50, 0);
        assert_int_equal(calc(pods, 4, 4, XP_HPA_AVERAGE_VALUE, 100, false, NULL), 2);
        /* "If the ratio is sufficiently close to 1.0 ... the control plane skips any scaling" */
        for (size_t i = 0; i < 4; i++)
                pods[i] = pod(109, 0);
        assert_int_equal(calc(pods, 4, 4, XP_HPA_AVERAGE_VALUE, 100, false, NULL), 4);
        for (size_t i = 0; i < 4; i++)
                pods[i] = pod(111, 0);
        assert_int_equal(calc(pods, 4, 4, XP_HPA_AVERAGE_VALUE, 100, false, NULL), 5);
}

/* Kubernetes' replica calculator cases (replica_calculator_test.go: inputs and expected). */
static void calculator_cases(void **state)
{
        int64_t util;
        (void)state;

        /* ScaleUp: 300/500/700 of 1 cpu, target 30% -> 50%, 5 replicas */
        assert_int_equal(cpu_util((int64_t[]){300, 500, 700}, 3, 3, 30, &util), 5);
        assert_int_equal(util, 50);
        /* ScaleDown: 100/300/500/250/250, target 50% -> 28%, 3 replicas */
        assert_int_equal(cpu_util((int64_t[]){100, 300, 500, 250, 250}, 5, 5, 50, &util), 3);
        assert_int_equal(util, 28);
        /* Tolerance: requests .9/1/1.1, 1010/1090/1070, target 100% -> 105%, unchanged */
        struct xp_hpa_pod pods[3] = {pod(1010, 900), pod(1090, 1000), pod(1070, 1100)};
        assert_int_equal(calc(pods, 3, 3, XP_HPA_UTILIZATION, 100, true, &util), 3);
        assert_int_equal(util, 105);
        /* Utilization is an integer percent before the ratio: 20.03% counts as 20% (6, not 7) */
        assert_int_equal(cpu_util((int64_t[]){200, 200, 201}, 3, 3, 10, &util), 6);
        assert_int_equal(util, 20);
}

static void unready_pods(void **state)
{
        struct xp_hpa_pod pods[3] = {pod(300, 1000), pod(500, 1000), pod(700, 1000)};
        int64_t util;
        (void)state;

        /* ScaleUpUnreadyLessScale: the first pod starting and not ready counts 0 on a scale-up */
        pods[0].ready = false;
        pods[0].start_s = NOW_S - 10;
        pods[0].ready_change_s = NOW_S - 10;
        assert_int_equal(calc(pods, 3, 3, XP_HPA_UTILIZATION, 30, true, &util), 4);
        assert_int_equal(util, 60); /* the ready pods' utilization */

        /* Pending pods are unready for every metric, not only cpu */
        pods[0] = pod(0, 1000);
        pods[0].phase = XP_HPA_PHASE_PENDING;
        pods[0].has_sample = false;
        assert_int_equal(calc(pods, 3, 3, XP_HPA_UTILIZATION, 30, false, NULL), 4);

        /* A scale-down ignores unready pods: only the ready ones' ratio, on their count */
        pods[1] = pod(100, 1000);
        pods[2] = pod(100, 1000);
        assert_int_equal(calc(pods, 3, 3, XP_HPA_UTILIZATION, 50, false, NULL), 1);

        /* Deleting and failed pods are ignored */
        pods[0] = pod(900, 1000);
        pods[0].deleting = true;
        pods[1] = pod(900, 1000);
        pods[1].phase = XP_HPA_PHASE_FAILED;
        pods[2] = pod(500, 1000);
        assert_int_equal(calc(pods, 3, 3, XP_HPA_UTILIZATION, 50, true, NULL), 3);
}

static void missing_samples(void **state)
{
        struct xp_hpa_pod pods[4] = {pod(100, 1000), pod(100, 1000), pod(100, 1000), pod(0, 1000)};
        (void)state;

        /* Scale-down: a pod without a sample counts as using its whole request:
         * (300 + 1000) / 4000 = 32% of 50% -> ceil(0.64 x 4) = 3, not ceil(0.2 x 3) = 1 */
        pods[3].has_sample = false;
        assert_int_equal(calc(pods, 4, 4, XP_HPA_UTILIZATION, 50, true, NULL), 3);

        /* Scale-up: it counts as zero: (3 x 900 + 0) / 4000 = 67% of 50% -> ceil(1.35 x 4) = 6 */
        for (size_t i = 0; i < 3; i++)
                pods[i] = pod(900, 1000);
        assert_int_equal(calc(pods, 4, 4, XP_HPA_UTILIZATION, 50, true, NULL), 6);

        /* ... unless that brings the ratio within tolerance: then nothing changes
         * (3 x 700) / 4000 = 52% of 50% */
        for (size_t i = 0; i < 3; i++)
                pods[i] = pod(700, 1000);
        assert_int_equal(calc(pods, 4, 4, XP_HPA_UTILIZATION, 50, true, NULL), 4);

        /* Pods metric, scale-down: missing pods count at the target value */
        for (size_t i = 0; i < 3; i++)
                pods[i] = pod(10, 0);
        assert_int_equal(calc(pods, 4, 4, XP_HPA_AVERAGE_VALUE, 100, false, NULL), 2);
}

static void calculator_errors(void **state)
{
        struct xp_hpa_pod pods[2] = {pod(100, 1000), pod(100, 0)};
        struct xp_hpa_pods_args args = {.pods = pods,
                                        .n_pods = 2,
                                        .current = 2,
                                        .target_type = XP_HPA_UTILIZATION,
                                        .target = 50,
                                        .cpu = true,
                                        .now_s = NOW_S,
                                        .tolerance = XP_HPA_TOLERANCE};
        struct xp_hpa_proposal p = {.replicas = 77};
        struct xp_error err = {0};
        (void)state;

        assert_int_equal(xp_hpa_pods_replicas(&args, &p, &err), -EINVAL);
        assert_string_equal(err.msg, "missing request for cpu in pod p");
        assert_int_equal(p.replicas, 77);
        args.n_pods = 0;
        assert_int_equal(xp_hpa_pods_replicas(&args, &p, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "no pods returned by selector while calculating replica count");
        pods[1] = pod(0, 1000);
        pods[0].has_sample = pods[1].has_sample = false;
        args.n_pods = 2;
        assert_int_equal(xp_hpa_pods_replicas(&args, &p, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "did not receive metrics for targeted pods (pods might be unready)");
}

static void object_and_external(void **state)
{
        struct xp_hpa_proposal p;
        (void)state;

        /* Value target: ready pods scaled by value/target */
        xp_hpa_object_replicas(30000, 10000, false, 2, 2, XP_HPA_TOLERANCE, &p);
        assert_int_equal(p.replicas, 6);
        xp_hpa_object_replicas(10500, 10000, false, 2, 2, XP_HPA_TOLERANCE, &p);
        assert_int_equal(p.replicas, 2);
        /* AverageValue: ceil(value/target), held within tolerance of value/(target x current) */
        xp_hpa_object_replicas(45000, 10000, true, 2, 2, XP_HPA_TOLERANCE, &p);
        assert_int_equal(p.replicas, 5);
        assert_int_equal(p.current, 22500);
        xp_hpa_object_replicas(41000, 10000, true, 4, 4, XP_HPA_TOLERANCE, &p);
        assert_int_equal(p.replicas, 4);
        /* From zero replicas the ratio alone */
        xp_hpa_object_replicas(25000, 10000, false, 0, 0, XP_HPA_TOLERANCE, &p);
        assert_int_equal(p.replicas, 3);
}

struct sync {
        struct xp_hpa_behavior behavior;
        struct xp_hpa_limits limits;
        struct xp_hpa_history history;
};

/* s starts zeroed; each init frees what the previous case kept. */
static void sync_init(struct sync *s, bool behavior, int32_t min, int32_t max, int32_t current)
{
        xp_hpa_history_done(&s->history);
        *s = (struct sync){0};
        s->behavior.set = behavior;
        xp_hpa_rules_default_up(&s->behavior.up);
        xp_hpa_rules_default_down(&s->behavior.down);
        s->limits = (struct xp_hpa_limits){.min = min,
                                           .max = max,
                                           .current = current,
                                           .down_window_s = XP_HPA_DOWNSCALE_WINDOW_S,
                                           .now_ms = 0};
}

/* One sync at t_s proposing rec; applies the outcome as the controller would. */
static int32_t step(struct sync *s, int64_t t_s, int32_t rec, struct xp_hpa_decision *ret)
{
        struct xp_hpa_metric_result m = {.name = "pods metric x", .ok = true, .replicas = rec};
        struct xp_hpa_decision d;

        s->limits.now_ms = t_s * 1000;
        assert_int_equal(xp_hpa_decide(&s->behavior, &s->limits, &m, 1, &s->history, &d), 0);
        if (d.rescale) {
                assert_int_equal(
                    xp_hpa_record_scale(
                        &s->behavior, s->limits.now_ms, s->limits.current, d.desired, &s->history),
                    0);
                s->limits.current = d.desired;
        }
        if (ret)
                *ret = d;
        return s->limits.current;
}

static void scale_up_rates(void **state)
{
        struct sync s = {0};
        struct xp_hpa_decision d;
        (void)state;

        /* No behavior: at most max(2 x current, 4) per sync */
        sync_init(&s, false, 1, 10, 1);
        assert_int_equal(step(&s, 0, 10, &d), 4);
        assert_true(d.limited.status);
        assert_string_equal(d.limited.reason, "ScaleUpLimit");
        assert_string_equal(d.reason, "pods metric x above target");
        assert_int_equal(step(&s, 15, 10, NULL), 8);
        assert_int_equal(step(&s, 30, 10, &d), 10);
        assert_string_equal(d.limited.reason, "DesiredWithinRange");
        assert_false(d.limited.status);
        assert_int_equal(step(&s, 45, 10, &d), 10);
        assert_false(d.rescale);

        /* Default behavior: the larger of +4 pods and +100% per 15 s */
        sync_init(&s, true, 1, 100, 1);
        assert_int_equal(step(&s, 0, 50, NULL), 5);
        assert_int_equal(step(&s, 5, 50, &d), 5); /* still within the same 15 s period */
        assert_string_equal(d.limited.reason, "ScaleUpLimit");
        assert_int_equal(step(&s, 16, 50, NULL), 10);
        assert_int_equal(step(&s, 32, 50, NULL), 20);
        assert_int_equal(step(&s, 48, 50, NULL), 40);
        assert_int_equal(step(&s, 64, 50, &d), 50);
        assert_string_equal(d.limited.reason, "DesiredWithinRange");
        assert_false(d.limited.status);

        /* The maximum: TooManyReplicas */
        sync_init(&s, true, 1, 3, 2);
        assert_int_equal(step(&s, 0, 9, &d), 3);
        assert_string_equal(d.limited.reason, "TooManyReplicas");
        assert_true(d.limited.status);
        xp_hpa_history_done(&s.history);
}

static void scale_down_window(void **state)
{
        struct sync s = {0};
        struct xp_hpa_decision d;
        (void)state;

        for (int b = 0; b < 2; b++) {
                sync_init(&s, b, 1, 10, 5);
                assert_int_equal(step(&s, 0, 5, NULL), 5);
                assert_int_equal(step(&s, 15, 2, &d), 5);
                assert_string_equal(d.able.reason, "ScaleDownStabilized");
                assert_int_equal(step(&s, 290, 2, NULL), 5);
                /* the recommendation of 5 is older than 300 s at 301 */
                assert_int_equal(step(&s, 301, 2, &d), 2);
                assert_string_equal(d.reason, "All metrics below target");
                assert_string_equal(d.able.reason, "ReadyForNewScale");
        }
        /* A shortened window (the server's flag) */
        sync_init(&s, true, 1, 10, 4);
        s.limits.down_window_s = 10;
        assert_int_equal(step(&s, 0, 4, NULL), 4);
        assert_int_equal(step(&s, 5, 1, NULL), 4);
        assert_int_equal(step(&s, 11, 1, NULL), 1);
        /* ... and the behavior's own window wins over the flag */
        sync_init(&s, true, 1, 10, 4);
        s.limits.down_window_s = 10;
        s.behavior.down.window_s = 60;
        assert_int_equal(step(&s, 0, 4, NULL), 4);
        assert_int_equal(step(&s, 30, 1, NULL), 4);
        assert_int_equal(step(&s, 61, 1, NULL), 1);
        xp_hpa_history_done(&s.history);
}

/* The documentation's scale-down example: Pods 4 and Percent 10 per 60 s, 80 replicas. */
static void documented_policies(void **state)
{
        struct sync s = {0};
        struct xp_hpa_decision d;
        (void)state;

        sync_init(&s, true, 1, 100, 80);
        s.behavior.down = (struct xp_hpa_rules){
            .window_s = 0,
            .select = XP_HPA_SELECT_MAX,
            .policies = {{XP_HPA_POLICY_PODS, 4, 60}, {XP_HPA_POLICY_PERCENT, 10, 60}},
            .n_policies = 2,
        };
        /* "the number of replicas to be reduced is 8" (10% of 80) */
        assert_int_equal(step(&s, 0, 10, &d), 72);
        assert_string_equal(d.limited.reason, "ScaleDownLimit");
        /* nothing more within the period */
        assert_int_equal(step(&s, 30, 10, NULL), 72);
        /* "10% of the pods is 7.2 but the number is rounded up to 8" */
        assert_int_equal(step(&s, 61, 10, NULL), 64);
        /* 57, 51, 45, 40, 36, 32, 28: then 10% (2.8) is under the Pods policy's 4, which
         * allows the larger change (selectPolicy Max) */
        int64_t t = 122;
        for (; s.limits.current > 28 && t < 2000; t += 61)
                step(&s, t, 10, NULL);
        assert_int_equal(s.limits.current, 28);
        assert_int_equal(t, 122 + 7 * 61);
        assert_int_equal(step(&s, t, 10, NULL), 24);

        /* Min picks the policy with the smaller change */
        sync_init(&s, true, 1, 100, 80);
        s.behavior.down = (struct xp_hpa_rules){
            .window_s = 0,
            .select = XP_HPA_SELECT_MIN,
            .policies = {{XP_HPA_POLICY_PODS, 4, 60}, {XP_HPA_POLICY_PERCENT, 10, 60}},
            .n_policies = 2,
        };
        assert_int_equal(step(&s, 0, 10, NULL), 76);

        /* Disabled: no scale-down at all */
        sync_init(&s, true, 1, 100, 80);
        s.behavior.down.select = XP_HPA_SELECT_DISABLED;
        s.behavior.down.window_s = 0;
        assert_int_equal(step(&s, 0, 10, NULL), 80);
        assert_int_equal(step(&s, 600, 10, NULL), 80);
        /* ... and up still works */
        assert_int_equal(step(&s, 615, 90, NULL), 90);

        /* A scale-up window holds the lowest recent recommendation */
        sync_init(&s, true, 1, 100, 2);
        s.behavior.up.window_s = 60;
        assert_int_equal(step(&s, 0, 2, NULL), 2);
        assert_int_equal(step(&s, 15, 6, &d), 2);
        assert_string_equal(d.able.reason, "ScaleUpStabilized");
        assert_int_equal(step(&s, 61, 6, NULL), 6);
        xp_hpa_history_done(&s.history);
}

static void decisions(void **state)
{
        struct sync s = {0};
        struct xp_hpa_decision d;
        struct xp_hpa_metric_result m[3] = {
            {.name = "cpu resource utilization (percentage of request)", .ok = true, .replicas = 3},
            {.name = "pods metric xpool_device_utilization", .ok = true, .replicas = 6},
            {.name = "external metric queue",
             .ok = false,
             .reason = "FailedGetExternalMetric",
             .error = "unable to get external metric"},
        };
        (void)state;

        /* The largest proposal wins; a failing metric doesn't block a scale-up */
        sync_init(&s, true, 1, 10, 4);
        assert_int_equal(xp_hpa_decide(&s.behavior, &s.limits, m, 3, &s.history, &d), 0);
        assert_true(d.rescale);
        assert_int_equal(d.desired, 6);
        assert_string_equal(d.reason, "pods metric xpool_device_utilization above target");
        assert_true(d.active.status);
        assert_string_equal(d.active.reason, "ValidMetricFound");
        assert_string_equal(
            d.active.message,
            "the HPA was able to successfully calculate a replica count from pods metric xpool_device_utilization");

        /* ... but it blocks a scale-down */
        m[1].replicas = 2;
        sync_init(&s, true, 1, 10, 4);
        assert_int_equal(xp_hpa_decide(&s.behavior, &s.limits, m, 3, &s.history, &d), 0);
        assert_true(d.failed);
        assert_false(d.rescale);
        assert_false(d.active.status);
        assert_string_equal(d.active.reason, "FailedGetExternalMetric");
        assert_string_equal(
            d.active.message,
            "the HPA was unable to compute the replica count: unable to get external metric");

        /* Out of range: brought into range whatever the metrics */
        s.limits.current = 12;
        assert_int_equal(xp_hpa_decide(&s.behavior, &s.limits, m, 3, &s.history, &d), 0);
        assert_int_equal(d.desired, 10);
        assert_string_equal(d.reason, "Current number of replicas above Spec.MaxReplicas");
        s.limits.current = 0;
        s.limits.min = 2;
        assert_int_equal(xp_hpa_decide(&s.behavior, &s.limits, m, 3, &s.history, &d), 0);
        assert_false(d.rescale);
        assert_string_equal(d.active.reason, "ScalingDisabled");
        assert_string_equal(d.active.message,
                            "scaling is disabled since the replica count of the target is zero");
        s.limits.current = 1;
        assert_int_equal(xp_hpa_decide(&s.behavior, &s.limits, m, 3, &s.history, &d), 0);
        assert_int_equal(d.desired, 2);
        assert_string_equal(d.reason, "Current number of replicas below Spec.MinReplicas");

        /* minReplicas 0 (--hpa-scale-to-zero): at zero replicas the metrics still decide */
        m[2] = (struct xp_hpa_metric_result){
            .name = "external metric queue", .ok = true, .replicas = 3};
        m[0].replicas = m[1].replicas = 0;
        sync_init(&s, true, 0, 10, 0);
        assert_int_equal(xp_hpa_decide(&s.behavior, &s.limits, m, 3, &s.history, &d), 0);
        assert_true(d.rescale);
        assert_int_equal(d.desired, 3);
        assert_string_equal(d.active.reason, "ValidMetricFound");
        xp_hpa_history_done(&s.history);
}

/* Many syncs keep the history bounded: old slots are reused. */
static void history_bounded(void **state)
{
        struct sync s = {0};
        (void)state;

        sync_init(&s, true, 1, 10, 5);
        for (int64_t t = 0; t < 100000; t += 15)
                step(&s, t, (int32_t)(1 + t / 15 % 9), NULL);
        assert_true(s.history.n_recommendations <= 22);
        assert_true(s.history.n_ups <= 4 && s.history.n_downs <= 4);
        xp_hpa_history_done(&s.history);
}

static void prometheus(void **state)
{
        struct xp_hpa_label labels[2] = {{"namespace", "default"}, {"queue", "a\"b\\c"}};
        struct xp_error err = {0};
        char q[128];
        double v = -1;
        (void)state;

        assert_int_equal(xp_hpa_prom_query("waiting_requests", labels, 2, q, sizeof(q), &err), 0);
        assert_string_equal(q, "waiting_requests{namespace=\"default\",queue=\"a\\\"b\\\\c\"}");
        assert_int_equal(xp_hpa_prom_query("job:rate5m", NULL, 0, q, sizeof(q), &err), 0);
        assert_string_equal(q, "job:rate5m");
        assert_int_equal(xp_hpa_prom_query("bad-name", NULL, 0, q, sizeof(q), &err), -EINVAL);
        assert_string_equal(err.msg, "metric name \"bad-name\" is not a Prometheus metric name");
        assert_int_equal(xp_hpa_prom_query("waiting_requests", labels, 2, q, 20, &err),
                         -ENAMETOOLONG);

        static const char vector[] =
            "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
            "{\"metric\":{\"queue\":\"a\"},\"value\":[1700000000.5,\"12\"]},"
            "{\"metric\":{\"queue\":\"b\"},\"value\":[1700000000.5,\"30.5\"]}]}}";
        assert_int_equal(xp_hpa_prom_value(vector, strlen(vector), &v, &err), 0);
        assert_true(v == 42.5);
        static const char scalar[] =
            "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"7\"]}}";
        assert_int_equal(xp_hpa_prom_value(scalar, strlen(scalar), &v, &err), 0);
        assert_true(v == 7);
        static const struct {
                const char *body, *message;
                int code;
        } bad[] = {
            {"{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error at char 3\"}",
             "prometheus: bad_data: parse error at char 3",
             -EINVAL},
            {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
             "prometheus: no series matched the query",
             -ENODATA},
            {"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
             "prometheus: the answer is a matrix, not an instant vector",
             -EINVAL},
            {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"value\":[1,\"NaN\"]}]}}",
             "prometheus: the value \"NaN\" is not a finite number",
             -EINVAL},
            {"<html>",
             "prometheus: the answer is not JSON: '[' or '{' expected near '<' at line 1",
             -EINVAL},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                v = -1;
                assert_int_equal(xp_hpa_prom_value(bad[i].body, strlen(bad[i].body), &v, &err),
                                 bad[i].code);
                assert_string_equal(err.msg, bad[i].message);
                assert_true(v == -1);
        }
}

static void spec_json(void **state)
{
        struct xp_hpa_spec spec;
        struct xp_error err = {0};
        json_error_t jerr;
        char title[128];
        (void)state;

        json_t *h = json_loads(
            "{\"spec\":{\"scaleTargetRef\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"inference\"},"
            "\"maxReplicas\":4}}",
            0,
            &jerr);
        assert_int_equal(xp_hpa_spec_from_json(h, &spec, &err), 0);
        assert_int_equal(spec.min, 1);
        assert_int_equal(spec.max, 4);
        assert_int_equal(spec.n_metrics, 1); /* Kubernetes' default: cpu at 80% */
        assert_int_equal(spec.metrics[0].target, 80);
        assert_false(spec.behavior.set);
        xp_hpa_metric_title(&spec.metrics[0], title, sizeof(title));
        assert_string_equal(title, "cpu resource utilization (percentage of request)");
        json_decref(h);

        h = json_loads(
            "{\"spec\":{\"scaleTargetRef\":{\"kind\":\"Deployment\",\"name\":\"inference\"},\"minReplicas\":1,\"maxReplicas\":4,"
            "\"metrics\":[{\"type\":\"Pods\",\"pods\":{\"metric\":{\"name\":\"xpool_device_utilization\"},"
            "\"target\":{\"type\":\"AverageValue\",\"averageValue\":\"50\"}}},"
            "{\"type\":\"External\",\"external\":{\"metric\":{\"name\":\"waiting\",\"selector\":{\"matchLabels\":{\"q\":\"a\"}}},"
            "\"target\":{\"type\":\"Value\",\"value\":\"1500m\"}}}],"
            "\"behavior\":{\"scaleDown\":{\"stabilizationWindowSeconds\":5,\"policies\":[{\"type\":\"Pods\",\"value\":1,\"periodSeconds\":10}]}}}}",
            0,
            &jerr);
        assert_non_null(h);
        assert_int_equal(xp_hpa_spec_from_json(h, &spec, &err), 0);
        assert_int_equal(spec.n_metrics, 2);
        assert_int_equal(spec.metrics[0].source, XP_HPA_PODS);
        assert_int_equal(spec.metrics[0].target, 50000);
        assert_int_equal(spec.metrics[1].target, 1500);
        assert_non_null(spec.metrics[1].selector);
        assert_true(spec.behavior.set);
        assert_int_equal(spec.behavior.down.window_s, 5);
        assert_int_equal(spec.behavior.down.n_policies, 1);
        assert_int_equal(spec.behavior.up.n_policies, 2); /* defaulted */
        xp_hpa_metric_title(&spec.metrics[0], title, sizeof(title));
        assert_string_equal(title, "pods metric xpool_device_utilization");
        json_decref(h);

        h = json_loads(
            "{\"spec\":{\"scaleTargetRef\":{\"kind\":\"Deployment\",\"name\":\"x\"},\"maxReplicas\":4,"
            "\"metrics\":[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":\"Utilization\"}}}]}}",
            0,
            &jerr);
        assert_int_equal(xp_hpa_spec_from_json(h, &spec, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization");
        json_decref(h);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(documented_ratio),
            cmocka_unit_test(calculator_cases),
            cmocka_unit_test(unready_pods),
            cmocka_unit_test(missing_samples),
            cmocka_unit_test(calculator_errors),
            cmocka_unit_test(object_and_external),
            cmocka_unit_test(scale_up_rates),
            cmocka_unit_test(scale_down_window),
            cmocka_unit_test(documented_policies),
            cmocka_unit_test(decisions),
            cmocka_unit_test(history_bounded),
            cmocka_unit_test(prometheus),
            cmocka_unit_test(spec_json),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
