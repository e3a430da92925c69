/* SPDX-License-Identifier: Apache-2.0 */
/* A vendor library's calls loaded into a table of function pointers (dl_table.h). */
#include <dlfcn.h>
#include <string.h>

#include "dl_table.h"
#include "xpool/log.h"

void *xp_dl_load(const char *path,
                 const char *tag,
                 const struct xp_dl_symbol *symbols,
                 size_t n_symbols,
                 void *table,
                 const char *lost)
{
        void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);

        if (!dl) {
                const char *error = dlerror();

                xp_debug(tag, "cannot load %s: %s", path, error);
                if (lost)
                        xp_log(LOG_WARNING,
                               "%s: cannot load %s (%s): %s report no live figures",
                               tag,
                               path,
                               error ? error : "dlopen failed",
                               lost);
                return NULL;
        }
        for (size_t i = 0; i < n_symbols; i++) {
                const struct xp_dl_symbol *s = &symbols[i];
                void *fn = dlsym(dl, s->name);

                if (!fn && s->required) {
                        xp_debug(tag, "%s lacks %s", path, s->name);
                        if (lost)
                                xp_log(LOG_WARNING,
                                       "%s: cannot load %s (it lacks %s): %s report no live "
                                       "figures",
                                       tag,
                                       path,
                                       s->name,
                                       lost);
                        dlclose(dl);
                        return NULL;
                }
                if (!fn)
                        xp_debug(tag, "%s lacks %s, its field stays empty", path, s->name);
                memcpy((char *)table + s->offset, &fn, sizeof(fn));
        }
        return dl;
}
