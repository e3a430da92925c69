/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The replies of the API server's handlers (src/server/reply.c): a failed patch's Warning header
 * is the reply's own, so a second failed patch built on the same thread before the first is sent
 * (a DELETE collection's answers, a retry) does not change what the first one says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/internal.h"

static const char *warning_of(const struct reply *r)
{
        for (size_t i = 0; i + 1 < XP_ELEMENTSOF(r->headers) && r->headers[i]; i += 2)
                if (strcmp(r->headers[i], "Warning") == 0)
                        return r->headers[i + 1];
        return NULL;
}

static void test_patch_warning_is_the_replys_own(void **state)
{
        struct reply first = {0}, second = {0};

        (void)state;
        assert_int_equal(reply_patch_failed(&first, "doc is missing key: /spec/x"), 0);
        assert_int_equal(reply_patch_failed(&second, "test \"failed\""), 0);
        assert_int_equal(first.code, 422);
        assert_non_null(warning_of(&first));
        assert_string_equal(warning_of(&first), "299 - \"doc is missing key: /spec/x\"");
        assert_string_equal(warning_of(&second), "299 - \"test \\\"failed\\\"\"");
        json_decref(first.body);
        json_decref(second.body);
}

static void test_patch_warning_is_printable_and_bounded(void **state)
{
        struct reply r = {0};
        char why[2000];

        (void)state;
        memset(why, 'a', sizeof why - 1);
        why[sizeof why - 1] = '\0';
        why[3] = '\n';
        assert_int_equal(reply_patch_failed(&r, why), 0);
        assert_true(strlen(warning_of(&r)) < sizeof r.warning);
        assert_memory_equal(warning_of(&r), "299 - \"aaa?a", 12);
        assert_int_equal(warning_of(&r)[strlen(warning_of(&r)) - 1], '"');
        json_decref(r.body);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_patch_warning_is_the_replys_own),
            cmocka_unit_test(test_patch_warning_is_printable_and_bounded),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
