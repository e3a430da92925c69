/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads the API schema text (the syntax is src/core/apischema.txt's header) into tables: types
 * in source order, an index by name, fields with their value types. The lines are read in two
 * passes, so that a field may name a type declared further down: the first declares the types,
 * the second reads their fields; then inlined types ("...VolumeSource") are flattened.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apischema_internal.h"
#include "xpool/macro.h"

#define ARENA_BLOCK  (32 * 1024)
#define MAX_TOKENS   3
#define MAX_NAME_LEN 128
#define MAX_TYPE_LEN 256 /* a TYPE expression: bounds parse_value()'s recursion */

/* A line cut into tokens. */
struct line {
        unsigned number;
        bool indented;
        char *tokens[MAX_TOKENS];
        size_t n_tokens;
};

/* What the second pass collects for a type: fields and inlined types, in order. */
struct entry {
        const char *name; /* NULL for an inlined type */
        const struct xp_apivalue *value;
        enum xp_apimerge merge;
        const struct xp_apikey *keys;
        size_t n_keys;
        size_t include; /* the inlined type's index, when name is NULL */
        unsigned line;
};

struct building {
        struct entry *entries;
        size_t n, allocated;
        unsigned line;
        int state; /* flattening: 0 to do, 1 under way (a cycle when met again), 2 done */
};

struct parser {
        struct xp_apischema *schema;
        struct line *lines;
        size_t n_lines;
        struct building *building; /* one per type */
        struct xp_error *err;
};

void *xp_apischema_alloc(struct xp_apischema *schema, size_t size)
{
        struct arena_block *b = schema->arena;
        void *p;

        size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
        if (!b || b->size - b->used < size) {
                size_t bytes = size > ARENA_BLOCK ? size : ARENA_BLOCK;

                b = calloc(1, sizeof(*b) + bytes);
                if (!b)
                        return NULL;
                b->size = bytes;
                b->next = schema->arena;
                schema->arena = b;
        }
        p = (char *)b->data + b->used;
        b->used += size;
        return p;
}

void xp_apischema_free(struct xp_apischema *schema)
{
        if (!schema)
                return;
        while (schema->arena) {
                struct arena_block *next = schema->arena->next;

                free(schema->arena);
                schema->arena = next;
        }
        free(schema->sorted);
        free(schema->types);
        free(schema->text);
        free(schema);
}

/* ---- lines ---------------------------------------------------------------------------------- */

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\r';
}

/* Cuts text (NUL-terminated, ours) into lines of tokens, comments and blank lines dropped. */
static int split_lines(char *text, struct line **ret, size_t *ret_n, struct xp_error *err)
{
        size_t n = 1, count = 0;
        struct line *lines;
        unsigned number = 0;

        for (const char *c = text; *c; c++)
                n += *c == '\n';
        lines = calloc(n, sizeof(*lines));
        if (!lines)
                return -ENOMEM;
        for (char *next, *s = text; s; s = next) {
                struct line *l = &lines[count];
                char *hash, *save = NULL;

                next = strchr(s, '\n');
                if (next)
                        *next++ = '\0';
                number++;
                hash = strchr(s, '#');
                if (hash)
                        *hash = '\0';
                *l = (struct line){.number = number, .indented = is_space(*s)};
                for (char *tok = strtok_r(s, " \t\r", &save); tok;
                     tok = strtok_r(NULL, " \t\r", &save)) {
                        if (l->n_tokens == MAX_TOKENS) {
                                free(lines);
                                return xp_errorf(err, -EINVAL, "line %u: too many words", number);
                        }
                        l->tokens[l->n_tokens++] = tok;
                }
                if (l->n_tokens > 0)
                        count++;
        }
        *ret = lines;
        *ret_n = count;
        return 0;
}

/* Letters and digits, starting with a letter: a type name, or a field's JSON name. */
static bool is_name(const char *s)
{
        size_t len = strlen(s);

        if (len == 0 || len > MAX_NAME_LEN ||
            !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9')))
                        return false;
        return true;
}

/* ---- types ---------------------------------------------------------------------------------- */

static int compare_types(const void *a, const void *b)
{
        return strcmp((*(const struct xp_apitype *const *)a)->name,
                      (*(const struct xp_apitype *const *)b)->name);
}

static int compare_key(const void *key, const void *element)
{
        return strcmp(key, (*(const struct xp_apitype *const *)element)->name);
}

const struct xp_apitype *xp_apischema_find(const struct xp_apischema *schema, const char *name)
{
        const struct xp_apitype *const *found =
            bsearch(name, schema->sorted, schema->n_types, sizeof(*schema->sorted), compare_key);

        return found ? *found : NULL;
}

size_t xp_apischema_count(const struct xp_apischema *schema)
{
        return schema->n_types;
}

const struct xp_apitype *xp_apischema_type(const struct xp_apischema *schema, size_t index)
{
        return index < schema->n_types ? &schema->types[index] : NULL;
}

const struct xp_apifield *xp_apitype_field(const struct xp_apitype *type, const char *name)
{
        /* the first byte rules out most fields without a call (every member of a write comes
         * here) */
        for (size_t i = 0; i < type->n_fields; i++)
                if (type->fields[i].name[0] == name[0] && strcmp(type->fields[i].name, name) == 0)
                        return &type->fields[i];
        return NULL;
}

/* The first pass: every line at column 0 is a package or a type. */
static int declare_types(struct parser *p)
{
        struct xp_apischema *schema = p->schema;
        const char *package = "";
        size_t n = 0;

        for (size_t i = 0; i < p->n_lines; i++)
                n += !p->lines[i].indented && strcmp(p->lines[i].tokens[0], "package") != 0;
        schema->types = calloc(n ? n : 1, sizeof(*schema->types));
        schema->sorted = calloc(n ? n : 1, sizeof(*schema->sorted));
        p->building = calloc(n ? n : 1, sizeof(*p->building));
        if (!schema->types || !schema->sorted || !p->building)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_lines; i++) {
                const struct line *l = &p->lines[i];

                if (l->indented)
                        continue;
                if (strcmp(l->tokens[0], "package") == 0) {
                        if (l->n_tokens != 2)
                                return xp_errorf(p->err,
                                                 -EINVAL,
                                                 "line %u: expected \"package NAME\"",
                                                 l->number);
                        package = l->tokens[1];
                        continue;
                }
                if (l->n_tokens > 2 || !is_name(l->tokens[0]) ||
                    (l->n_tokens == 2 && strcmp(l->tokens[1], "atomic") != 0))
                        return xp_errorf(
                            p->err,
                            -EINVAL,
                            "line %u: expected a type name at column 0 (letters and digits), optionally \"atomic\", or an indented field",
                            l->number);
                p->building[schema->n_types].line = l->number;
                schema->types[schema->n_types] = (struct xp_apitype){
                    .name = l->tokens[0], .package = package, .atomic = l->n_tokens == 2};
                schema->sorted[schema->n_types] = &schema->types[schema->n_types];
                schema->n_types++;
        }
        qsort(schema->sorted, schema->n_types, sizeof(*schema->sorted), compare_types);
        for (size_t i = 1; i < schema->n_types; i++)
                if (strcmp(schema->sorted[i]->name, schema->sorted[i - 1]->name) == 0)
                        return xp_errorf(p->err,
                                         -EINVAL,
                                         "line %u: type %s is declared twice",
                                         p->building[schema->sorted[i] - schema->types].line,
                                         schema->sorted[i]->name);
        return 0;
}

/* ---- values --------------------------------------------------------------------------------- */

static const char *const scalar_names[] = {
    [XP_APIVALUE_STRING] = "string",
    [XP_APIVALUE_BOOL] = "bool",
    [XP_APIVALUE_INT32] = "int32",
    [XP_APIVALUE_INT64] = "int64",
    [XP_APIVALUE_DOUBLE] = "double",
    [XP_APIVALUE_QUANTITY] = "quantity",
    [XP_APIVALUE_INT_OR_STRING] = "int-or-string",
    [XP_APIVALUE_TIME] = "time",
    [XP_APIVALUE_MICROTIME] = "microtime",
    [XP_APIVALUE_OBJECT] = "object",
};

const char *xp_apivalue_kind_to_string(enum xp_apivalue_kind kind)
{
        if ((size_t)kind < XP_ELEMENTSOF(scalar_names) && scalar_names[kind])
                return scalar_names[kind];
        return kind == XP_APIVALUE_TYPE || kind == XP_APIVALUE_LIST || kind == XP_APIVALUE_MAP
                   ? ""
                   : NULL;
}

/* A TYPE expression, s[0..len): a scalar, a type's name, []TYPE or map[TYPE]. */
static int parse_value(
    struct parser *p, const struct line *l, char *s, size_t len, const struct xp_apivalue **ret)
{
        struct xp_apivalue *v = xp_apischema_alloc(p->schema, sizeof(*v));
        char saved = s[len];
        int r = 0;

        if (!v)
                return -ENOMEM;
        if (len > 2 && strncmp(s, "[]", 2) == 0) {
                v->kind = XP_APIVALUE_LIST;
                r = parse_value(p, l, s + 2, len - 2, &v->element);
        } else if (len > 5 && strncmp(s, "map[", 4) == 0 && s[len - 1] == ']') {
                v->kind = XP_APIVALUE_MAP;
                r = parse_value(p, l, s + 4, len - 5, &v->element);
        } else {
                s[len] = '\0';
                for (size_t k = 0; k < XP_ELEMENTSOF(scalar_names); k++)
                        if (scalar_names[k] && strcmp(s, scalar_names[k]) == 0)
                                v->kind = (enum xp_apivalue_kind)k;
                if (!v->kind) {
                        v->kind = XP_APIVALUE_TYPE;
                        v->type = xp_apischema_find(p->schema, s);
                        if (!v->type)
                                r = xp_errorf(
                                    p->err, -EINVAL, "line %u: unknown type \"%s\"", l->number, s);
                }
                s[len] = saved;
        }
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

/* ---- how apply merges a field -----------------------------------------------------------------
 */

/* "KEY" or "KEY=DEFAULT" of a map(...) annotation, cut in place. */
static int parse_key(struct parser *p, const struct line *l, char *s, struct xp_apikey *ret)
{
        char *eq = strchr(s, '=');

        if (eq)
                *eq++ = '\0';
        if (!is_name(s) || (eq && !*eq))
                return xp_errorf(
                    p->err,
                    -EINVAL,
                    "line %u: expected map(KEY,...) with each KEY a field name, optionally =DEFAULT",
                    l->number);
        *ret = (struct xp_apikey){.name = s, .default_value = eq};
        return 0;
}

/* map(k1,k2=default): the keys of a list of objects. */
static int parse_map_keys(struct parser *p, const struct line *l, char *s, struct entry *e)
{
        size_t n = 1, len = strlen(s);
        struct xp_apikey *keys;
        char *save = NULL;

        if (len < 6 || s[len - 1] != ')')
                return xp_errorf(p->err, -EINVAL, "line %u: expected map(KEY,...)", l->number);
        s[len - 1] = '\0';
        s += 4;
        for (const char *c = s; *c; c++)
                n += *c == ',';
        keys = xp_apischema_alloc(p->schema, n * sizeof(*keys));
        if (!keys)
                return -ENOMEM;
        e->n_keys = 0;
        for (char *key = strtok_r(s, ",", &save); key; key = strtok_r(NULL, ",", &save)) {
                int r = parse_key(p, l, key, &keys[e->n_keys]);

                if (r < 0)
                        return r;
                e->n_keys++;
        }
        if (e->n_keys != n)
                return xp_errorf(p->err, -EINVAL, "line %u: an empty key in map(...)", l->number);
        e->keys = keys;
        return 0;
}

/*
 * The third word of a field line: "atomic", "set" or "map(KEY,...)"; without one a list is
 * atomic, a map granular and a named type as the type says.
 */
static int parse_merge(struct parser *p, const struct line *l, char *word, struct entry *e)
{
        const struct xp_apivalue *v = e->value;
        bool list = v->kind == XP_APIVALUE_LIST;

        if (!word) {
                e->merge = list                                             ? XP_APIMERGE_ATOMIC
                           : v->kind == XP_APIVALUE_TYPE && v->type->atomic ? XP_APIMERGE_ATOMIC
                                                                            : XP_APIMERGE_GRANULAR;
                return 0;
        }
        if (strcmp(word, "atomic") == 0 && (list || v->kind == XP_APIVALUE_MAP)) {
                e->merge = XP_APIMERGE_ATOMIC;
                return 0;
        }
        if (strcmp(word, "set") == 0 && list && v->element->kind != XP_APIVALUE_TYPE &&
            v->element->kind != XP_APIVALUE_LIST && v->element->kind != XP_APIVALUE_MAP) {
                e->merge = XP_APIMERGE_SET;
                return 0;
        }
        if (strncmp(word, "map(", 4) == 0 && list && v->element->kind == XP_APIVALUE_TYPE) {
                e->merge = XP_APIMERGE_MAP;
                return parse_map_keys(p, l, word, e);
        }
        return xp_errorf(
            p->err,
            -EINVAL,
            "line %u: \"%s\" does not fit the field: atomic is for lists and maps, set for lists of scalars, map(KEY,...) for lists of objects",
            l->number,
            word);
}

/* The keys of every map list name fields of its element type (known once types are flat). */
static int check_keys(struct parser *p)
{
        for (size_t i = 0; i < p->schema->n_types; i++) {
                const struct xp_apitype *t = &p->schema->types[i];

                for (size_t j = 0; j < t->n_fields; j++) {
                        const struct xp_apifield *f = &t->fields[j];

                        for (size_t k = 0; k < f->n_keys; k++)
                                if (!xp_apitype_field(f->value->element->type, f->keys[k].name))
                                        return xp_errorf(
                                            p->err,
                                            -EINVAL,
                                            "line %u: %s.%s: the key %s is not a field of %s",
                                            p->building[i].line,
                                            t->name,
                                            f->name,
                                            f->keys[k].name,
                                            f->value->element->type->name);
                }
        }
        return 0;
}

/* ---- fields --------------------------------------------------------------------------------- */

static int add_entry(struct building *b, const struct entry *e)
{
        if (b->n == b->allocated) {
                size_t allocated = b->allocated ? 2 * b->allocated : 16;
                struct entry *entries = realloc(b->entries, allocated * sizeof(*entries));

                if (!entries)
                        return -ENOMEM;
                b->entries = entries;
                b->allocated = allocated;
        }
        b->entries[b->n++] = *e;
        return 0;
}

/* The second pass: the indented lines under each type. */
static int read_fields(struct parser *p)
{
        size_t current = SIZE_MAX, next_type = 0;

        for (size_t i = 0; i < p->n_lines; i++) {
                struct line *l = &p->lines[i];
                struct entry e = {.line = l->number};
                int r;

                if (!l->indented) {
                        if (strcmp(l->tokens[0], "package") != 0)
                                current = next_type++;
                        continue;
                }
                if (current == SIZE_MAX)
                        return xp_errorf(
                            p->err, -EINVAL, "line %u: a field outside a type", l->number);
                if (l->n_tokens == 1 && strncmp(l->tokens[0], "...", 3) == 0) {
                        const struct xp_apitype *t = xp_apischema_find(p->schema, l->tokens[0] + 3);

                        if (!t)
                                return xp_errorf(p->err,
                                                 -EINVAL,
                                                 "line %u: unknown type \"%s\" to inline",
                                                 l->number,
                                                 l->tokens[0] + 3);
                        e.include = (size_t)(t - p->schema->types);
                } else if (l->n_tokens >= 2 && is_name(l->tokens[0]) &&
                           strlen(l->tokens[1]) <= MAX_TYPE_LEN) {
                        e.name = l->tokens[0];
                        r = parse_value(p, l, l->tokens[1], strlen(l->tokens[1]), &e.value);
                        if (r >= 0)
                                r = parse_merge(p, l, l->n_tokens == 3 ? l->tokens[2] : NULL, &e);
                        if (r < 0)
                                return r;
                } else {
                        return xp_errorf(
                            p->err,
                            -EINVAL,
                            "line %u: expected \"jsonName TYPE [atomic|set|map(KEY,...)]\" or \"...TypeName\"",
                            l->number);
                }
                r = add_entry(&p->building[current], &e);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Counts (fields == NULL) or copies the fields of type index, inlined ones flattened first. */
static int flatten(struct parser *p, size_t index);

static int collect(struct parser *p, size_t index, struct xp_apifield *fields, size_t *n)
{
        const struct building *b = &p->building[index];
        int r;

        for (size_t i = 0; i < b->n; i++) {
                const struct entry *e = &b->entries[i];

                if (e->name) {
                        if (fields)
                                fields[*n] =
                                    (struct xp_apifield){.name = e->name,
                                                         .value = e->value,
                                                         .merge = e->merge,
                                                         .keys = e->keys,
                                                         .n_keys = e->n_keys,
                                                         .origin = &p->schema->types[index]};
                        (*n)++;
                        continue;
                }
                r = flatten(p, e->include);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < p->schema->types[e->include].n_fields; j++) {
                        if (fields)
                                fields[*n] = p->schema->types[e->include].fields[j];
                        (*n)++;
                }
        }
        return 0;
}

static int flatten(struct parser *p, size_t index)
{
        struct building *b = &p->building[index];
        struct xp_apitype *type = &p->schema->types[index];
        struct xp_apifield *fields;
        size_t n = 0;
        int r;

        if (b->state == 2)
                return 0;
        if (b->state == 1)
                return xp_errorf(
                    p->err, -EINVAL, "line %u: type %s inlines itself", b->line, type->name);
        b->state = 1;
        r = collect(p, index, NULL, &n);
        if (r < 0)
                return r;
        fields = xp_apischema_alloc(p->schema, (n ? n : 1) * sizeof(*fields));
        if (!fields)
                return -ENOMEM;
        n = 0;
        r = collect(p, index, fields, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < i; j++)
                        if (strcmp(fields[i].name, fields[j].name) == 0)
                                return xp_errorf(p->err,
                                                 -EINVAL,
                                                 "line %u: type %s has two fields \"%s\"",
                                                 b->line,
                                                 type->name,
                                                 fields[i].name);
        type->fields = fields;
        type->n_fields = n;
        b->state = 2;
        return 0;
}

/* ---- the whole ------------------------------------------------------------------------------ */

int xp_apischema_parse(const char *text,
                       size_t len,
                       struct xp_apischema **ret,
                       struct xp_error *err)
{
        struct xp_apischema *schema = calloc(1, sizeof(*schema));
        struct parser p = {.schema = schema, .err = err};
        int r;

        if (!schema || !(schema->text = malloc(len + 1))) {
                free(schema);
                return -ENOMEM;
        }
        memcpy(schema->text, text, len);
        schema->text[len] = '\0';
        if (memchr(text, '\0', len))
                r = xp_errorf(err, -EINVAL, "the schema text holds a NUL byte");
        else
                r = split_lines(schema->text, &p.lines, &p.n_lines, err);
        if (r >= 0)
                r = declare_types(&p);
        if (r >= 0)
                r = read_fields(&p);
        for (size_t i = 0; r >= 0 && i < schema->n_types; i++)
                r = flatten(&p, i);
        if (r >= 0)
                r = check_keys(&p);
        for (size_t i = 0; p.building && i < schema->n_types; i++)
                free(p.building[i].entries);
        free(p.building);
        free(p.lines);
        if (r < 0) {
                if (r == -ENOMEM)
                        xp_errorf(err, r, "out of memory reading the API schema");
                xp_apischema_free(schema);
                return r;
        }
        *ret = schema;
        return 0;
}

/* src/core/apischema.txt and src/core/apidoc.txt, compiled in by CMakeLists.txt. */
extern const char xp_apischema_text[];
extern const size_t xp_apischema_text_size;
extern const char xp_apidoc_text[];
extern const size_t xp_apidoc_text_size;

static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static struct xp_apischema *builtin;
static struct xp_error builtin_error;

static void read_builtin(void)
{
        struct xp_apischema *schema = NULL;

        if (xp_apischema_parse(xp_apischema_text, xp_apischema_text_size, &schema, &builtin_error) <
            0) {
                xp_error_prefix(&builtin_error,
                                builtin_error.code,
                                "src/core/apischema*.txt (joined: build/xp_apischema_text.c)");
                return;
        }
        if (xp_apischema_describe(schema, xp_apidoc_text, xp_apidoc_text_size, &builtin_error) <
            0) {
                xp_error_prefix(&builtin_error, builtin_error.code, "src/core/apidoc.txt");
                xp_apischema_free(schema);
                return;
        }
        builtin = schema;
}

int xp_apischema_builtin(const struct xp_apischema **ret, struct xp_error *err)
{
        pthread_once(&builtin_once, read_builtin);
        if (!builtin)
                return xp_errorf(err, builtin_error.code, "%s", builtin_error.msg);
        *ret = builtin;
        return 0;
}
