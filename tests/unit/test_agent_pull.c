/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's pull step: podsync holds (a held container is not started and waits with the
 * holder's reason), the gate's pull policies against a real store (Never, IfNotPresent present,
 * a pull that fails: ErrImagePull, then ImagePullBackOff, then released after the back-off), the
 * Node's images.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pull.h"
#include "image/image_internal.h"
#include "tmpdir.h"
#include "xpool/codec.h"

#define SEC INT64_C(1000000000)

static int setup(void **state)
{
        return tmpdir_setup(state, "agent-pull", "images");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

static struct xp_pod *pod_of(const char *image, const char *policy, json_t **ret_json)
{
        char text[1024];
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        json_t *j;

        snprintf(
            text,
            sizeof(text),
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"uid\":\"u1\"},"
            "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"%s\"%s%s%s}]}}",
            image,
            policy ? ",\"imagePullPolicy\":\"" : "",
            policy ? policy : "",
            policy ? "\"" : "");
        j = json_loads(text, 0, NULL);
        assert_non_null(j);
        if (xp_pod_from_json(j, NULL, 0, &pod, &err) < 0)
                fail_msg("%s", err.msg);
        *ret_json = j;
        return pod;
}

static const json_t *waiting(const json_t *status)
{
        return json_object_get(
            json_object_get(json_array_get(json_object_get(status, "containerStatuses"), 0),
                            "state"),
            "waiting");
}

static void holds(void **state)
{
        const struct xp_podsync_config cfg = {.backoff_initial_ms = 1000};
        struct xp_podsync_memory *m = xp_podsync_memory_new();
        struct xp_podsync_result res = {0};
        json_t *j;
        struct xp_pod *pod = pod_of("example.com/app:1", NULL, &j);

        (void)state;
        assert_int_equal(xp_podsync_hold(m, "c", false, "ErrImagePull", "it failed", 7 * SEC), 0);
        assert_int_equal(xp_podsync(&cfg, m, pod, NULL, 0, 5 * SEC, &res, NULL), 0);
        assert_int_equal(res.n_actions, 0);
        assert_string_equal(json_string_value(json_object_get(waiting(res.status), "reason")),
                            "ErrImagePull");
        assert_string_equal(json_string_value(json_object_get(waiting(res.status), "message")),
                            "it failed");
        assert_string_equal(json_string_value(json_object_get(res.status, "phase")), "Pending");
        assert_int_equal(res.wake_at_ns, 7 * SEC);
        xp_podsync_result_clear(&res);
        /* held without a reason: ContainerCreating */
        assert_int_equal(xp_podsync_hold(m, "c", false, NULL, NULL, 0), 0);
        assert_int_equal(xp_podsync(&cfg, m, pod, NULL, 0, 6 * SEC, &res, NULL), 0);
        assert_int_equal(res.n_actions, 0);
        assert_string_equal(json_string_value(json_object_get(waiting(res.status), "reason")),
                            "ContainerCreating");
        xp_podsync_result_clear(&res);
        xp_podsync_release(m, "c", false);
        assert_int_equal(xp_podsync(&cfg, m, pod, NULL, 0, 6 * SEC, &res, NULL), 0);
        assert_int_equal(res.n_actions, 1);
        assert_int_equal(res.actions[0].kind, XP_PODSYNC_START);
        xp_podsync_result_clear(&res);
        xp_pod_free(pod);
        json_decref(j);
        xp_podsync_memory_free(m);
}

/* An image in the store under name (its config only: the gate looks names up). */
static void put_image(struct xp_image_store *s, const char *name)
{
        static const char config[] =
            "{\"os\":\"linux\",\"architecture\":\"amd64\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}";
        char id[XP_IMAGE_DIGEST_BUFSIZE];
        const char *names[] = {name};
        struct xp_error err = {0};

        assert_int_equal(xp_sha256_digest(config, strlen(config), id), 0);
        assert_int_equal(xp_store_blob_put(s, id, config, strlen(config), &err), 0);
        if (xp_store_record(s,
                            &(struct xp_store_record){.id = id,
                                                      .digest = id,
                                                      .manifest = id,
                                                      .names = names,
                                                      .n_names = 1,
                                                      .size = 42},
                            NULL,
                            &err) < 0)
                fail_msg("%s", err.msg);
}

static const char *hold_reason(struct xp_podsync_memory *m, const struct xp_pod *pod, int64_t now)
{
        static char reason[64];
        const struct xp_podsync_config cfg = {.backoff_initial_ms = 1000};
        struct xp_podsync_result res = {0};
        const char *r;

        assert_int_equal(xp_podsync(&cfg, m, pod, NULL, 0, now, &res, NULL), 0);
        r = res.n_actions > 0 ? "START"
                              : json_string_value(json_object_get(waiting(res.status), "reason"));
        snprintf(reason, sizeof(reason), "%s", r ? r : "?");
        xp_podsync_result_clear(&res);
        return reason;
}

static void gate(void **state)
{
        struct tmpdir *t = *state;
        struct xp_image_store *s = NULL;
        struct xp_agent_pulls *p = NULL;
        struct xp_podsync_memory *m = xp_podsync_memory_new();
        struct xp_agent_pull_pod pp = {.uid = "u1", .namespace = "default", .name = "p"};
        json_t *j, *images;
        struct xp_pod *pod;
        char **uids = NULL;
        size_t n = 0;
        struct pollfd fd;

        assert_int_equal(xp_image_store_open(t->path, NULL, &s, NULL), 0);
        assert_int_equal(
            xp_agent_pulls_new(
                &(struct xp_agent_pulls_config){.store = s, .backoff_initial_ms = 1000}, &p, NULL),
            0);

        /* Never and missing: ErrImageNeverPull until an import brings it, after the back-off */
        pod = pod_of("example.com/app:1", "Never", &j);
        pp.json = j;
        assert_true(xp_agent_pull_needed(&pod->spec.containers.items[0]));
        assert_int_equal(
            xp_agent_pull_gate(p, &pp, &pod->spec.containers.items[0], false, 0, 1 * SEC, m), 0);
        assert_string_equal(hold_reason(m, pod, 1 * SEC), "ErrImageNeverPull");
        put_image(s, "example.com/app:1");
        xp_agent_pull_refresh(p, &pp, 3 * SEC, m);
        assert_string_equal(hold_reason(m, pod, 3 * SEC), "START");
        assert_int_equal(
            xp_agent_pull_gate(p, &pp, &pod->spec.containers.items[0], false, 0, 3 * SEC, m), 1);
        xp_pod_free(pod);
        json_decref(j);

        /* IfNotPresent (a tag other than latest) and present: no pull */
        xp_agent_pull_forget(p, "u1");
        pod = pod_of("example.com/app:1", NULL, &j);
        pp.json = j;
        assert_int_equal(
            xp_agent_pull_gate(p, &pp, &pod->spec.containers.items[0], false, 0, 4 * SEC, m), 1);
        xp_pod_free(pod);
        json_decref(j);

        /* a pull that fails (nothing listens there): ErrImagePull, then ImagePullBackOff */
        xp_agent_pull_forget(p, "u1");
        pod = pod_of("127.0.0.1:1/nope:1", NULL, &j);
        pp.json = j;
        assert_int_equal(
            xp_agent_pull_gate(p, &pp, &pod->spec.containers.items[0], false, 0, 5 * SEC, m), 0);
        assert_string_equal(hold_reason(m, pod, 5 * SEC), "ContainerCreating");
        fd = (struct pollfd){.fd = xp_agent_pulls_fd(p), .events = POLLIN};
        assert_int_equal(poll(&fd, 1, 30000), 1);
        assert_int_equal(xp_agent_pull_take_done(p, &uids, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(uids[0], "u1");
        free(uids[0]);
        free(uids);
        xp_agent_pull_refresh(p, &pp, 6 * SEC, m);
        assert_string_equal(hold_reason(m, pod, 6 * SEC), "ErrImagePull");
        xp_agent_pull_refresh(p, &pp, 6 * SEC, m);
        assert_string_equal(hold_reason(m, pod, 6 * SEC), "ImagePullBackOff");
        /* the back-off (1 s) over: released, the next START pulls again */
        xp_agent_pull_refresh(p, &pp, 8 * SEC, m);
        assert_string_equal(hold_reason(m, pod, 8 * SEC), "START");
        xp_pod_free(pod);
        json_decref(j);

        /* the Node's images: repo@digest names first, then tags, and the size */
        images = xp_agent_node_images(s);
        assert_non_null(images);
        assert_int_equal(json_array_size(images), 1);
        assert_string_equal(json_string_value(json_array_get(
                                json_object_get(json_array_get(images, 0), "names"), 0)),
                            "example.com/app:1");
        assert_int_equal(
            json_integer_value(json_object_get(json_array_get(images, 0), "sizeBytes")), 42);
        json_decref(images);
        xp_agent_pulls_free(p);
        xp_image_store_free(s);
        xp_podsync_memory_free(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(holds),
            cmocka_unit_test_setup_teardown(gate, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
