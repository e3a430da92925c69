/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_table_build() and xp_table_print(). The first byte picks the kind (low three bits)
 * and the print flags (bit 3: wide, bit 4: no headers, bit 5: with namespace); the rest is JSON:
 * a list of objects (anything else is wrapped in a one-item list). Checks that
 *
 *   - building never fails but for -ENOMEM, and every row has one cell per column;
 *   - our own Table always prints, one line per row plus the header;
 *   - the input printed as a foreign Table either prints or fails with -EINVAL and a message,
 *     having written nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xpool/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static const char *const kinds[] = {
    "Pod", "Node", "Event", "Namespace", "Lease", "Other", NULL, "Pod"};

static size_t count_lines(const char *text, size_t len)
{
        size_t n = 0;

        for (size_t i = 0; i < len; i++)
                n += text[i] == '\n';
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        bool wide, no_headers, with_namespace;
        json_t *input, *items, *table = NULL;
        struct xp_error err = {0};
        const char *kind;
        char *text = NULL;
        size_t len = 0, i, n_columns;
        FILE *f;
        json_t *row;
        int r;

        if (size < 1)
                return 0;
        kind = kinds[data[0] & 7];
        wide = data[0] & 8;
        no_headers = data[0] & 16;
        with_namespace = data[0] & 32;
        input =
            json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!input)
                return 0;
        items = json_is_array(input) ? json_incref(input) : json_pack("[O]", input);
        check(items != NULL);

        r = xp_table_build(kind, items, "1", 1800000000, XP_TABLE_INCLUDE_METADATA, &table);
        check(r == 0);
        n_columns = json_array_size(json_object_get(table, "columnDefinitions"));
        check(json_array_size(json_object_get(table, "rows")) == json_array_size(items));
        json_array_foreach(json_object_get(table, "rows"), i, row)
            check(json_array_size(json_object_get(row, "cells")) == n_columns);

        f = open_memstream(&text, &len);
        check(f != NULL);
        r = xp_table_print(f, table, wide, no_headers, with_namespace, &err);
        check(fclose(f) == 0);
        check(r == 0);
        if (json_array_size(items) > 0)
                check(count_lines(text, len) == json_array_size(items) + (no_headers ? 0 : 1));
        else
                check(len == 0);
        free(text);

        /* the input itself as somebody else's Table */
        text = NULL;
        len = 0;
        f = open_memstream(&text, &len);
        check(f != NULL);
        r = xp_table_print(f, input, wide, no_headers, with_namespace, &err);
        check(fclose(f) == 0);
        check(r == 0 || (r == -EINVAL && err.code == r && err.msg[0] != '\0' && len == 0));
        free(text);

        json_decref(table);
        json_decref(items);
        json_decref(input);
        return 0;
}
