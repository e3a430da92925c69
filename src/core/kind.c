/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/poddefaults.h"

/* The table's untyped operations, each forwarding to the kind's typed codec functions. */
#define DEFINE_KIND_OPS(name, type)                                                                \
        static int name##_from_json_any(const json_t *json,                                        \
                                        const struct xp_decode_source *source,                     \
                                        unsigned flags,                                            \
                                        void **ret,                                                \
                                        struct xp_error *err)                                      \
        {                                                                                          \
                type *object;                                                                      \
                int r = xp_##name##_from_json(json, source, flags, &object, err);                  \
                                                                                                   \
                if (r >= 0)                                                                        \
                        *ret = object;                                                             \
                return r;                                                                          \
        }                                                                                          \
        static int name##_to_json_any(const void *object, json_t **ret)                            \
        {                                                                                          \
                return xp_##name##_to_json(object, ret);                                           \
        }                                                                                          \
        static int name##_validate_any(const void *object, struct xp_error *err)                   \
        {                                                                                          \
                return xp_##name##_validate(object, err);                                          \
        }                                                                                          \
        static void name##_free_any(void *object)                                                  \
        {                                                                                          \
                xp_##name##_free(object);                                                          \
        }                                                                                          \
        static struct xp_object_meta *name##_meta(void *object)                                    \
        {                                                                                          \
                return &((type *)object)->metadata;                                                \
        }

DEFINE_KIND_OPS(pod, struct xp_pod)
DEFINE_KIND_OPS(node, struct xp_node)
DEFINE_KIND_OPS(namespace, struct xp_namespace)
DEFINE_KIND_OPS(event, struct xp_event)
DEFINE_KIND_OPS(lease, struct xp_lease)

#define KIND_OPS(name)                                                                             \
        .from_json = name##_from_json_any, .to_json = name##_to_json_any,                          \
        .validate = name##_validate_any, .free = name##_free_any, .meta = name##_meta

/* kube-apiserver resets a new pod's phase to Pending, whatever the client sent, and computes
 * its QoS class (the spec's defaults came before decoding: xpool/poddefaults.h). */
static int pod_set_defaults(void *object)
{
        struct xp_pod *pod = object;
        char *qos = strdup(xp_pod_qos_class(pod));

        if (!qos)
                return -ENOMEM;
        pod->status.phase = XP_POD_PENDING;
        free(pod->status.qos_class);
        pod->status.qos_class = qos;
        return 0;
}

/* A new namespace is Active and carries the "kubernetes" finalizer, which the namespace
 * controller removes once everything in it is gone. */
static int namespace_set_defaults(void *object)
{
        struct xp_namespace *ns = object;
        char **grown;

        for (size_t i = 0; i < ns->spec.finalizers.n; i++)
                if (strcmp(ns->spec.finalizers.items[i], "kubernetes") == 0) {
                        ns->status.phase = XP_NAMESPACE_ACTIVE;
                        return 0;
                }
        grown = realloc(ns->spec.finalizers.items, (ns->spec.finalizers.n + 1) * sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        ns->spec.finalizers.items = grown;
        grown[ns->spec.finalizers.n] = strdup("kubernetes");
        if (!grown[ns->spec.finalizers.n])
                return -ENOMEM;
        ns->spec.finalizers.n++;
        ns->status.phase = XP_NAMESPACE_ACTIVE;
        return 0;
}

static const char *const pod_short_names[] = {"po", NULL};
static const char *const node_short_names[] = {"no", NULL};
static const char *const namespace_short_names[] = {"ns", NULL};
static const char *const event_short_names[] = {"ev", NULL};
static const char *const no_short_names[] = {NULL};
/* kubectl get all: the kinds Kubernetes puts in the "all" category. */
static const char *const category_all[] = {"all", NULL};

const struct xp_kind xp_kind_pod = {
    .kind = "Pod",
    .list_kind = "PodList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "pods",
    .singular = "pod",
    .short_names = pod_short_names,
    .categories = category_all,
    .namespaced = true,
    KIND_OPS(pod),
    .status_subresource = true,
    .set_defaults = pod_set_defaults,
};

const struct xp_kind xp_kind_node = {
    .kind = "Node",
    .list_kind = "NodeList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "nodes",
    .singular = "node",
    .short_names = node_short_names,
    .namespaced = false,
    KIND_OPS(node),
    .status_subresource = true,
};

const struct xp_kind xp_kind_namespace = {
    .kind = "Namespace",
    .list_kind = "NamespaceList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "namespaces",
    .singular = "namespace",
    .short_names = namespace_short_names,
    .namespaced = false,
    KIND_OPS(namespace),
    .status_subresource = true,
    .set_defaults = namespace_set_defaults,
};

const struct xp_kind xp_kind_event = {
    .kind = "Event",
    .list_kind = "EventList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "events",
    .singular = "event",
    .short_names = event_short_names,
    .namespaced = true,
    KIND_OPS(event),
};

const struct xp_kind xp_kind_lease = {
    .kind = "Lease",
    .list_kind = "LeaseList",
    .group = "coordination.k8s.io",
    .version = "v1",
    .api_version = "coordination.k8s.io/v1",
    .plural = "leases",
    .singular = "lease",
    .short_names = no_short_names,
    .namespaced = true,
    KIND_OPS(lease),
};

/* Kubernetes' PodGroup before Volcano's: kubectl takes the group discovery lists first for a
 * plural two groups serve. */
const struct xp_kind *const xp_kinds[] = {
    &xp_kind_pod,           &xp_kind_node,
    &xp_kind_namespace,     &xp_kind_event,
    &xp_kind_lease,         &xp_kind_configmap,
    &xp_kind_secret,        &xp_kind_serviceaccount,
    &xp_kind_resourcequota, &xp_kind_limitrange,
    &xp_kind_workload,      &xp_kind_workload_v1alpha2,
    &xp_kind_k8s_podgroup,  &xp_kind_podgroup,
    &xp_kind_priorityclass, &xp_kind_queue,
    &xp_kind_deployment,    &xp_kind_replicaset,
    &xp_kind_daemonset,     &xp_kind_job,
    &xp_kind_cronjob,       &xp_kind_hpa,
    &xp_kind_pdb,           &xp_kind_service,
    &xp_kind_endpoints,     &xp_kind_endpointslice,
    &xp_kind_hpa_v1,        &xp_kind_controllerrevision,
};
const size_t xp_kinds_n = XP_ELEMENTSOF(xp_kinds);

/* Room for every group of the table; a table with more groups than kinds cannot exist. */
static const char *groups[XP_ELEMENTSOF(xp_kinds) + 1];
static pthread_once_t groups_once = PTHREAD_ONCE_INIT;

static void collect_groups(void)
{
        size_t n = 0;

        for (size_t i = 0; i < xp_kinds_n; i++) {
                bool seen = false;

                for (size_t j = 0; j < n && !seen; j++)
                        seen = strcmp(groups[j], xp_kinds[i]->group) == 0;
                if (!seen)
                        groups[n++] = xp_kinds[i]->group;
        }
        groups[n] = NULL;
}

const char *const *xp_kind_groups(void)
{
        pthread_once(&groups_once, collect_groups);
        return groups;
}

bool xp_kind_has_status(const struct xp_kind *kind)
{
        return kind->status_subresource;
}

const struct xp_kind *xp_kind_by_name(const char *kind)
{
        for (size_t i = 0; kind && i < xp_kinds_n; i++)
                if (strcmp(xp_kinds[i]->kind, kind) == 0)
                        return xp_kinds[i];
        return NULL;
}

/*
 * Every request's route resolves {resource} here (several times for one path: each method's
 * route of it), so a hash of group and resource, open addressing at most half full, replaces the
 * scan of the table. The first kind of a group and resource in table order holds its slot: a
 * kind served in two versions answers as its first entry, as the scan did.
 */
#define RESOURCE_SLOTS 64
_Static_assert(XP_ELEMENTSOF(xp_kinds) * 2 <= RESOURCE_SLOTS, "the resource index is too small");
static const struct xp_kind *by_resource[RESOURCE_SLOTS];
static pthread_once_t by_resource_once = PTHREAD_ONCE_INIT;

/* FNV-1a over group, a NUL, then plural: "a" "bc" and "ab" "c" differ. */
static size_t resource_slot(const char *group, const char *plural)
{
        uint32_t h = 2166136261u;

        for (const char *p = group;; p++) {
                h = (h ^ (unsigned char)*p) * 16777619u;
                if (!*p)
                        break;
        }
        for (const char *p = plural; *p; p++)
                h = (h ^ (unsigned char)*p) * 16777619u;
        return h & (RESOURCE_SLOTS - 1);
}

static bool serves(const struct xp_kind *kind, const char *group, const char *plural)
{
        return strcmp(kind->group, group) == 0 && strcmp(xp_kind_url_plural(kind), plural) == 0;
}

static void index_resources(void)
{
        for (size_t i = 0; i < xp_kinds_n; i++) {
                const char *group = xp_kinds[i]->group, *plural = xp_kind_url_plural(xp_kinds[i]);
                size_t slot = resource_slot(group, plural);

                while (by_resource[slot] && !serves(by_resource[slot], group, plural))
                        slot = (slot + 1) & (RESOURCE_SLOTS - 1);
                if (!by_resource[slot])
                        by_resource[slot] = xp_kinds[i];
        }
}

const struct xp_kind *xp_kind_by_resource(const char *group, const char *plural)
{
        if (!group || !plural)
                return NULL;
        pthread_once(&by_resource_once, index_resources);
        for (size_t slot = resource_slot(group, plural); by_resource[slot];
             slot = (slot + 1) & (RESOURCE_SLOTS - 1))
                if (serves(by_resource[slot], group, plural))
                        return by_resource[slot];
        return NULL;
}

const struct xp_kind *xp_kind_by_api_version(const char *api_version, const char *kind)
{
        /* every entry: a kind may be served in two versions (HorizontalPodAutoscaler) */
        for (size_t i = 0; kind && api_version && i < xp_kinds_n; i++)
                if (strcmp(xp_kinds[i]->kind, kind) == 0 &&
                    strcmp(xp_kinds[i]->api_version, api_version) == 0)
                        return xp_kinds[i];
        return NULL;
}

const struct xp_kind *xp_kind_by_any_name(const char *name)
{
        for (size_t i = 0; name && i < xp_kinds_n; i++) {
                const struct xp_kind *k = xp_kinds[i];

                if (strcmp(xp_kind_url_plural(k), name) == 0 || strcmp(k->singular, name) == 0)
                        return k;
                for (const char *const *s = k->short_names; *s; s++)
                        if (strcmp(*s, name) == 0)
                                return k;
        }
        return NULL;
}
