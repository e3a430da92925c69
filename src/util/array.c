/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
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

struct ordered_name {
        const char *name;
        size_t index;
};

static int compare_ordered(const void *a, const void *b)
{
        const struct ordered_name *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        if (c)
                return c;
        return (x->index > y->index) - (x->index < y->index);
}

int xp_first_duplicate(const char *const *names, size_t n, size_t *ret_index)
{
        struct ordered_name *sorted = calloc(n ? n : 1, sizeof(*sorted));
        size_t m = 0, first = SIZE_MAX;

        if (!sorted)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (names[i])
                        sorted[m++] = (struct ordered_name){names[i], i};
        qsort(sorted, m, sizeof(*sorted), compare_ordered);
        /* within a run of equal names every entry but the earliest repeats one before it */
        for (size_t i = 1; i < m; i++)
                if (strcmp(sorted[i].name, sorted[i - 1].name) == 0 && sorted[i].index < first)
                        first = sorted[i].index;
        free(sorted);
        if (first == SIZE_MAX)
                return 0;
        *ret_index = first;
        return 1;
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **xp_sorted_copy(const char *const *names, size_t n)
{
        const char **copy = calloc(n ? n : 1, sizeof(*copy));

        if (!copy)
                return NULL;
        memcpy(copy, names, n * sizeof(*copy));
        qsort(copy, n, sizeof(*copy), compare_names);
        return copy;
}

bool xp_sorted_contains(const char *const *sorted, size_t n, const char *name)
{
        return name && bsearch(&name, sorted, n, sizeof(*sorted), compare_names) != NULL;
}
