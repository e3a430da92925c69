/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strategic merge information: which list fields merge, and by which key. Taken from the
 * patchStrategy/patchMergeKey struct tags of k8s.io/api core/v1 (Pod, Node, Namespace, Event,
 * ObjectMeta) and coordination/v1 (Lease). A list not listed here is replaced whole by a patch,
 * as in Kubernetes (Node spec.taints and Pod spec.tolerations carry no tag, for instance).
 */
#include <string.h>

#include "xpool/macro.h"
#include "xpool/patch.h"

struct list_strategy {
        const char *kind;      /* NULL: every known kind (ObjectMeta) */
        const char *path;      /* field path, "[]" for list elements */
        const char *merge_key; /* NULL: a list of primitives merged as a set */
};

/* The lists of a Container, shared by containers, initContainers and ephemeralContainers. */
#define CONTAINER_LISTS(prefix)                                                                    \
        {.kind = "Pod", .path = prefix "[].ports", .merge_key = "containerPort"},                  \
            {.kind = "Pod", .path = prefix "[].env", .merge_key = "name"},                         \
            {.kind = "Pod", .path = prefix "[].volumeMounts", .merge_key = "mountPath"},           \
        {                                                                                          \
                .kind = "Pod", .path = prefix "[].volumeDevices", .merge_key = "devicePath"        \
        }

static const struct list_strategy strategies[] = {
    /* ObjectMeta */
    {.path = "metadata.finalizers"},
    {.path = "metadata.ownerReferences", .merge_key = "uid"},

    /* Pod: PodSpec */
    {.kind = "Pod", .path = "spec.volumes", .merge_key = "name"},
    {.kind = "Pod", .path = "spec.initContainers", .merge_key = "name"},
    {.kind = "Pod", .path = "spec.containers", .merge_key = "name"},
    {.kind = "Pod", .path = "spec.ephemeralContainers", .merge_key = "name"},
    {.kind = "Pod", .path = "spec.imagePullSecrets", .merge_key = "name"},
    {.kind = "Pod", .path = "spec.hostAliases", .merge_key = "ip"},
    {.kind = "Pod", .path = "spec.topologySpreadConstraints", .merge_key = "topologyKey"},
    {.kind = "Pod", .path = "spec.schedulingGates", .merge_key = "name"},
    {.kind = "Pod", .path = "spec.resourceClaims", .merge_key = "name"},
    CONTAINER_LISTS("spec.initContainers"),
    CONTAINER_LISTS("spec.containers"),
    CONTAINER_LISTS("spec.ephemeralContainers"),
    /* Pod: PodStatus */
    {.kind = "Pod", .path = "status.conditions", .merge_key = "type"},
    {.kind = "Pod", .path = "status.podIPs", .merge_key = "ip"},
    {.kind = "Pod", .path = "status.hostIPs", .merge_key = "ip"},
    {.kind = "Pod", .path = "status.resourceClaimStatuses", .merge_key = "name"},

    /* Node */
    {.kind = "Node", .path = "spec.podCIDRs"},
    {.kind = "Node", .path = "status.conditions", .merge_key = "type"},
    {.kind = "Node", .path = "status.addresses", .merge_key = "type"},

    /* Namespace */
    {.kind = "Namespace", .path = "status.conditions", .merge_key = "type"},
};

static const char *const known_kinds[] = {"Pod", "Node", "Event", "Namespace", "Lease"};

/* apps/v1 kinds whose spec.template is a PodTemplateSpec: its lists merge as a Pod's, and their
 * status.conditions by type (their own tags in k8s.io/api apps/v1). */
static const char *const template_kinds[] = {"Deployment", "ReplicaSet", "DaemonSet"};
#define TEMPLATE_PREFIX "spec.template."

static bool template_kind(const char *kind)
{
        for (size_t i = 0; kind && i < XP_ELEMENTSOF(template_kinds); i++)
                if (strcmp(template_kinds[i], kind) == 0)
                        return true;
        return false;
}

bool xp_patch_kind_known(const char *kind)
{
        if (!kind)
                return false;
        for (size_t i = 0; i < XP_ELEMENTSOF(known_kinds); i++)
                if (strcmp(known_kinds[i], kind) == 0)
                        return true;
        return template_kind(kind);
}

bool xp_patch_list_strategy(const char *kind, const char *path, const char **ret_merge_key)
{
        if (!xp_patch_kind_known(kind) || !path)
                return false;
        if (template_kind(kind)) {
                if (strncmp(path, TEMPLATE_PREFIX, strlen(TEMPLATE_PREFIX)) == 0)
                        return xp_patch_list_strategy(
                            "Pod", path + strlen(TEMPLATE_PREFIX), ret_merge_key);
                if (strcmp(path, "status.conditions") == 0) {
                        if (ret_merge_key)
                                *ret_merge_key = "type";
                        return true;
                }
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(strategies); i++) {
                const struct list_strategy *s = &strategies[i];

                if ((!s->kind || strcmp(s->kind, kind) == 0) && strcmp(s->path, path) == 0) {
                        if (ret_merge_key)
                                *ret_merge_key = s->merge_key;
                        return true;
                }
        }
        return false;
}
