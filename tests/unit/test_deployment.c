/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Deployment controller's decisions (src/controller/deployment*.c): the template hash, the
 * fenceposts, rolling updates replayed step by step, proportional scaling (the example of
 * Kubernetes' documentation), Recreate, revision history and the conditions. No clock: time is
 * a number the test moves.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/deployment.h"
#include "xpool/condition.h"

static json_t *load(const char *text)
{
        json_error_t e;
        json_t *o = json_loads(text, 0, &e);

        if (!o)
                fail_msg("bad fixture: %s: %s", e.text, text);
        return o;
}

static void test_hash(void **state)
{
        (void)state;
        json_t *a = load(
            "{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x:1\"}]}}");
        /* the same template with keys in another order and with a hash label */
        json_t *b = load(
            "{\"spec\":{\"containers\":[{\"image\":\"x:1\",\"name\":\"c\"}]},\"metadata\":{\"labels\":{\"pod-template-hash\":\"zzz\",\"app\":\"web\"}}}");
        json_t *c = load(
            "{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x:2\"}]}}");
        char ha[XP_DEPLOY_HASH_MAX], hb[XP_DEPLOY_HASH_MAX], hc[XP_DEPLOY_HASH_MAX],
            h1[XP_DEPLOY_HASH_MAX];

        assert_int_equal(xp_deploy_template_hash(a, 0, ha), 0);
        assert_int_equal(xp_deploy_template_hash(b, 0, hb), 0);
        assert_int_equal(xp_deploy_template_hash(c, 0, hc), 0);
        assert_int_equal(xp_deploy_template_hash(a, 1, h1), 0);
        assert_string_equal(ha, hb);
        assert_string_not_equal(ha, hc);
        assert_string_not_equal(ha, h1);
        /* only the safe alphabet: no vowels, so a hash never spells a word */
        assert_true(strspn(ha, "bcdfghjklmnpqrstvwxz2456789") == strlen(ha));
        assert_true(strlen(ha) >= 6);
        assert_true(xp_deploy_template_equal(a, b));
        assert_false(xp_deploy_template_equal(a, c));
        json_decref(a);
        json_decref(b);
        json_decref(c);
}

/* kubectl rollout undo sends the old ReplicaSet's template with Go's unset creationTimestamp,
 * null: it is the same template, the same ReplicaSet, as Kubernetes finds it. */
static void test_hash_null_creation_timestamp(void **state)
{
        (void)state;
        json_t *stored = load(
            "{\"metadata\":{\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"6d6968d978\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x:1\"}]}}");
        json_t *undone = load(
            "{\"metadata\":{\"creationTimestamp\":null,\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x:1\"}]}}");
        json_t *stamped = load(
            "{\"metadata\":{\"creationTimestamp\":\"2026-12-04T21:00:00Z\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x:1\"}]}}");
        char hs[XP_DEPLOY_HASH_MAX], hu[XP_DEPLOY_HASH_MAX], ht[XP_DEPLOY_HASH_MAX];

        assert_int_equal(xp_deploy_template_hash(stored, 0, hs), 0);
        assert_int_equal(xp_deploy_template_hash(undone, 0, hu), 0);
        assert_int_equal(xp_deploy_template_hash(stamped, 0, ht), 0);
        assert_string_equal(hs, hu);
        assert_true(xp_deploy_template_equal(stored, undone));
        /* only null is left out: a time is part of the template */
        assert_string_not_equal(hs, ht);
        assert_false(xp_deploy_template_equal(stored, stamped));
        json_decref(stored);
        json_decref(undone);
        json_decref(stamped);
}

/* ... and each container's resources as Go writes them back: {} for none, "1" for a stored 1,
 * "1Gi" for "1024Mi": the same template, the same ReplicaSet (the comparison; the hash, which
 * names stored ReplicaSets and labels their pods, is left as it was), where resources that ask
 * for something else are not. */
static void test_equal_as_go_writes(void **state)
{
        (void)state;
        json_t *stored = load(
            "{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"initContainers\":[{\"name\":\"i\"}],\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1,\"memory\":\"1024Mi\",\"cpu\":0.5}}}]}}");
        json_t *undone = load(
            "{\"metadata\":{\"creationTimestamp\":null,\"labels\":{\"app\":\"web\"}},\"spec\":{\"initContainers\":[{\"name\":\"i\",\"resources\":{}}],\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"memory\":\"1Gi\",\"cpu\":\"500m\"}}}]}}");
        json_t *asking = load(
            "{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"initContainers\":[{\"name\":\"i\"}],\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\",\"memory\":\"1Gi\",\"cpu\":\"500m\"}}}]}}");
        char before[XP_DEPLOY_HASH_MAX], after[XP_DEPLOY_HASH_MAX];

        assert_true(xp_deploy_template_equal(stored, undone));
        assert_true(xp_deploy_template_equal(undone, stored));
        assert_false(xp_deploy_template_equal(stored, asking));
        /* the comparison changes neither template, nor their hash */
        assert_int_equal(xp_deploy_template_hash(stored, 0, before), 0);
        assert_true(xp_deploy_template_equal(stored, undone));
        assert_int_equal(xp_deploy_template_hash(stored, 0, after), 0);
        assert_string_equal(before, after);
        assert_true(json_is_integer(json_object_get(
            json_object_get(
                json_object_get(
                    json_array_get(json_object_get(json_object_get(stored, "spec"), "containers"),
                                   0),
                    "resources"),
                "limits"),
            "nvidia.com/gpu")));
        json_decref(stored);
        json_decref(undone);
        json_decref(asking);
}

static void test_fenceposts(void **state)
{
        (void)state;
        struct xp_error err = {0};
        json_t *p25 = json_string("25%"), *zero = json_integer(0), *two = json_integer(2);
        json_t *bad = json_string("25"), *pct0 = json_string("0%");
        int32_t s, u;

        assert_int_equal(xp_deploy_fenceposts(NULL, NULL, 3, &s, &u, &err), 0);
        assert_int_equal(s, 1); /* 0.75 rounds up */
        assert_int_equal(u, 0); /* 0.75 rounds down */
        assert_int_equal(xp_deploy_fenceposts(p25, p25, 10, &s, &u, &err), 0);
        assert_int_equal(s, 3);
        assert_int_equal(u, 2);
        assert_int_equal(xp_deploy_fenceposts(zero, two, 10, &s, &u, &err), 0);
        assert_int_equal(s, 0);
        assert_int_equal(u, 2);
        /* both 0 (here through a percentage): one may be unavailable */
        assert_int_equal(xp_deploy_fenceposts(zero, pct0, 10, &s, &u, &err), 0);
        assert_int_equal(u, 1);
        assert_int_equal(xp_deploy_fenceposts(bad, NULL, 10, &s, &u, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "spec.strategy.rollingUpdate.maxSurge"));
        assert_non_null(strstr(err.msg, "a valid percent string"));
        json_decref(p25);
        json_decref(zero);
        json_decref(two);
        json_decref(bad);
        json_decref(pct0);
}

/* The pods of each ReplicaSet follow its spec within the step and are available at once. */
static void settle(struct xp_deploy_rs *rs, size_t n)
{
        for (size_t i = 0; i < n; i++)
                rs[i].status_replicas = rs[i].available = rs[i].ready = rs[i].replicas;
}

static int64_t sum(const struct xp_deploy_rs *rs, size_t n, bool available)
{
        int64_t s = 0;

        for (size_t i = 0; i < n; i++)
                s += available ? rs[i].available : rs[i].replicas;
        return s;
}

/* A rollout of 10 replicas with maxSurge 3, maxUnavailable 2, replayed to its end. */
static void test_rolling_update(void **state)
{
        (void)state;
        struct xp_deploy_spec spec = {.replicas = 10, .max_surge = 3, .max_unavailable = 2};
        struct xp_deploy_rs rs[2] = {
            {.name = "old", .replicas = 10, .status_replicas = 10, .available = 10, .created_s = 1},
            {.name = "new", .replicas = 0, .created_s = 2},
        };
        int steps = 0;

        /* step 1: the new one surges to 3; the old one may lose 2 (10 - 2 must stay available) */
        rs[1].replicas = xp_deploy_rolling_new(&spec, rs, 2, &rs[1]);
        assert_int_equal(rs[1].replicas, 3);
        assert_int_equal(xp_deploy_rolling_old(&spec, &rs[0], 1, &rs[1]), 2);
        assert_int_equal(rs[0].replicas, 8);
        while (rs[0].replicas > 0 || rs[1].replicas < 10) {
                /* never more than 13 pods asked for, never fewer than 8 available */
                assert_true(sum(rs, 2, false) <= 13);
                settle(rs, 2);
                assert_true(sum(rs, 2, true) >= 8);
                rs[1].replicas = xp_deploy_rolling_new(&spec, rs, 2, &rs[1]);
                xp_deploy_rolling_old(&spec, &rs[0], 1, &rs[1]);
                assert_true(++steps < 20);
        }
        assert_int_equal(rs[1].replicas, 10);

        /* unhealthy old replicas go first: of 13 asked for, 8 must stay available and the new
         * ReplicaSet's 3 are not yet, so 2 may go, and they are b's unavailable ones */
        struct xp_deploy_rs old[2] = {
            {.name = "a", .replicas = 5, .available = 5, .created_s = 1},
            {.name = "b", .replicas = 5, .available = 0, .created_s = 2},
        };
        struct xp_deploy_rs fresh = {.name = "n", .replicas = 3, .available = 0, .created_s = 3};

        assert_int_equal(xp_deploy_rolling_old(&spec, old, 2, &fresh), 2);
        assert_int_equal(old[1].replicas, 3);
        assert_int_equal(old[0].replicas, 5); /* a's available pods stay: only 5 are available */
}

/* Kubernetes' documentation: 10 replicas, maxSurge 3, maxUnavailable 2, old 8 and new 5; scaled
 * to 15, the 5 more replicas go 3 to the old ReplicaSet and 2 to the new one. */
static void test_proportional(void **state)
{
        (void)state;
        struct xp_deploy_spec spec = {
            .replicas = 15, .max_surge = 3, .max_unavailable = 2, .status_replicas = 13};
        struct xp_deploy_rs rs[2] = {
            {.name = "old", .replicas = 8, .created_s = 1, .desired = 10, .max = 13},
            {.name = "new", .replicas = 5, .created_s = 2, .desired = 10, .max = 13},
        };

        assert_true(xp_deploy_is_scaling_event(&spec, rs, 2));
        xp_deploy_scale(&spec, rs, 2, 1);
        for (size_t i = 0; i < 2; i++) {
                if (strcmp(rs[i].name, "old") == 0)
                        assert_int_equal(rs[i].replicas, 11);
                else
                        assert_int_equal(rs[i].replicas, 7);
        }
        /* one active ReplicaSet takes it all */
        struct xp_deploy_rs one[2] = {{.name = "a", .replicas = 0, .created_s = 1},
                                      {.name = "b", .replicas = 4, .created_s = 2}};
        struct xp_deploy_spec two = {.replicas = 2, .max_surge = 1};

        xp_deploy_scale(&two, one, 2, 1);
        assert_int_equal(one[1].replicas, 2);
        assert_int_equal(one[0].replicas, 0);
        /* scaling down: the larger loses more; rounding's rest goes to the largest */
        struct xp_deploy_rs down[2] = {
            {.name = "o", .replicas = 6, .created_s = 1, .desired = -1, .max = 13},
            {.name = "n", .replicas = 7, .created_s = 2, .desired = -1, .max = 13}};
        struct xp_deploy_spec five = {.replicas = 5, .max_surge = 1};

        xp_deploy_scale(&five, down, 2, 1);
        assert_int_equal(down[0].replicas + down[1].replicas, 6);
        /* without the desired-replicas annotation nothing says the count changed */
        assert_false(xp_deploy_is_scaling_event(&five, down, 2));
}

static void test_recreate(void **state)
{
        (void)state;
        struct xp_deploy_spec spec = {.replicas = 3, .recreate = true};
        struct xp_deploy_rs old = {.name = "o", .replicas = 3};
        struct xp_deploy_rs new_rs = {.name = "n", .replicas = 0};

        assert_int_equal(xp_deploy_recreate_step(&spec, &old, 1, true, &new_rs),
                         XP_RECREATE_SCALE_DOWN_OLD);
        old.replicas = 0;
        assert_int_equal(xp_deploy_recreate_step(&spec, &old, 1, true, &new_rs), XP_RECREATE_WAIT);
        assert_int_equal(xp_deploy_recreate_step(&spec, &old, 1, false, &new_rs),
                         XP_RECREATE_SCALE_UP_NEW);
        assert_int_equal(xp_deploy_rolling_new(&spec, &new_rs, 1, &new_rs), 3);
        new_rs.replicas = 3;
        assert_int_equal(xp_deploy_recreate_step(&spec, &old, 1, false, &new_rs), XP_RECREATE_DONE);
}

static void test_history(void **state)
{
        (void)state;
        struct xp_deploy_rs old[5] = {
            {.name = "r3", .revision = 3},
            {.name = "r1", .revision = 1},
            {.name = "r4", .revision = 4, .replicas = 1}, /* still asked for: kept */
            {.name = "r2", .revision = 2},
            {.name = "r5", .revision = 5, .status_replicas = 1}, /* pods left: kept */
        };
        size_t del[5];

        assert_int_equal(xp_deploy_next_revision(old, 5), 6);
        assert_int_equal(xp_deploy_history_cleanup(old, 5, 1, del), 2);
        assert_string_equal(old[del[0]].name, "r1");
        assert_string_equal(old[del[1]].name, "r2");
        assert_int_equal(xp_deploy_history_cleanup(old, 5, 10, del), 0);
        assert_int_equal(xp_deploy_history_cleanup(old, 5, 0, del), 3);
}

static const char *cond(const json_t *status, const char *type, const char *key)
{
        return json_string_value(json_object_get(xp_condition_get(status, type), key));
}

/* A rollout's conditions, event by event: created, progressing, stuck past the deadline,
 * then complete; paused and resumed. */
static void test_conditions(void **state)
{
        (void)state;
        json_t *status = json_object();
        struct xp_deploy_progress p = {.replicas = 2,
                                       .max_unavailable = 0,
                                       .progress_deadline_s = 600,
                                       .new_rs_created = true,
                                       .observed = true,
                                       .new_rs = "web-abc"};
        int64_t t = 1800000000, recheck = 0;

        assert_int_equal(xp_deploy_conditions(&p, t, status, &recheck), 1);
        assert_string_equal(cond(status, "Progressing", "reason"), "NewReplicaSetCreated");
        assert_string_equal(cond(status, "Progressing", "message"),
                            "Created new replica set \"web-abc\"");
        assert_string_equal(cond(status, "Available", "reason"), "MinimumReplicasUnavailable");
        assert_int_equal(recheck, t + 601);
        p.new_rs_created = false;
        p.now.updated = p.now.replicas = 1;
        assert_int_equal(xp_deploy_conditions(&p, t + 10, status, &recheck), 0);
        assert_string_equal(cond(status, "Progressing", "reason"), "ReplicaSetUpdated");
        assert_string_equal(cond(status, "Progressing", "message"),
                            "ReplicaSet \"web-abc\" is progressing.");
        p.before = p.now;
        assert_int_equal(xp_deploy_conditions(&p, t + 500, status, &recheck), 1);
        assert_int_equal(recheck, t + 10 + 601);
        assert_int_equal(xp_deploy_conditions(&p, t + 700, status, &recheck), 0);
        assert_string_equal(cond(status, "Progressing", "reason"), "ProgressDeadlineExceeded");
        assert_string_equal(cond(status, "Progressing", "status"), "False");
        /* pausing does not hide a lack of progress */
        p.paused = true;
        assert_int_equal(xp_deploy_conditions(&p, t + 710, status, &recheck), 0);
        assert_string_equal(cond(status, "Progressing", "reason"), "ProgressDeadlineExceeded");
        p.paused = false;
        p.now = (struct xp_deploy_counts){.replicas = 2, .updated = 2, .ready = 2, .available = 2};
        assert_int_equal(xp_deploy_conditions(&p, t + 720, status, &recheck), 0);
        assert_string_equal(cond(status, "Progressing", "reason"), "NewReplicaSetAvailable");
        assert_string_equal(cond(status, "Progressing", "message"),
                            "ReplicaSet \"web-abc\" has successfully progressed.");
        assert_string_equal(cond(status, "Available", "reason"), "MinimumReplicasAvailable");
        assert_string_equal(cond(status, "Available", "message"),
                            "Deployment has minimum availability.");
        p.paused = true;
        xp_deploy_conditions(&p, t + 730, status, &recheck);
        assert_string_equal(cond(status, "Progressing", "reason"), "DeploymentPaused");
        assert_string_equal(cond(status, "Progressing", "status"), "Unknown");
        p.paused = false;
        xp_deploy_conditions(&p, t + 740, status, &recheck);
        assert_string_equal(cond(status, "Progressing", "message"),
                            "ReplicaSet \"web-abc\" has successfully progressed.");
        json_decref(status);
}

static void test_count(void **state)
{
        (void)state;
        struct xp_deploy_rs rs[2] = {{.status_replicas = 2, .ready = 2, .available = 1},
                                     {.status_replicas = 3, .ready = 1, .available = 1}};
        struct xp_deploy_counts c;

        xp_deploy_count(4, rs, 2, &rs[1], &c);
        assert_int_equal(c.replicas, 5);
        assert_int_equal(c.updated, 3);
        assert_int_equal(c.ready, 3);
        assert_int_equal(c.available, 2);
        assert_int_equal(c.unavailable, 2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_hash),
            cmocka_unit_test(test_hash_null_creation_timestamp),
            cmocka_unit_test(test_equal_as_go_writes),
            cmocka_unit_test(test_fenceposts),
            cmocka_unit_test(test_rolling_update),
            cmocka_unit_test(test_proportional),
            cmocka_unit_test(test_recreate),
            cmocka_unit_test(test_history),
            cmocka_unit_test(test_conditions),
            cmocka_unit_test(test_count),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
