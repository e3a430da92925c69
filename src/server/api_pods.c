/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod subresources beyond status: binding (the scheduler's write that places a pod on a node,
 * carrying the placement's annotations onto the pod, as Kubernetes copies a Binding's annotations)
 * and log (served by the node's agent).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "xpool/timeutil.h"

#define BIND_ATTEMPTS 8

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

/*
 * The bind loop shared by handle_binding and the scheduler: reads the pod, refuses one that is
 * bound or being deleted, and writes the binding with the version read as precondition.
 */
int pod_bind(struct api *api,
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
                const char *bound;
                json_t *pod;
                uint64_t version;

                r = xp_store_get(api->store, "pods", ns, name, &pod, &version, err);
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
                bound =
                    json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
                if (bound && bound[0]) {
                        r = xp_errorf(err,
                                      -EALREADY,
                                      "pod %s is already assigned to node \"%s\"",
                                      name,
                                      bound);
                        json_decref(pod);
                        return r;
                }
                if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) {
                        json_decref(pod);
                        return xp_errorf(err,
                                         -EBUSY,
                                         "pod %s is being deleted, cannot be assigned to a host",
                                         name);
                }
                r = bind_pod(pod, node, annotations);
                if (r == 0)
                        r = xp_store_update(
                            api->store, "pods", ns, name, version, pod, &version, err);
                if (r == 0 && ret_pod)
                        *ret_pod = json_incref(pod);
                json_decref(pod);
                if (r != -ESTALE || expected_version != 0)
                        return r;
        }
        return r;
}

int handle_binding(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *pods = route->kind;
        struct xp_error err = {0};
        json_error_t jerr;
        json_t *binding, *target, *annotations;
        const char *node, *target_kind, *name;
        int r = 0;

        binding = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(binding)) {
                json_decref(binding);
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    pods->plural,
                                    "the request body must be a Binding as a JSON object");
        }
        target = json_object_get(binding, "target");
        node = json_string_value(json_object_get(target, "name"));
        target_kind = json_string_value(json_object_get(target, "kind"));
        name = json_string_value(json_object_get(json_object_get(binding, "metadata"), "name"));
        annotations = json_object_get(json_object_get(binding, "metadata"), "annotations");
        if (!node || !node[0] ||
            (target_kind && target_kind[0] && strcmp(target_kind, "Node") != 0) ||
            (name && strcmp(name, req->name) != 0)) {
                json_decref(binding);
                return reply_status(
                    ret,
                    422,
                    "Invalid",
                    req->name,
                    "bindings",
                    "Binding \"%s\" is invalid: target: the target must name a Node, and metadata.name the pod",
                    req->name);
        }

        r = pod_bind(req->api, req->namespace, req->name, node, annotations, 0, NULL, &err);
        if (r == -EALREADY || r == -EBUSY)
                r = reply_status(ret,
                                 409,
                                 "Conflict",
                                 req->name,
                                 "bindings",
                                 "Operation cannot be fulfilled on pods/binding \"%s\": %s",
                                 req->name,
                                 xp_error_message(&err));
        else if (r < 0)
                r = reply_store_error(ret, r, pods, req->name, &err);
        else
                r = reply_success(ret, 201);
        json_decref(binding);
        return r;
}

int handle_log(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *pods = route->kind;
        struct xp_error err = {0};
        const char *node;
        json_t *pod;
        uint64_t version;
        int r;

        r = xp_store_get(
            req->api->store, pods->plural, req->namespace, req->name, &pod, &version, &err);
        if (r < 0)
                return reply_store_error(ret, r, pods, req->name, &err);
        node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        if (!node || !node[0])
                r = reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    pods->plural,
                    "pod \"%s\" has no node yet: its logs exist once it is scheduled and started",
                    req->name);
        else
                r = reply_status(
                    ret,
                    503,
                    "ServiceUnavailable",
                    req->name,
                    pods->plural,
                    "the logs of pod \"%s\" are kept by the xpool agent on node \"%s\", and no agent serves them to this server",
                    req->name,
                    node);
        json_decref(pod);
        return r;
}
