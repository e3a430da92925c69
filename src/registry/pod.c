/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod writes beyond create and update: binding (the scheduler's write that places a pod on a
 * node, carrying the placement's annotations onto the pod, as Kubernetes copies a Binding's
 * annotations) and graceful deletion (docs/server.md): a DELETE of a running pod marks it with a
 * deadline and leaves the stopping to the node's agent, which deletes it with grace 0 once
 * nothing runs. Every write carries the version read as precondition; a write that loses a race
 * reads again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/lifecycle.h"
#include "xpool/macro.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define BIND_ATTEMPTS   8
#define DELETE_ATTEMPTS 8

/* ---- binding ------------------------------------------------------------------------------ */

/* Sets spec.nodeName, the binding's annotations and the PodScheduled condition on pod. */
static int bind_pod(json_t *pod, const char *node, const json_t *annotations)
{
        json_t *spec = json_object_get(pod, "spec"), *meta = json_object_get(pod, "metadata");
        json_t *status = json_object_get(pod, "status"), *conditions, *condition, *pod_annotations;
        const char *key;
        json_t *value;
        char now[XP_RFC3339_MAX];
        size_t i;

        if (!json_is_object(spec) || !json_is_object(meta))
                return -EINVAL;
        if (json_object_set_new(spec, "nodeName", json_string(node)) < 0)
                return -ENOMEM;
        if (json_is_object(annotations) && json_object_size(annotations) > 0) {
                pod_annotations = json_object_get(meta, "annotations");
                if (!json_is_object(pod_annotations)) {
                        pod_annotations = json_object();
                        if (json_object_set_new(meta, "annotations", pod_annotations) < 0)
                                return -ENOMEM;
                }
                json_object_foreach((json_t *)annotations,
                                    key,
                                    value) if (json_object_set(pod_annotations, key, value) <
                                               0) return -ENOMEM;
        }
        if (!json_is_object(status)) {
                status = json_object();
                if (json_object_set_new(pod, "status", status) < 0)
                        return -ENOMEM;
        }
        conditions = json_object_get(status, "conditions");
        if (!json_is_array(conditions)) {
                conditions = json_array();
                if (json_object_set_new(status, "conditions", conditions) < 0)
                        return -ENOMEM;
        }
        json_array_foreach(
            conditions, i, condition) if (json_is_string(json_object_get(condition, "type")) &&
                                          strcmp(
                                              json_string_value(json_object_get(condition, "type")),
                                              "PodScheduled") == 0) break;
        if (i < json_array_size(conditions))
                json_array_remove(conditions, i);
        xp_time_format_rfc3339(time(NULL), now);
        condition = json_pack("{s:s, s:s, s:n, s:s}",
                              "type",
                              "PodScheduled",
                              "status",
                              "True",
                              "lastProbeTime",
                              "lastTransitionTime",
                              now);
        if (!condition || json_array_append_new(conditions, condition) < 0)
                return -ENOMEM;
        return 0;
}

/* 0 when pod may be bound: -EALREADY when it is, -EBUSY when it is being deleted. */
static int bind_check(const json_t *pod, const char *name, struct xp_error *err)
{
        const char *bound =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));

        if (bound && bound[0])
                return xp_errorf(
                    err, -EALREADY, "pod %s is already assigned to node \"%s\"", name, bound);
        if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                return xp_errorf(
                    err, -EBUSY, "pod %s is being deleted, cannot be assigned to a host", name);
        return 0;
}

/*
 * One attempt on pod as read at version (pod is changed): -ESTALE when the store moved past
 * version, -EALREADY, -EBUSY, the store's errors.
 */
static int bind_once(struct xp_registry *registry,
                     const char *ns,
                     const char *name,
                     json_t *pod,
                     uint64_t version,
                     const char *node,
                     const json_t *annotations,
                     struct xp_error *err)
{
        int r = bind_check(pod, name, err);

        if (r == 0)
                r = bind_pod(pod, node, annotations);
        if (r == 0)
                r = xp_store_update(registry->store, "pods", ns, name, version, pod, &version, err);
        return r;
}

int xp_registry_pod_bind(struct xp_registry *registry,
                         const char *ns,
                         const char *name,
                         const char *node,
                         const json_t *annotations,
                         uint64_t expected_version,
                         json_t **ret_pod,
                         struct xp_error *err)
{
        int r = -ESTALE;

        for (unsigned attempt = 0; attempt < BIND_ATTEMPTS; attempt++) {
                json_t *pod;
                uint64_t version;

                r = xp_store_get(registry->store, "pods", ns, name, &pod, &version, err);
                if (r < 0)
                        return r;
                if (expected_version != 0 && version != expected_version) {
                        json_decref(pod);
                        return xp_errorf(err,
                                         -ESTALE,
                                         "pod %s/%s changed: version %" PRIu64
                                         ", expected %" PRIu64,
                                         ns,
                                         name,
                                         version,
                                         expected_version);
                }
                r = bind_once(registry, ns, name, pod, version, node, annotations, err);
                if (r == 0 && ret_pod)
                        *ret_pod = json_incref(pod);
                json_decref(pod);
                if (r != -ESTALE || expected_version != 0)
                        return r;
        }
        return r;
}

int xp_registry_pod_bind_known(struct xp_registry *registry,
                               const json_t *pod,
                               uint64_t version,
                               const char *node,
                               const json_t *annotations,
                               json_t **ret_pod,
                               struct xp_error *err)
{
        const json_t *meta = json_object_get(pod, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        json_t *copy;
        int r;

        if (!ns || !name || version == 0)
                return xp_errorf(err, -EINVAL, "bind: a pod with its name and version is required");
        copy = json_deep_copy(pod);
        if (!copy)
                return -ENOMEM;
        r = bind_once(registry, ns, name, copy, version, node, annotations, err);
        if (r == 0 && ret_pod)
                *ret_pod = json_incref(copy);
        json_decref(copy);
        return r;
}

/* A binding made ready for its group: the pod with it, and the Event's object. */
struct bind_ready {
        json_t *pod;
        json_t *event;
        const char *event_ns;
        char event_name[XP_STORE_KEY_MAX + 1];
        bool event_held;
        struct xp_store_group_write before; /* object NULL: none */
        char before_name[XP_STORE_KEY_MAX + 1];
        bool before_held;
};

/* What bind_pod() changes (the object, spec, metadata, its annotations, status, its
 * conditions) copied, the rest shared with pod: a deep copy of a pod's volumes and containers
 * cost more than the binding's own JSON. NULL: out of memory. */
static json_t *bind_copy(const json_t *pod)
{
        /* each member bind_pod() changes, and the member of it it changes (NULL: none) */
        static const struct {
                const char *part, *inner;
        } changed[] = {{"spec", NULL}, {"metadata", "annotations"}, {"status", "conditions"}};
        json_t *copy = json_copy((json_t *)pod);
        bool ok = copy != NULL;

        for (size_t i = 0; ok && i < XP_ELEMENTSOF(changed); i++) {
                json_t *part = json_object_get(copy, changed[i].part), *inner;

                if (!json_is_object(part))
                        continue;
                part = json_copy(part);
                ok = part && json_object_set_new(copy, changed[i].part, part) == 0;
                inner = ok && changed[i].inner ? json_object_get(part, changed[i].inner) : NULL;
                if (json_is_object(inner) || json_is_array(inner)) {
                        inner = json_copy(inner);
                        ok = inner && json_object_set_new(part, changed[i].inner, inner) == 0;
                }
        }
        if (!ok)
                json_decref(copy);
        return ok ? copy : NULL;
}

/* b's pod with the binding in it (r->pod) and its Event (r->event): 0, or b->result's error.
 * r->pod shares what the binding leaves as it was with b->pod, unless the caller asked for it
 * (b->ret_pod): that one is the caller's to change. */
static int bind_ready(struct xp_registry *registry,
                      const struct xp_registry_binding *b,
                      struct bind_ready *r,
                      struct xp_error *err)
{
        const json_t *meta = json_object_get(b->pod, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        int ret;

        if (!json_string_value(json_object_get(meta, "namespace")) || !name || b->version == 0)
                return xp_errorf(err, -EINVAL, "bind: a pod with its name and version is required");
        ret = bind_check(b->pod, name, err);
        if (ret < 0)
                return ret;
        r->pod = b->ret_pod ? json_deep_copy(b->pod) : bind_copy(b->pod);
        if (!r->pod)
                return -ENOMEM;
        ret = bind_pod(r->pod, b->node, b->annotations);
        if (ret < 0)
                return ret;
        if (b->event &&
            !(r->event = registry_event_new(registry, b->event, &r->event_ns, r->event_name)))
                return -ENOMEM;
        return 0;
}

/* b's before Event as a write of the group; failing that, it is recorded after the group. */
static void bind_ready_before(struct xp_registry *registry,
                              const struct xp_registry_binding *b,
                              struct bind_ready *r)
{
        if (b->before && registry_event_write(registry, b->before, r->before_name, &r->before) < 0)
                r->before.object = NULL;
}

/* The group's writes: each binding's before Event, then each ready binding, its Event after it,
 * the Events where their namespace is held. */
static size_t bind_writes(struct xp_registry_binding *b,
                          struct bind_ready *ready,
                          size_t n,
                          struct xp_store_group_write *w,
                          size_t *pod_write,
                          size_t *before_write)
{
        size_t n_w = 0;

        for (size_t i = 0; i < n; i++) {
                const json_t *meta = json_object_get(ready[i].pod, "metadata");

                if (ready[i].before.object && ready[i].before_held) {
                        before_write[i] = n_w;
                        w[n_w++] = ready[i].before;
                }
                if (b[i].result < 0)
                        continue;
                pod_write[i] = n_w;
                w[n_w++] = (struct xp_store_group_write){
                    .update = true,
                    .kind = "pods",
                    .namespace = json_string_value(json_object_get(meta, "namespace")),
                    .name = json_string_value(json_object_get(meta, "name")),
                    .expected_version = b[i].version,
                    .object = ready[i].pod,
                    /* written, the copy is the store's readers' (a caller's own is not) */
                    .share = !b[i].ret_pod};
                if (ready[i].event && ready[i].event_held)
                        w[n_w++] = (struct xp_store_group_write){.kind = "events",
                                                                 .namespace = ready[i].event_ns,
                                                                 .name = ready[i].event_name,
                                                                 .object = ready[i].event,
                                                                 .after_previous = true,
                                                                 .share = true};
        }
        return n_w;
}

/* Holds the Events' namespaces (no Event into one going away: the binding alone). */
static int bind_hold(struct xp_registry *registry, struct bind_ready *ready, size_t n)
{
        _cleanup_free_ const char **ns = calloc(2 * n + 1, sizeof *ns);
        _cleanup_free_ bool *active = calloc(2 * n + 1, sizeof *active);

        if (!ns || !active)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                ns[2 * i] = ready[i].event ? ready[i].event_ns : NULL;
                ns[2 * i + 1] = ready[i].before.object ? ready[i].before.namespace : NULL;
        }
        registry_namespaces_hold(registry, ns, 2 * n, active);
        for (size_t i = 0; i < n; i++) {
                ready[i].event_held = active[2 * i];
                ready[i].before_held = active[2 * i + 1];
        }
        return 0;
}

/* Each binding's result from its writes; an Event already there (a binding redone) counted. */
static int bind_results(struct xp_registry *registry,
                        struct xp_registry_binding *b,
                        const struct bind_ready *ready,
                        size_t n,
                        const struct xp_store_group_write *w,
                        const size_t *pod_write,
                        const size_t *before_write)
{
        int bound = 0;

        for (size_t i = 0; i < n; i++) {
                const struct xp_store_group_write *pod = &w[pod_write[i]];

                /* a before Event that lost a race (or was never written) is recorded now */
                if (b[i].before && (!ready[i].before.object ||
                                    (ready[i].before_held && w[before_write[i]].result < 0)))
                        (void)xp_registry_event_record(registry, b[i].before, NULL);
                if (b[i].result < 0)
                        continue;
                b[i].result = pod->result;
                if (pod->result < 0) {
                        b[i].err = pod->err;
                        continue;
                }
                bound++;
                if (ready[i].event && ready[i].event_held && pod[1].result == -EEXIST)
                        (void)xp_registry_event_record(registry, b[i].event, NULL);
        }
        return bound;
}

/* Whether member key of a and b is the same, both absent included. */
static bool same_member(const json_t *a, const json_t *b, const char *key)
{
        const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);

        return (!x && !y) || (x && y && json_equal(x, y));
}

/* Whether now is still the pod decided on: the same uid, spec (nodeName included), labels and
 * annotations. The scheduler decides on labels and annotations too (the queue whose limit
 * admitted it, its gang, others' affinity to it): a pod relabelled meanwhile stays stale. */
static bool same_decision(const json_t *decided, const json_t *now)
{
        const json_t *a = json_object_get(decided, "metadata");
        const json_t *b = json_object_get(now, "metadata");

        return xp_streq0(json_string_value(json_object_get(a, "uid")),
                         json_string_value(json_object_get(b, "uid"))) &&
               same_member(decided, now, "spec") && same_member(a, b, "labels") &&
               same_member(a, b, "annotations");
}

/* b lost to a write that may have left it as decided on: bound again on the pod as it is now
 * while it is (b->result says how it ended). 1 bound, 0 not. */
static int bind_again(struct xp_registry *registry, struct xp_registry_binding *b)
{
        const json_t *meta = json_object_get(b->pod, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));

        for (unsigned attempt = 0; attempt < BIND_ATTEMPTS && b->result == -ESTALE; attempt++) {
                struct xp_error err = {0};
                json_t *now = NULL;
                uint64_t version;
                int r = xp_store_get(registry->store, "pods", ns, name, &now, &version, &err);

                if (r >= 0 && !same_decision(b->pod, now)) {
                        json_decref(now);
                        return 0; /* changed where it matters: stale, as the group said */
                }
                if (r >= 0)
                        r = bind_once(
                            registry, ns, name, now, version, b->node, b->annotations, &err);
                b->result = r < 0 ? r : 0;
                if (r < 0)
                        b->err = err;
                if (r >= 0 && b->ret_pod)
                        *b->ret_pod = json_incref(now);
                if (r >= 0 && b->event)
                        (void)xp_registry_event_record(registry, b->event, NULL);
                json_decref(now);
        }
        return b->result == 0;
}

int xp_registry_pod_bind_many(struct xp_registry *registry, struct xp_registry_binding *b, size_t n)
{
        _cleanup_free_ struct bind_ready *ready = calloc(n ? n : 1, sizeof *ready);
        _cleanup_free_ struct xp_store_group_write *w = calloc(3 * n + 1, sizeof *w);
        _cleanup_free_ size_t *pod_write = calloc(2 * n + 1, sizeof *pod_write);
        size_t *before_write = pod_write ? pod_write + n : NULL;
        int r = -ENOMEM;

        if (!ready || !w || !pod_write)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                b[i].err = (struct xp_error){0};
                b[i].result = bind_ready(registry, &b[i], &ready[i], &b[i].err);
                bind_ready_before(registry, &b[i], &ready[i]);
        }
        if (bind_hold(registry, ready, n) >= 0) {
                r = xp_store_write_group(
                    registry->store, w, bind_writes(b, ready, n, w, pod_write, before_write));
                xp_registry_namespace_release(registry, "");
        }
        /* what is recorded again is recorded without the hold: it cannot be taken twice */
        if (r >= 0)
                r = bind_results(registry, b, ready, n, w, pod_write, before_write);
        for (size_t i = 0; i < n; i++) {
                if (r >= 0 && b[i].result == 0 && b[i].ret_pod)
                        *b[i].ret_pod = json_incref(ready[i].pod);
                json_decref(ready[i].pod);
                json_decref(ready[i].event);
                json_decref(ready[i].before.object);
        }
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (b[i].result == -ESTALE && b[i].same_spec_will_do)
                        r += bind_again(registry, &b[i]);
        return r;
}

int xp_registry_pod_bind_reported(struct xp_registry *registry,
                                  const json_t *pod,
                                  uint64_t version,
                                  const char *node,
                                  const json_t *annotations,
                                  const struct xp_registry_event *event,
                                  json_t **ret_pod,
                                  struct xp_error *err)
{
        struct xp_registry_binding b = {.pod = pod,
                                        .version = version,
                                        .node = node,
                                        .annotations = annotations,
                                        .event = event,
                                        .ret_pod = ret_pod};
        int r = xp_registry_pod_bind_many(registry, &b, 1);

        if (r < 0)
                return r;
        if (b.result < 0 && err)
                *err = b.err;
        return b.result;
}

/* ---- graceful deletion -------------------------------------------------------------------- */

/* 1 when the preconditions hold, else -ECANCELED with err in Kubernetes' words. */
static int check_preconditions(const json_t *pod,
                               uint64_t version,
                               const struct xp_registry_delete_options *o,
                               struct xp_error *err)
{
        const char *uid =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));

        if (o->uid && !xp_streq0(o->uid, uid))
                return xp_errorf(
                    err,
                    -ECANCELED,
                    "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                    o->uid,
                    uid ? uid : "");
        if (o->version && o->version != version)
                return xp_errorf(err,
                                 -ECANCELED,
                                 "Precondition failed: ResourceVersion in precondition: %" PRIu64
                                 ", ResourceVersion in object meta: %" PRIu64,
                                 o->version,
                                 version);
        return 1;
}

/* A pod due to go that finalizers hold: marked due now (grace 0), removed when the last one
 * goes (finalize.c). 0, or the store's errors (-ESTALE: read it again). */
static int hold_for_finalizers(struct xp_registry *registry,
                               const char *ns,
                               const char *name,
                               json_t *pod,
                               uint64_t version,
                               bool dry,
                               struct xp_error *err)
{
        int r = xp_registry_mark_deleting(pod, time(NULL));

        if (r > 0 && !dry)
                r = xp_store_update(registry->store, "pods", ns, name, version, pod, &version, err);
        return r < 0 ? r : 0;
}

int xp_registry_pod_delete(struct xp_registry *registry,
                           const char *ns,
                           const char *name,
                           const struct xp_registry_delete_options *o,
                           json_t **ret_pod,
                           bool *ret_removed,
                           struct xp_error *err)
{
        int r = -ESTALE;

        for (unsigned attempt = 0; attempt < DELETE_ATTEMPTS && r == -ESTALE; attempt++) {
                enum xp_lifecycle_delete plan;
                json_t *pod, *last = NULL;
                uint64_t version, written;
                int64_t grace, deadline = 0;

                r = xp_store_get(registry->store, "pods", ns, name, &pod, &version, err);
                if (r < 0)
                        return r;
                r = check_preconditions(pod, version, o, err);
                if (r < 0) {
                        json_decref(pod);
                        return r;
                }
                grace = xp_lifecycle_grace_seconds(pod, o->has_grace, o->grace_seconds);
                plan = xp_lifecycle_delete_plan(pod, grace, time(NULL), &deadline);
                if (plan == XP_LIFECYCLE_DELETE_REMOVE && xp_registry_has_finalizers(pod)) {
                        r = hold_for_finalizers(registry, ns, name, pod, version, o->dry, err);
                        if (r == 0) {
                                *ret_pod = pod;
                                *ret_removed = false;
                                return 0;
                        }
                        json_decref(pod);
                        continue;
                }
                if (plan == XP_LIFECYCLE_DELETE_KEEP || o->dry) {
                        r = plan == XP_LIFECYCLE_DELETE_MARK
                                ? xp_lifecycle_mark_deleted(pod, deadline, grace)
                                : 0;
                        if (r < 0) {
                                json_decref(pod);
                                return r;
                        }
                        *ret_pod = pod;
                        *ret_removed = plan == XP_LIFECYCLE_DELETE_REMOVE;
                        return 0;
                }
                if (plan == XP_LIFECYCLE_DELETE_REMOVE) {
                        r = xp_store_delete(
                            registry->store, "pods", ns, name, version, &last, &written, err);
                        json_decref(pod);
                        if (r == 0) {
                                *ret_pod = last;
                                *ret_removed = true;
                        }
                        continue;
                }
                r = xp_lifecycle_mark_deleted(pod, deadline, grace);
                if (r == 0)
                        r = xp_store_update(
                            registry->store, "pods", ns, name, version, pod, &written, err);
                if (r == 0) {
                        *ret_pod = pod;
                        *ret_removed = false;
                        return 0;
                }
                json_decref(pod);
        }
        return r;
}
