/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods of one shape fail alike within a pass. A pass only fills the snapshot (placements and
 * nominations take capacity; nothing frees it until the next event), so once a pod is found
 * unschedulable, another with the same namespace, queue, priority, labels and spec is too, and
 * needs no second walk over every node. When a thousand identical pods wait for a node that
 * frees one slot at a time (a Job's or a benchmark's short pods), this is what makes a pass after
 * a pod's completion cost one placement instead of a thousand.
 *
 * Left out: gangs (placed as a whole elsewhere), pods with a nomination (their held devices are
 * their own), and failures after which preemption nominated the pod (the next pod of the shape
 * may preempt other victims).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler_state.h"
#include "xpool/macro.h"
#include "xpool/map.h"

static bool has_nomination(const json_t *pod)
{
        const char *node = pod_string(pod, "status", "nominatedNodeName");

        return node && node[0];
}

/*
 * The ServiceAccount admission names every pod's token volume kube-api-access-XXXXX at random
 * (as Kubernetes does), in spec.volumes and each container's volumeMounts: left in, no two pods
 * would share a shape. A volume's name places nothing, so the random part of a "name" member is
 * masked in the compact text (same length; the volume itself and every other member as they are).
 */
static void mask_token_volume_names(char *spec)
{
        static const char prefix[] = "\"name\":\"kube-api-access-";

        for (char *at = strstr(spec, prefix); at; at = strstr(at, prefix))
                for (at += sizeof(prefix) - 1; *at && *at != '"'; at++)
                        *at = '*';
}

/* The shape's text, kept per version of the pod; NULL when the pod has none (or no memory). */
static const char *shape_of(struct pending *p)
{
        json_t *meta = json_object_get(p->pod, "metadata");
        char *labels = NULL, *spec = NULL;

        if (p->shape && p->shape_version == p->version)
                return p->shape;
        free(TAKE_PTR(p->shape));
        if (p->gang || has_nomination(p->pod))
                return NULL;
        labels = json_dumps(json_object_get(meta, "labels"),
                            JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        spec = json_dumps(json_object_get(p->pod, "spec"), JSON_COMPACT | JSON_SORT_KEYS);
        if (spec)
                mask_token_volume_names(spec);
        if (spec && asprintf(&p->shape,
                             "%s\n%s\n%" PRId64 "\n%s\n%s",
                             p->namespace,
                             p->queue ? p->queue : "",
                             p->priority,
                             labels ? labels : "",
                             spec) < 0)
                p->shape = NULL;
        free(labels);
        free(spec);
        p->shape_version = p->version;
        if (p->shape)
                p->shape_hash = xp_map_hash(p->shape);
        return p->shape;
}

const struct pending *shape_failed(struct xp_scheduler *s, struct pending *p)
{
        const char *shape;

        if (s->failed_shapes.n == 0)
                return NULL; /* nothing failed yet: a pod that fits pays for no shape */
        shape = shape_of(p);

        return shape ? xp_map_get_hashed(&s->failed_shapes, shape, p->shape_hash) : NULL;
}

void shape_fail(struct xp_scheduler *s, struct pending *p)
{
        const char *shape = shape_of(p);

        if (shape && p->message)
                (void)xp_map_put(&s->failed_shapes, shape, p); /* without memory: no memo */
}

void shapes_forget(struct xp_scheduler *s)
{
        xp_map_done(&s->failed_shapes);
}
