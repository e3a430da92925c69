/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod garbage collector (src/controller/podgc*.c): which terminated pods go past the
 * threshold (the oldest by creationTimestamp, Jobs' pods too), that running pods and those
 * within the threshold stay, orphans after their node's quarantine and not before, terminating
 * pods bound to no node, and a threshold of 0 turning the terminated-pod collection off.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/podgc.h"
#include "registry_fixture.h"
#include "xpool/podgc.h"

/* ---- the pure decisions --------------------------------------------------------------------- */

static void selects_the_oldest(void **state)
{
        struct podgc_done done[] = {
            {"a/new", "2026-12-05T03:00:05Z"},
            {"a/old", "2026-12-05T03:00:01Z"},
            {"b/tie", "2026-12-05T03:00:02Z"},
            {"a/tie", "2026-12-05T03:00:02Z"},
            {"a/mid", "2026-12-05T03:00:03Z"},
        };

        (void)state;
        assert_int_equal(podgc_select_oldest(done, 5, 3), 2);
        assert_string_equal(done[0].key, "a/old");
        assert_string_equal(done[1].key, "a/tie"); /* the same second: by key */
        assert_string_equal(done[2].key, "b/tie");
        assert_string_equal(done[4].key, "a/new");
        assert_int_equal(podgc_select_oldest(done, 5, 5), 0);
        assert_int_equal(podgc_select_oldest(done, 5, 6), 0);
        assert_int_equal(podgc_select_oldest(done, 5, 1), 4);
        assert_int_equal(podgc_select_oldest(done, 5, 0), 0); /* off */
        assert_int_equal(podgc_select_oldest(done, 5, -1), 0);
        assert_int_equal(podgc_select_oldest(done, 0, 3), 0);
}

static bool only_n1(void *userdata, const char *node)
{
        (void)userdata;
        return strcmp(node, "n1") == 0;
}

static void judges_pods(void **state)
{
        static const struct {
                const char *text;
                bool terminated;
                enum podgc_verdict verdict;
        } cases[] = {
            {"{\"status\":{\"phase\":\"Succeeded\"}}", true, PODGC_KEEP},
            {"{\"status\":{\"phase\":\"Failed\"},\"spec\":{\"nodeName\":\"n1\"}}",
             true,
             PODGC_KEEP},
            {"{\"status\":{\"phase\":\"Running\"},\"spec\":{\"nodeName\":\"n1\"}}",
             false,
             PODGC_KEEP},
            {"{\"status\":{\"phase\":\"Pending\"}}", false, PODGC_KEEP},
            {"{}", false, PODGC_KEEP},
            {"{\"spec\":{\"nodeName\":\"gone\"},\"status\":{\"phase\":\"Running\"}}",
             false,
             PODGC_ORPHAN},
            {"{\"spec\":{\"nodeName\":\"gone\"},\"status\":{\"phase\":\"Succeeded\"}}",
             true,
             PODGC_ORPHAN},
            {"{\"metadata\":{\"deletionTimestamp\":\"2026-12-05T03:00:00Z\"}}",
             false,
             PODGC_UNSCHEDULED_TERMINATING},
            {"{\"metadata\":{\"deletionTimestamp\":\"2026-12-05T03:00:00Z\"},"
             "\"spec\":{\"nodeName\":\"n1\"}}",
             false,
             PODGC_KEEP},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                json_t *pod = json_loads(cases[i].text, 0, NULL);

                assert_non_null(pod);
                assert_int_equal(podgc_terminated(pod), cases[i].terminated);
                assert_int_equal(podgc_judge(pod, only_n1, NULL), cases[i].verdict);
                json_decref(pod);
        }
}

/* ---- the controller over a store ------------------------------------------------------------ */

static void put_pod(struct registry_fixture *f,
                    const char *name,
                    const char *node,
                    const char *phase,
                    int second,
                    const char *extra_meta)
{
        fixture_put_text(f,
                         "pods",
                         "team",
                         name,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                         "\"namespace\":\"team\",\"uid\":\"uid-%s\","
                         "\"creationTimestamp\":\"2026-12-05T03:00:%02dZ\"%s},"
                         "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\","
                         "\"image\":\"busybox\"}]},\"status\":{\"phase\":\"%s\"}}",
                         name,
                         name,
                         second,
                         extra_meta,
                         node,
                         phase);
}

static bool stored(struct registry_fixture *f, const char *name)
{
        json_t *pod = fixture_get(f, "pods", "team", name);

        json_decref(pod);
        return pod != NULL;
}

static void step(struct xp_podgc *c)
{
        struct xp_error err = {0};

        if (xp_podgc_step(c, &err) < 0)
                fail_msg("step: %s", err.msg);
}

static struct xp_podgc *open_gc(struct registry_fixture *f, int64_t threshold)
{
        struct xp_podgc_options options = {.threshold = threshold, .clock = &f->clock};
        struct xp_podgc *c = NULL;
        struct xp_error err = {0};

        if (xp_podgc_new(f->registry, &options, &c, &err) < 0)
                fail_msg("new: %s", err.msg);
        return c;
}

static const char job_owned[] = ",\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":"
                                "\"Job\",\"name\":\"j\",\"uid\":\"j1\",\"controller\":true}]";

static void deletes_oldest_terminated(void **state)
{
        struct registry_fixture f;
        struct xp_podgc *c;

        (void)state;
        fixture_open(&f, "podgc", 0);
        fixture_put_text(&f, "nodes", "", "n1", "{\"metadata\":{\"name\":\"n1\"}}");
        /* names against their age: the time decides, not the name */
        put_pod(&f, "e-first", "n1", "Succeeded", 1, job_owned);
        put_pod(&f, "d-second", "n1", "Failed", 2, "");
        put_pod(&f, "c-third", "n1", "Succeeded", 3, job_owned);
        put_pod(&f, "b-fourth", "n1", "Failed", 4, "");
        put_pod(&f, "a-fifth", "n1", "Succeeded", 5, "");
        put_pod(&f, "old-running", "n1", "Running", 0, "");
        put_pod(&f, "old-pending", "", "Pending", 0, "");
        c = open_gc(&f, 3);
        step(c);
        assert_false(stored(&f, "e-first")); /* a Job's pod is not spared */
        assert_false(stored(&f, "d-second"));
        assert_true(stored(&f, "c-third"));
        assert_true(stored(&f, "b-fourth"));
        assert_true(stored(&f, "a-fifth"));
        assert_true(stored(&f, "old-running"));
        assert_true(stored(&f, "old-pending"));
        /* at the threshold: nothing more; one more terminated: the oldest left goes */
        step(c);
        assert_true(stored(&f, "c-third"));
        put_pod(&f, "old-running", "n1", "Succeeded", 0, "");
        step(c);
        assert_false(stored(&f, "old-running"));
        assert_true(stored(&f, "c-third"));
        xp_podgc_free(c);
        fixture_close(&f);
}

static void threshold_zero_keeps_them(void **state)
{
        struct registry_fixture f;
        struct xp_podgc *c;
        char name[16];

        (void)state;
        fixture_open(&f, "podgc-off", 0);
        fixture_put_text(&f, "nodes", "", "n1", "{\"metadata\":{\"name\":\"n1\"}}");
        for (int i = 0; i < 5; i++) {
                snprintf(name, sizeof(name), "done-%d", i);
                put_pod(&f, name, "n1", "Succeeded", i, "");
        }
        c = open_gc(&f, 0);
        step(c);
        for (int i = 0; i < 5; i++) {
                snprintf(name, sizeof(name), "done-%d", i);
                assert_true(stored(&f, name));
        }
        xp_podgc_free(c);
        fixture_close(&f);
}

static void deletes_orphans_after_quarantine(void **state)
{
        struct registry_fixture f;
        struct xp_podgc *c;

        (void)state;
        fixture_open(&f, "podgc-orphans", 0);
        fixture_put_text(&f, "nodes", "", "n1", "{\"metadata\":{\"name\":\"n1\"}}");
        put_pod(&f, "on-gone", "gone", "Running", 1, "");
        put_pod(&f, "on-n1", "n1", "Running", 1, "");
        put_pod(&f,
                "unbound-deleting",
                "",
                "Pending",
                1,
                ",\"deletionTimestamp\":\"2026-12-05T03:01:00Z\"");
        c = open_gc(&f, 3);
        step(c);
        assert_false(stored(&f, "unbound-deleting"));
        assert_true(stored(&f, "on-gone"));
        f.now_ms = XP_PODGC_QUARANTINE_MS - 1;
        step(c);
        assert_true(stored(&f, "on-gone"));
        f.now_ms = XP_PODGC_QUARANTINE_MS;
        step(c);
        assert_false(stored(&f, "on-gone"));
        assert_true(stored(&f, "on-n1"));
        /* a node that comes within its quarantine saves its pods */
        put_pod(&f, "on-late", "late", "Running", 2, "");
        step(c);
        f.now_ms += XP_PODGC_QUARANTINE_MS / 2;
        fixture_put_text(&f, "nodes", "", "late", "{\"metadata\":{\"name\":\"late\"}}");
        step(c);
        f.now_ms += XP_PODGC_QUARANTINE_MS;
        step(c);
        assert_true(stored(&f, "on-late"));
        xp_podgc_free(c);
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(selects_the_oldest),
            cmocka_unit_test(judges_pods),
            cmocka_unit_test(deletes_oldest_terminated),
            cmocka_unit_test(threshold_zero_keeps_them),
            cmocka_unit_test(deletes_orphans_after_quarantine),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
