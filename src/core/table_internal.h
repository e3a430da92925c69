/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by table.c (the Table frame, printing, durations) and the per-kind printers
 * (table_pod.c, table_node.c, table_misc.c). Each kind is a column list and a function that
 * fills one row's cells; table.c looks the kind up in a table of these.
 */

#include <jansson.h>
#include <stddef.h>
#include <time.h>

#include "xpool/macro.h"
#include "xpool/resource.h"
#include "xpool/table.h"

/* One meta.k8s.io/v1 TableColumnDefinition. */
struct table_column {
        const char *name;   /* kubectl's spelling: "Nominated Node" */
        const char *type;   /* "string" or "integer" */
        const char *format; /* "name" for the object's name column, else "" */
        const char *description;
        int priority; /* 0: always shown; 1: only with -o wide */
};

/* The wide columns of a kind with a pod template (workloads: Deployment, Job, ...). */
#define TABLE_TEMPLATE_COLUMNS                                                                     \
        {.name = "Containers",                                                                     \
         .type = "string",                                                                         \
         .description = "Names of each container in the template.",                                \
         .priority = 1},                                                                           \
        {                                                                                          \
                .name = "Images", .type = "string",                                                \
                .description = "Images referenced by each container in the template.",             \
                .priority = 1                                                                      \
        }

/*
 * Appends one cell per column to `cells` for `object` (borrowed; any JSON value, not only an
 * object: every field is looked up defensively). May add members other than "cells" to `row`
 * (a Pod's "conditions"). 0 or -ENOMEM.
 */
typedef int (*table_row_fn)(const json_t *object, time_t now, json_t *cells, json_t *row);

struct xp_table_kind {
        const char *kind;
        const struct table_column *columns;
        size_t n_columns;
        table_row_fn row;
};

/* The NAME and AGE columns of a namespaced kind, in kube-apiserver's words (ObjectMeta's
 * descriptions), for the per-kind column lists. */
#define TABLE_NAME_COLUMN                                                                          \
        {                                                                                          \
                .name = "Name", .type = "string", .format = "name",                                \
                .description = "Name must be unique within a namespace."                           \
        }
#define TABLE_AGE_COLUMN                                                                                          \
        {                                                                                                         \
                .name = "Age", .type = "string",                                                                  \
                .description =                                                                                    \
                    "CreationTimestamp is a timestamp representing the server time when this object was created." \
        }

extern const struct xp_table_kind xp_table_pod;
extern const struct xp_table_kind xp_table_node;
extern const struct xp_table_kind xp_table_event;
extern const struct xp_table_kind xp_table_namespace;
extern const struct xp_table_kind xp_table_lease;
extern const struct xp_table_kind xp_table_default;

static inline void table_json_decrefp(json_t **p)
{
        json_decref(*p);
}

/* ---- lookups that never fail: NULL / 0 / false for anything missing or of another type --- */

/* The value at a dotted path of object members ("status.nodeInfo.kubeletVersion"). */
const json_t *table_get(const json_t *object, const char *path);
/* The string at path, or NULL. */
const char *table_str(const json_t *object, const char *path);
/* The string at path, or "" (Go's zero value, which kubectl's printers see). */
const char *table_str0(const json_t *object, const char *path);
/* The integer at path, or 0. */
int64_t table_int(const json_t *object, const char *path);
/* True only for a JSON true at path. */
bool table_bool(const json_t *object, const char *path);
/* The array at path, or NULL (json_array_size(NULL) is 0, json_array_get(NULL, i) NULL). */
const json_t *table_array(const json_t *object, const char *path);
/* The RFC 3339 timestamp at path in seconds, or 0 when missing or malformed. */
int64_t table_time(const json_t *object, const char *path);

/* ---- cells: each appends one cell, 0 or -ENOMEM ------------------------------------------ */

/* A string cell; NULL appends "". */
int table_cell_str(json_t *cells, const char *s);
/* A string cell, "<none>" for NULL or "". */
int table_cell_or_none(json_t *cells, const char *s);
int table_cell_int(json_t *cells, int64_t value);
int table_cell_printf(json_t *cells, const char *fmt, ...) _printf_(2, 3);
/* The age of the timestamp at path, "<unknown>" when missing or malformed. */
int table_cell_age(json_t *cells, const json_t *object, const char *path, time_t now);
/* "<unknown>" when seconds is 0 (Go's zero time), else the human duration until now. */
void table_since(int64_t seconds, time_t now, char buf[static XP_DURATION_MAX]);

/* ---- resources ------------------------------------------------------------------------------ */

/* A quantity written as a JSON string or number; -EINVAL for anything else. */
int table_quantity(const json_t *value, struct xp_quantity *ret);

/*
 * Reads the extended resources (nvidia.com/gpu, ...) of a ResourceList-shaped JSON object into
 * *ret (which must be empty). Quantities may be strings or numbers. -EINVAL when one is
 * malformed or not a quantity, -ENOMEM; *ret is left empty on failure.
 */
int table_extended_resources(const json_t *list, struct xp_resource_list *ret);

/*
 * A DEVICES cell: "nvidia.com/gpu=1,vendor.com/npu=2" (sorted by name), "<none>" when the list
 * is empty (or only zeros and skip_zero). 0 or -ENOMEM.
 */
int table_cell_resources(json_t *cells, const struct xp_resource_list *list, bool skip_zero);
