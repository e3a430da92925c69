/* SPDX-License-Identifier: Apache-2.0 */
/* Reading kubeconfigs (xpool/kubeconfig.h) and the base64 decoder they need (xpool/base64.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/base64.h"
#include "xpool/kubeconfig.h"
#include "xpool/macro.h"

/* "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", wrapped as YAML folds it. */
#define CA_PEM "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="

static const char admin[] = "apiVersion: v1\n"
                            "kind: Config\n"
                            "clusters:\n"
                            "- name: other\n"
                            "  cluster:\n"
                            "    server: http://10.0.0.1:80\n"
                            "- name: xpool\n"
                            "  cluster:\n"
                            "    server: https://127.0.0.1:6443\n"
                            "    certificate-authority-data: " CA_B64 "\n"
                            "users:\n"
                            "- name: admin\n"
                            "  user:\n"
                            "    token: s3cret\n"
                            "contexts:\n"
                            "- name: xpool\n"
                            "  context:\n"
                            "    cluster: xpool\n"
                            "    user: admin\n"
                            "    namespace: team-a\n"
                            "- name: plain\n"
                            "  context:\n"
                            "    cluster: other\n"
                            "current-context: xpool\n";

static void base64_decodes(void **state)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
            {"", ""},
            {"Zg==", "f"},
            {"Zg", "f"},
            {"Zm8=", "fo"},
            {"Zm8", "fo"},
            {"Zm9v", "foo"},
            {"Zm9vYmFy", "foobar"},
            {"Zm9v\nYmFy\n", "foobar"},
            {" Zm 9v\tYm\r\nFy ", "foobar"},
            {"+/+/", "\xfb\xff\xbf"},
        };
        char *out;
        size_t len;

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                assert_int_equal(xp_base64_decode(cases[i].in, strlen(cases[i].in), &out, &len), 0);
                assert_int_equal(len, strlen(cases[i].out));
                assert_memory_equal(out, cases[i].out, len);
                assert_int_equal(out[len], '\0');
                free(out);
        }
        assert_int_equal(xp_base64_decode(CA_B64, strlen(CA_B64), &out, &len), 0);
        assert_string_equal(out, CA_PEM);
        free(out);
}

static void base64_rejects(void **state)
{
        static const char *const bad[] = {
            "Z",        /* a lone digit holds under a byte */
            "Zm9vY",    /* likewise after a full quantum */
            "Zg=",      /* one '=' where two are due */
            "Zm8==",    /* two where one is due */
            "Zm9v=",    /* padding after a full quantum */
            "Zg==Zg==", /* data after padding */
            "Zm9v!",    /* outside the alphabet */
            "Zm-v",     /* base64url is not what kubeconfigs hold */
        };
        char *out = (char *)"untouched";
        size_t len = 7;

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                assert_int_equal(xp_base64_decode(bad[i], strlen(bad[i]), &out, &len), -EINVAL);
                assert_string_equal(out, "untouched");
                assert_int_equal(len, 7);
        }
}

static void kubeconfig_current_context(void **state)
{
        struct xp_kubeconfig config;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(
            xp_kubeconfig_parse(admin, strlen(admin), "admin.kubeconfig", NULL, &config, &err), 0);
        assert_string_equal(config.context, "xpool");
        assert_string_equal(config.server, "https://127.0.0.1:6443");
        assert_string_equal(config.token, "s3cret");
        assert_string_equal(config.namespace, "team-a");
        assert_int_equal(config.ca_len, strlen(CA_PEM));
        assert_string_equal(config.ca_data, CA_PEM);
        assert_null(config.ca_file);
        assert_false(config.insecure);
        xp_kubeconfig_done(&config);
        assert_null(config.server);
}

static void kubeconfig_named_context(void **state)
{
        struct xp_kubeconfig config;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_kubeconfig_parse(admin, strlen(admin), NULL, "plain", &config, &err),
                         0);
        assert_string_equal(config.context, "plain");
        assert_string_equal(config.server, "http://10.0.0.1:80");
        assert_null(config.token); /* a context without a user */
        assert_null(config.namespace);
        assert_null(config.ca_data);
        xp_kubeconfig_done(&config);
}

static void expect_error(const char *text, const char *context, const char *message)
{
        struct xp_kubeconfig config = {.server = (char *)"untouched"};
        struct xp_error err = {0};

        assert_int_equal(xp_kubeconfig_parse(text, strlen(text), "kc", context, &config, &err),
                         -EINVAL);
        assert_string_equal(err.msg, message);
        assert_string_equal(config.server, "untouched");
}

static void kubeconfig_errors(void **state)
{
        (void)state;
        expect_error(admin, "nope", "kc: no context named \"nope\"");
        expect_error("clusters: []\n",
                     NULL,
                     "kc: current-context is not set: name a context with --context");
        expect_error("- a\n", NULL, "kc: not a kubeconfig (expected one YAML mapping)");
        expect_error("current-context: c\n"
                     "contexts:\n"
                     "- name: c\n"
                     "  context: {cluster: x, user: u}\n",
                     NULL,
                     "context \"c\": kc: no cluster named \"x\"");
        expect_error("current-context: c\n"
                     "contexts:\n"
                     "- name: c\n"
                     "  context: {cluster: x, user: u}\n"
                     "clusters:\n"
                     "- name: x\n"
                     "  cluster: {server: 'http://h:1'}\n",
                     NULL,
                     "context \"c\": kc: no user named \"u\"");
        expect_error("current-context: c\n"
                     "contexts:\n"
                     "- name: c\n"
                     "  context: {cluster: x}\n"
                     "clusters:\n"
                     "- name: x\n"
                     "  cluster:\n"
                     "    server: [1]\n",
                     NULL,
                     "kc:8:13: clusters[0].cluster.server: must be a string");
        expect_error("current-context: c\n"
                     "contexts:\n"
                     "- name: c\n"
                     "  context: {cluster: x}\n"
                     "clusters:\n"
                     "- name: x\n"
                     "  cluster:\n"
                     "    insecure-skip-tls-verify: true\n",
                     NULL,
                     "kc:8:5: cluster.server: not set: the cluster has no server URL");
        expect_error("current-context: c\n"
                     "contexts:\n"
                     "- name: c\n"
                     "  context: {cluster: x}\n"
                     "clusters:\n"
                     "- name: x\n"
                     "  cluster:\n"
                     "    server: https://h:1\n"
                     "    certificate-authority-data: 'not base64!'\n",
                     NULL,
                     "kc:9:33: clusters[0].cluster.certificate-authority-data: not valid base64");
        expect_error(
            "current-context: c\ncontexts: {}\n", NULL, "kc:2:11: contexts: must be a list");
        expect_error("a: [\n", NULL, "kc:2:1: did not find expected node content");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(base64_decodes),
            cmocka_unit_test(base64_rejects),
            cmocka_unit_test(kubeconfig_current_context),
            cmocka_unit_test(kubeconfig_named_context),
            cmocka_unit_test(kubeconfig_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
