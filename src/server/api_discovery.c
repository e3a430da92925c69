/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Discovery: /version, /api, /api/v1, /apis, the API groups, as the legacy documents and as the
 * aggregated one (apidiscovery.k8s.io/v2, which kubectl asks for first: two requests instead of
 * one per group). Everything is derived from the kinds table (xpool/kind.h) and the reviews
 * (api_auth_review.c), so a new kind shows up everywhere at once; api_openapi.c publishes the
 * same resources' paths and schemas.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/macro.h"

#if defined(__x86_64__)
#define PLATFORM_ARCH "amd64"
#elif defined(__aarch64__)
#define PLATFORM_ARCH "arm64"
#else
#define PLATFORM_ARCH "unknown"
#endif

const char *const api_object_verbs[] = {
    "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch", NULL};
/* a namespace goes only by name (api_delete_collection.c) */
static const char *const namespace_verbs[] = {
    "create", "delete", "get", "list", "patch", "update", "watch", NULL};

const char *const *api_kind_verbs(const struct xp_kind *kind)
{
        return strcmp(kind->plural, "namespaces") == 0 ? namespace_verbs : api_object_verbs;
}
const char *const api_review_verbs[] = {"create", NULL};

json_t *api_string_array(const char *const *strings)
{
        json_t *array = json_array();

        for (size_t i = 0; array && strings && strings[i]; i++)
                if (json_array_append_new(array, json_string(strings[i])) < 0) {
                        json_decref(array);
                        return NULL;
                }
        return array;
}

int handle_version(const struct request *req, const struct route *route, struct reply *ret)
{
        (void)req;
        (void)route;
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
                                    "major",
                                    KUBE_MAJOR,
                                    "minor",
                                    KUBE_MINOR,
                                    "gitVersion",
                                    XP_KUBE_GIT_VERSION,
                                    "gitCommit",
                                    "",
                                    "gitTreeState",
                                    "clean",
                                    "buildDate",
                                    "1970-01-01T00:00:00Z",
                                    "goVersion",
                                    "",
                                    "compiler",
                                    "xpool",
                                    "platform",
                                    "linux/" PLATFORM_ARCH));
}

/* The health checks: "ok" as text, as kube-apiserver answers them. */
int handle_health(const struct request *req, const struct route *route, struct reply *ret)
{
        (void)req;
        (void)route;
        ret->text = strdup("ok");
        if (!ret->text)
                return -ENOMEM;
        ret->code = 200;
        ret->content_type = "text/plain; charset=utf-8";
        return 0;
}

/* ---- the legacy documents -------------------------------------------------------------------- */

int handle_api(const struct request *req, const struct route *route, struct reply *ret)
{
        (void)route;
        if (discovery_aggregated(req))
                return reply_aggregated(req, true, ret);
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:[s], s:[{s:s, s:s}]}",
                                    "kind",
                                    "APIVersions",
                                    "versions",
                                    "v1",
                                    "serverAddressByClientCIDRs",
                                    "clientCIDR",
                                    "0.0.0.0/0",
                                    "serverAddress",
                                    req->api->server_address));
}

static json_t *group_version_json(const char *group, const char *version)
{
        char group_version[128];

        snprintf(group_version, sizeof group_version, "%s/%s", group, version);
        return json_pack("{s:s, s:s}", "groupVersion", group_version, "version", version);
}

/* An APIGroup: every version the group serves, the preferred first. NULL without memory. */
static json_t *group_json(const char *group)
{
        const char *versions[API_VERSIONS_MAX];
        size_t n = api_group_versions(group, versions, API_VERSIONS_MAX);
        json_t *list = json_array();

        if (n == 0)
                versions[n++] = "v1";
        for (size_t i = 0; list && i < n; i++)
                if (json_array_append_new(list, group_version_json(group, versions[i])) < 0) {
                        json_decref(list);
                        return NULL;
                }
        return list ? json_pack("{s:s, s:o, s:o}",
                                "name",
                                group,
                                "versions",
                                list,
                                "preferredVersion",
                                group_version_json(group, versions[0]))
                    : NULL;
}

int handle_apis(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *groups;

        (void)route;
        if (discovery_aggregated(req))
                return reply_aggregated(req, false, ret);
        groups = json_array();
        if (!groups)
                return -ENOMEM;
        for (const char *const *g = api_groups(); *g; g++)
                if (json_array_append_new(groups, group_json(*g)) < 0) {
                        json_decref(groups);
                        return -ENOMEM;
                }
        if (json_array_append_new(groups, metrics_api_group_json()) < 0) { /* api_metrics.c */
                json_decref(groups);
                return -ENOMEM;
        }
        return reply_json(
            ret,
            200,
            json_pack(
                "{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups", groups));
}

static int reply_no_group(const struct request *req, struct reply *ret)
{
        return reply_status(ret,
                            404,
                            "NotFound",
                            NULL,
                            NULL,
                            "the server could not find the requested resource: GET %s",
                            req->path);
}

int handle_api_group(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *group;

        (void)route;
        if (!api_group_served(req->group))
                return reply_no_group(req, ret);
        group = group_json(req->group);
        if (!group)
                return -ENOMEM;
        json_object_set_new(group, "kind", json_string("APIGroup"));
        json_object_set_new(group, "apiVersion", json_string("v1"));
        return reply_json(ret, 200, group);
}

/* Sets key to the strings when there are any, as Kubernetes leaves empty lists out. */
static int set_strings(json_t *object, const char *key, const char *const *strings)
{
        if (!strings || !strings[0])
                return 0;
        return json_object_set_new(object, key, api_string_array(strings)) < 0 ? -ENOMEM : 0;
}

static json_t *resource_entry(const char *name,
                              const char *singular,
                              bool namespaced,
                              const char *kind,
                              const char *const *verbs)
{
        return json_pack("{s:s, s:s, s:b, s:s, s:o}",
                         "name",
                         name,
                         "singularName",
                         singular,
                         "namespaced",
                         namespaced,
                         "kind",
                         kind,
                         "verbs",
                         api_string_array(verbs));
}

static int append_resources(json_t *resources, const struct xp_kind *kind)
{
        json_t *resource = resource_entry(xp_kind_url_plural(kind),
                                          kind->singular,
                                          kind->namespaced,
                                          kind->kind,
                                          api_kind_verbs(kind));

        if (!resource || json_array_append_new(resources, resource) < 0 ||
            set_strings(resource, "shortNames", kind->short_names) < 0 ||
            set_strings(resource, "categories", kind->categories) < 0)
                return -ENOMEM;
        struct api_subresource subs[API_SUBRESOURCES_MAX];
        size_t n = api_kind_subresources(kind, subs, API_SUBRESOURCES_MAX);

        for (size_t i = 0; i < n; i++) {
                const struct api_subresource *sub = &subs[i];
                char name[128];

                snprintf(name, sizeof name, "%s/%s", sub->plural, sub->name);
                resource = resource_entry(name, "", kind->namespaced, sub->kind, sub->verbs);
                if (resource && sub->group &&
                    (json_object_set_new(resource, "group", json_string(sub->group)) < 0 ||
                     json_object_set_new(resource, "version", json_string(sub->version)) < 0)) {
                        json_decref(resource);
                        resource = NULL;
                }
                if (!resource || json_array_append_new(resources, resource) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The resources of a group version: its kinds, then its reviews. NULL without memory. */
static json_t *group_resources(const char *group, const char *version)
{
        json_t *resources = json_array();

        for (size_t i = 0; resources && i < xp_kinds_n; i++)
                if (strcmp(xp_kinds[i]->group, group) == 0 &&
                    strcmp(xp_kinds[i]->version, version) == 0 &&
                    append_resources(resources, xp_kinds[i]) < 0) {
                        json_decref(resources);
                        return NULL;
                }
        for (size_t i = 0; resources && i < api_reviews_n; i++) {
                const struct api_review *review = &api_reviews[i];

                if (strcmp(review->group, group) == 0 && strcmp(version, "v1") == 0 &&
                    json_array_append_new(resources,
                                          resource_entry(review->plural,
                                                         review->singular,
                                                         false,
                                                         review->kind,
                                                         api_review_verbs)) < 0) {
                        json_decref(resources);
                        return NULL;
                }
        }
        return resources;
}

int handle_api_resources(const struct request *req, const struct route *route, struct reply *ret)
{
        const char *group = req->group;
        char group_version[128];
        json_t *resources;

        (void)route;
        if (group[0] && !api_group_served(group))
                return reply_no_group(req, ret);
        resources = group_resources(group, group[0] ? req->version : "v1");
        if (!resources)
                return -ENOMEM;
        if (group[0])
                snprintf(group_version, sizeof group_version, "%s/%s", group, req->version);
        else
                snprintf(group_version, sizeof group_version, "v1");
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:s, s:s, s:o}",
                                    "kind",
                                    "APIResourceList",
                                    "apiVersion",
                                    "v1",
                                    "groupVersion",
                                    group_version,
                                    "resources",
                                    resources));
}
