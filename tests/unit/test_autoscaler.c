/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HorizontalPodAutoscaler controller (src/controller/hpa_ctl.c and its parts), step by step
 * over a real store with the figures handed in: metrics read and converted (cpu utilisation,
 * a device's utilisation through the pod's placement, an External metric's PromQL and answer),
 * the scale written, the status and the Events in Kubernetes' words.
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

#include "registry_fixture.h"
#include "xpool/autoscaler.h"
#include "xpool/doc.h"

struct figures {
        int64_t cpu_milli;   /* every pod's; < 0: no sample */
        double npu_percent;  /* npu-0 of n1 */
        const char *answer;  /* the Prometheus answer; NULL: no endpoint */
        char promql[256];    /* the last query */
        int n_pods;          /* how many samples pods() gives (0: 2, a and b) */
        unsigned pods_reads; /* calls of pods() */
};

static int
pods_usage(void *userdata, const char *ns, struct xp_autoscaler_pod_sample **ret, size_t *ret_n)
{
        struct figures *f = userdata;
        size_t n = (size_t)f->n_pods;

        (void)ns;
        f->pods_reads++;
        *ret = NULL;
        *ret_n = 0;
        if (f->cpu_milli < 0)
                return -ENOENT;
        *ret = calloc(n, sizeof(**ret));
        if (!*ret)
                return -ENOMEM;
        /* the pods are a, b, ... then p0, p1, ... */
        for (size_t i = 0; i < n; i++) {
                if (i < 2)
                        snprintf((*ret)[i].name, sizeof((*ret)[i].name), "%c", (char)('a' + i));
                else
                        snprintf((*ret)[i].name, sizeof((*ret)[i].name), "p%zu", i - 2);
                (*ret)[i].usage = (struct xp_autoscaler_pod_usage){
                    .time_s = FIXTURE_WALL_START, .window_s = 15, .cpu_milli = f->cpu_milli};
        }
        *ret_n = n;
        return 0;
}

static int device_usage(void *userdata,
                        const char *node,
                        const char *id,
                        struct xp_autoscaler_device_usage *ret)
{
        const struct figures *f = userdata;

        if (strcmp(node, "n1") != 0 || strcmp(id, "npu-0") != 0)
                return -ENOENT;
        *ret = (struct xp_autoscaler_device_usage){.time_s = FIXTURE_WALL_START,
                                                   .has_utilization = true,
                                                   .utilization_percent = f->npu_percent};
        return 0;
}

static int
query(void *userdata, const char *promql, char **ret_body, size_t *ret_len, struct xp_error *err)
{
        struct figures *f = userdata;

        (void)err;
        if (!f->answer)
                return -ENOTCONN;
        snprintf(f->promql, sizeof(f->promql), "%s", promql);
        *ret_body = strdup(f->answer);
        *ret_len = strlen(f->answer);
        return *ret_body ? 0 : -ENOMEM;
}

static json_t *parse(const char *text)
{
        json_error_t jerr;
        json_t *j = json_loads(text, 0, &jerr);

        if (!j)
                fail_msg("bad JSON: %s: %s", jerr.text, text);
        return j;
}

static void put(struct registry_fixture *f, const char *kind, const char *name, const char *text)
{
        fixture_put(f, kind, "team", name, parse(text));
}

#define DEPLOYMENT(replicas)                                                                        \
        "{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": \"web\"," \
        " \"namespace\": \"team\"}, \"spec\": {\"replicas\": " replicas ", \"selector\":"           \
        " {\"matchLabels\": {\"app\": \"web\"}}, \"template\": {\"metadata\": {\"labels\":"         \
        " {\"app\": \"web\"}}, \"spec\": {\"containers\": [{\"name\": \"c\"}]}}}}"

#define POD(name, extra)                                                                           \
        "{\"metadata\": {\"name\": \"" name "\", \"namespace\": \"team\", \"labels\":"             \
        " {\"app\": \"web\"}" extra                                                                \
        "}, \"spec\": {\"nodeName\": \"n1\", \"containers\": [{\"name\":"                          \
        " \"c\", \"resources\": {\"requests\": {\"cpu\": \"500m\"}}}]}, \"status\": {\"phase\":"   \
        " \"Running\", \"startTime\": \"2020-01-01T00:00:00Z\", \"conditions\": [{\"type\":"       \
        " \"Ready\", \"status\": \"True\", \"lastTransitionTime\": \"2020-01-01T00:00:10Z\"}]}}"

#define PLACED                                                                                     \
        ", \"annotations\": {\"xpool.io/placement\": \"{\\\"node\\\":\\\"n1\\\",\\\"devices\\\":"  \
        "[{\\\"resource\\\":\\\"vendor.com/npu\\\",\\\"id\\\":\\\"npu-0\\\",\\\"index\\\":0,"      \
        "\\\"milli\\\":1000}]}\"}"

#define HPA(metric)                                                                                 \
        "{\"apiVersion\": \"autoscaling/v2\", \"kind\": \"HorizontalPodAutoscaler\", \"metadata\":" \
        " {\"name\": \"web\", \"namespace\": \"team\", \"uid\": \"u1\", \"generation\": 1},"        \
        " \"spec\": {\"scaleTargetRef\": {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\","   \
        " \"name\": \"web\"}, \"minReplicas\": 1, \"maxReplicas\": 10, \"metrics\": [" metric       \
        "]}}"

#define CPU_50                                                                                     \
        "{\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\", \"target\": {\"type\": \"Utilization\", \"averageUtilization\": 50}}}"

struct run {
        struct registry_fixture f;
        struct figures figures;
        struct xp_autoscaler_metrics ops;
        struct xp_autoscaler *c;
};

static void start(struct run *r, const char *name)
{
        fixture_open(&r->f, name, 0);
        if (!r->figures.n_pods)
                r->figures.n_pods = 2;
        /* Events need their namespace */
        fixture_put(
            &r->f,
            "namespaces",
            "",
            "team",
            parse("{\"metadata\": {\"name\": \"team\"}, \"status\": {\"phase\": \"Active\"}}"));
        r->ops = (struct xp_autoscaler_metrics){
            .pods = pods_usage, .device = device_usage, .query = query, .userdata = &r->figures};
}

static void step(struct run *r)
{
        struct xp_error err = {0};

        if (!r->c) {
                struct xp_autoscaler_options o = {
                    .clock = &r->f.clock, .metrics = &r->ops, .downscale_window_s = -1};
                assert_int_equal(xp_autoscaler_new(r->f.registry, &o, &r->c, &err), 0);
        }
        assert_int_equal(xp_autoscaler_step(r->c, &err), 0);
}

static void stop(struct run *r)
{
        xp_autoscaler_free(r->c);
        fixture_close(&r->f);
}

static int64_t replicas(struct run *r)
{
        json_t *d = fixture_get(&r->f, "deployments", "team", "web");
        int64_t n = xp_json_int_at(d, "spec.replicas", -1);

        json_decref(d);
        return n;
}

/* The HPA's field at path as text ("" when absent); "metric.PATH": in currentMetrics[0],
 * "TYPE.PATH": in the condition of TYPE. */
static void expect_hpa(struct run *r, const char *path, const char *want)
{
        json_t *hpa = fixture_get(&r->f, "horizontalpodautoscalers", "team", "web");
        const json_t *v = hpa, *c;
        size_t i;

        if (strncmp(path, "metric.", 7) == 0) {
                v = json_array_get(xp_json_at(hpa, "status.currentMetrics"), 0);
                path += 7;
        }
        json_array_foreach(xp_json_at(hpa, "status.conditions"), i, c)
        {
                size_t n = strlen(xp_json_str_at(c, "type", ""));
                if (strncmp(path, xp_json_str_at(c, "type", ""), n) == 0 && path[n] == '.') {
                        v = c;
                        path += n + 1;
                }
        }
        v = xp_json_at(v, path);
        char *got = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("");

        if (!got || strcmp(got, want) != 0)
                fail_msg("%s: got %s, want %s", path, got ? got : "?", want);
        free(got);
        json_decref(hpa);
}

/* An Event with reason and exactly message exists. */
static void expect_event(struct run *r, const char *reason, const char *message)
{
        json_t *events = NULL, *e;
        uint64_t version;
        size_t i;

        assert_int_equal(xp_store_list(r->f.store, "events", "team", &events, &version, NULL), 0);
        json_array_foreach(events, i, e)
        {
                if (strcmp(xp_json_str_at(e, "reason", ""), reason) == 0 &&
                    strcmp(xp_json_str_at(e, "message", ""), message) == 0) {
                        json_decref(events);
                        return;
                }
        }
        char *all = json_dumps(events, JSON_COMPACT);
        fail_msg("no %s Event \"%s\" among %s", reason, message, all);
}

static void cpu_utilization_scales_up(void **state)
{
        struct run r = {.figures = {.cpu_milli = 750}};

        (void)state;
        start(&r, "hpa-cpu");
        put(&r.f, "deployments", "web", DEPLOYMENT("2"));
        put(&r.f, "pods", "a", POD("a", ""));
        put(&r.f, "pods", "b", POD("b", ""));
        put(&r.f, "horizontalpodautoscalers", "web", HPA(CPU_50));
        step(&r);
        /* 150% of the request against 50%: 6, held to max(2 x 2, 4) by the rule without behavior */
        assert_int_equal(replicas(&r), 4);
        expect_hpa(
            &r,
            "status.currentMetrics",
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"current\":{\"averageUtilization\":150,\"averageValue\":\"750m\"}}}]");
        expect_hpa(&r, "status.desiredReplicas", "4");
        expect_hpa(&r, "status.currentReplicas", "2");
        expect_hpa(&r, "status.lastScaleTime", "\"2027-01-15T08:00:00Z\"");
        expect_event(
            &r,
            "SuccessfulRescale",
            "New size: 4; reason: cpu resource utilization (percentage of request) above target");
        stop(&r);
}

/*
 * A sync asks the source for its namespace's samples once and finds each pod's by name: with
 * pods_reads counted, 300 pods and two Resource metrics take one read, where a lookup per pod
 * (the source copying the namespace's samples each time) took 600 and O(pods^2) time.
 */
static void usage_read_once_per_sync(void **state)
{
        enum {
                PODS = 300
        };
        struct run r = {.figures = {.cpu_milli = 750, .n_pods = PODS + 2}};
        char name[16], *pod;

        (void)state;
        start(&r, "hpa-once");
        put(&r.f, "deployments", "web", DEPLOYMENT("2"));
        put(&r.f, "pods", "a", POD("a", ""));
        put(&r.f, "pods", "b", POD("b", ""));
        for (int i = 0; i < PODS; i++) {
                snprintf(name, sizeof(name), "p%d", i);
                assert_true(asprintf(&pod, POD("%s", ""), name) > 0);
                put(&r.f, "pods", name, pod);
                free(pod);
        }
        put(&r.f,
            "horizontalpodautoscalers",
            "web",
            HPA(CPU_50 ", {\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\","
                       " \"target\": {\"type\": \"AverageValue\", \"averageValue\": \"1\"}}}"));
        step(&r);
        assert_int_equal(r.figures.pods_reads, 1);
        /* every pod's sample was found: 150% of the request, as with two pods */
        expect_hpa(&r,
                   "metric.resource.current",
                   "{\"averageUtilization\":150,\"averageValue\":\"750m\"}");
        stop(&r);
}

static void missing_metrics_keep_the_size(void **state)
{
        struct run r = {.figures = {.cpu_milli = -1}};

        (void)state;
        start(&r, "hpa-missing");
        put(&r.f, "deployments", "web", DEPLOYMENT("2"));
        put(&r.f, "pods", "a", POD("a", ""));
        put(&r.f, "horizontalpodautoscalers", "web", HPA(CPU_50));
        step(&r);
        assert_int_equal(replicas(&r), 2);
        expect_event(
            &r,
            "FailedGetResourceMetric",
            "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API");
        expect_event(
            &r,
            "FailedComputeMetricsReplicas",
            "invalid metrics (1 invalid out of 1), first error is: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API");
        expect_hpa(&r, "ScalingActive.reason", "\"FailedGetResourceMetric\"");
        stop(&r);
}

static void device_utilization_through_the_placement(void **state)
{
        struct run r = {.figures = {.cpu_milli = -1, .npu_percent = 80}};

        (void)state;
        start(&r, "hpa-device");
        put(&r.f, "deployments", "web", DEPLOYMENT("1"));
        put(&r.f, "pods", "a", POD("a", PLACED));
        put(&r.f,
            "horizontalpodautoscalers",
            "web",
            HPA("{\"type\": \"Pods\", \"pods\": {\"metric\": {\"name\": \"xpool_device_utilization\"}, \"target\": {\"type\": \"AverageValue\", \"averageValue\": \"40\"}}}"));
        step(&r);
        assert_int_equal(replicas(&r), 2);
        expect_hpa(
            &r,
            "status.currentMetrics",
            "[{\"type\":\"Pods\",\"pods\":{\"metric\":{\"name\":\"xpool_device_utilization\"},\"current\":{\"averageValue\":\"80\"}}}]");
        expect_event(&r,
                     "SuccessfulRescale",
                     "New size: 2; reason: pods metric xpool_device_utilization above target");
        stop(&r);
}

#define EXTERNAL                                                                                    \
        "{\"type\": \"External\", \"external\": {\"metric\": {\"name\": \"waiting\", \"selector\":" \
        " {\"matchLabels\": {\"queue\": \"a\\\"b\"}}}, \"target\": {\"type\": \"AverageValue\","    \
        " \"averageValue\": \"10\"}}}"

static void external_from_prometheus(void **state)
{
        struct run r = {
            .figures = {
                .cpu_milli = -1,
                .answer =
                    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                    "{\"metric\":{},\"value\":[1,\"20\"]},{\"metric\":{},\"value\":[1,\"5.5\"]}]}}"}};

        (void)state;
        start(&r, "hpa-external");
        put(&r.f, "deployments", "web", DEPLOYMENT("1"));
        put(&r.f, "pods", "a", POD("a", ""));
        put(&r.f, "horizontalpodautoscalers", "web", HPA(EXTERNAL));
        step(&r);
        assert_string_equal(r.figures.promql, "waiting{namespace=\"team\",queue=\"a\\\"b\"}");
        /* the series summed: 25.5 at 10 a pod */
        assert_int_equal(replicas(&r), 3);
        expect_hpa(&r, "metric.external.current", "{\"averageValue\":\"25500m\"}");
        stop(&r);
}

static void external_errors_are_reported(void **state)
{
        struct run r = {
            .figures = {
                .cpu_milli = -1,
                .answer =
                    "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error\"}"}};

        (void)state;
        start(&r, "hpa-external-error");
        put(&r.f, "deployments", "web", DEPLOYMENT("1"));
        put(&r.f, "pods", "a", POD("a", ""));
        put(&r.f, "horizontalpodautoscalers", "web", HPA(EXTERNAL));
        step(&r);
        assert_int_equal(replicas(&r), 1);
        expect_event(
            &r,
            "FailedGetExternalMetric",
            "failed to get waiting external metric: unable to get metric waiting: prometheus: bad_data: parse error");
        r.figures.answer = NULL;
        r.f.now_ms += 20000; /* the next sync period */
        step(&r);
        expect_event(
            &r,
            "FailedGetExternalMetric",
            "failed to get waiting external metric: unable to get metric waiting: no Prometheus query endpoint is configured (--hpa-prometheus-url)");
        stop(&r);
}

static void a_missing_target_is_reported(void **state)
{
        struct run r = {.figures = {.cpu_milli = 100}};

        (void)state;
        start(&r, "hpa-no-target");
        put(&r.f, "horizontalpodautoscalers", "web", HPA(CPU_50));
        step(&r);
        expect_event(&r, "FailedGetScale", "deployments.apps \"web\" not found");
        expect_hpa(
            &r,
            "AbleToScale.message",
            "\"the HPA controller was unable to get the target's current scale: deployments.apps \\\"web\\\" not found\"");
        stop(&r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(cpu_utilization_scales_up),
            cmocka_unit_test(missing_metrics_keep_the_size),
            cmocka_unit_test(usage_read_once_per_sync),
            cmocka_unit_test(device_utilization_through_the_placement),
            cmocka_unit_test(external_from_prometheus),
            cmocka_unit_test(external_errors_are_reported),
            cmocka_unit_test(a_missing_target_is_reported),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
