/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exposition writer and checker (xpool/expo.h), and the agent's expositions (agent/metrics)
 * rendered from the fake NVML and a captured sysfs tree against golden files
 * (tests/data/expected/metrics-*.prom; XPOOL_UPDATE_EXPECTED=1 rewrites them). Every golden text
 * passes our checker.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/metrics_internal.h"
#include "xpool/devsample.h"
#include "xpool/expo.h"
#include "xpool/histogram.h"

static char *render_small(enum xp_expo_format format)
{
        static const double bounds[] = {0.1, 1};
        struct xp_histogram h;
        struct xp_histogram_snapshot snap;
        struct xp_expo w;
        struct xp_expo_label labels[] = {{"path", "a\\b \"q\"\nz"}, {"empty", NULL}};
        char *text = NULL;
        size_t len;

        xp_histogram_init(&h, bounds, 2);
        xp_histogram_observe(&h, 0.05);
        xp_histogram_observe(&h, 0.5);
        xp_histogram_observe(&h, 7);
        xp_histogram_read(&h, &snap);
        xp_histogram_done(&h);
        assert_int_equal(xp_expo_init(&w, format), 0);
        xp_expo_family(
            &w, "x_requests_total", XP_EXPO_COUNTER, "Requests\\n with a \\ and\na newline.");
        xp_expo_sample(&w, "", labels, 2, 3);
        xp_expo_family(&w, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", XP_EXPO_COUNTER, "Replays.");
        xp_expo_sample(&w, "", NULL, 0, 0);
        xp_expo_family(&w, "x_ratio", XP_EXPO_GAUGE, "A gauge.");
        xp_expo_sample(&w, "", NULL, 0, 0.1);
        xp_expo_family(&w, "x_seconds", XP_EXPO_HISTOGRAM, "A histogram.");
        xp_expo_histogram(&w, NULL, 0, &snap);
        assert_int_equal(xp_expo_finish(&w, &text, &len), 0);
        assert_int_equal(strlen(text), len);
        return text;
}

static void writer_text(void **state)
{
        char *text = render_small(XP_EXPO_TEXT);
        struct xp_error err = {0};

        (void)state;
        assert_string_equal(text,
                            "# HELP x_requests_total Requests\\\\n with a \\\\ and\\na newline.\n"
                            "# TYPE x_requests_total counter\n"
                            "x_requests_total{path=\"a\\\\b \\\"q\\\"\\nz\",empty=\"\"} 3\n"
                            "# HELP DCGM_FI_DEV_PCIE_REPLAY_COUNTER Replays.\n"
                            "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"
                            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER 0\n"
                            "# HELP x_ratio A gauge.\n"
                            "# TYPE x_ratio gauge\n"
                            "x_ratio 0.1\n"
                            "# HELP x_seconds A histogram.\n"
                            "# TYPE x_seconds histogram\n"
                            "x_seconds_bucket{le=\"0.1\"} 1\n"
                            "x_seconds_bucket{le=\"1\"} 2\n"
                            "x_seconds_bucket{le=\"+Inf\"} 3\n"
                            "x_seconds_sum 7.55\n"
                            "x_seconds_count 3\n");
        assert_int_equal(xp_expo_parse(text, strlen(text), XP_EXPO_TEXT, NULL, NULL, &err), 0);
        free(text);
}

static void writer_openmetrics(void **state)
{
        char *text = render_small(XP_EXPO_OPENMETRICS);
        struct xp_error err = {0};

        (void)state;
        /* a counter family is named without _total; DCGM's keep their names as unknown */
        assert_non_null(strstr(text, "# TYPE x_requests counter\nx_requests_total{"));
        assert_non_null(strstr(text, "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER unknown\n"));
        assert_non_null(strstr(text, "x_seconds_count 3\n# EOF\n"));
        assert_int_equal(xp_expo_parse(text, strlen(text), XP_EXPO_OPENMETRICS, NULL, NULL, &err),
                         0);
        /* the text format's checker refuses OpenMetrics' "unknown" type */
        assert_int_equal(xp_expo_parse(text, strlen(text), XP_EXPO_TEXT, NULL, NULL, &err),
                         -EINVAL);
        free(text);
}

static void negotiate(void **state)
{
        (void)state;
        assert_int_equal(xp_expo_negotiate(NULL), XP_EXPO_TEXT);
        assert_int_equal(xp_expo_negotiate("text/plain;version=0.0.4"), XP_EXPO_TEXT);
        assert_int_equal(
            xp_expo_negotiate("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            XP_EXPO_OPENMETRICS);
        assert_string_equal(xp_expo_content_type(XP_EXPO_TEXT),
                            "text/plain; version=0.0.4; charset=utf-8");
}

/* Each bad exposition is refused at the line that breaks the rule. */
static void checker_refuses(void **state)
{
        static const struct {
                const char *text, *want;
        } cases[] = {
            {"a 1\na 2\n", "line 2: series a given twice"},
            {"a{x=\"1\"} 1\nb 1\na{x=\"2\"} 1\n",
             "line 3: metric family a continues after another"},
            {"a 1\n# TYPE a gauge\n", "line 2: TYPE of a after its samples"},
            {"# TYPE a gauge\n# TYPE a gauge\n", "line 2: a second TYPE line"},
            {"# HELP a x\n# HELP a y\n", "line 2: a second HELP line"},
            {"a{x=\"\\t\"} 1\n", "line 1: label value with the unknown escape"},
            {"a{x=\"1\",x=\"2\"} 1\n", "line 1: label x given twice"},
            {"a{1x=\"1\"} 1\n", "line 1: a label name must match"},
            {"a{x=\"1} 1\n", "line 1: label value without its closing quote"},
            {"1a 1\n", "line 1: a metric name must match"},
            {"a one\n", "line 1: a: the value \"one\" is not a number"},
            {"a  1\n", "line 1: a: the value \"\" is not a number"},
            {"# TYPE a counter\na -1\n", "line 2: counter a has the value -1"},
            {"# TYPE a teapot\n", "line 1: unknown metric type"},
            {"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n",
             "the buckets of histogram h end without le=\"+Inf\""},
            {"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"0.5\"} 2\n",
             "line 3: bucket le=\"0.5\" of h not above"},
            {"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n",
             "line 3: bucket le=\"+Inf\" of h counts less"},
            {"# TYPE h histogram\nh_bucket 1\n", "line 2: bucket of h without a number in le"},
            {"a 1", "does not end with a newline"},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct xp_error err = {0};
                int r = xp_expo_parse(
                    cases[i].text, strlen(cases[i].text), XP_EXPO_TEXT, NULL, NULL, &err);

                if (r != -EINVAL || !strstr(err.msg, cases[i].want))
                        fail_msg("case %zu (%s): got %d '%s', expected '%s'",
                                 i,
                                 cases[i].text,
                                 r,
                                 err.msg,
                                 cases[i].want);
        }
}

static void checker_openmetrics_rules(void **state)
{
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_expo_parse("a 1\n", 4, XP_EXPO_OPENMETRICS, NULL, NULL, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "does not end with # EOF"));
        assert_int_equal(xp_expo_parse("a 1\n\n# EOF\n", 11, XP_EXPO_OPENMETRICS, NULL, NULL, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "line 2: an empty line"));
        assert_int_equal(xp_expo_parse("# EOF\na 1\n", 10, XP_EXPO_OPENMETRICS, NULL, NULL, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "line 2: a line after # EOF"));
        assert_int_equal(xp_expo_parse("# free comment\na 1\n", 19, XP_EXPO_TEXT, NULL, NULL, &err),
                         0);
}

static int count_sample(const struct xp_expo_sample *s, void *userdata)
{
        double *sum = userdata;

        if (strcmp(s->name, "a") == 0 && xp_expo_sample_label(s, "x"))
                *sum += s->value;
        return 0;
}

static void parser_hands_samples(void **state)
{
        const char *text =
            "# TYPE a gauge\na{x=\"q\\\"\"} 1.5\na{x=\"b\"} 2 1700000000000\nb +Inf\n";
        struct xp_error err = {0};
        double sum = 0;

        (void)state;
        assert_int_equal(xp_expo_parse(text, strlen(text), XP_EXPO_TEXT, count_sample, &sum, &err),
                         0);
        assert_true(sum == 3.5);
}

/* ---- the agent's expositions against golden files ------------------------------------------- */

static bool updating(void)
{
        const char *v = getenv("XPOOL_UPDATE_EXPECTED");

        return v && strcmp(v, "1") == 0;
}

static void compare_golden(const char *name, const char *text)
{
        char path[512];
        struct xp_error err = {0};
        FILE *f;

        if (xp_expo_parse(text, strlen(text), XP_EXPO_TEXT, NULL, NULL, &err) < 0)
                fail_msg("%s: %s\n%s", name, err.msg, text);
        snprintf(path, sizeof(path), "%s/expected/metrics-%s.prom", XPOOL_TEST_DATA, name);
        if (updating()) {
                f = fopen(path, "we");
                assert_non_null(f);
                fputs(text, f);
                assert_int_equal(fclose(f), 0);
                return;
        }
        f = fopen(path, "re");
        assert_non_null(f);
        char want[65536];
        size_t n = fread(want, 1, sizeof(want) - 1, f);

        fclose(f);
        want[n] = '\0';
        if (strcmp(want, text) != 0)
                fail_msg("%s differs:\nexpected\n%s\ngot\n%s", path, want, text);
}

static char *render_node(const struct xp_discovery_config *config, struct mview *view)
{
        struct xp_node_inventory *inv = NULL;
        struct xp_device_sampler *sampler = NULL;
        struct xp_device_samples samples = {0};
        struct xp_error err = {0};
        struct xp_expo w;
        char *text = NULL;
        size_t len;

        if (xp_device_discover(config, &inv, &err) < 0)
                fail_msg("discovery: %s", err.msg);
        assert_int_equal(xp_device_sampler_new(config, inv, &sampler, &err), 0);
        /* two samples: profiling figures are the difference of two (NVML's GPM) */
        assert_int_equal(xp_device_sampler_read(sampler, 500, &samples), 0);
        xp_device_samples_done(&samples);
        samples = (struct xp_device_samples){0};
        assert_int_equal(xp_device_sampler_read(sampler, 1000, &samples), 0);
        samples.duration_ms = 3;
        struct mrender r = {
            .inventory = inv,
            .samples = &samples,
            .view = view,
            .node_name = "n1",
            .hostname = "host-1",
            .sample_age_s = 0.5,
        };
        assert_int_equal(xp_expo_init(&w, XP_EXPO_TEXT), 0);
        mrender_metrics(&w, &r);
        assert_int_equal(xp_expo_finish(&w, &text, &len), 0);
        xp_device_samples_done(&samples);
        xp_device_sampler_free(sampler);
        xp_node_inventory_free(inv);
        return text;
}

static void golden_fake_nvml(void **state)
{
        static const char *const backends[] = {"nvml", NULL};
        char config_path[512], container[] = "trainer", ns[] = "default", name[] = "train",
                               uid[] = "u1";
        pid_t pids[] = {4242};
        struct xp_placement_device device = {.resource = (char *)"nvidia.com/gpu",
                                             .id =
                                                 (char *)"GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e20",
                                             .milli = 500};
        struct mview_container containers[] = {{.name = container}};
        struct mview_pod pod = {.uid = uid,
                                .namespace = ns,
                                .name = name,
                                .device_container = container,
                                .containers = containers,
                                .n_containers = 1,
                                .pids = pids,
                                .n_pids = 1};
        struct mview view = {.pods = &pod,
                             .n_pods = 1,
                             .has_node_cpu = true,
                             .node_cpu_seconds = 1234.5,
                             .has_node_memory = true,
                             .node_memory_used = 1 << 30,
                             .node_memory_total = 1LL << 34,
                             .node_cpus = 8,
                             .cpu_requested_milli = 1500,
                             .memory_requested = 1 << 28};
        struct xp_discovery_config config = {.nvml_library = XPOOL_FAKE_NVML, .backends = backends};
        char *text;

        (void)state;
        pod.placement.devices.items = &device;
        pod.placement.devices.n = 1;
        snprintf(config_path, sizeof(config_path), "%s/nvml/monitoring.json", XPOOL_TEST_DATA);
        assert_int_equal(setenv("FAKE_NVML_CONFIG", config_path, 1), 0);
        text = render_node(&config, &view);
        unsetenv("FAKE_NVML_CONFIG");
        /* the pod's own memory on its GPU: its process 4242's 4 GiB */
        assert_non_null(strstr(
            text,
            "xpool_pod_device_memory_used_bytes{node=\"n1\",device=\"GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e20\",kind=\"gpu\",namespace=\"default\",pod=\"train\",container=\"trainer\"} 4294967296\n"));
        /* and its own utilisation: process 4242's 37 % of the SMs, not the GPU's 87 % */
        assert_non_null(strstr(
            text,
            "xpool_pod_device_utilization_percent{node=\"n1\",device=\"GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e20\",kind=\"gpu\",namespace=\"default\",pod=\"train\",container=\"trainer\"} 37\n"));
        /* DCGM's profiling fields from GPM on the GPU that has it (72 % of SMs: 0.72), ECC and
         * NVLink; the second GPU supports none of them, so it has no such series at all */
        assert_non_null(strstr(text, "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\""));
        assert_non_null(strstr(text, "pod=\"train\"} 0.72\n"));
        assert_non_null(strstr(text, "DCGM_FI_PROF_PCIE_RX_BYTES{gpu=\"0\""));
        assert_non_null(strstr(text, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu=\"0\""));
        assert_non_null(strstr(text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu=\"0\""));
        assert_null(strstr(text, "DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\""));
        assert_null(strstr(text, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{gpu=\"1\""));
        compare_golden("fake-nvml", text);
        free(text);
}

static void golden_sysfs(void **state)
{
        static const char *const backends[] = {"pci", NULL};
        char root[512];
        struct mview view = {.node_cpus = 4};
        struct xp_discovery_config config = {.root = root, .backends = backends};
        char *text;

        (void)state;
        snprintf(root, sizeof(root), "%s/sysfs/mixed-box", XPOOL_TEST_DATA);
        text = render_node(&config, &view);
        /* amdgpu's busy percentage, VRAM in use, and its hwmon temperature and power */
        assert_non_null(strstr(text, "xpool_device_temperature_celsius{node=\"n1\",device=\""));
        assert_non_null(strstr(text, "xpool_device_power_watts{node=\"n1\",device=\""));
        compare_golden("mixed-box", text);
        free(text);
}

/* Ascend NPUs' figures from DCMI (the fake libdcmi.so): npu-exporter's series and the
 * vendor-neutral ones, each only where the driver answered it. */
static void ascend_dcmi(void **state)
{
        static const char *const backends[] = {"pci", NULL};
        char root[512], config_path[512], container[] = "worker", ns[] = "ml", name[] = "infer",
                                          uid[] = "u2";
        struct xp_placement_device device = {.resource = (char *)"huawei.com/Ascend910",
                                             .id = (char *)"0000:01:00.0",
                                             .milli = 1000};
        struct mview_pod pod = {
            .uid = uid, .namespace = ns, .name = name, .device_container = container};
        struct mview view = {.pods = &pod, .n_pods = 1, .node_cpus = 4};
        struct xp_discovery_config config = {
            .root = root, .backends = backends, .dcmi_library = XPOOL_FAKE_DCMI};
        char *text;

        (void)state;
        pod.placement.devices.items = &device;
        pod.placement.devices.n = 1;
        snprintf(root, sizeof(root), "%s/sysfs/ascend-8npu", XPOOL_TEST_DATA);
        snprintf(config_path, sizeof(config_path), "%s/dcmi/ascend-8npu.json", XPOOL_TEST_DATA);
        assert_int_equal(setenv("FAKE_DCMI_CONFIG", config_path, 1), 0);
        text = render_node(&config, &view);
        unsetenv("FAKE_DCMI_CONFIG");
        /* AI core utilisation, temperature and power (tenths of a watt: 85.3 W), with the pod */
        assert_non_null(strstr(text,
                               "npu_chip_info_utilization{id=\"0\",model_name=\"Ascend 910B\","
                               "pcie_bus_info=\"0000:01:00.0\",namespace=\"ml\",pod_name=\"infer\","
                               "container_name=\"worker\"} 37\n"));
        assert_non_null(strstr(text, "pod_name=\"infer\",container_name=\"worker\"} 85.3\n"));
        assert_non_null(strstr(text, "pod_name=\"infer\",container_name=\"worker\"} 52\n"));
        assert_non_null(strstr(text,
                               "npu_chip_info_temperature{id=\"1\",model_name=\"Ascend 910B\","
                               "pcie_bus_info=\"0000:02:00.0\",namespace=\"\",pod_name=\"\","
                               "container_name=\"\"} 45\n"));
        assert_non_null(
            strstr(text,
                   "xpool_device_utilization_percent{node=\"n1\",device=\"0000:01:00.0\","
                   "kind=\"npu\",vendor=\"Huawei\",model=\"Ascend 910B\"} 37\n"));
        assert_non_null(strstr(text,
                               "xpool_device_power_watts{node=\"n1\",device=\"0000:01:00.0\","
                               "kind=\"npu\",vendor=\"Huawei\",model=\"Ascend 910B\"} 85.3\n"));
        /* what the second NPU's driver does not answer, and the NPUs DCMI does not list, are
         * left out, never 0 */
        assert_null(strstr(text, "npu_chip_info_utilization{id=\"1\""));
        assert_null(strstr(text, "npu_chip_info_power{id=\"1\""));
        assert_null(strstr(text, "npu_chip_info_temperature{id=\"2\""));
        assert_null(
            strstr(text, "xpool_device_utilization_percent{node=\"n1\",device=\"0000:02:00.0\""));
        assert_null(
            strstr(text, "xpool_device_temperature_celsius{node=\"n1\",device=\"0000:41:00.0\""));
        compare_golden("ascend-dcmi", text); /* 30-metrics.sh runs promtool on it */
        free(text);
        /* without the driver's library: no npu-exporter series at all */
        text = render_node(&config, &view);
        assert_null(strstr(text, "npu_chip_info_"));
        assert_null(strstr(text, "xpool_device_utilization_percent{"));
        free(text);
}

/* Renders mixed-box (one Cambricon MLU370 at 0000:0a:00.0, held by ml/infer) with the fake
 * libcndev.so answering from tests/data/cndev/<config>.json. */
static char *render_cndev(const char *config_name, const char *library)
{
        static const char *const backends[] = {"pci", NULL};
        char root[512], config_path[512], container[] = "worker", ns[] = "ml", name[] = "infer",
                                          uid[] = "u3";
        struct xp_placement_device device = {
            .resource = (char *)"cambricon.com/mlu", .id = (char *)"0000:0a:00.0", .milli = 1000};
        struct mview_pod pod = {
            .uid = uid, .namespace = ns, .name = name, .device_container = container};
        struct mview view = {.pods = &pod, .n_pods = 1, .node_cpus = 4};
        struct xp_discovery_config config = {
            .root = root, .backends = backends, .cndev_library = library};
        char *text;

        pod.placement.devices.items = &device;
        pod.placement.devices.n = 1;
        snprintf(root, sizeof(root), "%s/sysfs/mixed-box", XPOOL_TEST_DATA);
        snprintf(
            config_path, sizeof(config_path), "%s/cndev/%s.json", XPOOL_TEST_DATA, config_name);
        assert_int_equal(setenv("FAKE_CNDEV_CONFIG", config_path, 1), 0);
        text = render_node(&config, &view);
        unsetenv("FAKE_CNDEV_CONFIG");
        return text;
}

#define MLU_LABELS                                                                                 \
        "driver=\"\",mcu=\"\",mlu=\"0\",model=\"Cambricon MLU370\",node=\"n1\",node_ip=\"\","      \
        "sn=\"\",type=\"Cambricon MLU370\",uuid=\"0000:0a:00.0\""

/* Cambricon MLUs' figures from CNDev (the fake libcndev.so): mlu-exporter's series and the
 * vendor-neutral ones. */
static void cambricon_cndev(void **state)
{
        char *text;

        (void)state;
        text = render_cndev("mixed-box", XPOOL_FAKE_CNDEV);
        assert_non_null(strstr(text, "mlu_utilization{" MLU_LABELS ",vf=\"\"} 63\n"));
        assert_non_null(strstr(text, "mlu_memory_used{" MLU_LABELS "} 12884901888\n"));
        assert_non_null(strstr(text, "mlu_memory_total{" MLU_LABELS "} 51539607552\n"));
        assert_non_null(strstr(text, "mlu_temperature{" MLU_LABELS "} 48\n"));
        assert_non_null(strstr(text, "mlu_power_usage{" MLU_LABELS ",vf=\"\"} 151\n"));
        assert_non_null(strstr(text, "mlu_health{" MLU_LABELS ",unhealth_reason=\"\"} 1\n"));
        /* the pod holding it, joined on uuid as mlu-exporter's dashboards do */
        assert_non_null(strstr(text,
                               "mlu_container{" MLU_LABELS ",vf=\"\",container=\"worker\","
                               "namespace=\"ml\",pod=\"infer\"} 1\n"));
        assert_non_null(
            strstr(text,
                   "xpool_device_utilization_percent{node=\"n1\",device=\"0000:0a:00.0\","
                   "kind=\"npu\",vendor=\"Cambricon\",model=\"Cambricon MLU370\"} 63\n"));
        assert_non_null(strstr(text,
                               "xpool_device_memory_used_bytes{node=\"n1\",device=\"0000:0a:00.0\","
                               "kind=\"npu\",vendor=\"Cambricon\",model=\"Cambricon MLU370\"} "
                               "12884901888\n"));
        assert_non_null(strstr(text,
                               "xpool_device_healthy{node=\"n1\",device=\"0000:0a:00.0\","
                               "kind=\"npu\",health=\"Healthy\",reason=\"\"} 1\n"));
        /* CNDev's second card is not in the inventory: nothing of its figures */
        assert_null(strstr(text, "} 99\n"));
        assert_null(strstr(text, "} 77\n"));
        compare_golden("cambricon-cndev", text); /* 30-metrics.sh runs promtool on it */
        free(text);
        /* without the driver's library (today's behaviour): no mlu-exporter figure at all */
        text = render_cndev("mixed-box", "/nonexistent/libcndev.so");
        assert_null(strstr(text, "mlu_utilization"));
        assert_null(strstr(text, "mlu_health"));
        assert_null(strstr(text, "xpool_device_utilization_percent{node=\"n1\",device=\"0000:0a"));
        free(text);
}

/* A call that fails leaves its figure out, never 0; a card CNDev calls unhealthy says so. */
static void cambricon_cndev_failures(void **state)
{
        char *text;

        (void)state;
        text = render_cndev("failing", XPOOL_FAKE_CNDEV);
        assert_non_null(strstr(text, "mlu_utilization{" MLU_LABELS ",vf=\"\"} 12\n"));
        assert_null(strstr(text, "mlu_power_usage{"));
        assert_null(strstr(text, "mlu_memory_used{"));
        assert_null(strstr(text, "mlu_temperature{")); /* not supported by this card */
        assert_null(strstr(text, "xpool_device_power_watts{node=\"n1\",device=\"0000:0a:00.0\""));
        assert_non_null(strstr(text,
                               "mlu_health{" MLU_LABELS ",unhealth_reason=\"CNDev reports the card "
                               "unhealthy (state 0)\"} 0\n"));
        assert_non_null(
            strstr(text,
                   "xpool_device_healthy{node=\"n1\",device=\"0000:0a:00.0\",kind=\"npu\","
                   "health=\"Unhealthy\",reason=\"CNDev reports the card unhealthy "
                   "(state 0)\"} 0\n"));
        free(text);
        /* a library that refuses version 5's structs: no figures (and a warning in the log),
         * only the pod holding the card, which is xpool's to know */
        text = render_cndev("old-library", XPOOL_FAKE_CNDEV);
        assert_null(strstr(text, "mlu_utilization"));
        assert_null(strstr(text, "mlu_temperature"));
        assert_null(strstr(text, "mlu_health"));
        assert_non_null(strstr(text, "mlu_container{"));
        assert_null(strstr(text, "xpool_device_utilization_percent{node=\"n1\",device=\"0000:0a"));
        free(text);
}

/* Renders what render_cndev() or render_node() makes with stderr (the log) in *ret_log. */
static char *render_logged(char *(*render)(void *), void *arg, char **ret_log)
{
        char path[] = "/tmp/xpool-expo-log-XXXXXX";
        int fd = mkstemp(path), saved = dup(2);
        FILE *f;
        char *text;
        long size;

        assert_true(fd >= 0 && saved >= 0);
        fflush(stderr);
        assert_int_equal(dup2(fd, 2), 2);
        text = render(arg);
        fflush(stderr);
        assert_int_equal(dup2(saved, 2), 2);
        close(saved);
        close(fd);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        size = ftell(f);
        rewind(f);
        *ret_log = calloc(1, (size_t)size + 1);
        assert_non_null(*ret_log);
        assert_int_equal(fread(*ret_log, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        unlink(path);
        return text;
}

static char *render_cndev_library(void *library)
{
        return render_cndev("mixed-box", library);
}

static char *render_dcmi_library(void *library)
{
        static const char *const backends[] = {"pci", NULL};
        char root[512];
        struct mview view = {.node_cpus = 4};
        struct xp_discovery_config config = {
            .root = root, .backends = backends, .dcmi_library = library};

        snprintf(root, sizeof(root), "%s/sysfs/ascend-8npu", XPOOL_TEST_DATA);
        return render_node(&config, &view);
}

/* A vendor library that is missing, or is not the vendor's (--cndev-library, --dcmi-library):
 * one warning naming the file and why, no figures of that vendor's devices, and the others' (the
 * AMD GPU's, from sysfs) as ever. */
static void vendor_library_missing(void **state)
{
        char *text, *log;

        (void)state;
        text = render_logged(render_cndev_library, (void *)"/nonexistent/libcndev.so", &log);
        assert_non_null(strstr(log,
                               "cndev: cannot load /nonexistent/libcndev.so (/nonexistent/"
                               "libcndev.so: cannot open shared object file: No such file or "
                               "directory): Cambricon MLUs report no live figures"));
        assert_null(strstr(text, "mlu_utilization"));
        assert_non_null(
            strstr(text,
                   "xpool_device_temperature_celsius{node=\"n1\",device=\"0000:05:00.0\","
                   "kind=\"gpu\",vendor=\"AMD\",model=\"AMD Instinct MI210\"} 52\n"));
        free(text);
        free(log);
        /* a shared object that is not CNDev (the fake NVML) */
        text = render_logged(render_cndev_library, (void *)XPOOL_FAKE_NVML, &log);
        assert_non_null(strstr(log, "cndev: cannot load " XPOOL_FAKE_NVML " (it lacks cndevInit)"));
        assert_null(strstr(text, "mlu_utilization"));
        assert_non_null(strstr(text, "vendor=\"AMD\",model=\"AMD Instinct MI210\"} 52\n"));
        free(text);
        free(log);
        text = render_logged(render_dcmi_library, (void *)"/nonexistent/libdcmi.so", &log);
        assert_non_null(strstr(log,
                               "dcmi: cannot load /nonexistent/libdcmi.so (/nonexistent/"
                               "libdcmi.so: cannot open shared object file: No such file or "
                               "directory): Ascend NPUs report no live figures"));
        assert_null(strstr(text, "npu_chip_info_"));
        free(text);
        free(log);
        text = render_logged(render_dcmi_library, (void *)XPOOL_FAKE_CNDEV, &log);
        assert_non_null(strstr(log, "dcmi: cannot load " XPOOL_FAKE_CNDEV " (it lacks dcmi_init)"));
        free(text);
        free(log);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(writer_text),
            cmocka_unit_test(writer_openmetrics),
            cmocka_unit_test(negotiate),
            cmocka_unit_test(checker_refuses),
            cmocka_unit_test(checker_openmetrics_rules),
            cmocka_unit_test(parser_hands_samples),
            cmocka_unit_test(golden_fake_nvml),
            cmocka_unit_test(golden_sysfs),
            cmocka_unit_test(ascend_dcmi),
            cmocka_unit_test(cambricon_cndev),
            cmocka_unit_test(cambricon_cndev_failures),
            cmocka_unit_test(vendor_library_missing),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
