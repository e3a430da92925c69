/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Discovery: /version, /api, /api/v1, /apis, the API groups, and the OpenAPI v3 documents
 * kubectl reads before it writes. Everything is derived from the kinds table (xpool/kind.h), so a
 * new kind shows up everywhere at once.
 *
 * The OpenAPI documents describe each resource's paths and operations, not the object schemas:
 * kubectl reads them to learn that the server validates fields itself (the fieldValidation
 * parameter on PATCH), and then sends ?fieldValidation=Strict instead of validating on the
 * client. PATCH lists JSON and merge patches only, so kubectl computes strategic merge patches
 * from its built-in types rather than from a schema we do not publish.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/macro.h"
#include "xpool/map.h"

#define KUBE_MAJOR "1"
#define KUBE_MINOR "32"

#if defined(__x86_64__)
#define PLATFORM_ARCH "amd64"
#elif defined(__aarch64__)
#define PLATFORM_ARCH "arm64"
#else
#define PLATFORM_ARCH "unknown"
#endif

/* The groups we serve besides the core one, in discovery order. */
static const char *const api_groups[] = {"coordination.k8s.io"};

/* Subresources per kind, for discovery and OpenAPI. */
struct subresource {
        const char *plural;
        const char *name;
        const char *kind; /* the kind the subresource takes */
        const char *const *verbs;
};

static const char *const status_verbs[] = {"get", "patch", "update", NULL};
static const char *const binding_verbs[] = {"create", NULL};
static const char *const log_verbs[] = {"get", NULL};

static const struct subresource subresources[] = {
    {"pods", "status", "Pod", status_verbs},
    {"pods", "binding", "Binding", binding_verbs},
    {"pods", "log", "Pod", log_verbs},
    {"nodes", "status", "Node", status_verbs},
    {"namespaces", "status", "Namespace", status_verbs},
};

static const char *const object_verbs[] = {
    "create", "delete", "get", "list", "patch", "update", "watch", NULL};

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
                                    "v" KUBE_MAJOR "." KUBE_MINOR ".0-xpool." XPOOL_VERSION,
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

int handle_api(const struct request *req, const struct route *route, struct reply *ret)
{
        (void)route;
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

static json_t *group_json(const char *group)
{
        char group_version[128];

        snprintf(group_version, sizeof group_version, "%s/v1", group);
        return json_pack("{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}",
                         "name",
                         group,
                         "versions",
                         "groupVersion",
                         group_version,
                         "version",
                         "v1",
                         "preferredVersion",
                         "groupVersion",
                         group_version,
                         "version",
                         "v1");
}

int handle_apis(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *groups = json_array();

        (void)req;
        (void)route;
        if (!groups)
                return -ENOMEM;
        for (size_t i = 0; i < XP_ELEMENTSOF(api_groups); i++)
                if (json_array_append_new(groups, group_json(api_groups[i])) < 0) {
                        json_decref(groups);
                        return -ENOMEM;
                }
        return reply_json(
            ret,
            200,
            json_pack(
                "{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups", groups));
}

static bool group_served(const char *group)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(api_groups); i++)
                if (strcmp(api_groups[i], group) == 0)
                        return true;
        return false;
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
        if (!group_served(req->group))
                return reply_no_group(req, ret);
        group = group_json(req->group);
        if (!group)
                return -ENOMEM;
        json_object_set_new(group, "kind", json_string("APIGroup"));
        json_object_set_new(group, "apiVersion", json_string("v1"));
        return reply_json(ret, 200, group);
}

static json_t *string_array(const char *const *strings)
{
        json_t *array = json_array();

        for (size_t i = 0; array && strings && strings[i]; i++)
                if (json_array_append_new(array, json_string(strings[i])) < 0) {
                        json_decref(array);
                        return NULL;
                }
        return array;
}

static int append_resources(json_t *resources, const struct xp_kind *kind)
{
        json_t *resource = json_pack("{s:s, s:s, s:b, s:s, s:o, s:o}",
                                     "name",
                                     kind->plural,
                                     "singularName",
                                     kind->singular,
                                     "namespaced",
                                     kind->namespaced,
                                     "kind",
                                     kind->kind,
                                     "verbs",
                                     string_array(object_verbs),
                                     "shortNames",
                                     string_array(kind->short_names));

        if (!resource || json_array_append_new(resources, resource) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < XP_ELEMENTSOF(subresources); i++) {
                const struct subresource *sub = &subresources[i];
                char name[128];

                if (strcmp(sub->plural, kind->plural) != 0)
                        continue;
                snprintf(name, sizeof name, "%s/%s", sub->plural, sub->name);
                resource = json_pack("{s:s, s:s, s:b, s:s, s:o}",
                                     "name",
                                     name,
                                     "singularName",
                                     "",
                                     "namespaced",
                                     kind->namespaced,
                                     "kind",
                                     sub->kind,
                                     "verbs",
                                     string_array(sub->verbs));
                if (!resource || json_array_append_new(resources, resource) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int handle_api_resources(const struct request *req, const struct route *route, struct reply *ret)
{
        const char *group = req->group;
        char group_version[128];
        json_t *resources;

        (void)route;
        if (group[0] && !group_served(group))
                return reply_no_group(req, ret);
        resources = json_array();
        if (!resources)
                return -ENOMEM;
        for (size_t i = 0; i < xp_kinds_n; i++)
                if (strcmp(xp_kinds[i]->group, group) == 0 &&
                    append_resources(resources, xp_kinds[i]) < 0) {
                        json_decref(resources);
                        return -ENOMEM;
                }
        if (group[0])
                snprintf(group_version, sizeof group_version, "%s/v1", group);
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

/* ---- OpenAPI v3 ----------------------------------------------------------------------------- */

static json_t *openapi_operation(const struct xp_kind *kind, const char *verb, bool patch)
{
        json_t *op = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:{s:{s:s}}}",
                               "operationId",
                               verb,
                               "x-kubernetes-group-version-kind",
                               "group",
                               kind->group,
                               "version",
                               kind->version,
                               "kind",
                               kind->kind,
                               "x-kubernetes-action",
                               verb,
                               "responses",
                               "200",
                               "description",
                               "OK");

        if (!op || !patch)
                return op;
        if (json_object_set_new(
                op,
                "parameters",
                json_pack(
                    "[{s:s, s:s, s:s, s:{s:s}}, {s:s, s:s, s:s, s:{s:s}}]",
                    "name",
                    "fieldValidation",
                    "in",
                    "query",
                    "description",
                    "Strict rejects unknown and duplicate fields; Ignore and Warn accept them",
                    "schema",
                    "type",
                    "string",
                    "name",
                    "dryRun",
                    "in",
                    "query",
                    "description",
                    "All validates without persisting",
                    "schema",
                    "type",
                    "string")) < 0 ||
            json_object_set_new(op,
                                "requestBody",
                                json_pack("{s:{s:{s:{s:s}}, s:{s:{s:s}}}}",
                                          "content",
                                          "application/json-patch+json",
                                          "schema",
                                          "type",
                                          "object",
                                          "application/merge-patch+json",
                                          "schema",
                                          "type",
                                          "object")) < 0) {
                json_decref(op);
                return NULL;
        }
        return op;
}

/* "/api/v1" or "/apis/GROUP/v1", then the namespaced part when the kind has one. */
static void kind_paths(const struct xp_kind *kind, char *collection, char *item, size_t size)
{
        char prefix[128];

        if (kind->group[0])
                snprintf(prefix, sizeof prefix, "/apis/%s/%s", kind->group, kind->version);
        else
                snprintf(prefix, sizeof prefix, "/api/%s", kind->version);
        snprintf(collection,
                 size,
                 "%s%s/%s",
                 prefix,
                 kind->namespaced ? "/namespaces/{namespace}" : "",
                 kind->plural);
        snprintf(item, size, "%s/{name}", collection);
}

static json_t *openapi_document(const char *group)
{
        json_t *paths = json_object(), *doc;

        if (!paths)
                return NULL;
        for (size_t i = 0; i < xp_kinds_n; i++) {
                const struct xp_kind *kind = xp_kinds[i];
                char collection[256], item[300], status[320];

                if (strcmp(kind->group, group) != 0)
                        continue;
                kind_paths(kind, collection, item, sizeof collection);
                snprintf(status, sizeof status, "%s/status", item);
                if (json_object_set_new(paths,
                                        collection,
                                        json_pack("{s:o, s:o}",
                                                  "get",
                                                  openapi_operation(kind, "list", false),
                                                  "post",
                                                  openapi_operation(kind, "post", false))) < 0 ||
                    json_object_set_new(paths,
                                        item,
                                        json_pack("{s:o, s:o, s:o, s:o}",
                                                  "get",
                                                  openapi_operation(kind, "get", false),
                                                  "put",
                                                  openapi_operation(kind, "put", false),
                                                  "patch",
                                                  openapi_operation(kind, "patch", true),
                                                  "delete",
                                                  openapi_operation(kind, "delete", false))) < 0) {
                        json_decref(paths);
                        return NULL;
                }
        }
        doc = json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:{}}}",
                        "openapi",
                        "3.0.0",
                        "info",
                        "title",
                        "xpool",
                        "version",
                        "v" KUBE_MAJOR "." KUBE_MINOR ".0-xpool." XPOOL_VERSION,
                        "paths",
                        paths,
                        "components",
                        "schemas");
        return doc;
}

/* FNV-1a of the document, so clients may cache a document by its URL as long as it holds. */
static uint64_t document_hash(const json_t *doc)
{
        char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
        uint64_t h = text ? xp_hash_string(text) : XP_HASH_INIT;

        free(text);
        return h;
}

int handle_openapi_v3(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *paths = json_object();

        (void)req;
        (void)route;
        if (!paths)
                return -ENOMEM;
        for (size_t i = 0; i <= XP_ELEMENTSOF(api_groups); i++) {
                const char *group = i == 0 ? "" : api_groups[i - 1];
                json_t *doc = openapi_document(group);
                char key[128], url[256];

                if (!doc) {
                        json_decref(paths);
                        return -ENOMEM;
                }
                if (group[0])
                        snprintf(key, sizeof key, "apis/%s/v1", group);
                else
                        snprintf(key, sizeof key, "api/v1");
                snprintf(url,
                         sizeof url,
                         "/openapi/v3/%s?hash=%016llX",
                         key,
                         (unsigned long long)document_hash(doc));
                json_decref(doc);
                if (json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url)) <
                    0) {
                        json_decref(paths);
                        return -ENOMEM;
                }
        }
        return reply_json(ret, 200, json_pack("{s:o}", "paths", paths));
}

int handle_openapi_v3_group(const struct request *req, const struct route *route, struct reply *ret)
{
        (void)route;
        if (req->group[0] && !group_served(req->group))
                return reply_no_group(req, ret);
        return reply_json(ret, 200, openapi_document(req->group));
}
