/* SPDX-License-Identifier: Apache-2.0 */
/* The ServiceAccount admission's mutation of a new pod (src/registry/serviceaccount_mount.c),
 * against the shape kube-apiserver 1.32 gives a pod. The HTTP side is in
 * tests/integration/43-serviceaccounts.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/apischema.h"
#include "xpool/codec.h"
#include "xpool/jsonliteral.h"
#include "xpool/registry.h"

/* What kube-apiserver 1.32 stores for a pod of two containers and an init container
 * (kubectl get pod -o json, the volume's name aside). */
static const char upstream[] =
    "{\"spec\": {"
    " \"initContainers\": [{\"name\": \"i\", \"volumeMounts\": [{\"name\": \"kube-api-access-x2b4z\","
    "   \"readOnly\": true, \"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount\"}]}],"
    " \"containers\": ["
    "  {\"name\": \"a\", \"volumeMounts\": [{\"name\": \"data\", \"mountPath\": \"/data\"},"
    "   {\"name\": \"kube-api-access-x2b4z\", \"readOnly\": true,"
    "    \"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount\"}]},"
    "  {\"name\": \"b\", \"volumeMounts\": [{\"name\": \"kube-api-access-x2b4z\", \"readOnly\": true,"
    "    \"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount\"}]}],"
    " \"volumes\": [{\"name\": \"data\", \"emptyDir\": {}},"
    "  {\"name\": \"kube-api-access-x2b4z\", \"projected\": {\"defaultMode\": 420, \"sources\": ["
    "   {\"serviceAccountToken\": {\"expirationSeconds\": 3607, \"path\": \"token\"}},"
    "   {\"configMap\": {\"name\": \"kube-root-ca.crt\", \"items\": [{\"key\": \"ca.crt\", \"path\": \"ca.crt\"}]}},"
    "   {\"downwardAPI\": {\"items\": [{\"path\": \"namespace\","
    "     \"fieldRef\": {\"apiVersion\": \"v1\", \"fieldPath\": \"metadata.namespace\"}}]}}]}}]}}";

static const char plain[] =
    "{\"spec\": {"
    " \"initContainers\": [{\"name\": \"i\"}],"
    " \"containers\": [{\"name\": \"a\", \"volumeMounts\": [{\"name\": \"data\", \"mountPath\": \"/data\"}]},"
    "  {\"name\": \"b\", \"volumeMounts\": null}],"
    " \"volumes\": [{\"name\": \"data\", \"emptyDir\": {}}]}}";

static json_t *load(const char *text)
{
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);

        if (!j)
                fail_msg("%s: %s", text, e.text);
        return j;
}

static void assert_json(const json_t *got, const char *want_text)
{
        json_t *want = load(want_text);

        if (!json_equal(got, want)) {
                char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);

                print_error("got  %s\nwant %s\n", g, w);
                free(g);
                free(w);
                fail();
        }
        json_decref(want);
}

static void the_volume_and_its_mounts_are_upstreams(void **state)
{
        json_t *pod = load(plain);

        (void)state;
        assert_int_equal(xp_serviceaccount_mount(pod, "kube-api-access-x2b4z", true), 0);
        assert_json(pod, upstream);
        /* a second pass changes nothing: the volume is found by its prefix, the mounts by path */
        assert_int_equal(xp_serviceaccount_mount(pod, "kube-api-access-other", true), 0);
        assert_json(pod, upstream);
        json_decref(pod);
}

static void without_a_ca_the_configmap_source_is_left_out(void **state)
{
        json_t *pod = load("{\"spec\": {\"containers\": [{\"name\": \"a\"}]}}");
        json_t *sources;

        (void)state;
        assert_int_equal(xp_serviceaccount_mount(pod, "kube-api-access-abcde", false), 0);
        sources = json_object_get(
            json_object_get(
                json_array_get(json_object_get(json_object_get(pod, "spec"), "volumes"), 0),
                "projected"),
            "sources");
        assert_int_equal(json_array_size(sources), 2);
        assert_non_null(json_object_get(json_array_get(sources, 0), "serviceAccountToken"));
        assert_non_null(json_object_get(json_array_get(sources, 1), "downwardAPI"));
        json_decref(pod);
}

/* A container with its own mount at the path keeps it; with none left to mount, no volume. */
static void a_mount_of_the_path_is_kept(void **state)
{
        static const char own[] =
            "{\"spec\": {\"containers\": [{\"name\": \"a\", \"volumeMounts\": [{\"name\": \"mine\","
            " \"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount\"}]}],"
            " \"volumes\": [{\"name\": \"mine\", \"secret\": {\"secretName\": \"s\"}}]}}";
        json_t *pod = load(own), *mixed;

        (void)state;
        assert_int_equal(xp_serviceaccount_mount(pod, "kube-api-access-abcde", true), 0);
        assert_json(pod, own);
        json_decref(pod);

        mixed =
            load("{\"spec\": {\"containers\": [{\"name\": \"a\", \"volumeMounts\": [{\"name\":"
                 " \"mine\", \"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount\"}]},"
                 " {\"name\": \"b\"}], \"volumes\": [{\"name\": \"mine\", \"emptyDir\": {}}]}}");
        assert_int_equal(xp_serviceaccount_mount(mixed, "kube-api-access-abcde", true), 0);
        assert_int_equal(
            json_array_size(json_object_get(json_object_get(mixed, "spec"), "volumes")), 2);
        assert_int_equal(
            json_array_size(json_object_get(
                json_array_get(json_object_get(json_object_get(mixed, "spec"), "containers"), 0),
                "volumeMounts")),
            1);
        json_decref(mixed);
}

/* A pod that brings a kube-api-access-* volume (one made from another pod's spec) has it mounted
 * under its own name, and no second one added. */
static void a_brought_volume_is_used(void **state)
{
        json_t *pod =
            load("{\"spec\": {\"containers\": [{\"name\": \"a\"}],"
                 " \"volumes\": [{\"name\": \"kube-api-access-old12\", \"emptyDir\": {}}]}}");

        (void)state;
        assert_int_equal(xp_serviceaccount_mount(pod, "kube-api-access-abcde", true), 0);
        assert_json(pod,
                    "{\"spec\": {\"containers\": [{\"name\": \"a\", \"volumeMounts\": [{\"name\":"
                    " \"kube-api-access-old12\", \"readOnly\": true,"
                    " \"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount\"}]}],"
                    " \"volumes\": [{\"name\": \"kube-api-access-old12\", \"emptyDir\": {}}]}}");
        json_decref(pod);
}

static void a_spec_of_the_wrong_shape_is_left_to_validation(void **state)
{
        static const char *const bad[] = {
            "{\"spec\": \"x\"}",
            "{\"spec\": {\"containers\": [{\"name\": \"a\"}], \"volumes\": 3}}",
            "{\"spec\": {\"containers\": [{\"name\": \"a\", \"volumeMounts\": {}}]}}",
            "{\"spec\": {\"containers\": [7]}}",
        };

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                json_t *pod = load(bad[i]);

                assert_int_equal(xp_serviceaccount_mount(pod, "kube-api-access-abcde", true), 0);
                assert_json(pod, bad[i]);
                json_decref(pod);
        }
}

/* automountServiceAccountToken: the pod's word, else its account's, else yes. */
static void the_pod_wins_over_its_account(void **state)
{
        static const struct {
                const char *pod, *account;
                bool want;
        } cases[] = {
            {"{\"spec\": {}}", NULL, true},
            {"{\"spec\": {}}", "{}", true},
            {"{\"spec\": {}}", "{\"automountServiceAccountToken\": false}", false},
            {"{\"spec\": {}}", "{\"automountServiceAccountToken\": true}", true},
            {"{\"spec\": {\"automountServiceAccountToken\": false}}", NULL, false},
            {"{\"spec\": {\"automountServiceAccountToken\": false}}",
             "{\"automountServiceAccountToken\": true}",
             false},
            {"{\"spec\": {\"automountServiceAccountToken\": true}}",
             "{\"automountServiceAccountToken\": false}",
             true},
            {"{\"spec\": {\"automountServiceAccountToken\": null}}",
             "{\"automountServiceAccountToken\": false}",
             false},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                json_t *pod = load(cases[i].pod),
                       *account = cases[i].account ? load(cases[i].account) : NULL;

                if (xp_serviceaccount_automount(pod, account) != cases[i].want)
                        fail_msg("case %zu: pod %s, account %s", i, cases[i].pod, cases[i].account);
                json_decref(pod);
                json_decref(account);
        }
}

static void the_accounts_pull_secrets_go_to_a_pod_without(void **state)
{
        json_t *account =
            load("{\"imagePullSecrets\": [{\"name\": \"reg\"}, {\"name\": \"mirror\"}]}");
        json_t *pod = load("{\"spec\": {\"containers\": []}}");
        json_t *own = load("{\"spec\": {\"imagePullSecrets\": [{\"name\": \"mine\"}]}}");
        json_t *empty = load("{\"spec\": {\"imagePullSecrets\": []}}");

        (void)state;
        assert_int_equal(xp_serviceaccount_pull_secrets(pod, account), 0);
        assert_json(pod,
                    "{\"spec\": {\"containers\": [], \"imagePullSecrets\": [{\"name\": \"reg\"},"
                    " {\"name\": \"mirror\"}]}}");
        assert_int_equal(xp_serviceaccount_pull_secrets(own, account), 0);
        assert_json(own, "{\"spec\": {\"imagePullSecrets\": [{\"name\": \"mine\"}]}}");
        /* an empty list is none, as upstream's len() == 0 */
        assert_int_equal(xp_serviceaccount_pull_secrets(empty, account), 0);
        assert_json(
            empty,
            "{\"spec\": {\"imagePullSecrets\": [{\"name\": \"reg\"}, {\"name\": \"mirror\"}]}}");
        /* no account (the `default` just made) adds nothing */
        json_decref(pod);
        pod = load("{\"spec\": {}}");
        assert_int_equal(xp_serviceaccount_pull_secrets(pod, NULL), 0);
        assert_json(pod, "{\"spec\": {}}");
        json_decref(pod);
        json_decref(own);
        json_decref(empty);
        json_decref(account);
}

/* Whether json holds a real anywhere (a shared tree must hold none: xpool/jsonliteral.h). */
static bool holds_real(const json_t *json)
{
        const char *key;
        const json_t *member;
        size_t i;

        if (json_is_real(json))
                return true;
        json_object_foreach((json_t *)json, key, member) if (holds_real(member)) return true;
        json_array_foreach(json, i, member) if (holds_real(member)) return true;
        return false;
}

/* The projected sources every pod shares are marked so that a body's checks skip them: they
 * must pass the API schema's check of their type, strictly, and hold no real. */
static void the_shared_sources_pass_the_checks_they_skip(void **state)
{
        const struct xp_apischema *api;
        struct xp_error err = {0};
        (void)state;

        assert_int_equal(xp_apischema_builtin(&api, &err), 0);
        for (int with_ca = 0; with_ca < 2; with_ca++) {
                json_t *pod = load("{\"spec\": {\"containers\": [{\"name\": \"a\"}]}}");
                const json_t *source;

                assert_int_equal(xp_serviceaccount_mount(pod, "kube-api-access-abcde", with_ca), 0);
                source = json_object_get(
                    json_array_get(json_object_get(json_object_get(pod, "spec"), "volumes"), 0),
                    "projected");
                assert_true(xp_json_is_shared_tree(source));
                assert_int_equal(xp_apischema_check(xp_apischema_find(api, "ProjectedVolumeSource"),
                                                    source,
                                                    XP_DECODE_STRICT,
                                                    &err),
                                 0);
                assert_false(holds_real(source));
                json_decref(pod);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(the_volume_and_its_mounts_are_upstreams),
            cmocka_unit_test(without_a_ca_the_configmap_source_is_left_out),
            cmocka_unit_test(a_mount_of_the_path_is_kept),
            cmocka_unit_test(a_brought_volume_is_used),
            cmocka_unit_test(a_spec_of_the_wrong_shape_is_left_to_validation),
            cmocka_unit_test(the_pod_wins_over_its_account),
            cmocka_unit_test(the_accounts_pull_secrets_go_to_a_pod_without),
            cmocka_unit_test(the_shared_sources_pass_the_checks_they_skip),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
