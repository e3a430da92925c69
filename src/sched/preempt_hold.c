/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What preemption needs of each placed pod (its priority, its gang, whether it is going), and
 * the holds of nominated preemptors: an entry in the snapshot under the key "hold:NS/NAME" that
 * accounts the devices chosen for the pod, so they count as taken while its victims terminate.
 * Namespaces are DNS labels, so no pod's key can be a hold's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_internal.h"
#include "xpool/codec.h"
#include "xpool/strmap.h"

/* The shapes of gangs (include/sched/xpool/gang.h names them for the scheduling loop). */
#define GANG_LABEL              "xpool.io/gang"
#define GANG_VOLCANO_ANNOTATION "scheduling.k8s.io/group-name"
#define HOLD_PREFIX             "hold:"

int preempt_pod_facts(const struct xp_pod *pod, struct spod *p)
{
        const char *gang = xp_strmap_get(&pod->metadata.labels, GANG_LABEL);

        if (!gang || !gang[0])
                gang = xp_strmap_get(&pod->metadata.annotations, GANG_VOLCANO_ANNOTATION);
        p->priority = pod->spec.priority.set ? pod->spec.priority.value : 0;
        p->terminating = pod->metadata.deletion_timestamp != 0;
        p->hold = strncmp(p->key, HOLD_PREFIX, strlen(HOLD_PREFIX)) == 0;
        free(p->gang);
        p->gang = NULL;
        if (gang && gang[0] && !p->hold &&
            asprintf(&p->gang, "%s/%s", p->namespace ? p->namespace : "default", gang) < 0) {
                p->gang = NULL;
                return -ENOMEM;
        }
        return 0;
}

void xp_preemption_done(struct xp_preemption *preemption)
{
        if (!preemption)
                return;
        free(preemption->node);
        xp_placement_done(&preemption->placement);
        for (size_t i = 0; i < preemption->n_victims; i++) {
                free(preemption->victims[i].namespace);
                free(preemption->victims[i].name);
                free(preemption->victims[i].node);
                free(preemption->victims[i].gang);
        }
        free(preemption->victims);
        *preemption = (struct xp_preemption){0};
}

int xp_sched_hold(struct xp_sched *sched,
                  const struct xp_pod *pod,
                  const struct xp_placement *placement,
                  struct xp_error *err)
{
        _cleanup_free_ char *ns = NULL, *text = NULL;
        struct xp_strmap annotations = {0};
        struct xp_pod held;
        int r;

        if (!placement || !placement->node)
                return xp_errorf(err, -EINVAL, "hold: a placement with a node is required");
        if (asprintf(&ns,
                     HOLD_PREFIX "%s",
                     pod->metadata.namespace ? pod->metadata.namespace : "default") < 0) {
                ns = NULL;
                return -ENOMEM;
        }
        r = xp_placement_to_json(placement, &text);
        if (r >= 0)
                r = xp_strmap_set(&annotations, XP_PLACEMENT_ANNOTATION, text);
        if (r < 0) {
                xp_strmap_done(&annotations);
                return r;
        }
        /* the pod as if bound there: a shallow copy, so nothing of the caller's changes */
        held = *pod;
        held.metadata.namespace = ns;
        held.metadata.annotations = annotations;
        held.metadata.deletion_timestamp = 0;
        held.spec.node_name = placement->node;
        held.status.phase = XP_POD_PENDING;
        r = xp_sched_pod_add(sched, &held, err);
        xp_strmap_done(&annotations);
        return r;
}

int xp_sched_release(struct xp_sched *sched, const char *namespace, const char *name)
{
        _cleanup_free_ char *ns = NULL;

        if (asprintf(&ns, HOLD_PREFIX "%s", namespace ? namespace : "default") < 0)
                return -ENOMEM;
        return xp_sched_pod_remove(sched, ns, name);
}

bool xp_sched_victims_terminating(const struct xp_sched *sched, const char *node, int64_t priority)
{
        const struct snode *n = node && node[0] ? xp_map_get(&sched->node_map, node) : NULL;

        for (size_t i = 0; n && i < n->n_pods; i++)
                if (n->pods[i]->terminating && !n->pods[i]->hold && n->pods[i]->priority < priority)
                        return true;
        return false;
}
