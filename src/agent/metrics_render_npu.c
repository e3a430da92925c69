/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Huawei Ascend NPUs' figures under the names and labels Huawei's npu-exporter gives them
 * (metrics_internal.h), so its dashboards and alerts work on an xpool node: a series per NPU and
 * pod holding it (empty pod labels when none), only where the driver answered the figure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <strings.h>

#include "metrics_internal.h"
#include "xpool/macro.h"

struct npu_figure {
        const char *name;
        const char *help;
        unsigned has; /* the sample bit */
};

static const struct npu_figure npu_figures[] = {
    {"npu_chip_info_utilization", "the ai core utilization", XP_SAMPLE_UTIL},
    {"npu_chip_info_temperature", "the npu temperature", XP_SAMPLE_TEMP},
    {"npu_chip_info_power", "the npu power", XP_SAMPLE_POWER},
};

static bool is_ascend(const struct xp_device *d)
{
        return d->kind == XP_DEVICE_NPU && d->vendor && strcasecmp(d->vendor, "Huawei") == 0;
}

static double npu_value(const struct xp_device_sample *s, unsigned has)
{
        return has == XP_SAMPLE_UTIL   ? s->utilization_percent
               : has == XP_SAMPLE_TEMP ? s->temperature_celsius
                                       : s->power_watts;
}

static void
render_npu_family(struct xp_expo *w, const struct mrender *r, const struct npu_figure *f)
{
        bool started = false;

        for (size_t i = 0; r->samples && i < r->samples->n && i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                const struct xp_device_sample *s = &r->samples->items[i];
                struct alloc allocs[ALLOCS_MAX];
                size_t n;
                char id[24];

                if (d->simulated || !is_ascend(d) || !(s->has & f->has))
                        continue;
                if (!started)
                        xp_expo_family(w, f->name, XP_EXPO_GAUGE, f->help);
                started = true;
                n = mrender_allocations(r->view, d->id, allocs);
                snprintf(id, sizeof(id), "%" PRId64, d->index);
                for (size_t k = 0; k < (n ? n : 1); k++) {
                        const struct mview_pod *p = n ? allocs[k].pod : NULL;
                        struct xp_expo_label labels[] = {
                            {"id", id},
                            {"model_name", d->model},
                            {"pcie_bus_info", d->pci_address},
                            {"namespace", p ? p->namespace : ""},
                            {"pod_name", p ? p->name : ""},
                            {"container_name", p ? p->device_container : ""},
                        };

                        xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), npu_value(s, f->has));
                }
        }
}

void mrender_npu(struct xp_expo *w, const struct mrender *r)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(npu_figures); i++)
                render_npu_family(w, r, &npu_figures[i]);
}
