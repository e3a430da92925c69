/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API schema's documentation (src/core/apidoc.txt): the descriptions and required markers
 * the OpenAPI documents carry (kubectl explain prints them), kept beside the schema so that its
 * lines stay one field each. A block is a "== Type" or "== Type.field [required]" line followed
 * by its text; the text's lines are joined by spaces, a blank line is a paragraph break, and a
 * line starting with "| " is kept as it is on a line of its own (lists, as the API reference's
 * "Possible enum values"). '#' at column 0 starts a comment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apischema_internal.h"

/* The text of a block grows here; ours until it is copied into the schema. */
struct text {
        char *buf;
        size_t len, size;
        bool paragraph; /* a blank line came since the last text */
};

static int text_add(struct text *t, const char *s, size_t len)
{
        if (t->len + len + 1 > t->size) {
                size_t size = (t->len + len + 1) * 2;
                char *buf = realloc(t->buf, size);

                if (!buf)
                        return -ENOMEM;
                t->buf = buf;
                t->size = size;
        }
        memcpy(t->buf + t->len, s, len);
        t->len += len;
        t->buf[t->len] = '\0';
        return 0;
}

/* One line of a block's text: a blank one ends a paragraph, "| x" is kept on its own line. */
static int text_line(struct text *t, const char *line, size_t len)
{
        bool verbatim = len >= 2 && line[0] == '|' && line[1] == ' ';
        const char *sep = "";
        int r;

        while (!verbatim && len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t'))
                len--;
        if (len == 0) {
                t->paragraph = t->len > 0;
                return 0;
        }
        if (t->len > 0)
                sep = t->paragraph ? "\n\n" : verbatim ? "\n" : " ";
        r = text_add(t, sep, strlen(sep));
        if (r >= 0)
                r = verbatim ? text_add(t, line + 2, len - 2) : text_add(t, line, len);
        t->paragraph = false;
        return r;
}

/* Where a block's text goes: a type's description, or a field's with its required marker. */
struct target {
        struct xp_apitype *type;
        struct xp_apifield *field; /* NULL for the type itself */
        bool required;
        unsigned line;
};

static struct xp_apitype *find_type(struct xp_apischema *schema, const char *name, size_t len)
{
        for (size_t i = 0; i < schema->n_types; i++)
                if (strlen(schema->types[i].name) == len &&
                    strncmp(schema->types[i].name, name, len) == 0)
                        return &schema->types[i];
        return NULL;
}

/* "== Type", "== Type.field" or "== Type.field required" (line without its newline). */
static int parse_header(struct xp_apischema *schema,
                        const char *line,
                        size_t len,
                        unsigned number,
                        struct target *ret,
                        struct xp_error *err)
{
        const char *s = line + 2, *end = line + len, *dot, *name_end;
        struct target t = {.line = number};

        while (s < end && *s == ' ')
                s++;
        name_end = s;
        while (name_end < end && *name_end != ' ')
                name_end++;
        dot = memchr(s, '.', (size_t)(name_end - s));
        t.type = find_type(schema, s, (size_t)((dot ? dot : name_end) - s));
        if (!t.type)
                return xp_errorf(err,
                                 -EINVAL,
                                 "line %u: unknown type \"%.*s\"",
                                 number,
                                 (int)((dot ? dot : name_end) - s),
                                 s);
        if (dot) {
                for (size_t i = 0; i < t.type->n_fields; i++)
                        if (strlen(t.type->fields[i].name) == (size_t)(name_end - dot - 1) &&
                            strncmp(
                                t.type->fields[i].name, dot + 1, (size_t)(name_end - dot - 1)) == 0)
                                t.field = (struct xp_apifield *)&t.type->fields[i];
                if (!t.field)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "line %u: %s has no field \"%.*s\"",
                                         number,
                                         t.type->name,
                                         (int)(name_end - dot - 1),
                                         dot + 1);
        }
        while (name_end < end && *name_end == ' ')
                name_end++;
        if (name_end < end) {
                if ((size_t)(end - name_end) != 8 || strncmp(name_end, "required", 8) != 0 ||
                    !t.field)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "line %u: expected \"== Type\" or \"== Type.field [required]\"",
                            number);
                t.required = true;
        }
        if ((t.field && (t.field->description || t.field->required)) ||
            (!t.field && t.type->description))
                return xp_errorf(err, -EINVAL, "line %u: described twice", number);
        *ret = t;
        return 0;
}

/* Stores a block's text (a copy in the schema) where its header said. */
static int finish_block(struct xp_apischema *schema,
                        const struct target *target,
                        struct text *text,
                        struct xp_error *err)
{
        char *copy = NULL;

        if (!target->type)
                return text->len ? xp_errorf(err, -EINVAL, "text before the first \"==\" line") : 0;
        if (text->len) {
                copy = xp_apischema_alloc(schema, text->len + 1);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, text->buf, text->len + 1);
        }
        if (target->field) {
                target->field->description = copy;
                target->field->required = target->required;
        } else {
                target->type->description = copy;
        }
        text->len = 0;
        text->paragraph = false;
        return 0;
}

/* A field inlined from another type says what its declaring type says of it, unless told. */
static void inherit(struct xp_apischema *schema)
{
        for (size_t i = 0; i < schema->n_types; i++) {
                struct xp_apitype *t = &schema->types[i];

                for (size_t j = 0; j < t->n_fields; j++) {
                        struct xp_apifield *f = (struct xp_apifield *)&t->fields[j];
                        const struct xp_apifield *own;

                        if (f->origin == t || f->description || f->required)
                                continue;
                        own = xp_apitype_field(f->origin, f->name);
                        if (own) {
                                f->description = own->description;
                                f->required = own->required;
                        }
                }
        }
}

int xp_apischema_describe(struct xp_apischema *schema,
                          const char *docs,
                          size_t len,
                          struct xp_error *err)
{
        struct text text = {0};
        struct target target = {0};
        const char *end = docs + len;
        unsigned number = 0;
        int r = 0;

        for (const char *line = docs; r >= 0 && line < end;) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                size_t n = (size_t)((nl ? nl : end) - line);

                number++;
                if (memchr(line, '\0', n))
                        r = xp_errorf(err, -EINVAL, "line %u: a NUL byte", number);
                else if (n >= 2 && line[0] == '=' && line[1] == '=') {
                        r = finish_block(schema, &target, &text, err);
                        if (r >= 0)
                                r = parse_header(schema, line, n, number, &target, err);
                } else if (!(n > 0 && line[0] == '#'))
                        r = text_line(&text, line, n);
                line = nl ? nl + 1 : end;
        }
        if (r >= 0)
                r = finish_block(schema, &target, &text, err);
        free(text.buf);
        if (r >= 0)
                inherit(schema);
        return r;
}
