/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-apiserver's checks of a new pod's downward API references (validateObjectFieldSelector):
 * env valueFrom.fieldRef and downwardAPI volume items (and projected downwardAPI sources) name
 * a fieldPath the kubelet can fill, in its words: `Invalid value: "x": error converting
 * fieldPath: field label not supported: x` for a path no Pod has, `Unsupported value:
 * "status.phase": supported values: ...` for one it has but this place does not take.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
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

/* What is wrong with a fieldRef, if anything. */
enum ref_fault {
        REF_FINE,
        REF_NO_PATH,
        REF_VERSION,
        REF_SUBSCRIPT,
        REF_UNKNOWN,
        REF_UNSUPPORTED,
};

static enum ref_fault ref_fault(const char *path, const char *version, const char *const *allowed)
{
        size_t n;

        if (!path || !*path)
                return REF_NO_PATH;
        if (version && *version && strcmp(version, "v1") != 0)
                return REF_VERSION;
        /* metadata.labels['k'] and metadata.annotations['k'] */
        n = strcspn(path, "[");
        if (path[n])
                return (n == 15 && strncmp(path, "metadata.labels", n) == 0) ||
                               (n == 20 && strncmp(path, "metadata.annotations", n) == 0)
                           ? REF_FINE
                           : REF_SUBSCRIPT;
        if (!in(convertible, path) && strcmp(path, "spec.host") != 0)
                return REF_UNKNOWN;
        if (in(allowed, strcmp(path, "spec.host") == 0 ? "spec.nodeName" : path))
                return REF_FINE;
        return REF_UNSUPPORTED;
}

static void ref_message(enum ref_fault fault,
                        const char *where,
                        const char *path,
                        const char *version,
                        const char *const *allowed,
                        char *msg,
                        size_t size)
{
        size_t n;

        switch (fault) {
        case REF_FINE:
        case REF_NO_PATH:
                snprintf(msg, size, "%s.fieldPath: Required value", where);
                return;
        case REF_VERSION:
                snprintf(
                    msg,
                    size,
                    "%s.fieldPath: Invalid value: \"%s\": error converting fieldPath: unsupported pod version: %s",
                    where,
                    path,
                    version);
                return;
        case REF_SUBSCRIPT:
                snprintf(
                    msg,
                    size,
                    "%s.fieldPath: Invalid value: \"%s\": error converting fieldPath: field label does not support subscript: %s",
                    where,
                    path,
                    path);
                return;
        case REF_UNKNOWN:
                snprintf(
                    msg,
                    size,
                    "%s.fieldPath: Invalid value: \"%s\": error converting fieldPath: field label not supported: %s",
                    where,
                    path,
                    path);
                return;
        case REF_UNSUPPORTED:
                n = (size_t)snprintf(msg,
                                     size,
                                     "%s.fieldPath: Unsupported value: \"%s\": supported values: ",
                                     where,
                                     path);
                for (size_t i = 0; allowed[i] && n < size; i++)
                        n += (size_t)snprintf(
                            msg + n, size - n, "%s\"%s\"", i ? ", " : "", allowed[i]);
                return;
        }
}

/*
 * Whether fieldRef ref is bad, with its message in msg. Its place is formatted from
 * where_format only then: formatting it for every reference of every pod (the kube-api-access
 * volume has one) was about a third of this admission.
 */
static bool __attribute__((format(printf, 5, 6))) bad_field(const json_t *ref,
                                                            const char *const *allowed,
                                                            char *msg,
                                                            size_t size,
                                                            const char *where_format,
                                                            ...)
{
        const char *path = json_string_value(json_object_get(ref, "fieldPath"));
        const char *version = json_string_value(json_object_get(ref, "apiVersion"));
        enum ref_fault fault = ref_fault(path, version, allowed);
        char where[160];
        va_list ap;

        if (fault == REF_FINE)
                return false;
        va_start(ap, where_format);
        vsnprintf(where, sizeof(where), where_format, ap);
        va_end(ap);
        ref_message(fault, where, path, version, allowed, msg, size);
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

                        if (ref && bad_field(ref,
                                             env_paths,
                                             msg,
                                             size,
                                             "spec.%s[%zu].env[%zu].valueFrom.fieldRef",
                                             field,
                                             i,
                                             j))
                                return true;
                }
        }
        return false;
}

/* A downwardAPI volume's (source == SIZE_MAX) or projected source's items, of volume v. */
static bool items(const json_t *dw, size_t v, size_t source, char *msg, size_t size)
{
        const json_t *item;
        size_t i;

        json_array_foreach(json_object_get(dw, "items"), i, item)
        {
                const json_t *ref = json_object_get(item, "fieldRef");

                if (!ref)
                        continue;
                if (source == SIZE_MAX
                        ? bad_field(ref,
                                    volume_paths,
                                    msg,
                                    size,
                                    "spec.volumes[%zu].downwardAPI.items[%zu].fieldRef",
                                    v,
                                    i)
                        : bad_field(
                              ref,
                              volume_paths,
                              msg,
                              size,
                              "spec.volumes[%zu].projected.sources[%zu].downwardAPI.items[%zu].fieldRef",
                              v,
                              source,
                              i))
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

                if (dw && items(dw, i, SIZE_MAX, msg, size))
                        return true;
                json_array_foreach(
                    json_object_get(json_object_get(v, "projected"), "sources"), j, src)
                {
                        dw = json_object_get(src, "downwardAPI");
                        if (dw && items(dw, i, j, msg, size))
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
