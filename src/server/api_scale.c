/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scale subresource (GET, PUT, PATCH .../scale) of every kind that declares one in the kinds
 * table (struct xp_scale_paths): an autoscaling/v1 Scale built from the object's paths, and a
 * write of spec.replicas through the generic update path (validation, admission, the store).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/doc.h"
#include "xpool/patch.h"
#include "xpool/registry.h"

#define SCALE_ATTEMPTS 16 /* a patch without a version retries when another write won */

/* The Scale of object, NULL without memory. */
static json_t *scale_of(const struct xp_kind *kind, const json_t *object)
{
        json_t *scale = NULL;

        return xp_doc_scale(kind, object, &scale) < 0 ? NULL : scale;
}

static int reply_invalid_scale(const struct request *req, struct reply *ret, const char *problem)
{
        return reply_status(ret,
                            422,
                            "Invalid",
                            req->name,
                            "scale",
                            "Scale.autoscaling \"%s\" is invalid: %s",
                            req->name,
                            problem);
}

/*
 * The replicas a Scale asks for: 1 with *ret, else 0 with ret filled (422 as Kubernetes'
 * ValidateScale).
 */
static int wanted_replicas(const struct request *req,
                           const json_t *scale,
                           int64_t *ret_replicas,
                           struct reply *ret)
{
        const json_t *v = xp_json_at(scale, "spec.replicas");
        char problem[160];

        if (!json_is_object(scale))
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    "scale",
                                    "the request body must be a JSON object (a Scale)");
        if (v && !json_is_integer(v))
                return reply_invalid_scale(
                    req, ret, "spec.replicas: Invalid value: expected an integer");
        if (json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
                snprintf(problem,
                         sizeof problem,
                         "spec.replicas: Invalid value: %lld: must be greater than or equal to 0",
                         (long long)json_integer_value(v));
                return reply_invalid_scale(req, ret, problem);
        }
        *ret_replicas = json_integer_value(v);
        return 1;
}

/* A PUT's Scale as sent, a PATCH's applied to the stored object's. 1 with *ret_scale, else 0. */
static int requested_scale(const struct request *req,
                           const struct xp_kind *kind,
                           const json_t *stored,
                           json_t **ret_scale,
                           struct reply *ret)
{
        const char *content_type = request_header(req, "Content-Type");
        struct xp_error err = {0};
        enum xp_patch_type type;
        json_error_t jerr;
        json_t *body, *current;
        int r;

        body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
        if (!body)
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    "scale",
                                    "the request body is not valid JSON: %d:%d: %s",
                                    jerr.line,
                                    jerr.column,
                                    jerr.text);
        if (req->method == HTTP_PUT) {
                *ret_scale = body;
                return 1;
        }
        if (xp_patch_type_from_content_type(content_type ? content_type : "", &type, &err) < 0 ||
            type == XP_PATCH_APPLY) {
                json_decref(body);
                return reply_status(
                    ret,
                    415,
                    "UnsupportedMediaType",
                    req->name,
                    "scale",
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json");
        }
        current = scale_of(kind, stored);
        r = current ? xp_patch_apply(type, "Scale", current, body, ret_scale, &err) : -ENOMEM;
        json_decref(current);
        json_decref(body);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && type == XP_PATCH_JSON)
                return reply_patch_failed(ret, xp_error_message(&err));
        if (r < 0)
                return reply_invalid_scale(req, ret, xp_error_message(&err));
        return 1;
}

/* The version a Scale's write is based on: its own when it names one, else the stored one. */
static int based_on(const struct request *req,
                    const json_t *scale,
                    uint64_t stored_version,
                    uint64_t *ret_version,
                    bool *ret_pinned,
                    struct reply *ret)
{
        const char *rv = xp_json_str_at(scale, "metadata.resourceVersion", NULL);

        *ret_pinned = rv && rv[0];
        *ret_version = stored_version;
        if (*ret_pinned && !xp_registry_version_parse(rv, ret_version))
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    "scale",
                    "metadata.resourceVersion: \"%s\" is not a resource version this server wrote",
                    rv);
        return 1;
}

/* One attempt at a write: 0 with ret filled, -ESTALE when another write won (unpinned). */
static int scale_once(const struct request *req, const struct xp_kind *kind, struct reply *ret)
{
        struct xp_error err = {0};
        json_t *stored = NULL, *scale = NULL, *candidate = NULL;
        uint64_t version, expected = 0;
        int64_t replicas = 0;
        bool pinned = false;
        int r;

        r = xp_store_get(req->api->store,
                         kind->plural,
                         store_namespace(req, kind),
                         req->name,
                         &stored,
                         &version,
                         &err);
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        if (req->method == HTTP_GET) {
                scale = scale_of(kind, stored);
                json_decref(stored);
                return scale ? reply_json(ret, 200, scale) : -ENOMEM;
        }
        r = requested_scale(req, kind, stored, &scale, ret);
        if (r > 0)
                r = wanted_replicas(req, scale, &replicas, ret);
        if (r > 0)
                r = based_on(req, scale, version, &expected, &pinned, ret);
        if (r > 0) {
                candidate = json_deep_copy(stored);
                r = candidate ? xp_json_set_int_at(candidate, kind->scale->spec_replicas, replicas)
                              : -ENOMEM;
        }
        if (r >= 0 && candidate)
                r = update_object(req, kind, stored, candidate, expected, !pinned, ret);
        json_decref(candidate);
        json_decref(scale);
        json_decref(stored);
        return r;
}

int handle_scale(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        json_t *scale;
        int r = -ESTALE;

        for (unsigned attempt = 0; attempt < SCALE_ATTEMPTS && r == -ESTALE; attempt++)
                r = scale_once(req, kind, ret);
        if (r == -ESTALE)
                return reply_store_error(ret, -ESTALE, kind, req->name, NULL);
        /* the written object answers as its Scale (the store's text first read back) */
        if (r >= 0 && req->method != HTTP_GET && ret->code == 200 && !ret->body && ret->text) {
                ret->body = json_loads(ret->text, 0, NULL);
                if (!ret->body)
                        return -ENOMEM;
                free(ret->text);
                ret->text = NULL;
        }
        if (r >= 0 && req->method != HTTP_GET && ret->code == 200 && ret->body) {
                scale = scale_of(kind, ret->body);
                if (!scale)
                        return -ENOMEM;
                json_decref(ret->body);
                ret->body = scale;
        }
        return r;
}
