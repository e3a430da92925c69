/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The roles as rules (auth_rules.h), for SelfSubjectRulesReview. The read rule of a node is made
 * from the kinds table, so a new kind is readable in the review as it is in auth_authorize().
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth_rules.h"
#include "internal.h"
#include "xpool/macro.h"

#define MAX_RESOURCES 64

static const char *const reads[] = {"get", "list", "watch", NULL};
static const char *const writes[] = {"create", "patch", "update", NULL};
static const char *const lease_verbs[] = {"create", "delete", "get", "patch", "update", NULL};
static const char *const create[] = {"create", NULL};
static const char *const all[] = {"*", NULL};
static const char *const get[] = {"get", NULL};
/* Kubernetes' system:discovery and system:public-info-viewer, what a service account without a
 * role may read (auth_authorize()) */
static const char *const discovery_urls[] = {"/api",
                                             "/api/*",
                                             "/apis",
                                             "/apis/*",
                                             "/healthz",
                                             "/livez",
                                             "/openapi",
                                             "/openapi/*",
                                             "/readyz",
                                             "/version",
                                             "/version/",
                                             NULL};

static json_t *
rule(const char *const *verbs, const char *group, const char *const *resources, const char *name)
{
        json_t *r = json_pack("{s:o, s:[s], s:o}",
                              "verbs",
                              api_string_array(verbs),
                              "apiGroups",
                              group,
                              "resources",
                              api_string_array(resources));

        if (r && name && json_object_set_new(r, "resourceNames", json_pack("[s]", name)) < 0) {
                json_decref(r);
                return NULL;
        }
        return r;
}

static int add(json_t *rules, json_t *rule)
{
        return json_array_append_new(rules, rule) < 0 ? -ENOMEM : 0;
}

/* What every user may ask about itself (Kubernetes' system:basic-user). */
static int add_self_reviews(json_t *rules)
{
        static const char *const who[] = {"selfsubjectreviews", NULL};
        static const char *const may[] = {
            "selfsubjectaccessreviews", "selfsubjectrulesreviews", NULL};

        if (add(rules, rule(create, "authentication.k8s.io", who, NULL)) < 0)
                return -ENOMEM;
        return add(rules, rule(create, "authorization.k8s.io", may, NULL));
}

/* A node reads every resource of group but Secrets and ConfigMaps (only those its pods name:
 * not a rule of its own) and the logs of pods not its own. */
static int add_node_reads(json_t *rules, const char *group)
{
        char names[MAX_RESOURCES][128];
        const char *resources[MAX_RESOURCES + 1];
        size_t n = 0;

        for (size_t i = 0; i < xp_kinds_n && n < MAX_RESOURCES; i++) {
                if (strcmp(xp_kinds[i]->group, group) != 0 ||
                    (!group[0] && (strcmp(xp_kinds[i]->plural, "secrets") == 0 ||
                                   strcmp(xp_kinds[i]->plural, "configmaps") == 0)))
                        continue;
                resources[n++] = xp_kind_url_plural(xp_kinds[i]);
                struct api_subresource subs[API_SUBRESOURCES_MAX];
                size_t n_subs = api_kind_subresources(xp_kinds[i], subs, API_SUBRESOURCES_MAX);

                for (size_t j = 0; j < n_subs && n < MAX_RESOURCES; j++) {
                        const struct api_subresource *sub = &subs[j];

                        if (strcmp(sub->verbs[0], "get") != 0 || strcmp(sub->name, "log") == 0)
                                continue;
                        snprintf(names[n], sizeof names[n], "%s/%s", sub->plural, sub->name);
                        resources[n] = names[n];
                        n++;
                }
        }
        if (n == 0)
                return 0;
        resources[n] = NULL;
        return add(rules, rule(reads, group, resources, NULL));
}

static int node_rules(const char *node, const char *ns, json_t *rules)
{
        static const char *const node_resources[] = {"nodes", "nodes/status", NULL};
        static const char *const events[] = {"events", NULL};
        static const char *const leases[] = {"leases", NULL};
        int r = add_node_reads(rules, "");

        for (const char *const *g = api_groups(); r >= 0 && *g; g++)
                r = add_node_reads(rules, *g);
        if (r >= 0)
                r = add(rules, rule(writes, "", node_resources, node));
        if (r >= 0)
                r = add(rules, rule(writes, "", events, NULL));
        if (r >= 0 && ns && strcmp(ns, "kube-node-lease") == 0)
                r = add(rules, rule(lease_verbs, "coordination.k8s.io", leases, node));
        return r;
}

json_t *auth_user_groups(const struct auth_identity *who)
{
        if (who->service_account) {
                char group[96];

                snprintf(group, sizeof group, "system:serviceaccounts:%s", who->sa_namespace);
                return json_pack(
                    "[s, s, s]", "system:serviceaccounts", group, "system:authenticated");
        }
        const char *group = who->role == XP_TOKEN_ADMIN  ? "system:masters"
                            : who->role == XP_TOKEN_NODE ? "system:nodes"
                                                         : "xpool:readers";

        return json_pack("[s, s]", group, "system:authenticated");
}

int auth_rules_review(const struct auth_identity *who, const char *ns, json_t **ret)
{
        json_t *rules = json_array(), *urls = json_array(), *status;
        int r = rules && urls ? 0 : -ENOMEM;
        char error[512] = "";

        if (r >= 0)
                r = add_self_reviews(rules);
        if (r >= 0 && who->role == XP_TOKEN_ADMIN) {
                r = add(rules, rule(all, "*", all, NULL));
                if (r >= 0)
                        r = add(urls,
                                json_pack("{s:[s], s:[s]}", "verbs", "*", "nonResourceURLs", "*"));
        } else if (r >= 0) {
                if (who->role == XP_TOKEN_READER)
                        r = add(rules, rule(reads, "*", all, NULL));
                else if (who->role == XP_TOKEN_NODE)
                        r = node_rules(who->subject, ns, rules);
                if (r >= 0 && who->role)
                        r = add(urls,
                                json_pack("{s:o, s:[s]}",
                                          "verbs",
                                          api_string_array(get),
                                          "nonResourceURLs",
                                          "*"));
                else if (r >= 0)
                        r = add(urls,
                                json_pack("{s:o, s:o}",
                                          "verbs",
                                          api_string_array(get),
                                          "nonResourceURLs",
                                          api_string_array(discovery_urls)));
        }
        if (who->role == XP_TOKEN_NODE && !who->service_account)
                snprintf(
                    error,
                    sizeof error,
                    "the pods bound to node \"%s\" may also be deleted, their status updated and patched and their logs read; those rules are decided per pod (Node authorization)",
                    who->subject);
        status = r >= 0 ? json_pack("{s:o, s:o, s:b}",
                                    "resourceRules",
                                    rules,
                                    "nonResourceRules",
                                    urls,
                                    "incomplete",
                                    error[0] != '\0')
                        : NULL;
        if (r < 0) {
                json_decref(rules);
                json_decref(urls);
        }
        if (!status ||
            (error[0] && json_object_set_new(status, "evaluationError", json_string(error)) < 0)) {
                json_decref(status);
                return -ENOMEM;
        }
        *ret = status;
        return 0;
}
