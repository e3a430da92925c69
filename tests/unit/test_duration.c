/* SPDX-License-Identifier: Apache-2.0 */
/* The duration grammar of every flag and the two printed forms (src/util/duration.c). */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/duration.h"
#include "xpool/macro.h"

static void durations(void **state)
{
        static const struct {
                const char *text;
                int64_t ms;
        } good[] = {
            {"40s", 40000},
            {"5m", 300000},
            {"1m30s", 90000},
            {"500ms", 500},
            {"2h", 7200000},
            {"1.5s", 1500},
            {"10", 10000},
            {"2", 2000},
            {"1.5m", 90000},
            {"1h", 3600000},
            {"0.5", 500},
            {"1h1m1s1ms", 3661001},
        };
        static const char *const bad[] = {
            "", "s", "10x", "-5s", "5m3", "1y", "99999h", " 5s", "1e400", "5s ", "ms"};
        struct xp_error err = {0};
        int64_t ms;

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(good); i++) {
                ms = -1;
                assert_int_equal(xp_duration_parse(good[i].text, 0, XP_DURATION_YEAR_MS, &ms, &err),
                                 0);
                if (ms != good[i].ms)
                        fail_msg("'%s': %" PRId64 " ms, expected %" PRId64,
                                 good[i].text,
                                 ms,
                                 good[i].ms);
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                ms = -1;
                err = (struct xp_error){0};
                if (xp_duration_parse(bad[i], 0, XP_DURATION_YEAR_MS, &ms, &err) >= 0)
                        fail_msg("'%s' accepted as %" PRId64 " ms", bad[i], ms);
                assert_int_equal(ms, -1);
                assert_true(err.msg[0] != '\0');
        }
}

/* The agent's flags: at least a millisecond, at most a day. */
static void bounds(void **state)
{
        static const char *const out[] = {"0", "0.1ms", "25h", "24h1ms", "1441m"};
        struct xp_error err = {0};
        int64_t ms = 7;

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(out); i++) {
                err = (struct xp_error){0};
                if (xp_duration_parse(out[i], 1, XP_DURATION_DAY_MS, &ms, &err) != -ERANGE)
                        fail_msg("\"%s\" was taken", out[i]);
                assert_int_equal(ms, 7);
        }
        assert_non_null(strstr(err.msg, "longer than 24h"));
        assert_int_equal(xp_duration_parse("0", 1, XP_DURATION_DAY_MS, &ms, &err), -ERANGE);
        assert_non_null(strstr(err.msg, "duration '0': shorter than 1ms"));
        assert_int_equal(xp_duration_parse("24h", 1, XP_DURATION_DAY_MS, &ms, &err), 0);
        assert_int_equal(ms, XP_DURATION_DAY_MS);
        assert_int_equal(xp_duration_parse("1ms", 1, XP_DURATION_DAY_MS, &ms, &err), 0);
        assert_int_equal(ms, 1);
        assert_int_equal(xp_duration_parse("2y", 1, XP_DURATION_DAY_MS, &ms, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "unknown unit at 'y'"));
}

/* Go's time.Duration.String(), as the kubelet's back-off messages show it. */
static void go_form(void **state)
{
        static const struct {
                int64_t ms;
                const char *text;
        } cases[] = {
            {0, "0s"},
            {1, "1ms"},
            {999, "999ms"},
            {1000, "1s"},
            {1500, "1.5s"},
            {10000, "10s"},
            {60000, "1m0s"},
            {80000, "1m20s"},
            {300000, "5m0s"},
            {3600000, "1h0m0s"},
            {7205000, "2h0m5s"},
            {61010, "1m1.01s"},
        };
        char buf[XP_DURATION_MAX];

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                xp_duration_format(cases[i].ms, buf);
                if (strcmp(buf, cases[i].text) != 0)
                        fail_msg("%" PRId64 " ms: got \"%s\", expected \"%s\"",
                                 cases[i].ms,
                                 buf,
                                 cases[i].text);
        }
}

static void human_durations(void **state)
{
        static const struct {
                int64_t seconds;
                const char *text;
        } cases[] = {
            {INT64_MIN, "<invalid>"},
            {-5, "<invalid>"},
            {-2, "<invalid>"},
            {-1, "0s"},
            {0, "0s"},
            {1, "1s"},
            {59, "59s"},
            {119, "119s"},
            {120, "2m"},
            {121, "2m1s"},
            {182, "3m2s"},
            {300, "5m"},
            {599, "9m59s"},
            {600, "10m"},
            {3 * 3600 - 1, "179m"},
            {3 * 3600, "3h"},
            {4 * 3600 + 5 * 60 + 59, "4h5m"},
            {8 * 3600 - 1, "7h59m"},
            {8 * 3600, "8h"},
            {48 * 3600 - 1, "47h"},
            {48 * 3600, "2d"},
            {51 * 3600, "2d3h"},
            {8 * 86400 - 1, "7d23h"},
            {8 * 86400, "8d"},
            {729 * 86400, "729d"},
            {730 * 86400, "2y"},
            {731 * 86400, "2y1d"},
            {2919 * 86400, "7y364d"},
            {2920 * 86400, "8y"},
            {2921 * 86400, "8y"},
            {10000 * 86400LL, "27y"},
        };
        char buf[XP_DURATION_MAX];

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                xp_duration_human(cases[i].seconds, buf, sizeof(buf));
                if (strcmp(buf, cases[i].text) != 0)
                        fail_msg("%" PRId64 " s: got \"%s\", expected \"%s\"",
                                 cases[i].seconds,
                                 buf,
                                 cases[i].text);
        }
        xp_duration_human(INT64_MAX, buf, sizeof(buf));
        assert_string_equal(buf, "292471208677y");

        /* truncated, still terminated; size 0 writes nothing */
        xp_duration_human(119, buf, 3);
        assert_string_equal(buf, "11");
        buf[0] = 'x';
        xp_duration_human(119, buf, 0);
        assert_int_equal(buf[0], 'x');
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(durations),
            cmocka_unit_test(bounds),
            cmocka_unit_test(go_form),
            cmocka_unit_test(human_durations),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
