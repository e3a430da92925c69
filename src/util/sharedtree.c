/* SPDX-License-Identifier: Apache-2.0 */
#include <stdatomic.h>
#include <stddef.h>

#include "xpool/sharedtree.h"

/* A place is taken (the count) before its address is stored: a reader may meet NULL there. */
static _Atomic(const void *) trees[XP_SHARED_TREES];
static atomic_size_t n_trees;

void xp_shared_tree_add(const void *tree)
{
        size_t n;

        if (!tree)
                return;
        n = atomic_fetch_add_explicit(&n_trees, 1, memory_order_acq_rel);
        if (n < XP_SHARED_TREES)
                atomic_store_explicit(&trees[n], tree, memory_order_release);
}

int xp_shared_tree_index(const void *tree)
{
        size_t n = atomic_load_explicit(&n_trees, memory_order_acquire);

        n = n < XP_SHARED_TREES ? n : XP_SHARED_TREES;
        for (size_t i = 0; tree && i < n; i++)
                if (atomic_load_explicit(&trees[i], memory_order_acquire) == tree)
                        return (int)i;
        return -1;
}
