/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API groups and subresources served, derived from the kinds table (xpool/kind.h) and the
 * reviews, so that a kind added to the table shows up in discovery, OpenAPI, the routes and the
 * node authoriser's rules at once.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/macro.h"

/* Kubernetes' discovery order of the groups it has; others follow in the kinds table's order. */
static const char *const kube_order[] = {
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "resource.k8s.io",
};

#define GROUPS_MAX 64
static const char *groups[GROUPS_MAX + 1];
static pthread_once_t groups_once = PTHREAD_ONCE_INIT;

static bool has_kinds_or_reviews(const char *group)
{
        for (const char *const *g = xp_kind_groups(); *g; g++)
                if (strcmp(*g, group) == 0)
                        return true;
        for (size_t i = 0; i < api_reviews_n; i++)
                if (strcmp(api_reviews[i].group, group) == 0)
                        return true;
        return false;
}

static void add_group(size_t *n, const char *group)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp(groups[i], group) == 0)
                        return;
        if (group[0] && *n < GROUPS_MAX)
                groups[(*n)++] = group;
}

static void collect(void)
{
        size_t n = 0;

        for (size_t i = 0; i < XP_ELEMENTSOF(kube_order); i++)
                if (has_kinds_or_reviews(kube_order[i]))
                        add_group(&n, kube_order[i]);
        for (const char *const *g = xp_kind_groups(); *g; g++)
                add_group(&n, *g);
        for (size_t i = 0; i < api_reviews_n; i++)
                add_group(&n, api_reviews[i].group);
        groups[n] = NULL;
}

const char *const *api_groups(void)
{
        pthread_once(&groups_once, collect);
        return groups;
}

bool api_group_served(const char *group)
{
        for (const char *const *g = api_groups(); *g; g++)
                if (strcmp(*g, group) == 0)
                        return true;
        return false;
}

/* Kubernetes' version priority: GA before beta before alpha, then the higher number. */
static long version_rank(const char *v)
{
        char *end;
        long major = v[0] == 'v' ? strtol(v + 1, &end, 10) : 0;
        long stability = 3, minor = 0;

        if (v[0] != 'v' || end == v + 1)
                return 0;
        if (strncmp(end, "beta", 4) == 0)
                stability = 2, minor = strtol(end + 4, NULL, 10);
        else if (strncmp(end, "alpha", 5) == 0)
                stability = 1, minor = strtol(end + 5, NULL, 10);
        else if (*end)
                return 0;
        return stability * 1000000 + major * 1000 + minor;
}

static void add_version(const char **versions, size_t *n, size_t max, const char *v)
{
        size_t at = 0;

        for (size_t i = 0; i < *n; i++)
                if (strcmp(versions[i], v) == 0)
                        return;
        if (*n == max)
                return;
        while (at < *n && version_rank(versions[at]) >= version_rank(v))
                at++;
        memmove(versions + at + 1, versions + at, (*n - at) * sizeof *versions);
        versions[at] = v;
        (*n)++;
}

size_t api_group_versions(const char *group, const char **ret, size_t max)
{
        size_t n = 0;

        for (size_t i = 0; group && i < xp_kinds_n; i++)
                if (strcmp(xp_kinds[i]->group, group) == 0)
                        add_version(ret, &n, max, xp_kinds[i]->version);
        for (size_t i = 0; group && i < api_reviews_n; i++)
                if (strcmp(api_reviews[i].group, group) == 0)
                        add_version(ret, &n, max, "v1");
        return n;
}

const char *api_group_version(const char *group)
{
        const char *versions[API_VERSIONS_MAX];

        return api_group_versions(group, versions, API_VERSIONS_MAX) ? versions[0] : "v1";
}

bool api_group_has_version(const char *group, const char *version)
{
        const char *versions[API_VERSIONS_MAX];
        size_t n = api_group_versions(group, versions, API_VERSIONS_MAX);

        for (size_t i = 0; i < n; i++)
                if (strcmp(versions[i], version) == 0)
                        return true;
        return false;
}

/* ---- subresources ------------------------------------------------------------------------------
 */

static const char *const status_verbs[] = {"get", "patch", "update", NULL};
static const char *const binding_verbs[] = {"create", NULL};
static const char *const log_verbs[] = {"get", NULL};

/* The subresources particular to one kind; status and scale come from the kinds table. */
static const struct api_subresource fixed[] = {
    {"pods", "binding", "Binding", binding_verbs, NULL, NULL},
    {"pods", "log", "Pod", log_verbs, NULL, NULL},
    /* kubectl drain evicts when discovery lists pods/eviction with its group and version */
    {"pods", "eviction", "Eviction", binding_verbs, "policy", "v1"},
    /* kubectl create token */
    {"serviceaccounts", "token", "TokenRequest", binding_verbs, "authentication.k8s.io", "v1"},
};

size_t api_kind_subresources(const struct xp_kind *kind, struct api_subresource *ret, size_t max)
{
        size_t n = 0;

        if (kind->scale && n < max)
                ret[n++] = (struct api_subresource){
                    xp_kind_url_plural(kind), "scale", "Scale", status_verbs, "autoscaling", "v1"};
        if (kind_has_status(kind) && n < max)
                ret[n++] = (struct api_subresource){
                    xp_kind_url_plural(kind), "status", kind->kind, status_verbs, NULL, NULL};
        for (size_t i = 0; i < XP_ELEMENTSOF(fixed) && n < max; i++)
                if (strcmp(fixed[i].plural, kind->plural) == 0)
                        ret[n++] = fixed[i];
        return n;
}
