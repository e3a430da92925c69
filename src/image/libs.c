/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl and libarchive, loaded when first needed (libs.h). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "libs.h"

struct image_libs image_libs;

struct lib {
        const char *soname; /* the library the build linked against (CMakeLists.txt) */
        pthread_once_t once;
        int result;
        char why[200];
};

static struct lib curl_lib = {.soname = XPOOL_LIBCURL_SONAME, .once = PTHREAD_ONCE_INIT};
static struct lib archive_lib = {.soname = XPOOL_LIBARCHIVE_SONAME, .once = PTHREAD_ONCE_INIT};

/* dlopen()s lib: its handle, or NULL with lib->why set. */
static void *open_lib(struct lib *lib)
{
        void *handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);

        if (!handle) {
                snprintf(lib->why, sizeof(lib->why), "%s", dlerror());
                lib->result = -ELIBACC;
        }
        return handle;
}

/* Sets *slot to the symbol name of handle; false (with lib->why) when it has none. */
static int find(struct lib *lib, void *handle, const char *name, void **slot)
{
        *slot = dlsym(handle, name);
        if (*slot)
                return 0;
        snprintf(lib->why, sizeof(lib->why), "it has no %s", name);
        return lib->result = -ELIBACC;
}

/* Each library's functions are taken into a copy first, so that image_libs never holds half a
 * library. */
static void load_curl(void)
{
        struct image_libs fns = {0};
        void *handle = open_lib(&curl_lib);

        if (!handle)
                return;
#define FIND(f)                                                                                    \
        if (find(&curl_lib, handle, #f, (void **)&fns.f) < 0)                                      \
                return;
        IMAGE_CURL_FUNCTIONS(FIND)
#undef FIND
#define TAKE(f) image_libs.f = fns.f;
        IMAGE_CURL_FUNCTIONS(TAKE)
#undef TAKE
}

static void load_archive(void)
{
        struct image_libs fns = {0};
        void *handle = open_lib(&archive_lib);

        if (!handle)
                return;
#define FIND(f)                                                                                    \
        if (find(&archive_lib, handle, #f, (void **)&fns.f) < 0)                                   \
                return;
        IMAGE_ARCHIVE_FUNCTIONS(FIND)
#undef FIND
#define TAKE(f) image_libs.f = fns.f;
        IMAGE_ARCHIVE_FUNCTIONS(TAKE)
#undef TAKE
}

static int loaded(struct lib *lib, const char *what, struct xp_error *err)
{
        if (lib->result < 0)
                return xp_errorf(
                    err, lib->result, "cannot load %s (%s): %s", lib->soname, what, lib->why);
        return 0;
}

int image_curl_load(struct xp_error *err)
{
        pthread_once(&curl_lib.once, load_curl);
        return loaded(&curl_lib, "libcurl, for registry pulls", err);
}

int image_archive_load(struct xp_error *err)
{
        pthread_once(&archive_lib.once, load_archive);
        return loaded(&archive_lib, "libarchive, for image layers", err);
}
