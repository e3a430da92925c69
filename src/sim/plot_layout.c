/* SPDX-License-Identifier: Apache-2.0 */
/* The allocation curves' picture, shared by the SVG and PNG writers (plot_layout.h). */
#include <errno.h>
#include <stdio.h>

#include "plot_layout.h"

const char plot_x_label[] = "arrived GPU demand (% of the cluster's GPUs)";
const char plot_y_label[] = "GPU allocation ratio (%)";

static const unsigned colours[] = {
    0x7f7f7f,
    0x1f77b4,
    0xff7f0e,
    0x2ca02c,
    0x9467bd,
    0xd62728,
    0x000000,
    0x8c564b,
    0xe377c2,
};

int plot_x_max(const struct xp_sim_summary *s, size_t n, double *x_max)
{
        *x_max = 0;
        for (size_t i = 0; i < n; i++)
                if (s[i].percent > *x_max)
                        *x_max = s[i].percent;
        return *x_max <= PLOT_X_MIN ? -EINVAL : 0;
}

double plot_px(double x, double x_max)
{
        return PLOT_LEFT +
               (PLOT_W - PLOT_LEFT - PLOT_RIGHT) * (x - PLOT_X_MIN) / (x_max - PLOT_X_MIN);
}

double plot_py(double y)
{
        double v = y < PLOT_Y_MIN ? PLOT_Y_MIN : y;
        return PLOT_TOP +
               (PLOT_H - PLOT_TOP - PLOT_BOTTOM) * (PLOT_Y_MAX - v) / (PLOT_Y_MAX - PLOT_Y_MIN);
}

bool plot_point(const struct xp_sim_summary *s, unsigned k, double x_max, double *x, double *y)
{
        if (s->mean[k] < 0 || 100 * s->mean[k] < PLOT_Y_MIN || k < PLOT_X_MIN)
                return false; /* below the frame: every policy the same straight line */
        *x = plot_px(k, x_max);
        *y = plot_py(100 * s->mean[k]);
        return true;
}

unsigned plot_colour(size_t i)
{
        return colours[i % (sizeof(colours) / sizeof(*colours))];
}

double plot_legend_y(size_t i, size_t n)
{
        return PLOT_H - PLOT_BOTTOM - 20 - 20.0 * (double)(n - 1 - i);
}

void plot_legend_text(char *buf, size_t size, const struct xp_sim_summary *s)
{
        snprintf(buf,
                 size,
                 "%s: %.2f %% at 100, %.2f %% at %u",
                 xp_sched_profile_to_string(s->profile),
                 100 * s->mean[100],
                 100 * s->mean[s->percent],
                 s->percent);
}
