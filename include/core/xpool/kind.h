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

struct xp_doc;
struct xp_decode_ctx;
struct xp_table_kind;
struct xp_scale_paths;
struct pb_message;

struct xp_kind {
        const char *kind;        /* "Pod" */
        const char *list_kind;   /* "PodList" */
        const char *group;       /* "" for core, "coordination.k8s.io" */
        const char *version;     /* "v1" */
        const char *api_version; /* "v1", "coordination.k8s.io/v1" */
        const char *plural;      /* "pods": the store key, and the URL segment */
        /*
         * The URL segment, discovery's and RBAC's name, where it is not plural: a plural two groups
         * serve (Kubernetes' and Volcano's podgroups) has one store key per group, so the second
         * kind's plural is "podgroups.scheduling.k8s.io" and its url_plural "podgroups". NULL:
         * plural. Read it through xp_kind_url_plural().
         */
        const char *url_plural;
        const char *singular;           /* "pod" */
        const char *const *short_names; /* NULL-terminated: {"po", NULL} */
        const char *const *categories;  /* NULL-terminated ({"all", NULL}), or NULL for none */
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
        /*
         * An update's check against the object it replaces (stored as read from the store):
         * immutable fields, transitions. NULL when the kind has none. 0 or -errno with err in
         * the decoder's words ("data: Forbidden: field is immutable when `immutable` is set").
         */
        int (*validate_update)(const void *object, const json_t *stored, struct xp_error *err);

        /* ---- document kinds (xpool/doc.h); the typed kinds above leave these unset ---- */

        /* The API schema type (src/core/apischema*.txt) every write is checked against; NULL:
         * the type named as the kind. */
        const char *schema_type;
        /*
         * Kubernetes' defaults of a written document (a Deployment's strategy), applied on every
         * decode of a client's object (create, update, patch) before doc_validate. 0 or -ENOMEM.
         */
        int (*doc_defaults)(struct xp_doc *doc);
        /*
         * The kind's validation (Kubernetes' Validate<Kind>), after the schema's type checks: old
         * is NULL when the document is checked on its own, else the object an update replaces
         * (then the hook checks what may not change). Reports with xp_fail_field() or xp_fail_key()
         * in field.ErrorList's words. 0 or -errno.
         */
        int (*doc_validate)(struct xp_decode_ctx *ctx,
                            const struct xp_doc *doc,
                            const struct xp_doc *old);
        /* kubectl's server-side table (xpool/table.h): columns and a row function; NULL: NAME
         * and AGE. */
        const struct xp_table_kind *table;
        /* Whether status is a subresource: /status routes, and updates of the object itself
         * keep the stored status (Pod, Node, Namespace say so in routes.c). */
        bool status_subresource;
        /* The scale subresource (autoscaling/v1 Scale at .../scale), or NULL. */
        const struct xp_scale_paths *scale;
        /*
         * Its protobuf message (src/core/protobuf_internal.h: field numbers of k8s.io/api's
         * generated.proto), so that kubectl's typed commands (create configmap, create
         * deployment), which send protobuf, work; NULL: JSON bodies only.
         */
        const struct pb_message *protobuf;
        /*
         * A kind served in a second version and stored in another (autoscaling/v1
         * HorizontalPodAutoscaler, stored as v2): the stored object as this version shows it, for
         * the answer to a write, a get, a list's items and a watch's objects through this
         * version. NULL: answered as stored. -ENOMEM.
         */
        int (*answer_as)(const json_t *stored, json_t **ret);
};

/*
 * Where a kind keeps what its scale subresource shows, as dotted paths in the object
 * (Kubernetes' CRD subresources.scale): spec_replicas ("spec.replicas", written by a PUT or
 * PATCH of the Scale), status_replicas ("status.replicas") and label_selector (a LabelSelector
 * object such as "spec.selector", or a string in selector syntax such as "status.selector";
 * NULL: none).
 */
struct xp_scale_paths {
        const char *spec_replicas;
        const char *status_replicas;
        const char *label_selector;
};

/* Pod, Node, Namespace, Event, Lease: the entries of xp_kinds[], for direct use. */
extern const struct xp_kind xp_kind_pod;
extern const struct xp_kind xp_kind_node;
extern const struct xp_kind xp_kind_namespace;
extern const struct xp_kind xp_kind_event;
extern const struct xp_kind xp_kind_lease;
extern const struct xp_kind xp_kind_configmap;          /* kind_configmap.c */
extern const struct xp_kind xp_kind_secret;             /* kind_secret.c */
extern const struct xp_kind xp_kind_serviceaccount;     /* kind_serviceaccount.c */
extern const struct xp_kind xp_kind_resourcequota;      /* kind_quota.c */
extern const struct xp_kind xp_kind_limitrange;         /* kind_quota.c */
extern const struct xp_kind xp_kind_workload;           /* kind_gang.c */
extern const struct xp_kind xp_kind_workload_v1alpha2;  /* kind_gang_workload.c */
extern const struct xp_kind xp_kind_podgroup;           /* kind_gang.c */
extern const struct xp_kind xp_kind_k8s_podgroup;       /* kind_gang_podgroup.c */
extern const struct xp_kind xp_kind_priorityclass;      /* kind_priorityclass.c */
extern const struct xp_kind xp_kind_queue;              /* kind_queue.c */
extern const struct xp_kind xp_kind_deployment;         /* kind_apps.c */
extern const struct xp_kind xp_kind_replicaset;         /* kind_apps.c */
extern const struct xp_kind xp_kind_daemonset;          /* kind_apps.c */
extern const struct xp_kind xp_kind_controllerrevision; /* kind_apps_revision.c */
extern const struct xp_kind xp_kind_job;                /* kind_batch_job.c */
extern const struct xp_kind xp_kind_cronjob;            /* kind_batch_cronjob.c */
extern const struct xp_kind xp_kind_hpa;                /* kind_autoscaling_hpa.c */
/* Whether HPAs may have minReplicas 0 (Kubernetes' HPAScaleToZero gate; off until set): set by
 * the server at its start, for the whole process. */
void xp_kind_hpa_allow_scale_to_zero(bool allow);
extern const struct xp_kind xp_kind_pdb;           /* kind_policy.c */
extern const struct xp_kind xp_kind_service;       /* kind_service.c */
extern const struct xp_kind xp_kind_endpoints;     /* kind_endpoints.c */
extern const struct xp_kind xp_kind_endpointslice; /* kind_endpoints.c */
extern const struct xp_kind xp_kind_hpa_v1;        /* kind_autoscaling_v1.c */

extern const struct xp_kind *const xp_kinds[];
extern const size_t xp_kinds_n;

/* The API groups of the kinds ("" for core once), in table order, NULL-terminated. */
const char *const *xp_kind_groups(void);

/* Whether kind's status is a subresource. */
bool xp_kind_has_status(const struct xp_kind *kind);

/* "Pod" (case-sensitive, as apiVersion/kind are); NULL when unknown. */
const struct xp_kind *xp_kind_by_name(const char *kind);

/* By API group ("" for core) and resource ("pods"); NULL when unknown. */
const struct xp_kind *xp_kind_by_resource(const char *group, const char *plural);

/* By "coordination.k8s.io/v1" and "Lease" together; NULL when either does not match. */
const struct xp_kind *xp_kind_by_api_version(const char *api_version, const char *kind);

/* By a name kubectl accepts for a resource: plural, singular or a short name ("po"). NULL when
 * unknown. */
const struct xp_kind *xp_kind_by_any_name(const char *name);

/* The name clients use for the kind's objects (URL, discovery, RBAC): url_plural or plural. */
static inline const char *xp_kind_url_plural(const struct xp_kind *kind)
{
        return kind->url_plural ? kind->url_plural : kind->plural;
}
