/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The few keys of each container's spec.json that the runtime reads after its start
 * (speccache.c). Not locked: the runtime's lock guards it. */

#include <jansson.h>
#include <sys/stat.h>

#include "xpool/map.h"

struct speccache {
        struct xp_map entries; /* state directory -> struct speccache_entry */
};

/* The kept keys of dir's spec (a new reference), while st is still the file they were read from;
 * else NULL. */
json_t *speccache_get(struct speccache *c, const char *dir, const struct stat *st);
/* Keeps spec's keys, read from the file st. */
void speccache_put(struct speccache *c, const char *dir, const struct stat *st, const json_t *spec);
/* Forgets dir's: its spec is written again, or removed. */
void speccache_forget(struct speccache *c, const char *dir);
void speccache_done(struct speccache *c);
