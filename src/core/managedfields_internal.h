/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between managedfields.c (sets and paths) and patch_apply.c (the apply itself). */

#include <stdbool.h>
#include <sys/types.h>

#include "xpool/managedfields.h"

#define XP_FIELDSET_MAX_DEPTH 128 /* above the object depth bound (XP_OBJECT_MAX_DEPTH) */

/* "k:{...}" of an item of a keyed list field, "v:<json>" of an item of a set; NULL no memory. */
char *xp_fieldset_item_key(const struct xp_apifield *f, const json_t *item);
char *xp_fieldset_set_key(const json_t *item);

/* What xp_fieldset_of() makes config's set from (its members shared: do not change it), and the
 * set of such a source. NULL without memory. */
json_t *xp_fieldset_source(const json_t *config);
json_t *xp_fieldset_of_source(const struct xp_apitype *type, const json_t *source);
/* Whether every path of source's set would find its value in source (managed_same.c); false
 * where that is not sure. */
bool xp_fieldset_names_all(const struct xp_apitype *type, const json_t *source);

/* Calls visit with the path of every field the set owns (whole or, with ".", as an item). */
typedef int (*xp_fieldset_visit)(const char *const *path, size_t n, void *data);
int xp_fieldset_walk(const json_t *set, xp_fieldset_visit visit, void *data);

/* Whether set owns path (itself, as an item, or through an ancestor owned whole). */
bool xp_fieldset_has(const json_t *set, const char *const *path, size_t n);
/* Drops path from set, and the parents that leaves empty. */
void xp_fieldset_remove(json_t *set, const char *const *path, size_t n);

/* The value at path in object (borrowed), or NULL; the index of a list item, or -1. */
json_t *xp_fieldset_value_at(const json_t *object, const char *const *path, size_t n);
ssize_t xp_fieldset_find_item(const json_t *array, const char *element);
/* Removes the value at path from object, if there. */
void xp_fieldset_remove_value(json_t *object, const char *const *path, size_t n);

/* ".spec.containers[name=\"c\"].image"; NULL without memory. */
char *xp_fieldset_path_string(const char *const *path, size_t n);
