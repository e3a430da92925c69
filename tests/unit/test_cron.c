/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CronJob schedules (src/controller/cron_parse.c, cron_next.c), time zones from the system's
 * zoneinfo (tzfile.c, tzrule.c) and the CronJob controller's decisions (cronjob.c), on times
 * the test picks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "controller/cron.h"
#include "xpool/cron.h"

static int64_t utc(int y, int mo, int d, int h, int mi, int s)
{
        struct tm tm = {.tm_year = y - 1900,
                        .tm_mon = mo - 1,
                        .tm_mday = d,
                        .tm_hour = h,
                        .tm_min = mi,
                        .tm_sec = s};
        return (int64_t)timegm(&tm);
}

static struct xp_cron parse(const char *text)
{
        struct xp_cron c;
        struct xp_error err = {0};

        if (xp_cron_parse(text, &c, &err) < 0)
                fail_msg("parse '%s': %s", text, err.msg);
        return c;
}

static void fields(void **state)
{
        struct xp_cron c;
        (void)state;

        c = parse("*/15 * * * *");
        assert_int_equal(c.minutes, (1ULL << 0) | (1ULL << 15) | (1ULL << 30) | (1ULL << 45));
        assert_int_equal(c.hours, 0xffffff);
        assert_true(c.days_star && c.weekdays_star);
        c = parse("0 9-17/2 * * mon-FRI");
        assert_int_equal(c.hours, (1u << 9) | (1u << 11) | (1u << 13) | (1u << 15) | (1u << 17));
        assert_int_equal(c.weekdays, 0x3e);
        assert_false(c.weekdays_star);
        c = parse("5/20 0 1,15 jan,Jul ?");
        assert_int_equal(c.minutes, (1ULL << 5) | (1ULL << 25) | (1ULL << 45));
        assert_int_equal(c.days, (1u << 1) | (1u << 15));
        assert_int_equal(c.months, (1u << 1) | (1u << 7));
        assert_true(c.weekdays_star);
        c = parse("0 0 * * */2"); /* a step over "*" is no longer a star (robfig) */
        assert_false(c.weekdays_star);
        assert_int_equal(c.weekdays, 0x55);
        c = parse("0 0 * * */1");
        assert_true(c.weekdays_star);
        c = parse("@hourly");
        assert_int_equal(c.minutes, 1);
        assert_int_equal(c.hours, 0xffffff);
        c = parse("@weekly");
        assert_int_equal(c.weekdays, 1);
        c = parse("@yearly");
        assert_int_equal(c.months, 2);
        assert_int_equal(c.days, 2);
        c = parse("@every 90s");
        assert_int_equal(c.every_s, 90);
}

static void field_errors(void **state)
{
        static const struct {
                const char *text, *message;
        } cases[] = {
            {"* * * *", "expected exactly 5 fields, found 4: [* * * *]"},
            {"* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"},
            {"60 * * * *", "end of range (60) above maximum (59): 60"},
            {"5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"},
            {"0 0 0 * *", "beginning of range (0) below minimum (1): 0"},
            {"*/0 * * * *", "step of range should be a positive number: */0"},
            {"x * * * *",
             "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"},
            {"1-2-3 * * * *", "too many hyphens: 1-2-3"},
            {"*/2/3 * * * *", "too many slashes: */2/3"},
            {"0 0 * * 7", "end of range (7) above maximum (6): 7"},
            {"0 0 * foo *",
             "failed to parse int from foo: strconv.Atoi: parsing \"foo\": invalid syntax"},
            {"@fortnightly", "unrecognized descriptor: @fortnightly"},
            {"CRON_TZ=UTC 0 * * * *",
             "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
            {"", "empty spec string"},
        };
        struct xp_cron c = {.every_s = 77};
        struct xp_error err;
        (void)state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                err = (struct xp_error){0};
                assert_int_equal(xp_cron_parse(cases[i].text, &c, &err), -EINVAL);
                assert_string_equal(err.msg, cases[i].message);
                assert_int_equal(c.every_s, 77); /* untouched */
        }
}

static int64_t next(const char *schedule, const struct xp_tz *tz, int64_t t)
{
        struct xp_cron c = parse(schedule);
        int64_t r;

        assert_int_equal(xp_cron_next(&c, tz, t, &r), 0);
        return r;
}

static void next_utc(void **state)
{
        struct xp_cron c;
        int64_t r = 5;
        (void)state;

        assert_int_equal(next("*/15 * * * *", NULL, utc(2026, 12, 3, 10, 7, 30)),
                         utc(2026, 12, 3, 10, 15, 0));
        /* strictly after */
        assert_int_equal(next("*/15 * * * *", NULL, utc(2026, 12, 3, 10, 15, 0)),
                         utc(2026, 12, 3, 10, 30, 0));
        assert_int_equal(next("@daily", NULL, utc(2026, 12, 31, 23, 59, 59)),
                         utc(2027, 1, 1, 0, 0, 0));
        assert_int_equal(next("0 0 29 2 *", NULL, utc(2025, 3, 1, 0, 0, 0)),
                         utc(2028, 2, 29, 0, 0, 0));
        /* day of month and weekday both restricted: either matches (Friday 4th, before the 13th) */
        assert_int_equal(next("0 0 13 * 5", NULL, utc(2026, 12, 1, 0, 0, 0)),
                         utc(2026, 12, 4, 0, 0, 0));
        assert_int_equal(next("0 0 1-31 * fri", NULL, utc(2026, 12, 1, 0, 0, 0)),
                         utc(2026, 12, 2, 0, 0, 0));
        /* one of them a star: both must match (so the restricted one decides) */
        assert_int_equal(next("0 0 * * fri", NULL, utc(2026, 12, 1, 0, 0, 0)),
                         utc(2026, 12, 4, 0, 0, 0));
        assert_int_equal(next("0 0 13 * *", NULL, utc(2026, 12, 1, 0, 0, 0)),
                         utc(2026, 12, 13, 0, 0, 0));
        assert_int_equal(next("30 6-16/4 * * 1-5", NULL, utc(2026, 12, 4, 15, 0, 0)),
                         utc(2026, 12, 7, 6, 30, 0));
        assert_int_equal(next("@every 90s", NULL, 1000), 1090);
        c = parse("0 0 31 2 *");
        assert_int_equal(xp_cron_next(&c, NULL, utc(2026, 1, 1, 0, 0, 0), &r), -ERANGE);
        assert_int_equal(r, 5);
}

static struct xp_tz *zone(const char *name)
{
        struct xp_tz *tz = NULL;
        struct xp_error err = {0};

        if (access(XP_ZONEINFO_ROOT "/Europe/Berlin", R_OK) < 0)
                skip(); /* no tzdata: the zone cases need the system's zoneinfo */
        if (xp_tz_load(XP_ZONEINFO_ROOT, name, &tz, &err) < 0)
                fail_msg("%s: %s", name, err.msg);
        return tz;
}

static void zones(void **state)
{
        (void)state;
        struct xp_tz *ny = zone("America/New_York"), *syd = zone("Australia/Sydney"),
                     *kol = zone("Asia/Kolkata");

        assert_int_equal(xp_tz_offset(ny, utc(2026, 7, 1, 0, 0, 0)), -4 * 3600);
        assert_int_equal(xp_tz_offset(ny, utc(2026, 1, 1, 0, 0, 0)), -5 * 3600);
        /* past the table: the footer's rule (M3.2.0, M11.1.0) */
        assert_int_equal(xp_tz_offset(ny, utc(2100, 7, 1, 0, 0, 0)), -4 * 3600);
        assert_int_equal(xp_tz_offset(ny, utc(2100, 12, 1, 0, 0, 0)), -5 * 3600);
        /* the southern hemisphere: daylight time spans the new year */
        assert_int_equal(xp_tz_offset(syd, utc(2100, 1, 15, 0, 0, 0)), 11 * 3600);
        assert_int_equal(xp_tz_offset(syd, utc(2100, 7, 15, 0, 0, 0)), 10 * 3600);
        assert_int_equal(xp_tz_offset(syd, utc(2026, 1, 15, 0, 0, 0)), 11 * 3600);
        assert_int_equal(next("0 9 * * *", kol, utc(2026, 12, 3, 0, 0, 0)),
                         utc(2026, 12, 3, 3, 30, 0));
        assert_int_equal(next("0 9 * * *", ny, utc(2026, 12, 3, 0, 0, 0)),
                         utc(2026, 12, 3, 14, 0, 0));
        assert_int_equal(next("0 9 * * *", ny, utc(2026, 7, 3, 0, 0, 0)),
                         utc(2026, 7, 3, 13, 0, 0));
        xp_tz_free(ny);
        xp_tz_free(syd);
        xp_tz_free(kol);
}

static void daylight_changes(void **state)
{
        (void)state;
        struct xp_tz *berlin = zone("Europe/Berlin");

        /* 2026-03-29 02:00 CET becomes 03:00 CEST: 02:30 does not exist that day */
        assert_int_equal(next("30 2 * * *", berlin, utc(2026, 3, 28, 12, 0, 0)),
                         utc(2026, 3, 30, 0, 30, 0));
        /* 03:30 does: the first instant after the change with that local time */
        assert_int_equal(next("30 3 * * *", berlin, utc(2026, 3, 28, 12, 0, 0)),
                         utc(2026, 3, 29, 1, 30, 0));
        /* 2026-10-25 03:00 CEST becomes 02:00 CET: 02:30 happens twice, fires once */
        int64_t first = next("30 2 * * *", berlin, utc(2026, 10, 24, 12, 0, 0));
        assert_int_equal(first, utc(2026, 10, 25, 0, 30, 0));
        assert_int_equal(next("30 2 * * *", berlin, first), utc(2026, 10, 26, 1, 30, 0));
        /* every hour across the change: 02:00 CEST, 02:00 CET is the repeat and is skipped */
        assert_int_equal(next("0 * * * *", berlin, utc(2026, 10, 25, 0, 0, 0)),
                         utc(2026, 10, 25, 2, 0, 0));
        xp_tz_free(berlin);
}

static void zone_errors(void **state)
{
        static const char *const bad[] = {"Mars/Olympus",
                                          "../etc/passwd",
                                          "Local",
                                          "Europe/../etc",
                                          "/etc/localtime",
                                          "Europe",
                                          ""};
        struct xp_tz *tz = (struct xp_tz *)8;
        char want[128];
        (void)state;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct xp_error err = {0};
                assert_int_equal(xp_tz_load(XP_ZONEINFO_ROOT, bad[i], &tz, &err), -EINVAL);
                snprintf(want, sizeof(want), "unknown time zone %s", bad[i]);
                assert_string_equal(err.msg, want);
        }
        assert_ptr_equal(tz, (struct xp_tz *)8);
        struct xp_error err = {0};
        assert_int_equal(xp_tz_load("/nonexistent", "UTC", &tz, &err), 0);
        assert_int_equal(xp_tz_offset(tz, utc(2026, 7, 1, 0, 0, 0)), 0);
        xp_tz_free(tz);
}

static struct xp_cronjob_decision
decide(const char *schedule, const struct xp_cronjob_state *s, int64_t now)
{
        struct xp_cron c = parse(schedule);
        struct xp_cronjob_decision d;
        struct xp_error err = {0};

        if (xp_cronjob_decide(&c, NULL, s, now, &d, &err) < 0)
                fail_msg("decide: %s", err.msg);
        return d;
}

static void cronjob_decisions(void **state)
{
        struct xp_cronjob_state s = {.created_s = utc(2026, 12, 3, 10, 0, 30),
                                     .starting_deadline = -1};
        struct xp_cronjob_decision d;
        (void)state;

        d = decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 4, 0));
        assert_int_equal(d.action, XP_CRONJOB_WAIT);
        assert_int_equal(d.next_s, utc(2026, 12, 3, 10, 5, 0));
        d = decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 5, 10));
        assert_int_equal(d.action, XP_CRONJOB_CREATE);
        assert_int_equal(d.scheduled_s, utc(2026, 12, 3, 10, 5, 0));
        assert_int_equal(d.next_s, utc(2026, 12, 3, 10, 10, 0));
        /* taken: by status, or by the Job of that time existing (a restart before the status) */
        s.last_schedule_s = utc(2026, 12, 3, 10, 5, 0);
        assert_int_equal(decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 7, 0)).action,
                         XP_CRONJOB_WAIT);
        s.last_schedule_s = 0;
        s.scheduled_exists = true;
        assert_int_equal(decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 7, 0)).action,
                         XP_CRONJOB_WAIT);
        s.scheduled_exists = false;
        /* several missed: only the most recent runs */
        s.last_schedule_s = utc(2026, 12, 3, 10, 5, 0);
        d = decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 31, 0));
        assert_int_equal(d.action, XP_CRONJOB_CREATE);
        assert_int_equal(d.scheduled_s, utc(2026, 12, 3, 10, 30, 0));
        assert_false(d.too_many_missed);
        /* concurrency */
        s.n_active = 1;
        s.concurrency = XP_CRONJOB_ALLOW;
        d = decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 31, 0));
        assert_int_equal(d.action, XP_CRONJOB_CREATE);
        assert_false(d.replace);
        s.concurrency = XP_CRONJOB_FORBID;
        assert_int_equal(decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 31, 0)).action,
                         XP_CRONJOB_FORBIDDEN);
        s.concurrency = XP_CRONJOB_REPLACE;
        d = decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 31, 0));
        assert_int_equal(d.action, XP_CRONJOB_CREATE);
        assert_true(d.replace);
        /* suspended: nothing, whatever is due */
        s.suspend = true;
        assert_int_equal(decide("*/5 * * * *", &s, utc(2026, 12, 3, 10, 31, 0)).action,
                         XP_CRONJOB_WAIT);
}

static void missed_start_times(void **state)
{
        struct xp_cronjob_state s = {.created_s = utc(2026, 12, 3, 0, 0, 0),
                                     .starting_deadline = -1};
        struct xp_cronjob_decision d;
        (void)state;

        /* 200 minutes of an every-minute schedule missed: too many, the latest still runs */
        d = decide("* * * * *", &s, utc(2026, 12, 3, 3, 20, 0));
        assert_true(d.too_many_missed);
        assert_int_equal(d.action, XP_CRONJOB_CREATE);
        assert_int_equal(d.scheduled_s, utc(2026, 12, 3, 3, 20, 0));
        /* a starting deadline bounds the look back: not too many */
        s.starting_deadline = 90;
        d = decide("* * * * *", &s, utc(2026, 12, 3, 3, 20, 30));
        assert_false(d.too_many_missed);
        assert_int_equal(d.action, XP_CRONJOB_CREATE);
        assert_int_equal(d.scheduled_s, utc(2026, 12, 3, 3, 20, 0));
        /* ... and past it nothing is due: the start of 10:05 is not made up at 10:09 */
        s = (struct xp_cronjob_state){.created_s = utc(2026, 12, 3, 10, 0, 0),
                                      .starting_deadline = 60};
        d = decide("5 * * * *", &s, utc(2026, 12, 3, 10, 9, 0));
        assert_int_equal(d.action, XP_CRONJOB_WAIT);
        assert_int_equal(d.next_s, utc(2026, 12, 3, 11, 5, 0));
        d = decide("5 * * * *", &s, utc(2026, 12, 3, 10, 5, 50));
        assert_int_equal(d.action, XP_CRONJOB_CREATE);
}

static void job_names(void **state)
{
        char buf[64];
        (void)state;

        assert_int_equal(xp_cronjob_job_name("hello", utc(2026, 12, 3, 10, 5, 0), buf, sizeof(buf)),
                         0);
        assert_string_equal(buf, "hello-29938205");
        assert_int_equal(xp_cronjob_job_name("hello", 0, buf, 6), -ENAMETOOLONG);
}

static void history_limits(void **state)
{
        struct xp_cronjob_finished jobs[6] = {
            {.start_s = 50},
            {.start_s = 10},
            {.start_s = 30, .failed = true},
            {.start_s = 40},
            {.start_s = 20, .failed = true},
            {.start_s = 60},
        };
        bool del[6];
        (void)state;

        xp_cronjob_history(jobs, 6, 3, 1, del);
        /* 4 succeeded, keep 3: the one started at 10 goes; 2 failed, keep 1: the one at 20 */
        assert_true(del[1] && del[4]);
        assert_false(del[0] || del[2] || del[3] || del[5]);
        xp_cronjob_history(jobs, 6, 0, -1, del);
        assert_true(del[0] && del[1] && del[3] && del[5]);
        assert_false(del[2] || del[4]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(fields),
            cmocka_unit_test(field_errors),
            cmocka_unit_test(next_utc),
            cmocka_unit_test(zones),
            cmocka_unit_test(daylight_changes),
            cmocka_unit_test(zone_errors),
            cmocka_unit_test(cronjob_decisions),
            cmocka_unit_test(missed_start_times),
            cmocka_unit_test(job_names),
            cmocka_unit_test(history_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
