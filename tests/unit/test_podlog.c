/* SPDX-License-Identifier: Apache-2.0 */
/* A pod log's options as a query (src/core/podlog.c): read by the server and the agent. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/macro.h"
#include "xpool/podlog.h"

/* A query as name=value pairs, NULL-terminated. */
static const char *lookup(void *userdata, const char *name)
{
        const char *const *q = userdata;

        for (; q[0]; q += 2)
                if (strcmp(q[0], name) == 0)
                        return q[1];
        return NULL;
}

static char *query_of(const char *const *q, int64_t now)
{
        struct xp_pod_log_options o;
        struct xp_pod_log_refusal bad;
        char *text = NULL;

        assert_int_equal(xp_pod_log_options_parse(lookup, (void *)q, &o, &bad), 0);
        assert_int_equal(xp_pod_log_options_query(&o, now, &text), 0);
        return text;
}

static void reads_and_writes_the_options(void **state)
{
        const char *none[] = {NULL};
        const char *all[] = {"follow",
                             "true",
                             "previous",
                             "1",
                             "timestamps",
                             "True",
                             "tailLines",
                             "0",
                             "sinceSeconds",
                             "30",
                             "limitBytes",
                             "100",
                             NULL};
        const char *no[] = {"follow", "false", "previous", "F", "tailLines", "7", NULL};
        struct xp_pod_log_options o;
        char *text;

        (void)state;
        assert_int_equal(xp_pod_log_options_parse(lookup, (void *)none, &o, NULL), 0);
        assert_false(o.follow || o.previous || o.timestamps);
        assert_int_equal(o.tail_lines, -1);
        assert_int_equal(o.since_seconds, -1);
        assert_int_equal(o.since_time, 0);
        assert_int_equal(o.limit_bytes, -1);
        text = query_of(none, 0);
        assert_string_equal(text, "");
        free(text);
        text = query_of(all, 0);
        assert_string_equal(text,
                            "follow=true&previous=true&timestamps=true&tailLines=0&sinceSeconds=30&"
                            "limitBytes=100");
        free(text);
        text = query_of(no, 0);
        assert_string_equal(text, "tailLines=7");
        free(text);
}

/* sinceTime goes to the agent as the seconds since then, at least one. */
static void since_time_as_seconds(void **state)
{
        const char *since[] = {"sinceTime", "2026-12-02T12:00:00Z", NULL};
        const char *later[] = {"sinceTime", "2030-01-01T00:00:00Z", NULL};
        const char *both[] = {"sinceTime", "not a time", "sinceSeconds", "5", NULL};
        const int64_t noon = 1796212800; /* 2026-12-02T12:00:00Z */
        struct xp_pod_log_options o;
        char *text;

        (void)state;
        text = query_of(since, noon + 90);
        assert_string_equal(text, "sinceSeconds=90");
        free(text);
        text = query_of(later, noon);
        assert_string_equal(text, "sinceSeconds=1");
        free(text);
        /* sinceSeconds wins, and sinceTime is not read */
        text = query_of(both, noon);
        assert_string_equal(text, "sinceSeconds=5");
        free(text);
        assert_int_equal(xp_pod_log_options_parse(lookup, (void *)since, &o, NULL), 0);
        assert_true(xp_pod_log_options_since_ns(&o, 0) == noon * 1000000000LL);
        assert_int_equal(xp_pod_log_options_parse(lookup, (void *)both, &o, NULL), 0);
        assert_true(xp_pod_log_options_since_ns(&o, 100 * 1000000000LL) == 95 * 1000000000LL);
}

static void refusals_name_the_option(void **state)
{
        static const struct {
                const char *name, *value, *want;
        } bad[] = {
            {"follow", "yes", "true or false"},
            {"previous", "", "true or false"},
            {"timestamps", "2", "true or false"},
            {"tailLines", "-1", "a number >= 0"},
            {"tailLines", "x", "a number >= 0"},
            {"tailLines", "1234567890123456789", "a number >= 0"},
            {"sinceSeconds", "0", "a number >= 1"},
            {"limitBytes", "0", "a number >= 1"},
            {"limitBytes", "", "a number >= 1"},
            {"sinceTime", "yesterday", "an RFC 3339 time"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                const char *q[] = {bad[i].name, bad[i].value, NULL};
                struct xp_pod_log_options o = {.tail_lines = 42};
                struct xp_pod_log_refusal r = {0};

                assert_int_equal(xp_pod_log_options_parse(lookup, (void *)q, &o, &r), -EINVAL);
                assert_string_equal(r.option, bad[i].name);
                assert_ptr_equal(r.value, bad[i].value);
                assert_string_equal(r.want, bad[i].want);
                assert_int_equal(o.tail_lines, 42); /* unchanged */
        }
}

/* A container that never started has no log: the kubelet's 400 words, by its waiting reason. */
static void not_started_says_why(void **state)
{
        char message[512];
        json_t *pod;

        (void)state;
        pod = json_loads(
            "{\"metadata\":{\"name\":\"web\"},\"status\":{\"containerStatuses\":["
            "{\"name\":\"c\",\"state\":{\"waiting\":{\"reason\":\"ImagePullBackOff\"}}},"
            "{\"name\":\"pull\",\"state\":{\"waiting\":{\"reason\":\"ErrImagePull\"}}},"
            "{\"name\":\"new\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}},"
            "{\"name\":\"loop\",\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}},"
            "\"lastState\":{\"terminated\":{\"exitCode\":1}}},"
            "{\"name\":\"up\",\"state\":{\"running\":{}}}]}}",
            0,
            NULL);
        assert_non_null(pod);
        assert_true(xp_pod_log_not_started(pod, "c", false, message, sizeof(message)));
        assert_string_equal(
            message,
            "container \"c\" in pod \"web\" is waiting to start: trying and failing to pull image");
        assert_true(xp_pod_log_not_started(pod, "pull", false, message, sizeof(message)));
        assert_string_equal(
            message,
            "container \"pull\" in pod \"web\" is waiting to start: image can't be pulled");
        assert_true(xp_pod_log_not_started(pod, "new", false, message, sizeof(message)));
        assert_string_equal(
            message, "container \"new\" in pod \"web\" is waiting to start: ContainerCreating");
        /* started once (its log is there), running, asked for the previous run, or not in the
         * status: the agent answers */
        assert_false(xp_pod_log_not_started(pod, "loop", false, message, sizeof(message)));
        assert_false(xp_pod_log_not_started(pod, "up", false, message, sizeof(message)));
        assert_false(xp_pod_log_not_started(pod, "c", true, message, sizeof(message)));
        assert_false(xp_pod_log_not_started(pod, "other", false, message, sizeof(message)));
        json_decref(pod);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(reads_and_writes_the_options),
            cmocka_unit_test(since_time_as_seconds),
            cmocka_unit_test(refusals_name_the_option),
            cmocka_unit_test(not_started_says_why),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
