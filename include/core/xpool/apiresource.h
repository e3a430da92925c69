/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The resource types a client names on the command line (`xpool get po`), and the URLs they live
 * at. Pure lookups over a static table: pods, nodes, namespaces, events and leases.
 */

#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"

struct xp_api_resource {
        const char *kind;        /* "Pod" */
        const char *api_version; /* "v1", "coordination.k8s.io/v1" */
        const char *group;       /* "" for the core group */
        const char *plural;      /* "pods": the URL segment */
        const char *singular;    /* "pod" */
        const char *short_name;  /* "po"; NULL when none */
        bool namespaced;
};

/*
 * Resolves what a user typed, case-insensitively, as kubectl does: the plural, the singular, the
 * short name or the kind ("pods", "pod", "po", "Pod"), optionally qualified by its group
 * ("leases.coordination.k8s.io", "lease.coordination.k8s.io"). Returns NULL and writes
 * `the server doesn't have a resource type "x"` into err (when not NULL) otherwise.
 */
const struct xp_api_resource *xp_api_resource_find(const char *name, struct xp_error *err);

/* The resource of a kind and apiVersion ("Pod", "v1"); NULL when none. */
const struct xp_api_resource *xp_api_resource_by_kind(const char *api_version, const char *kind);

/*
 * Writes the URL path of a collection (name NULL) or of one object into buf:
 * /api/v1/namespaces/NS/pods/NAME, /apis/coordination.k8s.io/v1/namespaces/NS/leases,
 * /api/v1/nodes/NAME, or across namespaces (namespace NULL) /api/v1/pods. The namespace is
 * ignored for cluster-scoped resources. Names and namespaces are percent-encoded. Returns
 * -ENAMETOOLONG when buf is too small (buf then holds nothing useful), else 0.
 */
int xp_api_resource_path(const struct xp_api_resource *resource,
                         const char *namespace,
                         const char *name,
                         char *buf,
                         size_t size);

/* The form `kubectl get -o name` prints: "pod", "lease.coordination.k8s.io". Returns buf. */
char *xp_api_resource_type_name(const struct xp_api_resource *resource, char *buf, size_t size);
