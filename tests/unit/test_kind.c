/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/manifest.h"

static void every_kind_is_in_the_table_once(void **state)
{
        static const char *const names[] = {"Pod", "Node", "Namespace", "Event", "Lease"};

        (void)state;
        /* the typed kinds first; document kinds follow (xpool/doc.h) */
        assert_true(xp_kinds_n >= 5);
        for (size_t i = 0; i < xp_kinds_n; i++) {
                const struct xp_kind *first =
                    xp_kind_by_resource(xp_kinds[i]->group, xp_kind_url_plural(xp_kinds[i]));

                assert_ptr_equal(
                    xp_kind_by_api_version(xp_kinds[i]->api_version, xp_kinds[i]->kind),
                    xp_kinds[i]);
                /* two groups may serve one kind name (PodGroup): by name, one of them */
                assert_string_equal(xp_kind_by_name(xp_kinds[i]->kind)->kind, xp_kinds[i]->kind);
                /* one store key, one group: the same resource in another version shares it,
                 * another group's resource of the same plural never (Volcano's podgroups) */
                for (size_t j = 0; j < i; j++)
                        if (strcmp(xp_kinds[j]->plural, xp_kinds[i]->plural) == 0)
                                assert_string_equal(xp_kinds[j]->group, xp_kinds[i]->group);
                /* a kind served in two versions (HorizontalPodAutoscaler v2, then v1): the first
                 * entry answers by resource, the same resource in another version */
                assert_non_null(first);
                if (first != xp_kinds[i]) {
                        assert_string_equal(first->group, xp_kinds[i]->group);
                        assert_string_not_equal(first->version, xp_kinds[i]->version);
                        assert_true(first < xp_kinds[i] || first > xp_kinds[i]);
                }
                assert_non_null(xp_kinds[i]->from_json);
                assert_non_null(xp_kinds[i]->to_json);
                assert_non_null(xp_kinds[i]->free);
                assert_non_null(xp_kinds[i]->meta);
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(names); i++) {
                const struct xp_kind *k = xp_kind_by_name(names[i]);
                size_t seen = 0;

                assert_non_null(k);
                for (size_t j = 0; j < xp_kinds_n; j++)
                        seen += xp_kinds[j] == k;
                assert_int_equal(seen, 1);
                /* the names hang together: list kind, apiVersion, and every operation is there */
                assert_true(strncmp(k->list_kind, k->kind, strlen(k->kind)) == 0);
                assert_string_equal(k->list_kind + strlen(k->kind), "List");
                if (k->group[0]) {
                        char api_version[64];

                        snprintf(api_version, sizeof(api_version), "%s/%s", k->group, k->version);
                        assert_string_equal(k->api_version, api_version);
                } else {
                        assert_string_equal(k->api_version, k->version);
                }
                assert_non_null(k->from_json);
                assert_non_null(k->to_json);
                assert_non_null(k->validate);
                assert_non_null(k->free);
                assert_non_null(k->meta);
                assert_non_null(k->short_names);
                assert_string_equal(xp_object_kind_to_string((enum xp_object_kind)(i + 1)),
                                    names[i]);
        }
}

static void kinds_are_found_by_every_name(void **state)
{
        (void)state;
        assert_ptr_equal(xp_kind_by_name("Pod"), &xp_kind_pod);
        assert_ptr_equal(xp_kind_by_name("Lease"), &xp_kind_lease);
        assert_null(xp_kind_by_name("pod"));
        assert_ptr_equal(xp_kind_by_name("Deployment"), &xp_kind_deployment);
        assert_null(xp_kind_by_name("CronTab"));
        assert_null(xp_kind_by_name(NULL));

        assert_ptr_equal(xp_kind_by_resource("", "pods"), &xp_kind_pod);
        assert_ptr_equal(xp_kind_by_resource("", "nodes"), &xp_kind_node);
        assert_ptr_equal(xp_kind_by_resource("", "namespaces"), &xp_kind_namespace);
        assert_ptr_equal(xp_kind_by_resource("", "events"), &xp_kind_event);
        assert_ptr_equal(xp_kind_by_resource("coordination.k8s.io", "leases"), &xp_kind_lease);
        /* a resource belongs to its group only */
        assert_null(xp_kind_by_resource("", "leases"));
        assert_null(xp_kind_by_resource("coordination.k8s.io", "pods"));
        assert_null(xp_kind_by_resource("events.k8s.io", "events"));
        assert_null(xp_kind_by_resource("", "pod"));

        assert_ptr_equal(xp_kind_by_api_version("v1", "Event"), &xp_kind_event);
        assert_ptr_equal(xp_kind_by_api_version("coordination.k8s.io/v1", "Lease"), &xp_kind_lease);
        assert_null(xp_kind_by_api_version("v1", "Lease"));
        assert_null(xp_kind_by_api_version("coordination.k8s.io/v1", "Pod"));
        assert_null(xp_kind_by_api_version("apps/v1", "Pod"));
        assert_null(xp_kind_by_api_version(NULL, "Pod"));

        assert_ptr_equal(xp_kind_by_any_name("po"), &xp_kind_pod);
        assert_ptr_equal(xp_kind_by_any_name("no"), &xp_kind_node);
        assert_ptr_equal(xp_kind_by_any_name("ns"), &xp_kind_namespace);
        assert_ptr_equal(xp_kind_by_any_name("ev"), &xp_kind_event);
        assert_ptr_equal(xp_kind_by_any_name("lease"), &xp_kind_lease);
        assert_ptr_equal(xp_kind_by_any_name("leases"), &xp_kind_lease);
        assert_ptr_equal(xp_kind_by_any_name("namespace"), &xp_kind_namespace);
        assert_null(xp_kind_by_any_name("Pod"));
        assert_ptr_equal(xp_kind_by_any_name("deploy"), &xp_kind_deployment);
        assert_null(xp_kind_by_any_name("ct"));
}

static void scope_follows_kubernetes(void **state)
{
        (void)state;
        assert_true(xp_kind_pod.namespaced);
        assert_true(xp_kind_event.namespaced);
        assert_true(xp_kind_lease.namespaced);
        assert_false(xp_kind_node.namespaced);
        assert_false(xp_kind_namespace.namespaced);
        assert_string_equal(xp_kind_lease.group, "coordination.k8s.io");
        assert_string_equal(xp_kind_namespace.short_names[0], "ns");
        assert_null(xp_kind_namespace.short_names[1]);
        assert_null(xp_kind_lease.short_names[0]);
}

static void *decode(const struct xp_kind *kind, const char *text)
{
        json_error_t jerr;
        json_t *json = json_loads(text, 0, &jerr);
        struct xp_error err = {0};
        void *object = NULL;

        if (!json)
                fail_msg("bad test JSON: %s", jerr.text);
        if (kind->from_json(json, NULL, 0, &object, &err) < 0)
                fail_msg("%s", err.msg);
        json_decref(json);
        return object;
}

static void operations_work_on_any_kind(void **state)
{
        void *lease = decode(&xp_kind_lease,
                             "{\"apiVersion\": \"coordination.k8s.io/v1\", \"kind\": \"Lease\","
                             " \"metadata\": {\"name\": \"l\", \"namespace\": \"kube-node-lease\"},"
                             " \"spec\": {\"holderIdentity\": \"n1\"}}");
        struct xp_error err = {0};
        json_t *json = NULL;
        void *object = NULL;

        (void)state;
        assert_string_equal(xp_kind_lease.meta(lease)->name, "l");
        assert_string_equal(xp_kind_lease.meta(lease)->namespace, "kube-node-lease");
        assert_int_equal(xp_kind_lease.validate(lease, &err), 0);
        assert_int_equal(xp_kind_lease.to_json(lease, &json), 0);
        assert_string_equal(json_string_value(json_object_get(json, "apiVersion")),
                            "coordination.k8s.io/v1");
        assert_string_equal(json_string_value(json_object_get(json, "kind")), "Lease");
        xp_kind_lease.free(lease);

        /* a kind's decoder refuses another kind's object and leaves *ret alone */
        assert_int_equal(xp_kind_event.from_json(json, NULL, 0, &object, &err), -EINVAL);
        assert_null(object);
        assert_string_equal(
            err.msg,
            "apiVersion: Unsupported value: \"coordination.k8s.io/v1\": Event is in apiVersion \"v1\"");
        json_decref(json);
        xp_kind_pod.free(NULL);
}

static void defaults_are_those_of_kube_apiserver(void **state)
{
        struct xp_pod *pod = decode(&xp_kind_pod,
                                    "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\":"
                                    " [{\"name\": \"c\", \"image\": \"i\"}]},"
                                    " \"status\": {\"phase\": \"Running\"}}");
        struct xp_namespace *ns = decode(&xp_kind_namespace, "{\"metadata\": {\"name\": \"ml\"}}");
        struct xp_namespace *finalized = decode(
            &xp_kind_namespace,
            "{\"metadata\": {\"name\": \"ml\"}, \"spec\": {\"finalizers\": [\"kubernetes\"]}}");

        (void)state;
        assert_int_equal(xp_kind_pod.set_defaults(pod), 0);
        assert_int_equal(pod->status.phase, XP_POD_PENDING);

        assert_int_equal(xp_kind_namespace.set_defaults(ns), 0);
        assert_int_equal(ns->status.phase, XP_NAMESPACE_ACTIVE);
        assert_int_equal(ns->spec.finalizers.n, 1);
        assert_string_equal(ns->spec.finalizers.items[0], "kubernetes");
        /* the finalizer is added once */
        assert_int_equal(xp_kind_namespace.set_defaults(finalized), 0);
        assert_int_equal(finalized->spec.finalizers.n, 1);
        assert_int_equal(finalized->status.phase, XP_NAMESPACE_ACTIVE);

        /* the API server leaves an Event's count and timestamps as sent, and has no Lease or
         * Node defaults */
        assert_null(xp_kind_event.set_defaults);
        assert_null(xp_kind_lease.set_defaults);
        assert_null(xp_kind_node.set_defaults);
        xp_pod_free(pod);
        xp_namespace_free(ns);
        xp_namespace_free(finalized);
}

/* The table in order, first match: what xp_kind_by_resource() answered before its index. */
static const struct xp_kind *scan_by_resource(const char *group, const char *plural)
{
        for (size_t i = 0; i < xp_kinds_n; i++)
                if (strcmp(xp_kinds[i]->group, group) == 0 &&
                    strcmp(xp_kind_url_plural(xp_kinds[i]), plural) == 0)
                        return xp_kinds[i];
        return NULL;
}

static void resource_index_answers_as_the_table_scan(void **state)
{
        static const char *const strangers[] = {
            "", "pod", "po", "Pods", "pods/status", "podspods", "s", "apps", "v1", "x.y.z"};
        const char *const *groups = xp_kind_groups();
        size_t asked = 0, found = 0;

        (void)state;
        /* every group with every name any kind answers to, and names none does */
        for (size_t g = 0; groups[g]; g++) {
                for (size_t i = 0; i < xp_kinds_n; i++) {
                        const char *names[] = {xp_kind_url_plural(xp_kinds[i]),
                                               xp_kinds[i]->plural,
                                               xp_kinds[i]->singular,
                                               xp_kinds[i]->kind,
                                               xp_kinds[i]->group};

                        for (size_t n = 0; n < XP_ELEMENTSOF(names); n++) {
                                const struct xp_kind *want = scan_by_resource(groups[g], names[n]);

                                assert_ptr_equal(xp_kind_by_resource(groups[g], names[n]), want);
                                asked++;
                                found += want != NULL;
                        }
                }
                for (size_t n = 0; n < XP_ELEMENTSOF(strangers); n++)
                        assert_ptr_equal(xp_kind_by_resource(groups[g], strangers[n]),
                                         scan_by_resource(groups[g], strangers[n]));
        }
        /* a group and a plural spelled across the separator are not the pair */
        assert_null(xp_kind_by_resource("p", "ods"));
        assert_null(xp_kind_by_resource("appsd", "eployments"));
        assert_null(xp_kind_by_resource(NULL, "pods"));
        assert_null(xp_kind_by_resource("", NULL));
        /* every kind was reached through its own group and resource at least once */
        assert_true(found >= xp_kinds_n);
        assert_true(asked > found);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(every_kind_is_in_the_table_once),
            cmocka_unit_test(kinds_are_found_by_every_name),
            cmocka_unit_test(resource_index_answers_as_the_table_scan),
            cmocka_unit_test(scope_follows_kubernetes),
            cmocka_unit_test(operations_work_on_any_kind),
            cmocka_unit_test(defaults_are_those_of_kube_apiserver),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
