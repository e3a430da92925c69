/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/path.h"

static void formats_kubernetes_field_paths(void **state)
{
        struct xp_path path = {0};
        char text[XP_PATH_TEXT_MAX];

        (void)state;
        assert_string_equal(xp_path_format(&path, text, sizeof(text)), "");
        xp_path_push_field(&path, "spec");
        xp_path_push_field(&path, "containers");
        xp_path_push_index(&path, 0);
        xp_path_push_field(&path, "resources");
        xp_path_push_field(&path, "limits");
        xp_path_push_key(&path, "nvidia.com/gpu");
        assert_string_equal(xp_path_format(&path, text, sizeof(text)),
                            "spec.containers[0].resources.limits[nvidia.com/gpu]");
        assert_string_equal(xp_path_pointer(&path, text, sizeof(text)),
                            "/spec/containers/0/resources/limits/nvidia.com~1gpu");
        xp_path_pop(&path);
        xp_path_pop(&path);
        assert_string_equal(xp_path_format(&path, text, sizeof(text)),
                            "spec.containers[0].resources");
}

static void escapes_pointer_tokens(void **state)
{
        char buf[16] = "";

        (void)state;
        assert_int_equal(xp_json_pointer_append(buf, sizeof(buf), "a~b/c"), 0);
        assert_string_equal(buf, "/a~0b~1c");
        assert_int_equal(xp_json_pointer_append(buf, sizeof(buf), "toolongtoken"), -ENAMETOOLONG);
        assert_string_equal(buf, "/a~0b~1c");
}

static void deep_paths_do_not_overflow(void **state)
{
        struct xp_path path = {0};
        char text[XP_PATH_TEXT_MAX];

        (void)state;
        for (size_t i = 0; i < XP_PATH_MAX_DEPTH + 10; i++)
                xp_path_push_index(&path, i);
        assert_int_equal(path.depth, XP_PATH_MAX_DEPTH + 10);
        xp_path_format(&path, text, sizeof(text));
        assert_true(strlen(text) < sizeof(text));
        for (size_t i = 0; i < XP_PATH_MAX_DEPTH + 10; i++)
                xp_path_pop(&path);
        assert_int_equal(path.depth, 0);
        xp_path_pop(&path);
        assert_int_equal(path.depth, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(formats_kubernetes_field_paths),
            cmocka_unit_test(escapes_pointer_tokens),
            cmocka_unit_test(deep_paths_do_not_overflow),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
