/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The arithmetic of PodDisruptionBudgets (xpool/disruption.h), as kube-controller-manager's
 * disruption controller and kube-apiserver's eviction subresource do it: pure functions on the
 * objects as JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/disruption.h"
#include "xpool/doc.h"
#include "xpool/macro.h"
#include "xpool/selector.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

int xp_disruption_scaled(const json_t *value, int64_t total, bool round_up, int64_t *ret)
{
        const char *text = json_string_value(value);
        char *end;
        long long pct;

        if (json_is_integer(value)) {
                *ret = json_integer_value(value);
                return 0;
        }
        if (!text || *text < '0' || *text > '9')
                return -EINVAL;
        pct = strtoll(text, &end, 10);
        if (*end != '%' || end[1])
                return -EINVAL;
        /* Go's math.Ceil/Floor of pct*total/100, in integers */
        *ret = round_up ? (pct * total + 99) / 100 : pct * total / 100;
        return 0;
}

static bool is_set(const json_t *v)
{
        return v && !json_is_null(v);
}

bool xp_disruption_needs_scale(const json_t *pdb)
{
        const json_t *spec = json_object_get(pdb, "spec");

        if (is_set(json_object_get(spec, "maxUnavailable")))
                return true;
        return json_is_string(json_object_get(spec, "minAvailable"));
}

bool xp_disruption_pod_ready(const json_t *pod)
{
        size_t i;
        json_t *c;

        json_array_foreach(xp_json_at(pod, "status.conditions"), i, c)
        {
                if (xp_streq0(json_string_value(json_object_get(c, "type")), "Ready"))
                        return xp_streq0(json_string_value(json_object_get(c, "status")), "True");
        }
        return false;
}

bool xp_disruption_selects(const json_t *pdb, const json_t *pod)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(xp_label_selector_freep) struct xp_label_selector *parsed = NULL;

        if (!xp_streq0(xp_json_str_at(pdb, "metadata.namespace", ""),
                       xp_json_str_at(pod, "metadata.namespace", "")))
                return false;
        if (xp_json_label_selector_string(xp_json_at(pdb, "spec.selector"), &text) < 0)
                return false;
        if (xp_label_selector_parse(text, &parsed, NULL) < 0)
                return false;
        return xp_label_selector_matches(parsed, xp_json_at(pod, "metadata.labels"));
}

static bool being_deleted(const json_t *pod)
{
        return xp_json_str_at(pod, "metadata.deletionTimestamp", NULL) != NULL;
}

/* Kubernetes' getExpectedPodCount. */
static void
expected_counts(const json_t *pdb, size_t n_pods, int64_t scale, struct xp_disruption_counts *c)
{
        const json_t *min = xp_json_at(pdb, "spec.minAvailable");
        const json_t *max = xp_json_at(pdb, "spec.maxUnavailable");
        int64_t v;

        if (is_set(max)) {
                c->expected = scale;
                if (xp_disruption_scaled(max, scale, true, &v) < 0)
                        v = 0;
                c->desired = scale - v < 0 ? 0 : scale - v;
        } else if (json_is_integer(min)) {
                c->desired = json_integer_value(min);
                c->expected = (int64_t)n_pods;
        } else if (is_set(min)) {
                c->expected = scale;
                if (xp_disruption_scaled(min, scale, true, &v) < 0)
                        v = 0;
                c->desired = v;
        }
}

/* Kubernetes' buildDisruptedPodMap: the entries of pods still there and not deleted, whose
 * timeout has not passed. */
static int
disrupted_map(const json_t *pdb, const json_t *pods, int64_t now, json_t *map, int64_t *recheck)
{
        const json_t *old = xp_json_object_at(pdb, "status.disruptedPods");
        size_t i;
        json_t *pod;

        json_array_foreach(pods, i, pod)
        {
                const char *name = xp_json_str_at(pod, "metadata.name", "");
                const json_t *at = json_object_get(old, name);
                int64_t when, expires;

                if (being_deleted(pod) || !at ||
                    xp_time_parse_rfc3339(json_string_value(at) ?: "", &when) < 0)
                        continue;
                expires = when + XP_DISRUPTION_DELETION_TIMEOUT_S;
                if (expires < now)
                        continue;
                if (json_object_set(map, name, (json_t *)at) < 0)
                        return -ENOMEM;
                if (*recheck == 0 || expires < *recheck)
                        *recheck = expires;
        }
        return 0;
}

int xp_disruption_count(const json_t *pdb,
                        const json_t *pods,
                        int64_t scale,
                        int64_t now,
                        json_t **ret_disrupted,
                        int64_t *ret_recheck,
                        struct xp_disruption_counts *ret)
{
        struct xp_disruption_counts c = {0};
        json_t *disrupted = json_object();
        size_t i;
        json_t *pod;

        *ret_recheck = 0;
        if (!disrupted || disrupted_map(pdb, pods, now, disrupted, ret_recheck) < 0) {
                json_decref(disrupted);
                return -ENOMEM;
        }
        expected_counts(pdb, json_array_size(pods), scale, &c);
        /* Kubernetes' countHealthyPods */
        json_array_foreach(pods, i, pod)
        {
                if (being_deleted(pod) ||
                    json_object_get(disrupted, xp_json_str_at(pod, "metadata.name", "")))
                        continue;
                if (xp_disruption_pod_ready(pod))
                        c.healthy++;
        }
        c.allowed = c.healthy - c.desired;
        if (c.expected <= 0 || c.allowed <= 0)
                c.allowed = 0;
        *ret_disrupted = disrupted;
        *ret = c;
        return 0;
}

/* ---- status --------------------------------------------------------------------------------- */

/* apimeta.SetStatusCondition for the one condition a budget has: lastTransitionTime moves only
 * when the status does. */
static int set_condition(json_t *status,
                         const json_t *old_conditions,
                         bool allowed,
                         const char *reason,
                         const char *message,
                         int64_t generation,
                         int64_t now)
{
        const char *value = allowed ? "True" : "False";
        char stamp[XP_RFC3339_MAX];
        const char *since = NULL;
        json_t *conditions = json_array(), *c;
        size_t i;

        if (!conditions)
                return -ENOMEM;
        json_array_foreach((json_t *)old_conditions, i, c)
        {
                if (!xp_streq0(json_string_value(json_object_get(c, "type")),
                               "DisruptionAllowed")) {
                        json_array_append(conditions, c);
                        continue;
                }
                if (xp_streq0(json_string_value(json_object_get(c, "status")), value))
                        since = json_string_value(json_object_get(c, "lastTransitionTime"));
        }
        if (!since && xp_time_format_rfc3339(now, stamp) >= 0)
                since = stamp;
        c = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}",
                      "type",
                      "DisruptionAllowed",
                      "status",
                      value,
                      "observedGeneration",
                      (json_int_t)generation,
                      "lastTransitionTime",
                      since ? since : "",
                      "reason",
                      reason,
                      "message",
                      message);
        if (!c || json_array_append_new(conditions, c) < 0 ||
            json_object_set_new(status, "conditions", conditions) < 0) {
                json_decref(conditions);
                return -ENOMEM;
        }
        return 0;
}

/* Replaces pdb's status by status (taken): 1 changed, 0 equal, -ENOMEM. */
static int replace_status(json_t *pdb, json_t *status)
{
        if (json_equal(status, json_object_get(pdb, "status"))) {
                json_decref(status);
                return 0;
        }
        return json_object_set_new(pdb, "status", status) < 0 ? -ENOMEM : 1;
}

int xp_disruption_set_status(json_t *pdb,
                             const struct xp_disruption_counts *counts,
                             const json_t *disrupted,
                             int64_t now)
{
        int64_t generation = xp_json_int_at(pdb, "metadata.generation", 1);
        json_t *status = json_pack("{s:I}", "observedGeneration", (json_int_t)generation);
        int r = status ? 0 : -ENOMEM;

        if (r >= 0 && json_object_size(disrupted) > 0)
                r = json_object_set(status, "disruptedPods", (json_t *)disrupted);
        if (r >= 0)
                r = json_object_set_new(
                    status, "disruptionsAllowed", json_integer(counts->allowed));
        if (r >= 0)
                r = json_object_set_new(status, "currentHealthy", json_integer(counts->healthy));
        if (r >= 0)
                r = json_object_set_new(status, "desiredHealthy", json_integer(counts->desired));
        if (r >= 0)
                r = json_object_set_new(status, "expectedPods", json_integer(counts->expected));
        if (r >= 0)
                r = set_condition(status,
                                  xp_json_at(pdb, "status.conditions"),
                                  counts->allowed > 0,
                                  counts->allowed > 0 ? "SufficientPods" : "InsufficientPods",
                                  "",
                                  generation,
                                  now);
        if (r < 0) {
                json_decref(status);
                return -ENOMEM;
        }
        return replace_status(pdb, status);
}

int xp_disruption_set_failed(json_t *pdb, const char *message, int64_t now)
{
        const json_t *old = json_object_get(pdb, "status");
        json_t *status = old ? json_deep_copy(old) : json_object();
        int r = status ? 0 : -ENOMEM;

        if (r >= 0)
                r = json_object_set_new(status, "disruptionsAllowed", json_integer(0));
        if (r >= 0)
                r = set_condition(status,
                                  xp_json_at(pdb, "status.conditions"),
                                  false,
                                  "SyncFailed",
                                  message,
                                  xp_json_int_at(pdb, "status.observedGeneration", 0),
                                  now);
        if (r < 0) {
                json_decref(status);
                return -ENOMEM;
        }
        return replace_status(pdb, status);
}

/* ---- eviction ------------------------------------------------------------------------------- */

bool xp_eviction_ignores_budgets(const json_t *pod)
{
        const char *phase = xp_json_str_at(pod, "status.phase", "");

        return xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed") ||
               xp_streq0(phase, "Pending") || being_deleted(pod);
}

bool xp_eviction_unhealthy_allowed(const json_t *pdb, const json_t *pod)
{
        int64_t desired = xp_json_int_at(pdb, "status.desiredHealthy", 0);

        if (xp_disruption_pod_ready(pod))
                return false;
        if (xp_streq0(xp_json_str_at(pdb, "spec.unhealthyPodEvictionPolicy", ""), "AlwaysAllow"))
                return true;
        return xp_json_int_at(pdb, "status.currentHealthy", 0) >= desired && desired > 0;
}

int xp_eviction_decrement(json_t *pdb, const char *pod_name, int64_t now, struct xp_error *err)
{
        const char *name = xp_json_str_at(pdb, "metadata.name", "");
        int64_t allowed = xp_json_int_at(pdb, "status.disruptionsAllowed", 0);
        char stamp[XP_RFC3339_MAX];
        json_t *disrupted;

        if (xp_json_int_at(pdb, "status.observedGeneration", 0) <
            xp_json_int_at(pdb, "metadata.generation", 1))
                return xp_errorf(err,
                                 -EAGAIN,
                                 "The disruption budget %s is still being processed by the server.",
                                 name);
        if (allowed < 0)
                return xp_errorf(err, -EPERM, "pdb disruptions allowed is negative");
        if (json_object_size(xp_json_object_at(pdb, "status.disruptedPods")) >
            XP_DISRUPTION_MAX_DISRUPTED)
                return xp_errorf(
                    err,
                    -EPERM,
                    "DisruptedPods map too big - too many evictions not confirmed by PDB controller");
        if (allowed == 0)
                return xp_errorf(
                    err,
                    -EAGAIN,
                    "The disruption budget %s needs %lld healthy pods and has %lld currently",
                    name,
                    (long long)xp_json_int_at(pdb, "status.desiredHealthy", 0),
                    (long long)xp_json_int_at(pdb, "status.currentHealthy", 0));
        if (xp_json_set_int_at(pdb, "status.disruptionsAllowed", allowed - 1) < 0)
                return -ENOMEM;
        if (allowed - 1 == 0) {
                json_t *status = json_object_get(pdb, "status");

                if (set_condition(status,
                                  json_object_get(status, "conditions"),
                                  false,
                                  "InsufficientPods",
                                  "",
                                  xp_json_int_at(pdb, "status.observedGeneration", 0),
                                  now) < 0)
                        return -ENOMEM;
        }
        disrupted = (json_t *)xp_json_object_at(pdb, "status.disruptedPods");
        if (!disrupted) {
                if (xp_json_set_at(pdb, "status.disruptedPods", json_object()) < 0)
                        return -ENOMEM;
                disrupted = (json_t *)xp_json_object_at(pdb, "status.disruptedPods");
        }
        if (xp_time_format_rfc3339(now, stamp) < 0 ||
            json_object_set_new(disrupted, pod_name, json_string(stamp)) < 0)
                return -ENOMEM;
        return 1;
}
