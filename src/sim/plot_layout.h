/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The allocation curves' picture, shared by its two writers (svg.c, png.c) so that both draw the
 * same thing: the canvas, the frame, the scales, the ticks, the colours, the legend's place and
 * words. GPU allocation ratio (y) against the arrived GPU demand (x, percent of the cluster's
 * GPUs), one coloured line per policy, a grid, axis labels and a legend in the lower right, where
 * the curves are not.
 */

#include <stdbool.h>
#include <stddef.h>

#include "xpool/sim.h"

#define PLOT_W      860
#define PLOT_H      540
#define PLOT_LEFT   70
#define PLOT_RIGHT  20
#define PLOT_TOP    50
#define PLOT_BOTTOM 60
#define PLOT_Y_MIN  50.0 /* percent: below it every policy is the same straight line */
#define PLOT_Y_MAX  100.0
/* percent: no policy allocates more than has arrived, so every curve enters the frame right of
 * PLOT_Y_MIN; the axis starts there and the plateaus, where the policies differ, get the width */
#define PLOT_X_MIN  PLOT_Y_MIN
#define PLOT_X_STEP 10 /* percent between the x ticks */
#define PLOT_Y_STEP 5  /* and between the y ticks */
#define PLOT_GRID   0xe0e0e0
#define PLOT_FRAME  0x333333

#define PLOT_TITLE_Y      28
#define PLOT_TITLE_SIZE   16
#define PLOT_TICK_SIZE    12
#define PLOT_LABEL_SIZE   14
#define PLOT_LEGEND_SIZE  13
#define PLOT_CURVE_WIDTH  1.8
#define PLOT_LEGEND_WIDTH 3
#define PLOT_X_TICK_Y     (PLOT_H - PLOT_BOTTOM + 18) /* baseline of the x ticks' numbers */
#define PLOT_Y_TICK_X     (PLOT_LEFT - 6)             /* right end of the y ticks' numbers */
#define PLOT_X_LABEL_Y    (PLOT_H - 18)
#define PLOT_Y_LABEL_X    18
#define PLOT_LEGEND_LINE  (PLOT_W - PLOT_RIGHT - 345) /* left end of a legend's sample line */
#define PLOT_LEGEND_TEXT  (PLOT_W - PLOT_RIGHT - 313)

extern const char plot_x_label[];
extern const char plot_y_label[];

/* The right end of the x axis: the longest curve's percent; -EINVAL when none reaches the frame. */
int plot_x_max(const struct xp_sim_summary *s, size_t n, double *x_max);
/* Picture coordinates of a percent of arrived demand, and of an allocation percent. */
double plot_px(double x, double x_max);
double plot_py(double y);
/* The point of s's curve at percent k: false where it is below or left of the frame. */
bool plot_point(const struct xp_sim_summary *s, unsigned k, double x_max, double *x, double *y);
/* The colour (0xRRGGBB) of the i-th curve. */
unsigned plot_colour(size_t i);
/* Baseline of the i-th of n legend entries; its sample line is 4 above it. */
double plot_legend_y(size_t i, size_t n);
/* The i-th legend entry's words. */
void plot_legend_text(char *buf, size_t size, const struct xp_sim_summary *s);
