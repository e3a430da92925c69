/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The dashboard's files, compiled in from ui/ by cmake/ui_embed.cmake (cmake/ui.cmake). */

#include <stddef.h>

struct ui_asset {
        const char *name; /* "index.html" */
        const char *type; /* its Content-Type */
        const char *data; /* size bytes, then a NUL */
        size_t size;
        const char *etag; /* quoted, as the header carries it */
};

extern const struct ui_asset ui_assets[];
extern const size_t ui_assets_n;
