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

/* One operation of the patch, read and checked by read_op(). */
struct patch_op {
        size_t i; /* its index in the patch, for messages */
        const char *name;
        enum op op;
        const char *path_text, *from_text; /* from_text: NULL but for move and copy */
        const json_t *value;               /* NULL but for add, replace and test */
        struct pointer path, from;
        char why[160]; /* what went wrong, for the message */
};

static void patch_op_done(struct patch_op *o)
{
        pointer_done(&o->path);
        pointer_done(&o->from);
}

/*
 * The message of an operation that failed with r. A missing location and a failed test are
 * worded as the JSON patch library of kube-apiserver words them, which clients match on
 * ("testing value /spec/x failed: test failed"); other faults say the operation and o->why.
 */
static int op_failed(const struct patch_op *o, int r, struct xp_error *err)
{
        bool missing = strcmp(o->why, "path not found") == 0;

        if (r == -ENOMEM)
                return xp_errorf(
                    err, r, "patch[%zu] (%s %s): out of memory", o->i, o->name, o->path_text);
        if (o->op == OP_TEST && (missing || strcmp(o->why, "test failed") == 0))
                return xp_errorf(err, r, "testing value %s failed: test failed", o->path_text);
        if (missing && (o->op == OP_ADD || o->op == OP_REMOVE))
                return xp_errorf(err,
                                 r,
                                 "%s operation does not apply: doc is missing path: \"%s\": "
                                 "missing value",
                                 o->name,
                                 o->path_text);
        if (missing && o->op == OP_REPLACE)
                return xp_errorf(err,
                                 r,
                                 "replace operation does not apply: doc is missing key: %s: "
                                 "missing value",
                                 o->path_text);
        if (missing) /* move and copy: where the value goes */
                return xp_errorf(err,
                                 r,
                                 "%s operation does not apply: doc is missing destination path: "
                                 "%s: missing value",
                                 o->name,
                                 o->path_text);
        return xp_errorf(err, r, "patch[%zu] (%s %s): %s", o->i, o->name, o->path_text, o->why);
}

/* The message of a "from" that is no location of the document: -EINVAL. */
static int from_failed(struct patch_op *o, struct xp_error *err)
{
        if (strcmp(o->why, "path not found") == 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s operation does not apply: doc is missing from path: %s: "
                                 "missing value",
                                 o->name,
                                 o->from_text);
        return xp_errorf(err,
                         -EINVAL,
                         "patch[%zu] (%s %s): from \"%s\": %s",
                         o->i,
                         o->name,
                         o->path_text,
                         o->from_text,
                         o->why);
}

/* Reads operation i: 0, or -errno with err saying what is missing or wrong. */
static int read_op(const json_t *op, size_t i, struct patch_op *o, struct xp_error *err)
{
        const json_t *op_value, *path_value, *from_value;
        size_t k;
        int r;

        if (!json_is_object(op))
                return xp_errorf(err, -EINVAL, "patch[%zu]: operation is not an object", i);
        op_value = json_object_get(op, "op");
        if (!op_value)
                return xp_errorf(err, -EINVAL, "patch[%zu]: missing \"op\"", i);
        if (!json_is_string(op_value))
                return xp_errorf(err, -EINVAL, "patch[%zu]: \"op\" is not a string", i);
        o->name = json_string_value(op_value);
        for (k = 0; k < XP_ELEMENTSOF(ops); k++)
                if (strcmp(ops[k].name, o->name) == 0)
                        break;
        if (k == XP_ELEMENTSOF(ops))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "patch[%zu]: unknown op \"%s\" (expected add, remove, replace, move, copy or test)",
                    i,
                    o->name);
        o->op = ops[k].op;

        path_value = json_object_get(op, "path");
        if (!path_value)
                return xp_errorf(err, -EINVAL, "patch[%zu] (%s): missing \"path\"", i, o->name);
        if (!json_is_string(path_value))
                return xp_errorf(
                    err, -EINVAL, "patch[%zu] (%s): \"path\" is not a string", i, o->name);
        o->path_text = json_string_value(path_value);
        if (ops[k].value) {
                o->value = json_object_get(op, "value");
                if (!o->value)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "patch[%zu] (%s %s): missing \"value\"",
                                         i,
                                         o->name,
                                         o->path_text);
        }
        if (ops[k].from) {
                from_value = json_object_get(op, "from");
                if (!from_value || !json_is_string(from_value))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "patch[%zu] (%s %s): %s",
                                         i,
                                         o->name,
                                         o->path_text,
                                         from_value ? "\"from\" is not a string"
                                                    : "missing \"from\"");
                o->from_text = json_string_value(from_value);
        }

        r = pointer_parse(o->path_text, &o->path, o->why, sizeof(o->why));
        if (r < 0)
                return op_failed(o, r, err);
        if (o->from_text) {
                r = pointer_parse(o->from_text, &o->from, o->why, sizeof(o->why));
                if (r == -EINVAL)
                        return from_failed(o, err);
                if (r < 0)
                        return op_failed(o, r, err);
        }
        return 0;
}

/* add, and replace: remove the target (which must exist), then add the value in its place. */
static int op_add(json_t **doc, struct patch_op *o, size_t *total)
{
        json_t *copy;
        int r;

        if (o->op == OP_REPLACE && !walk(*doc, &o->path, o->path.n, o->why, sizeof(o->why)))
                return -EINVAL;
        r = check_growth(o->value, &o->path, total, o->why, sizeof(o->why));
        if (r < 0)
                return r;
        /* the target exists, so removing it cannot fail and add puts it back in place */
        if (o->op == OP_REPLACE && o->path.n > 0)
                (void)do_remove(*doc, &o->path, NULL, o->why, sizeof(o->why));
        copy = json_deep_copy(o->value);
        if (!copy)
                return -ENOMEM;
        return do_add(doc, &o->path, copy, o->why, sizeof(o->why));
}

/* move and copy: 0, -errno with o->why, or 1 after writing err (from is wrong or holds path). */
static int op_move(json_t **doc, struct patch_op *o, size_t *total, struct xp_error *err)
{
        json_t *source, *moved;
        int r;

        if (o->op == OP_MOVE && proper_prefix(o->from_text, o->path_text)) {
                xp_errorf(err,
                          -EINVAL,
                          "patch[%zu] (%s %s): cannot move \"%s\" into its own child",
                          o->i,
                          o->name,
                          o->path_text,
                          o->from_text);
                return 1;
        }
        source = walk(*doc, &o->from, o->from.n, o->why, sizeof(o->why));
        if (!source) {
                from_failed(o, err);
                return 1;
        }
        if (o->op == OP_MOVE && strcmp(o->from_text, o->path_text) == 0)
                return 0;
        r = check_growth(source, &o->path, total, o->why, sizeof(o->why));
        if (r < 0)
                return r;
        if (o->op == OP_COPY) {
                moved = json_deep_copy(source);
                if (!moved)
                        return -ENOMEM;
        } else {
                r = do_remove(*doc, &o->from, &moved, o->why, sizeof(o->why));
                if (r < 0)
                        return r;
        }
        return do_add(doc, &o->path, moved, o->why, sizeof(o->why));
}

static int op_test(json_t *doc, struct patch_op *o)
{
        const json_t *target = walk(doc, &o->path, o->path.n, o->why, sizeof(o->why));

        if (!target)
                return -EINVAL;
        if (!xp_patch_value_equal(target, o->value)) {
                snprintf(o->why, sizeof(o->why), "test failed");
                return -EINVAL;
        }
        return 0;
}

static int apply_op(json_t **doc, size_t i, const json_t *op, size_t *total, struct xp_error *err)
{
        _cleanup_(patch_op_done) struct patch_op o = {.i = i};
        int r;

        r = read_op(op, i, &o, err);
        if (r < 0)
                return r;
        switch (o.op) {
        case OP_ADD:
        case OP_REPLACE:
                r = op_add(doc, &o, total);
                break;
        case OP_REMOVE:
                r = do_remove(*doc, &o.path, NULL, o.why, sizeof(o.why));
                break;
        case OP_MOVE:
        case OP_COPY:
                r = op_move(doc, &o, total, err);
                if (r > 0)
                        return -EINVAL; /* err says what is wrong with from */
                break;
        case OP_TEST:
                r = op_test(*doc, &o);
                break;
        }
        return r < 0 ? op_failed(&o, r, err) : 0;
}

int xp_patch_json_apply(const json_t *original,
                        const json_t *patch,
                        json_t **ret,
                        struct xp_error *err)
{
        size_t total = 0, depth = 0;
        json_t *doc;
        int r;

        /* Go decodes null to no operations: the object unchanged, as kube-apiserver answers */
        if (json_is_null(patch)) {
                *ret = json_deep_copy(original);
                return *ret ? 0
                            : xp_errorf(err, -ENOMEM, "patch: out of memory copying the object");
        }
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
