/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's streams at once, each user's share (src/agent/stream_users.c): a user the server
 * names holds at most their share, and once they do the other users' streams still get in up to
 * the node's limit; a stream without a user counts against the node's only; an ended stream
 * gives its place back, to its own user; a name too long is refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/stream.h"
#include "agent/stream_internal.h"

static void one_user_holds_their_share_only(void **state)
{
        struct stream_users u;

        (void)state;
        stream_users_init(&u, 8, 2);
        assert_int_equal(stream_users_admit(&u, "aaaa"), 0);
        assert_int_equal(stream_users_admit(&u, "aaaa"), 0);
        assert_int_equal(stream_users_admit(&u, "aaaa"), -EDQUOT);
        assert_int_equal(stream_users_held(&u, "aaaa"), 2);
        /* the refused one took nothing: another user gets in */
        assert_int_equal(stream_users_admit(&u, "bbbb"), 0);
        assert_int_equal(stream_users_held(&u, "bbbb"), 1);
        assert_int_equal(u.active, 3);
        stream_users_release(&u, "aaaa");
        assert_int_equal(stream_users_admit(&u, "aaaa"), 0);
        assert_int_equal(stream_users_admit(&u, "aaaa"), -EDQUOT);
        stream_users_done(&u);
}

static void the_node_limit_holds_for_everyone(void **state)
{
        struct stream_users u;
        char name[8];

        (void)state;
        stream_users_init(&u, 4, 2);
        for (int i = 0; i < 4; i++) {
                snprintf(name, sizeof(name), "u%d", i);
                assert_int_equal(stream_users_admit(&u, name), 0);
        }
        assert_int_equal(stream_users_admit(&u, "u9"), -EBUSY);
        assert_int_equal(stream_users_admit(&u, NULL), -EBUSY);
        stream_users_release(&u, "u2");
        assert_int_equal(stream_users_held(&u, "u2"), 0);
        assert_int_equal(stream_users_admit(&u, "u9"), 0);
        assert_int_equal(u.active, 4);
        stream_users_done(&u);
}

static void streams_without_a_user_count_for_the_node_only(void **state)
{
        struct stream_users u;

        (void)state;
        stream_users_init(&u, 5, 1);
        for (int i = 0; i < 3; i++)
                assert_int_equal(stream_users_admit(&u, i == 1 ? "" : NULL), 0);
        assert_int_equal(stream_users_admit(&u, "cccc"), 0);
        assert_int_equal(stream_users_admit(&u, "cccc"), -EDQUOT);
        assert_int_equal(stream_users_admit(&u, NULL), 0);
        assert_int_equal(stream_users_admit(&u, NULL), -EBUSY);
        stream_users_release(&u, NULL);
        stream_users_release(&u, "cccc");
        assert_int_equal(u.active, 3);
        assert_int_equal(stream_users_held(&u, "cccc"), 0);
        stream_users_done(&u);
}

static void entries_are_reused_and_names_checked(void **state)
{
        struct stream_users u;
        char name[8];

        (void)state;
        stream_users_init(&u, 4, 4);
        /* users come and go: the table holds at most the streams held, not every name seen */
        for (int i = 0; i < 1000; i++) {
                snprintf(name, sizeof(name), "n%d", i);
                assert_int_equal(stream_users_admit(&u, name), 0);
                stream_users_release(&u, name);
        }
        assert_true(u.n <= 1);
        assert_int_equal(u.active, 0);
        assert_int_equal(stream_users_admit(&u, "a-name-far-too-long-for-a-user"), -EINVAL);
        assert_int_equal(u.active, 0);
        stream_users_done(&u);
}

static void the_agent_gives_each_user_a_quarter(void **state)
{
        (void)state;
        assert_int_equal(XP_AGENT_STREAMS_PER_USER * 4, XP_AGENT_STREAMS_MAX);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(one_user_holds_their_share_only),
            cmocka_unit_test(the_node_limit_holds_for_everyone),
            cmocka_unit_test(streams_without_a_user_count_for_the_node_only),
            cmocka_unit_test(entries_are_reused_and_names_checked),
            cmocka_unit_test(the_agent_gives_each_user_a_quarter),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
