/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One metric of an autoscaler read and turned into a proposal and a status entry, with the
 * reasons and messages of Kubernetes' horizontal controller (computeStatusFor*Metric):
 * Resource and ContainerResource from the pods' usage, Pods from the devices of each pod's
 * placement (xpool_device_utilization, xpool_device_memory_used_bytes) or else a per-pod
 * Prometheus query, Object and External from a Prometheus query.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpa_ctl.h"
#include "hpa_pods.h"
#include "xpool/doc.h"
#include "xpool/quantity.h"

#define LABELS_MAX 16

void hpa_milli_text(int64_t milli, char *buf, size_t size)
{
        struct xp_quantity q;
        char text[XP_QUANTITY_STRING_MAX];

        if (milli % 1000 == 0)
                snprintf(buf, size, "%lld", (long long)(milli / 1000));
        else if (xp_quantity_from_double((double)milli / 1000.0, &q, NULL) >= 0)
                snprintf(buf, size, "%s", xp_quantity_format(&q, text));
        else
                snprintf(buf, size, "%lldm", (long long)milli);
}

static json_t *quantity(int64_t milli)
{
        char text[64];

        hpa_milli_text(milli, text, sizeof(text));
        return json_string(text);
}

/* The result of a failed metric, with the status entry Kubernetes leaves for it. */
static int failed(struct xp_hpa_metric_result *ret, const char *reason, json_t **ret_status)
{
        ret->ok = false;
        ret->reason = reason;
        *ret_status = json_pack("{s:s}", "type", "");
        return *ret_status ? 0 : -ENOMEM;
}

/* Runs the replica calculator over the pods' samples; error gets its message on failure. */
static int calculate(const struct hpa_read *rd,
                     const struct xp_hpa_pod *pods,
                     size_t n,
                     enum xp_hpa_pod_target type,
                     int64_t target,
                     bool cpu,
                     struct xp_hpa_proposal *ret,
                     char *error,
                     size_t error_size)
{
        struct xp_error err = {0};
        struct xp_hpa_pods_args args = {
            .pods = pods,
            .n_pods = n,
            .current = rd->current,
            .target_type = type,
            .target = target,
            .cpu = cpu,
            .now_s = rd->now_s,
            .tolerance = rd->c->tolerance,
        };
        int r = xp_hpa_pods_replicas(&args, ret, &err);

        if (r < 0)
                snprintf(error, error_size, "%s", err.msg);
        return r;
}

static bool any_sample(const struct xp_hpa_pod *pods, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (pods[i].has_sample)
                        return true;
        return false;
}

/* Resource and ContainerResource. */
static int read_resource(const struct hpa_read *rd,
                         const struct xp_hpa_metric_spec *m,
                         struct xp_hpa_pod *pods,
                         char *error,
                         size_t size,
                         struct xp_hpa_metric_result *ret,
                         json_t **ret_status)
{
        bool utilization = m->target_type == XP_HPA_TARGET_UTILIZATION;
        bool container = m->source == XP_HPA_CONTAINER_RESOURCE;
        size_t n = json_array_size(rd->pods);
        struct xp_hpa_proposal p;
        char cause[XP_HPA_MESSAGE_MAX];
        int r = 0;

        r = hpa_usage_read(rd->usage, rd->c->metrics, rd->ns);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                hpa_pod_basics(json_array_get(rd->pods, i), &pods[i]);
                hpa_pod_resource(rd->usage,
                                 json_array_get(rd->pods, i),
                                 m->name,
                                 container ? m->container : NULL,
                                 &pods[i]);
        }
        if (n > 0 && !any_sample(pods, n)) {
                snprintf(
                    cause,
                    sizeof(cause),
                    "unable to get metrics for resource %s: no metrics returned from resource metrics API",
                    m->name);
                r = -ENODATA;
        } else {
                r = calculate(rd,
                              pods,
                              n,
                              utilization ? XP_HPA_UTILIZATION : XP_HPA_AVERAGE_VALUE,
                              m->target,
                              strcmp(m->name, "cpu") == 0,
                              &p,
                              cause,
                              sizeof(cause));
        }
        if (r < 0) {
                snprintf(error,
                         size,
                         "failed to get %s %s: %s",
                         m->name,
                         utilization ? "utilization" : "usage",
                         cause);
                return failed(ret,
                              container ? "FailedGetContainerResourceMetric"
                                        : "FailedGetResourceMetric",
                              ret_status);
        }
        ret->ok = true;
        ret->replicas = p.replicas;
        json_t *current = utilization ? json_pack("{s:I, s:o}",
                                                  "averageUtilization",
                                                  (json_int_t)p.current,
                                                  "averageValue",
                                                  quantity(p.average))
                                      : json_pack("{s:o}", "averageValue", quantity(p.current));
        *ret_status = container ? json_pack("{s:s, s:{s:s, s:s, s:o}}",
                                            "type",
                                            "ContainerResource",
                                            "containerResource",
                                            "name",
                                            m->name,
                                            "container",
                                            m->container ? m->container : "",
                                            "current",
                                            current)
                                : json_pack("{s:s, s:{s:s, s:o}}",
                                            "type",
                                            "Resource",
                                            "resource",
                                            "name",
                                            m->name,
                                            "current",
                                            current);
        return *ret_status ? 0 : -ENOMEM;
}

/* The labels of a metric's selector (matchLabels) after the ones given. */
static size_t selector_labels(const json_t *selector, struct xp_hpa_label *labels, size_t n)
{
        const char *key;
        const json_t *v;

        json_object_foreach((json_t *)json_object_get(selector, "matchLabels"), key, v)
        {
                if (n == LABELS_MAX || !json_string_value(v))
                        break;
                labels[n++] = (struct xp_hpa_label){.name = key, .value = json_string_value(v)};
        }
        return n;
}

/* A Prometheus query of name with labels: 0 with *ret in milli-units, else -errno with error. */
static int query(const struct hpa_read *rd,
                 const char *name,
                 const struct xp_hpa_label *labels,
                 size_t n_labels,
                 int64_t *ret,
                 char *error,
                 size_t size)
{
        const struct xp_autoscaler_metrics *m = rd->c->metrics;
        struct xp_error err = {0};
        char promql[1024], *body = NULL;
        size_t len = 0;
        double v = 0;
        int r;

        r = xp_hpa_prom_query(name, labels, n_labels, promql, sizeof(promql), &err);
        if (r >= 0)
                r = m && m->query ? m->query(m->userdata, promql, &body, &len, &err) : -ENOTCONN;
        if (r >= 0)
                r = xp_hpa_prom_value(body, len, &v, &err);
        free(body);
        if (r == -ENOTCONN)
                snprintf(
                    error,
                    size,
                    "unable to get metric %s: no Prometheus query endpoint is configured (--hpa-prometheus-url)",
                    name);
        else if (r < 0)
                snprintf(error, size, "unable to get metric %s: %s", name, err.msg);
        else if (fabs(v * 1000.0) > 9e18)
                r = -ERANGE,
                snprintf(error, size, "unable to get metric %s: %g is out of range", name, v);
        else
                *ret = (int64_t)llround(v * 1000.0);
        return r;
}

/* Pods: the devices' figures, or a Prometheus query per pod. */
static int read_pods(const struct hpa_read *rd,
                     const struct xp_hpa_metric_spec *m,
                     struct xp_hpa_pod *pods,
                     char *error,
                     size_t size,
                     struct xp_hpa_metric_result *ret,
                     json_t **ret_status)
{
        bool util = strcmp(m->name, XP_AUTOSCALER_DEVICE_UTILIZATION) == 0,
             memory = strcmp(m->name, XP_AUTOSCALER_DEVICE_MEMORY) == 0;
        size_t n = json_array_size(rd->pods);
        struct xp_hpa_proposal p;
        char cause[XP_HPA_MESSAGE_MAX] = "";
        int r = 0;

        for (size_t i = 0; i < n; i++) {
                const json_t *pod = json_array_get(rd->pods, i);
                hpa_pod_basics(pod, &pods[i]);
                if (util || memory) {
                        hpa_pod_device(rd->c->metrics, pod, memory, &pods[i]);
                        continue;
                }
                struct xp_hpa_label labels[LABELS_MAX] = {{"namespace", rd->ns},
                                                          {"pod", pods[i].name}};
                size_t n_labels = selector_labels(m->selector, labels, 2);
                r = query(rd, m->name, labels, n_labels, &pods[i].value, cause, sizeof(cause));
                if (r == -ENOTCONN || r == -EINVAL)
                        break; /* the same for every pod */
                pods[i].has_sample = r >= 0;
                pods[i].sample_s = rd->now_s;
                r = 0;
        }
        if (r >= 0 && n > 0 && !any_sample(pods, n)) {
                if (!cause[0])
                        snprintf(
                            cause,
                            sizeof(cause),
                            "unable to get metric %s: no pod of the target has a reading of its devices",
                            m->name);
                r = -ENODATA;
        }
        if (r >= 0)
                r = calculate(
                    rd, pods, n, XP_HPA_AVERAGE_VALUE, m->target, false, &p, cause, sizeof(cause));
        if (r < 0) {
                snprintf(error, size, "failed to get pods metric value: %s", cause);
                return failed(ret, "FailedGetPodsMetric", ret_status);
        }
        ret->ok = true;
        ret->replicas = p.replicas;
        *ret_status = json_pack("{s:s, s:{s:{s:s}, s:{s:o}}}",
                                "type",
                                "Pods",
                                "pods",
                                "metric",
                                "name",
                                m->name,
                                "current",
                                "averageValue",
                                quantity(p.current));
        return *ret_status ? 0 : -ENOMEM;
}

/* Object and External: one query, against a value or an average value per pod. */
static int read_single(const struct hpa_read *rd,
                       const struct xp_hpa_metric_spec *m,
                       char *error,
                       size_t size,
                       struct xp_hpa_metric_result *ret,
                       json_t **ret_status)
{
        bool object = m->source == XP_HPA_OBJECT;
        bool average = m->target_type == XP_HPA_TARGET_AVERAGE_VALUE;
        struct xp_hpa_label labels[LABELS_MAX] = {{"namespace", rd->ns}};
        char kind[64] = "";
        size_t n_labels = 1;
        struct xp_hpa_proposal p;
        char cause[XP_HPA_MESSAGE_MAX];
        int64_t value;

        if (object) {
                for (size_t i = 0; m->object_kind && m->object_kind[i] && i + 1 < sizeof(kind); i++)
                        kind[i] = (char)(m->object_kind[i] | 0x20); /* Deployment: deployment */
                labels[n_labels++] = (struct xp_hpa_label){kind, m->object_name};
        }
        n_labels = selector_labels(m->selector, labels, n_labels);
        if (query(rd, m->name, labels, n_labels, &value, cause, sizeof(cause)) < 0) {
                if (object)
                        snprintf(error, size, "failed to get object metric value: %s", cause);
                else
                        snprintf(
                            error, size, "failed to get %s external metric: %s", m->name, cause);
                return failed(
                    ret, object ? "FailedGetObjectMetric" : "FailedGetExternalMetric", ret_status);
        }
        xp_hpa_object_replicas(
            value, m->target, average, rd->current, hpa_ready_pods(rd->pods), rd->c->tolerance, &p);
        ret->ok = true;
        ret->replicas = p.replicas;
        json_t *current =
            json_pack("{s:o}", average ? "averageValue" : "value", quantity(p.current));
        json_t *metric = json_pack("{s:s}", "name", m->name);
        if (metric && m->selector)
                json_object_set(metric, "selector", (json_t *)m->selector);
        *ret_status = object ? json_pack("{s:s, s:{s:o, s:{s:s?, s:s?, s:s?}, s:o}}",
                                         "type",
                                         "Object",
                                         "object",
                                         "metric",
                                         metric,
                                         "describedObject",
                                         "apiVersion",
                                         m->object_api_version,
                                         "kind",
                                         m->object_kind,
                                         "name",
                                         m->object_name,
                                         "current",
                                         current)
                             : json_pack("{s:s, s:{s:o, s:o}}",
                                         "type",
                                         "External",
                                         "external",
                                         "metric",
                                         metric,
                                         "current",
                                         current);
        return *ret_status ? 0 : -ENOMEM;
}

int hpa_read_metric(const struct hpa_read *rd,
                    const struct xp_hpa_metric_spec *m,
                    char *title,
                    size_t title_size,
                    char *error,
                    size_t error_size,
                    struct xp_hpa_metric_result *ret,
                    json_t **ret_status)
{
        size_t n = json_array_size(rd->pods);
        struct xp_hpa_pod *pods = NULL;
        int r;

        xp_hpa_metric_title(m, title, title_size);
        *ret = (struct xp_hpa_metric_result){.name = title, .error = error};
        error[0] = '\0';
        if (m->source == XP_HPA_OBJECT || m->source == XP_HPA_EXTERNAL)
                return read_single(rd, m, error, error_size, ret, ret_status);
        pods = calloc(n ? n : 1, sizeof(*pods));
        if (!pods)
                return -ENOMEM;
        if (m->source == XP_HPA_PODS)
                r = read_pods(rd, m, pods, error, error_size, ret, ret_status);
        else
                r = read_resource(rd, m, pods, error, error_size, ret, ret_status);
        free(pods);
        return r;
}
