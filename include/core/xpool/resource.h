/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Resource lists: resource name -> quantity, as in a container's `resources.limits` or a Node's
 * `status.allocatable`. Entries are kept sorted by name, each name at most once, so output is
 * deterministic and lookups are binary searches.
 *
 * Resource names follow Kubernetes: the standard ones (cpu, memory, ephemeral-storage, storage,
 * pods, hugepages-<size>) have no prefix; every other resource is an extended resource with a
 * domain prefix: nvidia.com/gpu, amd.com/gpu, huawei.com/Ascend910, vendor.com/npu, and xpool's
 * vendor-neutral xpool.io/accelerator.
 */

#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"
#include "xpool/quantity.h"

#define XP_RESOURCE_CPU               "cpu"
#define XP_RESOURCE_MEMORY            "memory"
#define XP_RESOURCE_EPHEMERAL_STORAGE "ephemeral-storage"
#define XP_RESOURCE_PODS              "pods"

struct xp_resource {
        char *name; /* owned */
        struct xp_quantity quantity;
};

struct xp_resource_list {
        struct xp_resource *items; /* owned, sorted by name */
        size_t n;
};

void xp_resource_list_done(struct xp_resource_list *list);

/* Deep copy into *ret (which must not hold entries). -ENOMEM leaves *ret empty. */
int xp_resource_list_copy(const struct xp_resource_list *src, struct xp_resource_list *ret);

/* The quantity for name, or NULL when absent. */
const struct xp_quantity *xp_resource_list_get(const struct xp_resource_list *list,
                                               const char *name);

/* Sets name to q, inserting or replacing. Does not check the name. */
int xp_resource_list_set(struct xp_resource_list *list,
                         const char *name,
                         const struct xp_quantity *q);

/*
 * list += other, entry by entry (names missing from list are added). All-or-nothing: on -ERANGE
 * (overflow, err names the resource) or -ENOMEM, list is unchanged.
 */
int xp_resource_list_add(struct xp_resource_list *list,
                         const struct xp_resource_list *other,
                         struct xp_error *err);

/*
 * list -= other. A name missing from list counts as zero, so the result may be negative; that is
 * how a caller sees over-commit. All-or-nothing like xp_resource_list_add().
 */
int xp_resource_list_sub(struct xp_resource_list *list,
                         const struct xp_resource_list *other,
                         struct xp_error *err);

/*
 * True when every quantity in request is at most the same resource in available (a missing
 * resource is zero). When ret_missing is not NULL it receives the first resource that does not
 * fit (borrowed from request), or NULL.
 */
bool xp_resource_list_fits(const struct xp_resource_list *request,
                           const struct xp_resource_list *available,
                           const char **ret_missing);

/* Entry-wise equality of values, ignoring format and zero-valued entries. */
bool xp_resource_list_equal(const struct xp_resource_list *a, const struct xp_resource_list *b);

/*
 * Checks a resource name: a qualified name ([prefix/]name); without a prefix it must be a
 * standard resource; names in the kubernetes.io domain other than the standard ones are
 * reserved. -EINVAL with the reason otherwise.
 */
int xp_resource_name_check(const char *name, struct xp_error *err);

/* cpu, memory, ephemeral-storage, storage, pods, hugepages-<size> */
bool xp_resource_name_is_standard(const char *name);

/* A resource with a domain prefix outside kubernetes.io (nvidia.com/gpu, xpool.io/accelerator). */
bool xp_resource_name_is_extended(const char *name);

/* hugepages-<size> with a positive whole size ("hugepages-2Mi"). */
bool xp_resource_name_is_hugepages(const char *name);

/*
 * False for resources that cannot be overcommitted, extended resources and huge pages: a
 * container that requests one must set its limit, and the two must be equal.
 */
bool xp_resource_name_is_overcommittable(const char *name);

/* Resources a container may request: cpu, memory, ephemeral-storage, hugepages-*, extended. */
bool xp_resource_name_is_container_resource(const char *name);
