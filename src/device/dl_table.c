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
                 void *table)
{
        void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);

        if (!dl) {
                xp_debug(tag, "cannot load %s: %s", path, dlerror());
                return NULL;
        }
        for (size_t i = 0; i < n_symbols; i++) {
                const struct xp_dl_symbol *s = &symbols[i];
                void *fn = dlsym(dl, s->name);

                if (!fn && s->required) {
                        xp_debug(tag, "%s lacks %s", path, s->name);
                        dlclose(dl);
                        return NULL;
                }
                if (!fn)
                        xp_debug(tag, "%s lacks %s, its field stays empty", path, s->name);
                memcpy((char *)table + s->offset, &fn, sizeof(fn));
        }
        return dl;
}
