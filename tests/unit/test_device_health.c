/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health watch (xp_device_health_watch_new/poll) through the fake NVML's real dlopen() path,
 * its configuration rewritten while NVML stays loaded, as tests/integration/22-device-plugin.sh
 * does with a running device plugin: a critical Xid makes its GPU Unhealthy at the next poll, an
 * application's Xid does not, and the GPU is Healthy again only once the driver reports no
 * recovery action pending (never with a driver that cannot report it).
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/device.h"
#include "xpool/strutil.h"

static const char *const nvml_only[] = {"nvml", NULL};

struct fixture {
        char dir[64];
        char config[128];
        struct xp_node_inventory *inv;
        struct xp_device_health_watch *watch;
};

/* Rewrites the configuration by rename, as a live injection must: GPU gpu gets xid (0: none)
 * appended to its Xid log and recovery as its recovery action (-1: none reported). */
static void inject(struct fixture *f, size_t gpu, int xid, int recovery)
{
        json_t *config = json_load_file(f->config, 0, NULL), *g;
        char tmp[160];

        assert_non_null(config);
        g = json_array_get(json_object_get(config, "gpus"), gpu);
        if (xid)
                json_array_append_new(json_object_get(g, "xids"), json_integer(xid));
        if (recovery >= 0)
                json_object_set_new(g, "recovery_action", json_integer(recovery));
        else
                json_object_del(g, "recovery_action");
        snprintf(tmp, sizeof(tmp), "%s.tmp", f->config);
        assert_int_equal(json_dump_file(config, tmp, 0), 0);
        assert_int_equal(rename(tmp, f->config), 0);
        json_decref(config);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct xp_discovery_config dc = {
            .root = XPOOL_TEST_DATA "/nvml/", /* no sys/ there */
            .nvml_library = XPOOL_FAKE_NVML,
            .backends = nvml_only,
        };
        struct xp_error err = {0};
        json_t *config;

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/xpool-health-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->config, sizeof(f->config), "%s/nvml.json", f->dir);
        config = json_load_file(XPOOL_TEST_DATA "/nvml/h100-8x-two-islands.json", 0, NULL);
        assert_non_null(config);
        assert_int_equal(json_dump_file(config, f->config, 0), 0);
        json_decref(config);
        assert_int_equal(setenv("FAKE_NVML_CONFIG", f->config, 1), 0);
        if (xp_device_discover(&dc, &f->inv, &err) < 0)
                fail_msg("discovery: %s", err.msg);
        assert_int_equal(f->inv->devices.n, 8);
        assert_int_equal(xp_device_health_watch_new(&dc, f->inv, 1000, &f->watch, &err), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char path[160];

        xp_device_health_watch_free(f->watch);
        xp_node_inventory_free(f->inv);
        unlink(f->config);
        snprintf(path, sizeof(path), "%s.tmp", f->config);
        unlink(path);
        rmdir(f->dir);
        free(f);
        return 0;
}

static const struct xp_device *gpu(const struct fixture *f, size_t i)
{
        return &f->inv->devices.items[i];
}

static void xid_then_recovery(void **state)
{
        struct fixture *f = *state;

        assert_int_equal(xp_device_health_poll(f->watch, f->inv, 0), 0);
        inject(f, 2, 79, 1); /* fallen off the bus; the driver asks for a GPU reset */
        assert_int_equal(xp_device_health_poll(f->watch, f->inv, 100), 1);
        assert_int_equal(gpu(f, 2)->health, XP_DEVICE_UNHEALTHY);
        assert_string_equal(gpu(f, 2)->health_reason, "Xid 79: GPU has fallen off the bus");
        for (size_t i = 0; i < 8; i++)
                if (i != 2)
                        assert_int_equal(gpu(f, i)->health, XP_DEVICE_HEALTHY);
        /* rechecked after the interval: the reset is still pending */
        assert_int_equal(xp_device_health_poll(f->watch, f->inv, 1200), 0);
        assert_int_equal(gpu(f, 2)->health, XP_DEVICE_UNHEALTHY);
        inject(f, 2, 0, 0); /* the reset happened: no recovery action */
        /* not before the next recheck */
        assert_int_equal(xp_device_health_poll(f->watch, f->inv, 1300), 0);
        assert_int_equal(xp_device_health_poll(f->watch, f->inv, 2300), 1);
        assert_int_equal(gpu(f, 2)->health, XP_DEVICE_HEALTHY);
        assert_null(gpu(f, 2)->health_reason);
        /* and a second fault counts again */
        inject(f, 2, 48, 1);
        assert_int_equal(xp_device_health_poll(f->watch, f->inv, 2400), 1);
        assert_string_equal(gpu(f, 2)->health_reason, "Xid 48: double-bit ECC error");
}

static void application_xid_changes_nothing(void **state)
{
        struct fixture *f = *state;

        inject(f, 5, 13, 0); /* graphics engine exception: the application's fault */
        inject(f, 6, 31, 0); /* a page fault */
        assert_int_equal(xp_device_health_poll(f->watch, f->inv, 100), 0);
        assert_int_equal(gpu(f, 5)->health, XP_DEVICE_HEALTHY);
        assert_int_equal(gpu(f, 6)->health, XP_DEVICE_HEALTHY);
}

static void no_recovery_field_stays_unhealthy(void **state)
{
        struct fixture *f = *state;

        inject(f, 0, 79, -1); /* a driver without the recovery action field */
        assert_int_equal(xp_device_health_poll(f->watch, f->inv, 100), 1);
        for (int64_t t = 1200; t < 10000; t += 1100)
                assert_int_equal(xp_device_health_poll(f->watch, f->inv, t), 0);
        assert_int_equal(gpu(f, 0)->health, XP_DEVICE_UNHEALTHY);
}

static void no_nvml_watches_nothing(void **state)
{
        struct xp_node_inventory inv = {0};
        struct xp_device_health_watch *w = NULL;

        (void)state;
        assert_int_equal(xp_device_health_watch_new(NULL, &inv, 0, &w, NULL), 0);
        assert_int_equal(xp_device_health_poll(w, &inv, 0), 0);
        xp_device_health_watch_free(w);
        xp_device_health_watch_free(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(xid_then_recovery, setup, teardown),
            cmocka_unit_test_setup_teardown(application_xid_changes_nothing, setup, teardown),
            cmocka_unit_test_setup_teardown(no_recovery_field_stays_unhealthy, setup, teardown),
            cmocka_unit_test(no_nvml_watches_nothing),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
