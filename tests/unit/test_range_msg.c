/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A value under its minimum in kube-apiserver's words (src/core/range_msg.c): the text clients
 * match, byte for byte, with a value, a quoted one, none, and one too long for an error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <limits.h>

#include "core/schema.h"

static void integers(void **state)
{
        struct xp_ge_msg m;

        (void)state;
        assert_string_equal(xp_ge_msg_int(&m, -1, 0),
                            "Invalid value: -1: must be greater than or equal to 0");
        assert_string_equal(xp_ge_msg_int(&m, 0, 1),
                            "Invalid value: 0: must be greater than or equal to 1");
        assert_string_equal(
            xp_ge_msg_int(&m, LLONG_MIN, 0),
            "Invalid value: -9223372036854775808: must be greater than or equal to 0");
        /* it returns its buffer, for a "%s" argument */
        assert_ptr_equal(xp_ge_msg_int(&m, -2, 0), m.text);
}

static void quoted_and_named_bounds(void **state)
{
        struct xp_ge_msg m;

        (void)state;
        assert_string_equal(xp_ge_msg_quoted(&m, "-1Gi", 0),
                            "Invalid value: \"-1Gi\": must be greater than or equal to 0");
        assert_string_equal(xp_ge_msg_quoted(&m, "", 0),
                            "Invalid value: \"\": must be greater than or equal to 0");
        assert_string_equal(xp_ge_msg(&m, "3", "`minReplicas`"),
                            "Invalid value: 3: must be greater than or equal to `minReplicas`");
        /* a bound between two fields names no value */
        assert_string_equal(xp_ge_msg(&m, NULL, "the guaranteed quota"),
                            "Invalid value: must be greater than or equal to the guaranteed quota");
}

/* a value as long as an error's whole message is cut, never overrun */
static void long_value_is_cut(void **state)
{
        static char value[2 * XP_ERROR_MSG_MAX];
        struct xp_ge_msg m;

        (void)state;
        memset(value, '9', sizeof(value) - 1);
        xp_ge_msg_quoted(&m, value, 0);
        assert_int_equal(strlen(m.text), sizeof(m.text) - 1);
        assert_memory_equal(m.text, "Invalid value: \"999", 19);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(integers),
            cmocka_unit_test(quoted_and_named_bounds),
            cmocka_unit_test(long_value_is_cut),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
