/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PodDisruptionBudgets (xpool/disruption.h): the disruption controller's arithmetic as
 * kube-controller-manager's (percentages rounded up, expectedPods from the controllers' scale,
 * disrupted pods out of the healthy count until they expire), the condition, the eviction's
 * decisions (kube-apiserver's checkAndDecrement), and the controller over a store.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "registry_fixture.h"
#include "xpool/disruption.h"
#include "xpool/doc.h"
#include "xpool/timeutil.h"

#define NOW 1796299200 /* 2026-12-03T12:00:00Z */

static json_t *parse(const char *text)
{
        json_error_t jerr;
        json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);

        if (!v)
                fail_msg("bad test JSON: %s: %s", jerr.text, text);
        return v;
}

static int64_t scaled(const char *value, int64_t total, bool up)
{
        json_t *v = parse(value);
        int64_t n = -1;

        assert_int_equal(xp_disruption_scaled(v, total, up, &n), 0);
        json_decref(v);
        return n;
}

static void percentages_round_up(void **state)
{
        json_t *bad;
        int64_t n;

        (void)state;
        assert_int_equal(scaled("\"50%\"", 3, true), 2); /* 1.5 -> 2 */
        assert_int_equal(scaled("\"50%\"", 3, false), 1);
        assert_int_equal(scaled("\"10%\"", 5, true), 1); /* 0.5 -> 1 */
        assert_int_equal(scaled("\"0%\"", 7, true), 0);
        assert_int_equal(scaled("\"100%\"", 7, true), 7);
        assert_int_equal(scaled("\"34%\"", 10, true), 4); /* 3.4 -> 4 */
        assert_int_equal(scaled("3", 10, true), 3);
        bad = parse("\"5\"");
        assert_int_equal(xp_disruption_scaled(bad, 10, true, &n), -EINVAL);
        json_decref(bad);
        bad = parse("\"x%\"");
        assert_int_equal(xp_disruption_scaled(bad, 10, true, &n), -EINVAL);
        json_decref(bad);
}

/* A pod of the namespace "team" labelled app=web; ready or not, being deleted or not. */
static json_t *pod(const char *name, bool ready, bool deleting)
{
        char text[512];

        snprintf(text,
                 sizeof text,
                 "{\"metadata\": {\"name\": \"%s\", \"namespace\": \"team\", \"labels\": {\"app\":"
                 " \"web\"}%s}, \"status\": {\"phase\": \"Running\", \"conditions\": [{\"type\":"
                 " \"Ready\", \"status\": \"%s\"}]}}",
                 name,
                 deleting ? ", \"deletionTimestamp\": \"2026-12-03T12:00:00Z\"" : "",
                 ready ? "True" : "False");
        return parse(text);
}

static json_t *budget(const char *spec, const char *status)
{
        char text[1024];

        snprintf(text,
                 sizeof text,
                 "{\"metadata\": {\"name\": \"web\", \"namespace\": \"team\", \"generation\": 1},"
                 " \"spec\": %s, \"status\": %s}",
                 spec,
                 status);
        return parse(text);
}

static struct xp_disruption_counts count(const json_t *pdb, const json_t *pods, int64_t scale)
{
        struct xp_disruption_counts c;
        json_t *disrupted = NULL;
        int64_t recheck;

        assert_int_equal(xp_disruption_count(pdb, pods, scale, NOW, &disrupted, &recheck, &c), 0);
        json_decref(disrupted);
        return c;
}

static void expected_and_desired(void **state)
{
        json_t *pods = json_array(), *pdb;
        struct xp_disruption_counts c;

        (void)state;
        json_array_append_new(pods, pod("a", true, false));
        json_array_append_new(pods, pod("b", true, false));
        json_array_append_new(pods, pod("c", false, false));

        /* an integer minAvailable: expectedPods is the pods found, the scale is not read */
        pdb = budget("{\"minAvailable\": 2}", "{}");
        assert_false(xp_disruption_needs_scale(pdb));
        c = count(pdb, pods, 99);
        assert_int_equal(c.expected, 3);
        assert_int_equal(c.desired, 2);
        assert_int_equal(c.healthy, 2);
        assert_int_equal(c.allowed, 0);
        json_decref(pdb);

        /* maxUnavailable 50% of the controllers' 3: 2 may go (rounded up), 1 must stay */
        pdb = budget("{\"maxUnavailable\": \"50%\"}", "{}");
        assert_true(xp_disruption_needs_scale(pdb));
        c = count(pdb, pods, 3);
        assert_int_equal(c.expected, 3);
        assert_int_equal(c.desired, 1);
        assert_int_equal(c.allowed, 1);
        json_decref(pdb);

        /* minAvailable 50% of a scale of 5: 3 (2.5 rounded up); 2 healthy, none allowed */
        pdb = budget("{\"minAvailable\": \"50%\"}", "{}");
        c = count(pdb, pods, 5);
        assert_int_equal(c.expected, 5);
        assert_int_equal(c.desired, 3);
        assert_int_equal(c.allowed, 0);
        json_decref(pdb);

        /* maxUnavailable over the scale never makes desiredHealthy negative */
        pdb = budget("{\"maxUnavailable\": 5}", "{}");
        c = count(pdb, pods, 3);
        assert_int_equal(c.desired, 0);
        assert_int_equal(c.allowed, 2);
        json_decref(pdb);

        /* no expected pods: nothing allowed, whatever is healthy */
        pdb = budget("{\"maxUnavailable\": 1}", "{}");
        c = count(pdb, pods, 0);
        assert_int_equal(c.allowed, 0);
        json_decref(pdb);
        json_decref(pods);
}

static void disrupted_pods_expire(void **state)
{
        json_t *pods = json_array(), *pdb, *disrupted = NULL;
        struct xp_disruption_counts c;
        int64_t recheck;

        (void)state;
        json_array_append_new(pods, pod("fresh", true, false));
        json_array_append_new(pods, pod("stale", true, false));
        json_array_append_new(pods, pod("going", true, true));
        json_array_append_new(pods, pod("other", true, false));
        /* fresh: evicted a minute ago; stale: three minutes ago (past the 2 min timeout) */
        pdb = budget("{\"minAvailable\": 1}",
                     "{\"disruptedPods\": {\"fresh\": \"2026-12-03T11:59:00Z\", \"stale\":"
                     " \"2026-12-03T11:57:00Z\", \"going\": \"2026-12-03T11:59:30Z\", \"gone\":"
                     " \"2026-12-03T11:59:30Z\"}}");
        assert_int_equal(xp_disruption_count(pdb, pods, 0, NOW, &disrupted, &recheck, &c), 0);
        /* only fresh stays in the map: stale expired, going is being deleted, gone is gone */
        assert_int_equal(json_object_size(disrupted), 1);
        assert_non_null(json_object_get(disrupted, "fresh"));
        assert_int_equal(recheck, NOW - 60 + XP_DISRUPTION_DELETION_TIMEOUT_S);
        /* healthy: stale and other (fresh is out, going is being deleted) */
        assert_int_equal(c.healthy, 2);
        assert_int_equal(c.allowed, 1);
        json_decref(disrupted);
        json_decref(pdb);
        json_decref(pods);
}

static void condition_as_the_controller_writes_it(void **state)
{
        struct xp_disruption_counts allowed = {
            .expected = 3, .desired = 2, .healthy = 3, .allowed = 1};
        struct xp_disruption_counts none = {
            .expected = 3, .desired = 2, .healthy = 2, .allowed = 0};
        json_t *pdb = budget("{\"minAvailable\": 2}", "{}"), *empty = json_object();
        const json_t *cond;

        (void)state;
        assert_int_equal(xp_disruption_set_status(pdb, &allowed, empty, NOW), 1);
        cond = json_array_get(xp_json_at(pdb, "status.conditions"), 0);
        assert_string_equal(xp_json_str_at(cond, "type", ""), "DisruptionAllowed");
        assert_string_equal(xp_json_str_at(cond, "status", ""), "True");
        assert_string_equal(xp_json_str_at(cond, "reason", ""), "SufficientPods");
        assert_string_equal(xp_json_str_at(cond, "lastTransitionTime", ""), "2026-12-03T12:00:00Z");
        assert_int_equal(xp_json_int_at(pdb, "status.observedGeneration", 0), 1);
        assert_int_equal(xp_json_int_at(pdb, "status.expectedPods", 0), 3);
        assert_null(xp_json_at(pdb, "status.disruptedPods"));
        /* the same figures later: nothing to write, the transition time stays */
        assert_int_equal(xp_disruption_set_status(pdb, &allowed, empty, NOW + 60), 0);
        /* none allowed: False, InsufficientPods, a new transition time */
        assert_int_equal(xp_disruption_set_status(pdb, &none, empty, NOW + 120), 1);
        cond = json_array_get(xp_json_at(pdb, "status.conditions"), 0);
        assert_int_equal(json_array_size(xp_json_at(pdb, "status.conditions")), 1);
        assert_string_equal(xp_json_str_at(cond, "status", ""), "False");
        assert_string_equal(xp_json_str_at(cond, "reason", ""), "InsufficientPods");
        assert_string_equal(xp_json_str_at(cond, "lastTransitionTime", ""), "2026-12-03T12:02:00Z");
        /* a failed sync: nothing allowed, SyncFailed with the reason */
        assert_int_equal(xp_disruption_set_failed(pdb, "found no controllers for pod \"a\"", NOW),
                         1);
        cond = json_array_get(xp_json_at(pdb, "status.conditions"), 0);
        assert_string_equal(xp_json_str_at(cond, "reason", ""), "SyncFailed");
        assert_string_equal(xp_json_str_at(cond, "message", ""),
                            "found no controllers for pod \"a\"");
        json_decref(empty);
        json_decref(pdb);
}

static void eviction_spends_the_budget(void **state)
{
        json_t *pdb = budget("{\"minAvailable\": 2}",
                             "{\"observedGeneration\": 1, \"disruptionsAllowed\": 1,"
                             " \"currentHealthy\": 3, \"desiredHealthy\": 2, \"expectedPods\": 3}");
        struct xp_error err = {0};
        const json_t *cond;

        (void)state;
        assert_int_equal(xp_eviction_decrement(pdb, "a", NOW, &err), 1);
        assert_int_equal(xp_json_int_at(pdb, "status.disruptionsAllowed", -1), 0);
        assert_string_equal(xp_json_str_at(pdb, "status.disruptedPods.a", ""),
                            "2026-12-03T12:00:00Z");
        cond = json_array_get(xp_json_at(pdb, "status.conditions"), 0);
        assert_string_equal(xp_json_str_at(cond, "reason", ""), "InsufficientPods");
        /* the next one is refused with the cause kube-apiserver gives */
        assert_int_equal(xp_eviction_decrement(pdb, "b", NOW, &err), -EAGAIN);
        assert_string_equal(xp_error_message(&err),
                            "The disruption budget web needs 2 healthy pods and has 3 currently");
        assert_null(xp_json_at(pdb, "status.disruptedPods.b"));
        json_decref(pdb);

        /* a budget the controller has not seen since its spec changed */
        pdb = budget("{\"minAvailable\": 1}",
                     "{\"observedGeneration\": 0, \"disruptionsAllowed\": 3}");
        err = (struct xp_error){0};
        assert_int_equal(xp_eviction_decrement(pdb, "a", NOW, &err), -EAGAIN);
        assert_string_equal(xp_error_message(&err),
                            "The disruption budget web is still being processed by the server.");
        json_decref(pdb);

        pdb = budget("{\"minAvailable\": 1}",
                     "{\"observedGeneration\": 1, \"disruptionsAllowed\": -1}");
        err = (struct xp_error){0};
        assert_int_equal(xp_eviction_decrement(pdb, "a", NOW, &err), -EPERM);
        assert_string_equal(xp_error_message(&err), "pdb disruptions allowed is negative");
        json_decref(pdb);
}

static void eviction_decisions(void **state)
{
        json_t *met =
            budget("{\"minAvailable\": 1}", "{\"currentHealthy\": 2, \"desiredHealthy\": 1}");
        json_t *short_ =
            budget("{\"minAvailable\": 3}", "{\"currentHealthy\": 2, \"desiredHealthy\": 3}");
        json_t *always =
            budget("{\"minAvailable\": 3, \"unhealthyPodEvictionPolicy\": \"AlwaysAllow\"}",
                   "{\"currentHealthy\": 2, \"desiredHealthy\": 3}");
        json_t *ready = pod("r", true, false), *unready = pod("u", false, false);
        json_t *going = pod("g", true, true);
        json_t *pending =
            parse("{\"metadata\": {\"name\": \"p\"}, \"status\": {\"phase\": \"Pending\"}}");
        json_t *done =
            parse("{\"metadata\": {\"name\": \"d\"}, \"status\": {\"phase\": \"Succeeded\"}}");

        (void)state;
        assert_true(xp_eviction_ignores_budgets(pending));
        assert_true(xp_eviction_ignores_budgets(done));
        assert_true(xp_eviction_ignores_budgets(going));
        assert_false(xp_eviction_ignores_budgets(ready));
        /* a ready pod always spends the budget */
        assert_false(xp_eviction_unhealthy_allowed(met, ready));
        /* an unready one goes free when the budget is met (IfHealthyBudget, the default) ... */
        assert_true(xp_eviction_unhealthy_allowed(met, unready));
        assert_false(xp_eviction_unhealthy_allowed(short_, unready));
        /* ... or always with AlwaysAllow */
        assert_true(xp_eviction_unhealthy_allowed(always, unready));
        /* selection: labels within the namespace; an empty selector selects all (policy/v1) */
        assert_true(xp_disruption_selects(met, ready));
        json_object_set_new(json_object_get(met, "spec"),
                            "selector",
                            parse("{\"matchLabels\": {\"app\": \"db\"}}"));
        assert_false(xp_disruption_selects(met, ready));
        json_object_set_new(json_object_get(ready, "metadata"), "namespace", json_string("other"));
        assert_false(xp_disruption_selects(short_, ready));
        json_decref(met);
        json_decref(short_);
        json_decref(always);
        json_decref(ready);
        json_decref(unready);
        json_decref(going);
        json_decref(pending);
        json_decref(done);
}

/* ---- the controller over a store ------------------------------------------------------------ */

static void put_pod(struct registry_fixture *f, const char *name, bool ready)
{
        fixture_put_text(
            f,
            "pods",
            "team",
            name,
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"%s\","
            " \"namespace\": \"team\", \"labels\": {\"app\": \"web\"},"
            " \"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": \"ReplicaSet\","
            " \"name\": \"web-1\", \"uid\": \"rs-uid\", \"controller\": true}]},"
            " \"status\": {\"phase\": \"Running\", \"conditions\": [{\"type\": \"Ready\","
            " \"status\": \"%s\"}]}}",
            name,
            ready ? "True" : "False");
}

static void expected_pods_from_the_deployment(void **state)
{
        struct registry_fixture f;
        struct xp_disruption *c = NULL;
        struct xp_error err = {0};
        json_t *pdb;

        (void)state;
        fixture_open(&f, "disruption", 0);
        fixture_put_text(&f,
                         "deployments",
                         "team",
                         "web",
                         "{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\":"
                         " {\"name\": \"web\", \"namespace\": \"team\", \"uid\": \"deploy-uid\"},"
                         " \"spec\": {\"replicas\": 4}}");
        fixture_put_text(
            &f,
            "replicasets",
            "team",
            "web-1",
            "{\"apiVersion\": \"apps/v1\", \"kind\": \"ReplicaSet\", \"metadata\":"
            " {\"name\": \"web-1\", \"namespace\": \"team\", \"uid\": \"rs-uid\","
            " \"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\","
            " \"name\": \"web\", \"uid\": \"deploy-uid\", \"controller\": true}]},"
            " \"spec\": {\"replicas\": 3}}");
        put_pod(&f, "a", true);
        put_pod(&f, "b", true);
        put_pod(&f, "c", true);
        fixture_put_text(
            &f,
            "poddisruptionbudgets",
            "team",
            "web",
            "{\"apiVersion\": \"policy/v1\", \"kind\": \"PodDisruptionBudget\","
            " \"metadata\": {\"name\": \"web\", \"namespace\": \"team\", \"generation\": 1},"
            " \"spec\": {\"maxUnavailable\": \"25%%\", \"selector\": {\"matchLabels\":"
            " {\"app\": \"web\"}}}}");
        assert_int_equal(xp_disruption_new(f.registry, &c, &err), 0);
        assert_int_equal(xp_disruption_step(c, &err), 0);
        pdb = fixture_get(&f, "poddisruptionbudgets", "team", "web");
        /* the Deployment's 4 (not the ReplicaSet's 3): 25% of 4 may go, 3 must stay */
        assert_int_equal(xp_json_int_at(pdb, "status.expectedPods", -1), 4);
        assert_int_equal(xp_json_int_at(pdb, "status.desiredHealthy", -1), 3);
        assert_int_equal(xp_json_int_at(pdb, "status.currentHealthy", -1), 3);
        assert_int_equal(xp_json_int_at(pdb, "status.disruptionsAllowed", -1), 0);
        json_decref(pdb);
        /* a fourth ready pod: one disruption allowed */
        put_pod(&f, "d", true);
        assert_int_equal(xp_disruption_step(c, &err), 0);
        pdb = fixture_get(&f, "poddisruptionbudgets", "team", "web");
        assert_int_equal(xp_json_int_at(pdb, "status.disruptionsAllowed", -1), 1);
        assert_string_equal(
            xp_json_str_at(json_array_get(xp_json_at(pdb, "status.conditions"), 0), "reason", ""),
            "SufficientPods");
        json_decref(pdb);
        /* the ReplicaSet gone: its pods' controller cannot be found, the sync fails safe */
        assert_int_equal(
            xp_store_delete(f.store, "replicasets", "team", "web-1", 0, NULL, NULL, &err), 0);
        put_pod(&f, "d", false);
        assert_int_equal(xp_disruption_step(c, &err), 0);
        pdb = fixture_get(&f, "poddisruptionbudgets", "team", "web");
        assert_int_equal(xp_json_int_at(pdb, "status.disruptionsAllowed", -1), 0);
        assert_string_equal(
            xp_json_str_at(json_array_get(xp_json_at(pdb, "status.conditions"), 0), "reason", ""),
            "SyncFailed");
        json_decref(pdb);
        xp_disruption_free(c);
        fixture_close(&f);
}

/* A pod with a DisruptionTarget mark set `age` seconds ago, with reason, and deleting or not. */
static void put_marked(struct registry_fixture *f,
                       const char *name,
                       int64_t age,
                       const char *reason,
                       const char *phase,
                       bool deleting)
{
        char at[XP_RFC3339_MAX];

        assert_int_equal(xp_time_format_rfc3339((int64_t)time(NULL) - age, at), 0);
        fixture_put_text(f,
                         "pods",
                         "team",
                         name,
                         "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": "
                         "\"%s\", \"namespace\": \"team\"%s}, \"status\": {\"phase\": \"%s\", "
                         "\"conditions\": [{\"type\": \"DisruptionTarget\", \"status\": \"True\", "
                         "\"reason\": \"%s\", \"message\": \"Eviction API: evicting\", "
                         "\"lastTransitionTime\": \"%s\"}]}}",
                         name,
                         deleting ? ", \"deletionTimestamp\": \"2027-01-01T00:00:00Z\"" : "",
                         phase,
                         reason,
                         at);
}

/* The pod's DisruptionTarget as "status reason", "-" for a missing reason. */
static void expect_mark(struct registry_fixture *f, const char *name, const char *want)
{
        json_t *pod = fixture_get(f, "pods", "team", name);
        const json_t *c = json_array_get(xp_json_at(pod, "status.conditions"), 0);
        char got[128];

        snprintf(got,
                 sizeof(got),
                 "%s %s",
                 xp_json_str_at(c, "status", "?"),
                 xp_json_str_at(c, "reason", "-"));
        assert_string_equal(got, want);
        if (strncmp(want, "False", 5) == 0)
                assert_null(json_object_get(c, "message"));
        json_decref(pod);
}

/* A mark older than 2 minutes on a pod that was never deleted is reset to False, as
 * kube-controller-manager's disruption controller does; a young one, the kubelet's own, a
 * deleting pod's and a finished pod's stay. */
static void stale_marks_are_reset(void **state)
{
        struct registry_fixture f;
        struct xp_disruption *c = NULL;
        struct xp_error err = {0};

        (void)state;
        fixture_open(&f, "disruption", 0);
        put_marked(&f, "stale", 121, "EvictionByEvictionAPI", "Running", false);
        put_marked(&f, "young", 30, "PreemptionByScheduler", "Running", false);
        put_marked(&f, "kubelet", 600, "TerminationByKubelet", "Running", false);
        put_marked(&f, "deleting", 600, "EvictionByEvictionAPI", "Running", true);
        put_marked(&f, "done", 600, "EvictionByEvictionAPI", "Succeeded", false);
        assert_int_equal(xp_disruption_new(f.registry, &c, &err), 0);
        assert_int_equal(xp_disruption_step(c, &err), 0);
        expect_mark(&f, "stale", "False -");
        expect_mark(&f, "young", "True PreemptionByScheduler");
        expect_mark(&f, "kubelet", "True TerminationByKubelet");
        expect_mark(&f, "deleting", "True EvictionByEvictionAPI");
        expect_mark(&f, "done", "True EvictionByEvictionAPI");
        /* a mark set again later is judged afresh */
        put_marked(&f, "stale", 200, "DeletionByTaintManager", "Running", false);
        assert_int_equal(xp_disruption_step(c, &err), 0);
        expect_mark(&f, "stale", "False -");
        xp_disruption_free(c);
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(percentages_round_up),
            cmocka_unit_test(expected_and_desired),
            cmocka_unit_test(disrupted_pods_expire),
            cmocka_unit_test(condition_as_the_controller_writes_it),
            cmocka_unit_test(eviction_spends_the_budget),
            cmocka_unit_test(eviction_decisions),
            cmocka_unit_test(expected_pods_from_the_deployment),
            cmocka_unit_test(stale_marks_are_reset),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
