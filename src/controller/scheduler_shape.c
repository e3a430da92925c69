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

bool pending_nominated(struct pending *p)
{
        if (!p->nominated_known || p->nominated_version != p->version) {
                p->nominated = has_nomination(p->pod);
                p->nominated_version = p->version;
                p->nominated_known = true;
        }
        return p->nominated;
}

#define TOKEN_PREFIX "kube-api-access-"
#define TOKEN_MASKED TOKEN_PREFIX "*"

/* A copy of list (volumes or volumeMounts) with each kube-api-access-XXXXX name masked: the
 * objects so named copied (shallow), the others shared. NULL: no memory. */
static json_t *mask_token_names(const json_t *list)
{
        json_t *copy = json_array(), *item;
        size_t i;

        json_array_foreach(list, i, item)
        {
                const char *name = json_string_value(json_object_get(item, "name"));

                if (name && strncmp(name, TOKEN_PREFIX, sizeof(TOKEN_PREFIX) - 1) == 0) {
                        item = json_copy(item);
                        if (item &&
                            json_object_set_new(item, "name", json_string(TOKEN_MASKED)) < 0)
                                json_decref(TAKE_PTR(item));
                } else {
                        json_incref(item);
                }
                if (!copy || json_array_append_new(copy, item) < 0) {
                        json_decref(copy);
                        return NULL;
                }
        }
        return copy;
}

/* spec[member]'s list replaced in copy (a shallow copy of spec) by mask(the list). -1: no
 * memory. */
static int mask_member(json_t *copy, const char *member, json_t *(*mask)(const json_t *))
{
        const json_t *list = json_object_get(copy, member);

        return !json_is_array(list) ? 0 : json_object_set_new(copy, member, mask(list));
}

/* A copy of containers with their volumeMounts masked (mask_token_names()). */
static json_t *mask_container_mounts(const json_t *containers)
{
        json_t *copy = json_array(), *c;
        size_t i;

        json_array_foreach(containers, i, c)
        {
                json_t *masked = json_copy(c);

                if (!copy || !masked || mask_member(masked, "volumeMounts", mask_token_names) < 0 ||
                    json_array_append_new(copy, masked) < 0) {
                        json_decref(copy);
                        return NULL;
                }
        }
        return copy;
}

/*
 * The ServiceAccount admission names every pod's token volume kube-api-access-XXXXX at random
 * (as Kubernetes does), in spec.volumes and each container's volumeMounts: left in, no two pods
 * would share a shape. A volume's name places nothing, so the spec's text is that of a copy
 * with those names masked: the names of volumes and volume mounts only (an env variable or a
 * ConfigMap so named is the pod's own), the pod itself as it is.
 */
static char *spec_text(const json_t *spec)
{
        static const char *const containers[] = {
            "containers", "initContainers", "ephemeralContainers"};
        json_t *copy = json_copy((json_t *)spec);
        char *text = NULL;
        int r = copy ? mask_member(copy, "volumes", mask_token_names) : -1;

        for (size_t i = 0; r >= 0 && i < XP_ELEMENTSOF(containers); i++)
                r = mask_member(copy, containers[i], mask_container_mounts);
        if (r >= 0)
                text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(copy);
        return text;
}

/* The shape's text; NULL without memory. */
static char *shape_text(const struct pending *p)
{
        char *labels = json_dumps(json_object_get(json_object_get(p->pod, "metadata"), "labels"),
                                  JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        char *spec = spec_text(json_object_get(p->pod, "spec")), *text = NULL;

        if (spec && asprintf(&text,
                             "%s\n%s\n%" PRId64 "\n%s\n%s",
                             p->namespace,
                             p->queue ? p->queue : "",
                             p->priority,
                             labels ? labels : "",
                             spec) < 0)
                text = NULL;
        free(labels);
        free(spec);
        return text;
}

/* The shape of text (taken), shared when a pending pod has it already; NULL: no memory. */
static struct shape *shape_intern(struct xp_scheduler *s, char *text)
{
        uint64_t hash = xp_map_hash(text);
        struct shape *shape = xp_map_get_hashed(&s->shapes, text, hash);

        if (shape) {
                free(text);
                shape->holders++;
                return shape;
        }
        shape = malloc(sizeof *shape);
        if (!shape || xp_map_put(&s->shapes, text, shape) < 0) {
                free(shape);
                free(text);
                return NULL;
        }
        *shape = (struct shape){.text = text, .hash = hash, .holders = 1};
        return shape;
}

void pending_shape_drop(struct xp_scheduler *s, struct pending *p)
{
        struct shape *shape = TAKE_PTR(p->shape);

        if (!shape || --shape->holders > 0)
                return;
        (void)xp_map_del(&s->shapes, shape->text);
        free(shape->text);
        free(shape);
}

struct shape *pending_shape(struct xp_scheduler *s, struct pending *p)
{
        char *text;

        /* before any read of the pod: a release walks every waiting pod, and their JSON is
         * no longer in the cache by then */
        if (p->shape && p->shape_version == p->version)
                return p->shape;
        pending_shape_drop(s, p);
        if (p->gang || pending_nominated(p))
                return NULL;
        text = shape_text(p);
        p->shape = text ? shape_intern(s, text) : NULL;
        p->shape_version = p->version;
        return p->shape;
}

const struct pending *shape_failed(struct xp_scheduler *s, struct pending *p)
{
        const struct shape *shape;

        if (s->failed_shapes.n == 0)
                return NULL; /* nothing failed yet: a pod that fits pays for no shape */
        shape = pending_shape(s, p);

        return shape ? xp_map_get_hashed(&s->failed_shapes, shape->text, shape->hash) : NULL;
}

void shape_fail(struct xp_scheduler *s, struct pending *p)
{
        const struct shape *shape = pending_shape(s, p);

        if (shape && p->message)
                (void)xp_map_put(&s->failed_shapes, shape->text, p); /* without memory: no memo */
}

void shapes_forget(struct xp_scheduler *s)
{
        xp_map_done(&s->failed_shapes);
}

void shapes_done(struct xp_scheduler *s)
{
        xp_map_done(&s->shapes);
}
