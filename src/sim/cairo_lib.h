/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * cairo, for the curves as PNG (png.c), loaded with dlopen() when a PNG is asked for rather than
 * linked: the xpool executable is also the CLI, whose start (`xpool version`, `xpool get`) would
 * otherwise load cairo and the dozen libraries under it (pixman, freetype, fontconfig, libpng, X
 * client libraries) on every run. Calls go through cairo_lib: cairo_lib.cairo_create() after
 * cairo_lib_load().
 */

#include <cairo.h>

#include "xpool/error.h"

#define CAIRO_LIB_SONAME "libcairo.so.2"

#define CAIRO_LIB_FUNCTIONS(X)                                                                     \
        X(cairo_create)                                                                            \
        X(cairo_debug_reset_static_data)                                                           \
        X(cairo_destroy)                                                                           \
        X(cairo_image_surface_create)                                                              \
        X(cairo_line_to)                                                                           \
        X(cairo_move_to)                                                                           \
        X(cairo_paint)                                                                             \
        X(cairo_rectangle)                                                                         \
        X(cairo_restore)                                                                           \
        X(cairo_rotate)                                                                            \
        X(cairo_save)                                                                              \
        X(cairo_select_font_face)                                                                  \
        X(cairo_set_font_size)                                                                     \
        X(cairo_set_line_width)                                                                    \
        X(cairo_set_source_rgb)                                                                    \
        X(cairo_show_text)                                                                         \
        X(cairo_status)                                                                            \
        X(cairo_status_to_string)                                                                  \
        X(cairo_stroke)                                                                            \
        X(cairo_surface_destroy)                                                                   \
        X(cairo_surface_write_to_png_stream)                                                       \
        X(cairo_text_extents)                                                                      \
        X(cairo_translate)

#define CAIRO_LIB_POINTER(f) __typeof__(f) *f;
struct cairo_lib {
        CAIRO_LIB_FUNCTIONS(CAIRO_LIB_POINTER)
        void (*FcFini)(void); /* cairo's fontconfig, when it has one; else NULL */
};
#undef CAIRO_LIB_POINTER

/* The functions, set once cairo_lib_load() has succeeded. */
extern struct cairo_lib cairo_lib;

/* Loads cairo (once; thread-safe): 0, or -ELIBACC with err naming the library and why. */
int cairo_lib_load(struct xp_error *err);
/* After the last cairo object is destroyed: frees the font caches cairo and fontconfig keep for
 * the process, which leak checkers (ASan's, valgrind) otherwise report as lost. */
void cairo_lib_release_caches(void);
