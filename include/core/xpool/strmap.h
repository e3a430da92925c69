/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * String -> string maps for labels, annotations and node selectors. Entries are sorted by key
 * (Kubernetes prints maps in key order) and keys are unique.
 */

#include <stddef.h>

struct xp_strmap_entry {
        char *key;   /* owned */
        char *value; /* owned */
};

struct xp_strmap {
        struct xp_strmap_entry *items; /* owned, sorted by key */
        size_t n;
};

void xp_strmap_done(struct xp_strmap *map);

/* The value for key (borrowed), or NULL. */
const char *xp_strmap_get(const struct xp_strmap *map, const char *key);

/* Inserts or replaces; copies key and value. 0 or -ENOMEM (map unchanged). */
int xp_strmap_set(struct xp_strmap *map, const char *key, const char *value);

/* Removes key if present. Returns 1 when removed, 0 when absent. */
int xp_strmap_remove(struct xp_strmap *map, const char *key);

/* Deep copy into *ret (which must be empty). 0 or -ENOMEM (ret stays empty). */
int xp_strmap_copy(const struct xp_strmap *src, struct xp_strmap *ret);
