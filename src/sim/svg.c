/* SPDX-License-Identifier: Apache-2.0 */
/* The allocation curves as a small SVG picture of our own; the layout is plot_layout.h's. */
#include <errno.h>

#include "plot_layout.h"

static void grid(FILE *f, double x_max)
{
        for (int x = (int)PLOT_X_MIN; x <= (int)x_max; x += PLOT_X_STEP) {
                fprintf(f,
                        "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#%06x'/>\n",
                        plot_px(x, x_max),
                        PLOT_TOP,
                        plot_px(x, x_max),
                        PLOT_H - PLOT_BOTTOM,
                        PLOT_GRID);
                fprintf(f,
                        "<text x='%.1f' y='%d' font-size='%d' text-anchor='middle'>%d</text>\n",
                        plot_px(x, x_max),
                        PLOT_X_TICK_Y,
                        PLOT_TICK_SIZE,
                        x);
        }
        for (int y = (int)PLOT_Y_MIN; y <= (int)PLOT_Y_MAX; y += PLOT_Y_STEP) {
                fprintf(f,
                        "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#%06x'/>\n",
                        PLOT_LEFT,
                        plot_py(y),
                        PLOT_W - PLOT_RIGHT,
                        plot_py(y),
                        PLOT_GRID);
                fprintf(f,
                        "<text x='%d' y='%.1f' font-size='%d' text-anchor='end'>%d</text>\n",
                        PLOT_Y_TICK_X,
                        plot_py(y) + 4,
                        PLOT_TICK_SIZE,
                        y);
        }
}

/* The frame and the axes' names. */
static void frame(FILE *f)
{
        fprintf(f,
                "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#%03x'/>\n",
                PLOT_LEFT,
                PLOT_TOP,
                PLOT_W - PLOT_LEFT - PLOT_RIGHT,
                PLOT_H - PLOT_TOP - PLOT_BOTTOM,
                0x333); /* PLOT_FRAME, as SVG's short form */
        fprintf(f,
                "<text x='%d' y='%d' font-size='%d' text-anchor='middle'>%s</text>\n",
                (PLOT_LEFT + PLOT_W - PLOT_RIGHT) / 2,
                PLOT_X_LABEL_Y,
                PLOT_LABEL_SIZE,
                plot_x_label);
        fprintf(f,
                "<text x='%d' y='%d' font-size='%d' text-anchor='middle' transform='rotate(-90 %d "
                "%d)'>%s</text>\n",
                PLOT_Y_LABEL_X,
                (PLOT_TOP + PLOT_H - PLOT_BOTTOM) / 2,
                PLOT_LABEL_SIZE,
                PLOT_Y_LABEL_X,
                (PLOT_TOP + PLOT_H - PLOT_BOTTOM) / 2,
                plot_y_label);
}

static void curve(FILE *f, const struct xp_sim_summary *s, unsigned colour, double x_max)
{
        const char *sep = "";
        double x, y;

        fprintf(f,
                "<polyline fill='none' stroke='#%06x' stroke-width='%.1f' points='",
                colour,
                PLOT_CURVE_WIDTH);
        for (unsigned k = 0; k <= s->percent; k++)
                if (plot_point(s, k, x_max, &x, &y)) {
                        fprintf(f, "%s%.1f,%.1f", sep, x, y);
                        sep = " ";
                }
        fprintf(f, "'/>\n");
}

static void legend(FILE *f, const struct xp_sim_summary *s, size_t n)
{
        char text[160];

        for (size_t i = 0; i < n; i++) {
                double y = plot_legend_y(i, n);

                fprintf(f,
                        "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#%06x' "
                        "stroke-width='%d'/>\n",
                        PLOT_LEGEND_LINE,
                        y - 4,
                        PLOT_LEGEND_LINE + 25,
                        y - 4,
                        plot_colour(i),
                        PLOT_LEGEND_WIDTH);
                plot_legend_text(text, sizeof(text), &s[i]);
                fprintf(f,
                        "<text x='%d' y='%.1f' font-size='%d'>%s</text>\n",
                        PLOT_LEGEND_TEXT,
                        y,
                        PLOT_LEGEND_SIZE,
                        text);
        }
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
        double x_max;

        if (plot_x_max(s, n, &x_max) < 0)
                return -EINVAL;
        fprintf(f,
                "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' "
                "width='%d' height='%d' font-family='sans-serif'>\n<rect width='100%%' "
                "height='100%%' fill='white'/>\n",
                PLOT_W,
                PLOT_H);
        fprintf(f,
                "<text x='%d' y='%d' font-size='%d' text-anchor='middle'>",
                PLOT_W / 2,
                PLOT_TITLE_Y,
                PLOT_TITLE_SIZE);
        xml_text(f, title);
        fputs("</text>\n", f);
        grid(f, x_max);
        frame(f);
        for (size_t i = 0; i < n; i++)
                curve(f, &s[i], plot_colour(i), x_max);
        legend(f, s, n);
        fprintf(f, "</svg>\n");
        return ferror(f) ? -EIO : 0;
}
