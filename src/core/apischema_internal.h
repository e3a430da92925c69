/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the API schema's reader (apischema.c) and its documentation (apischema_doc.c). */

#include <stddef.h>

#include "xpool/apischema.h"

/* Everything a schema holds beyond its text lives in blocks freed together. */
struct arena_block {
        struct arena_block *next;
        size_t used, size;
        max_align_t data[];
};

struct xp_apischema {
        char *text; /* a copy, cut into NUL-terminated names in place */
        struct xp_apitype *types;
        size_t n_types;
        const struct xp_apitype **sorted; /* by name */
        struct arena_block *arena;
};

/* Memory that lives as long as the schema (aligned for any type); NULL without memory. */
void *xp_apischema_alloc(struct xp_apischema *schema, size_t size);
