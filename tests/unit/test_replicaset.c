/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ReplicaSet controller's decisions (src/controller/replicaset*.c) on recorded pods and event
 * sequences: the deletion ranking, the create/delete arithmetic, adoption and release, and the
 * expectations that keep a burst of watch events from creating extra pods. No threads, no clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/replicaset.h"

static json_t *load(const char *text)
{
        json_error_t e;
        json_t *o = json_loads(text, 0, &e);

        if (!o)
                fail_msg("bad fixture: %s: %s", e.text, text);
        return o;
}

/* A pod: name, node ("" unassigned), phase, ready ("" unknown, "T", "F"), ready since, restarts,
 * created (RFC 3339 seconds). */
static json_t *pod(const char *name,
                   const char *node,
                   const char *phase,
                   const char *ready,
                   const char *since,
                   int restarts,
                   const char *created)
{
        json_t *p = json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s}, s:{s:s, s:[], s:[{s:i}]}}",
                              "metadata",
                              "name",
                              name,
                              "creationTimestamp",
                              created,
                              "labels",
                              "app",
                              "web",
                              "spec",
                              "nodeName",
                              node,
                              "status",
                              "phase",
                              phase,
                              "conditions",
                              "containerStatuses",
                              "restartCount",
                              restarts);

        if (*ready)
                json_array_append_new(json_object_get(json_object_get(p, "status"), "conditions"),
                                      json_pack("{s:s, s:s, s:s}",
                                                "type",
                                                "Ready",
                                                "status",
                                                ready[0] == 'T' ? "True" : "False",
                                                "lastTransitionTime",
                                                since));
        return p;
}

static void test_ranking(void **state)
{
        (void)state;
        json_t *objs[] = {
            pod("running-ready-old",
                "n1",
                "Running",
                "T",
                "2026-01-01T00:00:00Z",
                0,
                "2025-12-01T00:00:00Z"),
            pod("running-ready-new",
                "n1",
                "Running",
                "T",
                "2026-01-02T00:00:00Z",
                0,
                "2025-12-01T00:00:00Z"),
            pod("unassigned", "", "Pending", "", "", 0, "2025-12-01T00:00:00Z"),
            pod("pending", "n1", "Pending", "", "", 0, "2025-12-01T00:00:00Z"),
            pod("unknown", "n1", "Unknown", "", "", 0, "2025-12-01T00:00:00Z"),
            pod("running-notready",
                "n1",
                "Running",
                "F",
                "2026-01-01T00:00:00Z",
                0,
                "2025-12-01T00:00:00Z"),
            pod("restarts",
                "n1",
                "Running",
                "T",
                "2026-01-01T00:00:00Z",
                5,
                "2025-12-01T00:00:00Z"),
            pod("created-newer",
                "n1",
                "Running",
                "T",
                "2026-01-01T00:00:00Z",
                5,
                "2025-12-05T00:00:00Z"),
        };
        const char *want[] = {"unassigned",
                              "pending",
                              "unknown",
                              "running-notready",
                              "running-ready-new",
                              "created-newer",
                              "restarts",
                              "running-ready-old"};
        struct xp_rs_pod pods[8];

        /* recorded in reverse of the expected order, so the sort has work to do */
        for (size_t i = 0; i < 8; i++)
                xp_rs_pod_read(objs[7 - i], &pods[i]);
        xp_rs_pods_sort_for_deletion(pods, 8);
        for (size_t i = 0; i < 8; i++)
                assert_string_equal(pods[i].name, want[i]);
        for (size_t i = 0; i < 8; i++)
                json_decref(objs[i]);
}

static void test_diff_and_burst(void **state)
{
        (void)state;
        assert_int_equal(xp_rs_diff(3, 0), 3);
        assert_int_equal(xp_rs_diff(2, 3), -1);
        assert_int_equal(xp_rs_diff(3, 3), 0);
        assert_int_equal(xp_rs_diff(1000, 0), XP_RS_BURST);
        assert_int_equal(xp_rs_diff(0, 1000), -XP_RS_BURST);
}

static void test_count_min_ready(void **state)
{
        (void)state;
        json_t *objs[] = {
            pod("a", "n1", "Running", "T", "2026-01-01T00:00:00Z", 0, "2025-12-01T00:00:00Z"),
            pod("b", "n1", "Running", "T", "2026-01-01T00:00:50Z", 0, "2025-12-01T00:00:00Z"),
            pod("c", "n1", "Pending", "", "", 0, "2025-12-01T00:00:00Z"),
            pod("d", "n1", "Failed", "", "", 0, "2025-12-01T00:00:00Z"),
        };
        json_t *labels = load("{\"app\":\"web\",\"tier\":\"x\"}");
        struct xp_rs_pod pods[4];
        struct xp_rs_counts c;
        int64_t now;

        for (size_t i = 0; i < 4; i++)
                xp_rs_pod_read(objs[i], &pods[i]);
        assert_false(xp_rs_pod_active(&pods[3]));
        now = pods[0].ready_since_s + 60; /* a has been ready 60 s, b 10 s */
        xp_rs_count(pods, 4, labels, 30, now, &c);
        assert_int_equal(c.replicas, 3);
        assert_int_equal(c.fully_labeled, 0); /* no pod has tier=x */
        assert_int_equal(c.ready, 2);
        assert_int_equal(c.available, 1);
        assert_int_equal(c.next_available_s, pods[1].ready_since_s + 30);
        for (size_t i = 0; i < 4; i++)
                json_decref(objs[i]);
        json_decref(labels);
}

static void test_claims(void **state)
{
        (void)state;
        json_t *sel = load(
            "{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"db\"]}]}");
        json_t *orphan = load("{\"metadata\":{\"name\":\"o\",\"labels\":{\"app\":\"web\"}}}");
        json_t *ours = load(
            "{\"metadata\":{\"name\":\"m\",\"labels\":{\"app\":\"web\"},\"ownerReferences\":[{\"uid\":\"u1\",\"controller\":true}]}}");
        json_t *moved = load(
            "{\"metadata\":{\"name\":\"r\",\"labels\":{\"app\":\"web\",\"tier\":\"db\"},\"ownerReferences\":[{\"uid\":\"u1\",\"controller\":true}]}}");
        json_t *theirs = load(
            "{\"metadata\":{\"name\":\"t\",\"labels\":{\"app\":\"web\"},\"ownerReferences\":[{\"uid\":\"u2\",\"controller\":true}]}}");
        json_t *dying = load(
            "{\"metadata\":{\"name\":\"d\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{\"app\":\"web\"}}}");
        json_t *owner = load("{\"metadata\":{\"name\":\"web\",\"uid\":\"u1\"}}");
        json_t *ref = xp_owner_ref_new("apps/v1", "ReplicaSet", owner);

        assert_int_equal(xp_claim_decide("u1", sel, false, orphan), XP_CLAIM_ADOPT);
        assert_int_equal(xp_claim_decide("u1", sel, true, orphan), XP_CLAIM_IGNORE);
        assert_int_equal(xp_claim_decide("u1", sel, false, ours), XP_CLAIM_KEEP);
        assert_int_equal(xp_claim_decide("u1", sel, false, moved), XP_CLAIM_RELEASE);
        assert_int_equal(xp_claim_decide("u1", sel, false, theirs), XP_CLAIM_IGNORE);
        assert_int_equal(xp_claim_decide("u1", sel, false, dying), XP_CLAIM_IGNORE);
        /* an empty selector selects nothing */
        json_t *empty = load("{}");
        assert_int_equal(xp_claim_decide("u1", empty, false, orphan), XP_CLAIM_IGNORE);
        assert_non_null(ref);
        assert_true(json_is_true(json_object_get(ref, "controller")));
        assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
        assert_string_equal(json_string_value(json_object_get(ref, "uid")), "u1");
        assert_string_equal(json_string_value(json_object_get(ref, "kind")), "ReplicaSet");
        json_decref(empty);
        json_decref(ref);
        json_decref(owner);
        json_decref(sel);
        json_decref(orphan);
        json_decref(ours);
        json_decref(moved);
        json_decref(theirs);
        json_decref(dying);
}

static void test_selector_operators(void **state)
{
        (void)state;
        json_t *labels = load("{\"gpu\":\"4\",\"zone\":\"a\"}");
        json_t *v4 = load("[\"3\"]"), *va = load("[\"a\",\"b\"]");

        assert_true(xp_selector_requirement_matches("gpu", "Gt", v4, labels));
        assert_false(xp_selector_requirement_matches("gpu", "Lt", v4, labels));
        assert_true(xp_selector_requirement_matches("zone", "In", va, labels));
        assert_false(xp_selector_requirement_matches("zone", "NotIn", va, labels));
        assert_true(xp_selector_requirement_matches("x", "NotIn", va, labels));
        assert_true(xp_selector_requirement_matches("zone", "Exists", NULL, labels));
        assert_true(xp_selector_requirement_matches("x", "DoesNotExist", NULL, labels));
        assert_false(xp_selector_requirement_matches("zone", "Bogus", va, labels));
        json_decref(labels);
        json_decref(v4);
        json_decref(va);
}

/*
 * The recorded sequence: a ReplicaSet of 3 with no pods creates 3 and expects them; the watch
 * brings them one at a time, each event triggering a sync. Without expectations the sync after
 * the first event would count 1 pod and create 2 more.
 */
static void test_expectations_burst(void **state)
{
        (void)state;
        struct xp_expectations e;
        int64_t now = 1000;
        int32_t active = 0, created = 0;
        const char *names[] = {"p1"};

        xp_expectations_init(&e);
        for (int event = 0; event < 4; event++) {
                if (xp_expectations_satisfied(&e, "ns/web", now)) {
                        int32_t diff = xp_rs_diff(3, active);

                        if (diff > 0) {
                                assert_int_equal(
                                    xp_expectations_expect_creations(&e, "ns/web", diff, now), 0);
                                created += diff;
                        }
                }
                /* the watch brings one of our pods */
                if (active < created) {
                        active++;
                        xp_expectations_creation_observed(&e, "ns/web");
                }
                now += 10;
        }
        assert_int_equal(created, 3);
        assert_int_equal(active, 3);
        assert_true(xp_expectations_satisfied(&e, "ns/web", now));

        /* deletions: counted once per pod, terminating then gone */
        assert_int_equal(xp_expectations_expect_deletions(&e, "ns/web", names, 1, now), 0);
        assert_false(xp_expectations_satisfied(&e, "ns/web", now));
        xp_expectations_deletion_observed(&e, "ns/web", "p1");
        xp_expectations_deletion_observed(&e, "ns/web", "p1");
        assert_true(xp_expectations_satisfied(&e, "ns/web", now));

        /* creations that never come back expire after 5 minutes */
        assert_int_equal(xp_expectations_expect_creations(&e, "ns/web", 2, now), 0);
        assert_false(xp_expectations_satisfied(&e, "ns/web", now + XP_RS_EXPECTATIONS_TTL_MS - 1));
        assert_true(xp_expectations_satisfied(&e, "ns/web", now + XP_RS_EXPECTATIONS_TTL_MS));
        xp_expectations_delete(&e, "ns/web");
        assert_true(xp_expectations_satisfied(&e, "ns/web", now));
        assert_int_equal(xp_expectations_expect_creations(&e, "ns/other", 1, now), 0);
        xp_expectations_done(&e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_ranking),
            cmocka_unit_test(test_diff_and_burst),
            cmocka_unit_test(test_count_min_ready),
            cmocka_unit_test(test_claims),
            cmocka_unit_test(test_selector_operators),
            cmocka_unit_test(test_expectations_burst),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
