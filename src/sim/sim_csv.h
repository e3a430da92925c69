/* SPDX-License-Identifier: Apache-2.0 */
/* The CSV reading of the trace's files: columns by the header's names, rows checked one by one. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/error.h"

/* A line longer than this is refused (the trace's are under 200 bytes). */
#define SIM_LINE_MAX 65536
/* Rows of one file, beyond which it is refused before more memory is taken. */
#define SIM_ROWS_MAX 2000000
/* Any integer field above this is refused: sums over SIM_ROWS_MAX rows stay within int64. */
#define SIM_VALUE_MAX  1000000000000LL
#define SIM_FIELDS_MAX 64

struct sim_column {
        const char *name;
        bool required;
};

struct sim_table {
        const struct sim_column *columns;
        size_t n_columns;
        size_t size;  /* of one item */
        void **items; /* grown as rows come; rows already there are kept */
        size_t *n;
        /* fills out from the row's fields; col[k]: the field of columns[k], -1 when absent */
        int (*row)(char **f,
                   const ssize_t *col,
                   const char *path,
                   size_t line,
                   void *out,
                   struct xp_error *err);
        void (*done)(void *item);
};

/* An integer from min to SIM_VALUE_MAX; "12.0" reads as 12, "12.5" is refused. */
int sim_csv_int(const char *text, int64_t min, int64_t *ret);

/* Reads path's rows into table; on an error, nothing is added and the error says file:line. */
int sim_csv_read(const char *path, struct sim_table *table, struct xp_error *err);
