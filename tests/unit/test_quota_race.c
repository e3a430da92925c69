/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ResourceQuota admission under creates made at once (src/registry/object.c, quota_lock): a
 * ReplicaSet creates its pods from 8 threads and clients write in parallel, and every create
 * must be checked against the usage its predecessors wrote. A quota of 2 GPUs admits exactly 2 of
 * 8 GPU pods created together, and the refused ones carry Kubernetes' message.
 */
#include <errno.h>
#include <pthread.h>
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
#include "xpool/doc.h"
#include "xpool/kind.h"

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

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(parallel_creates_stay_within_the_quota),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
