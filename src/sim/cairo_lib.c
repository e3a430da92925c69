/* SPDX-License-Identifier: Apache-2.0 */
/* cairo, loaded when a PNG is first asked for (cairo_lib.h). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "cairo_lib.h"

struct cairo_lib cairo_lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int result;
static char why[200];

static void load(void)
{
        void *handle = dlopen(CAIRO_LIB_SONAME, RTLD_NOW | RTLD_LOCAL);

        if (!handle) {
                snprintf(why, sizeof(why), "%s", dlerror());
                result = -ELIBACC;
                return;
        }
#define CAIRO_LIB_FIND(f)                                                                          \
        if (result == 0 && !(*(void **)&cairo_lib.f = dlsym(handle, #f))) {                        \
                snprintf(why, sizeof(why), "it has no %s", #f);                                    \
                result = -ELIBACC;                                                                 \
        }
        CAIRO_LIB_FUNCTIONS(CAIRO_LIB_FIND)
#undef CAIRO_LIB_FIND
        if (result < 0)
                dlclose(handle); /* a cairo too old for us: none of its calls is used */
        else /* the handle's search covers the libraries cairo loaded: its fontconfig */
                *(void **)&cairo_lib.FcFini = dlsym(handle, "FcFini");
}

void cairo_lib_release_caches(void)
{
        cairo_lib.cairo_debug_reset_static_data();
        if (cairo_lib.FcFini)
                cairo_lib.FcFini();
}

int cairo_lib_load(struct xp_error *err)
{
        pthread_once(&once, load);
        if (result < 0)
                return xp_errorf(err,
                                 result,
                                 "cannot load %s (%s): PNG needs cairo (Debian: apt-get install "
                                 "libcairo2), or draw the curves as .svg",
                                 CAIRO_LIB_SONAME,
                                 why);
        return 0;
}
