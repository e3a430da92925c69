/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rules a SelfSubjectRulesReview lists (kubectl auth can-i --list) against what
 * auth_authorize() decides: every request a listed rule covers is allowed, so the list never
 * promises what the server then refuses, and what a role may not do is not listed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server/auth.h"
#include "server/auth_rules.h"

static const char *const all_verbs[] = {
    "get", "list", "watch", "create", "update", "patch", "delete"};

static enum auth_verb verb_of(const char *s)
{
        for (int v = AUTH_GET; v <= AUTH_DELETE; v++)
                if (strcmp(auth_verb_to_string((enum auth_verb)v), s) == 0)
                        return (enum auth_verb)v;
        fail_msg("unknown verb %s in a rule", s);
        return AUTH_GET;
}

static struct auth_identity identity(enum xp_token_role role, const char *subject)
{
        struct auth_identity who = {.role = role};

        snprintf(who.subject, sizeof who.subject, "%s", subject);
        return who;
}

/* A rule's "*" stands for any value: the test tries these. */
static const char *const any_group[] = {"", "coordination.k8s.io", NULL};
static const char *const any_resource[] = {"pods", "nodes", "leases", "pods/status", NULL};

static void expect_allowed(const struct auth_identity *who,
                           const char *ns,
                           const char *verb,
                           const char *group,
                           const char *resource,
                           const char *name)
{
        char plural[128], reason[512];
        const char *slash = strchr(resource, '/');
        struct auth_request req = {.verb = verb_of(verb), .group = group, .namespace = ns};

        snprintf(plural,
                 sizeof plural,
                 "%.*s",
                 (int)(slash ? slash - resource : (long)strlen(resource)),
                 resource);
        req.resource = plural;
        req.subresource = slash ? slash + 1 : NULL;
        req.name = (req.verb == AUTH_LIST || req.verb == AUTH_WATCH) ? NULL : name;
        if (strcmp(plural, "nodes") == 0 || strcmp(plural, "namespaces") == 0)
                req.namespace = NULL;
        if (auth_authorize(who, &req, reason, sizeof reason) != AUTH_ALLOW)
                fail_msg("%s may %s %s.%s %s in %s by its rules, but is refused: %s",
                         who->subject,
                         verb,
                         resource,
                         group,
                         name ? name : "",
                         ns ? ns : "",
                         reason);
}

/* Every combination a resource rule covers is allowed. */
static void check_rule(const struct auth_identity *who, const char *ns, const json_t *rule)
{
        const json_t *verbs = json_object_get(rule, "verbs"),
                     *groups = json_object_get(rule, "apiGroups");
        const json_t *resources = json_object_get(rule, "resources");
        const json_t *names = json_object_get(rule, "resourceNames");
        size_t i, j, k;
        json_t *v, *g, *r;

        json_array_foreach(verbs, i, v) json_array_foreach(groups, j, g)
            json_array_foreach(resources, k, r)
        {
                const char *verb = json_string_value(v), *group = json_string_value(g);
                const char *resource = json_string_value(r);
                const char *name = names ? json_string_value(json_array_get(names, 0)) : "x";

                for (size_t a = 0; a < (strcmp(verb, "*") == 0 ? 7 : 1); a++)
                        for (size_t b = 0; strcmp(group, "*") != 0 ? b < 1 : any_group[b] != NULL;
                             b++)
                                for (size_t c = 0;
                                     strcmp(resource, "*") != 0 ? c < 1 : any_resource[c] != NULL;
                                     c++)
                                        expect_allowed(
                                            who,
                                            ns,
                                            strcmp(verb, "*") == 0 ? all_verbs[a] : verb,
                                            strcmp(group, "*") == 0 ? any_group[b] : group,
                                            strcmp(resource, "*") == 0 ? any_resource[c] : resource,
                                            name);
        }
}

static json_t *review(const struct auth_identity *who, const char *ns)
{
        json_t *status = NULL;

        assert_int_equal(auth_rules_review(who, ns, &status), 0);
        assert_non_null(status);
        return status;
}

static void check_role(enum xp_token_role role, const char *subject, const char *ns)
{
        struct auth_identity who = identity(role, subject);
        json_t *status = review(&who, ns), *rule;
        size_t i;

        assert_true(json_array_size(json_object_get(status, "resourceRules")) > 0);
        json_array_foreach(json_object_get(status, "resourceRules"), i, rule)
            check_rule(&who, ns, rule);
        json_decref(status);
}

static void every_listed_rule_is_allowed(void **state)
{
        (void)state;
        check_role(XP_TOKEN_ADMIN, "admin", "default");
        check_role(XP_TOKEN_READER, "ci", "default");
        check_role(XP_TOKEN_NODE, "n1", "default");
        check_role(XP_TOKEN_NODE, "n1", "kube-node-lease");
}

/* What a role may not do is in none of its rules; a node's list says it is incomplete. */
static void refusals_are_not_listed(void **state)
{
        struct auth_identity reader = identity(XP_TOKEN_READER, "ci");
        struct auth_identity node = identity(XP_TOKEN_NODE, "n1");
        json_t *status = review(&reader, "default"), *rule;
        char text[4096];
        size_t i;

        (void)state;
        json_array_foreach(json_object_get(status, "resourceRules"), i, rule)
        {
                const json_t *verbs = json_object_get(rule, "verbs");

                if (json_dumpb(verbs, text, sizeof text, JSON_COMPACT) == 0)
                        fail();
                if (strstr(text, "\"*\""))
                        fail_msg("a reader rule allows every verb");
                if (strstr(text, "delete") || strstr(text, "update"))
                        fail_msg("a reader rule allows writes");
        }
        assert_false(json_is_true(json_object_get(status, "incomplete")));
        json_decref(status);

        status = review(&node, "default");
        assert_true(json_is_true(json_object_get(status, "incomplete")));
        assert_non_null(
            strstr(json_string_value(json_object_get(status, "evaluationError")), "\"n1\""));
        /* the lease rule holds in kube-node-lease only */
        json_array_foreach(json_object_get(status, "resourceRules"), i, rule)
        {
                const json_t *verbs = json_object_get(rule, "verbs");

                if (json_dumpb(verbs, text, sizeof text, JSON_COMPACT) == 0)
                        fail();
                assert_null(strstr(text, "delete"));
        }
        json_decref(status);
}

static void user_groups(void **state)
{
        struct auth_identity who = identity(XP_TOKEN_NODE, "n1");
        json_t *groups = auth_user_groups(&who);

        (void)state;
        assert_string_equal(json_string_value(json_array_get(groups, 0)), "system:nodes");
        assert_string_equal(json_string_value(json_array_get(groups, 1)), "system:authenticated");
        json_decref(groups);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(every_listed_rule_is_allowed),
            cmocka_unit_test(refusals_are_not_listed),
            cmocka_unit_test(user_groups),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
