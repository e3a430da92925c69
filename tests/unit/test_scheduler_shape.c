/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods of one shape (scheduler_shape.c): pods that differ only in the random name of their
 * kube-api-access-XXXXX token volume share a shape; any other difference in the spec, another
 * volume's name included, makes another shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "controller/scheduler_state.h"

/* A pod as the ServiceAccount admission leaves it: token is its volume's name. */
static json_t *pod_of(const char *token, const char *cpu, const char *data_volume)
{
        char text[1024];
        json_t *pod;

        snprintf(text,
                 sizeof text,
                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
                 "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"x\","
                 "\"resources\":{\"limits\":{\"cpu\":\"%s\"}},\"volumeMounts\":["
                 "{\"name\":\"%s\",\"mountPath\":\"/var/run/secrets/kubernetes.io/"
                 "serviceaccount\",\"readOnly\":true},{\"name\":\"%s\",\"mountPath\":\"/data\"}]}],"
                 "\"volumes\":[{\"name\":\"%s\",\"projected\":{\"sources\":[]}},"
                 "{\"name\":\"%s\",\"emptyDir\":{}}]}}",
                 token,
                 cpu,
                 token,
                 data_volume,
                 token,
                 data_volume);
        pod = json_loads(text, 0, NULL);
        assert_non_null(pod);
        return pod;
}

static char namespace[] = "default";

static void pending_init(struct pending *p, json_t *pod)
{
        *p = (struct pending){.pod = pod, .namespace = namespace, .version = 1};
}

static void pending_done(struct xp_scheduler *s, struct pending *p)
{
        pending_shape_drop(s, p);
        json_decref(p->pod);
}

static void token_volume_name_is_not_the_shape(void **state)
{
        struct xp_scheduler *s = calloc(1, sizeof(*s));
        char message[] = "0/1 nodes are available: 1 Insufficient cpu.";
        struct pending failed, same, more_cpu, other_volume;

        (void)state;
        assert_non_null(s);
        pending_init(&failed, pod_of("kube-api-access-abcde", "3", "data"));
        pending_init(&same, pod_of("kube-api-access-zq9x2", "3", "data"));
        pending_init(&more_cpu, pod_of("kube-api-access-zq9x2", "4", "data"));
        pending_init(&other_volume, pod_of("kube-api-access-zq9x2", "3", "data2"));
        failed.message = message;

        assert_null(shape_failed(s, &same)); /* nothing failed yet */
        shape_fail(s, &failed);
        assert_ptr_equal(shape_failed(s, &same), &failed);
        assert_null(shape_failed(s, &more_cpu));
        assert_null(shape_failed(s, &other_volume));
        /* the pod's own text is left as it was */
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(same.pod, "metadata"), "name")),
            "kube-api-access-zq9x2");

        shapes_forget(s);
        pending_done(s, &failed);
        pending_done(s, &same);
        pending_done(s, &more_cpu);
        pending_done(s, &other_volume);
        shapes_done(s);
        free(s);
}

/* A pod whose container has an env variable and an init container mounting its token: only the
 * names of volumes and volume mounts are masked, not any member called "name". */
static json_t *pod_with_env(const char *token, const char *env_name)
{
        char text[1024];
        json_t *pod;

        snprintf(text,
                 sizeof text,
                 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},"
                 "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"x\","
                 "\"env\":[{\"name\":\"%s\",\"value\":\"1\"}]}],"
                 "\"initContainers\":[{\"name\":\"init\",\"image\":\"x\",\"volumeMounts\":["
                 "{\"name\":\"%s\",\"mountPath\":\"/t\"}]}],"
                 "\"volumes\":[{\"name\":\"%s\",\"projected\":{\"sources\":[]}}]}}",
                 env_name,
                 token,
                 token);
        pod = json_loads(text, 0, NULL);
        assert_non_null(pod);
        return pod;
}

static void only_volume_names_are_masked(void **state)
{
        struct xp_scheduler *s = calloc(1, sizeof(*s));
        char message[] = "0/1 nodes are available: 1 Insufficient cpu.";
        struct pending failed, same, other_env;

        (void)state;
        assert_non_null(s);
        pending_init(&failed, pod_with_env("kube-api-access-abcde", "kube-api-access-one"));
        pending_init(&same, pod_with_env("kube-api-access-zq9x2", "kube-api-access-one"));
        pending_init(&other_env, pod_with_env("kube-api-access-zq9x2", "kube-api-access-two"));
        failed.message = message;

        shape_fail(s, &failed);
        assert_ptr_equal(shape_failed(s, &same), &failed);
        /* an env variable of that prefix is the pod's own: another shape */
        assert_null(shape_failed(s, &other_env));
        /* the pods' own volumes are left as they were */
        assert_string_equal(
            json_string_value(json_object_get(
                json_array_get(json_object_get(json_object_get(same.pod, "spec"), "volumes"), 0),
                "name")),
            "kube-api-access-zq9x2");

        shapes_forget(s);
        pending_done(s, &failed);
        pending_done(s, &same);
        pending_done(s, &other_env);
        shapes_done(s);
        free(s);
}

/* Pods of one text share one shape object; a pod whose spec changes leaves it for another, and
 * the last pod to let go of a shape frees it (ASan's leak check says whether it did). */
static void pods_of_one_shape_share_it(void **state)
{
        struct xp_scheduler *s = calloc(1, sizeof(*s));
        struct pending one, two, changed;
        struct shape *shared, *other;

        (void)state;
        assert_non_null(s);
        pending_init(&one, pod_of("kube-api-access-abcde", "3", "data"));
        pending_init(&two, pod_of("kube-api-access-zq9x2", "3", "data"));
        pending_init(&changed, pod_of("kube-api-access-k2m4p", "3", "data"));

        shared = pending_shape(s, &one);
        assert_non_null(shared);
        assert_ptr_equal(pending_shape(s, &two), shared);
        assert_ptr_equal(pending_shape(s, &changed), shared);
        assert_int_equal(shared->holders, 3);
        assert_int_equal(s->shapes.n, 1);

        /* a new version with more CPU: another shape, the old one kept for the other two */
        json_decref(changed.pod);
        changed.pod = pod_of("kube-api-access-k2m4p", "4", "data");
        changed.version = 2;
        other = pending_shape(s, &changed);
        assert_non_null(other);
        assert_ptr_not_equal(other, shared);
        assert_int_equal(shared->holders, 2);
        assert_int_equal(other->holders, 1);
        assert_int_equal(s->shapes.n, 2);

        /* the last holder of each frees it */
        pending_done(s, &changed);
        assert_int_equal(s->shapes.n, 1);
        pending_done(s, &one);
        assert_int_equal(shared->holders, 1);
        pending_done(s, &two);
        assert_int_equal(s->shapes.n, 0);
        assert_null(two.shape);
        shapes_done(s);
        free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(token_volume_name_is_not_the_shape),
            cmocka_unit_test(only_volume_names_are_masked),
            cmocka_unit_test(pods_of_one_shape_share_it),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
