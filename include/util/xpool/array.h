/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Sorted arrays of structs keyed by a `char *` member: the shape of every map in the model. */

#include <stdbool.h>
#include <stddef.h>

/*
 * Binary search for key in items[0..n), each `size` bytes with its `char *` key at key_offset.
 * Returns the index of the match (*ret_found = true) or where key would be inserted.
 */
size_t xp_sorted_find(
    const void *items, size_t n, size_t size, size_t key_offset, const char *key, bool *ret_found);

/*
 * Opens a zeroed slot at index in *items (n elements of `size` bytes), growing the array.
 * Returns a pointer to the slot and increments *n, or NULL on -ENOMEM (nothing changed).
 */
void *xp_array_insert(void **items, size_t *n, size_t size, size_t index);

/* Removes the element at index (the caller has released what it owned). */
void xp_array_remove(void *items, size_t *n, size_t size, size_t index);

/*
 * The first position i (in order) whose names[i] equals an earlier one, in O(n log n); NULL names
 * are ignored. Returns 1 with *ret_index set, 0 when all are distinct, or -ENOMEM.
 */
int xp_first_duplicate(const char *const *names, size_t n, size_t *ret_index);

/* Sorts a copy of names for xp_sorted_contains(); the caller frees the result. NULL on -ENOMEM. */
const char **xp_sorted_copy(const char *const *names, size_t n);

bool xp_sorted_contains(const char *const *sorted, size_t n, const char *name);
