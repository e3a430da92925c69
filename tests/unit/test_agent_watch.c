/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/agent_internal.h"
#include "xpool/macro.h"

static int setup(void **state)
{
        struct xp_agent_pods *pods = calloc(1, sizeof(*pods));

        assert_non_null(pods);
        assert_int_equal(xp_agent_pods_init(pods), 0);
        pods->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(pods->wake_fd >= 0);
        *state = pods;
        return 0;
}

static int teardown(void **state)
{
        struct xp_agent_pods *pods = *state;

        close(pods->wake_fd);
        xp_agent_pods_done(pods);
        free(pods);
        return 0;
}

/* How often the loop was woken since the last call. */
static uint64_t wakes(struct xp_agent_pods *pods)
{
        uint64_t n = 0;

        if (read(pods->wake_fd, &n, sizeof(n)) < 0)
                return 0;
        return n;
}

static void list(struct xp_agent_pods *pods, const char *text)
{
        json_auto_t *json = json_loads(text, 0, NULL);
        struct xp_error err = {0};

        assert_non_null(json);
        if (xp_agent_pods_apply_list(pods, json, &err) < 0)
                fail_msg("list: %s", err.msg);
}

static void list_marks_present_dirty_and_absent_deleted(void **state)
{
        struct xp_agent_pods *pods = *state;

        list(pods,
             "{\"items\": [{\"metadata\": {\"uid\": \"u1\", \"name\": \"a\"}},"
             " {\"metadata\": {\"uid\": \"u2\", \"name\": \"b\"}}]}");
        assert_true(pods->listed);
        assert_int_equal(wakes(pods), 1);
        assert_int_equal(json_object_size(pods->dirty), 2);
        json_object_clear(pods->dirty);
        /* a relist after 410: u1 went away while we were not watching */
        list(pods, "{\"items\": [{\"metadata\": {\"uid\": \"u2\", \"name\": \"b\"}}]}");
        assert_true(json_is_null(json_object_get(pods->pods, "u1")));
        assert_true(json_is_object(json_object_get(pods->pods, "u2")));
        assert_non_null(json_object_get(pods->dirty, "u1"));
}

static void events_update_pods_and_resource_version(void **state)
{
        struct xp_agent_pods *pods = *state;
        struct xp_error err = {0};
        char *rv = NULL;

        assert_int_equal(
            xp_agent_pods_apply_event(pods,
                                      "{\"type\": \"ADDED\", \"object\": {\"metadata\":"
                                      " {\"uid\": \"u3\", \"resourceVersion\": \"7\"}}}",
                                      &rv,
                                      &err),
            0);
        assert_string_equal(rv, "7");
        free(rv);
        rv = NULL;
        assert_int_equal(wakes(pods), 1);
        assert_true(json_is_object(json_object_get(pods->pods, "u3")));
        assert_int_equal(
            xp_agent_pods_apply_event(pods,
                                      "{\"type\": \"DELETED\", \"object\": {\"metadata\":"
                                      " {\"uid\": \"u3\", \"resourceVersion\": \"9\"}}}",
                                      &rv,
                                      &err),
            0);
        assert_string_equal(rv, "9");
        free(rv);
        rv = NULL;
        assert_true(json_is_null(json_object_get(pods->pods, "u3")));
        /* a bookmark moves the resourceVersion and wakes nobody */
        assert_int_equal(
            xp_agent_pods_apply_event(pods,
                                      "{\"type\": \"BOOKMARK\", \"object\": {\"metadata\":"
                                      " {\"resourceVersion\": \"12\"}}}",
                                      &rv,
                                      &err),
            0);
        assert_string_equal(rv, "12");
        free(rv);
        assert_int_equal(wakes(pods), 1);
}

static void event(struct xp_agent_pods *pods, const char *line)
{
        struct xp_error err = {0};
        char *rv = NULL;

        if (xp_agent_pods_apply_event(pods, line, &rv, &err) < 0)
                fail_msg("event: %s", err.msg);
        free(rv);
}

#define DONE_POD                                                                                   \
        "{\"metadata\": {\"uid\": \"u5\", \"name\": \"job\", \"namespace\": \"ns\","               \
        " \"resourceVersion\": \"%d\", \"labels\": {\"a\": \"b\"}},"                               \
        " \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"x\"}]},"                      \
        " \"status\": {\"phase\": \"Succeeded\", \"containerStatuses\": [{\"name\": \"c\"}]}}"

/* A done pod is held slim until it is deleted, its later events too, and its deletion leaves
 * nothing of it behind. */
static void done_pods_are_kept_slim_and_dropped_when_deleted(void **state)
{
        struct xp_agent_pods *pods = *state;
        char line[1024], pod[512];
        json_t *kept, *slim;

        snprintf(pod, sizeof(pod), DONE_POD, 3);
        snprintf(line, sizeof(line), "{\"type\": \"ADDED\", \"object\": %s}", pod);
        event(pods, line);
        assert_non_null(json_object_get(json_object_get(pods->pods, "u5"), "spec"));
        assert_int_equal(xp_agent_pods_mark_done(pods, "u5", &slim), 0);
        assert_ptr_equal(slim, json_object_get(pods->pods, "u5"));
        json_decref(slim);
        /* a uid the watch does not hold is not remembered */
        assert_int_equal(xp_agent_pods_mark_done(pods, "u-none", &slim), 0);
        assert_null(slim);
        assert_int_equal(json_object_size(pods->done), 1);
        kept = json_object_get(pods->pods, "u5");
        assert_null(json_object_get(kept, "spec"));
        assert_null(json_object_get(json_object_get(kept, "metadata"), "labels"));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(kept, "metadata"), "name")), "job");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(kept, "status"), "phase")),
            "Succeeded");
        assert_null(json_object_get(json_object_get(kept, "status"), "containerStatuses"));
        /* its status echoed back: slim again, the pod still marked changed */
        json_object_clear(pods->dirty);
        snprintf(pod, sizeof(pod), DONE_POD, 4);
        snprintf(line, sizeof(line), "{\"type\": \"MODIFIED\", \"object\": %s}", pod);
        event(pods, line);
        kept = json_object_get(pods->pods, "u5");
        assert_null(json_object_get(kept, "spec"));
        assert_string_equal(json_string_value(json_object_get(json_object_get(kept, "metadata"),
                                                              "resourceVersion")),
                            "4");
        assert_non_null(json_object_get(pods->dirty, "u5"));
        /* deleted: the mark goes with it */
        snprintf(line, sizeof(line), "{\"type\": \"DELETED\", \"object\": %s}", pod);
        event(pods, line);
        assert_true(json_is_null(json_object_get(pods->pods, "u5")));
        assert_int_equal(json_object_size(pods->done), 0);
}

static void errors_say_what(void **state)
{
        struct xp_agent_pods *pods = *state;
        struct xp_error err = {0};
        char *rv = NULL;

        assert_int_equal(
            xp_agent_pods_apply_event(
                pods,
                "{\"type\": \"ERROR\", \"object\": {\"kind\": \"Status\", \"code\": 410,"
                " \"message\": \"too old resource version: 3\"}}",
                &rv,
                &err),
            -ESTALE);
        assert_non_null(strstr(err.msg, "too old resource version"));
        assert_int_equal(xp_agent_pods_apply_event(pods, "{\"type\": ", &rv, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "1:"));
        assert_int_equal(
            xp_agent_pods_apply_event(pods, "{\"type\": \"ADDED\", \"object\": {}}", &rv, &err),
            -EBADMSG);
        assert_non_null(strstr(err.msg, "metadata.uid"));
        assert_null(rv);
        assert_int_equal(json_object_size(pods->pods), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(
                list_marks_present_dirty_and_absent_deleted, setup, teardown),
            cmocka_unit_test_setup_teardown(
                events_update_pods_and_resource_version, setup, teardown),
            cmocka_unit_test_setup_teardown(errors_say_what, setup, teardown),
            cmocka_unit_test_setup_teardown(
                done_pods_are_kept_slim_and_dropped_when_deleted, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
