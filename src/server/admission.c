/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admission: NodeRestriction for node tokens and the bound pod's nodeName (admission.h). The
 * label rules are Kubernetes' own: the NodeRestriction admission plugin's forbidden label
 * namespaces and the kubelet's allowed labels (k8s.io/kubelet/pkg/apis well-known labels).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "auth.h"
#include "xpool/macro.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"

#define LABELS_SHOWN 64 /* forbidden labels named in one answer */

/* The labels a kubelet sets on its own Node. */
static const char *const kubelet_labels[] = {
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
};

/* Whether the prefix of key before its '/' (none: "") is domain or a subdomain of it. */
static bool in_namespace(const char *key, const char *domain)
{
        const char *slash = strchr(key, '/');
        size_t len = slash ? (size_t)(slash - key) : 0, dlen = strlen(domain);

        if (len == dlen)
                return strncmp(key, domain, len) == 0;
        return len > dlen && key[len - dlen - 1] == '.' &&
               strncmp(key + len - dlen, domain, dlen) == 0;
}

static bool is_kubelet_label(const char *key)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(kubelet_labels); i++)
                if (strcmp(key, kubelet_labels[i]) == 0)
                        return true;
        return in_namespace(key, "kubelet.kubernetes.io") ||
               in_namespace(key, "node.kubernetes.io");
}

bool admission_node_label_forbidden(const char *key)
{
        bool kubernetes = in_namespace(key, "kubernetes.io") || in_namespace(key, "k8s.io");

        return in_namespace(key, "node-restriction.kubernetes.io") ||
               (kubernetes && !is_kubelet_label(key));
}

static const json_t *member(const json_t *object, const char *a, const char *b)
{
        const json_t *v = json_object_get(object, a);

        return b ? json_object_get(v, b) : v;
}

/* A list that is absent or null is empty, as Kubernetes' semantic equality has it. */
static bool same_list(const json_t *a, const json_t *b)
{
        bool a_empty = !json_is_array(a) || json_array_size(a) == 0;
        bool b_empty = !json_is_array(b) || json_array_size(b) == 0;

        return (a_empty && b_empty) || json_equal(a, b);
}

static int compare_keys(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Adds key to keys (up to LABELS_SHOWN) when a node may not change it. */
static void note(const char *key, const char **keys, size_t *n)
{
        if (*n < LABELS_SHOWN && admission_node_label_forbidden(key))
                keys[(*n)++] = key;
}

/*
 * The labels added, removed or changed from before (NULL for a create) to after that a node
 * may not touch, sorted and joined with ", " into buf: their count.
 */
static size_t forbidden_changes(const json_t *before, const json_t *after, char *buf, size_t size)
{
        const char *keys[LABELS_SHOWN], *key;
        json_t *value;
        size_t n = 0, used = 0;

        json_object_foreach((json_t *)after, key, value)
        {
                if (!json_equal(value, json_object_get(before, key)))
                        note(key, keys, &n);
        }
        json_object_foreach((json_t *)before, key, value)
        {
                if (!json_object_get(after, key))
                        note(key, keys, &n);
        }
        qsort(keys, n, sizeof(*keys), compare_keys);
        buf[0] = '\0';
        for (size_t i = 0; i < n && used < size; i++) {
                int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", keys[i]);

                if (w < 0)
                        break;
                used += (size_t)w;
        }
        return n;
}

static int forbid(struct reply *ret, const char *name, const char *fmt, ...) _printf_(3, 4);

static int forbid(struct reply *ret, const char *name, const char *fmt, ...)
{
        char why[1536];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        return reply_status(
            ret, 403, "Forbidden", name, "nodes", "nodes \"%s\" is forbidden: %s", name, why);
}

/* NodeRestriction's rules for a node's writes to its own Node (authorisation checked the name). */
static int
restrict_node(const char *node, const json_t *stored, const json_t *object, struct reply *ret)
{
        const char *name = json_string_value(member(object, "metadata", "name"));
        const json_t *config = member(object, "spec", "configSource");
        char labels[1024];

        if (!name)
                name = "";
        if (!stored) {
                if (config && !json_is_null(config))
                        return forbid(
                            ret,
                            name,
                            "node \"%s\" is not allowed to create pods with a non-nil configSource",
                            node);
                if (forbidden_changes(
                        NULL, member(object, "metadata", "labels"), labels, sizeof(labels)))
                        return forbid(ret,
                                      name,
                                      "node \"%s\" is not allowed to set the following labels: %s",
                                      node,
                                      labels);
                return 1;
        }
        if (config && !json_is_null(config) &&
            !json_equal(config, member(stored, "spec", "configSource")))
                return forbid(
                    ret,
                    name,
                    "node \"%s\" is not allowed to update configSource to a new non-nil configSource",
                    node);
        if (!same_list(member(stored, "spec", "taints"), member(object, "spec", "taints")))
                return forbid(ret, name, "node \"%s\" is not allowed to modify taints", node);
        if (forbidden_changes(member(stored, "metadata", "labels"),
                              member(object, "metadata", "labels"),
                              labels,
                              sizeof(labels)))
                return forbid(ret, name, "is not allowed to modify labels: %s", labels);
        return 1;
}

/* ValidatePodUpdate's rules (xp_registry_pod_update_check()), answered 422 Invalid. */
static int pod_update(const struct xp_kind *kind,
                      const json_t *stored,
                      const json_t *object,
                      struct reply *ret)
{
        const char *name = json_string_value(member(object, "metadata", "name"));
        struct xp_error err = {0};
        int r = xp_registry_pod_update_check(stored, object, &err);

        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_invalid(ret, kind, name, xp_error_message(&err));
        return 1;
}

int admission_check(const struct request *req,
                    const struct xp_kind *kind,
                    const json_t *stored,
                    uint64_t expected,
                    const json_t *object,
                    struct reply *ret)
{
        const char *rv = json_string_value(member(stored, "metadata", "resourceVersion"));
        uint64_t version;

        /* a stale write is the store's to refuse (409), as Kubernetes checks versions first */
        if (stored && !(rv && xp_registry_version_parse(rv, &version) && version == expected))
                return 1;
        if (strcmp(kind->plural, "nodes") == 0 && req->who && req->who->role == XP_TOKEN_NODE)
                return restrict_node(req->who->subject, stored, object, ret);
        if (strcmp(kind->plural, "pods") == 0 && stored)
                return pod_update(kind, stored, object, ret);
        if (strcmp(kind->plural, "pods") == 0)
                return admission_downward(kind, object, ret);
        return 1;
}
