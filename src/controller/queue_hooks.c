/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Queues and preemption as the scheduling loop's hooks (struct xp_sched_hooks of
 * include/sched/xpool/gang.h): admission of a pod or of a whole gang (its members' requests
 * summed per queue), preemption for a single pod or a whole gang, the fair
 * order of pods of equal priority (their queues' dominant shares), and the loop's word that a pod
 * was placed or went.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue_state.h"

void queue_ctl_attach(struct queue_ctl *ctl, struct xp_sched *const *sched)
{
        ctl->sched = sched;
}

/* Sums what the members of queue q ask for into a (at most XP_QUEUE_RESOURCES_MAX). */
static size_t sum_queue(struct queue_ctl *ctl,
                        const struct xp_pod *const *pods,
                        size_t n,
                        const char *q,
                        struct xp_queue_amount *a)
{
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                struct xp_queue_amount *own;
                const char *qi;
                size_t n_own;

                if (pod_queue(ctl, pods[i], &qi, &own, &n_own) <= 0 || strcmp(qi, q) != 0)
                        continue;
                for (size_t j = 0; j < n_own; j++) {
                        size_t at = 0;
                        while (at < k && strcmp(a[at].resource, own[j].resource) != 0)
                                at++;
                        if (at == k && k == XP_QUEUE_RESOURCES_MAX)
                                continue;
                        if (at == k)
                                a[k++] = (struct xp_queue_amount){own[j].resource, 0};
                        a[at].milli += own[j].milli;
                }
        }
        return k;
}

/* The refusal's reason, then on a line of its own what would admit the pod (`xpool why`). 0,
 * -ENOMEM. */
static int with_unblock(struct queue_ctl *ctl,
                        const char *q,
                        const struct xp_queue_amount *sum,
                        size_t k,
                        char **ret_reason)
{
        _cleanup_free_ char *unblock = NULL;
        char *joined;

        if (!*ret_reason || xp_queues_unblock(ctl->queues, q, sum, k, &unblock) <= 0)
                return 0;
        if (asprintf(&joined, "%s\n%s", *ret_reason, unblock) < 0)
                return -ENOMEM;
        free(*ret_reason);
        *ret_reason = joined;
        return 0;
}

int queue_hook_admit(void *userdata, const struct xp_pod *const *pods, size_t n, char **ret_reason)
{
        struct queue_ctl *ctl = userdata;
        struct xp_queue_amount sum[XP_QUEUE_RESOURCES_MAX];

        for (size_t i = 0; i < n; i++) {
                if (ctl->sched && *ctl->sched)
                        queue_ctl_unhold(ctl, *ctl->sched, pods[i]);
                queue_ctl_placed(ctl, pods[i]->metadata.namespace, pods[i]->metadata.name, false);
        }
        /* each queue the members name admits all of its members at once */
        for (size_t i = 0; i < n; i++) {
                struct xp_queue_amount *own;
                const char *q;
                size_t n_own, k;
                int r = pod_queue(ctl, pods[i], &q, &own, &n_own);

                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                k = sum_queue(ctl, pods, n, q, sum);
                r = xp_queues_admit(ctl->queues, q, sum, k, ret_reason);
                if (r < 0)
                        return r;
                if (r == XP_QUEUE_REFUSED)
                        return with_unblock(ctl, q, sum, k, ret_reason);
        }
        return 1;
}

int queue_hook_preempt(void *userdata,
                       struct xp_sched *sched,
                       const struct xp_pod *const *pods,
                       size_t n,
                       char **ret_node,
                       char **ret_message)
{
        if (n != 1)
                return queue_ctl_after_gang(userdata, sched, pods, n, ret_message);
        return queue_ctl_after(userdata, sched, pods[0], ret_node, ret_message);
}

void queue_hook_placed(void *userdata, const struct xp_pod *pod, const struct xp_placement *pl)
{
        (void)pl;
        queue_ctl_placed(userdata, pod->metadata.namespace, pod->metadata.name, true);
        queue_ctl_nominee_placed(userdata, pod->metadata.namespace, pod->metadata.name, true);
}

void queue_hook_removed(void *userdata, const char *ns, const char *name)
{
        struct queue_ctl *ctl = userdata;

        if (ctl->sched && *ctl->sched)
                queue_ctl_forget(ctl, *ctl->sched, ns, name);
}

const char *queue_hook_queue(void *userdata, const char *ns, const char *name)
{
        struct queue_ctl *ctl = userdata;
        char key[2 * XP_QUEUE_NAME_MAX + 2];
        const struct qpod *p;

        if (snprintf(key, sizeof key, "%s/%s", ns, name) >= (int)sizeof key)
                return NULL;
        p = xp_map_get(&ctl->pods, key);
        return p ? p->queue : NULL;
}

double queue_hook_share(void *userdata, const char *queue)
{
        struct queue_ctl *ctl = userdata;
        double share = xp_queues_share(ctl->queues, queue);

        return share > 0 ? share : 0; /* an unknown queue (-1) admits nothing anyway */
}
