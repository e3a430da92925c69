/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Preemption in the scheduling loop. When a pod fits nowhere, the core chooses the node and the
 * victims (include/sched/xpool/preempt.h): pods of lower priority, or, for a pod whose queue is
 * below its fair share, pods of queues that borrowed beyond theirs (reclaim). Each victim is
 * evicted as kube-scheduler does it: the DisruptionTarget condition (PreemptionByScheduler),
 * a graceful delete with the pod's own grace period (its agent stops it), and a Preempted Event.
 * The pod is nominated (status.nominatedNodeName) and the devices it will get are held for it in
 * the snapshot until it is placed, goes, or NOMINATION_MS pass. A gang preempts all or nothing:
 * every member nominated and held, or no victim evicted (xp_sched_preempt_gang()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "preempt_budget.h"
#include "queue_state.h"
#include "scheduler_state.h"
#include "xpool/codec.h"
#include "xpool/log.h"
#include "xpool/preempt.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"

/* ---- writes ---------------------------------------------------------------------------------- */

static int condition_set(json_t *pod, void *userdata)
{
        const char *scheduler =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "schedulerName"));
        json_t *status = json_object_get(pod, "status"), *conditions, *c;
        char now[32], message[300];
        time_t t = time(NULL);
        size_t i;

        (void)userdata;
        if (!json_is_object(status) &&
            json_object_set_new(pod, "status", status = json_object()) < 0)
                return -ENOMEM;
        conditions = json_object_get(status, "conditions");
        if (!json_is_array(conditions) &&
            json_object_set_new(status, "conditions", conditions = json_array()) < 0)
                return -ENOMEM;
        json_array_foreach(
            conditions, i, c) if (xp_streq0(json_string_value(json_object_get(c, "type")),
                                            "DisruptionTarget"))
        {
                json_array_remove(conditions, i);
                break;
        }
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        snprintf(message,
                 sizeof(message),
                 "%s: preempting to accommodate a higher priority pod",
                 scheduler ? scheduler : SCHEDULER_NAME);
        return json_array_append_new(conditions,
                                     json_pack("{s:s, s:s, s:n, s:s, s:s, s:s}",
                                               "type",
                                               "DisruptionTarget",
                                               "status",
                                               "True",
                                               "lastProbeTime",
                                               "lastTransitionTime",
                                               now,
                                               "reason",
                                               "PreemptionByScheduler",
                                               "message",
                                               message)) < 0
                   ? -ENOMEM
                   : 1;
}

static int nominated_set(json_t *pod, void *userdata)
{
        json_t *status = json_object_get(pod, "status");

        if (!json_is_object(status) &&
            json_object_set_new(pod, "status", status = json_object()) < 0)
                return -ENOMEM;
        if (xp_streq0(json_string_value(json_object_get(status, "nominatedNodeName")), userdata))
                return 0;
        return json_object_set_new(status, "nominatedNodeName", json_string(userdata)) < 0 ? -ENOMEM
                                                                                           : 1;
}

/* One victim: its condition, its graceful delete, its Event. */
static void evict(struct queue_ctl *ctl,
                  const struct xp_pod *pod,
                  const struct xp_sched_victim *v,
                  const char *node)
{
        const struct xp_registry_delete_options del = {0}; /* the pod's own grace period */
        json_t *victim = NULL, *deleted = NULL;
        struct xp_error err = {0};
        char message[256];
        bool removed;
        int r;

        r = xp_registry_change(
            ctl->registry, "pods", v->namespace, v->name, condition_set, NULL, &victim, &err);
        if (r >= 0)
                r = xp_registry_pod_delete(
                    ctl->registry, v->namespace, v->name, &del, &deleted, &removed, &err);
        json_decref(deleted);
        if (r < 0) {
                xp_log(LOG_WARNING,
                       "scheduler: victim %s/%s not evicted: %s",
                       v->namespace,
                       v->name,
                       err.msg[0] ? err.msg : strerror(-r));
                json_decref(victim);
                return;
        }
        snprintf(message,
                 sizeof(message),
                 "Preempted by pod %s on node %s",
                 pod->metadata.uid ? pod->metadata.uid : "",
                 node);
        struct xp_registry_event ev = {
            .kind = "Pod",
            .namespace = v->namespace,
            .name = v->name,
            .uid = json_string_value(json_object_get(json_object_get(victim, "metadata"), "uid")),
            .component = SCHEDULER_NAME,
            .reporting_host = scheduler_host(),
            .type = "Normal",
            .reason = "Preempted",
            .message = message,
        };
        (void)xp_registry_event_record(ctl->registry, &ev, NULL);
        json_decref(victim);
}

/* ---- choosing -------------------------------------------------------------------------------- */

struct reclaim {
        struct queue_ctl *ctl;
        const struct xp_queue_amount *wanted;
        size_t n_wanted;
};

/* Reclaim: a pod of a queue over its fair share, whatever its priority. */
static bool
reclaim_eligible(void *userdata, const struct xp_pod *pod, const struct xp_sched_placed *victim)
{
        struct reclaim *rc = userdata;
        _cleanup_free_ char *key = NULL;
        const struct qpod *p;

        (void)pod;
        if (asprintf(&key, "%s/%s", victim->namespace, victim->name) < 0)
                return false;
        p = xp_map_get(&rc->ctl->pods, key);
        return p && p->bound &&
               xp_queues_reclaimable(
                   rc->ctl->queues, p->queue, p->amounts, p->n, rc->wanted, rc->n_wanted);
}

/* The core's choice: by priority first, then, for a pod whose queue may reclaim, by queue. */
static int choose(struct queue_ctl *ctl,
                  struct xp_sched *sched,
                  const struct xp_pod *pod,
                  struct xp_preemption *ret)
{
        /* without queues no pod may reclaim: no key to build for each failed attempt */
        _cleanup_free_ char *key = ctl->pods.n ? nominee_key(pod) : NULL;
        const struct qpod *p = key ? xp_map_get(&ctl->pods, key) : NULL;
        struct reclaim rc = {.ctl = ctl};
        struct xp_preempt_options by_priority = {0};
        struct xp_preempt_options reclaim = {.eligible = reclaim_eligible, .userdata = &rc};
        struct preempt_budgets budgets;
        struct xp_error err = {0};
        int r;

        preempt_budgets_use(&budgets, xp_registry_store(ctl->registry), &by_priority);
        reclaim.budgets_of = by_priority.budgets_of;
        reclaim.budget_userdata = by_priority.budget_userdata;
        r = xp_sched_preempt(sched, pod, &by_priority, ret, &err);
        if (r == 0 && p) {
                xp_queues_compute(ctl->queues);
                if (xp_queues_may_reclaim(ctl->queues, p->queue, p->amounts, p->n)) {
                        rc.wanted = p->amounts;
                        rc.n_wanted = p->n;
                        r = xp_sched_preempt(sched, pod, &reclaim, ret, &err);
                }
        }
        preempt_budgets_done(&budgets);
        return r;
}

static int copy_pod(const struct xp_pod *pod, struct xp_pod **ret)
{
        json_t *json = NULL;
        int r = xp_pod_to_json(pod, &json);

        if (r >= 0)
                r = xp_pod_from_json(json, NULL, XP_DECODE_TRUSTED, ret, NULL);
        json_decref(json);
        return r < 0 ? -ENOMEM : 0;
}

static int nominate(struct queue_ctl *ctl,
                    struct xp_sched *sched,
                    const struct xp_pod *pod,
                    struct xp_preemption *pre)
{
        struct nominee *n = calloc(1, sizeof(*n));
        struct xp_error err = {0};
        int r;

        if (!n || !(n->key = nominee_key(pod))) {
                nominee_free(n);
                return -ENOMEM;
        }
        /* a copy, to hold for it again in a renewed snapshot: a nomination is rare */
        r = copy_pod(pod, &n->pod);
        if (r < 0) {
                nominee_free(n);
                return r;
        }
        n->priority = pod->spec.priority.set ? pod->spec.priority.value : 0;
        n->placement = pre->placement;
        pre->placement = (struct xp_placement){0};
        n->until_ms = xp_clock_monotonic_ms(ctl->clock) + NOMINATION_MS;
        nominee_free(xp_map_del(&ctl->nominees, n->key));
        r = xp_map_put(&ctl->nominees, n->key, n);
        if (r < 0) {
                nominee_free(n);
                return r;
        }
        nominee_hold(ctl, sched, pod, n);
        r = xp_registry_change(ctl->registry,
                               "pods",
                               pod->metadata.namespace,
                               pod->metadata.name,
                               nominated_set,
                               pre->node,
                               NULL,
                               &err);
        if (r < 0)
                xp_log(LOG_WARNING,
                       "scheduler: pod %s not nominated: %s",
                       n->key,
                       err.msg[0] ? err.msg : strerror(-r));
        return 0;
}

int queue_ctl_after(struct queue_ctl *ctl,
                    struct xp_sched *sched,
                    const struct xp_pod *pod,
                    char **ret_node,
                    char **ret_message)
{
        _cleanup_free_ char *key = nominee_key(pod);
        struct nominee *n = key ? xp_map_get(&ctl->nominees, key) : NULL;
        struct xp_preemption pre = {0};
        int r;

        if (!key)
                return -ENOMEM;
        if (nominee_waits(ctl, sched, pod, n)) {
                /* its victims are still going: what it will get stays held */
                if (ret_message &&
                    !(*ret_message = strdup("preemption: not eligible due to a "
                                            "terminating pod on the nominated node.")))
                        return -ENOMEM;
                return 0;
        }
        queue_ctl_forget(ctl, sched, pod->metadata.namespace, pod->metadata.name);
        r = choose(ctl, sched, pod, &pre);
        if (r == 0 && ret_message)
                r = xp_sched_preempt_refusal(sched, pod, ret_message);
        if (r <= 0)
                return r;
        for (size_t i = 0; i < pre.n_victims; i++)
                evict(ctl, pod, &pre.victims[i], pre.node);
        xp_debug("sched", "pod %s: %zu pod(s) preempted on node %s", key, pre.n_victims, pre.node);
        r = ret_message && asprintf(ret_message,
                                    "preemption: %zu pod(s) evicted on node %s",
                                    pre.n_victims,
                                    pre.node) < 0
                ? -ENOMEM
                : 1;
        if (r > 0)
                r = nominate(ctl, sched, pod, &pre) < 0 ? -ENOMEM : 1;
        if (r > 0 && ret_node)
                *ret_node = TAKE_PTR(pre.node);
        xp_preemption_done(&pre);
        return r;
}

int queue_ctl_after_gang(struct queue_ctl *ctl,
                         struct xp_sched *sched,
                         const struct xp_pod *const *pods,
                         size_t n,
                         char **ret_message)
{
        _cleanup_free_ struct xp_preemption *pre = NULL;
        struct xp_preempt_options by_priority = {0};
        struct preempt_budgets budgets;
        struct xp_error err = {0};
        size_t victims = 0;
        int r;

        if (gang_waiting(ctl, sched, pods, n))
                return 0;
        for (size_t i = 0; i < n; i++)
                queue_ctl_forget(ctl, sched, pods[i]->metadata.namespace, pods[i]->metadata.name);
        pre = calloc(n, sizeof *pre);
        if (!pre)
                return -ENOMEM;
        preempt_budgets_use(&budgets, xp_registry_store(ctl->registry), &by_priority);
        r = xp_sched_preempt_gang(sched, pods, n, &by_priority, pre, &err);
        preempt_budgets_done(&budgets);
        for (size_t i = 0; r > 0 && i < n; i++) {
                for (size_t k = 0; k < pre[i].n_victims; k++)
                        evict(ctl, pods[i], &pre[i].victims[k], pre[i].node);
                victims += pre[i].n_victims;
                if (nominate(ctl, sched, pods[i], &pre[i]) < 0)
                        r = -ENOMEM;
        }
        if (r > 0 && ret_message &&
            asprintf(ret_message,
                     "preemption: %zu pod(s) evicted for the gang's %zu members",
                     victims,
                     n) < 0)
                r = -ENOMEM;
        for (size_t i = 0; i < n; i++)
                xp_preemption_done(&pre[i]);
        if (r < 0 && err.msg[0])
                xp_log(LOG_WARNING, "scheduler: gang preemption: %s", err.msg);
        return r;
}
