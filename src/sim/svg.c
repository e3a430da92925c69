/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocation curves as a small SVG picture of our own: GPU allocation ratio (y) against the
 * arrived GPU demand (x, percent of the cluster's GPUs), one coloured line per policy, a grid,
 * axis labels and a legend in the lower right, where the curves are not.
 */
#include <errno.h>

#include "xpool/sim.h"

#define W      860
#define H      540
#define LEFT   70
#define RIGHT  20
#define TOP    50
#define BOTTOM 60
#define Y_MIN  50.0 /* percent: below it every policy is the same straight line */
#define Y_MAX  100.0
/* percent: no policy allocates more than has arrived, so every curve enters the frame right of
 * Y_MIN; the axis starts there and the plateaus, where the policies differ, get the width */
#define X_MIN Y_MIN

static const char *const colours[] = {
    "#7f7f7f",
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#d62728",
    "#000000",
    "#8c564b",
    "#e377c2",
};

static double px(double x, double x_max)
{
        return LEFT + (W - LEFT - RIGHT) * (x - X_MIN) / (x_max - X_MIN);
}

static double py(double y)
{
        double v = y < Y_MIN ? Y_MIN : y;
        return TOP + (H - TOP - BOTTOM) * (Y_MAX - v) / (Y_MAX - Y_MIN);
}

static void grid(FILE *f, double x_max)
{
        for (int x = (int)X_MIN; x <= (int)x_max; x += 10) {
                fprintf(f,
                        "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#e0e0e0'/>\n",
                        px(x, x_max),
                        TOP,
                        px(x, x_max),
                        H - BOTTOM);
                fprintf(f,
                        "<text x='%.1f' y='%d' font-size='12' text-anchor='middle'>%d</text>\n",
                        px(x, x_max),
                        H - BOTTOM + 18,
                        x);
        }
        for (int y = (int)Y_MIN; y <= (int)Y_MAX; y += 5) {
                fprintf(f,
                        "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#e0e0e0'/>\n",
                        LEFT,
                        py(y),
                        W - RIGHT,
                        py(y));
                fprintf(f,
                        "<text x='%d' y='%.1f' font-size='12' text-anchor='end'>%d</text>\n",
                        LEFT - 6,
                        py(y) + 4,
                        y);
        }
        fprintf(f,
                "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#333'/>\n",
                LEFT,
                TOP,
                W - LEFT - RIGHT,
                H - TOP - BOTTOM);
        fprintf(
            f,
            "<text x='%d' y='%d' font-size='14' text-anchor='middle'>arrived GPU demand (%% of the cluster's GPUs)</text>\n",
            (LEFT + W - RIGHT) / 2,
            H - 18);
        fprintf(
            f,
            "<text x='18' y='%d' font-size='14' text-anchor='middle' transform='rotate(-90 18 %d)'>GPU allocation ratio (%%)</text>\n",
            (TOP + H - BOTTOM) / 2,
            (TOP + H - BOTTOM) / 2);
}

static void curve(FILE *f, const struct xp_sim_summary *s, const char *colour, double x_max)
{
        int started = 0;

        fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.8' points='", colour);
        for (unsigned k = 0; k <= s->percent; k++) {
                if (s->mean[k] < 0 || 100 * s->mean[k] < Y_MIN || k < X_MIN)
                        continue; /* below the frame: every policy the same straight line */
                fprintf(f, "%s%.1f,%.1f", started ? " " : "", px(k, x_max), py(100 * s->mean[k]));
                started = 1;
        }
        fprintf(f, "'/>\n");
}

/* The title carries a file's name, which may hold what XML reserves. */
static void xml_text(FILE *f, const char *text)
{
        for (const char *p = text; *p; p++) {
                if (*p == '<')
                        fputs("&lt;", f);
                else if (*p == '>')
                        fputs("&gt;", f);
                else if (*p == '&')
                        fputs("&amp;", f);
                else if (*p == '\'')
                        fputs("&apos;", f);
                else
                        fputc(*p, f);
        }
}

int xp_sim_plot_svg(FILE *f, const char *title, const struct xp_sim_summary *s, size_t n)
{
        double x_max = 0;

        for (size_t i = 0; i < n; i++)
                if (s[i].percent > x_max)
                        x_max = s[i].percent;
        if (x_max <= X_MIN)
                return -EINVAL;
        fprintf(
            f,
            "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
            W,
            H);
        fprintf(f, "<text x='%d' y='28' font-size='16' text-anchor='middle'>", W / 2);
        xml_text(f, title);
        fputs("</text>\n", f);
        grid(f, x_max);
        for (size_t i = 0; i < n; i++)
                curve(f, &s[i], colours[i % (sizeof(colours) / sizeof(*colours))], x_max);
        for (size_t i = 0; i < n; i++) {
                double y = H - BOTTOM - 20 - 20.0 * (double)(n - 1 - i);
                const char *c = colours[i % (sizeof(colours) / sizeof(*colours))];
                fprintf(
                    f,
                    "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='%s' stroke-width='3'/>\n",
                    W - RIGHT - 345,
                    y - 4,
                    W - RIGHT - 320,
                    y - 4,
                    c);
                fprintf(
                    f,
                    "<text x='%d' y='%.1f' font-size='13'>%s: %.2f %% at 100, %.2f %% at %u</text>\n",
                    W - RIGHT - 313,
                    y,
                    xp_sched_profile_to_string(s[i].profile),
                    100 * s[i].mean[100],
                    100 * s[i].mean[s[i].percent],
                    s[i].percent);
        }
        fprintf(f, "</svg>\n");
        return ferror(f) ? -EIO : 0;
}
