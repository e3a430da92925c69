/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manifests of deploy/kubernetes: every document parses, its apiVersion and kind are ones
 * Kubernetes 1.32 serves (or kube-scheduler's and kustomize's own), and every field at every
 * depth is one of that type (tests/data/k8s/deploy-types-1.32.txt beside the API schema of
 * src/core/apischema.txt), an unknown one failing as kubectl --validate=strict would. Then what
 * the issue asks of them: the DaemonSet's host paths, tolerations and node selector; the
 * extender's stanza; RBAC limited to what the components do.
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/apischema.h"
#include "xpool/codec.h"
#include "xpool/yaml.h"

extern const char xp_apischema_text[];
extern const size_t xp_apischema_text_size;

static const struct {
        const char *api_version, *kind, *type;
} kinds[] = {
    {"v1", "Namespace", "Namespace"},
    {"v1", "ConfigMap", "ConfigMap"},
    {"v1", "Secret", "Secret"},
    {"v1", "ServiceAccount", "ServiceAccount"},
    {"v1", "Service", "Service"},
    {"apps/v1", "DaemonSet", "DaemonSet"},
    {"apps/v1", "Deployment", "Deployment"},
    {"rbac.authorization.k8s.io/v1", "ClusterRole", "ClusterRole"},
    {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "ClusterRoleBinding"},
    {"rbac.authorization.k8s.io/v1", "Role", "Role"},
    {"rbac.authorization.k8s.io/v1", "RoleBinding", "RoleBinding"},
    {"kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration", "KubeSchedulerConfiguration"},
    {"kustomize.config.k8s.io/v1beta1", "Kustomization", "Kustomization"},
};

static const char *const files[] = {
    "kustomization.yaml",
    "namespace.yaml",
    "config.yaml",
    "node-rbac.yaml",
    "node-daemonset.yaml",
    "extender-rbac.yaml",
    "extender.yaml",
    "scheduler/kube-scheduler-config.yaml",
};

static struct xp_apischema *schema;
static json_t *docs; /* every document of every file, in order */

static char *slurp(const char *path, size_t *len)
{
        FILE *f = fopen(path, "rb");
        char *buf;
        long n;

        if (!f)
                fail_msg("cannot open %s", path);
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        rewind(f);
        buf = malloc((size_t)n + 1);
        assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
        buf[n] = '\0';
        fclose(f);
        *len = (size_t)n;
        return buf;
}

/*
 * Blanks out the blocks of text (a type line at column 0 and its indented fields) whose type the
 * built-in schema already has: the kinds xpool serves move there from the test's file.
 */
static void without_builtin(char *text)
{
        const struct xp_apischema *builtin;
        struct xp_error err = {0};
        bool blank = false;

        if (xp_apischema_builtin(&builtin, &err) < 0)
                fail_msg("the built-in schema: %s", err.msg);
        for (char *line = text; *line;) {
                char *end = strchr(line, '\n');
                size_t n = end ? (size_t)(end - line) : strlen(line);

                if (n > 0 && line[0] != ' ' && line[0] != '#') {
                        char name[128];

                        snprintf(name, sizeof(name), "%.*s", (int)strcspn(line, " \n"), line);
                        blank = strncmp(line, "package ", 8) != 0 &&
                                xp_apischema_find(builtin, name) != NULL;
                }
                if (blank)
                        memset(line, ' ', n);
                line += n + (end ? 1 : 0);
        }
}

static int setup(void **state)
{
        char path[1024];
        size_t len;
        char *types, *all;
        struct xp_error err = {0};

        (void)state;
        snprintf(path, sizeof(path), "%s/k8s/deploy-types-1.32.txt", XPOOL_TEST_DATA);
        types = slurp(path, &len);
        without_builtin(types);
        len = strlen(types);
        all = malloc(xp_apischema_text_size + len + 2);
        memcpy(all, xp_apischema_text, xp_apischema_text_size);
        all[xp_apischema_text_size] = '\n';
        memcpy(all + xp_apischema_text_size + 1, types, len + 1);
        if (xp_apischema_parse(all, strlen(all), &schema, &err) < 0)
                fail_msg("the 1.32 types: %s", err.msg);
        free(types);
        free(all);
        docs = json_array();
        for (size_t i = 0; i < XP_ELEMENTSOF(files); i++) {
                struct xp_yaml_document *d = NULL;
                size_t n = 0;
                char *text;

                snprintf(
                    path, sizeof(path), "%s/../../deploy/kubernetes/%s", XPOOL_TEST_DATA, files[i]);
                text = slurp(path, &len);
                if (xp_yaml_load(text, len, files[i], &d, &n, &err) < 0)
                        fail_msg("%s", err.msg);
                for (size_t k = 0; k < n; k++)
                        json_array_append_new(
                            docs, json_pack("{s:s, s:O}", "file", files[i], "doc", d[k].root));
                xp_yaml_documents_free(d, n);
                free(text);
        }
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        json_decref(docs);
        xp_apischema_free(schema);
        return 0;
}

static const char *str(const json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

static void every_document_is_a_1_32_object(void **state)
{
        json_t *entry;
        size_t i, checked = 0;

        (void)state;
        json_array_foreach(docs, i, entry)
        {
                const json_t *doc = json_object_get(entry, "doc");
                const char *file = str(entry, "file"), *api = str(doc, "apiVersion"),
                           *kind = str(doc, "kind");
                const struct xp_apitype *type = NULL;
                struct xp_error err = {0};

                for (size_t k = 0; k < XP_ELEMENTSOF(kinds); k++)
                        if (api && kind && strcmp(api, kinds[k].api_version) == 0 &&
                            strcmp(kind, kinds[k].kind) == 0)
                                type = xp_apischema_find(schema, kinds[k].type);
                if (!type)
                        fail_msg("%s: %s %s is not a kind this test knows of Kubernetes 1.32",
                                 file,
                                 api ? api : "(no apiVersion)",
                                 kind ? kind : "(no kind)");
                if (xp_apischema_check(type, doc, XP_DECODE_STRICT, &err) < 0)
                        fail_msg("%s: %s: %s", file, kind, err.msg);
                checked++;
        }
        assert_true(checked >= 12);
}

static void the_check_catches_a_wrong_field(void **state)
{
        json_t *bad = json_loads(
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"a\",\"tolerationSecond\":3}]}}}}",
            0,
            NULL);
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(
            xp_apischema_check(xp_apischema_find(schema, "DaemonSet"), bad, XP_DECODE_STRICT, &err),
            -EINVAL);
        assert_non_null(strstr(err.msg, "tolerationSecond"));
        json_decref(bad);
}

/* The first document of that kind (and name, when not NULL). */
static const json_t *find(const char *kind, const char *name)
{
        json_t *entry;
        size_t i;

        json_array_foreach(docs, i, entry)
        {
                const json_t *doc = json_object_get(entry, "doc");
                if (strcmp(str(doc, "kind"), kind) == 0 &&
                    (!name || strcmp(str(json_object_get(doc, "metadata"), "name"), name) == 0))
                        return doc;
        }
        fail_msg("no %s %s", kind, name ? name : "");
        return NULL;
}

static void the_daemonset_reaches_the_kubelet_and_the_devices(void **state)
{
        static const char *const paths[] = {"/var/lib/kubelet/device-plugins",
                                            "/var/lib/kubelet/pod-resources",
                                            "/var/run/cdi",
                                            "/dev",
                                            "/sys"};
        const json_t *spec = json_object_get(
            json_object_get(json_object_get(find("DaemonSet", "xpool-node"), "spec"), "template"),
            "spec");
        const json_t *v;
        size_t i;

        (void)state;
        for (size_t p = 0; p < XP_ELEMENTSOF(paths); p++) {
                bool found = false;
                json_array_foreach(json_object_get(spec, "volumes"), i, v) found =
                    found || strcmp(str(json_object_get(v, "hostPath"), "path"), paths[p]) == 0;
                if (!found)
                        fail_msg("the DaemonSet mounts no hostPath %s", paths[p]);
        }
        assert_true(json_array_size(json_object_get(spec, "tolerations")) > 0);
        assert_string_equal(str(json_object_get(spec, "nodeSelector"), "xpool.io/node"), "true");
        /* both containers take the one list of resources left to another plugin */
        json_array_foreach(json_object_get(spec, "containers"), i, v)
        {
                const char *cmd =
                    json_string_value(json_array_get(json_object_get(v, "command"), 1));
                assert_true(strcmp(cmd, "device-plugin") == 0 || strcmp(cmd, "inventory") == 0);
                assert_string_equal(
                    json_string_value(json_array_get(json_object_get(v, "args"), 0)),
                    "--skip-resources");
        }
        assert_int_equal(i, 2);
}

static void the_scheduler_config_names_the_extender(void **state)
{
        const json_t *ext = json_array_get(
            json_object_get(find("KubeSchedulerConfiguration", NULL), "extenders"), 0);
        const json_t *r;
        size_t i;
        bool accel = false;

        (void)state;
        assert_string_equal(str(ext, "filterVerb"), "filter");
        assert_string_equal(str(ext, "prioritizeVerb"), "prioritize");
        assert_string_equal(str(ext, "bindVerb"), "bind");
        assert_true(json_is_true(json_object_get(ext, "nodeCacheCapable")));
        assert_true(json_is_true(json_object_get(ext, "enableHTTPS")));
        assert_non_null(json_object_get(ext, "ignorable"));
        assert_non_null(str(ext, "httpTimeout"));
        assert_true(json_integer_value(json_object_get(ext, "weight")) > 0);
        assert_non_null(strstr(str(ext, "urlPrefix"), ":8443/"));
        json_array_foreach(json_object_get(ext, "managedResources"),
                           i,
                           r) if (strcmp(str(r, "name"), "xpool.io/accelerator") == 0) accel =
            json_is_true(json_object_get(r, "ignoredByScheduler"));
        assert_true(accel);
}

static void rbac_is_least_privilege(void **state)
{
        const json_t *node = find("ClusterRole", "xpool-node"),
                     *ext = find("ClusterRole", "xpool-extender"), *rule;
        char *text;
        size_t i;

        (void)state;
        text = json_dumps(json_object_get(node, "rules"), JSON_COMPACT);
        assert_string_equal(
            text,
            "[{\"apiGroups\":[\"\"],\"resources\":[\"nodes\"],\"verbs\":[\"get\",\"patch\"]}]");
        free(text);
        json_array_foreach(json_object_get(ext, "rules"), i, rule)
        {
                text = json_dumps(rule, JSON_COMPACT);
                assert_null(strstr(text, "\"*\""));
                assert_null(strstr(text, "delete"));
                assert_null(strstr(text, "update"));
                free(text);
        }
        assert_int_equal(i, 2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(every_document_is_a_1_32_object),
            cmocka_unit_test(the_check_catches_a_wrong_field),
            cmocka_unit_test(the_daemonset_reaches_the_kubelet_and_the_devices),
            cmocka_unit_test(the_scheduler_config_names_the_extender),
            cmocka_unit_test(rbac_is_least_privilege),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
