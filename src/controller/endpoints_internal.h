/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the endpoints controller's computations share (endpoints_calc.c, endpoints_mirror.c). */

#include <jansson.h>
#include <stddef.h>

/* "IPv4", "IPv6", or NULL for what is neither. */
const char *endpoints_family_of(const char *ip);

/* NAME- and five letters from uid and key (FNV-1a), as a generated name looks, the same for the
 * same input: a recomputation names the same slices. */
void endpoints_generated_name(
    const char *name, const char *uid, const char *key, char *buf, size_t size);

/*
 * The slices (a new JSON array; NULL: -ENOMEM or r < 0) that slice_of_group makes of each of
 * groups' members (taken) from source; r: the error of making groups, if any.
 */
json_t *endpoints_slices_of_groups(json_t *groups,
                                   int r,
                                   json_t *(*slice_of_group)(const json_t *source,
                                                             const char *key,
                                                             const json_t *group),
                                   const json_t *source);

/* [the controller reference to owner, a v1 object of kind] (new; NULL: -ENOMEM). */
json_t *endpoints_owner_ref(const json_t *owner, const char *kind);
