/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-apiserver's checks of a new pod's downward API references (validateObjectFieldSelector):
 * env valueFrom.fieldRef and downwardAPI volume items (and projected downwardAPI sources) name
 * a fieldPath the kubelet can fill, in its words: `Invalid value: "x": error converting
 * fieldPath: field label not supported: x` for a path no Pod has, `Unsupported value:
 * "status.phase": supported values: ...` for one it has but this place does not take.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admission.h"

/* ConvertDownwardAPIFieldLabel's paths of a v1 Pod. */
static const char *const convertible[] = {
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
    NULL,
};

/* What env and volume files take, sorted as the message lists them. */
static const char *const env_paths[] = {
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
    NULL,
};
static const char *const volume_paths[] = {
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    NULL,
};

static bool in(const char *const *set, const char *s)
{
        for (size_t i = 0; set[i]; i++)
                if (strcmp(set[i], s) == 0)
                        return true;
        return false;
}

/* The message for fieldRef ref at where (NULL: fine) into msg. */
static bool
bad_field(const json_t *ref, const char *where, const char *const *allowed, char *msg, size_t size)
{
        const char *path = json_string_value(json_object_get(ref, "fieldPath"));
        const char *version = json_string_value(json_object_get(ref, "apiVersion"));
        size_t n;

        if (!path || !*path) {
                snprintf(msg, size, "%s.fieldPath: Required value", where);
                return true;
        }
        if (version && *version && strcmp(version, "v1") != 0) {
                snprintf(
                    msg,
                    size,
                    "%s.fieldPath: Invalid value: \"%s\": error converting fieldPath: unsupported pod version: %s",
                    where,
                    path,
                    version);
                return true;
        }
        /* metadata.labels['k'] and metadata.annotations['k'] */
        n = strcspn(path, "[");
        if (path[n]) {
                if ((n == 15 && strncmp(path, "metadata.labels", n) == 0) ||
                    (n == 20 && strncmp(path, "metadata.annotations", n) == 0))
                        return false;
                snprintf(
                    msg,
                    size,
                    "%s.fieldPath: Invalid value: \"%s\": error converting fieldPath: field label does not support subscript: %s",
                    where,
                    path,
                    path);
                return true;
        }
        if (!in(convertible, path) && strcmp(path, "spec.host") != 0) {
                snprintf(
                    msg,
                    size,
                    "%s.fieldPath: Invalid value: \"%s\": error converting fieldPath: field label not supported: %s",
                    where,
                    path,
                    path);
                return true;
        }
        if (in(allowed, strcmp(path, "spec.host") == 0 ? "spec.nodeName" : path))
                return false;
        n = (size_t)snprintf(
            msg, size, "%s.fieldPath: Unsupported value: \"%s\": supported values: ", where, path);
        for (size_t i = 0; allowed[i] && n < size; i++)
                n += (size_t)snprintf(msg + n, size - n, "%s\"%s\"", i ? ", " : "", allowed[i]);
        return true;
}

static bool containers(const json_t *spec, const char *field, char *msg, size_t size)
{
        const json_t *c, *e;
        size_t i, j;

        json_array_foreach(json_object_get(spec, field), i, c)
        {
                json_array_foreach(json_object_get(c, "env"), j, e)
                {
                        const json_t *ref =
                            json_object_get(json_object_get(e, "valueFrom"), "fieldRef");
                        char where[128];

                        /* where is written only for a reference: formatting it for every
                         * variable of every pod was a tenth of the pod's admission */
                        if (!ref)
                                continue;
                        snprintf(where,
                                 sizeof(where),
                                 "spec.%s[%zu].env[%zu].valueFrom.fieldRef",
                                 field,
                                 i,
                                 j);
                        if (bad_field(ref, where, env_paths, msg, size))
                                return true;
                }
        }
        return false;
}

/* A downwardAPI volume's or projected source's items, at where. */
static bool items(const json_t *dw, const char *where, char *msg, size_t size)
{
        const json_t *item;
        size_t i;

        json_array_foreach(json_object_get(dw, "items"), i, item)
        {
                const json_t *ref = json_object_get(item, "fieldRef");
                char at[160];

                if (!ref)
                        continue;
                snprintf(at, sizeof(at), "%s.items[%zu].fieldRef", where, i);
                if (bad_field(ref, at, volume_paths, msg, size))
                        return true;
        }
        return false;
}

static bool volumes(const json_t *spec, char *msg, size_t size)
{
        const json_t *v, *src;
        size_t i, j;

        json_array_foreach(json_object_get(spec, "volumes"), i, v)
        {
                const json_t *dw = json_object_get(v, "downwardAPI");
                char where[128];

                if (dw && snprintf(where, sizeof(where), "spec.volumes[%zu].downwardAPI", i) > 0 &&
                    items(dw, where, msg, size))
                        return true;
                json_array_foreach(
                    json_object_get(json_object_get(v, "projected"), "sources"), j, src)
                {
                        dw = json_object_get(src, "downwardAPI");
                        if (!dw)
                                continue;
                        snprintf(where,
                                 sizeof(where),
                                 "spec.volumes[%zu].projected.sources[%zu].downwardAPI",
                                 i,
                                 j);
                        if (items(dw, where, msg, size))
                                return true;
                }
        }
        return false;
}

int admission_downward(const struct xp_kind *kind, const json_t *pod, struct reply *ret)
{
        const json_t *spec = json_object_get(pod, "spec");
        char msg[1024];

        if (containers(spec, "initContainers", msg, sizeof(msg)) ||
            containers(spec, "containers", msg, sizeof(msg)) || volumes(spec, msg, sizeof(msg)))
                return reply_invalid(
                    ret,
                    kind,
                    json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")),
                    msg);
        return 1;
}
