/* SPDX-License-Identifier: Apache-2.0 */
/* What a pod names (xpool/podrefs.h): the node authorizer's relationships and the agent's waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/podrefs.h"

static const char pod_json[] =
    "{\"spec\":{"
    "\"imagePullSecrets\":[{\"name\":\"regcred\"}],"
    "\"initContainers\":[{\"name\":\"i\",\"envFrom\":[{\"secretRef\":{\"name\":\"init-env\"}}]}],"
    "\"containers\":[{\"name\":\"c\","
    "  \"env\":[{\"name\":\"A\",\"value\":\"x\"},"
    "          {\"name\":\"B\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db\",\"key\":\"pw\"}}},"
    "          {\"name\":\"C\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"settings\",\"key\":\"k\"}}},"
    "          {\"name\":\"D\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}],"
    "  \"envFrom\":[{\"configMapRef\":{\"name\":\"app-env\"},\"prefix\":\"APP_\"}]}],"
    "\"ephemeralContainers\":[{\"name\":\"e\",\"envFrom\":[{\"configMapRef\":{\"name\":\"debug\"}}]}],"
    "\"volumes\":["
    "  {\"name\":\"v1\",\"secret\":{\"secretName\":\"tls\"}},"
    "  {\"name\":\"v2\",\"configMap\":{\"name\":\"files\"}},"
    "  {\"name\":\"v3\",\"projected\":{\"sources\":[{\"secret\":{\"name\":\"proj-s\"}},"
    "                                          {\"configMap\":{\"name\":\"proj-c\"}},"
    "                                          {\"downwardAPI\":{}}]}},"
    "  {\"name\":\"v4\",\"emptyDir\":{}}]}}";

static void names_each_place(void **state)
{
        json_t *pod = json_loads(pod_json, 0, NULL);
        static const char *const secrets[] = {"regcred", "init-env", "db", "tls", "proj-s"};
        static const char *const configmaps[] = {"settings", "app-env", "debug", "files", "proj-c"};

        (void)state;
        assert_non_null(pod);
        for (size_t i = 0; i < 5; i++) {
                assert_true(xp_pod_references(pod, XP_POD_REF_SECRET, secrets[i]));
                assert_false(xp_pod_references(pod, XP_POD_REF_CONFIGMAP, secrets[i]));
                assert_true(xp_pod_references(pod, XP_POD_REF_CONFIGMAP, configmaps[i]));
                assert_false(xp_pod_references(pod, XP_POD_REF_SECRET, configmaps[i]));
        }
        assert_false(xp_pod_references(pod, XP_POD_REF_SECRET, "other"));
        assert_false(xp_pod_references(pod, XP_POD_REF_SECRET, ""));
        assert_false(xp_pod_references(pod, XP_POD_REF_SECRET, NULL));
        json_decref(pod);
}

static int count(const char *name, void *userdata)
{
        (void)name;
        ++*(int *)userdata;
        return 0;
}

static void visits_every_one(void **state)
{
        json_t *pod = json_loads(pod_json, 0, NULL);
        int n = 0;

        (void)state;
        assert_int_equal(xp_pod_refs_visit(pod, XP_POD_REF_SECRET, count, &n), 0);
        assert_int_equal(n, 5);
        n = 0;
        assert_int_equal(xp_pod_refs_visit(json_null(), XP_POD_REF_SECRET, count, &n), 0);
        assert_int_equal(n, 0);
        json_decref(pod);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(names_each_place),
            cmocka_unit_test(visits_every_one),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
