/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node lifecycle controller (src/controller/nodelife*.c) on a temporary store, stepped by
 * the test on a clock it moves: no thread, no real time.
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

#include "registry_fixture.h"
#include "xpool/nodelife.h"
#include "xpool/timeutil.h"

#define GRACE_MS    10000
#define EVICTION_MS 30000
#define TICK_MS     500 /* nodelife.c: nodes are checked this often */

struct fixture {
        struct registry_fixture base; /* store, registry, clock */
        struct xp_nodelife *nodelife;
};

static void step(struct fixture *f)
{
        struct xp_error err = {0};

        if (xp_nodelife_step(f->nodelife, &err) < 0)
                fail_msg("step: %s", err.msg);
}

/* Moves both clocks by ms, stepping every tick on the way (as the loop would). */
static void pass(struct fixture *f, int64_t ms)
{
        for (int64_t left = ms; left > 0; left -= TICK_MS) {
                f->base.now_ms += left < TICK_MS ? left : TICK_MS;
                step(f);
        }
}

static json_t *get(struct fixture *f, const char *kind, const char *ns, const char *name)
{
        return fixture_get(&f->base, kind, ns, name);
}

static void put(struct fixture *f, const char *kind, const char *ns, const char *name, json_t *o)
{
        fixture_put(&f->base, kind, ns, name, o);
}

static void renew_lease(struct fixture *f, const char *node)
{
        char now[XP_MICROTIME_MAX];

        xp_time_format_microtime(fixture_wall_s(&f->base.now_ms) * 1000000, now);
        fixture_put_text(&f->base,
                         "leases",
                         "kube-node-lease",
                         node,
                         "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"kube-node-lease\"},"
                         "\"spec\":{\"holderIdentity\":\"%s\",\"renewTime\":\"%s\"}}",
                         node,
                         node,
                         now);
}

/* A Ready node with a Lease, and a running pod bound to it. */
static void put_node_and_pod(struct fixture *f, const char *ns, const char *pod)
{
        fixture_put_text(&f->base,
                         "nodes",
                         "",
                         "n1",
                         "{\"apiVersion\":\"v1\",\"kind\":\"Node\","
                         "\"metadata\":{\"name\":\"n1\",\"uid\":\"node-uid\"},\"spec\":{},"
                         "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
        renew_lease(f, "n1");
        fixture_put_text(&f->base,
                         "pods",
                         ns,
                         pod,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                         "\"namespace\":\"%s\",\"uid\":\"pod-uid\"},\"spec\":{\"nodeName\":\"n1\","
                         "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},"
                         "\"status\":{\"phase\":\"Running\"}}",
                         pod,
                         ns);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof *f);
        struct xp_error err = {0};

        assert_non_null(f);
        fixture_open(&f->base, "nodelife", 0);
        f->base.now_ms = 5000000;
        put_node_and_pod(f, "default", "p");
        struct xp_nodelife_options options = {
            .clock = &f->base.clock,
            .grace_ms = GRACE_MS,
            .eviction_ms = EVICTION_MS,
        };
        if (xp_nodelife_new(f->base.registry, &options, &f->nodelife, &err) < 0)
                fail_msg("nodelife: %s", err.msg);
        step(f);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        xp_nodelife_free(f->nodelife);
        fixture_close(&f->base);
        free(f);
        return 0;
}

/* "status reason" of the object's condition type, or "none". */
static void expect_condition(struct fixture *f,
                             const char *kind,
                             const char *ns,
                             const char *name,
                             const char *type,
                             const char *want)
{
        json_t *object = get(f, kind, ns, name), *c;
        char got[128] = "none";
        size_t i;

        assert_non_null(object);
        json_array_foreach(json_object_get(json_object_get(object, "status"), "conditions"), i, c)
        {
                if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
                        snprintf(got,
                                 sizeof got,
                                 "%s %s",
                                 json_string_value(json_object_get(c, "status")),
                                 json_string_value(json_object_get(c, "reason")) ?: "-");
        }
        json_decref(object);
        assert_string_equal(got, want);
}

static bool tainted(struct fixture *f)
{
        json_t *node = get(f, "nodes", "", "n1"), *t;
        bool found = false;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, t)
        {
                found |= strcmp(json_string_value(json_object_get(t, "key")),
                                "node.kubernetes.io/unreachable") == 0;
        }
        json_decref(node);
        return found;
}

static const char *phase(struct fixture *f, const char *ns, const char *name, char buf[static 32])
{
        json_t *pod = get(f, "pods", ns, name);
        const char *p = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

        snprintf(buf, 32, "%s", pod ? (p ? p : "-") : "gone");
        json_decref(pod);
        return buf;
}

/* The Events with reason (in default): how many, and whether each says the component. */
static size_t events(struct fixture *f, const char *reason)
{
        json_t *items, *e;
        uint64_t version;
        size_t i, n = 0;

        assert_int_equal(xp_store_list(f->base.store, "events", "default", &items, &version, NULL),
                         0);
        json_array_foreach(items, i, e)
        {
                if (strcmp(json_string_value(json_object_get(e, "reason")), reason) != 0)
                        continue;
                assert_string_equal(
                    json_string_value(json_object_get(json_object_get(e, "source"), "component")),
                    "node-controller");
                assert_string_equal(json_string_value(json_object_get(e, "type")), "Warning");
                n++;
        }
        json_decref(items);
        return n;
}

static void lost_node_then_its_pods(void **state)
{
        struct fixture *f = *state;
        char buf[32];

        pass(f, GRACE_MS); /* not more than the grace: still alive */
        expect_condition(f, "nodes", "", "n1", "Ready", "True -");
        assert_false(tainted(f));
        pass(f, TICK_MS);
        expect_condition(f, "nodes", "", "n1", "Ready", "Unknown NodeStatusUnknown");
        assert_true(tainted(f));
        assert_int_equal(events(f, "NodeNotReady"), 1);
        expect_condition(f, "pods", "default", "p", "Ready", "False NodeLost");
        assert_string_equal(phase(f, "default", "p", buf), "Running");

        pass(f, EVICTION_MS - TICK_MS);
        assert_string_equal(phase(f, "default", "p", buf), "Running");
        pass(f, TICK_MS);
        assert_string_equal(phase(f, "default", "p", buf), "Failed");
        assert_int_equal(events(f, "NodeLost"), 1);
        pass(f, 10 * TICK_MS); /* nothing more */
        assert_int_equal(events(f, "NodeLost"), 1);
        assert_int_equal(events(f, "NodeNotReady"), 1);
}

static void renewed_lease_keeps_the_node(void **state)
{
        struct fixture *f = *state;

        for (int i = 0; i < 4; i++) {
                pass(f, GRACE_MS / 2);
                renew_lease(f, "n1");
        }
        pass(f, GRACE_MS / 2);
        expect_condition(f, "nodes", "", "n1", "Ready", "True -");
        assert_false(tainted(f));
        assert_int_equal(events(f, "NodeNotReady"), 0);
}

/* Quiesced (the server stopping: no heartbeat can arrive), it judges no node however long the
 * stop lasts; the same time without it loses the node (lost_node_then_its_pods). */
static void quiesced_judges_no_node(void **state)
{
        struct fixture *f = *state;

        pass(f, GRACE_MS / 2);
        xp_nodelife_quiesce(f->nodelife);
        pass(f, 3 * GRACE_MS);
        expect_condition(f, "nodes", "", "n1", "Ready", "True -");
        assert_false(tainted(f));
        assert_int_equal(events(f, "NodeNotReady"), 0);
        expect_condition(f, "pods", "default", "p", "Ready", "none"); /* never marked */
}

static void back_once_ready_again(void **state)
{
        struct fixture *f = *state;
        json_t *node;

        pass(f, GRACE_MS + TICK_MS);
        assert_true(tainted(f));
        /* the agent comes back: a Lease, then Ready=True over the node as it is (taint kept) */
        renew_lease(f, "n1");
        step(f);
        node = get(f, "nodes", "", "n1");
        json_array_clear(json_object_get(json_object_get(node, "status"), "conditions"));
        json_array_append_new(json_object_get(json_object_get(node, "status"), "conditions"),
                              json_pack("{s:s, s:s}", "type", "Ready", "status", "True"));
        put(f, "nodes", "", "n1", node);
        pass(f, TICK_MS);
        assert_false(tainted(f));
        expect_condition(f, "nodes", "", "n1", "Ready", "True -");
}

static void terminating_pod_of_a_lost_node_goes_after_its_grace(void **state)
{
        struct fixture *f = *state;
        char buf[32], deadline[XP_RFC3339_MAX];
        json_t *pod = get(f, "pods", "default", "p");

        /* deleted with a grace of 60 s: terminating, its agent to stop it */
        xp_time_format_rfc3339(fixture_wall_s(&f->base.now_ms) + 60, deadline);
        json_object_set_new(
            json_object_get(pod, "metadata"), "deletionTimestamp", json_string(deadline));
        put(f, "pods", "default", "p", pod);
        pass(f, GRACE_MS + TICK_MS);
        assert_true(tainted(f));
        assert_string_equal(phase(f, "default", "p", buf), "Running"); /* not failed: deleted */
        pass(f, 60000 - GRACE_MS - 2 * TICK_MS);
        assert_string_equal(phase(f, "default", "p", buf), "Running");
        pass(f, 2 * TICK_MS);
        assert_string_equal(phase(f, "default", "p", buf), "gone");
}

static void namespace_finished_when_its_last_pod_goes(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *ns = NULL;

        put(f,
            "namespaces",
            "",
            "team",
            json_pack(
                "{s:{s:s}, s:{s:s}}", "metadata", "name", "team", "status", "phase", "Active"));
        put_node_and_pod(f, "team", "q");
        assert_int_equal(
            xp_registry_namespace_delete(f->base.registry, "team", 0, false, &ns, &err), 0);
        json_decref(ns);
        step(f);
        ns = get(f, "namespaces", "", "team");
        assert_non_null(ns); /* its pod is terminating */
        json_decref(ns);
        /* the agent removes the pod: the namespace goes at the next step, without a tick */
        assert_int_equal(xp_store_delete(f->base.store, "pods", "team", "q", 0, NULL, NULL, NULL),
                         0);
        step(f);
        assert_null(get(f, "namespaces", "", "team"));
}

static void node_without_a_sign_of_life_is_not_watched(void **state)
{
        struct fixture *f = *state;

        assert_int_equal(
            xp_store_delete(f->base.store, "leases", "kube-node-lease", "n1", 0, NULL, NULL, NULL),
            0);
        pass(f, 3 * GRACE_MS);
        expect_condition(f, "nodes", "", "n1", "Ready", "True -");
        assert_false(tainted(f));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(lost_node_then_its_pods, setup, teardown),
            cmocka_unit_test_setup_teardown(renewed_lease_keeps_the_node, setup, teardown),
            cmocka_unit_test_setup_teardown(quiesced_judges_no_node, setup, teardown),
            cmocka_unit_test_setup_teardown(back_once_ready_again, setup, teardown),
            cmocka_unit_test_setup_teardown(
                terminating_pod_of_a_lost_node_goes_after_its_grace, setup, teardown),
            cmocka_unit_test_setup_teardown(
                namespace_finished_when_its_last_pod_goes, setup, teardown),
            cmocka_unit_test_setup_teardown(
                node_without_a_sign_of_life_is_not_watched, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
