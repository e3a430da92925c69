/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The schemas of an OpenAPI document, generated from the API schema (xpool/apischema.h: the
 * types of src/core/apischema.txt with the descriptions of src/core/apidoc.txt), so that the
 * documents the API server publishes (kubectl explain, kubectl's validation) never describe a
 * type twice. docs/development.md ("The API schema") says how each kind of value maps.
 *
 * Pure: no I/O, the schema is borrowed, the result is a new JSON value.
 */

#include <jansson.h>
#include <stddef.h>

#include "xpool/apischema.h"

enum xp_openapi_version {
        XP_OPENAPI_V2 = 2, /* "#/definitions/NAME", $ref beside a description */
        XP_OPENAPI_V3 = 3, /* "#/components/schemas/NAME", $ref inside allOf as Kubernetes does */
};

/* A kind served by the API, marked on its type with x-kubernetes-group-version-kind. */
struct xp_openapi_kind {
        const char *type;    /* the API schema's type: "Pod" */
        const char *group;   /* "" for the core group */
        const char *version; /* "v1" */
        const char *kind;    /* "Pod" */
};

/*
 * The definitions (v2) or component schemas (v3) of the types the kinds reach, field by field at
 * every depth, named "<package>.<Type>" ("io.k8s.api.core.v1.PodSpec"), plus the shared value types
 * they use (Quantity, IntOrString, Time, MicroTime, FieldsV1). A kind whose type the schema lacks
 * is left out. *ret is a JSON object, name -> schema; caller frees with json_decref(). -ENOMEM.
 */
int xp_openapi_schemas(const struct xp_apischema *schema,
                       enum xp_openapi_version version,
                       const struct xp_openapi_kind *kinds,
                       size_t n_kinds,
                       json_t **ret);

/* "#/components/schemas/NAME" or "#/definitions/NAME" of a type: name must hold 300 bytes. */
void xp_openapi_ref(enum xp_openapi_version version,
                    const struct xp_apitype *type,
                    char *name,
                    size_t size);
