/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"
#include "xpool/logread.h"
#include "xpool/macro.h"

#define BASE_NS 1796250680000000000LL /* 2026-12-02T22:31:20Z */

struct out {
        char *data;
        size_t len;
        size_t calls_empty;
        int fail_after_empty; /* > 0: return -EPIPE at that many empty calls */
};

static int collect(const char *data, size_t len, void *userdata)
{
        struct out *o = userdata;

        if (len == 0) {
                o->calls_empty++;
                if (o->fail_after_empty > 0 && o->calls_empty >= (size_t)o->fail_after_empty)
                        return -EPIPE;
                return 0;
        }
        o->data = realloc(o->data, o->len + len + 1);
        assert_non_null(o->data);
        memcpy(o->data + o->len, data, len);
        o->len += len;
        o->data[o->len] = '\0';
        return 0;
}

static void write_file(const char *dir, const char *name, const char *text, bool append)
{
        char path[256];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        f = fopen(path, append ? "a" : "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* A CRI line at BASE + sec seconds (+ ns). */
static void cri(char *buf, size_t size, int sec, int ns, const char *tag, const char *msg)
{
        snprintf(buf, size, "2026-12-02T22:31:%02d.%09dZ stdout %s %s\n", 20 + sec, ns, tag, msg);
}

/* Attempt 0: .log.2 (lines 1-3), .log.1 (4-6), .log (7-9); line 5 in two P fragments. */
static void fixture(const char *dir)
{
        char l[256], text[2048] = "";

        for (int i = 1; i <= 3; i++) {
                char m[16];

                snprintf(m, sizeof m, "line %d", i);
                cri(l, sizeof l, i, 0, "F", m);
                strcat(text, l);
        }
        write_file(dir, "0.log.2", text, false);
        cri(l, sizeof l, 4, 0, "F", "line 4");
        strcpy(text, l);
        cri(l, sizeof l, 5, 0, "P", "li");
        strcat(text, l);
        cri(l, sizeof l, 5, 500, "F", "ne 5");
        strcat(text, l);
        cri(l, sizeof l, 6, 0, "F", "line 6");
        strcat(text, l);
        write_file(dir, "0.log.1", text, false);
        strcpy(text, "");
        for (int i = 7; i <= 9; i++) {
                char m[16];

                snprintf(m, sizeof m, "line %d", i);
                cri(l, sizeof l, i, 120000000, "F", m);
                strcat(text, l);
        }
        write_file(dir, "0.log", text, false);
}

static int setup(void **state)
{
        return tmpdir_setup(state, "logread", "c");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

static void
read_ok(const char *dir, unsigned attempt, struct xp_log_read_options o, struct out *out)
{
        struct xp_error err = {0};
        int r = xp_log_read(dir, attempt, &o, collect, out, &err);

        if (r < 0)
                fail_msg("xp_log_read: %d %s", r, err.msg);
}

static void all_across_rotation(void **state)
{
        struct tmpdir *t = *state;
        struct out out = {0};

        fixture(t->dir);
        read_ok(t->dir, 0, (struct xp_log_read_options){.tail_lines = -1}, &out);
        assert_string_equal(
            out.data, "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\n");
        free(out.data);
}

static void tail_across_rotation(void **state)
{
        struct tmpdir *t = *state;
        struct out out = {0};

        fixture(t->dir);
        read_ok(t->dir, 0, (struct xp_log_read_options){.tail_lines = 5}, &out);
        assert_string_equal(out.data, "line 5\nline 6\nline 7\nline 8\nline 9\n");
        free(out.data);
        out = (struct out){0};
        read_ok(t->dir, 0, (struct xp_log_read_options){.tail_lines = 1}, &out);
        assert_string_equal(out.data, "line 9\n");
        free(out.data);
        out = (struct out){0};
        read_ok(t->dir, 0, (struct xp_log_read_options){.tail_lines = 0}, &out);
        assert_null(out.data);
        read_ok(t->dir, 0, (struct xp_log_read_options){.tail_lines = 100}, &out);
        assert_int_equal(out.len, 63);
        free(out.data);
}

static void tail_of_big_file(void **state)
{
        struct tmpdir *t = *state;
        struct out out = {0};
        char path[256], l[256];
        FILE *f;

        /* 200000 lines (about 9 MiB) in one file: the tail must still be the last lines. */
        snprintf(path, sizeof path, "%s/3.log", t->dir);
        f = fopen(path, "w");
        assert_non_null(f);
        for (int i = 0; i < 200000; i++) {
                char m[32];

                snprintf(m, sizeof m, "row %06d", i);
                cri(l, sizeof l, 1, i, "F", m);
                fputs(l, f);
        }
        fclose(f);
        read_ok(t->dir, 3, (struct xp_log_read_options){.tail_lines = 2}, &out);
        assert_string_equal(out.data, "row 199998\nrow 199999\n");
        free(out.data);
}

static void since_limit_timestamps(void **state)
{
        struct tmpdir *t = *state;
        struct out out = {0};

        fixture(t->dir);
        read_ok(t->dir,
                0,
                (struct xp_log_read_options){.tail_lines = -1, .since_ns = BASE_NS + 7000000000LL},
                &out);
        assert_string_equal(out.data, "line 7\nline 8\nline 9\n");
        free(out.data);
        out = (struct out){0};
        read_ok(t->dir, 0, (struct xp_log_read_options){.tail_lines = -1, .limit_bytes = 10}, &out);
        assert_string_equal(out.data, "line 1\nlin");
        free(out.data);
        out = (struct out){0};
        read_ok(t->dir, 0, (struct xp_log_read_options){.tail_lines = 2, .timestamps = true}, &out);
        assert_string_equal(out.data,
                            "2026-12-02T22:31:28.12Z line 8\n2026-12-02T22:31:29.12Z line 9\n");
        free(out.data);
        out = (struct out){0};
        /* A joined line carries the time of its first fragment. */
        read_ok(t->dir, 0, (struct xp_log_read_options){.tail_lines = 5, .timestamps = true}, &out);
        assert_non_null(strstr(out.data, "2026-12-02T22:31:25Z line 5\n"));
        free(out.data);
}

static void malformed_and_partial(void **state)
{
        struct tmpdir *t = *state;
        struct out out = {0};
        char l[256], text[1024] = "";

        cri(l, sizeof l, 1, 0, "F", "ok");
        strcat(text, l);
        strcat(text, "garbage without prefix\n");
        cri(l, sizeof l, 2, 0, "P", "a");
        strcat(text, l);
        cri(l, sizeof l, 2, 1, "P", "b");
        strcat(text, l);
        cri(l, sizeof l, 2, 2, "F", "c");
        strcat(text, l);
        strcat(text, "2026-12-02T22:31:30Z stdout X bad tag\n");
        cri(l, sizeof l, 3, 0, "P", "no newline at exit");
        strcat(text, l);
        write_file(t->dir, "1.log", text, false);
        read_ok(t->dir, 1, (struct xp_log_read_options){.tail_lines = -1}, &out);
        assert_string_equal(
            out.data,
            "ok\ngarbage without prefix\nabc\n2026-12-02T22:31:30Z stdout X bad tag\nno newline at exit");
        free(out.data);
        out = (struct out){0};
        read_ok(t->dir, 1, (struct xp_log_read_options){.tail_lines = 3}, &out);
        assert_string_equal(out.data,
                            "abc\n2026-12-02T22:31:30Z stdout X bad tag\nno newline at exit");
        free(out.data);
}

static void latest_attempt(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        unsigned a = 99;

        assert_int_equal(xp_log_latest_attempt(t->dir, false, &a, &err), -ENOENT);
        assert_int_equal(a, 99);
        write_file(t->dir, "0.log.1", "x\n", false);
        assert_int_equal(xp_log_latest_attempt(t->dir, false, &a, &err), 0);
        assert_int_equal(a, 0);
        assert_int_equal(xp_log_latest_attempt(t->dir, true, &a, &err), -ENOENT);
        write_file(t->dir, "2.log", "x\n", false);
        write_file(t->dir, "10.log", "x\n", false);
        write_file(t->dir, "10.end", "", false);
        write_file(t->dir, "7.logfoo", "", false);
        assert_int_equal(xp_log_latest_attempt(t->dir, false, &a, &err), 0);
        assert_int_equal(a, 10);
        assert_int_equal(xp_log_latest_attempt(t->dir, true, &a, &err), 0);
        assert_int_equal(a, 2);
        assert_int_equal(xp_log_read(t->dir,
                                     5,
                                     &(struct xp_log_read_options){.tail_lines = -1},
                                     collect,
                                     &(struct out){0},
                                     &err),
                         -ENOENT);
        assert_non_null(strstr(err.msg, "attempt 5"));
}

struct writer {
        const char *dir;
};

static void sleep_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};

        nanosleep(&ts, NULL);
}

static void *writer_main(void *arg)
{
        struct writer *w = arg;
        char l[256], from[256], to[256];

        sleep_ms(100);
        cri(l, sizeof l, 2, 0, "F", "two");
        write_file(w->dir, "4.log", l, true);
        sleep_ms(100);
        cri(l, sizeof l, 3, 0, "P", "thr");
        write_file(w->dir, "4.log", l, true);
        /* Rotate: the live file becomes .log.1 and a new live one starts. */
        snprintf(from, sizeof from, "%s/4.log", w->dir);
        snprintf(to, sizeof to, "%s/4.log.1", w->dir);
        rename(from, to);
        sleep_ms(100);
        cri(l, sizeof l, 3, 1, "F", "ee");
        write_file(w->dir, "4.log", l, true);
        sleep_ms(100);
        cri(l, sizeof l, 4, 0, "F", "four");
        write_file(w->dir, "4.log", l, true);
        write_file(w->dir, "4.end", "", false);
        return NULL;
}

static void follow_rotation_end(void **state)
{
        struct tmpdir *t = *state;
        struct writer w = {.dir = t->dir};
        struct out out = {0};
        pthread_t th;
        char l[256];

        cri(l, sizeof l, 1, 0, "F", "one");
        write_file(t->dir, "4.log", l, false);
        assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
        read_ok(t->dir, 4, (struct xp_log_read_options){.follow = true, .tail_lines = -1}, &out);
        pthread_join(th, NULL);
        assert_string_equal(out.data, "one\ntwo\nthree\nfour\n");
        free(out.data);
}

/* The writer marks a log complete by taking its write bits away, after its last line: a
 * follow that starts before (woken by the mode change) or after ends once it has read it all. */
static void *complete_main(void *arg)
{
        struct writer *w = arg;
        char l[256], path[256];

        sleep_ms(100);
        cri(l, sizeof l, 2, 0, "F", "last");
        write_file(w->dir, "3.log", l, true);
        snprintf(path, sizeof path, "%s/3.log", w->dir);
        chmod(path, 0440);
        return NULL;
}

static void follow_ends_at_complete_mode(void **state)
{
        struct tmpdir *t = *state;
        struct writer w = {.dir = t->dir};
        struct out out = {0}, again = {0};
        pthread_t th;
        char l[256];

        cri(l, sizeof l, 1, 0, "F", "first");
        write_file(t->dir, "3.log", l, false);
        assert_int_equal(pthread_create(&th, NULL, complete_main, &w), 0);
        read_ok(t->dir, 3, (struct xp_log_read_options){.follow = true, .tail_lines = -1}, &out);
        pthread_join(th, NULL);
        assert_string_equal(out.data, "first\nlast\n");
        read_ok(t->dir, 3, (struct xp_log_read_options){.follow = true, .tail_lines = 1}, &again);
        assert_string_equal(again.data, "last\n");
        free(out.data);
        free(again.data);
}

static void follow_waits_for_file_and_stops(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        struct out out = {.fail_after_empty = 2};

        /* No file yet and no end: the reader waits, and stops when fn says so. */
        assert_int_equal(
            xp_log_read(t->dir,
                        0,
                        &(struct xp_log_read_options){.follow = true, .tail_lines = -1},
                        collect,
                        &out,
                        &err),
            -ECANCELED);
        assert_int_equal(out.calls_empty, 2);
        assert_null(out.data);
}

static void parse_and_format(void **state)
{
        const char *line = "2026-12-02T22:31:20.123456789Z stderr P hello world";
        char buf[XP_LOG_TIME_MAX];
        bool partial = false;
        size_t msg = 0;
        int64_t ns = 0;

        (void)state;
        assert_int_equal(xp_log_parse_cri(line, strlen(line), &ns, &partial, &msg), 0);
        assert_true(partial);
        assert_int_equal(ns, BASE_NS + 123456789);
        assert_string_equal(line + msg, "hello world");
        assert_int_equal(xp_log_format_time(ns, buf), 0);
        assert_string_equal(buf, "2026-12-02T22:31:20.123456789Z");
        assert_int_equal(xp_log_format_time(BASE_NS + 500000000, buf), 0);
        assert_string_equal(buf, "2026-12-02T22:31:20.5Z");
        assert_int_equal(xp_log_format_time(BASE_NS, buf), 0);
        assert_string_equal(buf, "2026-12-02T22:31:20Z");
        line = "2026-12-02T22:31:20Z stdout F";
        assert_int_equal(xp_log_parse_cri(line, strlen(line), &ns, &partial, &msg), 0);
        assert_false(partial);
        assert_int_equal(msg, strlen(line));
        line = "2026-12-02T22:31:20Z stdin F x";
        assert_int_equal(xp_log_parse_cri(line, strlen(line), &ns, &partial, &msg), -EINVAL);
        line = "not a time stdout F x";
        assert_int_equal(xp_log_parse_cri(line, strlen(line), &ns, &partial, &msg), -EINVAL);
        line = "2026-12-02T22:31:20Z stdout FF x";
        assert_int_equal(xp_log_parse_cri(line, strlen(line), &ns, &partial, &msg), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(parse_and_format),
            cmocka_unit_test_setup_teardown(all_across_rotation, setup, teardown),
            cmocka_unit_test_setup_teardown(tail_across_rotation, setup, teardown),
            cmocka_unit_test_setup_teardown(tail_of_big_file, setup, teardown),
            cmocka_unit_test_setup_teardown(since_limit_timestamps, setup, teardown),
            cmocka_unit_test_setup_teardown(malformed_and_partial, setup, teardown),
            cmocka_unit_test_setup_teardown(latest_attempt, setup, teardown),
            cmocka_unit_test_setup_teardown(follow_rotation_end, setup, teardown),
            cmocka_unit_test_setup_teardown(follow_waits_for_file_and_stops, setup, teardown),
            cmocka_unit_test_setup_teardown(follow_ends_at_complete_mode, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
