/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocation curves as a PNG: the SVG's picture (plot_layout.h) drawn with cairo's toy text
 * API into an image of the same size, cairo loaded when first asked for (cairo_lib.h).
 */
#include <errno.h>
#include <math.h>

#include "cairo_lib.h"
#include "plot_layout.h"

enum anchor {
        ANCHOR_START,
        ANCHOR_MIDDLE,
        ANCHOR_END
};

static void colour(cairo_t *cr, unsigned rgb)
{
        cairo_lib.cairo_set_source_rgb(
            cr, (rgb >> 16 & 0xff) / 255.0, (rgb >> 8 & 0xff) / 255.0, (rgb & 0xff) / 255.0);
}

static void line(cairo_t *cr, double x1, double y1, double x2, double y2)
{
        cairo_lib.cairo_move_to(cr, x1, y1);
        cairo_lib.cairo_line_to(cr, x2, y2);
        cairo_lib.cairo_stroke(cr);
}

/* text in black with its baseline at y, placed as SVG's text-anchor places it. */
static void text(cairo_t *cr, double x, double y, double size, enum anchor anchor, const char *s)
{
        cairo_text_extents_t e;

        colour(cr, 0x000000);
        cairo_lib.cairo_set_font_size(cr, size);
        cairo_lib.cairo_text_extents(cr, s, &e);
        if (anchor == ANCHOR_MIDDLE)
                x -= e.x_advance / 2;
        else if (anchor == ANCHOR_END)
                x -= e.x_advance;
        cairo_lib.cairo_move_to(cr, x, y);
        cairo_lib.cairo_show_text(cr, s);
}

static void grid(cairo_t *cr, double x_max)
{
        char number[16];

        cairo_lib.cairo_set_line_width(cr, 1);
        for (int x = (int)PLOT_X_MIN; x <= (int)x_max; x += PLOT_X_STEP) {
                colour(cr, PLOT_GRID);
                line(cr, plot_px(x, x_max), PLOT_TOP, plot_px(x, x_max), PLOT_H - PLOT_BOTTOM);
                snprintf(number, sizeof(number), "%d", x);
                text(cr, plot_px(x, x_max), PLOT_X_TICK_Y, PLOT_TICK_SIZE, ANCHOR_MIDDLE, number);
        }
        for (int y = (int)PLOT_Y_MIN; y <= (int)PLOT_Y_MAX; y += PLOT_Y_STEP) {
                colour(cr, PLOT_GRID);
                line(cr, PLOT_LEFT, plot_py(y), PLOT_W - PLOT_RIGHT, plot_py(y));
                snprintf(number, sizeof(number), "%d", y);
                text(cr, PLOT_Y_TICK_X, plot_py(y) + 4, PLOT_TICK_SIZE, ANCHOR_END, number);
        }
}

static void frame(cairo_t *cr)
{
        double middle = (PLOT_TOP + PLOT_H - PLOT_BOTTOM) / 2;

        colour(cr, PLOT_FRAME);
        cairo_lib.cairo_rectangle(cr,
                                  PLOT_LEFT,
                                  PLOT_TOP,
                                  PLOT_W - PLOT_LEFT - PLOT_RIGHT,
                                  PLOT_H - PLOT_TOP - PLOT_BOTTOM);
        cairo_lib.cairo_stroke(cr);
        text(cr,
             (PLOT_LEFT + PLOT_W - PLOT_RIGHT) / 2,
             PLOT_X_LABEL_Y,
             PLOT_LABEL_SIZE,
             ANCHOR_MIDDLE,
             plot_x_label);
        cairo_lib.cairo_save(cr);
        cairo_lib.cairo_translate(cr, PLOT_Y_LABEL_X, middle);
        cairo_lib.cairo_rotate(cr, -M_PI / 2);
        text(cr, 0, 0, PLOT_LABEL_SIZE, ANCHOR_MIDDLE, plot_y_label);
        cairo_lib.cairo_restore(cr);
}

static void curve(cairo_t *cr, const struct xp_sim_summary *s, unsigned rgb, double x_max)
{
        bool started = false;
        double x, y;

        for (unsigned k = 0; k <= s->percent; k++)
                if (plot_point(s, k, x_max, &x, &y)) {
                        (started ? cairo_lib.cairo_line_to : cairo_lib.cairo_move_to)(cr, x, y);
                        started = true;
                }
        colour(cr, rgb);
        cairo_lib.cairo_set_line_width(cr, PLOT_CURVE_WIDTH);
        cairo_lib.cairo_stroke(cr);
}

static void legend(cairo_t *cr, const struct xp_sim_summary *s, size_t n)
{
        char words[160];

        cairo_lib.cairo_set_line_width(cr, PLOT_LEGEND_WIDTH);
        for (size_t i = 0; i < n; i++) {
                double y = plot_legend_y(i, n);

                colour(cr, plot_colour(i));
                line(cr, PLOT_LEGEND_LINE, y - 4, PLOT_LEGEND_LINE + 25, y - 4);
                plot_legend_text(words, sizeof(words), &s[i]);
                text(cr, PLOT_LEGEND_TEXT, y, PLOT_LEGEND_SIZE, ANCHOR_START, words);
        }
}

static cairo_status_t write_stream(void *f, const unsigned char *data, unsigned int length)
{
        return fwrite(data, 1, length, f) == length ? CAIRO_STATUS_SUCCESS
                                                    : CAIRO_STATUS_WRITE_ERROR;
}

static void
draw(cairo_t *cr, const char *title, const struct xp_sim_summary *s, size_t n, double x_max)
{
        colour(cr, 0xffffff);
        cairo_lib.cairo_paint(cr);
        cairo_lib.cairo_select_font_face(
            cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
        text(cr, PLOT_W / 2, PLOT_TITLE_Y, PLOT_TITLE_SIZE, ANCHOR_MIDDLE, title);
        grid(cr, x_max);
        frame(cr);
        for (size_t i = 0; i < n; i++)
                curve(cr, &s[i], plot_colour(i), x_max);
        legend(cr, s, n);
}

int xp_sim_plot_png(
    FILE *f, const char *title, const struct xp_sim_summary *s, size_t n, struct xp_error *err)
{
        cairo_surface_t *surface;
        cairo_status_t status;
        cairo_t *cr;
        double x_max;
        int r = cairo_lib_load(err);

        if (r < 0)
                return r;
        if (plot_x_max(s, n, &x_max) < 0)
                return xp_errorf(err, -EINVAL, "no curve reaches %.0f %% of demand", PLOT_X_MIN);
        surface = cairo_lib.cairo_image_surface_create(CAIRO_FORMAT_RGB24, PLOT_W, PLOT_H);
        cr = cairo_lib.cairo_create(surface);
        draw(cr, title, s, n, x_max);
        status = cairo_lib.cairo_status(cr);
        cairo_lib.cairo_destroy(cr);
        if (status == CAIRO_STATUS_SUCCESS)
                status = cairo_lib.cairo_surface_write_to_png_stream(surface, write_stream, f);
        cairo_lib.cairo_surface_destroy(surface);
        cairo_lib_release_caches();
        if (status != CAIRO_STATUS_SUCCESS)
                return xp_errorf(err, -EIO, "cairo: %s", cairo_lib.cairo_status_to_string(status));
        return ferror(f) ? xp_errorf(err, -EIO, "write failed") : 0;
}

int xp_sim_plot_png_ready(struct xp_error *err)
{
        return cairo_lib_load(err);
}
