/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What kube-apiserver's patch handler (k8s.io/apiserver endpoints/handlers/patch.go) says of a
 * patch body whose JSON is not the shape its type needs, before anything applies: a JSON patch
 * that is no list of operations, a merge or strategic merge patch that is no object. Its words
 * are Go's encoding/json errors for the value it decodes into, which depends on the
 * fieldValidation directive (absent means Warn): Warn and Strict decode strictly into its own
 * types first ("error decoding patch: json: cannot unmarshal string into Go value of type
 * []handlers.jsonPatchOp"), Ignore goes straight to the JSON patch library.
 */
#include <stdbool.h>
#include <string.h>

#include "internal.h"

/* The name Go's encoding/json gives a JSON value's type in its errors. */
static const char *go_json_type_name(const json_t *value)
{
        if (json_is_object(value))
                return "object";
        if (json_is_string(value))
                return "string";
        if (json_is_boolean(value))
                return "bool";
        return json_is_number(value) ? "number" : "array";
}

/* errors.NewBadRequest's Status has no details at all */
static int without_details(struct reply *ret, int r)
{
        if (r >= 0)
                json_object_del(ret->body, "details");
        return r;
}

/* Go's "json: cannot unmarshal string into Go value of type T", as a 400 */
static int
cannot_unmarshal(struct reply *ret, bool decoding_patch, const json_t *value, const char *go_type)
{
        return without_details(ret,
                               reply_status(ret,
                                            400,
                                            "BadRequest",
                                            NULL,
                                            NULL,
                                            "%sjson: cannot unmarshal %s into Go value of type %s",
                                            decoding_patch ? "error decoding patch: " : "",
                                            go_json_type_name(value),
                                            go_type));
}

/* The first member of an operation that a string field (op, path, from) cannot take. */
static const char *op_field_not_string(const json_t *op, const json_t **ret_value)
{
        const char *key;
        json_t *value;

        json_object_foreach((json_t *)op, key, value)
        {
                if ((strcmp(key, "op") == 0 || strcmp(key, "path") == 0 ||
                     strcmp(key, "from") == 0) &&
                    !json_is_string(value) && !json_is_null(value)) {
                        *ret_value = value;
                        return key;
                }
        }
        return NULL;
}

/* A JSON patch: a list of objects (null ones are no operation); null is no operation. */
static int json_patch_decodes(const json_t *patch, bool strict, struct reply *ret)
{
        const json_t *op, *value = NULL;
        const char *field;
        size_t i;

        if (json_is_null(patch))
                return 1;
        if (!json_is_array(patch))
                return cannot_unmarshal(
                    ret, strict, patch, strict ? "[]handlers.jsonPatchOp" : "jsonpatch.Patch");
        json_array_foreach(patch, i, op)
        {
                if (!json_is_object(op) && !json_is_null(op))
                        return cannot_unmarshal(ret,
                                                strict,
                                                op,
                                                strict ? "handlers.jsonPatchOp"
                                                       : "jsonpatch.Operation");
                field = strict && op ? op_field_not_string(op, &value) : NULL;
                if (field)
                        return without_details(
                            ret,
                            reply_status(ret,
                                         400,
                                         "BadRequest",
                                         NULL,
                                         NULL,
                                         "error decoding patch: json: cannot unmarshal %s into Go "
                                         "struct field jsonPatchOp.%s of type string",
                                         go_json_type_name(value),
                                         field));
        }
        return 1;
}

int patch_body_decodes(const struct request *req,
                       enum xp_patch_type type,
                       const json_t *patch,
                       struct reply *ret)
{
        const char *directive = request_query(req, "fieldValidation");
        bool strict = !directive || strcmp(directive, "Ignore") != 0;

        if (type == XP_PATCH_JSON)
                return json_patch_decodes(patch, strict, ret);
        if (type == XP_PATCH_APPLY || json_is_object(patch))
                return 1;
        if (type == XP_PATCH_STRATEGIC) /* null is an empty patch */
                return json_is_null(patch)
                           ? 1
                           : cannot_unmarshal(ret, false, patch, "map[string]interface {}");
        /* a merge patch: the library refuses null, and anything but an object or a list */
        if (json_is_null(patch) || (!strict && !json_is_array(patch)))
                return without_details(
                    ret, reply_status(ret, 400, "BadRequest", NULL, NULL, "Invalid JSON Patch"));
        return strict ? cannot_unmarshal(ret, true, patch, "map[string]interface {}") : 1;
}
