/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "xpool/apiresource.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

static const struct xp_api_resource resources[] = {
    {
        .kind = "Pod",
        .api_version = "v1",
        .group = "",
        .plural = "pods",
        .singular = "pod",
        .short_name = "po",
        .namespaced = true,
    },
    {
        .kind = "Node",
        .api_version = "v1",
        .group = "",
        .plural = "nodes",
        .singular = "node",
        .short_name = "no",
        .namespaced = false,
    },
    {
        .kind = "Namespace",
        .api_version = "v1",
        .group = "",
        .plural = "namespaces",
        .singular = "namespace",
        .short_name = "ns",
        .namespaced = false,
    },
    {
        .kind = "Event",
        .api_version = "v1",
        .group = "",
        .plural = "events",
        .singular = "event",
        .short_name = "ev",
        .namespaced = true,
    },
    {
        .kind = "Lease",
        .api_version = "coordination.k8s.io/v1",
        .group = "coordination.k8s.io",
        .plural = "leases",
        .singular = "lease",
        .short_name = NULL,
        .namespaced = true,
    },
};

static bool matches(const struct xp_api_resource *r, const char *name, size_t len)
{
        const char *names[] = {r->plural, r->singular, r->short_name, r->kind};

        for (size_t i = 0; i < XP_ELEMENTSOF(names); i++)
                if (names[i] && strlen(names[i]) == len && strncasecmp(names[i], name, len) == 0)
                        return true;
        return false;
}

const struct xp_api_resource *xp_api_resource_find(const char *name, struct xp_error *err)
{
        const char *dot = name ? strchr(name, '.') : NULL;
        size_t len = dot ? (size_t)(dot - name) : name ? strlen(name) : 0;
        char q[XP_QUOTE_MAX];

        for (size_t i = 0; name && i < XP_ELEMENTSOF(resources); i++) {
                const struct xp_api_resource *r = &resources[i];

                /* "pods.", an empty group, is the core group as for kubectl. */
                if (dot && strcasecmp(dot + 1, r->group) != 0)
                        continue;
                if (matches(r, name, len))
                        return r;
        }
        xp_errorf(err, -ENOENT, "the server doesn't have a resource type %s", xp_quote(name, q));
        return NULL;
}

const struct xp_api_resource *xp_api_resource_by_kind(const char *api_version, const char *kind)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(resources); i++)
                if (xp_streq0(resources[i].api_version, api_version) &&
                    xp_streq0(resources[i].kind, kind))
                        return &resources[i];
        return NULL;
}

/* Appends s percent-encoded (RFC 3986 unreserved characters kept) at *pos. */
static int append_escaped(char *buf, size_t size, size_t *pos, const char *s)
{
        static const char hex[] = "0123456789ABCDEF";

        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';

                if (*pos + (plain ? 1 : 3) >= size)
                        return -ENAMETOOLONG;
                if (plain) {
                        buf[(*pos)++] = (char)c;
                } else {
                        buf[(*pos)++] = '%';
                        buf[(*pos)++] = hex[c >> 4];
                        buf[(*pos)++] = hex[c & 15];
                }
        }
        buf[*pos] = '\0';
        return 0;
}

static int append(char *buf, size_t size, size_t *pos, const char *s)
{
        size_t len = strlen(s);

        if (*pos + len >= size)
                return -ENAMETOOLONG;
        memcpy(buf + *pos, s, len + 1);
        *pos += len;
        return 0;
}

int xp_api_resource_path(const struct xp_api_resource *resource,
                         const char *namespace,
                         const char *name,
                         char *buf,
                         size_t size)
{
        size_t pos = 0;
        int r;

        if (size == 0)
                return -ENAMETOOLONG;
        buf[0] = '\0';
        r = append(buf, size, &pos, *resource->group ? "/apis/" : "/api/");
        if (r >= 0)
                r = append(buf, size, &pos, resource->api_version);
        if (r >= 0 && resource->namespaced && namespace) {
                r = append(buf, size, &pos, "/namespaces/");
                if (r >= 0)
                        r = append_escaped(buf, size, &pos, namespace);
        }
        if (r >= 0)
                r = append(buf, size, &pos, "/");
        if (r >= 0)
                r = append(buf, size, &pos, resource->plural);
        if (r >= 0 && name) {
                r = append(buf, size, &pos, "/");
                if (r >= 0)
                        r = append_escaped(buf, size, &pos, name);
        }
        return r;
}

char *xp_api_resource_type_name(const struct xp_api_resource *resource, char *buf, size_t size)
{
        snprintf(
            buf, size, "%s%s%s", resource->singular, *resource->group ? "." : "", resource->group);
        return buf;
}
