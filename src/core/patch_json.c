/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 6902 JSON patch with RFC 6901 pointers. Operations run in order on one deep copy of the
 * original, so a failing operation anywhere leaves the caller's object as it was.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch_internal.h"
#include "xpool/macro.h"
#include "xpool/patch.h"

enum op {
        OP_ADD,
        OP_REMOVE,
        OP_REPLACE,
        OP_MOVE,
        OP_COPY,
        OP_TEST,
};

static const struct {
        const char *name;
        enum op op;
        bool value; /* needs "value" */
        bool from;  /* needs "from" */
} ops[] = {
    {.name = "add", .op = OP_ADD, .value = true},
    {.name = "remove", .op = OP_REMOVE},
    {.name = "replace", .op = OP_REPLACE, .value = true},
    {.name = "move", .op = OP_MOVE, .from = true},
    {.name = "copy", .op = OP_COPY, .from = true},
    {.name = "test", .op = OP_TEST, .value = true},
};

/* A parsed pointer: n unescaped reference tokens. */
struct pointer {
        char **tokens;
        size_t n;
};

static void pointer_done(struct pointer *p)
{
        for (size_t i = 0; i < p->n; i++)
                free(p->tokens[i]);
        free(p->tokens);
        *p = (struct pointer){0};
}

/* Returns 0, -ENOMEM, or -EINVAL with why set. */
static int pointer_parse(const char *text, struct pointer *ret, char *why, size_t why_size)
{
        struct pointer p = {0};
        const char *s = text;

        if (*s == '\0') {
                *ret = p;
                return 0;
        }
        if (*s != '/') {
                snprintf(why, why_size, "invalid JSON pointer: must be empty or start with '/'");
                return -EINVAL;
        }
        while (*s == '/') {
                size_t len = strcspn(s + 1, "/");
                char *token = malloc(len + 1), **tokens;
                size_t j = 0;

                if (!token) {
                        pointer_done(&p);
                        return -ENOMEM;
                }
                for (size_t i = 1; i <= len; i++) {
                        if (s[i] != '~') {
                                token[j++] = s[i];
                                continue;
                        }
                        if (i + 1 > len || (s[i + 1] != '0' && s[i + 1] != '1')) {
                                snprintf(
                                    why,
                                    why_size,
                                    "invalid JSON pointer: '~' at offset %zu must be followed by 0 or 1",
                                    (size_t)(s - text) + i);
                                free(token);
                                pointer_done(&p);
                                return -EINVAL;
                        }
                        token[j++] = s[i + 1] == '0' ? '~' : '/';
                        i++;
                }
                token[j] = '\0';
                tokens = realloc(p.tokens, (p.n + 1) * sizeof(*tokens));
                if (!tokens) {
                        free(token);
                        pointer_done(&p);
                        return -ENOMEM;
                }
                p.tokens = tokens;
                p.tokens[p.n++] = token;
                s += 1 + len;
        }
        *ret = p;
        return 0;
}

/*
 * An array index token: digits without a leading zero. "-" (past the end) only where append is
 * allowed. Returns 0 with *ret, or -EINVAL with why.
 */
static int parse_index(
    const char *token, const json_t *array, bool append, size_t *ret, char *why, size_t why_size)
{
        size_t size = json_array_size(array), index = 0;

        if (strcmp(token, "-") == 0) {
                if (!append) {
                        snprintf(why,
                                 why_size,
                                 "\"-\" (past the end of the array) is only valid for add");
                        return -EINVAL;
                }
                *ret = size;
                return 0;
        }
        if (token[0] == '\0' || strspn(token, "0123456789") != strlen(token) ||
            (token[0] == '0' && token[1] != '\0')) {
                snprintf(why, why_size, "invalid array index \"%s\"", token);
                return -EINVAL;
        }
        for (const char *c = token; *c; c++) {
                if (index > (SIZE_MAX - 9) / 10) {
                        index = SIZE_MAX;
                        break;
                }
                index = index * 10 + (size_t)(*c - '0');
        }
        if (index > size || (index == size && !append)) {
                snprintf(why,
                         why_size,
                         "array index %s out of range (the array has %zu elements)",
                         token,
                         size);
                return -EINVAL;
        }
        *ret = index;
        return 0;
}

/* The value the first n tokens of p name, or NULL with why set. */
static json_t *walk(json_t *doc, const struct pointer *p, size_t n, char *why, size_t why_size)
{
        json_t *v = doc;

        for (size_t i = 0; i < n; i++) {
                size_t index;

                if (json_is_object(v))
                        v = json_object_get(v, p->tokens[i]);
                else if (json_is_array(v) &&
                         parse_index(p->tokens[i], v, false, &index, why, why_size) == 0)
                        v = json_array_get(v, index);
                else if (json_is_array(v))
                        return NULL;
                else
                        v = NULL;
                if (!v) {
                        snprintf(why, why_size, "path not found");
                        return NULL;
                }
        }
        return v;
}

/* Adds value (takes the reference) at p in *doc. Returns 0, -EINVAL with why, or -ENOMEM. */
static int do_add(json_t **doc, const struct pointer *p, json_t *value, char *why, size_t why_size)
{
        json_t *parent;
        const char *last;
        size_t index;
        int r;

        if (p->n == 0) {
                json_decref(*doc);
                *doc = value;
                return 0;
        }
        parent = walk(*doc, p, p->n - 1, why, why_size);
        last = p->tokens[p->n - 1];
        if (json_is_object(parent))
                r = json_object_set_new(parent, last, value) < 0 ? -ENOMEM : 0;
        else if (json_is_array(parent)) {
                r = parse_index(last, parent, true, &index, why, why_size);
                if (r == 0)
                        return json_array_insert_new(parent, index, value) < 0 ? -ENOMEM : 0;
                json_decref(value);
        } else {
                if (parent)
                        snprintf(why, why_size, "path not found");
                json_decref(value);
                r = -EINVAL;
        }
        return r;
}

/* Removes the value at p from doc; *ret (when not NULL) takes a reference to it. */
static int do_remove(json_t *doc, const struct pointer *p, json_t **ret, char *why, size_t why_size)
{
        json_t *parent, *value;
        const char *last;
        size_t index;
        int r;

        if (p->n == 0) {
                snprintf(why, why_size, "cannot remove the whole document");
                return -EINVAL;
        }
        parent = walk(doc, p, p->n - 1, why, why_size);
        if (!parent)
                return -EINVAL;
        last = p->tokens[p->n - 1];
        if (json_is_object(parent)) {
                value = json_object_get(parent, last);
                if (!value) {
                        snprintf(why, why_size, "path not found");
                        return -EINVAL;
                }
                if (ret)
                        *ret = json_incref(value);
                json_object_del(parent, last);
                return 0;
        }
        if (!json_is_array(parent)) {
                snprintf(why, why_size, "path not found");
                return -EINVAL;
        }
        r = parse_index(last, parent, false, &index, why, why_size);
        if (r < 0)
                return r;
        if (ret)
                *ret = json_incref(json_array_get(parent, index));
        json_array_remove(parent, index);
        return 0;
}

#define MAX_VALUES (1u << 20)

/* Counts the values in v and its nesting; stops counting past MAX_VALUES. */
static void measure(const json_t *v, size_t depth, size_t *count, size_t *max_depth)
{
        const char *key;
        json_t *member;

        (*count)++;
        if (depth > *max_depth)
                *max_depth = depth;
        if (*count > MAX_VALUES || depth > XP_PATCH_MAX_DEPTH)
                return;
        if (json_is_object(v)) {
                json_object_foreach((json_t *)v, key, member)
                    measure(member, depth + 1, count, max_depth);
        } else if (json_is_array(v)) {
                for (size_t i = 0; i < json_array_size(v); i++)
                        measure(json_array_get(v, i), depth + 1, count, max_depth);
        }
}

/*
 * Copies can double the document with each operation; bounds what one patch may add (values in
 * total, and nesting where they land) before copying anything.
 */
static int check_growth(
    const json_t *value, const struct pointer *at, size_t *total, char *why, size_t why_size)
{
        size_t count = 0, depth = 0;

        measure(value, at->n, &count, &depth);
        if (depth > XP_PATCH_MAX_DEPTH) {
                snprintf(why,
                         why_size,
                         "the result would nest deeper than %d levels",
                         XP_PATCH_MAX_DEPTH);
                return -E2BIG;
        }
        *total += count;
        if (*total > MAX_VALUES) {
                snprintf(why, why_size, "the result would hold more than %u values", MAX_VALUES);
                return -E2BIG;
        }
        return 0;
}

/* Whether pointer text a is a proper prefix of b, as locations: "/a" of "/a/b", not of "/ab". */
static bool proper_prefix(const char *a, const char *b)
{
        size_t len = strlen(a);

        return strncmp(a, b, len) == 0 && b[len] == '/';
}

static int apply_op(json_t **doc, size_t i, const json_t *op, size_t *total, struct xp_error *err)
{
        const json_t *op_value, *value = NULL, *from_value = NULL, *path_value;
        _cleanup_(pointer_done) struct pointer path = {0};
        _cleanup_(pointer_done) struct pointer from = {0};
        const char *name, *path_text, *from_text = NULL;
        char why[160] = "";
        json_t *target, *moved;
        size_t k;
        int r;

        if (!json_is_object(op))
                return xp_errorf(err, -EINVAL, "patch[%zu]: operation is not an object", i);
        op_value = json_object_get(op, "op");
        if (!op_value)
                return xp_errorf(err, -EINVAL, "patch[%zu]: missing \"op\"", i);
        if (!json_is_string(op_value))
                return xp_errorf(err, -EINVAL, "patch[%zu]: \"op\" is not a string", i);
        name = json_string_value(op_value);
        for (k = 0; k < XP_ELEMENTSOF(ops); k++)
                if (strcmp(ops[k].name, name) == 0)
                        break;
        if (k == XP_ELEMENTSOF(ops))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "patch[%zu]: unknown op \"%s\" (expected add, remove, replace, move, copy or test)",
                    i,
                    name);

        path_value = json_object_get(op, "path");
        if (!path_value)
                return xp_errorf(err, -EINVAL, "patch[%zu] (%s): missing \"path\"", i, name);
        if (!json_is_string(path_value))
                return xp_errorf(
                    err, -EINVAL, "patch[%zu] (%s): \"path\" is not a string", i, name);
        path_text = json_string_value(path_value);
        if (ops[k].value) {
                value = json_object_get(op, "value");
                if (!value)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "patch[%zu] (%s %s): missing \"value\"",
                                         i,
                                         name,
                                         path_text);
        }
        if (ops[k].from) {
                from_value = json_object_get(op, "from");
                if (!from_value)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "patch[%zu] (%s %s): missing \"from\"",
                                         i,
                                         name,
                                         path_text);
                if (!json_is_string(from_value))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "patch[%zu] (%s %s): \"from\" is not a string",
                                         i,
                                         name,
                                         path_text);
                from_text = json_string_value(from_value);
        }

        r = pointer_parse(path_text, &path, why, sizeof(why));
        if (r == 0 && from_text) {
                r = pointer_parse(from_text, &from, why, sizeof(why));
                if (r == -EINVAL)
                        return xp_errorf(err,
                                         r,
                                         "patch[%zu] (%s %s): from \"%s\": %s",
                                         i,
                                         name,
                                         path_text,
                                         from_text,
                                         why);
        }
        if (r < 0)
                goto fail;

        switch (ops[k].op) {
        case OP_ADD:
                r = check_growth(value, &path, total, why, sizeof(why));
                if (r < 0)
                        break;
                moved = json_deep_copy(value);
                if (!moved)
                        return xp_errorf(
                            err, -ENOMEM, "patch[%zu] (%s %s): out of memory", i, name, path_text);
                r = do_add(doc, &path, moved, why, sizeof(why));
                break;
        case OP_REMOVE:
                r = do_remove(*doc, &path, NULL, why, sizeof(why));
                break;
        case OP_REPLACE:
                target = walk(*doc, &path, path.n, why, sizeof(why));
                if (!target) {
                        r = -EINVAL;
                        break;
                }
                r = check_growth(value, &path, total, why, sizeof(why));
                if (r < 0)
                        break;
                /* the target exists, so removing it cannot fail and add puts it back in place */
                if (path.n > 0)
                        (void)do_remove(*doc, &path, NULL, why, sizeof(why));
                moved = json_deep_copy(value);
                if (!moved)
                        return xp_errorf(
                            err, -ENOMEM, "patch[%zu] (%s %s): out of memory", i, name, path_text);
                r = do_add(doc, &path, moved, why, sizeof(why));
                break;
        case OP_MOVE:
                if (proper_prefix(from_text, path_text))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "patch[%zu] (%s %s): cannot move \"%s\" into its own child",
                            i,
                            name,
                            path_text,
                            from_text);
                if (!walk(*doc, &from, from.n, why, sizeof(why)))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "patch[%zu] (%s %s): from \"%s\": %s",
                                         i,
                                         name,
                                         path_text,
                                         from_text,
                                         why);
                if (strcmp(from_text, path_text) == 0)
                        break;
                r = check_growth(
                    walk(*doc, &from, from.n, why, sizeof(why)), &path, total, why, sizeof(why));
                if (r < 0)
                        break;
                r = do_remove(*doc, &from, &moved, why, sizeof(why));
                if (r == 0)
                        r = do_add(doc, &path, moved, why, sizeof(why));
                break;
        case OP_COPY:
                target = walk(*doc, &from, from.n, why, sizeof(why));
                if (!target)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "patch[%zu] (%s %s): from \"%s\": %s",
                                         i,
                                         name,
                                         path_text,
                                         from_text,
                                         why);
                r = check_growth(target, &path, total, why, sizeof(why));
                if (r < 0)
                        break;
                moved = json_deep_copy(target);
                if (!moved)
                        return xp_errorf(
                            err, -ENOMEM, "patch[%zu] (%s %s): out of memory", i, name, path_text);
                r = do_add(doc, &path, moved, why, sizeof(why));
                break;
        case OP_TEST:
                target = walk(*doc, &path, path.n, why, sizeof(why));
                if (!target)
                        r = -EINVAL;
                else if (!xp_patch_value_equal(target, value)) {
                        snprintf(why, sizeof(why), "test failed");
                        r = -EINVAL;
                }
                break;
        }
fail:
        if (r == -ENOMEM)
                return xp_errorf(err, r, "patch[%zu] (%s %s): out of memory", i, name, path_text);
        if (r < 0)
                return xp_errorf(err, r, "patch[%zu] (%s %s): %s", i, name, path_text, why);
        return 0;
}

int xp_patch_json_apply(const json_t *original,
                        const json_t *patch,
                        json_t **ret,
                        struct xp_error *err)
{
        size_t total = 0, depth = 0;
        json_t *doc;
        int r;

        if (!json_is_array(patch))
                return xp_errorf(
                    err, -EINVAL, "patch: a JSON patch must be an array of operations");
        if (json_array_size(patch) > XP_PATCH_MAX_OPS)
                return xp_errorf(err,
                                 -E2BIG,
                                 "patch: %zu operations, more than the limit of %d",
                                 json_array_size(patch),
                                 XP_PATCH_MAX_OPS);

        measure(original, 0, &total, &depth);
        doc = json_deep_copy(original);
        if (!doc)
                return xp_errorf(err, -ENOMEM, "patch: out of memory copying the object");
        for (size_t i = 0; i < json_array_size(patch); i++) {
                r = apply_op(&doc, i, json_array_get(patch, i), &total, err);
                if (r < 0) {
                        json_decref(doc);
                        return r;
                }
        }
        *ret = doc;
        return 0;
}
