/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduling loop (src/controller/scheduler*.c) on a temporary store, stepped by the test on
 * a clock it moves: no thread (bindings are written in the step), no real time.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/clock.h"
#include "controller/scheduler.h"
#include "registry/registry.h"
#include "tmpdir.h"
#include "xpool/store.h"

#define RETRY_MS          250  /* scheduler_internal.h: unschedulable pods wait this long */
#define EVENT_INTERVAL_MS 2000 /* and repeated failures update their Event this often */

struct fixture {
        struct tmpdir *dir;
        struct xp_store *store;
        struct xp_registry *registry;
        int64_t now_ms;
        struct xp_clock clock;
        struct xp_scheduler *scheduler;
};

static int64_t fake_ms(void *userdata)
{
        return *(int64_t *)userdata;
}

static int64_t fake_wall(void *userdata)
{
        return 1800000000 + *(int64_t *)userdata / 1000;
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof *f);
        struct xp_error err = {0};
        void *dir;

        assert_non_null(f);
        tmpdir_setup(&dir, "scheduler", "state.db");
        f->dir = dir;
        struct xp_store_options store_options = {.path = f->dir->path};
        if (xp_store_open(&store_options, &f->store, &err) < 0 ||
            xp_registry_new(f->store, &f->registry, &err) < 0)
                fail_msg("%s", err.msg);
        f->now_ms = 1000000;
        f->clock =
            (struct xp_clock){.monotonic_ms = fake_ms, .wall_s = fake_wall, .userdata = &f->now_ms};
        struct xp_scheduler_options options = {.clock = &f->clock, .bind_workers = 0};
        if (xp_scheduler_new(f->registry, &options, &f->scheduler, &err) < 0)
                fail_msg("scheduler: %s", err.msg);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        void *dir = f->dir;

        xp_scheduler_free(f->scheduler);
        xp_registry_free(f->registry);
        xp_store_close(f->store);
        free(f);
        return tmpdir_teardown(&dir);
}

static void step(struct fixture *f)
{
        struct xp_error err = {0};

        if (xp_scheduler_step(f->scheduler, &err) < 0)
                fail_msg("step: %s", err.msg);
}

static void put_node(struct fixture *f, const char *name, const char *cpu, const char *label)
{
        json_t *node = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s}, s:{s:s, s:s, "
                                 "s:s}, s:[{s:s, s:s}]}}",
                                 "apiVersion",
                                 "v1",
                                 "kind",
                                 "Node",
                                 "metadata",
                                 "name",
                                 name,
                                 "labels",
                                 "touch",
                                 label,
                                 "status",
                                 "capacity",
                                 "cpu",
                                 cpu,
                                 "memory",
                                 "8Gi",
                                 "pods",
                                 "110",
                                 "allocatable",
                                 "cpu",
                                 cpu,
                                 "memory",
                                 "8Gi",
                                 "pods",
                                 "110",
                                 "conditions",
                                 "type",
                                 "Ready",
                                 "status",
                                 "True");
        json_t *old;
        uint64_t version;

        assert_non_null(node);
        if (xp_store_get(f->store, "nodes", "", name, &old, &version, NULL) == 0) {
                json_decref(old);
                assert_int_equal(
                    xp_store_update(f->store, "nodes", "", name, 0, node, &version, NULL), 0);
        } else {
                assert_int_equal(xp_store_create(f->store, "nodes", "", name, node, &version, NULL),
                                 0);
        }
        json_decref(node);
}

static void put_pod(struct fixture *f, const char *name, const char *cpu, int priority)
{
        char uid[64];
        json_t *pod;
        uint64_t version;

        snprintf(uid, sizeof uid, "uid-%s", name);
        pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:i, s:[{s:s, s:s, s:{s:{s:s}}}]}, "
                        "s:{s:s}}",
                        "apiVersion",
                        "v1",
                        "kind",
                        "Pod",
                        "metadata",
                        "name",
                        name,
                        "namespace",
                        "default",
                        "uid",
                        uid,
                        "creationTimestamp",
                        "2027-01-15T08:00:00Z",
                        "spec",
                        "priority",
                        priority,
                        "containers",
                        "name",
                        "main",
                        "image",
                        "x",
                        "resources",
                        "limits",
                        "cpu",
                        cpu,
                        "status",
                        "phase",
                        "Pending");
        assert_non_null(pod);
        assert_int_equal(xp_store_create(f->store, "pods", "default", name, pod, &version, NULL),
                         0);
        json_decref(pod);
}

static json_t *get_pod(struct fixture *f, const char *name)
{
        json_t *pod;
        uint64_t version;

        assert_int_equal(xp_store_get(f->store, "pods", "default", name, &pod, &version, NULL), 0);
        return pod;
}

/* The pod's node ("" when unbound). */
static const char *node_of(struct fixture *f, const char *name, char buf[static 64])
{
        json_t *pod = get_pod(f, name);
        const char *node =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));

        snprintf(buf, 64, "%s", node ? node : "");
        json_decref(pod);
        return buf;
}

/* The pod's PodScheduled condition as "status reason message". */
static void expect_scheduled(struct fixture *f, const char *name, const char *want)
{
        json_t *pod = get_pod(f, name), *c;
        char got[512] = "none";
        size_t i;

        json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
        {
                if (strcmp(json_string_value(json_object_get(c, "type")), "PodScheduled") != 0)
                        continue;
                snprintf(got,
                         sizeof got,
                         "%s %s %s",
                         json_string_value(json_object_get(c, "status")),
                         json_string_value(json_object_get(c, "reason")) ?: "-",
                         json_string_value(json_object_get(c, "message")) ?: "-");
        }
        json_decref(pod);
        assert_string_equal(got, want);
}

/* The Events about pod with reason: how many, and the count of the last. */
static size_t events(struct fixture *f, const char *pod, const char *reason, int64_t *ret_count)
{
        json_t *items, *e;
        uint64_t version;
        size_t i, n = 0;

        assert_int_equal(xp_store_list(f->store, "events", "default", &items, &version, NULL), 0);
        *ret_count = 0;
        json_array_foreach(items, i, e)
        {
                const json_t *involved = json_object_get(e, "involvedObject");

                if (strcmp(json_string_value(json_object_get(involved, "name")), pod) != 0 ||
                    strcmp(json_string_value(json_object_get(e, "reason")), reason) != 0)
                        continue;
                assert_string_equal(
                    json_string_value(json_object_get(json_object_get(e, "source"), "component")),
                    "xpool-scheduler");
                *ret_count = json_integer_value(json_object_get(e, "count"));
                n++;
        }
        json_decref(items);
        return n;
}

static void binds_a_pending_pod(void **state)
{
        struct fixture *f = *state;
        char node[64];
        int64_t count;
        json_t *pod;

        put_node(f, "n1", "4", "a");
        put_pod(f, "web", "1", 0);
        step(f);
        assert_string_equal(node_of(f, "web", node), "n1");
        expect_scheduled(f, "web", "True - -");
        pod = get_pod(f, "web");
        assert_non_null(strstr(json_string_value(json_object_get(
                                   json_object_get(json_object_get(pod, "metadata"), "annotations"),
                                   "xpool.io/placement")),
                               "\"node\":\"n1\""));
        json_decref(pod);
        assert_int_equal(events(f, "web", "Scheduled", &count), 1);
        assert_int_equal(count, 1);
        step(f); /* the binding's own event: nothing more to do */
        assert_int_equal(events(f, "web", "Scheduled", &count), 1);
        assert_int_equal(events(f, "web", "FailedScheduling", &count), 0);
}

static void unschedulable_waits_for_the_cluster(void **state)
{
        struct fixture *f = *state;
        char node[64];
        int64_t count;

        put_node(f, "small", "4", "a");
        put_pod(f, "big", "8", 0);
        step(f);
        assert_string_equal(node_of(f, "big", node), "");
        expect_scheduled(
            f, "big", "False Unschedulable 0/1 nodes are available: 1 Insufficient cpu.");
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 1);

        /* a node that fits: tried again, but not before RETRY_MS since the last try */
        put_node(f, "large", "16", "a");
        step(f);
        assert_string_equal(node_of(f, "big", node), "");
        f->now_ms += RETRY_MS;
        step(f);
        assert_string_equal(node_of(f, "big", node), "large");
        expect_scheduled(f, "big", "True - -");
        assert_int_equal(events(f, "big", "Scheduled", &count), 1);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 1);
}

static void repeated_failures_count_on_one_event(void **state)
{
        struct fixture *f = *state;
        int64_t count;

        put_node(f, "small", "4", "a");
        put_pod(f, "big", "8", 0);
        step(f);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 1);
        /* a change to the node retries the pod; the Event waits for EVENT_INTERVAL_MS */
        put_node(f, "small", "4", "b");
        f->now_ms += RETRY_MS;
        step(f);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 1);
        put_node(f, "small", "4", "c");
        f->now_ms += EVENT_INTERVAL_MS;
        step(f);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 3);
}

static void capacity_freed_by_a_deletion(void **state)
{
        struct fixture *f = *state;
        char node[64];

        put_node(f, "n1", "4", "a");
        put_pod(f, "first", "3", 0);
        step(f);
        assert_string_equal(node_of(f, "first", node), "n1");
        put_pod(f, "second", "3", 0);
        step(f);
        assert_string_equal(node_of(f, "second", node), "");
        assert_int_equal(xp_store_delete(f->store, "pods", "default", "first", 0, NULL, NULL, NULL),
                         0);
        f->now_ms += RETRY_MS;
        step(f);
        assert_string_equal(node_of(f, "second", node), "n1");
}

static void priority_decides(void **state)
{
        struct fixture *f = *state;
        char node[64];

        put_node(f, "n1", "4", "a");
        put_pod(f, "low", "3", 10);
        put_pod(f, "high", "3", 100);
        step(f);
        assert_string_equal(node_of(f, "high", node), "n1");
        assert_string_equal(node_of(f, "low", node), "");
        expect_scheduled(
            f, "low", "False Unschedulable 0/1 nodes are available: 1 Insufficient cpu.");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(binds_a_pending_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(unschedulable_waits_for_the_cluster, setup, teardown),
            cmocka_unit_test_setup_teardown(repeated_failures_count_on_one_event, setup, teardown),
            cmocka_unit_test_setup_teardown(capacity_freed_by_a_deletion, setup, teardown),
            cmocka_unit_test_setup_teardown(priority_decides, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
