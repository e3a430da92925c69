/* SPDX-License-Identifier: Apache-2.0 */
/* Resource type names as users type them, and the URLs they map to (xpool/apiresource.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/apiresource.h"
#include "xpool/macro.h"

static void finds_every_spelling(void **state)
{
        static const struct {
                const char *typed, *plural;
        } cases[] = {
            {"pods", "pods"},
            {"pod", "pods"},
            {"po", "pods"},
            {"Pod", "pods"},
            {"PODS", "pods"},
            {"pods.", "pods"}, /* the core group, spelled empty */
            {"nodes", "nodes"},
            {"node", "nodes"},
            {"no", "nodes"},
            {"ns", "namespaces"},
            {"namespace", "namespaces"},
            {"ev", "events"},
            {"event", "events"},
            {"leases", "leases"},
            {"lease", "leases"},
            {"leases.coordination.k8s.io", "leases"},
            {"Lease.coordination.k8s.io", "leases"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                const struct xp_api_resource *r = xp_api_resource_find(cases[i].typed, NULL);

                if (!r)
                        fail_msg("%s not found", cases[i].typed);
                assert_string_equal(r->plural, cases[i].plural);
        }
}

static void unknown_names(void **state)
{
        static const char *const bad[] = {
            "", "p", "podss", "deployments", "pods.apps", "leases.", "le"};
        struct xp_error err = {0};

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++)
                assert_null(xp_api_resource_find(bad[i], &err));
        assert_null(xp_api_resource_find("deploy", &err));
        assert_string_equal(err.msg, "the server doesn't have a resource type \"deploy\"");
        assert_int_equal(err.code, -ENOENT);
}

static void by_kind(void **state)
{
        (void)state;
        assert_string_equal(xp_api_resource_by_kind("v1", "Pod")->plural, "pods");
        assert_string_equal(xp_api_resource_by_kind("coordination.k8s.io/v1", "Lease")->plural,
                            "leases");
        assert_null(xp_api_resource_by_kind("v1", "Lease"));
        assert_null(xp_api_resource_by_kind("apps/v1", "Deployment"));
        assert_null(xp_api_resource_by_kind(NULL, "Pod"));
}

static void paths(void **state)
{
        const struct xp_api_resource *pods = xp_api_resource_find("pods", NULL);
        const struct xp_api_resource *nodes = xp_api_resource_find("nodes", NULL);
        const struct xp_api_resource *leases = xp_api_resource_find("leases", NULL);
        char buf[128], small[20];

        (void)state;
        assert_int_equal(xp_api_resource_path(pods, "default", "web-1", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/api/v1/namespaces/default/pods/web-1");
        assert_int_equal(xp_api_resource_path(pods, "default", NULL, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/api/v1/namespaces/default/pods");
        assert_int_equal(xp_api_resource_path(pods, NULL, NULL, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/api/v1/pods");
        assert_int_equal(xp_api_resource_path(nodes, "default", "gpu-1", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/api/v1/nodes/gpu-1");
        assert_int_equal(xp_api_resource_path(leases, "kube-node-lease", "n1", buf, sizeof(buf)),
                         0);
        assert_string_equal(buf,
                            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1");
        /* what a user typed cannot escape its path segment */
        assert_int_equal(xp_api_resource_path(pods, "a/b", "../x?y#z", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/api/v1/namespaces/a%2Fb/pods/..%2Fx%3Fy%23z");
        assert_int_equal(xp_api_resource_path(pods, "default", "x", small, sizeof(small)),
                         -ENAMETOOLONG);
        assert_int_equal(xp_api_resource_path(pods, "default", NULL, buf, 0), -ENAMETOOLONG);
}

static void type_names(void **state)
{
        char buf[64];

        (void)state;
        assert_string_equal(
            xp_api_resource_type_name(xp_api_resource_find("po", NULL), buf, sizeof(buf)), "pod");
        assert_string_equal(
            xp_api_resource_type_name(xp_api_resource_find("leases", NULL), buf, sizeof(buf)),
            "lease.coordination.k8s.io");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(finds_every_spelling),
            cmocka_unit_test(unknown_names),
            cmocka_unit_test(by_kind),
            cmocka_unit_test(paths),
            cmocka_unit_test(type_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
