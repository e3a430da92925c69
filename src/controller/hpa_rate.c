/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stabilisation and scaling rates (Kubernetes' normalizeDesiredReplicas and
 * normalizeDesiredReplicasWithBehaviors): recent recommendations hold a scale-down (and, with a
 * behavior, a scale-up) back, and the policies limit how far one sync may go.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpa.h"

void xp_hpa_rules_default_up(struct xp_hpa_rules *rules)
{
        *rules = (struct xp_hpa_rules){
            .window_s = 0,
            .select = XP_HPA_SELECT_MAX,
            .policies = {{XP_HPA_POLICY_PODS, 4, 15}, {XP_HPA_POLICY_PERCENT, 100, 15}},
            .n_policies = 2,
        };
}

void xp_hpa_rules_default_down(struct xp_hpa_rules *rules)
{
        *rules = (struct xp_hpa_rules){
            .window_s = -1,
            .select = XP_HPA_SELECT_MAX,
            .policies = {{XP_HPA_POLICY_PERCENT, 100, 15}},
            .n_policies = 1,
        };
}

void xp_hpa_history_done(struct xp_hpa_history *history)
{
        free(history->recommendations);
        free(history->ups);
        free(history->downs);
        *history = (struct xp_hpa_history){0};
}

static void
set_condition(struct xp_hpa_condition *c, bool status, const char *reason, const char *message)
{
        c->set = true;
        c->status = status;
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        snprintf(c->message, sizeof(c->message), "%s", message);
}

static int append(struct xp_hpa_sample **a, size_t *n, size_t *cap, struct xp_hpa_sample s)
{
        if (*n == *cap) {
                size_t want = *cap ? *cap * 2 : 16;
                struct xp_hpa_sample *grown = realloc(*a, want * sizeof(**a));
                if (!grown)
                        return -ENOMEM;
                *a = grown;
                *cap = want;
        }
        (*a)[(*n)++] = s;
        return 0;
}

/* Records the recommendation in the slot of one older than both cut-offs, or at the end. */
static int record(struct xp_hpa_history *h, int64_t now_ms, int64_t older_ms, int32_t value)
{
        struct xp_hpa_sample s = {.at_ms = now_ms, .value = value};
        for (size_t i = h->n_recommendations; i-- > 0;)
                if (h->recommendations[i].at_ms < older_ms) {
                        h->recommendations[i] = s;
                        return 0;
                }
        return append(&h->recommendations, &h->n_recommendations, &h->cap_recommendations, s);
}

/* The replicas added (or removed) in the last period_s. */
static int32_t
change_in_period(const struct xp_hpa_sample *events, size_t n, int64_t now_ms, int32_t period_s)
{
        int64_t cutoff = now_ms - (int64_t)period_s * 1000;
        int32_t sum = 0;
        for (size_t i = 0; i < n; i++)
                if (events[i].at_ms > cutoff)
                        sum += events[i].value;
        return sum;
}

static int32_t up_limit(const struct xp_hpa_rules *rules,
                        const struct xp_hpa_history *h,
                        int32_t current,
                        int64_t now_ms)
{
        if (rules->select == XP_HPA_SELECT_DISABLED)
                return current;
        bool take_min = rules->select == XP_HPA_SELECT_MIN;
        int32_t result = take_min ? INT32_MAX : INT32_MIN;
        for (size_t i = 0; i < rules->n_policies; i++) {
                const struct xp_hpa_policy *p = &rules->policies[i];
                int32_t start = current - change_in_period(h->ups, h->n_ups, now_ms, p->period_s) +
                                change_in_period(h->downs, h->n_downs, now_ms, p->period_s);
                int32_t proposed =
                    p->type == XP_HPA_POLICY_PODS
                        ? start + p->value
                        : (int32_t)ceil((double)start * (1.0 + (double)p->value / 100.0));
                if (take_min ? proposed < result : proposed > result)
                        result = proposed;
        }
        return result;
}

static int32_t down_limit(const struct xp_hpa_rules *rules,
                          const struct xp_hpa_history *h,
                          int32_t current,
                          int64_t now_ms)
{
        if (rules->select == XP_HPA_SELECT_DISABLED)
                return current;
        bool take_min =
            rules->select == XP_HPA_SELECT_MIN; /* the least change: the highest count */
        int32_t result = take_min ? INT32_MIN : INT32_MAX;
        for (size_t i = 0; i < rules->n_policies; i++) {
                const struct xp_hpa_policy *p = &rules->policies[i];
                int32_t start = current - change_in_period(h->ups, h->n_ups, now_ms, p->period_s) +
                                change_in_period(h->downs, h->n_downs, now_ms, p->period_s);
                int32_t proposed =
                    p->type == XP_HPA_POLICY_PODS
                        ? start - p->value
                        : (int32_t)((double)start * (1.0 - (double)p->value / 100.0));
                if (take_min ? proposed > result : proposed < result)
                        result = proposed;
        }
        return result;
}

/* Without a behavior: the highest recommendation of the scale-down window, then min/max and
 * a scale-up of at most max(2 x current, 4). */
static int normalize_plain(const struct xp_hpa_limits *l,
                           int32_t rec,
                           struct xp_hpa_history *h,
                           int32_t *ret,
                           struct xp_hpa_condition *able,
                           struct xp_hpa_condition *limited)
{
        int64_t cutoff = l->now_ms - l->down_window_s * 1000;
        int32_t stable = rec;
        for (size_t i = 0; i < h->n_recommendations; i++)
                if (h->recommendations[i].at_ms >= cutoff && h->recommendations[i].value > stable)
                        stable = h->recommendations[i].value;
        if (record(h, l->now_ms, cutoff, rec) < 0)
                return -ENOMEM;
        if (stable != rec)
                set_condition(
                    able,
                    true,
                    "ScaleDownStabilized",
                    "recent recommendations were higher than current one, applying the highest recent recommendation");
        else
                set_condition(
                    able, true, "ReadyForNewScale", "recommended size matches current size");

        int32_t scale_up = l->current * 2 > 4 ? l->current * 2 : 4;
        int32_t max = l->max;
        const char *reason = "TooManyReplicas",
                   *message = "the desired replica count is more than the maximum replica count";
        if (max > scale_up) {
                max = scale_up;
                reason = "ScaleUpLimit";
                message =
                    "the desired replica count is increasing faster than the maximum scale rate";
        }
        int32_t desired = stable;
        if (stable < l->min) {
                desired = l->min;
                reason = "TooFewReplicas";
                message = "the desired replica count is less than the minimum replica count";
        } else if (stable > max) {
                desired = max;
        } else {
                reason = "DesiredWithinRange";
                message = "the desired count is within the acceptable range";
        }
        set_condition(limited, desired != stable, reason, message);
        *ret = desired;
        return 0;
}

/* With a behavior: the recommendation is held between the lowest of the scale-up window and the
 * highest of the scale-down window, starting from the current count. */
static int stabilize(const struct xp_hpa_behavior *b,
                     const struct xp_hpa_limits *l,
                     int32_t rec,
                     struct xp_hpa_history *h,
                     int32_t *ret,
                     struct xp_hpa_condition *able)
{
        int64_t down_window = b->down.window_s >= 0 ? b->down.window_s : l->down_window_s;
        int64_t up_cut = l->now_ms - (int64_t)b->up.window_s * 1000;
        int64_t down_cut = l->now_ms - down_window * 1000;
        int32_t up = rec, down = rec;
        for (size_t i = 0; i < h->n_recommendations; i++) {
                const struct xp_hpa_sample *s = &h->recommendations[i];
                if (s->at_ms > up_cut && s->value < up)
                        up = s->value;
                if (s->at_ms > down_cut && s->value > down)
                        down = s->value;
        }
        int32_t stable = l->current;
        if (stable < up)
                stable = up;
        if (stable > down)
                stable = down;
        if (record(h, l->now_ms, up_cut < down_cut ? up_cut : down_cut, rec) < 0)
                return -ENOMEM;
        if (stable == rec)
                set_condition(
                    able, true, "ReadyForNewScale", "recommended size matches current size");
        else if (rec >= l->current)
                set_condition(
                    able,
                    true,
                    "ScaleUpStabilized",
                    "recent recommendations were lower than current one, applying the lowest recent recommendation");
        else
                set_condition(
                    able,
                    true,
                    "ScaleDownStabilized",
                    "recent recommendations were higher than current one, applying the highest recent recommendation");
        *ret = stable;
        return 0;
}

static int32_t limit_rate(const struct xp_hpa_behavior *b,
                          const struct xp_hpa_limits *l,
                          const struct xp_hpa_history *h,
                          int32_t stable,
                          struct xp_hpa_condition *limited)
{
        int32_t desired = stable;
        const char *reason = "DesiredWithinRange",
                   *message = "the desired count is within the acceptable range";
        if (stable > l->current) {
                int32_t limit = up_limit(&b->up, h, l->current, l->now_ms);
                if (limit < l->current)
                        limit = l->current;
                int32_t max = l->max;
                const char *r = "TooManyReplicas",
                           *m = "the desired replica count is more than the maximum replica count";
                if (max > limit) {
                        max = limit;
                        r = "ScaleUpLimit";
                        m = "the desired replica count is increasing faster than the maximum scale rate";
                }
                if (stable > max)
                        desired = max, reason = r, message = m;
        } else if (stable < l->current) {
                int32_t limit = down_limit(&b->down, h, l->current, l->now_ms);
                if (limit > l->current)
                        limit = l->current;
                int32_t min = l->min;
                const char *r = "TooFewReplicas",
                           *m = "the desired replica count is less than the minimum replica count";
                if (min < limit) {
                        min = limit;
                        r = "ScaleDownLimit";
                        m = "the desired replica count is decreasing faster than the maximum scale rate";
                }
                if (stable < min)
                        desired = min, reason = r, message = m;
        }
        set_condition(limited, desired != stable, reason, message);
        return desired;
}

int xp_hpa_normalize(const struct xp_hpa_behavior *behavior,
                     const struct xp_hpa_limits *limits,
                     int32_t recommendation,
                     struct xp_hpa_history *history,
                     int32_t *ret_desired,
                     struct xp_hpa_condition *ret_able,
                     struct xp_hpa_condition *ret_limited)
{
        int32_t stable;
        int r;

        if (!behavior || !behavior->set)
                return normalize_plain(
                    limits, recommendation, history, ret_desired, ret_able, ret_limited);
        r = stabilize(behavior, limits, recommendation, history, &stable, ret_able);
        if (r < 0)
                return r;
        *ret_desired = limit_rate(behavior, limits, history, stable, ret_limited);
        return 0;
}

static int32_t longest_period(const struct xp_hpa_rules *rules)
{
        int32_t longest = 0;
        for (size_t i = 0; i < rules->n_policies; i++)
                if (rules->policies[i].period_s > longest)
                        longest = rules->policies[i].period_s;
        return longest;
}

int xp_hpa_record_scale(const struct xp_hpa_behavior *behavior,
                        int64_t now_ms,
                        int32_t prev,
                        int32_t now,
                        struct xp_hpa_history *history)
{
        if (!behavior || !behavior->set || prev == now)
                return 0;
        bool up = now > prev;
        const struct xp_hpa_rules *rules = up ? &behavior->up : &behavior->down;
        struct xp_hpa_sample **events = up ? &history->ups : &history->downs;
        size_t *n = up ? &history->n_ups : &history->n_downs;
        size_t *cap = up ? &history->cap_ups : &history->cap_downs;
        struct xp_hpa_sample s = {.at_ms = now_ms, .value = up ? now - prev : prev - now};
        int64_t outdated = now_ms - (int64_t)longest_period(rules) * 1000;

        /* An event past every policy's period counts no more: its slot is reused. */
        for (size_t i = 0; i < *n; i++)
                if ((*events)[i].at_ms <= outdated) {
                        (*events)[i] = s;
                        return 0;
                }
        return append(events, n, cap, s);
}
