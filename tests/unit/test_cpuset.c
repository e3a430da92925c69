/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel CPU lists (src/util/cpuset.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/cpuset.h"
#include "xpool/macro.h"

static void cpuset_round_trips(void **state)
{
        static const struct {
                const char *text;
                const char *canonical;
                size_t count;
        } cases[] = {
            {"", "", 0},
            {"\n", "", 0},
            {"0", "0", 1},
            {"5\n", "5", 1},
            {"0-3", "0-3", 4},
            {"0-3,8-11", "0-3,8-11", 8},
            {"0-47,96-143\n", "0-47,96-143", 96},
            {"0,2,4,6", "0,2,4,6", 4},
            {"0,1,2,3", "0-3", 4},
            {"0-1,2-3", "0-3", 4},
            {"8,0-3", "0-3,8", 5},
            {"0-5,3-7", "0-7", 8},
            {"3-3", "3", 1},
            {"63-64", "63-64", 2},
            {"0-191", "0-191", 192},
            {"8191", "8191", 1},
            {"0-8191", "0-8191", 8192},
            {"1,8190-8191", "1,8190-8191", 3},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                struct xp_cpuset set, again;
                char *text = NULL, *text2 = NULL;

                memset(&set, 0xff, sizeof(set));
                if (xp_cpuset_parse(cases[i].text, &set) < 0)
                        fail_msg("\"%s\" did not parse", cases[i].text);
                assert_int_equal(xp_cpuset_count(&set), cases[i].count);
                assert_int_equal(xp_cpuset_format(&set, &text), 0);
                assert_string_equal(text, cases[i].canonical);
                /* the canonical form parses to the same set and formats to itself */
                assert_int_equal(xp_cpuset_parse(text, &again), 0);
                assert_memory_equal(&set, &again, sizeof(set));
                assert_int_equal(xp_cpuset_format(&again, &text2), 0);
                assert_string_equal(text2, text);
                free(text);
                free(text2);
        }
}

static void cpuset_members(void **state)
{
        struct xp_cpuset set;

        (void)state;
        assert_int_equal(xp_cpuset_parse("0-47,96-143", &set), 0);
        assert_true(xp_cpuset_has(&set, 0));
        assert_true(xp_cpuset_has(&set, 47));
        assert_false(xp_cpuset_has(&set, 48));
        assert_false(xp_cpuset_has(&set, 95));
        assert_true(xp_cpuset_has(&set, 96));
        assert_true(xp_cpuset_has(&set, 143));
        assert_false(xp_cpuset_has(&set, 144));
        assert_false(xp_cpuset_has(&set, XP_CPU_MAX));
        assert_false(xp_cpuset_has(&set, UINT32_MAX));

        /* add ignores CPUs past the bound */
        xp_cpuset_add(&set, 200);
        xp_cpuset_add(&set, 200);
        xp_cpuset_add(&set, XP_CPU_MAX);
        xp_cpuset_add(&set, UINT32_MAX);
        assert_int_equal(xp_cpuset_count(&set), 97);
        assert_true(xp_cpuset_has(&set, 200));
}

static void cpuset_bad_input(void **state)
{
        static const char *const bad[] = {
            "x",
            "0-x",
            "-1",
            "1-",
            "-",
            ",",
            ",1",
            "1,,2",
            "3-1",
            "0-3 4",
            "0-3 ",
            "1:2",
            "0x1",
            "+1",
            "1-+3",
            "0-3,a",
            "8192",
            "0-8192",
            "8191-8192",
            "4294967296",
            "4294967297-4294967298",
            "99999999999999999999999",
            "0-3,",   /* a trailing comma */
            "0-3\n5", /* more after the line end */
        };
        struct xp_cpuset set, before;

        (void)state;
        assert_int_equal(xp_cpuset_parse("1-2", &before), 0);
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                set = before;
                if (xp_cpuset_parse(bad[i], &set) != -EINVAL)
                        fail_msg("\"%s\" was accepted as a CPU list", bad[i]);
                assert_memory_equal(&set, &before, sizeof(set)); /* nothing changed */
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(cpuset_round_trips),
            cmocka_unit_test(cpuset_members),
            cmocka_unit_test(cpuset_bad_input),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
