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
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/lifecycle.h"
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

/*
 * The binding (pod already changed by bind_pod()) and the Event in one group of the store's:
 * one wait for the disk, and the Event only if the binding is written. 0 or the binding's error.
 */
static int bind_with_event(struct xp_registry *registry,
                           json_t *pod,
                           uint64_t version,
                           const struct xp_registry_event *event,
                           struct xp_error *err)
{
        const json_t *meta = json_object_get(pod, "metadata");
        char name[XP_STORE_KEY_MAX + 1];
        const char *event_ns;
        json_t *e = registry_event_new(event, &event_ns, name);
        struct xp_store_group_write w[2] = {
            {.update = true,
             .kind = "pods",
             .namespace = json_string_value(json_object_get(meta, "namespace")),
             .name = json_string_value(json_object_get(meta, "name")),
             .expected_version = version,
             .object = pod},
            {.kind = "events",
             .namespace = event_ns,
             .name = name,
             .object = e,
             .after_previous = true},
        };
        bool held;
        int r;

        if (!e)
                return -ENOMEM;
        /* no Event into a namespace going away: the binding alone */
        r = xp_registry_namespace_hold(registry, event_ns, NULL);
        held = r >= 0;
        r = xp_store_write_group(registry->store, w, held ? 2 : 1);
        if (held)
                xp_registry_namespace_release(registry, event_ns);
        json_decref(e);
        if (r < 0)
                return r;
        if (w[0].result < 0) {
                if (err)
                        *err = w[0].err;
                return w[0].result;
        }
        /* the same report made before (a binding redone): counted on the Event, as any repeat */
        if (held && w[1].result == -EEXIST)
                (void)xp_registry_event_record(registry, event, NULL);
        return 0;
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
        const json_t *meta = json_object_get(pod, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        json_t *copy;
        int r;

        if (!json_string_value(json_object_get(meta, "namespace")) || !name || version == 0)
                return xp_errorf(err, -EINVAL, "bind: a pod with its name and version is required");
        r = bind_check(pod, name, err);
        if (r < 0)
                return r;
        copy = json_deep_copy(pod);
        if (!copy)
                return -ENOMEM;
        r = bind_pod(copy, node, annotations);
        if (r == 0)
                r = bind_with_event(registry, copy, version, event, err);
        if (r == 0 && ret_pod)
                *ret_pod = json_incref(copy);
        json_decref(copy);
        return r;
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
