/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods waiting for a node: an unordered array (a pass sorts what it tries) and an index by
 * "namespace/name", so that a pod event costs O(1) whatever the number pending.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scheduler_state.h"
#include "xpool/codec.h"
#include "xpool/macro.h"
#include "xpool/sched.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

bool pod_is_ours_pending(const json_t *pod)
{
        const char *scheduler = pod_string(pod, "spec", "schedulerName");

        if (pod_is_bound(pod) || pod_is_finished(pod) ||
            json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                return false;
        return !scheduler || !scheduler[0] || scheduler_name_is_ours(scheduler);
}

bool scheduler_name_is_ours(const char *name)
{
        return name && (strcmp(name, "xpool") == 0 || strcmp(name, SCHEDULER_NAME) == 0);
}

static void pending_free(struct xp_scheduler *s, struct pending *p)
{
        if (!p)
                return;
        free(p->key);
        free(p->namespace);
        free(p->name);
        json_decref(p->pod);
        xp_pod_free(p->decoded);
        free(p->message);
        free(p->explain);
        pending_shape_drop(s, p);
        free(p->said);
        free(p->bound_to);
        free(p->gang);
        free(p->queue);
        free(p);
}

struct pending *pending_find(struct xp_scheduler *s, const char *ns, const char *name)
{
        char key[2 * NAME_MAX_LEN + 2];
        struct pending *p;

        if (snprintf(key, sizeof key, "%s/%s", ns, name) >= (int)sizeof key)
                return NULL; /* longer than any name the store accepts: never queued */
        p = xp_map_get(&s->index, key);
        return p && !p->drop ? p : NULL;
}

void pending_delete(struct xp_scheduler *s, struct pending *p)
{
        struct pending *last = s->queue[--s->n_queue];

        (void)xp_map_del(&s->index, p->key);
        s->queue[p->slot] = last;
        last->slot = p->slot;
        pending_free(s, p);
}

void pending_clear(struct xp_scheduler *s)
{
        for (size_t i = 0; i < s->n_queue; i++)
                pending_free(s, s->queue[i]);
        s->n_queue = 0;
        xp_map_done(&s->index);
        shapes_done(s);
}

static bool same_member(const json_t *a, const json_t *b, const char *part, const char *key)
{
        const json_t *x = json_object_get(a, part), *y = json_object_get(b, part);

        if (key) {
                x = json_object_get(x, key);
                y = json_object_get(y, key);
        }
        return (!x && !y) || (x && y && json_equal(x, y));
}

/* A change that may make a waiting pod schedulable: its spec, labels or annotations. */
static bool pod_request_changed(const json_t *old, const json_t *new)
{
        return !same_member(old, new, "spec", NULL) ||
               !same_member(old, new, "metadata", "labels") ||
               !same_member(old, new, "metadata", "annotations");
}

/*
 * What the entry made of the pod (its decoded form, its shape) serves the new version too when
 * that changed nothing they are made of or their readers look at: the spec, the labels,
 * annotations, owners, uid and deletion of its metadata, its phase and nominatedNodeName. Every
 * waiting pod gets such a version (its PodScheduled=False, written by the scheduler itself), and
 * freeing and decoding the pod again for its next attempt cost more than the attempt.
 */
static void derived_carry(struct pending *p, const json_t *pod, uint64_t version)
{
        static const struct {
                const char *part, *key;
        } read[] = {{"metadata", "uid"},
                    {"metadata", "ownerReferences"},
                    {"metadata", "deletionTimestamp"},
                    {"status", "phase"},
                    {"status", "nominatedNodeName"}};

        for (size_t i = 0; i < XP_ELEMENTSOF(read); i++)
                if (!same_member(p->pod, pod, read[i].part, read[i].key))
                        return;
        if (p->decoded && p->decoded_version == p->version)
                p->decoded_version = version;
        if (p->shape && p->shape_version == p->version)
                p->shape_version = version;
}

/* The pod's queue, kept with it: a pass orders by queue, and asking for every pending pod each
 * pass cost more than placing them. -ENOMEM. */
int pending_queue_read(struct xp_scheduler *s, struct pending *p)
{
        const char *q =
            s->hooks.queue ? s->hooks.queue(s->hooks.userdata, p->namespace, p->name) : NULL;

        if (xp_streq0(q, p->queue))
                return 0;
        /* the shape names the queue and is kept per version of the pod, which a PodGroup's
         * change of queue does not move */
        pending_shape_drop(s, p);
        free(p->queue);
        p->queue = q ? strdup(q) : NULL;
        return q && !p->queue ? -ENOMEM : 0;
}

int pending_upsert(
    struct xp_scheduler *s, const char *ns, const char *name, json_t *pod, uint64_t version)
{
        struct pending *p = pending_find(s, ns, name), *old;
        const char *created;
        json_t *priority = json_object_get(json_object_get(pod, "spec"), "priority");
        int r;

        if (p) {
                if (version <= p->version)
                        return 0;
                if (pod_request_changed(p->pod, pod)) {
                        p->waiting = false;
                        p->headroom_blind = false;
                } else {
                        derived_carry(p, pod, version);
                }
                json_decref(p->pod);
                p->pod = json_incref(pod);
                p->version = version;
                p->priority = json_is_integer(priority) ? json_integer_value(priority) : 0;
                r = pending_queue_read(s, p);
                return r < 0 ? r : pending_gang_read(s, p);
        }
        if (strlen(ns) > NAME_MAX_LEN || strlen(name) > NAME_MAX_LEN)
                return -ENAMETOOLONG;
        if (s->n_queue == s->cap_queue) {
                size_t cap = s->cap_queue ? s->cap_queue * 2 : 16;
                struct pending **bigger = realloc(s->queue, cap * sizeof *bigger);

                if (!bigger)
                        return -ENOMEM;
                s->queue = bigger;
                s->cap_queue = cap;
        }
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        *p = (struct pending){
            .namespace = strdup(ns),
            .name = strdup(name),
            .version = version,
            .first_version = version,
            .priority = json_is_integer(priority) ? json_integer_value(priority) : 0,
            .slot = s->n_queue,
        };
        if (!p->namespace || !p->name || asprintf(&p->key, "%s/%s", ns, name) < 0) {
                p->key = NULL;
                pending_free(s, p);
                return -ENOMEM;
        }
        /* a dropped entry of the same key may still wait for the end of a pass: replace it */
        old = xp_map_get(&s->index, p->key);
        if (old)
                pending_delete(s, old);
        r = xp_map_put(&s->index, p->key, p);
        if (r < 0) {
                pending_free(s, p);
                return r;
        }
        p->slot = s->n_queue;
        p->pod = json_incref(pod);
        created = pod_string(pod, "metadata", "creationTimestamp");
        if (!created || xp_time_parse_microtime(created, &p->created_us) < 0)
                p->created_us = INT64_MIN;
        p->queued_ms = xp_clock_monotonic_ms(s->clock);
        s->queue[s->n_queue++] = p;
        r = pending_queue_read(s, p);
        return r < 0 ? r : pending_gang_read(s, p);
}

int pending_gang_read(struct xp_scheduler *s, struct pending *p)
{
        struct gang_id id;

        json_t *own = json_object_get(json_object_get(p->pod, "spec"), "priority");
        int r;

        free(p->gang);
        p->gang = NULL;
        /* a PodGroup that named a class and no longer does leaves the pod its own priority */
        p->priority = json_is_integer(own) ? json_integer_value(own) : 0;
        p->gang_priority_set = false;
        r = gang_identify(s, p->pod, p->namespace, &id);
        if (r <= 0)
                return r;
        p->gang = id.key;
        p->gang_what = id.what;
        p->gang_min = id.min;
        p->gang_missing = id.missing;
        if (id.has_priority) {
                p->priority = id.priority;
                p->gang_priority_set = true;
        }
        return 0;
}

int pending_decode(struct pending *p, struct xp_error *err)
{
        int r;

        if (p->decoded && p->decoded_version == p->version)
                return 0;
        xp_pod_free(TAKE_PTR(p->decoded));
        /* the members the codec does not know are shared with p->pod, not copied: nothing
         * changes a pod the informer handed on (the store's ring shares it with every reader),
         * and copying them was a quarter of the decode (docs/scheduler.md, "In the server") */
        r = xp_pod_from_json(p->pod, NULL, XP_DECODE_TRUSTED | XP_DECODE_SHARE, &p->decoded, err);
        p->decoded_version = p->version;
        return r;
}

void pending_remove(struct xp_scheduler *s, const char *ns, const char *name)
{
        struct pending *p = pending_find(s, ns, name);

        if (p)
                pending_delete(s, p);
}
