/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A hung CNDev cannot stall a scrape (docs/monitoring.md): the agent's metrics sample a Cambricon
 * MLU through the fake libcndev.so, which then sleeps in every call. Scrapes keep answering from
 * the last rendering while the sample's age grows past a second, so none of them waited for the
 * driver; each answers within 5 s while a call of the driver lasts 10 s (as 30-metrics.sh holds
 * NVML's scrapes to: a bound on their time in milliseconds was a timing figure that a loaded CI
 * machine under ASan can miss; the figures are printed).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/agent_internal.h"
#include "agent/metrics.h"
#include "xpool/device.h"

#define SCRAPES 21

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

        nanosleep(&ts, NULL);
}

/* The exposition's xpool_device_sample_age_seconds, or -1. */
static double scrape(struct xp_agent_metrics *m, bool *has_mlu)
{
        char *text = NULL, *line;
        size_t len = 0;
        double age = -1;

        assert_int_equal(xp_agent_metrics_scrape(m, false, XP_EXPO_TEXT, &text, &len), 0);
        line = strstr(text, "\nxpool_device_sample_age_seconds");
        if (line && (line = strchr(line + 1, ' ')))
                age = strtod(line, NULL);
        *has_mlu = strstr(text, "\nmlu_utilization{") != NULL;
        free(text);
        return age;
}

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static void hung_cndev(void **state)
{
        static const char *const backends[] = {"pci", NULL};
        char root[512], config_path[512], dir[] = "/tmp/xpool-cndev-XXXXXX", hang[600];
        struct xp_agent_pods pods = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1};
        struct xp_discovery_config discovery = {
            .root = root, .backends = backends, .cndev_library = XPOOL_FAKE_CNDEV};
        struct xp_node_inventory *inv = NULL;
        struct xp_agent_metrics *m = NULL;
        struct xp_error err = {0};
        double times[SCRAPES], age = -1;
        bool has_mlu = false;
        FILE *f;

        (void)state;
        snprintf(root, sizeof(root), "%s/sysfs/mixed-box", XPOOL_TEST_DATA);
        snprintf(config_path, sizeof(config_path), "%s/cndev/mixed-box.json", XPOOL_TEST_DATA);
        assert_non_null(mkdtemp(dir));
        snprintf(hang, sizeof(hang), "%s/hang", dir);
        assert_int_equal(setenv("FAKE_CNDEV_CONFIG", config_path, 1), 0);
        assert_int_equal(setenv("FAKE_CNDEV_SLEEP_FILE", hang, 1), 0);
        pods.pods = json_object();
        assert_int_equal(xp_device_discover(&discovery, &inv, &err), 0);
        struct xp_agent_metrics_config config = {.discovery = &discovery,
                                                 .inventory = inv,
                                                 .pods = &pods,
                                                 .node_name = "n1",
                                                 .hostname = "host-1",
                                                 .interval_ms = 100};
        assert_int_equal(xp_agent_metrics_new(&config, &m, &err), 0);
        /* the first samples, with the driver answering (at most 10 s) */
        for (int i = 0; i < 200 && !has_mlu; i++, pause_ms(50))
                scrape(m, &has_mlu);
        assert_true(has_mlu);
        /* every CNDev call now sleeps 10 s: a sample takes far longer */
        f = fopen(hang, "we");
        assert_non_null(f);
        fputs("10000\n", f);
        assert_int_equal(fclose(f), 0);
        for (int i = 0; i < 200 && age < 1.0; i++, pause_ms(50))
                age = scrape(m, &has_mlu);
        /* answered while the sampler has been inside the driver for over a second */
        assert_true(age >= 1.0);
        assert_true(has_mlu); /* with the last sample's figures */
        for (int i = 0; i < SCRAPES; i++) {
                double start = now_s();

                scrape(m, &has_mlu);
                times[i] = now_s() - start;
        }
        qsort(times, SCRAPES, sizeof(*times), compare_double);
        printf("scrapes while CNDev hangs: median %.6f s, slowest %.6f s\n",
               times[SCRAPES / 2],
               times[SCRAPES - 1]);
        /* a scrape that waited for the driver would wait for the rest of a 10 s call, begun at
         * most a little over a second before these */
        assert_true(times[SCRAPES - 1] < 5.0);
        /* the driver recovers: the sampler's thread finishes its calls and joins */
        assert_int_equal(unlink(hang), 0);
        xp_agent_metrics_free(m);
        xp_node_inventory_free(inv);
        json_decref(pods.pods);
        unsetenv("FAKE_CNDEV_SLEEP_FILE");
        unsetenv("FAKE_CNDEV_CONFIG");
        assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(hung_cndev),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
