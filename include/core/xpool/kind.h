/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Every kind of object xpool serves, in one table: its names (kind, list kind, group, version,
 * resource plural, singular and short names, as discovery and kubectl use them), whether it lives
 * in a namespace, and its codec. The API server, manifests and the CLI all look kinds up here, so
 * adding a kind is one entry in kind.c plus its schema.
 *
 * The table and its entries are static: nothing here is allocated or freed.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "xpool/codec.h"
#include "xpool/error.h"
#include "xpool/object.h"

struct xp_kind {
        const char *kind;               /* "Pod" */
        const char *list_kind;          /* "PodList" */
        const char *group;              /* "" for core, "coordination.k8s.io" */
        const char *version;            /* "v1" */
        const char *api_version;        /* "v1", "coordination.k8s.io/v1" */
        const char *plural;             /* "pods": the URL segment and the store key */
        const char *singular;           /* "pod" */
        const char *const *short_names; /* NULL-terminated: {"po", NULL} */
        bool namespaced;
        /*
         * Decodes and validates (flags are xp_decode_flags): the kind's xp_<kind>_from_json().
         * On success *ret owns the typed object (free with .free); on failure it is untouched.
         */
        int (*from_json)(const json_t *json,
                         const struct xp_decode_source *source,
                         unsigned flags,
                         void **ret,
                         struct xp_error *err);
        /* Encodes with apiVersion and kind first: the kind's xp_<kind>_to_json(). */
        int (*to_json)(const void *object, json_t **ret);
        /* Validates an object built or changed in code: the kind's xp_<kind>_validate(). */
        int (*validate)(const void *object, struct xp_error *err);
        void (*free)(void *object); /* accepts NULL */
        /* The object's metadata, borrowed from object. */
        struct xp_object_meta *(*meta)(void *object);
        /*
         * Fills in what kube-apiserver defaults when the object is created (Pod: status.phase
         * Pending; Namespace: status.phase Active and the "kubernetes" finalizer). Returns 0 or
         * -ENOMEM, changing nothing on failure. NULL for kinds without defaults (Node, Event,
         * Lease: the API server leaves an Event's timestamps and count as sent).
         */
        int (*set_defaults)(void *object);
};

/* Pod, Node, Namespace, Event, Lease: the entries of xp_kinds[], for direct use. */
extern const struct xp_kind xp_kind_pod;
extern const struct xp_kind xp_kind_node;
extern const struct xp_kind xp_kind_namespace;
extern const struct xp_kind xp_kind_event;
extern const struct xp_kind xp_kind_lease;

extern const struct xp_kind *const xp_kinds[];
extern const size_t xp_kinds_n;

/* "Pod" (case-sensitive, as apiVersion/kind are); NULL when unknown. */
const struct xp_kind *xp_kind_by_name(const char *kind);

/* By API group ("" for core) and resource ("pods"); NULL when unknown. */
const struct xp_kind *xp_kind_by_resource(const char *group, const char *plural);

/* By "coordination.k8s.io/v1" and "Lease" together; NULL when either does not match. */
const struct xp_kind *xp_kind_by_api_version(const char *api_version, const char *kind);

/* By a name kubectl accepts for a resource: plural, singular or a short name ("po"). NULL when
 * unknown. */
const struct xp_kind *xp_kind_by_any_name(const char *name);
