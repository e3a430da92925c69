/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A vendor library's calls loaded into a table of function pointers (NVML, DCMI). */

#include <stdbool.h>
#include <stddef.h>

struct xp_dl_symbol {
        const char *name;
        size_t offset; /* of the function pointer in the table */
        bool required;
};

#define XP_DL_SYMBOL(type, n, member, req)                                                         \
        {                                                                                          \
                .name = n, .offset = offsetof(type, member), .required = req                       \
        }

/*
 * dlopen()s path and fills table's pointers from symbols (NULL for an optional one the library
 * lacks): the handle, or NULL when it cannot be loaded or lacks a required call. That is logged
 * at debug under tag, or, where lost names what goes without the library ("Cambricon MLUs"), as
 * one warning naming the file and why: "TAG: cannot load PATH (WHY): LOST report no live figures".
 */
void *xp_dl_load(const char *path,
                 const char *tag,
                 const struct xp_dl_symbol *symbols,
                 size_t n_symbols,
                 void *table,
                 const char *lost);
