/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dashboard's history (src/controller/history*.c): the rings' steps, window and limits, the
 * usage entry point the metrics sampler calls, and the feed that records a store's allocation.
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
#include "xpool/history.h"
#include "xpool/history_feed.h"

#define T0 1800000000 /* a step boundary: 10 s steps */

static json_t *history_json(struct xp_history *h, int64_t now)
{
        json_t *doc = NULL;

        assert_int_equal(xp_history_to_json(h, now, &doc), 0);
        return doc;
}

/* The series of section whose first two names are a and b, or NULL. */
static json_t *series(json_t *doc,
                      const char *section,
                      const char *key_a,
                      const char *a,
                      const char *key_b,
                      const char *b)
{
        json_t *s;
        size_t i;

        json_array_foreach(json_object_get(doc, section),
                           i,
                           s) if (strcmp(json_string_value(json_object_get(s, key_a)), a) == 0 &&
                                  strcmp(json_string_value(json_object_get(s, key_b)), b) ==
                                      0) return s;
        return NULL;
}

static json_t *point(json_t *s, size_t i)
{
        return json_array_get(json_object_get(s, "points"), i);
}

static size_t n_points(json_t *s)
{
        return json_array_size(json_object_get(s, "points"));
}

static void gpu(struct xp_history *h, int64_t now, double allocated)
{
        const struct xp_history_alloc a[] = {
            {.resource = "nvidia.com/gpu",
             .kind = "gpu",
             .node = "",
             .allocated = allocated,
             .capacity = 8},
            {.resource = "nvidia.com/gpu",
             .kind = "gpu",
             .node = "n1",
             .allocated = allocated,
             .capacity = 8},
        };

        assert_int_equal(xp_history_record_alloc(h, now, a, 2), 0);
}

static void steps_hold_the_last_value_oldest_first(void **state)
{
        struct xp_history *h;
        json_t *doc, *s;

        (void)state;
        assert_int_equal(xp_history_new(0, 0, &h), 0);
        gpu(h, T0, 1);
        gpu(h, T0 + 3, 2); /* same step: replaces */
        gpu(h, T0 + 10, 3);
        gpu(h, T0 + 35, 4); /* T0 + 20 had no recording: no point */
        doc = history_json(h, T0 + 36);
        assert_int_equal(json_integer_value(json_object_get(doc, "stepSeconds")), 10);
        assert_int_equal(json_integer_value(json_object_get(doc, "windowSeconds")), 3600);
        s = series(doc, "allocation", "resource", "nvidia.com/gpu", "node", "");
        assert_non_null(s);
        assert_string_equal(json_string_value(json_object_get(s, "kind")), "gpu");
        assert_int_equal(n_points(s), 3);
        assert_int_equal(json_integer_value(json_array_get(point(s, 0), 0)), T0);
        assert_true(json_real_value(json_array_get(point(s, 0), 1)) == 2);
        assert_true(json_real_value(json_array_get(point(s, 0), 2)) == 8);
        assert_int_equal(json_integer_value(json_array_get(point(s, 1), 0)), T0 + 10);
        assert_int_equal(json_integer_value(json_array_get(point(s, 2), 0)), T0 + 30);
        assert_true(json_real_value(json_array_get(point(s, 2), 1)) == 4);
        assert_non_null(series(doc, "allocation", "resource", "nvidia.com/gpu", "node", "n1"));
        assert_int_equal(json_array_size(json_object_get(doc, "usage")), 0);
        json_decref(doc);
        xp_history_free(h);
}

static void an_hour_and_no_more(void **state)
{
        struct xp_history *h;
        json_t *doc, *s;

        (void)state;
        assert_int_equal(xp_history_new(0, 0, &h), 0);
        /* two laps of the ring: 720 steps, of which the last 360 are kept */
        for (int64_t i = 0; i < 720; i++)
                gpu(h, T0 + i * 10, (double)i);
        doc = history_json(h, T0 + 7199);
        s = series(doc, "allocation", "resource", "nvidia.com/gpu", "node", "");
        assert_int_equal(n_points(s), 360);
        assert_int_equal(json_integer_value(json_array_get(point(s, 0), 0)), T0 + 3600);
        assert_true(json_real_value(json_array_get(point(s, 0), 1)) == 360);
        assert_true(json_real_value(json_array_get(point(s, 359), 1)) == 719);
        json_decref(doc);
        /* an hour later with nothing recorded: every point is out of the window */
        doc = history_json(h, T0 + 7200 + 3600);
        assert_int_equal(json_array_size(json_object_get(doc, "allocation")), 0);
        json_decref(doc);
        /* a series recorded no more is forgotten once a window passed; the others stay */
        gpu(h, T0 + 20000, 1);
        const struct xp_history_alloc cpu = {.resource = "cpu", .allocated = 1, .capacity = 2};
        assert_int_equal(xp_history_record_alloc(h, T0 + 20000 + 3600, &cpu, 1), 0);
        doc = history_json(h, T0 + 20000 + 3600);
        assert_int_equal(json_array_size(json_object_get(doc, "allocation")), 1);
        s = series(doc, "allocation", "resource", "cpu", "node", "");
        assert_non_null(s);
        assert_string_equal(json_string_value(json_object_get(s, "kind")), "");
        json_decref(doc);
        xp_history_free(h);
}

static void usage_is_averaged_per_step_and_checked(void **state)
{
        struct xp_history *h;
        json_t *doc, *s;

        (void)state;
        assert_int_equal(xp_history_new(0, 0, &h), 0);
        assert_int_equal(xp_history_record_usage(h, T0, "n1", "GPU-0", "gpu", 20), 0);
        assert_int_equal(xp_history_record_usage(h, T0 + 5, "n1", "GPU-0", "gpu", 40), 0);
        assert_int_equal(xp_history_record_usage(h, T0 + 10, "n1", "GPU-0", "gpu", 100), 0);
        assert_int_equal(xp_history_record_usage(h, T0, "n1", "GPU-0", "gpu", 100.5), -EINVAL);
        assert_int_equal(xp_history_record_usage(h, T0, "n1", "GPU-0", "gpu", -1), -EINVAL);
        assert_int_equal(xp_history_record_usage(h, T0, "n1", "", "gpu", 1), -EINVAL);
        assert_int_equal(xp_history_record_usage(h, T0, NULL, "GPU-0", "gpu", 1), -EINVAL);
        doc = history_json(h, T0 + 11);
        s = series(doc, "usage", "node", "n1", "device", "GPU-0");
        assert_non_null(s);
        assert_string_equal(json_string_value(json_object_get(s, "kind")), "gpu");
        assert_int_equal(n_points(s), 2);
        assert_true(json_real_value(json_array_get(point(s, 0), 1)) == 30);
        assert_true(json_real_value(json_array_get(point(s, 1), 1)) == 100);
        json_decref(doc);
        xp_history_free(h);
}

static void series_are_bounded(void **state)
{
        struct xp_history *h;
        char name[32];
        int r = 0;

        (void)state;
        assert_int_equal(xp_history_new(10, 20, &h), 0);
        for (int i = 0; i < XP_HISTORY_SERIES_MAX && r == 0; i++) {
                snprintf(name, sizeof name, "GPU-%d", i);
                r = xp_history_record_usage(h, T0, "n1", name, "gpu", 1);
        }
        assert_int_equal(r, 0);
        assert_int_equal(xp_history_record_usage(h, T0, "n1", "one-more", "gpu", 1), -ENOSPC);
        /* a known series still records */
        assert_int_equal(xp_history_record_usage(h, T0, "n1", "GPU-0", "gpu", 1), 0);
        /* and once the window passed, the old ones make room */
        assert_int_equal(xp_history_record_usage(h, T0 + 40, "n1", "one-more", "gpu", 1), 0);
        assert_int_equal(xp_history_new(10, 5, &(struct xp_history *){NULL}), -EINVAL);
        xp_history_free(h);
}

static double last_allocated(json_t *doc, const char *resource, const char *node, double *cap)
{
        json_t *s = series(doc, "allocation", "resource", resource, "node", node), *p;

        assert_non_null(s);
        p = point(s, n_points(s) - 1);
        if (cap)
                *cap = json_real_value(json_array_get(p, 2));
        return json_real_value(json_array_get(p, 1));
}

#define NODE                                                                                       \
        "{\"metadata\":{\"name\":\"mixed\"},\"status\":{\"allocatable\":{\"cpu\":\"16\","          \
        "\"memory\":\"64Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"1\",\"vendor.com/npu\":\"2\"}," \
        "\"xpool\":{\"devices\":[{\"id\":\"GPU-0\",\"kind\":\"gpu\",\"resourceName\":"             \
        "\"nvidia.com/gpu\",\"metrics\":{\"utilizationPercent\":42}},{\"id\":\"NPU-0\","           \
        "\"kind\":\"npu\",\"resourceName\":\"vendor.com/npu\"}]}}}"

#define POD(name, node, phase)                                                                     \
        "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\"},\"spec\":{" node          \
        "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"500m\"},"          \
        "\"limits\":{\"cpu\":\"2\",\"nvidia.com/gpu\":1,\"vendor.com/npu\":\"2\"}}},"              \
        "{\"name\":\"d\",\"resources\":{\"requests\":{\"memory\":\"1Gi\"}}}]},"                    \
        "\"status\":{\"phase\":\"" phase "\"}}"

static void the_feed_records_what_the_store_holds(void **state)
{
        struct registry_fixture f;
        struct xp_history_feed *feed;
        struct xp_history *h;
        struct xp_error err = {0};
        json_t *doc, *s;
        double cap;

        (void)state;
        fixture_open(&f, "history", 0);
        fixture_put_text(&f, "nodes", "", "mixed", "%s", NODE);
        fixture_put_text(&f,
                         "pods",
                         "default",
                         "bound",
                         "%s",
                         POD("bound", "\"nodeName\":\"mixed\",", "Running"));
        fixture_put_text(&f, "pods", "default", "waits", "%s", POD("waits", "", "Pending"));
        fixture_put_text(&f,
                         "pods",
                         "default",
                         "done",
                         "%s",
                         POD("done", "\"nodeName\":\"mixed\",", "Succeeded"));
        assert_int_equal(xp_history_new(0, 0, &h), 0);
        assert_int_equal(xp_history_feed_new(f.store, h, &f.clock, &feed, &err), 0);
        doc = history_json(h, FIXTURE_WALL_START);
        /* requests where given (cpu 500m), else limits (the GPU, the NPUs), summed over containers
         */
        assert_true(last_allocated(doc, "cpu", "", &cap) == 0.5);
        assert_true(cap == 16);
        assert_true(last_allocated(doc, "memory", "mixed", &cap) == 1073741824.0);
        assert_true(cap == 68719476736.0);
        assert_true(last_allocated(doc, "nvidia.com/gpu", "mixed", &cap) == 1);
        assert_true(cap == 1);
        assert_true(last_allocated(doc, "vendor.com/npu", "", &cap) == 2);
        assert_true(last_allocated(doc, "pods", "", &cap) == 1);
        assert_true(cap == 110);
        s = series(doc, "allocation", "resource", "vendor.com/npu", "node", "");
        assert_string_equal(json_string_value(json_object_get(s, "kind")), "npu");
        s = series(doc, "usage", "node", "mixed", "device", "GPU-0");
        assert_non_null(s);
        assert_true(json_real_value(json_array_get(point(s, 0), 1)) == 42);
        assert_null(series(doc, "usage", "node", "mixed", "device", "NPU-0"));
        json_decref(doc);

        /* the pod goes, a step later: nothing allocated */
        assert_int_equal(xp_store_delete(f.store, "pods", "default", "bound", 0, NULL, NULL, NULL),
                         0);
        f.now_ms += 10000;
        assert_int_equal(xp_history_feed_step(feed, &err), 0);
        doc = history_json(h, FIXTURE_WALL_START + 10);
        assert_true(last_allocated(doc, "nvidia.com/gpu", "mixed", NULL) == 0);
        assert_true(last_allocated(doc, "cpu", "", NULL) == 0);
        assert_int_equal(n_points(series(doc, "allocation", "resource", "cpu", "node", "")), 2);
        json_decref(doc);

        /* the node goes: its series get no more points */
        assert_int_equal(xp_store_delete(f.store, "nodes", "", "mixed", 0, NULL, NULL, NULL), 0);
        f.now_ms += 10000;
        assert_int_equal(xp_history_feed_step(feed, &err), 0);
        doc = history_json(h, FIXTURE_WALL_START + 20);
        assert_int_equal(n_points(series(doc, "allocation", "resource", "cpu", "node", "mixed")),
                         2);
        json_decref(doc);
        xp_history_feed_free(feed);
        xp_history_free(h);
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(steps_hold_the_last_value_oldest_first),
            cmocka_unit_test(an_hour_and_no_more),
            cmocka_unit_test(usage_is_averaged_per_step_and_checked),
            cmocka_unit_test(series_are_bounded),
            cmocka_unit_test(the_feed_records_what_the_store_holds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
