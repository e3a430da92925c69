/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Table frame (xp_table_build), kubectl's text rendering of any Table (xp_table_print), human
 * durations, and the defensive lookups the per-kind printers share.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table_internal.h"
#include "xpool/kind.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

/* kubectl's tabwriter: minimum cell width 6, padding 3. */
#define PRINT_MIN_WIDTH 6
#define PRINT_PADDING   3

/* ---- lookups -------------------------------------------------------------------------------- */

const json_t *table_get(const json_t *object, const char *path)
{
        const json_t *v = object;
        const char *p = path;

        for (;;) {
                const char *dot = strchr(p, '.');
                size_t len = dot ? (size_t)(dot - p) : strlen(p);
                char key[64];

                /* paths are our own literals; json_object_getn() would need jansson 2.14 */
                if (!json_is_object(v) || len >= sizeof(key))
                        return NULL;
                memcpy(key, p, len);
                key[len] = '\0';
                v = json_object_get(v, key);
                if (!v || !dot)
                        return v;
                p = dot + 1;
        }
}

const char *table_str(const json_t *object, const char *path)
{
        return json_string_value(table_get(object, path));
}

const char *table_str0(const json_t *object, const char *path)
{
        const char *s = table_str(object, path);

        return s ? s : "";
}

int64_t table_int(const json_t *object, const char *path)
{
        const json_t *v = table_get(object, path);

        return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

bool table_bool(const json_t *object, const char *path)
{
        return json_is_true(table_get(object, path));
}

const json_t *table_array(const json_t *object, const char *path)
{
        const json_t *v = table_get(object, path);

        return json_is_array(v) ? v : NULL;
}

int64_t table_time(const json_t *object, const char *path)
{
        const char *s = table_str(object, path);
        int64_t t;

        if (!s || xp_time_parse_rfc3339(s, &t) < 0)
                return 0;
        return t;
}

/* ---- durations ------------------------------------------------------------------------------ */

void table_since(int64_t seconds, time_t now, char buf[static XP_DURATION_MAX])
{
        if (seconds == 0)
                snprintf(buf, XP_DURATION_MAX, "<unknown>");
        else
                xp_duration_human((int64_t)now - seconds, buf, XP_DURATION_MAX);
}

void xp_table_age(const json_t *timestamp, time_t now, char *buf, size_t size)
{
        char text[XP_DURATION_MAX];
        const char *s = json_string_value(timestamp);
        int64_t t;

        if (!s || xp_time_parse_rfc3339(s, &t) < 0)
                t = 0;
        table_since(t, now, text);
        if (size > 0)
                snprintf(buf, size, "%s", text);
}

/* ---- cells ---------------------------------------------------------------------------------- */

static int append_new(json_t *cells, json_t *value)
{
        /* json_array_append_new() releases value on failure */
        if (!value || json_array_append_new(cells, value) < 0)
                return -ENOMEM;
        return 0;
}

int table_cell_str(json_t *cells, const char *s)
{
        size_t len = s ? strlen(s) : 0;

        /* strings come from jansson values, valid UTF-8, but a fixed buffer may have cut one */
        while (len > 0 && !xp_utf8_valid(s, len))
                len--;
        return append_new(cells, json_stringn(s ? s : "", len));
}

int table_cell_or_none(json_t *cells, const char *s)
{
        return table_cell_str(cells, s && s[0] ? s : "<none>");
}

int table_cell_int(json_t *cells, int64_t value)
{
        return append_new(cells, json_integer((json_int_t)value));
}

int table_cell_printf(json_t *cells, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0) {
                s = NULL;
                return -ENOMEM;
        }
        return table_cell_str(cells, s);
}

int table_cell_age(json_t *cells, const json_t *object, const char *path, time_t now)
{
        char age[XP_DURATION_MAX];

        table_since(table_time(object, path), now, age);
        return table_cell_str(cells, age);
}

/* ---- resources ------------------------------------------------------------------------------ */

int table_quantity(const json_t *value, struct xp_quantity *ret)
{
        if (json_is_string(value))
                return xp_quantity_parse(json_string_value(value), ret, NULL);
        if (json_is_integer(value)) {
                *ret = xp_quantity_from_int((int64_t)json_integer_value(value));
                return 0;
        }
        if (json_is_real(value))
                return xp_quantity_from_double(json_real_value(value), ret, NULL);
        return -EINVAL;
}

int table_extended_resources(const json_t *list, struct xp_resource_list *ret)
{
        struct xp_resource_list result = {0};
        const char *name;
        json_t *value;
        int r;

        if (!json_is_object(list))
                return 0;
        json_object_foreach((json_t *)list, name, value)
        {
                struct xp_quantity q;

                if (!xp_resource_name_is_extended(name))
                        continue;
                r = table_quantity(value, &q);
                if (r >= 0)
                        r = xp_resource_list_set(&result, name, &q);
                if (r < 0) {
                        xp_resource_list_done(&result);
                        return r;
                }
        }
        *ret = result;
        return 0;
}

int table_cell_resources(json_t *cells, const struct xp_resource_list *list, bool skip_zero)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        bool any = false;
        FILE *f;

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < list->n; i++) {
                char q[XP_QUANTITY_STRING_MAX];

                if (skip_zero && xp_quantity_is_zero(&list->items[i].quantity))
                        continue;
                fprintf(f,
                        "%s%s=%s",
                        any ? "," : "",
                        list->items[i].name,
                        xp_quantity_format(&list->items[i].quantity, q));
                any = true;
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        return table_cell_str(cells, any ? text : "<none>");
}

/* ---- building ------------------------------------------------------------------------------- */

static const struct xp_table_kind *const table_kinds[] = {
    &xp_table_pod,
    &xp_table_node,
    &xp_table_event,
    &xp_table_namespace,
    &xp_table_lease,
};

/*
 * The printers above, then the table hook of a kind of the kinds table (xpool/kind.h). Two
 * groups serve a kind named PodGroup: the items' apiVersion says which (a list without items
 * prints no row, so any of them will do).
 */
static const struct xp_table_kind *kind_lookup(const char *kind, const json_t *items)
{
        const char *api_version = table_str(json_array_get(items, 0), "apiVersion");
        const struct xp_kind *k;

        for (size_t i = 0; kind && i < XP_ELEMENTSOF(table_kinds); i++)
                if (strcmp(table_kinds[i]->kind, kind) == 0)
                        return table_kinds[i];
        k = api_version ? xp_kind_by_api_version(api_version, kind) : NULL;
        if (!k)
                k = xp_kind_by_name(kind);
        return k && k->table ? k->table : &xp_table_default;
}

static json_t *build_columns(const struct xp_table_kind *kind)
{
        _cleanup_(table_json_decrefp) json_t *columns = json_array();

        if (!columns)
                return NULL;
        for (size_t i = 0; i < kind->n_columns; i++) {
                const struct table_column *c = &kind->columns[i];
                json_t *column = json_pack("{s:s, s:s, s:s, s:s, s:i}",
                                           "name",
                                           c->name,
                                           "type",
                                           c->type,
                                           "format",
                                           c->format ? c->format : "",
                                           "description",
                                           c->description,
                                           "priority",
                                           c->priority);

                if (append_new(columns, column) < 0)
                        return NULL;
        }
        return TAKE_PTR(columns);
}

/* rows[].object for item, or NULL in *ret for XP_TABLE_INCLUDE_NONE. */
static int build_row_object(const json_t *item, enum xp_table_include include, json_t **ret)
{
        const json_t *metadata;
        json_t *copy;

        switch (include) {
        case XP_TABLE_INCLUDE_OBJECT:
                copy = json_deep_copy(item);
                if (!copy)
                        return -ENOMEM;
                *ret = copy;
                return 0;
        case XP_TABLE_INCLUDE_METADATA:
                metadata = table_get(item, "metadata");
                copy = json_is_object(metadata) ? json_deep_copy(metadata) : json_object();
                if (!copy)
                        return -ENOMEM;
                /* "o": json_pack() takes the reference, also when it fails */
                *ret = json_pack("{s:s, s:s, s:o}",
                                 "kind",
                                 "PartialObjectMetadata",
                                 "apiVersion",
                                 "meta.k8s.io/v1",
                                 "metadata",
                                 copy);
                return *ret ? 0 : -ENOMEM;
        case XP_TABLE_INCLUDE_NONE:
        default:
                *ret = NULL;
                return 0;
        }
}

static int build_row(const struct xp_table_kind *kind,
                     const json_t *item,
                     time_t now,
                     enum xp_table_include include,
                     json_t *rows)
{
        _cleanup_(table_json_decrefp) json_t *row = json_object();
        json_t *cells, *object = NULL;
        int r;

        if (!row)
                return -ENOMEM;
        /* json_object_set_new() releases cells when it fails */
        cells = json_array();
        if (!cells || json_object_set_new(row, "cells", cells) < 0)
                return -ENOMEM;
        r = kind->row(item, now, cells, row);
        if (r < 0)
                return r;
        r = build_row_object(item, include, &object);
        if (r < 0)
                return r;
        if (object && json_object_set_new(row, "object", object) < 0)
                return -ENOMEM;
        return append_new(rows, TAKE_PTR(row));
}

int xp_table_build(const char *kind,
                   const json_t *items,
                   const char *list_version,
                   time_t now,
                   enum xp_table_include include,
                   json_t **ret)
{
        const struct xp_table_kind *k = kind_lookup(kind, items);
        _cleanup_(table_json_decrefp) json_t *table = NULL;
        json_t *metadata = json_object(), *columns = build_columns(k), *rows = json_array();
        size_t i;
        int r;

        /* "o" takes the references, also when json_pack() fails */
        table = json_pack("{s:s, s:s, s:o*, s:o*, s:o*}",
                          "kind",
                          "Table",
                          "apiVersion",
                          "meta.k8s.io/v1",
                          "metadata",
                          metadata,
                          "columnDefinitions",
                          columns,
                          "rows",
                          rows);
        if (!table || !metadata || !columns || !rows)
                return -ENOMEM;
        if (list_version &&
            json_object_set_new(metadata, "resourceVersion", json_string(list_version)) < 0)
                return -ENOMEM;

        if (json_is_array(items))
                for (i = 0; i < json_array_size(items); i++) {
                        r = build_row(k, json_array_get(items, i), now, include, rows);
                        if (r < 0)
                                return r;
                }

        *ret = TAKE_PTR(table);
        return 0;
}

/* ---- printing ------------------------------------------------------------------------------- */

/* UTF-8 characters in s: what a terminal (and Go's tabwriter) counts. */
static size_t text_width(const char *s)
{
        size_t n = 0;

        for (; *s; s++)
                if (((unsigned char)*s & 0xC0) != 0x80)
                        n++;
        return n;
}

static void write_escaped(FILE *f, const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c < 0x20 || c == 0x7f) {
                        fputc('^', f);
                        fputc(c ^ 0x40, f);
                } else
                        fputc(c, f);
        }
}

/* A cell as kubectl prints it, in a new string (NULL on -ENOMEM). */
static char *format_cell(const json_t *cell)
{
        char *text = NULL, *dumped;
        size_t len = 0;
        FILE *f;

        f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        switch (json_typeof(cell)) {
        case JSON_STRING: {
                const char *s = json_string_value(cell);
                size_t n = json_string_length(cell), cut = 0;

                /* embedded NULs do not end the string: they are escaped like other controls */
                while (cut < n && s[cut] != '\n' && s[cut] != '\r' && s[cut] != '\f')
                        cut++;
                write_escaped(f, s, cut);
                if (cut < n)
                        fputs("...", f);
                break;
        }
        case JSON_INTEGER:
                fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(cell));
                break;
        case JSON_NULL:
                break;
        default:
                dumped = json_dumps(cell, JSON_COMPACT | JSON_ENCODE_ANY);
                if (dumped)
                        write_escaped(f, dumped, strlen(dumped));
                free(dumped);
                if (!dumped) {
                        fclose(f);
                        free(text);
                        return NULL;
                }
                break;
        }
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

struct print_grid {
        char **cells;   /* n_lines * n_columns, NULL where a line has no such cell */
        size_t *counts; /* cells on each line */
        size_t n_lines;
        size_t n_columns;
};

static void print_grid_done(struct print_grid *g)
{
        if (g->cells)
                for (size_t i = 0; i < g->n_lines * g->n_columns; i++)
                        free(g->cells[i]);
        free(g->cells);
        free(g->counts);
}

static int check_table(const json_t *table, struct xp_error *err)
{
        const json_t *kind, *columns, *rows, *v;
        size_t i;

        if (!json_is_object(table))
                return xp_errorf(err, -EINVAL, "not a Table: not a JSON object");
        kind = json_object_get(table, "kind");
        if (!json_is_string(kind) || strcmp(json_string_value(kind), "Table") != 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "not a Table: kind is %s",
                                 json_is_string(kind) ? json_string_value(kind)
                                                      : "missing or not a string");
        columns = json_object_get(table, "columnDefinitions");
        if (!json_is_array(columns))
                return xp_errorf(
                    err, -EINVAL, "not a Table: columnDefinitions is missing or not a list");
        json_array_foreach(columns, i, v)
        {
                const json_t *priority = json_object_get(v, "priority");

                if (!json_is_object(v))
                        return xp_errorf(
                            err, -EINVAL, "columnDefinitions[%zu] is not an object", i);
                if (!json_is_string(json_object_get(v, "name")))
                        return xp_errorf(
                            err, -EINVAL, "columnDefinitions[%zu].name is not a string", i);
                if (priority && !json_is_null(priority) && !json_is_integer(priority))
                        return xp_errorf(
                            err, -EINVAL, "columnDefinitions[%zu].priority is not an integer", i);
        }
        rows = json_object_get(table, "rows");
        if (rows && !json_is_null(rows) && !json_is_array(rows))
                return xp_errorf(err, -EINVAL, "not a Table: rows is not a list");
        json_array_foreach(rows, i, v)
        {
                const json_t *cells = json_object_get(v, "cells");

                if (!json_is_object(v))
                        return xp_errorf(err, -EINVAL, "rows[%zu] is not an object", i);
                if (cells && !json_is_null(cells) && !json_is_array(cells))
                        return xp_errorf(err, -EINVAL, "rows[%zu].cells is not a list", i);
        }
        return 0;
}

static int set_cell(struct print_grid *g, size_t line, size_t column, char *text)
{
        if (!text)
                return -ENOMEM;
        g->cells[line * g->n_columns + column] = text;
        g->counts[line] = column + 1;
        return 0;
}

static char *upper(const char *s)
{
        char *u = strdup(s);

        for (char *p = u; p && *p; p++)
                if (*p >= 'a' && *p <= 'z')
                        *p = (char)(*p - 'a' + 'A');
        return u;
}

static char *escaped_copy(const char *s)
{
        json_t *string = json_string_nocheck(s ? s : "");
        char *text = string ? format_cell(string) : NULL;

        json_decref(string);
        return text;
}

/* Fills the grid: the header line (when wanted) and one line per row, visible columns only. */
static int fill_grid(
    const json_t *table, bool wide, bool no_headers, bool with_namespace, struct print_grid *g)
{
        const json_t *columns = json_object_get(table, "columnDefinitions");
        const json_t *rows = json_object_get(table, "rows");
        size_t n_defs = json_array_size(columns), header = no_headers ? 0 : 1;
        _cleanup_free_ size_t *visible = calloc(n_defs + 1, sizeof(size_t));
        size_t n_visible = 0, i, j;
        int r;

        if (!visible)
                return -ENOMEM;
        for (i = 0; i < n_defs; i++)
                if (wide || json_integer_value(
                                json_object_get(json_array_get(columns, i), "priority")) == 0)
                        visible[n_visible++] = i;

        g->n_lines = header + json_array_size(rows);
        g->n_columns = n_visible + (with_namespace ? 1 : 0);
        g->cells = calloc(g->n_lines * g->n_columns + 1, sizeof(char *));
        g->counts = calloc(g->n_lines + 1, sizeof(size_t));
        if (!g->cells || !g->counts)
                return -ENOMEM;

        if (header) {
                size_t c = 0;

                if (with_namespace && (r = set_cell(g, 0, c++, strdup("NAMESPACE"))) < 0)
                        return r;
                for (j = 0; j < n_visible; j++) {
                        const json_t *def = json_array_get(columns, visible[j]);
                        _cleanup_free_ char *name =
                            upper(json_string_value(json_object_get(def, "name")));

                        r = set_cell(g, 0, c++, name ? escaped_copy(name) : NULL);
                        if (r < 0)
                                return r;
                }
        }

        for (i = 0; i < json_array_size(rows); i++) {
                const json_t *row = json_array_get(rows, i);
                const json_t *cells = json_object_get(row, "cells");
                size_t line = header + i, c = 0;

                if (with_namespace) {
                        const json_t *object = json_object_get(row, "object");
                        const char *ns = table_str(object, "metadata.namespace");

                        r = set_cell(
                            g,
                            line,
                            c++,
                            escaped_copy(json_is_object(object) ? (ns ? ns : "") : "<unknown>"));
                        if (r < 0)
                                return r;
                }
                for (j = 0; j < n_visible && visible[j] < json_array_size(cells); j++) {
                        r = set_cell(g, line, c++, format_cell(json_array_get(cells, visible[j])));
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int xp_table_print(FILE *out,
                   const json_t *table,
                   bool wide,
                   bool no_headers,
                   bool with_namespace,
                   struct xp_error *err)
{
        _cleanup_(print_grid_done) struct print_grid g = {0};
        _cleanup_free_ size_t *widths = NULL;
        size_t line, c;
        int r;

        r = check_table(table, err);
        if (r < 0)
                return r;
        /* kubectl prints nothing, not even headers, for an empty list */
        if (json_array_size(json_object_get(table, "rows")) == 0)
                return 0;
        r = fill_grid(table, wide, no_headers, with_namespace, &g);
        if (r < 0)
                return xp_errorf(err, r, "formatting the table: out of memory");

        /* Go's tabwriter: a cell followed by another on its line pads its column */
        widths = calloc(g.n_columns + 1, sizeof(size_t));
        if (!widths)
                return xp_errorf(err, -ENOMEM, "formatting the table: out of memory");
        for (c = 0; c < g.n_columns; c++)
                widths[c] = PRINT_MIN_WIDTH;
        for (line = 0; line < g.n_lines; line++)
                for (c = 0; c + 1 < g.counts[line]; c++) {
                        size_t w = text_width(g.cells[line * g.n_columns + c]) + PRINT_PADDING;

                        if (w > widths[c])
                                widths[c] = w;
                }

        for (line = 0; line < g.n_lines; line++) {
                for (c = 0; c < g.counts[line]; c++) {
                        const char *text = g.cells[line * g.n_columns + c];

                        fputs(text, out);
                        if (c + 1 < g.counts[line])
                                fprintf(out, "%*s", (int)(widths[c] - text_width(text)), "");
                }
                fputc('\n', out);
        }
        if (fflush(out) != 0 || ferror(out))
                return xp_errorf(err, -EIO, "writing the table failed");
        return 0;
}
