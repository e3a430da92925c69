/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DCGM's ECC, NVLink and profiling fields from NVML (sample_internal.h): the volatile ECC totals
 * (nvmlDeviceGetTotalEccErrors), the NVLink data counters (nvmlDeviceGetFieldValues) and, on GPUs
 * with GPM (Hopper and later), the engine, SM, tensor pipe, DRAM, PCIe and NVLink activity between
 * two samples (nvmlGpmSampleGet, nvmlGpmMetricsGet). A figure the GPU does not support is left out.
 */
#include <errno.h>
#include <stdlib.h>

#include "sample_internal.h"

#define MIB 1048576.0

/* What each profiling figure is made of: a GPM metric, scaled to DCGM's unit. */
static const struct {
        enum xp_sample_prof prof;
        enum nvml_gpm_metric_id metric;
        double scale;
} gpm_metrics[] = {
    {XP_PROF_GR_ENGINE_ACTIVE, NVML_GPM_METRIC_GRAPHICS_UTIL, 0.01},
    {XP_PROF_SM_ACTIVE, NVML_GPM_METRIC_SM_UTIL, 0.01},
    {XP_PROF_DRAM_ACTIVE, NVML_GPM_METRIC_DRAM_BW_UTIL, 0.01},
    {XP_PROF_PIPE_TENSOR_ACTIVE, NVML_GPM_METRIC_ANY_TENSOR_UTIL, 0.01},
    {XP_PROF_PCIE_TX_BYTES, NVML_GPM_METRIC_PCIE_TX_PER_SEC, MIB},
    {XP_PROF_PCIE_RX_BYTES, NVML_GPM_METRIC_PCIE_RX_PER_SEC, MIB},
    {XP_PROF_NVLINK_TX_BYTES, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, MIB},
    {XP_PROF_NVLINK_RX_BYTES, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, MIB},
};

static bool gpm_api(const struct nvml_api *api)
{
        return api->gpm_query_device_support && api->gpm_sample_alloc && api->gpm_sample_free &&
               api->gpm_sample_get && api->gpm_metrics_get;
}

int nvml_gpm_open(struct nvml_sampler *s)
{
        s->gpm = calloc(s->n ? s->n : 1, sizeof(*s->gpm));
        if (!s->gpm)
                return -ENOMEM;
        for (size_t i = 0; i < s->n && gpm_api(&s->api); i++) {
                struct nvml_gpm_support support = {.version = NVML_GPM_SUPPORT_VERSION};
                struct nvml_gpm_state *g = &s->gpm[i];

                if (!s->handles[i] ||
                    s->api.gpm_query_device_support(s->handles[i], &support) != NVML_SUCCESS ||
                    !support.is_supported_device)
                        continue;
                if (s->api.gpm_sample_alloc(&g->prev) != NVML_SUCCESS)
                        continue;
                if (s->api.gpm_sample_alloc(&g->cur) != NVML_SUCCESS) {
                        s->api.gpm_sample_free(g->prev);
                        continue;
                }
                g->supported = true;
        }
        return 0;
}

void nvml_gpm_close(struct nvml_sampler *s)
{
        for (size_t i = 0; s->gpm && i < s->n; i++)
                if (s->gpm[i].supported) {
                        s->api.gpm_sample_free(s->gpm[i].prev);
                        s->api.gpm_sample_free(s->gpm[i].cur);
                }
        free(s->gpm);
        s->gpm = NULL;
}

static void read_gpm(struct nvml_sampler *s, size_t i, struct xp_device_sample *ret)
{
        struct nvml_gpm_state *g = &s->gpm[i];
        struct nvml_gpm_metrics_get *m;
        struct nvml_gpm_sample swap;

        if (!g->supported || s->api.gpm_sample_get(s->handles[i], g->cur) != NVML_SUCCESS)
                return;
        m = g->have_prev ? calloc(1, sizeof(*m)) : NULL;
        if (m) {
                *m = (struct nvml_gpm_metrics_get){
                    .version = NVML_GPM_METRICS_GET_VERSION,
                    .num_metrics = XP_ELEMENTSOF(gpm_metrics),
                    .sample1 = g->prev,
                    .sample2 = g->cur,
                };
                for (size_t k = 0; k < XP_ELEMENTSOF(gpm_metrics); k++)
                        m->metrics[k].metric_id = gpm_metrics[k].metric;
                if (s->api.gpm_metrics_get(m) == NVML_SUCCESS)
                        for (size_t k = 0; k < XP_ELEMENTSOF(gpm_metrics); k++) {
                                if (m->metrics[k].nvml_return != NVML_SUCCESS)
                                        continue;
                                ret->has_prof |= 1u << gpm_metrics[k].prof;
                                ret->prof[gpm_metrics[k].prof] =
                                    m->metrics[k].value * gpm_metrics[k].scale;
                        }
                free(m);
        }
        swap = g->prev;
        g->prev = g->cur;
        g->cur = swap;
        g->have_prev = true;
}

static bool field_u64(const struct nvml_field_value *v, uint64_t *ret)
{
        if (v->nvml_return != NVML_SUCCESS)
                return false;
        switch (v->value_type) {
        case NVML_VALUE_TYPE_UNSIGNED_INT:
                *ret = v->value.ui_val;
                return true;
        case NVML_VALUE_TYPE_UNSIGNED_LONG:
                *ret = v->value.ul_val;
                return true;
        case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
                *ret = v->value.ull_val;
                return true;
        case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
                *ret = v->value.sll_val < 0 ? 0 : (uint64_t)v->value.sll_val;
                return v->value.sll_val >= 0;
        default:
                return false;
        }
}

static void read_nvlink(struct nvml_sampler *s, struct nvml_device *h, struct xp_device_sample *ret)
{
        struct nvml_field_value v[2] = {{.field_id = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX},
                                        {.field_id = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX}};
        uint64_t tx, rx;

        if (s->api.get_field_values && s->api.get_field_values(h, 2, v) == NVML_SUCCESS &&
            field_u64(&v[0], &tx) && field_u64(&v[1], &rx)) {
                ret->has |= XP_SAMPLE_NVLINK_TOTAL;
                ret->nvlink_total_kib = tx + rx;
        }
}

static void read_ecc(struct nvml_sampler *s, struct nvml_device *h, struct xp_device_sample *ret)
{
        unsigned long long v;

        if (!s->api.get_total_ecc_errors)
                return;
        if (s->api.get_total_ecc_errors(
                h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &v) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_ECC_SBE;
                ret->ecc_sbe_volatile = v;
        }
        if (s->api.get_total_ecc_errors(
                h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &v) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_ECC_DBE;
                ret->ecc_dbe_volatile = v;
        }
}

void nvml_read_dcgm(struct nvml_sampler *s, size_t i, struct xp_device_sample *ret)
{
        read_ecc(s, s->handles[i], ret);
        read_nvlink(s, s->handles[i], ret);
        if (s->gpm)
                read_gpm(s, i, ret);
}
