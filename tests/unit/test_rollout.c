/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ReplicaSet and Deployment controllers end to end on a temporary store, stepped by the test
 * (which also plays the node: it marks every pod Running and Ready): a ReplicaSet creating,
 * adopting and deleting pods; a Deployment created, rolled to a new template within maxSurge and
 * maxUnavailable, rolled back (the old ReplicaSet with the next revision); and the controllers
 * replaced by new ones in the middle of a rollout (a server restart), which finishes it with
 * never more pods than replicas + maxSurge.
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
#include "xpool/kind.h"
#include "xpool/timeutil.h"
#include "xpool/workloads.h"

struct fixture {
        struct registry_fixture base;
        struct xp_workloads *w;
        int max_pods; /* the most pods seen at once */
};

static void start(struct fixture *f)
{
        struct xp_error err = {0};

        if (xp_workloads_new(f->base.registry,
                             &(struct xp_workloads_options){.clock = &f->base.clock},
                             &f->w,
                             &err) < 0)
                fail_msg("workloads: %s", err.msg);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        fixture_open(&f->base, "rollout", 0);
        start(f);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        xp_workloads_free(f->w);
        fixture_close(&f->base);
        free(f);
        return 0;
}

static json_t *list(struct fixture *f, const char *kind)
{
        json_t *items = NULL;

        assert_int_equal(xp_store_list(f->base.store, kind, "default", &items, NULL, NULL), 0);
        return items;
}

/* The node's part: every pod Running and Ready since now. */
static void run_pods(struct fixture *f)
{
        json_t *items = list(f, "pods"), *pod;
        char now[XP_RFC3339_MAX];
        size_t i;

        xp_time_format_rfc3339(fixture_wall_s(&f->base.now_ms), now);
        json_array_foreach(items, i, pod)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
                json_t *status = json_object_get(pod, "status");

                if (json_array_size(json_object_get(status, "conditions")) > 0)
                        continue; /* Ready already */
                json_object_set_new(pod,
                                    "status",
                                    json_pack("{s:s, s:[{s:s, s:s, s:s}]}",
                                              "phase",
                                              "Running",
                                              "conditions",
                                              "type",
                                              "Ready",
                                              "status",
                                              "True",
                                              "lastTransitionTime",
                                              now));
                fixture_put(&f->base, "pods", "default", name, json_incref(pod));
        }
        if ((int)json_array_size(items) > f->max_pods)
                f->max_pods = (int)json_array_size(items);
        json_decref(items);
}

/* Steps (the controllers, then the node) n times, 100 ms apart. */
static void steps(struct fixture *f, int n, bool node)
{
        struct xp_error err = {0};

        for (int i = 0; i < n; i++) {
                if (xp_workloads_step(f->w, &err) < 0)
                        fail_msg("step: %s", err.msg);
                if (node)
                        run_pods(f);
                f->base.now_ms += 100;
        }
}

static size_t count(struct fixture *f, const char *kind)
{
        json_t *items = list(f, kind);
        size_t n = json_array_size(items);

        json_decref(items);
        return n;
}

#define RS_JSON                                                                                                                               \
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"rs\",\"namespace\":\"default\",\"uid\":\"rs-uid\"},"    \
        "\"spec\":{\"replicas\":%d,\"selector\":{\"matchLabels\":{\"app\":\"rs\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"rs\"}}," \
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}"

static void test_replicaset(void **state)
{
        struct fixture *f = *state;
        json_t *pod;

        fixture_put_text(&f->base, "replicasets", "default", "rs", RS_JSON, 3);
        steps(f, 5, false);
        assert_int_equal(count(f, "pods"), 3);
        /* an orphan with the labels is adopted, and then one is too many: a Pending one goes */
        fixture_put_text(
            &f->base,
            "pods",
            "default",
            "orphan",
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"orphan\",\"namespace\":\"default\",\"uid\":\"o-uid\","
            "\"labels\":{\"app\":\"rs\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},\"status\":{\"phase\":\"Running\"}}");
        steps(f, 5, false);
        assert_int_equal(count(f, "pods"), 3);
        pod = fixture_get(&f->base, "pods", "default", "orphan");
        assert_non_null(pod);
        assert_string_equal(
            json_string_value(json_object_get(
                json_array_get(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"),
                               0),
                "uid")),
            "rs-uid");
        json_decref(pod);
        /* the status */
        steps(f, 3, true);
        pod = fixture_get(&f->base, "replicasets", "default", "rs");
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(pod, "status"), "readyReplicas")),
            3);
        json_decref(pod);
        /* scaled to 0; the ReplicaSet deleted: nothing left */
        fixture_put_text(&f->base, "replicasets", "default", "rs", RS_JSON, 0);
        steps(f, 5, false);
        assert_int_equal(count(f, "pods"), 0);
}

#define DEPLOY_JSON                                                                                                                              \
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"d-uid\"},"       \
        "\"spec\":{\"replicas\":4,\"revisionHistoryLimit\":10,\"progressDeadlineSeconds\":600,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}," \
        "\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":1,\"maxUnavailable\":0}},"                                     \
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"web:%d\"}]}}}}"

/* The ReplicaSets' names and revisions, and how many pods each asks for. */
static void replicasets(struct fixture *f, int *ret_n, int *ret_total, int64_t *ret_max_revision)
{
        json_t *items = list(f, "replicasets"), *rs;
        size_t i;

        *ret_n = (int)json_array_size(items);
        *ret_total = 0;
        *ret_max_revision = 0;
        json_array_foreach(items, i, rs)
        {
                const char *rev = json_string_value(
                    json_object_get(json_object_get(json_object_get(rs, "metadata"), "annotations"),
                                    "deployment.kubernetes.io/revision"));

                *ret_total += (int)json_integer_value(
                    json_object_get(json_object_get(rs, "spec"), "replicas"));
                if (rev && atoll(rev) > *ret_max_revision)
                        *ret_max_revision = atoll(rev);
        }
        json_decref(items);
}

static const char *condition(json_t *d, const char *type)
{
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(d, "status"), "conditions"),
                           i,
                           c) if (strcmp(json_string_value(json_object_get(c, "type")), type) ==
                                  0) return json_string_value(json_object_get(c, "reason"));
        return "";
}

static void roll_to(struct fixture *f, int image, bool restart_midway)
{
        fixture_put_text(&f->base, "deployments", "default", "web", DEPLOY_JSON, image);
        for (int i = 0; i < 60; i++) {
                json_t *d;
                bool done;

                steps(f, 1, true);
                if (restart_midway && i == 3) {
                        xp_workloads_free(f->w); /* a server restart: nothing carried over */
                        start(f);
                }
                d = fixture_get(&f->base, "deployments", "default", "web");
                done = strcmp(condition(d, "Progressing"), "NewReplicaSetAvailable") == 0 &&
                       json_integer_value(
                           json_object_get(json_object_get(d, "status"), "updatedReplicas")) == 4 &&
                       json_integer_value(
                           json_object_get(json_object_get(d, "status"), "replicas")) == 4;
                json_decref(d);
                if (done)
                        return;
        }
        fail_msg("the rollout to web:%d did not complete", image);
}

static void test_deployment(void **state)
{
        struct fixture *f = *state;
        int n, total;
        int64_t revision;
        json_t *d;

        roll_to(f, 1, false);
        replicasets(f, &n, &total, &revision);
        assert_int_equal(n, 1);
        assert_int_equal(total, 4);
        assert_int_equal(revision, 1);
        d = fixture_get(&f->base, "deployments", "default", "web");
        assert_string_equal(condition(d, "Available"), "MinimumReplicasAvailable");
        json_decref(d);
        f->max_pods = 0;
        roll_to(f, 2, false);
        /* maxSurge 1: never more than 5 pods */
        assert_true(f->max_pods <= 5);
        replicasets(f, &n, &total, &revision);
        assert_int_equal(n, 2);
        assert_int_equal(total, 4);
        assert_int_equal(revision, 2);
        /* back to the first template: its ReplicaSet comes back as revision 3 */
        roll_to(f, 1, false);
        replicasets(f, &n, &total, &revision);
        assert_int_equal(n, 2);
        assert_int_equal(revision, 3);
        assert_int_equal(count(f, "pods"), 4);
}

static void test_restart_midway(void **state)
{
        struct fixture *f = *state;
        int n, total;
        int64_t revision;

        roll_to(f, 1, false);
        f->max_pods = 0;
        roll_to(f, 2, true);
        assert_true(f->max_pods <= 5);
        replicasets(f, &n, &total, &revision);
        assert_int_equal(total, 4);
        assert_int_equal(count(f, "pods"), 4);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_replicaset, setup, teardown),
            cmocka_unit_test_setup_teardown(test_deployment, setup, teardown),
            cmocka_unit_test_setup_teardown(test_restart_midway, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
