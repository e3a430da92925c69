/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/array.h"

size_t xp_sorted_find(
    const void *items, size_t n, size_t size, size_t key_offset, const char *key, bool *ret_found)
{
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const char *k;
                int c;

                memcpy(&k, (const char *)items + mid * size + key_offset, sizeof(k));
                c = strcmp(key, k);
                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        *ret_found = false;
        return lo;
}

void *xp_array_insert(void **items, size_t *n, size_t size, size_t index)
{
        char *grown;

        if (*n >= SIZE_MAX / size - 1)
                return NULL;
        grown = realloc(*items, (*n + 1) * size);
        if (!grown)
                return NULL;
        memmove(grown + (index + 1) * size, grown + index * size, (*n - index) * size);
        memset(grown + index * size, 0, size);
        *items = grown;
        (*n)++;
        return grown + index * size;
}

void xp_array_remove(void *items, size_t *n, size_t size, size_t index)
{
        char *base = items;

        memmove(base + index * size, base + (index + 1) * size, (*n - index - 1) * size);
        (*n)--;
}
