/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ResourceQuota admission of a new pod (xpool/registry.h): what the pod asks for against each
 * quota of its namespace, with the usage of the pods already there (quota_ledger.c), in
 * Kubernetes' words ("exceeded quota: NAME, requested: ..., used: ..., limited: ...").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/doc.h"
#include "xpool/quantity.h"
#include "xpool/resource.h"
#include "xpool/store.h"

bool registry_quantity_of(const json_t *value, struct xp_quantity *ret)
{
        if (json_is_string(value))
                return xp_quantity_parse(json_string_value(value), ret, NULL) >= 0;
        if (json_is_number(value))
                return xp_quantity_from_double(json_number_value(value), ret, NULL) >= 0;
        return false;
}

int registry_quota_add(struct xp_resource_list *list, const char *name, const struct xp_quantity *q)
{
        const struct xp_quantity *have = xp_resource_list_get(list, name);
        struct xp_quantity sum;

        if (!have)
                return xp_resource_list_set(list, name, q);
        if (xp_quantity_add(have, q, &sum) < 0)
                return -ERANGE;
        return xp_resource_list_set(list, name, &sum);
}

/* The resources of a container's requests or limits map under prefix ("requests.", "limits."),
 * and cpu/memory requests under their bare names too, as quotas name them. */
static int add_map(struct xp_resource_list *usage, const json_t *map, const char *prefix)
{
        const char *key;
        json_t *value;

        json_object_foreach((json_t *)map, key, value)
        {
                struct xp_quantity q;
                char name[300];
                int r;

                if (!registry_quantity_of(value, &q))
                        continue; /* validation refuses it */
                snprintf(name, sizeof(name), "%s%s", prefix, key);
                r = registry_quota_add(usage, name, &q);
                if (r >= 0 && strcmp(prefix, "requests.") == 0 && !strchr(key, '/'))
                        r = registry_quota_add(usage, key, &q);
                if (r < 0)
                        return r;
        }
        return 0;
}

int xp_registry_pod_usage(const json_t *pod, struct xp_resource_list *ret)
{
        const json_t *containers = xp_json_at(pod, "spec.containers");
        struct xp_quantity one;
        const json_t *c;
        size_t i;
        int r = xp_quantity_parse("1", &one, NULL);

        if (r >= 0)
                r = registry_quota_add(ret, "pods", &one);
        if (r >= 0)
                r = registry_quota_add(ret, "count/pods", &one);
        json_array_foreach(containers, i, c)
        {
                if (r >= 0)
                        r = add_map(ret, xp_json_object_at(c, "resources.requests"), "requests.");
                if (r >= 0)
                        r = add_map(ret, xp_json_object_at(c, "resources.limits"), "limits.");
        }
        if (r < 0)
                xp_resource_list_done(ret);
        return r;
}

bool registry_pod_holds_quota(const json_t *pod)
{
        const char *phase = xp_json_str_at(pod, "status.phase", "");

        return strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0;
}

int xp_registry_namespace_usage(const json_t *pods, struct xp_resource_list *ret)
{
        const json_t *pod;
        size_t i;

        json_array_foreach(pods, i, pod)
        {
                struct xp_resource_list one = {0};
                int r;

                if (!registry_pod_holds_quota(pod))
                        continue;
                r = xp_registry_pod_usage(pod, &one);
                if (r >= 0)
                        r = xp_resource_list_add(ret, &one, NULL);
                xp_resource_list_done(&one);
                if (r < 0) {
                        xp_resource_list_done(ret);
                        return r;
                }
        }
        return 0;
}

/* "a=1,b=2" of the names in names, from list (0 when absent). */
static void
print_list(FILE *f, const struct xp_resource_list *names, const struct xp_resource_list *list)
{
        for (size_t i = 0; i < names->n; i++) {
                const struct xp_quantity *q = xp_resource_list_get(list, names->items[i].name);
                char text[XP_QUANTITY_STRING_MAX];

                fprintf(f,
                        "%s%s=%s",
                        i ? "," : "",
                        names->items[i].name,
                        q ? xp_quantity_format(q, text) : "0");
        }
}

char *registry_quota_exceeded(const char *quota,
                              const json_t *hard,
                              const struct xp_resource_list *requested,
                              const struct xp_resource_list *used)
{
        struct xp_resource_list over = {0};
        const char *key;
        json_t *value;
        char *text = NULL;
        size_t len;
        FILE *f;

        json_object_foreach((json_t *)hard, key, value)
        {
                const struct xp_quantity *req = xp_resource_list_get(requested, key);
                const struct xp_quantity *u = xp_resource_list_get(used, key);
                struct xp_quantity limit, total;

                if (!req || xp_quantity_is_zero(req) || !registry_quantity_of(value, &limit))
                        continue;
                total = *req;
                if (u && xp_quantity_add(u, req, &total) < 0)
                        continue;
                if (xp_quantity_cmp(&total, &limit) > 0)
                        xp_resource_list_set(&over, key, &limit);
        }
        if (over.n == 0)
                return NULL;
        f = open_memstream(&text, &len);
        if (f) {
                fprintf(f, "exceeded quota: %s, requested: ", quota);
                print_list(f, &over, requested);
                fputs(", used: ", f);
                print_list(f, &over, used);
                fputs(", limited: ", f);
                print_list(f, &over, &over);
                fclose(f);
        }
        xp_resource_list_done(&over);
        return text;
}

int xp_registry_quota_check(const json_t *quotas,
                            const json_t *pods,
                            const json_t *pod,
                            struct xp_error *err)
{
        struct xp_resource_list requested = {0};
        const json_t *quota;
        size_t i;
        int r = xp_registry_pod_usage(pod, &requested);

        json_array_foreach(quotas, i, quota)
        {
                struct xp_resource_list used = {0};
                char *message;

                if (r < 0)
                        break;
                if (!xp_registry_quota_matches(quota, pod))
                        continue;
                r = xp_registry_quota_usage(quota, pods, &used);
                message = r < 0
                              ? NULL
                              : registry_quota_exceeded(xp_json_str_at(quota, "metadata.name", ""),
                                                        xp_json_object_at(quota, "spec.hard"),
                                                        &requested,
                                                        &used);
                if (message) {
                        r = xp_errorf(err, -EDQUOT, "%s", message);
                        free(message);
                }
                xp_resource_list_done(&used);
        }
        xp_resource_list_done(&requested);
        return r < 0 ? r : 0;
}

bool registry_quotas_present(struct xp_registry *registry, const char *namespace)
{
        json_t *quotas = NULL;
        bool present;

        /* a list that fails counts as present: the lock costs a little, a missed quota more */
        if (kind_cache_list(&registry->quotas, registry->store, namespace, &quotas, NULL) < 0)
                return true;
        present = json_array_size(quotas) > 0;
        json_decref(quotas);
        return present;
}

int xp_registry_quota_admit(struct xp_registry *registry,
                            const char *namespace,
                            const json_t *pod,
                            struct xp_error *err)
{
        json_t *quotas = NULL;
        int r = kind_cache_list(
            &registry->quotas, xp_registry_store(registry), namespace, &quotas, err);

        /* against the running usage (quota_ledger.c): a create costs the same in a namespace of
         * 5 pods as of 5000 */
        if (r >= 0 && json_array_size(quotas) > 0)
                r = registry_quota_ledger_check(registry, namespace, quotas, pod, err);
        else if (r >= 0) /* its last quota deleted, or the namespace: no ledger kept for it */
                registry_quota_ledger_forget(registry, namespace);
        json_decref(quotas);
        return r < 0 ? r : 0;
}
