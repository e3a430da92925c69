/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metricsScript of simulated devices (xpool/devsample.h, docs/monitoring.md): figures move
 * linearly between points and repeat with the period, a figure a point leaves out is not
 * reported, DCGM's profiling ratios (which GPM gives real GPUs) are scripted as the others, and
 * an unknown field is refused with the list of the known ones.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/devsample.h"

static const char script[] =
    "metricsScript:\n"
    "  period: 60\n"
    "  devices:\n"
    "    gpu-0:\n"
    "    - {at: 0, utilizationPercent: 10, graphicsEngineActive: 0.1, tensorActive: 0.2,\n"
    "       smActive: 0.3, dramActive: 0.4, temperatureCelsius: 40}\n"
    "    - {at: 30, utilizationPercent: 90, graphicsEngineActive: 0.9, tensorActive: 0.6}\n";

static void profiling_ratios_move_as_the_others(void **state)
{
        struct xp_sim_script *s = NULL;
        struct xp_device_sample got = {0};

        (void)state;
        assert_int_equal(xp_sim_script_parse(script, strlen(script), "node.yaml", &s, NULL), 0);
        assert_true(xp_sim_script_eval(s, "gpu-0", 15000, &got));
        assert_true(got.has & XP_SAMPLE_UTIL);
        assert_float_equal(got.utilization_percent, 50, 1e-9);
        assert_true(got.has_prof & (1u << XP_PROF_GR_ENGINE_ACTIVE));
        assert_float_equal(got.prof[XP_PROF_GR_ENGINE_ACTIVE], 0.5, 1e-9);
        assert_float_equal(got.prof[XP_PROF_PIPE_TENSOR_ACTIVE], 0.4, 1e-9);
        /* the second point leaves them out: they hold the first point's value until then */
        assert_float_equal(got.prof[XP_PROF_SM_ACTIVE], 0.3, 1e-9);
        assert_float_equal(got.prof[XP_PROF_DRAM_ACTIVE], 0.4, 1e-9);
        assert_false(got.has_prof & (1u << XP_PROF_PCIE_TX_BYTES));
        assert_false(got.has & XP_SAMPLE_MEM_USED);
        /* the second point alone, a period later: what it leaves out is not reported */
        memset(&got, 0, sizeof got);
        assert_true(xp_sim_script_eval(s, "gpu-0", 60000 + 45000, &got));
        assert_float_equal(got.prof[XP_PROF_GR_ENGINE_ACTIVE], 0.9, 1e-9);
        assert_false(got.has_prof & (1u << XP_PROF_SM_ACTIVE));
        assert_false(got.has & XP_SAMPLE_TEMP);
        assert_false(xp_sim_script_eval(s, "gpu-1", 0, &got));
        xp_sim_script_free(s);
}

static void unknown_field_refused(void **state)
{
        static const char bad[] = "metricsScript:\n"
                                  "  devices:\n"
                                  "    gpu-0:\n"
                                  "    - {at: 0, tensorActivity: 0.5}\n";
        struct xp_sim_script *s = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_sim_script_parse(bad, strlen(bad), "node.yaml", &s, &err), -EINVAL);
        assert_null(s);
        assert_non_null(
            strstr(xp_error_message(&err), "node.yaml: metricsScript.devices.gpu-0[0]"));
        assert_non_null(strstr(xp_error_message(&err), "tensorActive"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(profiling_ratios_move_as_the_others),
            cmocka_unit_test(unknown_field_refused),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
