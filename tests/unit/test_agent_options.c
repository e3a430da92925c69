/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "xpool/agent.h"

static void durations_with_units(void **state)
{
        int64_t ms = -1;

        (void)state;
        assert_int_equal(xp_agent_parse_duration_ms("500ms", &ms), 0);
        assert_int_equal(ms, 500);
        assert_int_equal(xp_agent_parse_duration_ms("10s", &ms), 0);
        assert_int_equal(ms, 10000);
        assert_int_equal(xp_agent_parse_duration_ms("2", &ms), 0);
        assert_int_equal(ms, 2000);
        assert_int_equal(xp_agent_parse_duration_ms("1.5m", &ms), 0);
        assert_int_equal(ms, 90000);
        assert_int_equal(xp_agent_parse_duration_ms("1h", &ms), 0);
        assert_int_equal(ms, 3600000);
}

static void bad_durations_change_nothing(void **state)
{
        static const char *const bad[] = {
            "", "s", "-1s", "0", "0.1ms", "10x", "25h", "1e400", " 5s", NULL};
        int64_t ms = 7;

        (void)state;
        for (size_t i = 0; bad[i]; i++) {
                if (xp_agent_parse_duration_ms(bad[i], &ms) != -EINVAL)
                        fail_msg("\"%s\" was taken", bad[i]);
                assert_int_equal(ms, 7);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(durations_with_units),
            cmocka_unit_test(bad_durations_change_nothing),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
