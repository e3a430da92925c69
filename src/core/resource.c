/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/array.h"
#include "xpool/names.h"
#include "xpool/resource.h"
#include "xpool/strutil.h"

#define ENTRY_SIZE sizeof(struct xp_resource)
#define KEY_OFFSET offsetof(struct xp_resource, name)

void xp_resource_list_done(struct xp_resource_list *list)
{
        for (size_t i = 0; i < list->n; i++)
                free(list->items[i].name);
        free(list->items);
        list->items = NULL;
        list->n = 0;
}

int xp_resource_list_copy(const struct xp_resource_list *src, struct xp_resource_list *ret)
{
        struct xp_resource_list copy = {0};

        if (src->n == 0)
                return 0;
        copy.items = calloc(src->n, ENTRY_SIZE);
        if (!copy.items)
                return -ENOMEM;
        for (size_t i = 0; i < src->n; i++) {
                copy.items[i].name = strdup(src->items[i].name);
                copy.items[i].quantity = src->items[i].quantity;
                copy.n = i + 1;
                if (!copy.items[i].name) {
                        xp_resource_list_done(&copy);
                        return -ENOMEM;
                }
        }
        *ret = copy;
        return 0;
}

const struct xp_quantity *xp_resource_list_get(const struct xp_resource_list *list,
                                               const char *name)
{
        bool found;
        size_t i = xp_sorted_find(list->items, list->n, ENTRY_SIZE, KEY_OFFSET, name, &found);

        return found ? &list->items[i].quantity : NULL;
}

int xp_resource_list_set(struct xp_resource_list *list,
                         const char *name,
                         const struct xp_quantity *q)
{
        struct xp_resource *slot;
        char *name_copy;
        bool found;
        size_t i = xp_sorted_find(list->items, list->n, ENTRY_SIZE, KEY_OFFSET, name, &found);

        if (found) {
                list->items[i].quantity = *q;
                return 0;
        }
        name_copy = strdup(name);
        slot = name_copy ? xp_array_insert((void **)&list->items, &list->n, ENTRY_SIZE, i) : NULL;
        if (!slot) {
                free(name_copy);
                return -ENOMEM;
        }
        slot->name = name_copy;
        slot->quantity = *q;
        return 0;
}

/* Computes into a copy and swaps it in, so a failure half-way leaves list as it was. */
static int
combine(struct xp_resource_list *list,
        const struct xp_resource_list *other,
        int (*op)(const struct xp_quantity *, const struct xp_quantity *, struct xp_quantity *),
        const char *verb,
        struct xp_error *err)
{
        struct xp_resource_list result = {0};
        int r = xp_resource_list_copy(list, &result);

        if (r < 0)
                return r;
        for (size_t i = 0; i < other->n; i++) {
                static const struct xp_quantity zero = {0};
                const struct xp_quantity *have =
                    xp_resource_list_get(&result, other->items[i].name);
                struct xp_quantity sum;

                if (op(have ? have : &zero, &other->items[i].quantity, &sum) < 0) {
                        char q[XP_QUOTE_MAX];

                        xp_resource_list_done(&result);
                        return xp_errorf(err,
                                         -ERANGE,
                                         "%s %s leaves the range of quantities",
                                         verb,
                                         xp_quote(other->items[i].name, q));
                }
                r = xp_resource_list_set(&result, other->items[i].name, &sum);
                if (r < 0) {
                        xp_resource_list_done(&result);
                        return r;
                }
        }
        xp_resource_list_done(list);
        *list = result;
        return 0;
}

int xp_resource_list_add(struct xp_resource_list *list,
                         const struct xp_resource_list *other,
                         struct xp_error *err)
{
        return combine(list, other, xp_quantity_add, "adding", err);
}

int xp_resource_list_sub(struct xp_resource_list *list,
                         const struct xp_resource_list *other,
                         struct xp_error *err)
{
        return combine(list, other, xp_quantity_sub, "subtracting", err);
}

bool xp_resource_list_fits(const struct xp_resource_list *request,
                           const struct xp_resource_list *available,
                           const char **ret_missing)
{
        static const struct xp_quantity zero = {0};

        for (size_t i = 0; i < request->n; i++) {
                const struct xp_quantity *have =
                    xp_resource_list_get(available, request->items[i].name);

                if (xp_quantity_cmp(&request->items[i].quantity, have ? have : &zero) > 0) {
                        if (ret_missing)
                                *ret_missing = request->items[i].name;
                        return false;
                }
        }
        if (ret_missing)
                *ret_missing = NULL;
        return true;
}

static bool covers(const struct xp_resource_list *a, const struct xp_resource_list *b)
{
        static const struct xp_quantity zero = {0};

        for (size_t i = 0; i < a->n; i++) {
                const struct xp_quantity *other = xp_resource_list_get(b, a->items[i].name);

                if (xp_quantity_cmp(&a->items[i].quantity, other ? other : &zero) != 0)
                        return false;
        }
        return true;
}

bool xp_resource_list_equal(const struct xp_resource_list *a, const struct xp_resource_list *b)
{
        return covers(a, b) && covers(b, a);
}

static const char *const standard_names[] = {
    XP_RESOURCE_CPU,
    XP_RESOURCE_MEMORY,
    XP_RESOURCE_EPHEMERAL_STORAGE,
    "storage",
    XP_RESOURCE_PODS,
};

bool xp_resource_name_is_hugepages(const char *name)
{
        struct xp_quantity size;

        /* the page size: a positive whole number of bytes, "2Mi" or "1Gi" */
        return strncmp(name, "hugepages-", 10) == 0 &&
               xp_quantity_parse(name + 10, &size, NULL) >= 0 && xp_quantity_sign(&size) > 0 &&
               xp_quantity_is_integer(&size);
}

bool xp_resource_name_is_standard(const char *name)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(standard_names); i++)
                if (strcmp(name, standard_names[i]) == 0)
                        return true;
        return xp_resource_name_is_hugepages(name);
}

static bool in_kubernetes_domain(const char *name, size_t prefix_len)
{
        static const char domain[] = "kubernetes.io";
        size_t dlen = sizeof(domain) - 1;

        if (prefix_len == dlen)
                return strncmp(name, domain, dlen) == 0;
        return prefix_len > dlen && name[prefix_len - dlen - 1] == '.' &&
               strncmp(name + prefix_len - dlen, domain, dlen) == 0;
}

bool xp_resource_name_is_extended(const char *name)
{
        const char *slash = strchr(name, '/');

        return slash && !in_kubernetes_domain(name, (size_t)(slash - name)) &&
               strncmp(name, "requests.", 9) != 0 && xp_check_qualified_name(name, NULL) == 0;
}

bool xp_resource_name_is_overcommittable(const char *name)
{
        return !xp_resource_name_is_extended(name) && !xp_resource_name_is_hugepages(name);
}

bool xp_resource_name_is_container_resource(const char *name)
{
        return strcmp(name, XP_RESOURCE_CPU) == 0 || strcmp(name, XP_RESOURCE_MEMORY) == 0 ||
               strcmp(name, XP_RESOURCE_EPHEMERAL_STORAGE) == 0 ||
               xp_resource_name_is_hugepages(name) || xp_resource_name_is_extended(name);
}

int xp_resource_name_check(const char *name, struct xp_error *err)
{
        char q[XP_QUOTE_MAX];
        const char *slash;
        int r = xp_check_qualified_name(name, err);

        if (r < 0)
                return r;
        slash = strchr(name, '/');
        if (!slash) {
                if (!xp_resource_name_is_standard(name))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "Invalid value: %s: a name without a domain must be a standard resource (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>); extended resources need a domain, e.g. \"vendor.com/npu\"",
                            xp_quote(name, q));
                return 0;
        }
        if (in_kubernetes_domain(name, (size_t)(slash - name)))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "Invalid value: %s: the kubernetes.io domain is reserved for Kubernetes' own resources",
                    xp_quote(name, q));
        return 0;
}
