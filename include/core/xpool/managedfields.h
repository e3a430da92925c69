/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Server-side apply (Kubernetes' structured merge): which fields an applied configuration sets,
 * as a FieldsV1 set ({"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{}}}}}),
 * who owns what (metadata.managedFields), the conflicts when another manager owns a field the
 * configuration changes, and the merged object. How each field merges comes from the API schema
 * (xpool/apischema.h: atomic types, set and map(KEY) lists, atomic maps). Pure: no I/O.
 */

#include <jansson.h>
#include <stdbool.h>

#include "xpool/apischema.h"
#include "xpool/error.h"

/*
 * The FieldsV1 set of the fields config sets, an object of type (the kind's). At the top level
 * apiVersion, kind and status are left out, and of metadata only labels and annotations count,
 * as Kubernetes tracks them. A new JSON object (caller frees); NULL without memory.
 */
json_t *xp_fieldset_of(const struct xp_apitype *type, const json_t *config);

/* What an apply needs besides the objects. */
struct xp_apply_request {
        const char *manager;     /* the field manager (required) */
        const char *api_version; /* "v1": the managedFields entry's apiVersion */
        const char *now;         /* RFC 3339 seconds: the entry's time */
        bool force;              /* take the conflicting fields from their managers */
};

/*
 * Applies config (the body of an apply patch) by req->manager to live (NULL when the object does
 * not exist yet). On success 0 with *ret the new object: live with config merged field by field,
 * the fields this manager applied before and no longer applies removed unless another manager
 * owns them, and metadata.managedFields updated. -EBUSY when another manager owns a field config
 * changes and req->force is false: *ret_conflicts is then a JSON array of {"manager": "\"m\"" or
 * "\"m\" using v1", "field": ".spec.containers[name=\"c\"].image"}, nothing else is set.
 * -EINVAL with err when live's managedFields do not read, -ENOMEM.
 */
int xp_apply(const struct xp_apitype *type,
             const json_t *live,
             const json_t *config,
             const struct xp_apply_request *req,
             json_t **ret,
             json_t **ret_conflicts,
             struct xp_error *err);

/*
 * Ownership after a create, update or patch (Kubernetes' Update operation) of object, which was
 * live (NULL: a create): req->manager's Update entry takes the fields the write adds or changes,
 * the other managers lose those it changes, and every manager those it removes; entries left
 * without fields go. The entries start from object's own managedFields when it carries some (a
 * client may set them, as in Kubernetes), else from live's. A write that changes no field leaves
 * them as they were. Sets
 * object's metadata.managedFields (removes it when none is left); req->force is not read. 0, or
 * -ENOMEM (object then unchanged but possibly for its managedFields).
 */
int xp_managed_update(const struct xp_apitype *type,
                      const json_t *live,
                      json_t *object,
                      const struct xp_apply_request *req);

/*
 * Writes the time of each of object's metadata.managedFields entries as Kubernetes' metav1.Time
 * writes it: UTC, whole seconds, "2026-12-05T19:40:00Z", whatever offset ("+00:00") or fraction
 * the client sent. A time that does not parse is left as it is, for validation to refuse. The
 * entries mended are copies (metadata.managedFields is set anew), so that entries shared with
 * another object stay as they are. 0, or -ENOMEM.
 */
int xp_managed_times_canonical(json_t *object);

/* Kubernetes' text of conflicts: "Apply failed with 1 conflict: conflict with \"m\": .path". */
char *xp_apply_conflict_message(const json_t *conflicts);
