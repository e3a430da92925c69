/* SPDX-License-Identifier: Apache-2.0 */
/* A container's env from ConfigMaps and Secrets (src/agent/podconfig.c), as the kubelet builds it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/podconfig.h"

/* The server's objects: "resource/name" -> object. */
static json_t *objects;

static int fake_get(const char *resource,
                    const char *ns,
                    const char *name,
                    json_t **ret,
                    void *userdata,
                    struct xp_error *err)
{
        char key[256];
        json_t *o;

        (void)err;
        ++*(int *)userdata;
        assert_string_equal(ns, "team");
        snprintf(key, sizeof(key), "%s/%s", resource, name);
        o = json_object_get(objects, key);
        if (!o)
                return -ENOENT;
        *ret = json_incref(o);
        return 0;
}

static int setup(void **state)
{
        (void)state;
        objects = json_loads(
            "{\"configmaps/app\":{\"data\":{\"mode\":\"fast\",\"level\":\"3\",\"1bad\":\"x\"}},"
            "\"secrets/db\":{\"data\":{\"password\":\"cGEkKEhPTUUpc3M=\",\"user\":\"YWRtaW4=\"}}}",
            0,
            NULL);
        assert_non_null(objects);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        json_decref(objects);
        return 0;
}

static json_t *pod_with(const char *container_json)
{
        char text[2048];
        json_t *pod;

        snprintf(text,
                 sizeof(text),
                 "{\"metadata\":{\"namespace\":\"team\"},\"spec\":{\"containers\":[%s]}}",
                 container_json);
        pod = json_loads(text, 0, NULL);
        assert_non_null(pod);
        return pod;
}

/* ret: 1, 0 or -errno; *wait and *env filled. */
static int resolve(const char *container_json, char **wait, char **invalid, json_t **env, int *gets)
{
        json_t *pod = pod_with(container_json), *out = NULL;
        struct xp_podconfig_reader reader = {.get = fake_get, .userdata = gets, .ns = "team"};
        struct xp_error err = {0};
        int r;

        *gets = 0;
        r = xp_podconfig_env(pod, "c", false, &reader, &out, wait, invalid, &err);
        *env = NULL;
        if (r > 0) {
                json_t *c =
                    json_array_get(json_object_get(json_object_get(out, "spec"), "containers"), 0);

                assert_null(json_object_get(c, "envFrom"));
                *env = json_incref(json_object_get(c, "env"));
        }
        json_decref(out);
        json_decref(reader.seen);
        json_decref(pod);
        return r;
}

static const char *var(const json_t *env, const char *name)
{
        const json_t *e;
        const char *found = NULL;
        size_t i;

        json_array_foreach(env, i, e)
        {
                if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
                        found = json_string_value(json_object_get(e, "value")); /* the last wins */
        }
        return found;
}

static void env_and_env_from(void **state)
{
        char *wait = NULL, *invalid = NULL;
        json_t *env = NULL;
        int gets;

        (void)state;
        assert_int_equal(
            resolve(
                "{\"name\":\"c\",\"envFrom\":[{\"prefix\":\"APP_\",\"configMapRef\":{\"name\":\"app\"}},"
                "{\"secretRef\":{\"name\":\"db\"}},{\"configMapRef\":{\"name\":\"app\"}}],"
                "\"env\":[{\"name\":\"APP_mode\",\"value\":\"$(HOME)\"},"
                "{\"name\":\"PW\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db\",\"key\":\"password\"}}},"
                "{\"name\":\"M\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"app\",\"key\":\"mode\"}}},"
                "{\"name\":\"F\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}]}",
                &wait,
                &invalid,
                &env,
                &gets),
            1);
        assert_int_equal(gets, 2); /* each object read once */
        assert_string_equal(var(env, "APP_level"), "3");
        assert_string_equal(var(env, "user"), "admin");
        assert_string_equal(var(env, "APP_mode"), "$(HOME)"); /* env over envFrom, expanded later */
        assert_string_equal(var(env, "PW"), "pa$$(HOME)ss");  /* a Secret's value is not expanded */
        assert_string_equal(var(env, "M"), "fast");
        assert_null(var(env, "F"));                     /* the downward API stays for the launch */
        assert_string_equal(var(env, "APP_1bad"), "x"); /* a name with the prefix */
        assert_null(var(env, "1bad"));
        assert_non_null(invalid);
        assert_string_equal(invalid,
                            "Keys [1bad] from the EnvFrom configMap team/app were skipped since "
                            "they are considered invalid environment variable names.\n");
        assert_null(wait);
        free(invalid);
        json_decref(env);
}

static void waits_in_kubelets_words(void **state)
{
        char *wait = NULL, *invalid = NULL;
        json_t *env = NULL;
        int gets;

        (void)state;
        assert_int_equal(
            resolve("{\"name\":\"c\",\"envFrom\":[{\"configMapRef\":{\"name\":\"gone\"}}]}",
                    &wait,
                    &invalid,
                    &env,
                    &gets),
            0);
        assert_string_equal(wait, "configmap \"gone\" not found");
        free(wait);
        assert_int_equal(
            resolve("{\"name\":\"c\",\"env\":[{\"name\":\"X\",\"valueFrom\":{\"secretKeyRef\":"
                    "{\"name\":\"gone\",\"key\":\"k\"}}}]}",
                    &wait,
                    &invalid,
                    &env,
                    &gets),
            0);
        assert_string_equal(wait, "secret \"gone\" not found");
        free(wait);
        assert_int_equal(
            resolve("{\"name\":\"c\",\"env\":[{\"name\":\"X\",\"valueFrom\":{\"configMapKeyRef\":"
                    "{\"name\":\"app\",\"key\":\"nope\"}}}]}",
                    &wait,
                    &invalid,
                    &env,
                    &gets),
            0);
        assert_string_equal(wait, "couldn't find key nope in ConfigMap team/app");
        free(wait);
        assert_int_equal(
            resolve("{\"name\":\"c\",\"env\":[{\"name\":\"X\",\"valueFrom\":{\"secretKeyRef\":"
                    "{\"name\":\"db\",\"key\":\"nope\"}}}]}",
                    &wait,
                    &invalid,
                    &env,
                    &gets),
            0);
        assert_string_equal(wait, "couldn't find key nope in Secret team/db");
        free(wait);
}

static void optional_ones_are_left_out(void **state)
{
        char *wait = NULL, *invalid = NULL;
        json_t *env = NULL;
        int gets;

        (void)state;
        assert_int_equal(
            resolve(
                "{\"name\":\"c\",\"envFrom\":[{\"configMapRef\":{\"name\":\"gone\",\"optional\":true}}],"
                "\"env\":[{\"name\":\"X\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db\","
                "\"key\":\"nope\",\"optional\":true}}},{\"name\":\"Y\",\"value\":\"y\"}]}",
                &wait,
                &invalid,
                &env,
                &gets),
            1);
        assert_null(var(env, "X"));
        assert_string_equal(var(env, "Y"), "y");
        assert_int_equal(json_array_size(env), 1);
        json_decref(env);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(env_and_env_from, setup, teardown),
            cmocka_unit_test_setup_teardown(waits_in_kubelets_words, setup, teardown),
            cmocka_unit_test_setup_teardown(optional_ones_are_left_out, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
