/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CSV as spreadsheets and pandas write it: a header naming the columns, a byte order mark, CRLF,
 * blank lines, spaces around fields, quoted fields with "" for a quote. A quoted field does not
 * span lines (no trace field needs it), so a line is a row and its number is the file's line.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim_csv.h"
#include "xpool/macro.h"

static void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

int sim_csv_int(const char *text, int64_t min, int64_t *ret)
{
        char *end;
        long long v;

        if (!text[0] || !(isdigit((unsigned char)text[0]) || text[0] == '-'))
                return -EINVAL;
        errno = 0;
        v = strtoll(text, &end, 10);
        if (*end == '.') /* pandas writes an integer column with a blank as floats: 12.0 */
                for (end++; *end == '0'; end++)
                        ;
        if (errno || *end || v < min || v > SIM_VALUE_MAX)
                return -EINVAL;
        *ret = v;
        return 0;
}

static char *trim(char *s, char *end)
{
        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        *end = '\0';
        return s;
}

/* One quoted field from *p (at its opening quote), unquoted in place; *p past it. */
static int quoted(char **p, char **field)
{
        char *r = *p + 1, *w = *p;

        *field = w;
        for (;; r++) {
                if (!*r)
                        return -EINVAL;
                if (*r == '"' && r[1] == '"')
                        *w++ = *r++;
                else if (*r == '"')
                        break;
                else
                        *w++ = *r;
        }
        for (r++; *r == ' ' || *r == '\t'; r++)
                ;
        if (*r && *r != ',')
                return -EINVAL;
        *w = '\0';
        *p = r;
        return 0;
}

/* Splits line (changed in place) into f; the count, -EINVAL for a bad quote, -E2BIG for too
 * many fields. */
static ssize_t split(char *line, char **f)
{
        size_t n = 0;
        char *p = line;

        for (;;) {
                if (n == SIM_FIELDS_MAX)
                        return -E2BIG;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '"') {
                        if (quoted(&p, &f[n++]) < 0)
                                return -EINVAL;
                } else {
                        char *end = p + strcspn(p, ",");
                        bool last = !*end;
                        f[n++] = trim(p, end);
                        p = last ? end : end + 1;
                        if (last)
                                return (ssize_t)n;
                        continue;
                }
                if (!*p)
                        return (ssize_t)n;
                p++; /* the comma after a quoted field */
        }
}

/* Reads one line into buf (SIM_LINE_MAX + 2 bytes) without its line end; 1, 0 at the end,
 * -E2BIG for a line too long. */
static int next_line(FILE *f, char *buf)
{
        size_t len;

        if (!fgets(buf, SIM_LINE_MAX + 2, f))
                return 0;
        len = strlen(buf);
        if (len > SIM_LINE_MAX && buf[len - 1] != '\n')
                return -E2BIG;
        buf[strcspn(buf, "\r\n")] = '\0';
        return 1;
}

static bool blank(const char *s)
{
        return s[strspn(s, " \t")] == '\0';
}

static void list_columns(const struct sim_table *t, char *buf, size_t size)
{
        size_t used = 0;

        buf[0] = '\0';
        for (size_t k = 0; k < t->n_columns && used < size; k++)
                if (t->columns[k].required)
                        used += (size_t)snprintf(
                            buf + used, size - used, "%s%s", used ? "," : "", t->columns[k].name);
}

/* Finds the table's columns in the header's fields. */
static int header(const char *path,
                  const struct sim_table *t,
                  char **f,
                  size_t n,
                  ssize_t *col,
                  struct xp_error *err)
{
        char need[256];

        for (size_t k = 0; k < t->n_columns; k++) {
                col[k] = -1;
                for (size_t i = 0; i < n; i++) {
                        if (strcasecmp(f[i], t->columns[k].name) != 0)
                                continue;
                        if (col[k] >= 0)
                                return xp_errorf(
                                    err, -EINVAL, "%s: header: column \"%s\" twice", path, f[i]);
                        col[k] = (ssize_t)i;
                }
                if (col[k] < 0 && t->columns[k].required) {
                        list_columns(t, need, sizeof(need));
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "%s: header: no column \"%s\" (the first line must name the columns, at least %s, in any order)",
                            path,
                            t->columns[k].name,
                            need);
                }
        }
        return 0;
}

/* Room for one more item; geometric growth so a large file is not copied row by row. */
static int grow(struct sim_table *t, size_t *cap)
{
        size_t want = *cap ? *cap * 2 : 1024;
        void *m;

        if (*t->n < *cap)
                return 0;
        m = realloc(*t->items, want * t->size);
        if (!m)
                return -ENOMEM;
        *t->items = m;
        *cap = want;
        return 0;
}

/* What one file's reading holds. */
struct reader {
        const char *path;
        struct sim_table *t;
        size_t line_no, n0, cap, n_header;
        ssize_t col[SIM_FIELDS_MAX];
        struct xp_error *err;
};

static int line_error(const struct reader *rd, int k)
{
        if (k == -E2BIG)
                return xp_errorf(rd->err,
                                 -EINVAL,
                                 "%s:%zu: line longer than %d bytes",
                                 rd->path,
                                 rd->line_no,
                                 SIM_LINE_MAX);
        return xp_errorf(rd->err,
                         -EINVAL,
                         "%s:%zu: a quoted field without its closing quote",
                         rd->path,
                         rd->line_no);
}

/* One data row: its fields checked against the header's count, then the table's row(). */
static int data_row(struct reader *rd, char *line)
{
        struct sim_table *t = rd->t;
        char *f[SIM_FIELDS_MAX];
        ssize_t n = split(line, f);
        char *item;

        if (n == -EINVAL)
                return line_error(rd, (int)n);
        while (n > (ssize_t)rd->n_header && !f[n - 1][0]) /* trailing commas */
                n--;
        if (n != (ssize_t)rd->n_header)
                return xp_errorf(rd->err,
                                 -EINVAL,
                                 "%s:%zu: expected %zu fields (as the header), found %s%zd",
                                 rd->path,
                                 rd->line_no,
                                 rd->n_header,
                                 n < 0 ? "more than " : "",
                                 n < 0 ? (ssize_t)SIM_FIELDS_MAX : n);
        if (*t->n - rd->n0 >= SIM_ROWS_MAX)
                return xp_errorf(rd->err,
                                 -EINVAL,
                                 "%s:%zu: more than %d rows",
                                 rd->path,
                                 rd->line_no,
                                 SIM_ROWS_MAX);
        if (grow(t, &rd->cap) < 0)
                return xp_errorf(rd->err, -ENOMEM, "%s:%zu: out of memory", rd->path, rd->line_no);
        item = (char *)*t->items + *t->n * t->size;
        memset(item, 0, t->size);
        (*t->n)++;
        return t->row(f, rd->col, rd->path, rd->line_no, item, rd->err);
}

static int header_row(struct reader *rd, char *line)
{
        char *f[SIM_FIELDS_MAX];
        ssize_t n;

        if (strncmp(line, "\xEF\xBB\xBF", 3) == 0) /* a UTF-8 byte order mark */
                line += 3;
        n = split(line, f);
        if (n == -EINVAL)
                return line_error(rd, (int)n);
        if (n < 0)
                return xp_errorf(rd->err,
                                 -EINVAL,
                                 "%s:%zu: more than %d columns",
                                 rd->path,
                                 rd->line_no,
                                 SIM_FIELDS_MAX);
        rd->n_header = (size_t)n;
        return header(rd->path, rd->t, f, rd->n_header, rd->col, rd->err);
}

int sim_csv_read(const char *path, struct sim_table *table, struct xp_error *err)
{
        _cleanup_(fclosep) FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = malloc(SIM_LINE_MAX + 2);
        struct reader rd = {
            .path = path, .t = table, .n0 = *table->n, .cap = *table->n, .err = err};
        bool have_header = false;
        int r = 0, k;

        if (!f)
                return xp_errorf(err, -errno, "%s: cannot open: %m", path);
        if (!line)
                return xp_errorf(err, -ENOMEM, "%s: out of memory", path);
        while (r >= 0 && (k = next_line(f, line)) != 0) {
                rd.line_no++;
                if (k < 0)
                        r = line_error(&rd, k);
                else if (blank(line))
                        continue;
                else if (!have_header)
                        r = header_row(&rd, line), have_header = true;
                else
                        r = data_row(&rd, line);
        }
        if (r >= 0 && ferror(f))
                r = xp_errorf(err, -EIO, "%s:%zu: read error", path, rd.line_no + 1);
        if (r >= 0 && !have_header)
                r = xp_errorf(err, -EINVAL, "%s: empty file (no header)", path);
        if (r < 0)
                while (*table->n > rd.n0)
                        table->done((char *)*table->items + --(*table->n) * table->size);
        if (r < 0 && *table->n == 0) { /* nothing read: the caller holds nothing to free */
                free(*table->items);
                *table->items = NULL;
        }
        return r;
}
