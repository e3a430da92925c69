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
#include <jansson.h>

#include "xpool/registry.h"

#define OLD_SPEC                                                                                   \
        "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\",\"command\":[\"sleep\"]}],"  \
        "\"activeDeadlineSeconds\":100,\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}}"

/* The check of an update from OLD_SPEC to the given pod; err's message in *message. */
static int check(const char *new_text, char *message, size_t size)
{
        json_t *old = json_loads(OLD_SPEC, 0, NULL), *new = json_loads(new_text, 0, NULL);
        struct xp_error err = {0};
        int r;

        assert_non_null(old);
        assert_non_null(new);
        r = xp_registry_pod_update_check(old, new, &err);
        snprintf(message, size, "%s", r < 0 ? xp_error_message(&err) : "");
        json_decref(old);
        json_decref(new);
        return r;
}

static void what_may_change(void **state)
{
        char m[2048];

        (void)state;
        /* the image, a lower deadline, an added toleration, an existing one's seconds */
        assert_int_equal(check("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:2\","
                               "\"command\":[\"sleep\"]}],\"activeDeadlineSeconds\":50,"
                               "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\","
                               "\"tolerationSeconds\":5},{\"key\":\"j\"}]}}",
                               m,
                               sizeof(m)),
                         0);
        /* semantic equality: [] and {} are the same as nothing */
        assert_int_equal(check("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\","
                               "\"command\":[\"sleep\"],\"env\":[]}],\"nodeSelector\":{},"
                               "\"activeDeadlineSeconds\":100,\"tolerations\":[{\"key\":\"k\","
                               "\"operator\":\"Exists\"}]}}",
                               m,
                               sizeof(m)),
                         0);
}

static void what_may_not(void **state)
{
        char m[2048];

        (void)state;
        assert_int_equal(check("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\","
                               "\"command\":[\"true\"]}],\"activeDeadlineSeconds\":100,"
                               "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}}",
                               m,
                               sizeof(m)),
                         -EINVAL);
        assert_non_null(strstr(m,
                               "spec: Forbidden: pod updates may not change fields other than "
                               "`spec.containers[*].image`,"));
        /* the diff names the field the way Go prints core.PodSpec */
        assert_non_null(strstr(m,
                               "- \tContainers[0].Command[0]: \"sleep\",\n"
                               "+ \tContainers[0].Command[0]: \"true\",\n"));
        assert_int_equal(check("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\","
                               "\"command\":[\"sleep\"]},{\"name\":\"b\",\"image\":\"y\"}]}}",
                               m,
                               sizeof(m)),
                         -EINVAL);
        assert_string_equal(m,
                            "spec.containers: Forbidden: pod updates may not add or remove "
                            "containers");
        assert_int_equal(check("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\","
                               "\"command\":[\"sleep\"]}],\"activeDeadlineSeconds\":101}}",
                               m,
                               sizeof(m)),
                         -EINVAL);
        assert_string_equal(m,
                            "spec.activeDeadlineSeconds: Invalid value: 101: must be less than "
                            "or equal to previous value");
        assert_int_equal(check("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\","
                               "\"command\":[\"sleep\"]}],\"activeDeadlineSeconds\":100,"
                               "\"tolerations\":[{\"key\":\"other\"}]}}",
                               m,
                               sizeof(m)),
                         -EINVAL);
        assert_string_equal(m,
                            "spec.tolerations: Forbidden: existing toleration can not be "
                            "modified except its tolerationSeconds");
        assert_int_equal(check("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\","
                               "\"command\":[\"sleep\"]}],\"activeDeadlineSeconds\":100,"
                               "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}],"
                               "\"nodeName\":\"n2\"}}",
                               m,
                               sizeof(m)),
                         -EINVAL);
        assert_non_null(strstr(m, "- \tNodeName: \"\",\n+ \tNodeName: \"n2\",\n"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(what_may_change),
            cmocka_unit_test(what_may_not),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
