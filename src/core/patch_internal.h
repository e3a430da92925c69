/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the patch_*.c files; not part of the public API (include/core/xpool/patch.h is).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"

/* JSON equality as RFC 6902 "test" defines it: numbers compare by value (1 == 1.0). */
bool xp_patch_value_equal(const json_t *a, const json_t *b);

/* -E2BIG with "<what>: nesting deeper than 100 levels" when value is too deep, else 0. */
int xp_patch_check_depth(const json_t *value, const char *what, struct xp_error *err);

/* Each applies its kind of patch to a deep copy of original; see xp_patch_apply(). */
int xp_patch_json_apply(const json_t *original,
                        const json_t *patch,
                        json_t **ret,
                        struct xp_error *err);
int xp_patch_merge_apply(const json_t *original, const json_t *patch, json_t **ret);
/* share: the result keeps original's members the patch leaves alone (xp_patch_apply_sharing()) */
int xp_patch_strategic_apply(const char *kind,
                             const json_t *original,
                             const json_t *patch,
                             bool share,
                             json_t **ret,
                             struct xp_error *err);

/* The bytes of a strategic merge's schema path ("spec.containers[].env"), its NUL included. */
#define XP_PATCH_PATH_MAX 512

/* Appends a then b to path (XP_PATCH_PATH_MAX bytes), cut as snprintf() cuts: path's length
 * before, to cut it back to. */
size_t xp_patch_path_append(char *path, const char *a, const char *b);

/*
 * Whether value, a strategic merge patch's value at path (its schema path, which the walk extends
 * and restores) merging into nothing, merges into a value equal to itself (patch_plain.c): the
 * merge may then take value as it is.
 */
bool xp_patch_strategic_plain(const char *kind, char *path, const json_t *value);
