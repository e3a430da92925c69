/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenAPI schemas from the API schema: one object schema per type, one property per field, in the
 * shapes Kubernetes' own documents use, so that kubectl reads them as it reads a cluster's (explain
 * follows "allOf" around a "$ref" in v3, and prints a field's description and then its type's).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apischema_internal.h"
#include "xpool/macro.h"
#include "xpool/openapi.h"

/* The value types every document shares, which the schema names as scalars. */
enum shared {
        SHARED_QUANTITY,
        SHARED_INT_OR_STRING,
        SHARED_TIME,
        SHARED_MICROTIME,
        SHARED_FIELDS,
        SHARED_N,
};

static const struct {
        const char *name;
        const char *description;
} shared_types[SHARED_N] = {
    [SHARED_QUANTITY] = {"io.k8s.apimachinery.pkg.api.resource.Quantity",
                         "Quantity is a fixed-point representation of a number: a decimal number "
                         "with an optional suffix, a binary SI one (Ki, Mi, Gi, Ti, Pi, Ei), a "
                         "decimal SI one (m, k, M, G, T, P, E) or a decimal exponent (e3), such as "
                         "\"500m\", \"2Gi\" or \"1\"."},
    [SHARED_INT_OR_STRING] = {"io.k8s.apimachinery.pkg.util.intstr.IntOrString",
                              "A value written either as a whole number (int32) or as a string, "
                              "such as a port given by number or by name."},
    [SHARED_TIME] = {"io.k8s.apimachinery.pkg.apis.meta.v1.Time",
                     "A point in time, written as an RFC 3339 string in UTC with whole seconds, "
                     "such as \"2024-01-02T03:04:05Z\"."},
    [SHARED_MICROTIME] = {"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
                          "A point in time as Time, with microseconds."},
    [SHARED_FIELDS] = {"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
                       "The set of fields a manager owns, as nested JSON objects. A key \"f:NAME\" "
                       "names a field of an object or a key of a map; \"k:{...}\" a list item by "
                       "its key fields; \"v:VALUE\" a list item by its whole value; \"i:N\" a "
                       "list item by its position. A key \".\" with an empty object stands for "
                       "the field itself. See docs/patch.md for how server-side apply uses it."},
};

/* What a generation carries: the version, the types reached so far, the shared types used. */
struct gen {
        const struct xp_apischema *schema;
        enum xp_openapi_version version;
        bool *reached; /* by type index */
        bool shared[SHARED_N];
};

static const char *ref_prefix(enum xp_openapi_version version)
{
        return version == XP_OPENAPI_V3 ? "#/components/schemas/" : "#/definitions/";
}

void xp_openapi_ref(enum xp_openapi_version version,
                    const struct xp_apitype *type,
                    char *name,
                    size_t size)
{
        snprintf(name, size, "%s%s.%s", ref_prefix(version), type->package, type->name);
}

static size_t type_index(const struct gen *g, const struct xp_apitype *type)
{
        return (size_t)(type - g->schema->types);
}

/* A reference to a named schema: "$ref" (v2), or inside "allOf" as Kubernetes' v3 writes it. */
static json_t *ref_to(const struct gen *g, const char *name, bool wrap)
{
        char ref[400];

        snprintf(ref, sizeof ref, "%s%s", ref_prefix(g->version), name);
        if (g->version == XP_OPENAPI_V3 && wrap)
                return json_pack("{s:[{s:s}]}", "allOf", "$ref", ref);
        return json_pack("{s:s}", "$ref", ref);
}

static json_t *shared_ref(struct gen *g, enum shared which, bool wrap)
{
        g->shared[which] = true;
        return ref_to(g, shared_types[which].name, wrap);
}

static json_t *value_schema(struct gen *g, const struct xp_apivalue *v, bool wrap);

static json_t *type_ref(struct gen *g, const struct xp_apitype *type, bool wrap)
{
        char name[300];

        g->reached[type_index(g, type)] = true;
        snprintf(name, sizeof name, "%s.%s", type->package, type->name);
        return ref_to(g, name, wrap);
}

/* A list's items are wrapped as Kubernetes writes them (beside a default); a map's values not. */
static json_t *container_schema(struct gen *g, const struct xp_apivalue *v)
{
        json_t *element = value_schema(g, v->element, v->kind == XP_APIVALUE_LIST);

        if (!element)
                return NULL;
        if (v->kind == XP_APIVALUE_LIST)
                return json_pack("{s:s, s:o}", "type", "array", "items", element);
        return json_pack("{s:s, s:o}", "type", "object", "additionalProperties", element);
}

/* The schema of a value; wrap: a named type's reference goes in allOf (v3), as for a field. */
static json_t *value_schema(struct gen *g, const struct xp_apivalue *v, bool wrap)
{
        switch (v->kind) {
        case XP_APIVALUE_STRING:
                return json_pack("{s:s}", "type", "string");
        case XP_APIVALUE_BOOL:
                return json_pack("{s:s}", "type", "boolean");
        case XP_APIVALUE_INT32:
                return json_pack("{s:s, s:s}", "type", "integer", "format", "int32");
        case XP_APIVALUE_INT64:
                return json_pack("{s:s, s:s}", "type", "integer", "format", "int64");
        case XP_APIVALUE_DOUBLE:
                return json_pack("{s:s, s:s}", "type", "number", "format", "double");
        case XP_APIVALUE_QUANTITY:
                return shared_ref(g, SHARED_QUANTITY, wrap);
        case XP_APIVALUE_INT_OR_STRING:
                return shared_ref(g, SHARED_INT_OR_STRING, wrap);
        case XP_APIVALUE_TIME:
                return shared_ref(g, SHARED_TIME, wrap);
        case XP_APIVALUE_MICROTIME:
                return shared_ref(g, SHARED_MICROTIME, wrap);
        case XP_APIVALUE_OBJECT:
                return shared_ref(g, SHARED_FIELDS, wrap);
        case XP_APIVALUE_TYPE:
                return type_ref(g, v->type, wrap);
        case XP_APIVALUE_LIST:
        case XP_APIVALUE_MAP:
                return container_schema(g, v);
        }
        return NULL;
}

/* x-kubernetes-list-type and its keys, x-kubernetes-map-type: how apply merges the field. */
static int add_merge(const struct xp_apifield *f, json_t *prop)
{
        json_t *keys;

        if (f->value->kind == XP_APIVALUE_MAP && f->merge == XP_APIMERGE_ATOMIC)
                return json_object_set_new(prop, "x-kubernetes-map-type", json_string("atomic"));
        if (f->value->kind != XP_APIVALUE_LIST ||
            (f->merge != XP_APIMERGE_SET && f->merge != XP_APIMERGE_MAP))
                return 0;
        if (json_object_set_new(prop,
                                "x-kubernetes-list-type",
                                json_string(f->merge == XP_APIMERGE_SET ? "set" : "map")) < 0)
                return -ENOMEM;
        if (f->merge != XP_APIMERGE_MAP)
                return 0;
        keys = json_array();
        for (size_t i = 0; keys && i < f->n_keys; i++)
                if (json_array_append_new(keys, json_string(f->keys[i].name)) < 0)
                        return json_decref(keys), -ENOMEM;
        return json_object_set_new(prop, "x-kubernetes-list-map-keys", keys);
}

static json_t *field_schema(struct gen *g, const struct xp_apifield *f)
{
        json_t *prop = value_schema(g, f->value, true);

        if (!prop)
                return NULL;
        if ((f->description &&
             json_object_set_new(prop, "description", json_string(f->description)) < 0) ||
            add_merge(f, prop) < 0) {
                json_decref(prop);
                return NULL;
        }
        return prop;
}

static json_t *
gvk_list(const struct xp_apitype *type, const struct xp_openapi_kind *kinds, size_t n_kinds)
{
        json_t *list = NULL;

        for (size_t i = 0; i < n_kinds; i++) {
                if (strcmp(kinds[i].type, type->name) != 0)
                        continue;
                if (!list && !(list = json_array()))
                        return NULL;
                if (json_array_append_new(list,
                                          json_pack("{s:s, s:s, s:s}",
                                                    "group",
                                                    kinds[i].group,
                                                    "kind",
                                                    kinds[i].kind,
                                                    "version",
                                                    kinds[i].version)) < 0) {
                        json_decref(list);
                        return NULL;
                }
        }
        return list;
}

/* The type's fields and what it says of itself; -ENOMEM. */
static int fill_type(struct gen *g,
                     const struct xp_apitype *type,
                     const struct xp_openapi_kind *kinds,
                     size_t n_kinds,
                     json_t *def)
{
        json_t *props = json_object(), *required = json_array(), *gvk;

        if (json_object_set_new(def, "properties", props) < 0 ||
            json_object_set_new(def, "type", json_string("object")) < 0 || !required) {
                json_decref(required);
                return -ENOMEM;
        }
        for (size_t i = 0; i < type->n_fields; i++) {
                const struct xp_apifield *f = &type->fields[i];

                if (json_object_set_new(props, f->name, field_schema(g, f)) < 0 ||
                    (f->required && json_array_append_new(required, json_string(f->name)) < 0)) {
                        json_decref(required);
                        return -ENOMEM;
                }
        }
        if (json_array_size(required) > 0 ? json_object_set_new(def, "required", required) < 0
                                          : (json_decref(required), 0))
                return -ENOMEM;
        if (type->description &&
            json_object_set_new(def, "description", json_string(type->description)) < 0)
                return -ENOMEM;
        if (type->atomic &&
            json_object_set_new(def, "x-kubernetes-map-type", json_string("atomic")) < 0)
                return -ENOMEM;
        gvk = gvk_list(type, kinds, n_kinds);
        if (gvk && json_object_set_new(def, "x-kubernetes-group-version-kind", gvk) < 0)
                return -ENOMEM;
        return 0;
}

static json_t *shared_schema(enum xp_openapi_version version, enum shared which)
{
        const char *d = shared_types[which].description;

        switch (which) {
        case SHARED_QUANTITY:
                if (version == XP_OPENAPI_V3)
                        return json_pack("{s:s, s:[{s:s}, {s:s}]}",
                                         "description",
                                         d,
                                         "oneOf",
                                         "type",
                                         "string",
                                         "type",
                                         "number");
                return json_pack("{s:s, s:s}", "description", d, "type", "string");
        case SHARED_INT_OR_STRING:
                if (version == XP_OPENAPI_V3)
                        return json_pack("{s:s, s:s, s:[{s:s}, {s:s}]}",
                                         "description",
                                         d,
                                         "format",
                                         "int-or-string",
                                         "oneOf",
                                         "type",
                                         "integer",
                                         "type",
                                         "string");
                return json_pack("{s:s, s:s, s:s}",
                                 "description",
                                 d,
                                 "format",
                                 "int-or-string",
                                 "type",
                                 "string");
        case SHARED_TIME:
        case SHARED_MICROTIME:
                return json_pack(
                    "{s:s, s:s, s:s}", "description", d, "format", "date-time", "type", "string");
        case SHARED_FIELDS:
        default:
                return json_pack("{s:s, s:s}", "description", d, "type", "object");
        }
}

/* Generates the reached types until no new one is reached (each type once). */
static int generate(struct gen *g, const struct xp_openapi_kind *kinds, size_t n_kinds, json_t *out)
{
        bool *done = calloc(g->schema->n_types ? g->schema->n_types : 1, sizeof(*done));
        bool more = true;
        int r = 0;

        if (!done)
                return -ENOMEM;
        while (more && r >= 0) {
                more = false;
                for (size_t i = 0; r >= 0 && i < g->schema->n_types; i++) {
                        const struct xp_apitype *type = &g->schema->types[i];
                        char name[300];
                        json_t *def;

                        if (!g->reached[i] || done[i])
                                continue;
                        done[i] = more = true;
                        snprintf(name, sizeof name, "%s.%s", type->package, type->name);
                        def = json_object();
                        if (!def || json_object_set_new(out, name, def) < 0)
                                r = -ENOMEM;
                        else
                                r = fill_type(g, type, kinds, n_kinds, def);
                }
        }
        free(done);
        return r;
}

int xp_openapi_schemas(const struct xp_apischema *schema,
                       enum xp_openapi_version version,
                       const struct xp_openapi_kind *kinds,
                       size_t n_kinds,
                       json_t **ret)
{
        struct gen g = {.schema = schema, .version = version};
        json_t *out = json_object();
        int r = 0;

        g.reached = calloc(schema->n_types ? schema->n_types : 1, sizeof(*g.reached));
        if (!out || !g.reached)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n_kinds; i++) {
                const struct xp_apitype *type = xp_apischema_find(schema, kinds[i].type);

                if (type)
                        g.reached[type_index(&g, type)] = true;
        }
        if (r >= 0)
                r = generate(&g, kinds, n_kinds, out);
        for (int i = 0; r >= 0 && i < SHARED_N; i++)
                if (g.shared[i] && json_object_set_new(out,
                                                       shared_types[i].name,
                                                       shared_schema(version, (enum shared)i)) < 0)
                        r = -ENOMEM;
        free(g.reached);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}
