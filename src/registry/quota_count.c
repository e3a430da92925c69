/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object count quotas (xpool/registry.h): `count/<resource>.<group>` (`count/configmaps` for the
 * core group) for any namespaced kind, and the older names kube-apiserver still counts by
 * (configmaps, secrets, services, persistentvolumeclaims, replicationcontrollers,
 * resourcequotas, services.nodeports, services.loadbalancers). Pods are quota.c's. A quota with
 * scopes counts pods only, as Kubernetes' scopes apply to pods.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/quantity.h"
#include "xpool/registry.h"
#include "xpool/resource.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

static const char *const legacy[] = {
    "configmaps",
    "secrets",
    "services",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
};

/* Ports of a Service that take a node port. */
static int64_t node_ports(const json_t *service)
{
        const char *type = xp_json_str_at(service, "spec.type", "ClusterIP");

        if (!xp_streq0(type, "NodePort") && !xp_streq0(type, "LoadBalancer"))
                return 0;
        return (int64_t)json_array_size(xp_json_at(service, "spec.ports"));
}

/* What object (of kind) counts for under quota resource name: 0 when name is not about kind. */
static int64_t counted(const struct xp_kind *kind, const char *name, const json_t *object)
{
        char own[256];

        if (kind == &xp_kind_pod)
                return 0; /* quota.c's */
        snprintf(own,
                 sizeof(own),
                 "count/%s%s%s",
                 xp_kind_url_plural(kind),
                 kind->group[0] ? "." : "",
                 kind->group);
        if (xp_streq0(name, own))
                return 1;
        for (size_t i = 0; !kind->group[0] && i < sizeof(legacy) / sizeof(legacy[0]); i++)
                if (xp_streq0(kind->plural, legacy[i]) && xp_streq0(name, legacy[i]))
                        return 1;
        if (kind == &xp_kind_service && xp_streq0(name, "services.nodeports"))
                return node_ports(object);
        if (kind == &xp_kind_service && xp_streq0(name, "services.loadbalancers"))
                return xp_streq0(xp_json_str_at(object, "spec.type", ""), "LoadBalancer");
        return 0;
}

static bool has_scopes(const json_t *quota)
{
        return json_array_size(xp_json_at(quota, "spec.scopes")) > 0 ||
               xp_json_at(quota, "spec.scopeSelector");
}

/* ret += what one object counts for under each of quota's resources. */
static int add_counts(const struct xp_kind *kind,
                      const json_t *quota,
                      const json_t *object,
                      struct xp_resource_list *ret)
{
        const char *name;
        json_t *value;
        int r = 0;

        json_object_foreach((json_t *)xp_json_object_at(quota, "spec.hard"), name, value)
        {
                int64_t n = counted(kind, name, object);
                struct xp_quantity q = xp_quantity_from_int(n);

                (void)value;
                if (n > 0 && r >= 0)
                        r = registry_quota_add(ret, name, &q);
        }
        return r;
}

int xp_registry_object_usage(const struct xp_kind *kind,
                             const json_t *quota,
                             const json_t *objects,
                             struct xp_resource_list *ret)
{
        const json_t *object;
        size_t i;
        int r = 0;

        if (has_scopes(quota))
                return 0;
        json_array_foreach(objects, i, object)
        {
                if (r >= 0)
                        r = add_counts(kind, quota, object, ret);
        }
        return r;
}

/* What object asks of quota: 1 when it asks nothing there. */
static int requested_of(const struct xp_kind *kind,
                        const json_t *quota,
                        const json_t *object,
                        struct xp_resource_list *ret)
{
        int r;

        if (has_scopes(quota))
                return 1;
        r = add_counts(kind, quota, object, ret);
        return r < 0 ? r : ret->n == 0;
}

/* One quota's word on object: 0, -EDQUOT with err, -errno. objects: listed on first need. */
static int check_one(struct xp_registry *registry,
                     const struct xp_kind *kind,
                     const char *namespace,
                     const json_t *quota,
                     const json_t *object,
                     json_t **objects,
                     struct xp_error *err)
{
        struct xp_resource_list requested = {0}, used = {0};
        uint64_t version;
        char *message = NULL;
        int r = requested_of(kind, quota, object, &requested);

        if (r == 0 && !*objects)
                r = xp_store_list(
                    xp_registry_store(registry), kind->plural, namespace, objects, &version, err);
        if (r == 0)
                r = xp_registry_object_usage(kind, quota, *objects, &used);
        if (r == 0)
                message = registry_quota_exceeded(xp_json_str_at(quota, "metadata.name", ""),
                                                  xp_json_object_at(quota, "spec.hard"),
                                                  &requested,
                                                  &used);
        if (message)
                r = xp_errorf(err, -EDQUOT, "%s", message);
        free(message);
        xp_resource_list_done(&requested);
        xp_resource_list_done(&used);
        return r < 0 ? r : 0;
}

int xp_registry_quota_count_admit(struct xp_registry *registry,
                                  const struct xp_kind *kind,
                                  const char *namespace,
                                  const json_t *object,
                                  struct xp_error *err)
{
        json_t *quotas = NULL, *objects = NULL;
        const json_t *quota;
        size_t i;
        int r;

        if (!kind->namespaced || kind == &xp_kind_pod)
                return 0;
        r = kind_cache_list(
            &registry->quotas, xp_registry_store(registry), namespace, &quotas, err);
        json_array_foreach(quotas, i, quota)
        {
                if (r < 0)
                        break;
                r = check_one(registry, kind, namespace, quota, object, &objects, err);
        }
        json_decref(quotas);
        json_decref(objects);
        return r;
}

const struct xp_kind *xp_registry_quota_counted_kind(const char *name)
{
        char resource[256];
        const char *dot;

        if (xp_streq0(name, "services.nodeports") || xp_streq0(name, "services.loadbalancers"))
                return &xp_kind_service;
        for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++)
                if (xp_streq0(name, legacy[i]))
                        return xp_kind_by_resource("", legacy[i]);
        if (strncmp(name, "count/", 6) != 0)
                return NULL;
        name += 6;
        dot = strchr(name, '.');
        snprintf(
            resource, sizeof(resource), "%.*s", dot ? (int)(dot - name) : (int)strlen(name), name);
        return xp_kind_by_resource(dot ? dot + 1 : "", resource);
}
