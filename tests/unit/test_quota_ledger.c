/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running usage of ResourceQuota admission (src/registry/quota_ledger.c): what a pod holds is
 * released when it is deleted or reaches a terminal phase, a quota whose spec changes is counted
 * again, and a log that no longer holds the pod writes since the last check is listed again; in
 * every case the next check sees what the store holds, in Kubernetes' words.
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
#include <jansson.h>

#include "registry_fixture.h"
#include "xpool/kind.h"
#include "xpool/quantity.h"
#include "xpool/registry.h"
#include "xpool/resource.h"

static const char gpu_pod_fmt[] =
    "{\"metadata\": {\"name\": \"%s\", \"namespace\": \"default\"},"
    " \"spec\": {\"containers\": [{\"name\": \"main\", \"image\": \"busybox\", \"resources\":"
    " {\"requests\": {\"nvidia.com/gpu\": \"1\"}, \"limits\": {\"nvidia.com/gpu\": \"1\"}}}]},"
    " \"status\": {\"phase\": \"%s\"}}";

static json_t *gpu_pod(const char *name, const char *phase)
{
        char text[1024];

        snprintf(text, sizeof text, gpu_pod_fmt, name, phase);
        return json_loads(text, 0, NULL);
}

/* The quota check of pod name (Pending): 0 or -EDQUOT, message in err. */
static int admit(struct registry_fixture *f, const char *name, struct xp_error *err)
{
        json_t *pod = gpu_pod(name, "Pending");
        int r;

        assert_non_null(pod);
        *err = (struct xp_error){0};
        r = xp_registry_quota_admit(f->registry, "default", pod, err);
        json_decref(pod);
        return r;
}

/* The check and the write of a create, as the registry's create makes them. */
static void create(struct registry_fixture *f, const char *name)
{
        struct xp_error err;

        assert_int_equal(admit(f, name, &err), 0);
        fixture_put(f, "pods", "default", name, gpu_pod(name, "Pending"));
}

static void refused(struct registry_fixture *f, const char *name, const char *message)
{
        struct xp_error err;

        assert_int_equal(admit(f, name, &err), -EDQUOT);
        assert_string_equal(err.msg, message);
}

static void gpu_quota(struct registry_fixture *f, int gpus)
{
        fixture_put_text(f,
                         "resourcequotas",
                         "default",
                         "gpu",
                         "{\"metadata\": {\"name\": \"gpu\", \"namespace\": \"default\","
                         " \"uid\": \"quota-uid\"},"
                         " \"spec\": {\"hard\": {\"requests.nvidia.com/gpu\": \"%d\"}}}",
                         gpus);
}

#define GPUS_FULL(n)                                                                               \
        "exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, used: "                        \
        "requests.nvidia.com/gpu=" #n ", limited: requests.nvidia.com/gpu=" #n

static void delete_and_terminal_phase_release(void **state)
{
        struct registry_fixture f;
        uint64_t version;

        (void)state;
        fixture_open(&f, "quota-ledger-release", 0);
        gpu_quota(&f, 2);
        create(&f, "a");
        create(&f, "b");
        refused(&f, "c", GPUS_FULL(2));

        assert_int_equal(xp_store_delete(f.store, "pods", "default", "a", 0, NULL, &version, NULL),
                         0);
        create(&f, "c");
        refused(&f, "d", GPUS_FULL(2));

        fixture_put(&f, "pods", "default", "b", gpu_pod("b", "Succeeded"));
        create(&f, "d");
        refused(&f, "e", GPUS_FULL(2));

        /* a terminal pod deleted gives back nothing more: it held nothing */
        assert_int_equal(xp_store_delete(f.store, "pods", "default", "b", 0, NULL, &version, NULL),
                         0);
        refused(&f, "e", GPUS_FULL(2));
        fixture_close(&f);
}

static void changed_quota_counts_again(void **state)
{
        struct registry_fixture f;

        (void)state;
        fixture_open(&f, "quota-ledger-change", 0);
        gpu_quota(&f, 1);
        create(&f, "a");
        refused(&f, "b", GPUS_FULL(1));
        gpu_quota(&f, 3);
        create(&f, "b");
        create(&f, "c");
        refused(&f, "d", GPUS_FULL(3));
        fixture_close(&f);
}

/* A namespace's last quota goes (the next check frees its ledger); a quota that comes back
 * counts every pod again, those created while there was none included. */
static void deleted_quota_forgets_then_counts_again(void **state)
{
        struct registry_fixture f;
        uint64_t version;

        (void)state;
        fixture_open(&f, "quota-ledger-forget", 0);
        gpu_quota(&f, 2);
        create(&f, "a");
        create(&f, "b");
        refused(&f, "c", GPUS_FULL(2));
        assert_int_equal(
            xp_store_delete(f.store, "resourcequotas", "default", "gpu", 0, NULL, &version, NULL),
            0);
        create(&f, "c");
        create(&f, "d");
        gpu_quota(&f, 4);
        refused(&f, "e", GPUS_FULL(4));
        fixture_close(&f);
}

/* Writes made while nobody checked, more than the store's log keeps: listed again. */
static void expired_log_lists_again(void **state)
{
        struct registry_fixture f;
        char name[16];

        (void)state;
        fixture_open(&f, "quota-ledger-expired", 2);
        gpu_quota(&f, 6);
        create(&f, "p0");
        for (int i = 1; i < 6; i++) {
                snprintf(name, sizeof name, "p%d", i);
                fixture_put(&f, "pods", "default", name, gpu_pod(name, "Pending"));
        }
        fixture_put_text(&f, "configmaps", "default", "x", "{\"metadata\": {\"name\": \"x\"}}");
        fixture_put_text(&f, "configmaps", "default", "y", "{\"metadata\": {\"name\": \"y\"}}");
        fixture_put_text(&f, "configmaps", "default", "z", "{\"metadata\": {\"name\": \"z\"}}");
        refused(&f, "p6", GPUS_FULL(6));
        fixture_close(&f);
}

/* A create through the registry, its quota checked as a controller's is: 1 created, else r. */
static int registry_create(struct registry_fixture *f, const char *name)
{
        struct xp_error err = {0};
        struct xp_registry_pod_check check = {
            .registry = f->registry, .ns = "default", .err = &err};
        const struct xp_registry_admit admit = {.check = xp_registry_pod_admit_check,
                                                .userdata = &check};
        json_t *pod = gpu_pod(name, "Pending"), *out = NULL;
        void *object = NULL;
        int r = xp_kind_pod.from_json(pod, NULL, 0, &object, &err);

        json_decref(pod);
        if (r >= 0)
                r = xp_registry_create(
                    f->registry, &xp_kind_pod, "default", object, &admit, false, &out, &err);
        json_decref(out);
        xp_kind_pod.free(object);
        return r;
}

/* The charge a create's check makes is given back when its write fails. */
static void failed_write_gives_back(void **state)
{
        struct registry_fixture f;

        (void)state;
        fixture_open(&f, "quota-ledger-failed", 0);
        gpu_quota(&f, 2);
        assert_int_equal(registry_create(&f, "a"), 1);
        for (int i = 0; i < 3; i++) /* pods "a" exists: each write fails after its check */
                assert_true(registry_create(&f, "a") < 0);
        assert_int_equal(registry_create(&f, "b"), 1);
        assert_int_equal(registry_create(&f, "c"), 0); /* refused: the quota is full */
        fixture_close(&f);
}

/* requests.nvidia.com/gpu of the quota named gpu as status would show it (the ledger's usage). */
static void status_gpus(struct registry_fixture *f, const char *want)
{
        struct xp_resource_list used[1] = {{0}};
        struct xp_error err = {0};
        json_t *quotas = NULL;
        uint64_t version;
        const struct xp_quantity *q;
        char text[XP_QUANTITY_STRING_MAX];

        assert_int_equal(
            xp_store_list(f->store, "resourcequotas", "default", &quotas, &version, NULL), 0);
        assert_int_equal(json_array_size(quotas), 1);
        assert_int_equal(xp_registry_quota_ledger_usage(f->registry, "default", quotas, used, &err),
                         0);
        q = xp_resource_list_get(&used[0], "requests.nvidia.com/gpu");
        assert_string_equal(q ? xp_quantity_format(q, text) : "0", want);
        xp_resource_list_done(&used[0]);
        json_decref(quotas);
}

/* What status reads is what the next check counts: after creates, a delete, a terminal phase, a
 * changed quota and a log that no longer holds the writes (listed again, outside the lock). */
static void status_reads_the_ledger(void **state)
{
        struct registry_fixture f;
        uint64_t version;
        char name[16];

        (void)state;
        fixture_open(&f, "quota-ledger-status", 2);
        gpu_quota(&f, 3);
        status_gpus(&f, "0");
        create(&f, "a");
        create(&f, "b");
        status_gpus(&f, "2");
        assert_int_equal(xp_store_delete(f.store, "pods", "default", "a", 0, NULL, &version, NULL),
                         0);
        status_gpus(&f, "1");
        fixture_put(&f, "pods", "default", "b", gpu_pod("b", "Failed"));
        status_gpus(&f, "0");
        for (int i = 0; i < 5; i++) { /* more writes than the log keeps */
                snprintf(name, sizeof name, "p%d", i);
                fixture_put(&f, "pods", "default", name, gpu_pod(name, "Pending"));
        }
        status_gpus(&f, "5");
        refused(&f,
                "p5",
                "exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, used: "
                "requests.nvidia.com/gpu=5, limited: requests.nvidia.com/gpu=3");
        gpu_quota(&f, 8);
        status_gpus(&f, "5");
        create(&f, "p5");
        status_gpus(&f, "6");
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(delete_and_terminal_phase_release),
            cmocka_unit_test(changed_quota_counts_again),
            cmocka_unit_test(deleted_quota_forgets_then_counts_again),
            cmocka_unit_test(expired_log_lists_again),
            cmocka_unit_test(failed_write_gives_back),
            cmocka_unit_test(status_reads_the_ledger),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
