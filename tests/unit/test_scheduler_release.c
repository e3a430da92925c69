/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which waiting pods leave the unschedulable set when a placed pod ends
 * (src/controller/scheduler_release.c): those that what the node has free covers, walked in
 * queue order, and not the others; and a pod that asks more than one end frees once enough ends
 * add up. On a temporary store, the loop stepped by the test on a clock it moves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scheduler_fixture.h"
#include "xpool/histogram.h"

#define RETRY_MS 250 /* scheduler_state.h: the longest gap between two releases */

static int setup(void **state)
{
        return scheduler_fixture_setup(state, "scheduler-release");
}

/* A pending pod asking cpu CPUs, created at second `second` (FIFO order), with a node selector
 * zone=selector unless NULL. */
static void put_pod(struct fixture *f,
                    const char *name,
                    const char *cpu,
                    int priority,
                    int second,
                    const char *selector)
{
        char spec_selector[64] = "";

        if (selector)
                snprintf(spec_selector,
                         sizeof spec_selector,
                         "\"nodeSelector\":{\"zone\":\"%s\"},",
                         selector);
        fixture_put_text(
            &f->base,
            "pods",
            "default",
            name,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
            "\"namespace\":\"default\",\"uid\":\"uid-%s\","
            "\"creationTimestamp\":\"2027-01-15T08:%02d:%02dZ\"},"
            "\"spec\":{%s\"priority\":%d,\"containers\":[{\"name\":\"main\",\"image\":\"x\","
            "\"resources\":{\"limits\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
            name,
            name,
            second / 60,
            second % 60,
            spec_selector,
            priority,
            cpu);
}

static const char *node_of(struct fixture *f, const char *name, char buf[static 64])
{
        json_t *pod = fixture_get(&f->base, "pods", "default", name);
        const char *node;

        assert_non_null(pod);
        node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        snprintf(buf, 64, "%s", node ? node : "");
        json_decref(pod);
        return buf;
}

static void finish_pod(struct fixture *f, const char *name)
{
        json_t *pod = fixture_get(&f->base, "pods", "default", name);

        assert_non_null(pod);
        assert_int_equal(
            json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Succeeded")),
            0);
        fixture_put(&f->base, "pods", "default", name, pod);
}

static uint64_t failed_attempts(struct fixture *f)
{
        uint64_t attempts[XP_SCHEDULER_RESULTS];
        struct xp_histogram_snapshot seconds;

        xp_scheduler_metrics(f->scheduler, attempts, &seconds);
        return attempts[XP_SCHEDULER_UNSCHEDULABLE];
}

/* Steps of the loop, RETRY_MS apart: every release due is made and its pods tried. */
static void steps(struct fixture *f, int n)
{
        for (int i = 0; i < n; i++) {
                f->base.now_ms += RETRY_MS;
                step(f);
        }
}

/* n1, a Ready node with 2 CPUs, labelled zone=zone: a new label makes a new version of it. */
static void put_node(struct fixture *f, const char *zone)
{
        fixture_put_text(&f->base,
                         "nodes",
                         "",
                         "n1",
                         "{\"apiVersion\":\"v1\",\"kind\":\"Node\","
                         "\"metadata\":{\"name\":\"n1\",\"labels\":{\"zone\":\"%s\"}},"
                         "\"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"8Gi\","
                         "\"pods\":\"110\"},"
                         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                         zone);
}

/* n1 full with two 1-CPU pods, run-0 and run-1, of a priority above every waiting pod's (so
 * that no preemption makes room). */
static void node_full(struct fixture *f)
{
        char node[64];

        put_node(f, "a");
        put_pod(f, "run-0", "1", 1000, 0, NULL);
        put_pod(f, "run-1", "1", 1000, 1, NULL);
        step(f);
        assert_string_equal(node_of(f, "run-0", node), "n1");
        assert_string_equal(node_of(f, "run-1", node), "n1");
}

/* One CPU freed releases the first of 100 waiting 1-CPU pods, not all 100: it is placed, and
 * nobody fails again. */
static void one_freed_cpu_releases_one_pod(void **state)
{
        struct fixture *f = *state;
        char name[32], node[64];
        uint64_t failed;

        node_full(f);
        for (int i = 0; i < 100; i++) {
                snprintf(name, sizeof name, "wait-%03d", i);
                put_pod(f, name, "1", 0, 10 + i, NULL);
        }
        step(f);
        failed = failed_attempts(f);
        assert_int_equal(failed, 100);

        finish_pod(f, "run-0");
        steps(f, 3);
        assert_string_equal(node_of(f, "wait-000", node), "n1");
        assert_string_equal(node_of(f, "wait-001", node), "");
        assert_int_equal(failed_attempts(f), failed);

        finish_pod(f, "wait-000");
        steps(f, 3);
        assert_string_equal(node_of(f, "wait-001", node), "n1");
        assert_string_equal(node_of(f, "wait-002", node), "");
        assert_int_equal(failed_attempts(f), failed);
}

/* A pod asking 2 CPUs is not released by one 1-CPU end, and is by the second: the headroom is
 * what the node has free, not what one end freed. */
static void two_ends_release_a_two_cpu_pod(void **state)
{
        struct fixture *f = *state;
        char node[64];

        node_full(f);
        put_pod(f, "big", "2", 0, 10, NULL);
        step(f);
        assert_int_equal(failed_attempts(f), 1);

        finish_pod(f, "run-0");
        steps(f, 3);
        assert_string_equal(node_of(f, "big", node), "");
        assert_int_equal(failed_attempts(f), 1);

        finish_pod(f, "run-1");
        steps(f, 3);
        assert_string_equal(node_of(f, "big", node), "n1");
        assert_int_equal(failed_attempts(f), 1);
}

/* What is freed goes to the higher priority, though it came later; the lower is not tried. */
static void released_in_priority_order(void **state)
{
        struct fixture *f = *state;
        char node[64];

        node_full(f);
        put_pod(f, "low", "1", 10, 10, NULL);
        put_pod(f, "high", "1", 100, 11, NULL);
        step(f);
        assert_int_equal(failed_attempts(f), 2);

        finish_pod(f, "run-0");
        steps(f, 3);
        assert_string_equal(node_of(f, "high", node), "n1");
        assert_string_equal(node_of(f, "low", node), "");
        assert_int_equal(failed_attempts(f), 2);

        finish_pod(f, "high");
        steps(f, 3);
        assert_string_equal(node_of(f, "low", node), "n1");
}

/* Pods of one shape ask the same: once the headroom refuses one, the walk passes the rest of
 * that shape by, and still releases pods of another shape between and behind them; the next
 * walk looks at the refused shape again. */
static void a_refused_shape_is_passed_by_in_that_walk_only(void **state)
{
        struct fixture *f = *state;
        char node[64];

        node_full(f);
        put_pod(f, "big-0", "2", 0, 10, NULL);
        put_pod(f, "small-0", "1", 0, 11, NULL);
        put_pod(f, "big-1", "2", 0, 12, NULL);
        put_pod(f, "small-1", "1", 0, 13, NULL);
        step(f);
        assert_int_equal(failed_attempts(f), 4);

        /* one CPU: big-0 refused (big-1 with it), small-0 released, small-1 refused */
        finish_pod(f, "run-0");
        steps(f, 3);
        assert_string_equal(node_of(f, "small-0", node), "n1");
        assert_string_equal(node_of(f, "big-0", node), "");
        assert_string_equal(node_of(f, "big-1", node), "");
        assert_string_equal(node_of(f, "small-1", node), "");
        assert_int_equal(failed_attempts(f), 4);

        finish_pod(f, "small-0");
        steps(f, 3);
        assert_string_equal(node_of(f, "small-1", node), "n1");
        assert_int_equal(failed_attempts(f), 4);

        /* two CPUs free once both are done: the big shape, refused by every walk so far, is
         * looked at again, and its first pod placed */
        finish_pod(f, "run-1");
        steps(f, 3);
        finish_pod(f, "small-1");
        steps(f, 3);
        assert_string_equal(node_of(f, "big-0", node), "n1");
        assert_string_equal(node_of(f, "big-1", node), "");
        assert_int_equal(failed_attempts(f), 4);
}

/* A pod first in the queue that the headroom covers but that fails for another reason (its
 * selector) does not park the pod behind it: that one is walked again and placed, and the first
 * is released at every later end. */
static void a_pod_failing_otherwise_starves_nobody(void **state)
{
        struct fixture *f = *state;
        char node[64];
        uint64_t failed;

        node_full(f);
        put_pod(f, "picky", "1", 0, 10, "b");
        put_pod(f, "plain", "1", 0, 11, NULL);
        step(f);
        failed = failed_attempts(f);
        assert_int_equal(failed, 2);

        finish_pod(f, "run-0");
        steps(f, 4);
        assert_string_equal(node_of(f, "plain", node), "n1");
        assert_string_equal(node_of(f, "picky", node), "");
        assert_true(failed_attempts(f) > failed); /* picky was tried, and failed */

        failed = failed_attempts(f);
        finish_pod(f, "run-1");
        steps(f, 3);
        assert_string_equal(node_of(f, "picky", node), "");
        assert_true(failed_attempts(f) > failed); /* released though it fails */
}

/* A node change releases every waiting pod, whatever the headroom: what changed is not known. */
static void a_node_change_releases_all(void **state)
{
        struct fixture *f = *state;

        node_full(f);
        put_pod(f, "a", "1", 0, 10, NULL);
        put_pod(f, "b", "1", 0, 11, NULL);
        step(f);
        assert_int_equal(failed_attempts(f), 2);

        put_node(f, "c");
        steps(f, 3);
        assert_int_equal(failed_attempts(f), 4);
}

/* A pod's first failure writes its PodScheduled=False and its FailedScheduling Event in one
 * commit; failing again with the same message writes nothing (the Event's count waits for its
 * interval). */
static void a_failure_writes_once_in_one_commit(void **state)
{
        struct fixture *f = *state;
        struct xp_store_stats before, after;
        uint64_t failed;

        node_full(f);
        xp_store_stats(f->base.store, &before);
        put_pod(f, "late", "1", 0, 10, NULL);
        step(f);
        xp_store_stats(f->base.store, &after);
        assert_int_equal(failed_attempts(f), 1);
        /* the create, then the status with its Event */
        assert_int_equal(after.writes - before.writes, 3);
        assert_int_equal(after.commits - before.commits, 2);

        failed = failed_attempts(f);
        before = after;
        put_node(f, "d");
        step(f);
        f->base.now_ms += 100;
        step(f);
        xp_store_stats(f->base.store, &after);
        assert_int_equal(failed_attempts(f), failed + 1);
        assert_int_equal(after.writes - before.writes, 1); /* the node's, nothing else */
}

/*
 * A nominee's hold given back with no pod ending (its pod deleted while its victims go, as a
 * nomination run out or nominated again) is room freed: the pod parked behind the hold is
 * released at once, not at the next unrelated event. high (2 CPUs) evicts run-0 and run-1; one
 * victim gone, the other's CPU and the hold still fill n1, and wait (1 CPU) is parked.
 */
static void a_dropped_hold_releases_a_parked_pod(void **state)
{
        struct fixture *f = *state;
        char node[64];
        uint64_t failed;

        put_node(f, "a");
        put_pod(f, "run-0", "1", 0, 0, NULL);
        put_pod(f, "run-1", "1", 0, 1, NULL);
        step(f);
        put_pod(f, "high", "2", 10, 2, NULL);
        steps(f, 3);
        finish_pod(f, "run-0");
        steps(f, 3);
        assert_string_equal(node_of(f, "high", node), ""); /* run-1 still goes */
        put_pod(f, "wait", "1", 0, 3, NULL);
        steps(f, 3);
        failed = failed_attempts(f);
        assert_string_equal(node_of(f, "wait", node), "");
        steps(f, 3);
        assert_int_equal(failed_attempts(f), failed); /* parked: not tried again */

        assert_int_equal(
            xp_store_delete(f->base.store, "pods", "default", "high", 0, NULL, NULL, NULL), 0);
        steps(f, 3);
        assert_string_equal(node_of(f, "wait", node), "n1");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(one_freed_cpu_releases_one_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(two_ends_release_a_two_cpu_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(released_in_priority_order, setup, teardown),
            cmocka_unit_test_setup_teardown(
                a_refused_shape_is_passed_by_in_that_walk_only, setup, teardown),
            cmocka_unit_test_setup_teardown(
                a_pod_failing_otherwise_starves_nobody, setup, teardown),
            cmocka_unit_test_setup_teardown(a_node_change_releases_all, setup, teardown),
            cmocka_unit_test_setup_teardown(a_failure_writes_once_in_one_commit, setup, teardown),
            cmocka_unit_test_setup_teardown(a_dropped_hold_releases_a_parked_pod, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
