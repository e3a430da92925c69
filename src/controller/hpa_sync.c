/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One autoscaler's sync, Kubernetes' reconcileAutoscaler: the target's scale, its pods, each
 * metric's proposal (hpa_read.c), the decision (hpa.c), the scale written through the target's
 * spec.replicas (what its scale subresource maps to), the Events and the status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hpa_ctl.h"
#include "hpa_pods.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/selector.h"
#include "xpool/store.h"

/* What one sync reads before it decides. */
struct target {
        const struct xp_kind *kind;
        char *selector; /* the scale's status.selector */
        int32_t replicas;
};

static void
set_cond(struct xp_hpa_condition *c, bool status, const char *reason, const char *message)
{
        c->set = true;
        c->status = status;
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        snprintf(c->message, sizeof(c->message), "%s", message);
}

/* The target's scale: -errno with message (Kubernetes' FailedGetScale). */
static int get_scale(struct xp_autoscaler *c,
                     const struct xp_hpa_spec *spec,
                     const char *ns,
                     struct target *t,
                     char *message,
                     size_t size)
{
        struct xp_error err = {0};
        json_t *object = NULL, *scale = NULL;
        int r;

        t->kind = spec->target_api_version
                      ? xp_kind_by_api_version(spec->target_api_version, spec->target_kind)
                      : xp_kind_by_name(spec->target_kind);
        if (!t->kind || !t->kind->scale) {
                snprintf(
                    message,
                    size,
                    "the server could not find the requested resource (%s %s/%s with a scale subresource)",
                    spec->target_api_version ? spec->target_api_version : "",
                    spec->target_kind,
                    spec->target_name);
                return -ENOENT;
        }
        r = xp_store_get(xp_registry_store(c->registry),
                         t->kind->plural,
                         ns,
                         spec->target_name,
                         &object,
                         NULL,
                         &err);
        if (r == -ENOENT)
                snprintf(message,
                         size,
                         "%s%s%s \"%s\" not found",
                         t->kind->plural,
                         *t->kind->group ? "." : "",
                         t->kind->group,
                         spec->target_name);
        else if (r < 0)
                snprintf(message, size, "%s", err.msg);
        if (r >= 0)
                r = xp_doc_scale(t->kind, object, &scale);
        if (r >= 0) {
                t->replicas = (int32_t)xp_json_int_at(scale, "spec.replicas", 0);
                t->selector = strdup(xp_json_str_at(scale, "status.selector", ""));
                r = t->selector ? 0 : -ENOMEM;
        }
        json_decref(object);
        json_decref(scale);
        return r;
}

/* The pods of ns the selector picks (a new array in *ret). */
static int target_pods(struct xp_autoscaler *c, const char *ns, const char *selector, json_t **ret)
{
        struct xp_label_selector *sel = NULL;
        struct xp_error err = {0};
        json_t *all = NULL, *out = json_array(), *pod;
        size_t i;
        int r;

        if (!out)
                return -ENOMEM;
        r = xp_label_selector_parse(selector, &sel, &err);
        if (r >= 0)
                r = xp_store_list(xp_registry_store(c->registry), "pods", ns, &all, NULL, &err);
        json_array_foreach(all, i, pod)
        {
                if (r >= 0 &&
                    xp_label_selector_matches(sel, xp_json_object_at(pod, "metadata.labels")))
                        r = json_array_append(out, pod) < 0 ? -ENOMEM : 0;
        }
        xp_label_selector_free(sel);
        json_decref(all);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

/* Each metric's proposal into results and status; events for the ones that failed. */
static int read_metrics(const struct hpa_read *rd,
                        const struct xp_hpa_spec *spec,
                        struct xp_hpa_metric_result *results,
                        char (*titles)[160],
                        char (*errors)[XP_HPA_MESSAGE_MAX],
                        json_t *statuses)
{
        for (size_t i = 0; i < spec->n_metrics; i++) {
                json_t *status = NULL;
                int r = hpa_read_metric(rd,
                                        &spec->metrics[i],
                                        titles[i],
                                        sizeof(titles[i]),
                                        errors[i],
                                        sizeof(errors[i]),
                                        &results[i],
                                        &status);
                if (r < 0)
                        return r;
                if (json_array_append_new(statuses, status) < 0)
                        return -ENOMEM;
                if (!results[i].ok)
                        hpa_event(rd->c, rd->hpa, "Warning", results[i].reason, "%s", errors[i]);
        }
        return 0;
}

static int set_replicas(json_t *object, void *userdata)
{
        const struct target *t = userdata;
        const char *path = t->kind->scale->spec_replicas;

        if (xp_json_int_at(object, path, -1) == t->replicas)
                return 0;
        return xp_json_set_int_at(object, path, t->replicas) < 0 ? -ENOMEM : 1;
}

/* Writes the new size, with the Events and AbleToScale of the outcome. */
static void rescale(struct xp_autoscaler *c,
                    const json_t *hpa,
                    const struct xp_hpa_spec *spec,
                    struct hpa_state *s,
                    struct target *t,
                    const struct xp_hpa_decision *d,
                    struct hpa_outcome *o)
{
        struct xp_error err = {0};
        char message[XP_HPA_MESSAGE_MAX];
        int32_t from = t->replicas;
        int r;

        t->replicas = d->desired;
        r = xp_registry_change(c->registry,
                               t->kind->plural,
                               xp_json_str_at(hpa, "metadata.namespace", ""),
                               spec->target_name,
                               set_replicas,
                               t,
                               NULL,
                               &err);
        if (r < 0) {
                const char *why = err.msg[0] ? err.msg : strerror(-r);
                snprintf(message,
                         sizeof(message),
                         "the HPA controller was unable to update the target scale: %s",
                         why);
                set_cond(&o->able, false, "FailedUpdateScale", message);
                hpa_event(c,
                          hpa,
                          "Warning",
                          "FailedRescale",
                          "New size: %d; reason: %s; error: %s",
                          d->desired,
                          d->reason,
                          why);
                o->desired = from;
                return;
        }
        snprintf(message,
                 sizeof(message),
                 "the HPA controller was able to update the target scale to %d",
                 d->desired);
        set_cond(&o->able, true, "SucceededRescale", message);
        hpa_event(c,
                  hpa,
                  "Normal",
                  "SuccessfulRescale",
                  "New size: %d; reason: %s",
                  d->desired,
                  d->reason);
        o->rescaled = true;
        if (xp_hpa_record_scale(
                &spec->behavior, xp_clock_wall_s(c->clock) * 1000, from, d->desired, &s->history) <
            0)
                xp_log(LOG_DEBUG, "autoscaler: out of memory recording a scale event");
}

/* From the scale on: metrics, decision, rescale. */
static int reconcile(struct xp_autoscaler *c,
                     const json_t *hpa,
                     const struct xp_hpa_spec *spec,
                     struct hpa_state *s,
                     struct target *t,
                     struct hpa_outcome *o)
{
        struct xp_hpa_metric_result results[XP_HPA_METRICS_MAX];
        char titles[XP_HPA_METRICS_MAX][160], errors[XP_HPA_METRICS_MAX][XP_HPA_MESSAGE_MAX];
        struct hpa_usage usage = {0};
        struct hpa_read rd = {.c = c,
                              .hpa = hpa,
                              .usage = &usage,
                              .ns = xp_json_str_at(hpa, "metadata.namespace", ""),
                              .current = t->replicas,
                              .now_s = xp_clock_wall_s(c->clock)};
        struct xp_hpa_limits limits = {.min = spec->min,
                                       .max = spec->max,
                                       .current = t->replicas,
                                       .down_window_s = c->downscale_window_s,
                                       .now_ms = rd.now_s * 1000};
        struct xp_hpa_decision d;
        size_t n = 0;
        int r = 0;

        o->metrics = json_array();
        if (!o->metrics)
                return -ENOMEM;
        /* metrics are read only when the count is in range, as Kubernetes does */
        if (t->replicas >= spec->min && t->replicas <= spec->max && t->replicas > 0) {
                r = target_pods(c, rd.ns, t->selector, &rd.pods);
                if (r >= 0)
                        r = read_metrics(&rd, spec, results, titles, errors, o->metrics);
                json_decref(rd.pods);
                hpa_usage_done(&usage);
                n = spec->n_metrics;
        }
        if (r >= 0)
                r = xp_hpa_decide(&spec->behavior, &limits, results, n, &s->history, &d);
        if (r < 0)
                return r;
        o->desired = d.desired;
        o->active = d.active;
        o->limited = d.limited;
        if (d.able.set)
                o->able = d.able;
        if (d.failed) {
                size_t invalid = 0, first = n;
                for (size_t i = 0; i < n; i++)
                        if (!results[i].ok) {
                                invalid++;
                                first = first < n ? first : i;
                        }
                if (first < n)
                        hpa_event(c,
                                  hpa,
                                  "Warning",
                                  "FailedComputeMetricsReplicas",
                                  "invalid metrics (%zu invalid out of %zu), first error is: %s",
                                  invalid,
                                  n,
                                  errors[first]);
        }
        if (d.rescale)
                rescale(c, hpa, spec, s, t, &d, o);
        return 0;
}

/* The sync of an autoscaler that exists. */
static int sync_one(struct xp_autoscaler *c, const json_t *hpa, struct hpa_state *s)
{
        struct xp_hpa_spec spec;
        struct xp_error err = {0};
        struct target t = {0};
        struct hpa_outcome o = {.generation = xp_json_int_at(hpa, "metadata.generation", 0)};
        char message[XP_HPA_MESSAGE_MAX], detail[XP_HPA_MESSAGE_MAX];
        int r;

        s->generation = o.generation;
        if (xp_hpa_spec_from_json(hpa, &spec, &err) < 0) {
                xp_log(LOG_DEBUG, "autoscaler: %s: %s", s->key, err.msg);
                return 0; /* validation keeps such specs out; nothing to do with one */
        }
        r = get_scale(
            c, &spec, xp_json_str_at(hpa, "metadata.namespace", ""), &t, detail, sizeof(detail));
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                snprintf(message,
                         sizeof(message),
                         "the HPA controller was unable to get the target's current scale: %s",
                         detail);
                set_cond(&o.able, false, "FailedGetScale", message);
                hpa_event(c, hpa, "Warning", "FailedGetScale", "%s", detail);
                r = hpa_write_status(c, hpa, &o);
                return r < 0 ? r : 0;
        }
        set_cond(&o.able,
                 true,
                 "SucceededGetScale",
                 "the HPA controller was able to get the target's current scale");
        o.current = o.desired = t.replicas;
        if (!t.selector[0]) {
                set_cond(&o.active,
                         false,
                         "InvalidSelector",
                         "the HPA target's scale is missing a selector");
                hpa_event(c, hpa, "Warning", "SelectorRequired", "selector is required");
        } else {
                r = reconcile(c, hpa, &spec, s, &t, &o);
        }
        if (r >= 0)
                r = hpa_write_status(c, hpa, &o);
        json_decref(o.metrics);
        free(t.selector);
        return r;
}

int hpa_sync(struct xp_autoscaler *c, const char *key)
{
        const char *slash = strchr(key, '/');
        struct xp_error err = {0};
        json_t *hpa = NULL;
        char ns[256];
        int r;

        if (!slash || (size_t)(slash - key) >= sizeof(ns))
                return 0;
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
        r = xp_store_get(xp_registry_store(c->registry),
                         "horizontalpodautoscalers",
                         ns,
                         slash + 1,
                         &hpa,
                         NULL,
                         &err);
        if (r == -ENOENT) {
                hpa_state_drop(c, key);
                return 0;
        }
        if (r < 0)
                return r;
        struct hpa_state *s = hpa_state_of(c, key);
        r = s ? sync_one(c, hpa, s) : -ENOMEM;
        json_decref(hpa);
        return r < 0 ? r : 1;
}
