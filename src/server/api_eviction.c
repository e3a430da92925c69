/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods/eviction subresource (policy/v1 Eviction), as kubectl drain uses it: POST an Eviction
 * (JSON, or protobuf as client-go sends it) naming the pod, with optional DeleteOptions; the pod
 * is deleted as a DELETE with those options would (gracefully) and the answer is 201 with a
 * Success Status, as kube-apiserver answers. xpool has no PodDisruptionBudgets yet, so no
 * budget ever refuses an eviction: what Kubernetes does for a pod no budget selects.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "xpool/protobuf.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"

/* The Eviction: 1 with *ret (an object), or 0 with ret filled. */
static int eviction_body(const struct request *req,
                         const struct xp_kind *pods,
                         json_t **ret_eviction,
                         struct reply *ret)
{
        const char *content_type = request_header(req, "Content-Type");
        struct xp_error err = {0};
        json_error_t jerr;
        json_t *eviction = NULL;

        if (content_type &&
            strncasecmp(content_type, "application/vnd.kubernetes.protobuf", 35) == 0) {
                if (xp_protobuf_to_json(req->body, req->body_len, &eviction, &err) < 0)
                        return reply_status(ret,
                                            415,
                                            "UnsupportedMediaType",
                                            req->name,
                                            pods->plural,
                                            "the protobuf request body could not be read: %s",
                                            xp_error_message(&err));
        } else {
                eviction = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
        }
        if (!json_is_object(eviction) ||
            !xp_streq0(json_string_value(json_object_get(eviction, "kind")) ?: "Eviction",
                       "Eviction")) {
                json_decref(eviction);
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    pods->plural,
                                    "the request body must be a policy/v1 Eviction");
        }
        *ret_eviction = eviction;
        return 1;
}

int handle_eviction(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *pods = route->kind;
        struct xp_registry_delete_options options = {0};
        struct xp_error err = {0};
        json_t *eviction = NULL, *pod = NULL;
        const json_t *delete_options;
        const char *name;
        bool removed;
        int r;

        r = eviction_body(req, pods, &eviction, ret);
        if (r <= 0)
                return r;
        name = json_string_value(json_object_get(json_object_get(eviction, "metadata"), "name"));
        if (name && strcmp(name, req->name) != 0) {
                r = reply_status(ret,
                                 400,
                                 "BadRequest",
                                 req->name,
                                 pods->plural,
                                 "name in URL does not match name in Eviction object");
                goto out;
        }
        delete_options = json_object_get(eviction, "deleteOptions");
        if (json_is_object(delete_options)) {
                r = delete_options_json(req, pods, delete_options, &options, ret);
                if (r <= 0)
                        goto out;
        }
        r = xp_registry_pod_delete(
            req->api->registry, req->namespace, req->name, &options, &pod, &removed, &err);
        json_decref(pod);
        if (r == -ECANCELED)
                r = reply_status(
                    ret, 409, "Conflict", req->name, pods->plural, "%s", xp_error_message(&err));
        else if (r < 0)
                r = reply_store_error(ret, r, pods, req->name, &err);
        else
                r = reply_success(ret, 201);
out:
        json_decref(eviction);
        return r;
}
