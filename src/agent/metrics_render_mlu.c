/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cambricon MLUs' figures under the names and labels Cambricon's mlu-exporter gives them with its
 * Kubernetes deployment's "mlu" prefix (metrics_internal.h), so its dashboards and recording
 * rules work on an xpool node: mlu_utilization, mlu_memory_used/total, mlu_temperature,
 * mlu_power_usage and mlu_health per card, only where the driver answered the figure, and
 * mlu_container (1) per pod holding a card, which those rules join on uuid. Labels xpool cannot
 * know (driver and MCU versions, serial number, node IP) are empty, as mlu-exporter leaves a
 * figure CNDev does not answer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <strings.h>

#include "metrics_internal.h"
#include "xpool/macro.h"

enum {
        MLU_UTIL,
        MLU_MEM_USED,
        MLU_MEM_TOTAL,
        MLU_TEMP,
        MLU_POWER,
        MLU_HEALTH
};

struct mlu_figure {
        const char *name;
        const char *help;
        int what;
        bool vf; /* mlu-exporter adds its virtual-function label */
};

static const struct mlu_figure mlu_figures[] = {
    {"mlu_utilization", "The utilization of Cambricon MLU, unit is '%'", MLU_UTIL, true},
    {"mlu_memory_used",
     "The used physical memory of Cambricon MLU, unit is 'B'",
     MLU_MEM_USED,
     false},
    {"mlu_memory_total",
     "The total physical memory of Cambricon MLU, unit is 'B'",
     MLU_MEM_TOTAL,
     false},
    {"mlu_temperature",
     "The board temperature of Cambricon MLU, unit is 'celsius'",
     MLU_TEMP,
     false},
    {"mlu_power_usage", "The power usage of Cambricon MLU, unit is 'w'", MLU_POWER, true},
    {"mlu_health", "The health state of Cambricon MLU, 1 means health, 0 means sick", MLU_HEALTH},
};

static bool is_mlu(const struct xp_device *d)
{
        return !d->simulated && d->kind == XP_DEVICE_NPU && d->vendor &&
               strcasecmp(d->vendor, "Cambricon") == 0;
}

/* The figure's value in *ret: false when the sample lacks it. */
static bool mlu_value(const struct xp_device_sample *s, int what, double *ret)
{
        static const unsigned bits[] = {[MLU_UTIL] = XP_SAMPLE_UTIL,
                                        [MLU_MEM_USED] = XP_SAMPLE_MEM_USED,
                                        [MLU_MEM_TOTAL] = XP_SAMPLE_MEM_TOTAL,
                                        [MLU_TEMP] = XP_SAMPLE_TEMP,
                                        [MLU_POWER] = XP_SAMPLE_POWER};

        if (what == MLU_HEALTH) {
                *ret = s->health == XP_DEVICE_HEALTHY ? 1 : 0;
                return s->health != XP_DEVICE_HEALTH_UNKNOWN;
        }
        *ret = what == MLU_UTIL        ? s->utilization_percent
               : what == MLU_MEM_USED  ? (double)s->memory_used_bytes
               : what == MLU_MEM_TOTAL ? (double)s->memory_total_bytes
               : what == MLU_TEMP      ? s->temperature_celsius
                                       : s->power_watts;
        return (s->has & bits[what]) != 0;
}

/* mlu-exporter's card labels, in its order; extra (NULL: none) last. */
static size_t card_labels(const struct mrender *r,
                          const struct xp_device *d,
                          const char *mlu,
                          const struct xp_expo_label *extra,
                          size_t n_extra,
                          struct xp_expo_label out[static 16])
{
        const struct xp_expo_label fixed[] = {
            {"driver", ""},
            {"mcu", ""},
            {"mlu", mlu},
            {"model", d->model ? d->model : ""},
            {"node", r->node_name ? r->node_name : ""},
            {"node_ip", ""},
            {"sn", ""},
            {"type", d->model ? d->model : ""},
            {"uuid", d->id},
        };
        size_t n = 0;

        for (size_t k = 0; k < XP_ELEMENTSOF(fixed); k++)
                out[n++] = fixed[k];
        for (size_t k = 0; k < n_extra && n < 16; k++)
                out[n++] = extra[k];
        return n;
}

static void
render_mlu_family(struct xp_expo *w, const struct mrender *r, const struct mlu_figure *f)
{
        bool started = false;

        for (size_t i = 0; r->samples && i < r->samples->n && i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                const struct xp_device_sample *s = &r->samples->items[i];
                struct xp_expo_label labels[16];
                struct xp_expo_label extra[1];
                size_t n_extra = 0, n;
                char mlu[24];
                double v;

                if (!is_mlu(d) || !mlu_value(s, f->what, &v))
                        continue;
                if (!started)
                        xp_expo_family(w, f->name, XP_EXPO_GAUGE, f->help);
                started = true;
                if (f->vf)
                        extra[n_extra++] = (struct xp_expo_label){"vf", ""};
                else if (f->what == MLU_HEALTH)
                        extra[n_extra++] =
                            (struct xp_expo_label){"unhealth_reason", s->health_reason};
                snprintf(mlu, sizeof(mlu), "%" PRId64, d->index);
                n = card_labels(r, d, mlu, extra, n_extra, labels);
                xp_expo_sample(w, "", labels, n, v);
        }
}

/* mlu-exporter's podresources series: which pod's container holds each card. */
static void render_mlu_container(struct xp_expo *w, const struct mrender *r)
{
        bool started = false;

        for (size_t i = 0; r->view && i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                struct alloc allocs[ALLOCS_MAX];
                char mlu[24];
                size_t n;

                if (!is_mlu(d))
                        continue;
                n = mrender_allocations(r->view, d->id, allocs);
                snprintf(mlu, sizeof(mlu), "%" PRId64, d->index);
                for (size_t k = 0; k < n; k++) {
                        const struct mview_pod *p = allocs[k].pod;
                        const struct xp_expo_label extra[] = {
                            {"vf", ""},
                            {"container", p->device_container ? p->device_container : ""},
                            {"namespace", p->namespace},
                            {"pod", p->name},
                        };
                        struct xp_expo_label labels[16];
                        size_t n_labels =
                            card_labels(r, d, mlu, extra, XP_ELEMENTSOF(extra), labels);

                        if (!started)
                                xp_expo_family(
                                    w,
                                    "mlu_container",
                                    XP_EXPO_GAUGE,
                                    "The k8s container info of Cambricon MLUs allocated");
                        started = true;
                        xp_expo_sample(w, "", labels, n_labels, 1);
                }
        }
}

void mrender_mlu(struct xp_expo *w, const struct mrender *r)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(mlu_figures); i++)
                render_mlu_family(w, r, &mlu_figures[i]);
        render_mlu_container(w, r);
}
