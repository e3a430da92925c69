/* SPDX-License-Identifier: Apache-2.0 */
/* The log rate of a state that lasts (src/util/log_limit.c), on a clock the test moves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "xpool/log_limit.h"
#include "xpool/map.h"

#define MINUTE 60000

/* A loop meeting the same failure every 20 ms for ten minutes writes it once a minute. */
static void the_same_state_is_written_once_per_interval(void **state)
{
        struct xp_log_limit limit = {0};
        uint64_t what = xp_hash_string("store: cannot be decrypted"), held = 99;
        int written = 0;

        (void)state;
        assert_true(xp_log_limit_check(&limit, what, 1000, MINUTE, &held));
        assert_int_equal(held, 0);
        written++;
        for (int64_t now = 1020; now < 1000 + 10 * MINUTE; now += 20)
                if (xp_log_limit_check(&limit, what, now, MINUTE, &held)) {
                        written++;
                        /* the rounds of the minute before, each 20 ms, held back */
                        assert_int_equal(held, MINUTE / 20 - 1);
                }
        assert_int_equal(written, 10);
}

/* A change is written at once, however soon; so is going back to an earlier state. */
static void a_change_is_written_at_once(void **state)
{
        struct xp_log_limit limit = {0};
        uint64_t a = xp_hash_string("a"), b = xp_hash_string("b"), held = 99;

        (void)state;
        assert_true(xp_log_limit_check(&limit, a, 0, MINUTE, NULL));
        assert_false(xp_log_limit_check(&limit, a, 10, MINUTE, NULL));
        assert_false(xp_log_limit_check(&limit, a, 20, MINUTE, NULL));
        assert_true(xp_log_limit_check(&limit, b, 30, MINUTE, &held));
        assert_int_equal(held, 0); /* what was held back was another state */
        assert_true(xp_log_limit_check(&limit, a, 40, MINUTE, &held));
        assert_false(xp_log_limit_check(&limit, a, 40 + MINUTE - 1, MINUTE, NULL));
        assert_true(xp_log_limit_check(&limit, a, 40 + MINUTE, MINUTE, &held));
        assert_int_equal(held, 1);
}

/* Once the state ended, its return is news. */
static void reset_makes_the_next_round_news(void **state)
{
        struct xp_log_limit limit = {0};
        uint64_t a = xp_hash_string("a"), held = 99;

        (void)state;
        assert_true(xp_log_limit_check(&limit, a, 0, MINUTE, NULL));
        assert_false(xp_log_limit_check(&limit, a, 5, MINUTE, NULL));
        xp_log_limit_reset(&limit);
        assert_true(xp_log_limit_check(&limit, a, 6, MINUTE, &held));
        assert_int_equal(held, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(the_same_state_is_written_once_per_interval),
            cmocka_unit_test(a_change_is_written_at_once),
            cmocka_unit_test(reset_makes_the_next_round_news),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
