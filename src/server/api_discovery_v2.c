/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Aggregated discovery (apidiscovery.k8s.io/v2, and v2beta1 for older clients): every group,
 * version and resource of /api or /apis in one document, which kubectl 1.32 asks for first.
 * The answer's Content-Type says which it is; a client that asked for it but gets plain JSON
 * falls back to the legacy documents, one request per group.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define AGGREGATED_V2      "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
#define AGGREGATED_V2BETA1 "g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

static const char *accept_of(const struct request *req)
{
        const char *accept = request_header(req, "Accept");

        return accept ? accept : "";
}

bool discovery_aggregated(const struct request *req)
{
        const char *accept = accept_of(req);

        return strstr(accept, AGGREGATED_V2) || strstr(accept, AGGREGATED_V2BETA1);
}

static json_t *response_kind(const char *group, const char *version, const char *kind)
{
        return json_pack("{s:s, s:s, s:s}", "group", group, "version", version, "kind", kind);
}

/* Sets key to a list of the strings, when there are any. */
static int set_list(json_t *object, const char *key, const char *const *strings)
{
        if (!strings || !strings[0])
                return 0;
        return json_object_set_new(object, key, api_string_array(strings)) < 0 ? -ENOMEM : 0;
}

static json_t *resource(const char *group,
                        const char *version,
                        const char *plural,
                        const char *singular,
                        const char *kind,
                        bool namespaced,
                        const char *const *verbs)
{
        return json_pack("{s:s, s:o, s:s, s:s, s:o}",
                         "resource",
                         plural,
                         "responseKind",
                         response_kind(group, version, kind),
                         "scope",
                         namespaced ? "Namespaced" : "Cluster",
                         "singularResource",
                         singular,
                         "verbs",
                         api_string_array(verbs));
}

static int add_subresources(json_t *entry, const struct xp_kind *kind)
{
        json_t *subs = NULL;

        struct api_subresource all[API_SUBRESOURCES_MAX];
        size_t n = api_kind_subresources(kind, all, API_SUBRESOURCES_MAX);

        for (size_t i = 0; i < n; i++) {
                const struct api_subresource *sub = &all[i];

                if (!subs && (!(subs = json_array()) ||
                              json_object_set_new(entry, "subresources", subs) < 0))
                        return -ENOMEM;
                if (json_array_append_new(
                        subs,
                        json_pack("{s:s, s:o, s:o}",
                                  "subresource",
                                  sub->name,
                                  "responseKind",
                                  response_kind(sub->group ? sub->group : kind->group,
                                                sub->version ? sub->version : kind->version,
                                                sub->kind),
                                  "verbs",
                                  api_string_array(sub->verbs))) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int add_kind(json_t *resources, const struct xp_kind *kind)
{
        json_t *entry = resource(kind->group,
                                 kind->version,
                                 xp_kind_url_plural(kind),
                                 kind->singular,
                                 kind->kind,
                                 kind->namespaced,
                                 api_kind_verbs(kind));

        if (!entry || json_array_append_new(resources, entry) < 0 ||
            set_list(entry, "shortNames", kind->short_names) < 0 ||
            set_list(entry, "categories", kind->categories) < 0)
                return -ENOMEM;
        return add_subresources(entry, kind);
}

/* One version of a group: its kinds and reviews, as the aggregated document lists them. */
static json_t *version_entry(const char *group, const char *version)
{
        json_t *resources = json_array();

        for (size_t i = 0; resources && i < xp_kinds_n; i++)
                if (strcmp(xp_kinds[i]->group, group) == 0 &&
                    strcmp(xp_kinds[i]->version, version) == 0 &&
                    add_kind(resources, xp_kinds[i]) < 0)
                        goto fail;
        for (size_t i = 0; resources && i < api_reviews_n && strcmp(version, "v1") == 0; i++) {
                const struct api_review *r = &api_reviews[i];

                if (strcmp(r->group, group) == 0 &&
                    json_array_append_new(resources,
                                          resource(group,
                                                   version,
                                                   r->plural,
                                                   r->singular,
                                                   r->kind,
                                                   false,
                                                   api_review_verbs)) < 0)
                        goto fail;
        }
        return resources ? json_pack("{s:s, s:o, s:s}",
                                     "version",
                                     version,
                                     "resources",
                                     resources,
                                     "freshness",
                                     "Current")
                         : NULL;
fail:
        json_decref(resources);
        return NULL;
}

/* One group's entry: its versions, the preferred first. NULL without memory. */
static json_t *group_entry(const char *group)
{
        const char *versions[API_VERSIONS_MAX];
        size_t n = api_group_versions(group, versions, API_VERSIONS_MAX);
        json_t *list = json_array(), *metadata;

        if (n == 0)
                versions[n++] = "v1";
        for (size_t i = 0; list && i < n; i++)
                if (json_array_append_new(list, version_entry(group, versions[i])) < 0) {
                        json_decref(list);
                        return NULL;
                }
        if (!list)
                return NULL;
        metadata = group[0] ? json_pack("{s:s, s:n}", "name", group, "creationTimestamp")
                            : json_pack("{s:n}", "creationTimestamp");
        return json_pack("{s:o, s:o}", "metadata", metadata, "versions", list);
}

/* metrics.k8s.io (api_metrics.c) in the aggregated form: kubectl top looks for it here. */
static json_t *metrics_group_entry(void)
{
        return json_pack("{s:{s:s, s:n}, s:[{s:s, s:[{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:[s, s]},"
                         " {s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:[s, s]}], s:s}]}",
                         "metadata",
                         "name",
                         "metrics.k8s.io",
                         "creationTimestamp",
                         "versions",
                         "version",
                         "v1beta1",
                         "resources",
                         "resource",
                         "nodes",
                         "responseKind",
                         "group",
                         "metrics.k8s.io",
                         "version",
                         "v1beta1",
                         "kind",
                         "NodeMetrics",
                         "scope",
                         "Cluster",
                         "singularResource",
                         "",
                         "verbs",
                         "get",
                         "list",
                         "resource",
                         "pods",
                         "responseKind",
                         "group",
                         "metrics.k8s.io",
                         "version",
                         "v1beta1",
                         "kind",
                         "PodMetrics",
                         "scope",
                         "Namespaced",
                         "singularResource",
                         "",
                         "verbs",
                         "get",
                         "list",
                         "freshness",
                         "Current");
}

int reply_aggregated(const struct request *req, bool core, struct reply *ret)
{
        bool v2 = strstr(accept_of(req), AGGREGATED_V2) != NULL;
        json_t *items = json_array(), *doc;
        char *text;

        const char *const *groups = api_groups();

        for (size_t i = 0; items && (core ? i < 1 : groups[i] != NULL); i++)
                if (json_array_append_new(items, group_entry(core ? "" : groups[i])) < 0) {
                        json_decref(items);
                        return -ENOMEM;
                }
        if (items && !core && json_array_append_new(items, metrics_group_entry()) < 0) {
                json_decref(items);
                return -ENOMEM;
        }
        doc = json_pack("{s:s, s:s, s:{}, s:o}",
                        "kind",
                        "APIGroupDiscoveryList",
                        "apiVersion",
                        v2 ? "apidiscovery.k8s.io/v2" : "apidiscovery.k8s.io/v2beta1",
                        "metadata",
                        "items",
                        items);
        text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        json_decref(doc);
        if (!text)
                return -ENOMEM;
        ret->code = 200;
        ret->text = text;
        ret->content_type =
            v2 ? "application/json;" AGGREGATED_V2 : "application/json;" AGGREGATED_V2BETA1;
        return 0;
}
