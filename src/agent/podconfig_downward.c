/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The downward API (podconfig.h): a pod's own fields and its containers' resources as the
 * kubelet gives them to env valueFrom (fieldRef, resourceFieldRef) and to downwardAPI volume
 * files (the labels and annotations files in its fieldpath.FormatMap form). Pure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podconfig.h"
#include "xpool/macro.h"
#include "xpool/object.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"

static const char *or_empty(const char *s)
{
        return s ? s : "";
}

static const char *host_ip(const struct xp_pod *pod, const struct xp_node *node)
{
        if (node)
                for (size_t i = 0; i < node->status.addresses.n; i++)
                        if (xp_streq0(node->status.addresses.items[i].type, "InternalIP"))
                                return node->status.addresses.items[i].address;
        return pod->status.host_ip;
}

/* metadata.labels['key'] -> key, or NULL when path is not of that form. */
static char *subscript(const char *path, const char *prefix)
{
        size_t n = strlen(prefix), len = strlen(path);

        if (strncmp(path, prefix, n) != 0 || strncmp(path + n, "['", 2) != 0 || len < n + 4 ||
            strcmp(path + len - 2, "']") != 0)
                return NULL;
        return strndup(path + n + 2, len - n - 4);
}

static const struct xp_container *find_container(const struct xp_pod *pod, const char *name)
{
        for (size_t i = 0; i < pod->spec.containers.n; i++)
                if (xp_streq0(pod->spec.containers.items[i].name, name))
                        return &pod->spec.containers.items[i];
        for (size_t i = 0; i < pod->spec.init_containers.n; i++)
                if (xp_streq0(pod->spec.init_containers.items[i].name, name))
                        return &pod->spec.init_containers.items[i];
        return NULL;
}

/* limits.cpu and the like as the kubelet computes them: ceil(value / divisor), a missing limit
 * is the node's allocatable, a missing request the limit (as API defaulting makes it). */
int xp_downward_resource(const struct xp_pod *pod,
                         const struct xp_container *self,
                         const struct xp_node *node,
                         const json_t *ref,
                         const char *where,
                         char **ret,
                         struct xp_error *err)
{
        const char *res = json_string_value(json_object_get(ref, "resource"));
        const char *cname = json_string_value(json_object_get(ref, "containerName"));
        const char *div_text = json_string_value(json_object_get(ref, "divisor"));
        const struct xp_container *c = self;
        const struct xp_quantity *q = NULL;
        struct xp_quantity div = xp_quantity_from_int(1);
        int64_t qm = 0, dm;
        bool limits;
        const char *name;

        if (!res)
                return xp_errorf(err, -EINVAL, "%s.resourceFieldRef.resource: missing", where);
        if (strncmp(res, "limits.", 7) == 0)
                limits = true;
        else if (strncmp(res, "requests.", 9) == 0)
                limits = false;
        else
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s.resourceFieldRef.resource: \"%s\" is not supported (limits.cpu, limits.memory, limits.ephemeral-storage, requests.*)",
                    where,
                    res);
        name = res + (limits ? 7 : 9);
        if (strcmp(name, XP_RESOURCE_CPU) != 0 && strcmp(name, XP_RESOURCE_MEMORY) != 0 &&
            strcmp(name, XP_RESOURCE_EPHEMERAL_STORAGE) != 0)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s.resourceFieldRef.resource: \"%s\" is not supported (limits.cpu, limits.memory, limits.ephemeral-storage, requests.*)",
                    where,
                    res);
        if (cname && *cname && !(c = find_container(pod, cname)))
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s.resourceFieldRef.containerName: no container \"%s\"",
                                 where,
                                 cname);
        if (!c)
                return xp_errorf(
                    err, -EINVAL, "%s.resourceFieldRef.containerName: required", where);
        if (div_text && xp_quantity_parse(div_text, &div, NULL) < 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s.resourceFieldRef.divisor: \"%s\" is not a quantity",
                                 where,
                                 div_text);
        if (!limits)
                q = xp_resource_list_get(&c->resources.requests, name);
        if (!q)
                q = xp_resource_list_get(&c->resources.limits, name);
        if (!q && limits && node)
                q = xp_resource_list_get(&node->status.allocatable, name);
        if ((q && xp_quantity_to_milli(q, &qm) < 0) || xp_quantity_to_milli(&div, &dm) < 0 ||
            dm <= 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s.resourceFieldRef: %s or its divisor is out of range",
                                 where,
                                 res);
        return asprintf(ret, "%" PRId64, qm / dm + (qm % dm > 0)) < 0 ? -ENOMEM : 0;
}

/* A map as the kubelet writes it into a labels or annotations file: key="value" lines sorted by
 * key (Go's %q quoting), without a final newline. */
static char *format_map(const struct xp_strmap *m)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        if (!f)
                return NULL;
        for (size_t i = 0; i < m->n; i++) {
                fprintf(f, "%s%s=\"", i ? "\n" : "", m->items[i].key);
                for (const unsigned char *c = (const unsigned char *)or_empty(m->items[i].value);
                     *c;
                     c++) {
                        if (*c == '"' || *c == '\\')
                                fprintf(f, "\\%c", *c);
                        else if (*c == '\n')
                                fputs("\\n", f);
                        else if (*c == '\t')
                                fputs("\\t", f);
                        else if (*c == '\r')
                                fputs("\\r", f);
                        else if (*c < 0x20 || *c == 0x7f)
                                fprintf(f, "\\x%02x", *c);
                        else
                                fputc(*c, f);
                }
                fputc('"', f);
        }
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

int xp_downward_field(
    const struct xp_pod *pod, const struct xp_node *node, const char *path, bool volume, char **ret)
{
        _cleanup_free_ char *key = NULL;
        const char *v;

        *ret = NULL;
        if (strcmp(path, "metadata.name") == 0)
                v = pod->metadata.name;
        else if (strcmp(path, "metadata.namespace") == 0)
                v = pod->metadata.namespace;
        else if (strcmp(path, "metadata.uid") == 0)
                v = pod->metadata.uid;
        else if ((key = subscript(path, "metadata.labels")))
                v = xp_strmap_get(&pod->metadata.labels, key);
        else if ((key = subscript(path, "metadata.annotations")))
                v = xp_strmap_get(&pod->metadata.annotations, key);
        else if (volume && strcmp(path, "metadata.labels") == 0)
                return (*ret = format_map(&pod->metadata.labels)) ? 0 : -ENOMEM;
        else if (volume && strcmp(path, "metadata.annotations") == 0)
                return (*ret = format_map(&pod->metadata.annotations)) ? 0 : -ENOMEM;
        else if (volume)
                return -EINVAL; /* a volume's file is written once per change, not per start */
        else if (strcmp(path, "spec.nodeName") == 0)
                v = pod->spec.node_name;
        else if (strcmp(path, "spec.serviceAccountName") == 0)
                v = json_string_value(json_object_get(pod->spec.extra, "serviceAccountName"));
        else if (strcmp(path, "status.hostIP") == 0 || strcmp(path, "status.hostIPs") == 0)
                v = host_ip(pod, node); /* one address family: the list is that one */
        else if (strcmp(path, "status.podIP") == 0 || strcmp(path, "status.podIPs") == 0)
                /* the pod's own address once its network is set up (the agent puts it in the
                 * pod's status before the launch), else the node's (hostNetwork) */
                v = pod->status.pod_ip ? pod->status.pod_ip : host_ip(pod, node);
        else
                return -EINVAL;
        *ret = strdup(or_empty(v));
        return *ret ? 0 : -ENOMEM;
}
