/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ResourceQuota admission under creates made at once (src/registry/object.c, quota_lock): a
 * ReplicaSet creates its pods from 8 threads and clients write in parallel, and every create
 * must be checked against the usage its predecessors wrote. A quota of 2 GPUs admits exactly 2 of
 * 8 GPU pods created together, and the refused ones carry Kubernetes' message. The running usage
 * is also listed again from the store (a log that no longer holds the pod writes since the last
 * check) while creates and deletes run: neither the checks nor status ever count wrong.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "registry_fixture.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/quantity.h"
#include "xpool/resource.h"
#include "xpool/store.h"

#define CREATORS 8

struct creator {
        struct registry_fixture *f;
        pthread_barrier_t *start;
        int r;
        struct xp_error err;
};

static json_t *gpu_pod(void)
{
        return json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s, s:{s:{s:s}, s:{s:s}}}]}}",
                         "apiVersion",
                         "v1",
                         "kind",
                         "Pod",
                         "metadata",
                         "generateName",
                         "gpu-",
                         "spec",
                         "containers",
                         "name",
                         "main",
                         "image",
                         "busybox",
                         "resources",
                         "requests",
                         "nvidia.com/gpu",
                         "1",
                         "limits",
                         "nvidia.com/gpu",
                         "1");
}

/* One pod created as a controller creates it: the quota checked by the registry's create. */
static void *create_one(void *arg)
{
        struct creator *c = arg;
        struct xp_registry_pod_check check = {
            .registry = c->f->registry, .ns = "default", .err = &c->err};
        const struct xp_registry_admit admit = {.check = xp_registry_pod_admit_check,
                                                .userdata = &check};
        json_t *pod = gpu_pod(), *out = NULL;
        void *object = NULL;

        c->r = xp_kind_pod.from_json(pod, NULL, 0, &object, &c->err);
        json_decref(pod);
        pthread_barrier_wait(c->start);
        if (c->r >= 0)
                c->r = xp_registry_create(
                    c->f->registry, &xp_kind_pod, "default", object, &admit, false, &out, &c->err);
        json_decref(out);
        xp_kind_pod.free(object);
        return NULL;
}

static void parallel_creates_stay_within_the_quota(void **state)
{
        struct registry_fixture f;
        struct creator creators[CREATORS];
        pthread_t threads[CREATORS];
        pthread_barrier_t start;
        int admitted = 0, refused = 0;

        (void)state;
        fixture_open(&f, "quota-race", 0);
        fixture_put_text(&f,
                         "resourcequotas",
                         "default",
                         "gpu",
                         "{\"metadata\": {\"name\": \"gpu\", \"namespace\": \"default\"},"
                         " \"spec\": {\"hard\": {\"requests.nvidia.com/gpu\": \"2\"}}}");
        pthread_barrier_init(&start, NULL, CREATORS);
        for (int i = 0; i < CREATORS; i++) {
                creators[i] = (struct creator){.f = &f, .start = &start};
                assert_int_equal(pthread_create(&threads[i], NULL, create_one, &creators[i]), 0);
        }
        for (int i = 0; i < CREATORS; i++) {
                pthread_join(threads[i], NULL);
                if (creators[i].r == 1) {
                        admitted++;
                        continue;
                }
                assert_int_equal(creators[i].r, 0); /* refused, not failed */
                assert_string_equal(
                    creators[i].err.msg,
                    "exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2");
                refused++;
        }
        assert_int_equal(admitted, 2);
        assert_int_equal(refused, CREATORS - 2);
        pthread_barrier_destroy(&start);
        fixture_close(&f);
}

/* ---- creates beside relists --------------------------------------------------------------- */

#define RELIST_CREATORS 4
#define RELIST_ROUNDS   40 /* creates each creator tries */
#define RELIST_GPUS     3  /* the quota's hard requests.nvidia.com/gpu */
#define RELIST_FULL                                                                                \
        "exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, used: "                        \
        "requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=3"

struct relist_run {
        struct registry_fixture *f;
        atomic_int live;      /* pods created and not yet deleted (counted late, dropped early) */
        atomic_int live_max;  /* the most live pods seen */
        atomic_int admitted;  /* creates admitted and written */
        atomic_int faults;    /* anything not a create, a refusal in Kubernetes' words or a read */
        atomic_int usage_bad; /* usage read below 0 or above the quota */
        atomic_int usage_reads;
        atomic_bool creating; /* the creators still run */
};

/* requests.nvidia.com/gpu of the quota as status reads it: its value, or -1000 on failure. */
static long long ledger_gpus(struct registry_fixture *f)
{
        struct xp_resource_list used[1] = {{0}};
        struct xp_error err = {0};
        json_t *quotas = NULL;
        uint64_t version;
        long long gpus = -1000;

        if (xp_store_list(f->store, "resourcequotas", "default", &quotas, &version, NULL) == 0 &&
            json_array_size(quotas) == 1 &&
            xp_registry_quota_ledger_usage(f->registry, "default", quotas, used, &err) == 0) {
                const struct xp_quantity *q =
                    xp_resource_list_get(&used[0], "requests.nvidia.com/gpu");
                char text[XP_QUANTITY_STRING_MAX];

                gpus = q ? strtoll(xp_quantity_format(q, text), NULL, 10) : 0;
                xp_resource_list_done(&used[0]);
        }
        json_decref(quotas);
        return gpus;
}

/* A creator: creates GPU pods as a controller does and deletes each admitted one again. */
static void *relist_creator(void *arg)
{
        struct relist_run *run = arg;

        for (int i = 0; i < RELIST_ROUNDS; i++) {
                struct xp_error err = {0};
                struct xp_registry_pod_check check = {
                    .registry = run->f->registry, .ns = "default", .err = &err};
                const struct xp_registry_admit admit = {.check = xp_registry_pod_admit_check,
                                                        .userdata = &check};
                json_t *pod = gpu_pod(), *out = NULL;
                void *object = NULL;
                uint64_t version;
                int r = xp_kind_pod.from_json(pod, NULL, 0, &object, &err);

                json_decref(pod);
                if (r >= 0)
                        r = xp_registry_create(run->f->registry,
                                               &xp_kind_pod,
                                               "default",
                                               object,
                                               &admit,
                                               false,
                                               &out,
                                               &err);
                xp_kind_pod.free(object);
                if (r == 1) {
                        int live = atomic_fetch_add(&run->live, 1) + 1, seen = run->live_max;

                        while (live > seen &&
                               !atomic_compare_exchange_weak(&run->live_max, &seen, live))
                                ;
                        atomic_fetch_add(&run->admitted, 1);
                        if (i < RELIST_ROUNDS - 1) {             /* the last one is kept */
                                atomic_fetch_sub(&run->live, 1); /* dropped before its delete */
                                if (xp_store_delete(run->f->store,
                                                    "pods",
                                                    "default",
                                                    xp_json_str_at(out, "metadata.name", ""),
                                                    0,
                                                    NULL,
                                                    &version,
                                                    NULL) < 0)
                                        atomic_fetch_add(&run->faults, 1);
                        }
                } else if (r != 0 || strcmp(err.msg, RELIST_FULL) != 0) {
                        atomic_fetch_add(&run->faults, 1);
                }
                json_decref(out);
        }
        return NULL;
}

/* Unrelated writes, so that the store's short log no longer holds the pod writes between two
 * checks (each check lists the pods again, outside the lock), and status read meanwhile. */
static void *relist_churn(void *arg)
{
        struct relist_run *run = arg;
        json_t *cm = json_pack("{s:{s:s}}", "metadata", "name", "churn");
        uint64_t version;

        if (!cm ||
            xp_store_create(run->f->store, "configmaps", "other", "churn", cm, &version, NULL) < 0)
                atomic_fetch_add(&run->faults, 1);
        for (int i = 0; i < 100000 && atomic_load(&run->creating); i++) {
                long long gpus;

                if (xp_store_update(
                        run->f->store, "configmaps", "other", "churn", 0, cm, &version, NULL) < 0)
                        atomic_fetch_add(&run->faults, 1);
                if (i % 8 != 0)
                        continue;
                gpus = ledger_gpus(run->f);
                atomic_fetch_add(&run->usage_reads, 1);
                if (gpus < 0 || gpus > RELIST_GPUS)
                        atomic_fetch_add(&run->usage_bad, 1);
        }
        json_decref(cm);
        return NULL;
}

static void creates_beside_relists_count_right(void **state)
{
        struct registry_fixture f;
        struct relist_run run = {.f = &f, .creating = true};
        pthread_t creators[RELIST_CREATORS], churn;
        json_t *pods = NULL;
        uint64_t version;

        (void)state;
        fixture_open(&f, "quota-race-relist", 1); /* a log of 1 write (trimmed every 16) */
        fixture_put_text(&f,
                         "resourcequotas",
                         "default",
                         "gpu",
                         "{\"metadata\": {\"name\": \"gpu\", \"namespace\": \"default\"},"
                         " \"spec\": {\"hard\": {\"requests.nvidia.com/gpu\": \"%d\"}}}",
                         RELIST_GPUS);
        assert_int_equal(pthread_create(&churn, NULL, relist_churn, &run), 0);
        for (int i = 0; i < RELIST_CREATORS; i++)
                assert_int_equal(pthread_create(&creators[i], NULL, relist_creator, &run), 0);
        for (int i = 0; i < RELIST_CREATORS; i++)
                pthread_join(creators[i], NULL);
        atomic_store(&run.creating, false);
        pthread_join(churn, NULL);

        assert_int_equal(atomic_load(&run.faults), 0);
        assert_int_equal(atomic_load(&run.usage_bad), 0);
        assert_true(atomic_load(&run.usage_reads) > 0);
        assert_true(atomic_load(&run.live_max) <= RELIST_GPUS);
        assert_true(atomic_load(&run.admitted) >= RELIST_GPUS);
        /* what is left: the kept pods, as many as the quota allows at most, and status says so */
        assert_int_equal(xp_store_list(f.store, "pods", "default", &pods, &version, NULL), 0);
        assert_true(json_array_size(pods) <= RELIST_GPUS);
        assert_int_equal(ledger_gpus(&f), (long long)json_array_size(pods));
        json_decref(pods);
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(parallel_creates_stay_within_the_quota),
            cmocka_unit_test(creates_beside_relists_count_right),
        };

        xp_log_init(); /* XPOOL_DEBUG=quota shows the lists made meanwhile */

        return cmocka_run_group_tests(tests, NULL, NULL);
}
