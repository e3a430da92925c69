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

#include "scheduler_fixture.h"
#include "xpool/histogram.h"

/* kube-scheduler's preemption tail on one node whose pods are all of the failing pod's priority */
#define NO_VICTIMS_1                                                                               \
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."

#define RETRY_MS           250   /* scheduler_internal.h: unschedulable pods wait this long */
#define RETRY_MIN_MS       5     /* ... or this long after a cheap pass */
#define EVENT_INTERVAL_MS  2000  /* and repeated failures update their Event this often */
#define BACKOFF_INITIAL_MS 1000  /* a pod that failed is not tried again sooner, ... */
#define BACKOFF_MAX_MS     10000 /* ... doubled per failure in a row up to this */
#define REASONS_REFRESH_MS 10000 /* a message with the same reasons is written again after */

static int setup(void **state)
{
        return scheduler_fixture_setup(state, "scheduler");
}

/* A Ready node with cpu CPUs; label changes make a new version of it. */
static void put_node(struct fixture *f, const char *name, const char *cpu, const char *label)
{
        fixture_put_text(
            &f->base,
            "nodes",
            "",
            name,
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\","
            "\"metadata\":{\"name\":\"%s\",\"labels\":{\"touch\":\"%s\"}},"
            "\"status\":{\"capacity\":{\"cpu\":\"%s\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
            "\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            name,
            label,
            cpu,
            cpu);
}

/* A pending pod asking for cpu CPUs. */
static void put_pod(struct fixture *f, const char *name, const char *cpu, int priority)
{
        fixture_put_text(
            &f->base,
            "pods",
            "default",
            name,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
            "\"namespace\":\"default\",\"uid\":\"uid-%s\","
            "\"creationTimestamp\":\"2027-01-15T08:00:00Z\"},"
            "\"spec\":{\"priority\":%d,\"containers\":[{\"name\":\"main\",\"image\":\"x\","
            "\"resources\":{\"limits\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
            name,
            name,
            priority,
            cpu);
}

static json_t *get_pod(struct fixture *f, const char *name)
{
        json_t *pod = fixture_get(&f->base, "pods", "default", name);

        assert_non_null(pod);
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

        assert_int_equal(xp_store_list(f->base.store, "events", "default", &items, &version, NULL),
                         0);
        *ret_count = 0;
        json_array_foreach(items, i, e)
        {
                const json_t *involved = json_object_get(e, "involvedObject");

                if (strcmp(json_string_value(json_object_get(involved, "name")), pod) != 0 ||
                    strcmp(json_string_value(json_object_get(e, "reason")), reason) != 0)
                        continue;
                assert_string_equal(
                    json_string_value(json_object_get(json_object_get(e, "source"), "component")),
                    "default-scheduler");
                assert_string_equal(json_string_value(json_object_get(e, "reportingComponent")),
                                    "default-scheduler");
                assert_non_null(strstr(json_string_value(json_object_get(e, "reportingInstance")),
                                       "default-scheduler-"));
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
}

/* A binding and its Scheduled Event are one group of the store's: one commit, not two. */
static void binding_and_event_share_a_commit(void **state)
{
        struct fixture *f = *state;
        struct xp_store_stats before, after;
        char node[64];
        int64_t count;
        json_t *pod;
        uint64_t version;

        put_node(f, "n1", "4", "a");
        put_pod(f, "web", "1", 0);
        pod = get_pod(f, "web");
        version = strtoull(
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "resourceVersion")),
            NULL,
            10);
        json_decref(pod);
        step(f); /* the informer takes in the node and the pod; the pass binds */
        assert_string_equal(node_of(f, "web", node), "n1");
        assert_int_equal(events(f, "web", "Scheduled", &count), 1);
        /* written in the same commit: the Event's version follows the binding's */
        pod = get_pod(f, "web");
        assert_true(strtoull(json_string_value(json_object_get(json_object_get(pod, "metadata"),
                                                               "resourceVersion")),
                             NULL,
                             10) > version);
        json_decref(pod);
        xp_store_stats(f->base.store, &before);
        put_pod(f, "db", "1", 0);
        step(f);
        xp_store_stats(f->base.store, &after);
        assert_string_equal(node_of(f, "db", node), "n1");
        assert_int_equal(events(f, "db", "Scheduled", &count), 1);
        /* the create, then the binding with its Event: two commits, three writes */
        assert_int_equal(after.writes - before.writes, 3);
        assert_int_equal(after.commits - before.commits, 2);
        assert_int_equal(events(f, "web", "Scheduled", &count), 1);
        assert_int_equal(events(f, "web", "FailedScheduling", &count), 0);
}

/* A pending pod whose binding cannot be written: its body is within a few bytes of what the
 * store takes, and the binding adds more (-E2BIG, the store's refusal of that write alone). */
static void put_pod_at_the_limit(struct fixture *f, const char *name)
{
        json_t *pod = json_loads(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"default\","
            "\"creationTimestamp\":\"2027-01-15T08:00:00Z\",\"annotations\":{}},"
            "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"x\","
            "\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}}",
            0,
            NULL);
        json_t *meta = json_object_get(pod, "metadata");
        char *text, *filler;
        size_t fill;

        json_object_set_new(meta, "name", json_string(name));
        json_object_set_new(meta, "uid", json_string(name));
        json_object_set_new(json_object_get(meta, "annotations"), "filler", json_string(""));
        text = json_dumps(pod, JSON_COMPACT);
        assert_non_null(text);
        fill = XP_STORE_BODY_MAX - strlen(text) - 16;
        filler = malloc(fill + 1);
        assert_non_null(filler);
        memset(filler, 'x', fill);
        filler[fill] = '\0';
        json_object_set_new(json_object_get(meta, "annotations"), "filler", json_string(filler));
        fixture_put(&f->base, "pods", "default", name, pod);
        free(filler);
        free(text);
}

/* A pass's bindings and their Events are one group of the store's: one commit for all, and a
 * binding that fails (its write refused) fails alone: the others are bound, with their Events. */
static void a_pass_binds_in_one_commit(void **state)
{
        static const char *const names[] = {"p1", "p2", "p3", "p4"};
        struct fixture *f = *state;
        struct xp_store_stats before, after;
        char node[64];
        int64_t count;

        put_node(f, "n1", "8", "a");
        step(f);
        for (size_t i = 0; i < 4; i++)
                put_pod(f, names[i], "1", 0);
        xp_store_stats(f->base.store, &before);
        step(f);
        xp_store_stats(f->base.store, &after);
        assert_int_equal(after.writes - before.writes, 8);
        assert_int_equal(after.commits - before.commits, 1);
        for (size_t i = 0; i < 4; i++) {
                assert_string_equal(node_of(f, names[i], node), "n1");
                assert_int_equal(events(f, names[i], "Scheduled", &count), 1);
        }

        put_pod(f, "q1", "1", 0);
        put_pod_at_the_limit(f, "q2");
        put_pod(f, "q3", "1", 0);
        step(f);
        assert_string_equal(node_of(f, "q1", node), "n1");
        assert_string_equal(node_of(f, "q2", node), "");
        assert_string_equal(node_of(f, "q3", node), "n1");
        assert_int_equal(events(f, "q1", "Scheduled", &count), 1);
        assert_int_equal(events(f, "q2", "Scheduled", &count), 0);
        assert_int_equal(events(f, "q3", "Scheduled", &count), 1);
        /* the failed one's assumed CPU was given back: 6 of 8 taken, 2 free (7 if not) */
        put_pod(f, "r1", "2", 0);
        step(f);
        assert_string_equal(node_of(f, "r1", node), "n1");
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
            f,
            "big",
            "False Unschedulable 0/1 nodes are available: 1 Insufficient cpu." NO_VICTIMS_1);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 1);

        /* a node that fits: tried again once the retry interval has passed, before its backoff
         * (1 s) ends, as nothing else waits (capacity_freed_by_a_deletion) */
        put_node(f, "large", "16", "a");
        f->base.now_ms += RETRY_MS;
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
        /* a change to the node retries the pod (after its backoff); the Event waits for
         * EVENT_INTERVAL_MS */
        put_node(f, "small", "4", "b");
        f->base.now_ms += BACKOFF_INITIAL_MS;
        step(f);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 1);
        put_node(f, "small", "4", "c");
        f->base.now_ms += EVENT_INTERVAL_MS;
        step(f);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 3);
        /* the next update waits twice as long (kube's event correlator limits repeats too) */
        put_node(f, "small", "4", "d");
        f->base.now_ms += EVENT_INTERVAL_MS;
        step(f);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 3);
        put_node(f, "small", "4", "e");
        f->base.now_ms += EVENT_INTERVAL_MS;
        step(f);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);
        assert_int_equal(count, 5);
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
            f,
            "low",
            "False Unschedulable 0/1 nodes are available: 1 Insufficient cpu." NO_VICTIMS_1);
}

static uint64_t unschedulable_attempts(struct fixture *f)
{
        uint64_t attempts[XP_SCHEDULER_RESULTS];
        struct xp_histogram_snapshot seconds;

        xp_scheduler_metrics(f->scheduler, attempts, &seconds);
        return attempts[XP_SCHEDULER_UNSCHEDULABLE];
}

/* Kube-scheduler's per-pod backoff: 1 s, doubled per failure in a row, at most 10 s; a cluster
 * event moves the pod out of the unschedulable set, but while other pods are to be tried (a new
 * small one at every step here), not before its backoff ends. */
static void backoff_doubles_to_ten_seconds(void **state)
{
        static const int64_t delays[] = {1000, 2000, 4000, 8000, BACKOFF_MAX_MS, BACKOFF_MAX_MS};
        struct fixture *f = *state;
        char touch[16], other[16];
        int others = 0;

        put_node(f, "small", "4", "a");
        put_pod(f, "big", "8", 0);
        step(f);
        assert_int_equal(unschedulable_attempts(f), 1);
        for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
                snprintf(touch, sizeof(touch), "t%zu", i);
                put_node(f, "small", "4", touch); /* a cluster event */
                snprintf(other, sizeof(other), "o%d", others++);
                put_pod(f, other, "10m", 0);
                f->base.now_ms += delays[i] - 1;
                step(f);
                assert_int_equal(unschedulable_attempts(f), i + 1);
                snprintf(other, sizeof(other), "o%d", others++);
                put_pod(f, other, "10m", 0);
                f->base.now_ms += 1;
                step(f);
                assert_int_equal(unschedulable_attempts(f), i + 2);
        }
        /* without a cluster event the pod stays in the unschedulable set */
        f->base.now_ms += 2 * BACKOFF_MAX_MS;
        step(f);
        assert_int_equal(unschedulable_attempts(f), 7);
}

/* A cordoned node with 4 CPUs. */
static void put_cordoned_node(struct fixture *f, const char *name)
{
        fixture_put_text(
            &f->base,
            "nodes",
            "",
            name,
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},"
            "\"spec\":{\"unschedulable\":true},"
            "\"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
            "\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            name);
}

/* The pod's resourceVersion: it changes with every write of the pod. */
static void pod_version(struct fixture *f, const char *name, char buf[static 32])
{
        json_t *pod = get_pod(f, name);

        snprintf(buf,
                 32,
                 "%s",
                 json_string_value(
                     json_object_get(json_object_get(pod, "metadata"), "resourceVersion")));
        json_decref(pod);
}

/* Adds a node of 4 CPUs after ms, when "big" is tried again: its attempts are then n. */
static void big_retried_with_node(struct fixture *f, const char *node, int64_t ms, uint64_t n)
{
        put_node(f, node, "4", "a");
        f->base.now_ms += ms;
        step(f);
        assert_int_equal(unschedulable_attempts(f), n);
}

/* Nodes added one by one change the message's count of nodes, not its reasons: the pod's status
 * and Event keep the message said until it is REASONS_REFRESH_MS old; other reasons are written
 * at once. */
static void same_reasons_written_once_per_period(void **state)
{
        struct fixture *f = *state;
        char before[32], after[32];
        int64_t count;

        put_node(f, "n1", "4", "a");
        put_pod(f, "big", "8", 0); /* t = 0 */
        step(f);
        expect_scheduled(
            f,
            "big",
            "False Unschedulable 0/1 nodes are available: 1 Insufficient cpu." NO_VICTIMS_1);
        pod_version(f, "big", before);

        big_retried_with_node(f, "n2", BACKOFF_INITIAL_MS, 2); /* t = 1 s: not written */
        pod_version(f, "big", after);
        assert_string_equal(after, before);
        expect_scheduled(
            f,
            "big",
            "False Unschedulable 0/1 nodes are available: 1 Insufficient cpu." NO_VICTIMS_1);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 1);

        put_cordoned_node(f, "n3"); /* t = 3 s: another reason, written at once */
        f->base.now_ms += 2 * BACKOFF_INITIAL_MS;
        step(f);
        assert_int_equal(unschedulable_attempts(f), 3);
        expect_scheduled(f,
                         "big",
                         "False Unschedulable 0/3 nodes are available: 1 node(s) were "
                         "unschedulable, 2 Insufficient cpu. preemption: 0/3 nodes are "
                         "available: 2 No preemption victims found for incoming pod, 1 "
                         "Preemption is not helpful for scheduling.");
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 2);
        pod_version(f, "big", before);

        big_retried_with_node(f, "n4", 4 * BACKOFF_INITIAL_MS, 4); /* t = 7 s: not written */
        pod_version(f, "big", after);
        assert_string_equal(after, before);
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 2);

        /* t = 15 s: the message said at 3 s is REASONS_REFRESH_MS old: the pod is tried again
         * without a cluster event (once its backoff of 8 s ends) and the count brought up to
         * date, in the status and a new Event (the old one counting its repeats) */
        f->base.now_ms += 8 * BACKOFF_INITIAL_MS;
        step(f);
        assert_int_equal(unschedulable_attempts(f), 5);
        expect_scheduled(f,
                         "big",
                         "False Unschedulable 0/4 nodes are available: 1 node(s) were "
                         "unschedulable, 3 Insufficient cpu. preemption: 0/4 nodes are "
                         "available: 3 No preemption victims found for incoming pod, 1 "
                         "Preemption is not helpful for scheduling.");
        assert_int_equal(events(f, "big", "FailedScheduling", &count), 3);
        /* said: nothing more to try without a cluster event */
        f->base.now_ms += 2 * REASONS_REFRESH_MS;
        step(f);
        assert_int_equal(unschedulable_attempts(f), 5);
}

/* Node n1 with 4 CPUs, 3 of them taken by the pod "first". */
static void n1_mostly_taken(struct fixture *f)
{
        char node[64];

        put_node(f, "n1", "4", "a");
        put_pod(f, "first", "3", 0);
        step(f);
        assert_string_equal(node_of(f, "first", node), "n1");
}

/* Capacity a deletion frees goes to the pod waiting for it. With nothing else to try, a pod that
 * an event released is tried at once, backoff or not (Kubernetes 1.33's
 * SchedulerPopFromBackoffQ): capacity a finished pod frees is not left idle for up to 10 s.
 * Without an event it still waits. */
static void capacity_freed_by_a_deletion(void **state)
{
        struct fixture *f = *state;
        char node[64];

        n1_mostly_taken(f);
        put_pod(f, "second", "3", 0);
        step(f);
        assert_string_equal(node_of(f, "second", node), "");
        assert_int_equal(unschedulable_attempts(f), 1);
        f->base.now_ms += 1;
        step(f); /* no event: still in the unschedulable set */
        assert_int_equal(unschedulable_attempts(f), 1);
        assert_int_equal(
            xp_store_delete(f->base.store, "pods", "default", "first", 0, NULL, NULL, NULL), 0);
        f->base.now_ms += RETRY_MS; /* well within the 1 s backoff */
        step(f);
        assert_string_equal(node_of(f, "second", node), "n1");
}

/* Pods of one shape fail alike in a pass, and that does not stop a pod of another shape behind
 * them; a pass that cost nothing lets the next event release the waiting pods at once
 * (RETRY_MIN_MS), not RETRY_MS later, so a node freed one slot at a time is refilled at once. */
static void waiting_pods_of_one_shape(void **state)
{
        static const char *const waiting[] = {"w0", "w1", "w2"};
        static const char *const why = "False Unschedulable 0/1 nodes are available: 1 "
                                       "Insufficient cpu." NO_VICTIMS_1;
        struct fixture *f = *state;
        char node[64];
        int64_t count;

        n1_mostly_taken(f);
        for (size_t i = 0; i < XP_ELEMENTSOF(waiting); i++)
                put_pod(f, waiting[i], "3", 0);
        put_pod(f, "small", "1", 0);
        step(f);
        assert_string_equal(node_of(f, "small", node), "n1");
        for (size_t i = 0; i < XP_ELEMENTSOF(waiting); i++) {
                assert_string_equal(node_of(f, waiting[i], node), "");
                expect_scheduled(f, waiting[i], why);
                assert_int_equal(events(f, waiting[i], "FailedScheduling", &count), 1);
        }
        assert_int_equal(
            xp_store_delete(f->base.store, "pods", "default", "first", 0, NULL, NULL, NULL), 0);
        f->base.now_ms += RETRY_MIN_MS;
        step(f);
        assert_string_equal(node_of(f, "w0", node), "n1");
        assert_string_equal(node_of(f, "w1", node), "");
        assert_string_equal(node_of(f, "w2", node), "");
        expect_scheduled(f, "w2", why);
}

/* The pod's status.phase set to phase, as the node's agent writes it when it ends. */
static void finish_pod(struct fixture *f, const char *name, const char *phase)
{
        json_t *pod = get_pod(f, name);

        assert_int_equal(
            json_object_set_new(json_object_get(pod, "status"), "phase", json_string(phase)), 0);
        fixture_put(&f->base, "pods", "default", name, pod);
}

/* A step of the loop ms after the last. */
static void step_after(struct fixture *f, int64_t ms)
{
        f->base.now_ms += ms;
        step(f);
}

/* A Ready node that takes one pod, as its agent writes its status: heartbeat is the time. */
static void put_one_pod_node(struct fixture *f, const char *heartbeat)
{
        fixture_put_text(
            &f->base,
            "nodes",
            "",
            "full",
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"full\"},"
            "\"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"1\"},"
            "\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"1\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
            "\"lastHeartbeatTime\":\"%s\"}]}}",
            heartbeat);
}

/*
 * A pod refused by a node at its pod cap ("Too many pods") is parked until a pod goes or a node
 * changes: not tried when its backoff ends, nor on the node's status heartbeat (a write that
 * changes nothing a placement reads), and tried once the pod on that node completes.
 */
static void parked_until_a_pod_on_the_node_ends(void **state)
{
        struct fixture *f = *state;
        char node[64];

        put_one_pod_node(f, "2027-01-15T08:00:00Z");
        put_pod(f, "first", "1", 0);
        step(f);
        assert_string_equal(node_of(f, "first", node), "full");
        put_pod(f, "second", "1", 0);
        step(f);
        assert_string_equal(node_of(f, "second", node), "");
        expect_scheduled(
            f,
            "second",
            "False Unschedulable 0/1 nodes are available: 1 Too many pods." NO_VICTIMS_1);
        assert_int_equal(unschedulable_attempts(f), 1);

        step_after(f, BACKOFF_MAX_MS + RETRY_MS); /* its backoff is long over */
        assert_int_equal(unschedulable_attempts(f), 1);
        put_one_pod_node(f, "2027-01-15T08:01:00Z");
        step_after(f, RETRY_MS);
        step_after(f, RETRY_MS);
        assert_int_equal(unschedulable_attempts(f), 1);

        finish_pod(f, "first", "Succeeded");
        step_after(f, RETRY_MS);
        assert_string_equal(node_of(f, "second", node), "full");
        assert_int_equal(unschedulable_attempts(f), 1);
}

/*
 * A pod that ends (Succeeded, as its node writes it) gives its CPUs back in the scheduler's
 * view at once, and they go to the waiting pods in the next pass after the short gap a cheap
 * pass leaves (RETRY_MIN_MS), highest priority first. A node event inside that gap releases
 * nobody.
 */
static void a_finished_pod_frees_its_capacity_by_priority(void **state)
{
        struct fixture *f = *state;
        char node[64];

        n1_mostly_taken(f);
        put_pod(f, "low", "3", 10);
        put_pod(f, "high", "3", 100);
        step(f);
        assert_int_equal(unschedulable_attempts(f), 2);

        put_node(f, "n1", "4", "b");
        f->base.now_ms += 1;
        step(f);
        assert_int_equal(unschedulable_attempts(f), 2);

        finish_pod(f, "first", "Succeeded");
        f->base.now_ms += RETRY_MIN_MS;
        step(f);
        assert_string_equal(node_of(f, "high", node), "n1");
        assert_string_equal(node_of(f, "low", node), "");

        finish_pod(f, "high", "Failed");
        f->base.now_ms += RETRY_MIN_MS;
        step(f);
        assert_string_equal(node_of(f, "low", node), "n1");
}

/* A pending pod of a gang (xpool.io/gang, xpool.io/gang-min). */
static void
put_member(struct fixture *f, const char *name, const char *cpu, const char *gang, int min)
{
        fixture_put_text(
            &f->base,
            "pods",
            "default",
            name,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
            "\"namespace\":\"default\",\"uid\":\"uid-%s\","
            "\"labels\":{\"xpool.io/gang\":\"%s\",\"xpool.io/gang-min\":\"%d\"},"
            "\"creationTimestamp\":\"2027-01-15T08:00:00Z\"},"
            "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"x\","
            "\"resources\":{\"limits\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
            name,
            name,
            gang,
            min,
            cpu);
}

/* A gang waits for its minimum, is placed whole, and one that does not fit holds nothing and
 * does not stall the pods behind it. */
static void gangs_all_or_nothing(void **state)
{
        struct fixture *f = *state;
        char node[64], other[64];

        put_node(f, "n1", "4", "a");
        put_node(f, "n2", "4", "a");
        put_member(f, "g-0", "3", "train", 2);
        step(f);
        assert_string_equal(node_of(f, "g-0", node), "");
        expect_scheduled(
            f, "g-0", "False Unschedulable gang default/train incomplete: 1 of 2 members present");
        put_member(f, "g-1", "3", "train", 2);
        f->base.now_ms += BACKOFF_INITIAL_MS;
        step(f);
        node_of(f, "g-0", node);
        assert_true(strcmp(node, "n1") == 0 || strcmp(node, "n2") == 0);
        assert_string_not_equal(node_of(f, "g-1", other), node);
        assert_string_not_equal(other, "");

        /* 2 x 3 CPUs do not fit in the 1 + 1 left: neither is placed; the pod behind them is */
        put_member(f, "h-0", "3", "big", 2);
        put_member(f, "h-1", "3", "big", 2);
        put_pod(f, "after", "1", 0);
        step(f);
        assert_string_equal(node_of(f, "h-0", node), "");
        assert_string_equal(node_of(f, "h-1", node), "");
        assert_string_not_equal(node_of(f, "after", node), "");
        expect_scheduled(f,
                         "h-1",
                         "False Unschedulable 0/2 nodes are available: 2 Insufficient cpu. Gang "
                         "default/big: 0 of 2 members fit.");
}

/* A pending pod asking for cpu CPUs, with meta (a JSON object's members) and spec members. */
static void put_pod_with(
    struct fixture *f, const char *name, const char *cpu, const char *meta, const char *spec)
{
        fixture_put_text(
            &f->base,
            "pods",
            "default",
            name,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
            "\"namespace\":\"default\",\"uid\":\"uid-%s\",%s"
            "\"creationTimestamp\":\"2027-01-15T08:00:00Z\"},"
            "\"spec\":{%s\"containers\":[{\"name\":\"main\",\"image\":\"x\","
            "\"resources\":{\"limits\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
            name,
            name,
            meta,
            spec,
            cpu);
}

/* The PodGroup's status.phase ("" when none). */
static const char *podgroup_phase(struct fixture *f, const char *name)
{
        static char phase[32];
        json_t *pg = fixture_get(&f->base, "podgroups", "default", name);
        const char *v = json_string_value(json_object_get(json_object_get(pg, "status"), "phase"));

        snprintf(phase, sizeof(phase), "%s", v ? v : "");
        json_decref(pg);
        return phase;
}

/* Volcano's PodGroup (minMember) names a gang through the pod annotation; Kubernetes' Workload
 * through spec.workloadRef; a gang whose object is missing waits for it. */
static void gangs_of_podgroups_and_workloads(void **state)
{
        static const char volcano[] = "\"annotations\":{\"scheduling.k8s.io/group-name\":\"pg\"},";
        static const char ref[] = "\"workloadRef\":{\"name\":\"job\",\"podGroup\":\"workers\"},";
        struct fixture *f = *state;
        char node[64], other[64];

        put_node(f, "n1", "4", "a");
        put_node(f, "n2", "4", "a");
        put_pod_with(f, "v-0", "3", volcano, "");
        step(f);
        expect_scheduled(
            f, "v-0", "False Unschedulable gang default/pg: its PodGroup is not found");
        fixture_put_text(&f->base,
                         "podgroups",
                         "default",
                         "pg",
                         "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                         "\"metadata\":{\"name\":\"pg\",\"namespace\":\"default\"},"
                         "\"spec\":{\"minMember\":2}}");
        f->base.now_ms += BACKOFF_INITIAL_MS;
        step(f);
        expect_scheduled(
            f, "v-0", "False Unschedulable gang default/pg incomplete: 1 of 2 members present");
        assert_string_equal(podgroup_phase(f, "pg"), "Pending");
        put_pod_with(f, "v-1", "3", volcano, "");
        f->base.now_ms += 2 * BACKOFF_INITIAL_MS;
        step(f);
        assert_string_not_equal(node_of(f, "v-0", node), "");
        assert_string_not_equal(node_of(f, "v-1", other), "");
        assert_string_not_equal(node, other);
        assert_string_equal(podgroup_phase(f, "pg"), "Running");

        /* a Workload's gang: two 1-CPU members, in the 1 + 1 CPUs left */
        fixture_put_text(&f->base,
                         "workloads",
                         "default",
                         "job",
                         "{\"apiVersion\":\"scheduling.k8s.io/v1alpha1\",\"kind\":\"Workload\","
                         "\"metadata\":{\"name\":\"job\",\"namespace\":\"default\"},"
                         "\"spec\":{\"podGroups\":[{\"name\":\"workers\",\"policy\":"
                         "{\"gang\":{\"minCount\":2}}}]}}");
        put_pod_with(f, "w-0", "1", "", ref);
        step(f);
        expect_scheduled(f,
                         "w-0",
                         "False Unschedulable gang default/job/workers incomplete: 1 of 2 members "
                         "present");
        put_pod_with(f, "w-1", "1", "", ref);
        f->base.now_ms += 2 * BACKOFF_INITIAL_MS;
        step(f);
        assert_string_not_equal(node_of(f, "w-0", node), "");
        assert_string_not_equal(node_of(f, "w-1", node), "");
}

/* The PodGroupScheduled condition's "status reason" of a Kubernetes PodGroup ("" when none). */
static const char *k8s_podgroup_scheduled(struct fixture *f, const char *name)
{
        static char text[64];
        json_t *pg = fixture_get(&f->base, "podgroups.scheduling.k8s.io", "default", name);
        const json_t *conditions = json_object_get(json_object_get(pg, "status"), "conditions");
        const json_t *c = json_array_get(conditions, 0);

        text[0] = '\0';
        if (c)
                snprintf(text,
                         sizeof(text),
                         "%s %s",
                         json_string_value(json_object_get(c, "status")),
                         json_string_value(json_object_get(c, "reason")));
        json_decref(pg);
        return text;
}

static void put_k8s_podgroup(struct fixture *f, const char *name, const char *policy)
{
        fixture_put_text(&f->base,
                         "podgroups.scheduling.k8s.io",
                         "default",
                         name,
                         "{\"apiVersion\":\"scheduling.k8s.io/v1alpha2\",\"kind\":\"PodGroup\","
                         "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
                         "\"spec\":{\"schedulingPolicy\":%s}}",
                         name,
                         policy);
}

/* Kubernetes 1.36's PodGroup names a gang through the pod's spec.schedulingGroup: its members
 * wait for it and for minCount of them, are placed together, and the PodGroup says Scheduled;
 * a Volcano PodGroup of the same name is another object. A basic policy places each on its own. */
static void gangs_of_kubernetes_podgroups(void **state)
{
        static const char ref[] = "\"schedulingGroup\":{\"podGroupName\":\"trio\"},";
        static const char solo[] = "\"schedulingGroup\":{\"podGroupName\":\"solo\"},";
        struct fixture *f = *state;
        char node[64];

        put_node(f, "n1", "4", "a");
        put_node(f, "n2", "4", "a");
        fixture_put_text(&f->base,
                         "podgroups",
                         "default",
                         "trio",
                         "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                         "\"metadata\":{\"name\":\"trio\",\"namespace\":\"default\"},"
                         "\"spec\":{\"minMember\":1}}");
        put_pod_with(f, "t-0", "1", "", ref);
        step(f);
        expect_scheduled(
            f, "t-0", "False Unschedulable gang default/trio: its PodGroup is not found");
        put_k8s_podgroup(f, "trio", "{\"gang\":{\"minCount\":3}}");
        put_pod_with(f, "t-1", "1", "", ref);
        f->base.now_ms += 2 * BACKOFF_INITIAL_MS;
        step(f);
        expect_scheduled(
            f, "t-0", "False Unschedulable gang default/trio incomplete: 2 of 3 members present");
        assert_string_equal(node_of(f, "t-1", node), "");
        assert_string_equal(k8s_podgroup_scheduled(f, "trio"), "");
        put_pod_with(f, "t-2", "1", "", ref);
        f->base.now_ms += 4 * BACKOFF_INITIAL_MS;
        step(f);
        for (int i = 0; i < 3; i++) {
                char name[8];
                snprintf(name, sizeof(name), "t-%d", i);
                assert_string_not_equal(node_of(f, name, node), "");
        }
        assert_string_equal(k8s_podgroup_scheduled(f, "trio"), "True Scheduled");
        assert_string_equal(podgroup_phase(f, "trio"), ""); /* Volcano's is not touched */

        put_k8s_podgroup(f, "solo", "{\"basic\":{}}");
        put_pod_with(f, "s-0", "1", "", solo);
        step(f);
        assert_string_not_equal(node_of(f, "s-0", node), "");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(binds_a_pending_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(binding_and_event_share_a_commit, setup, teardown),
            cmocka_unit_test_setup_teardown(a_pass_binds_in_one_commit, setup, teardown),
            cmocka_unit_test_setup_teardown(unschedulable_waits_for_the_cluster, setup, teardown),
            cmocka_unit_test_setup_teardown(repeated_failures_count_on_one_event, setup, teardown),
            cmocka_unit_test_setup_teardown(capacity_freed_by_a_deletion, setup, teardown),
            cmocka_unit_test_setup_teardown(parked_until_a_pod_on_the_node_ends, setup, teardown),
            cmocka_unit_test_setup_teardown(waiting_pods_of_one_shape, setup, teardown),
            cmocka_unit_test_setup_teardown(
                a_finished_pod_frees_its_capacity_by_priority, setup, teardown),
            cmocka_unit_test_setup_teardown(priority_decides, setup, teardown),
            cmocka_unit_test_setup_teardown(backoff_doubles_to_ten_seconds, setup, teardown),
            cmocka_unit_test_setup_teardown(same_reasons_written_once_per_period, setup, teardown),
            cmocka_unit_test_setup_teardown(gangs_all_or_nothing, setup, teardown),
            cmocka_unit_test_setup_teardown(gangs_of_podgroups_and_workloads, setup, teardown),
            cmocka_unit_test_setup_teardown(gangs_of_kubernetes_podgroups, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
