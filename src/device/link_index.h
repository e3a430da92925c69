/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A hash index over an inventory's links by unordered device pair, so that looking a pair up is
 * O(1) instead of a scan: discovery checks every pair before adding it, and the matrix prints
 * every pair, which would otherwise cost O(n^4) for n devices.
 */

#include <stddef.h>
#include <stdint.h>

#include "xpool/object.h"

struct xp_link_index {
        struct link_slot {
                uint64_t hash;
                size_t link; /* index into inventory->links, + 1; 0 marks an empty slot */
        } * slots;
        size_t capacity; /* a power of two */
        size_t indexed;  /* links [0, indexed) are in the index */
};

/* Indexes the links appended since the last call. 0 or -ENOMEM (the index is then unchanged). */
int xp_link_index_update(struct xp_link_index *index, const struct xp_node_inventory *inventory);

/* The link between a and b in either order, or NULL. The index must be up to date. */
const struct xp_device_link *xp_link_index_find(const struct xp_link_index *index,
                                                const struct xp_node_inventory *inventory,
                                                const char *a,
                                                const char *b);

void xp_link_index_done(struct xp_link_index *index);
