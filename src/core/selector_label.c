/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Label selectors. The grammar and its corner cases follow k8s.io/apimachinery/pkg/labels, so a
 * selector kubectl accepts means the same here:
 *  - '!' is a unary operator only before a key; "!a=b" is a syntax error;
 *  - `in` and `notin` are operators only after a key; elsewhere they are plain words ("in=x");
 *  - an `in` list may hold empty values: "()" is {""}, "(,x)" and "(x,)" add "" to {x};
 *  - `a=` and `a!=` compare with the empty value;
 *  - '>' and '<' take an integer, and match only labels whose value is an integer.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/names.h"
#include "xpool/selector.h"
#include "xpool/strutil.h"

enum token_kind {
        TOKEN_END,
        TOKEN_WORD, /* a key, a value, or the operators `in` and `notin` */
        TOKEN_COMMA,
        TOKEN_NOT,
        TOKEN_EQ,
        TOKEN_EQEQ,
        TOKEN_NE,
        TOKEN_GT,
        TOKEN_LT,
        TOKEN_OPEN,
        TOKEN_CLOSE,
};

struct token {
        enum token_kind kind;
        size_t pos; /* byte offset of the token in the text */
        size_t len;
};

enum op {
        OP_EXISTS,
        OP_NOT_EXISTS,
        OP_EQUALS, /* = and == */
        OP_NOT_EQUALS,
        OP_IN,
        OP_NOT_IN,
        OP_GT,
        OP_LT,
};

struct requirement {
        char *key;
        enum op op;
        char **values; /* one for =, ==, !=, >, <; at least one for in, notin */
        size_t n_values;
        int64_t number; /* the value of > and < */
};

struct xp_label_selector {
        struct requirement *items;
        size_t n;
};

struct parser {
        const char *text;
        size_t pos; /* where the next token starts, or whitespace before it */
        struct xp_error *err;
};

/* Kubernetes' whitespace: not isspace(), which would also take \v and \f. */
static bool is_blank(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_symbol(char c)
{
        return c != '\0' && strchr("=!(),<>", c);
}

static struct token peek(const struct parser *p)
{
        const char *s = p->text;
        size_t i = p->pos;
        struct token t;

        while (is_blank(s[i]))
                i++;
        t.pos = i;
        t.len = 1;
        switch (s[i]) {
        case '\0':
                t.kind = TOKEN_END;
                t.len = 0;
                break;
        case ',':
                t.kind = TOKEN_COMMA;
                break;
        case '(':
                t.kind = TOKEN_OPEN;
                break;
        case ')':
                t.kind = TOKEN_CLOSE;
                break;
        case '>':
                t.kind = TOKEN_GT;
                break;
        case '<':
                t.kind = TOKEN_LT;
                break;
        case '!':
                t.kind = s[i + 1] == '=' ? TOKEN_NE : TOKEN_NOT;
                t.len = t.kind == TOKEN_NE ? 2 : 1;
                break;
        case '=':
                t.kind = s[i + 1] == '=' ? TOKEN_EQEQ : TOKEN_EQ;
                t.len = t.kind == TOKEN_EQEQ ? 2 : 1;
                break;
        default:
                t.kind = TOKEN_WORD;
                while (s[i + t.len] && !is_blank(s[i + t.len]) && !is_symbol(s[i + t.len]))
                        t.len++;
                break;
        }
        return t;
}

static struct token next(struct parser *p)
{
        struct token t = peek(p);

        p->pos = t.pos + t.len;
        return t;
}

static bool word_is(const struct parser *p, struct token t, const char *word)
{
        return t.kind == TOKEN_WORD && t.len == strlen(word) &&
               memcmp(p->text + t.pos, word, t.len) == 0;
}

/* The token as a message shows it: quoted, or "the end". */
static const char *describe(const struct parser *p, struct token t, char buf[static XP_QUOTE_MAX])
{
        if (t.kind == TOKEN_END)
                return "the end";
        return xp_quote_mem(p->text + t.pos, t.len, buf);
}

/* `labelSelector: "<text>": <detail> at position <pos>` */
_printf_(4, 5) static int fail(const struct parser *p, int code, size_t pos, const char *fmt, ...)
{
        char detail[XP_ERROR_MSG_MAX], q[XP_QUOTE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        return xp_errorf(p->err,
                         code,
                         "labelSelector: %s: %s at position %zu",
                         xp_quote(p->text, q),
                         detail,
                         pos);
}

/* A key or value failed its names.c check: `labelSelector: "<text>": <what> at position N: ..` */
static int fail_check(const struct parser *p, const char *what, size_t pos, const char *why)
{
        char q[XP_QUOTE_MAX];

        return xp_errorf(p->err,
                         -EINVAL,
                         "labelSelector: %s: %s at position %zu: %s",
                         xp_quote(p->text, q),
                         what,
                         pos,
                         why);
}

/*
 * strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits only, within int64_t.
 * Hand-written rather than strtoll() so that matching leaves errno alone.
 */
static bool parse_int64(const char *s, int64_t *ret)
{
        bool negative = *s == '-';
        uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;

        if (*s == '+' || *s == '-')
                s++;
        if (*s == '\0')
                return false;
        for (; *s; s++) {
                unsigned digit = (unsigned)(*s - '0');

                if (*s < '0' || *s > '9' || v > (limit - digit) / 10)
                        return false;
                v = v * 10 + digit;
        }
        *ret = negative ? -(int64_t)(v - 1) - 1 : (int64_t)v;
        return true;
}

static void requirement_done(struct requirement *req)
{
        free(req->key);
        for (size_t i = 0; i < req->n_values; i++)
                free(req->values[i]);
        free(req->values);
}

/* Appends the word t (or "" when t is not a word) to req's values, checked as a label value. */
static int add_value(struct parser *p, struct requirement *req, struct token t)
{
        struct xp_error check = {0};
        size_t len = t.kind == TOKEN_WORD ? t.len : 0;
        char **values;
        char *value;

        if (req->n_values == XP_SELECTOR_VALUES_MAX)
                return fail(
                    p, -E2BIG, t.pos, "more than %d values in one list", XP_SELECTOR_VALUES_MAX);
        value = strndup(p->text + t.pos, len);
        if (!value)
                return -ENOMEM;
        if (xp_check_label_value(value, &check) < 0) {
                free(value);
                return fail_check(p, "label value", t.pos, check.msg);
        }
        values = reallocarray(req->values, req->n_values + 1, sizeof(*values));
        if (!values) {
                free(value);
                return -ENOMEM;
        }
        values[req->n_values++] = value;
        req->values = values;
        return 0;
}

/* After =, ==, !=, > or <: one value, empty when the requirement ends here. */
static int parse_exact_value(struct parser *p, struct requirement *req, struct token op)
{
        char q1[XP_QUOTE_MAX], q2[XP_QUOTE_MAX];
        struct token t = peek(p);
        int r;

        if (t.kind != TOKEN_END && t.kind != TOKEN_COMMA && t.kind != TOKEN_WORD)
                return fail(p,
                            -EINVAL,
                            t.pos,
                            "expected a value after %s but found %s",
                            describe(p, op, q1),
                            describe(p, t, q2));
        if (t.kind == TOKEN_WORD)
                next(p);
        r = add_value(p, req, t);
        if (r < 0)
                return r;
        if ((req->op == OP_GT || req->op == OP_LT) && !parse_int64(req->values[0], &req->number))
                return fail(p,
                            -EINVAL,
                            t.pos,
                            "the value after %s must be a 64-bit integer, not %s",
                            describe(p, op, q1),
                            xp_quote(req->values[0], q2));
        return 0;
}

/*
 * After `in` or `notin`: "(" values ")". Commas with nothing between them, or next to a
 * parenthesis, stand for the empty value, as in Kubernetes.
 */
static int parse_value_list(struct parser *p, struct requirement *req, struct token op)
{
        char q1[XP_QUOTE_MAX], q2[XP_QUOTE_MAX];
        bool want_value = true;
        struct token t = next(p);
        int r;

        if (t.kind != TOKEN_OPEN)
                return fail(p,
                            -EINVAL,
                            t.pos,
                            "expected '(' after %s but found %s",
                            describe(p, op, q1),
                            describe(p, t, q2));
        if (peek(p).kind == TOKEN_CLOSE)
                return add_value(p, req, next(p));
        for (;;) {
                t = next(p);
                switch (t.kind) {
                case TOKEN_WORD:
                        if (!want_value)
                                return fail(p,
                                            -EINVAL,
                                            t.pos,
                                            "expected ',' or ')' but found %s",
                                            describe(p, t, q1));
                        r = add_value(p, req, t);
                        if (r < 0)
                                return r;
                        want_value = false;
                        break;
                case TOKEN_COMMA:
                case TOKEN_CLOSE:
                        if (want_value) {
                                r = add_value(p, req, t);
                                if (r < 0)
                                        return r;
                        }
                        if (t.kind == TOKEN_CLOSE)
                                return 0;
                        want_value = true;
                        break;
                case TOKEN_END:
                        return fail(p, -EINVAL, t.pos, "unterminated value list");
                default:
                        return fail(p,
                                    -EINVAL,
                                    t.pos,
                                    "expected a value, ',' or ')' but found %s",
                                    describe(p, t, q1));
                }
        }
}

/* One requirement into *req (zeroed by the caller; it frees req's parts on failure too). */
static int parse_requirement(struct parser *p, struct requirement *req)
{
        char q[XP_QUOTE_MAX];
        struct xp_error check = {0};
        struct token t = next(p), op;
        bool negated = t.kind == TOKEN_NOT;

        if (negated) {
                t = next(p);
                if (t.kind != TOKEN_WORD)
                        return fail(p,
                                    -EINVAL,
                                    t.pos,
                                    "expected a label key after '!' but found %s",
                                    describe(p, t, q));
        }
        req->key = strndup(p->text + t.pos, t.len);
        if (!req->key)
                return -ENOMEM;
        if (xp_check_qualified_name(req->key, &check) < 0)
                return fail_check(p, "label key", t.pos, check.msg);

        op = peek(p);
        if (negated) {
                req->op = OP_NOT_EXISTS;
                return 0;
        }
        if (op.kind == TOKEN_END || op.kind == TOKEN_COMMA) {
                req->op = OP_EXISTS;
                return 0;
        }
        next(p);
        switch (op.kind) {
        case TOKEN_EQ:
        case TOKEN_EQEQ:
                req->op = OP_EQUALS;
                return parse_exact_value(p, req, op);
        case TOKEN_NE:
                req->op = OP_NOT_EQUALS;
                return parse_exact_value(p, req, op);
        case TOKEN_GT:
                req->op = OP_GT;
                return parse_exact_value(p, req, op);
        case TOKEN_LT:
                req->op = OP_LT;
                return parse_exact_value(p, req, op);
        case TOKEN_WORD:
                if (word_is(p, op, "in") || word_is(p, op, "notin")) {
                        req->op = word_is(p, op, "in") ? OP_IN : OP_NOT_IN;
                        return parse_value_list(p, req, op);
                }
                break;
        default:
                break;
        }
        return fail(p,
                    -EINVAL,
                    op.pos,
                    "expected an operator (=, ==, !=, in, notin, >, <) but found %s",
                    describe(p, op, q));
}

void xp_label_selector_free(struct xp_label_selector *selector)
{
        if (!selector)
                return;
        for (size_t i = 0; i < selector->n; i++)
                requirement_done(&selector->items[i]);
        free(selector->items);
        free(selector);
}

int xp_label_selector_parse(const char *text, struct xp_label_selector **ret, struct xp_error *err)
{
        _cleanup_(xp_label_selector_freep) struct xp_label_selector *selector = NULL;
        struct parser p = {.text = text, .err = err};
        char q[XP_QUOTE_MAX];
        size_t len = strlen(text);

        if (len > XP_SELECTOR_TEXT_MAX)
                return xp_errorf(err,
                                 -E2BIG,
                                 "labelSelector: %s: %zu bytes, more than the limit of %d",
                                 xp_quote(text, q),
                                 len,
                                 XP_SELECTOR_TEXT_MAX);
        selector = calloc(1, sizeof(*selector));
        if (!selector)
                return -ENOMEM;

        for (bool after_comma = false;; after_comma = true) {
                struct token t = peek(&p);
                struct requirement req = {0}, *items;
                int r;

                if (t.kind == TOKEN_END && !after_comma)
                        break;
                if (t.kind != TOKEN_WORD && t.kind != TOKEN_NOT)
                        return fail(&p,
                                    -EINVAL,
                                    t.pos,
                                    after_comma ? "expected a requirement after ',' but found %s"
                                                : "expected a label key or '!' but found %s",
                                    describe(&p, t, q));
                if (selector->n == XP_SELECTOR_REQUIREMENTS_MAX)
                        return fail(&p,
                                    -E2BIG,
                                    t.pos,
                                    "more than %d requirements",
                                    XP_SELECTOR_REQUIREMENTS_MAX);
                r = parse_requirement(&p, &req);
                items =
                    r < 0 ? NULL : reallocarray(selector->items, selector->n + 1, sizeof(*items));
                if (!items) {
                        requirement_done(&req);
                        return r < 0 ? r : -ENOMEM;
                }
                items[selector->n++] = req;
                selector->items = items;

                t = next(&p);
                if (t.kind == TOKEN_END)
                        break;
                if (t.kind != TOKEN_COMMA)
                        return fail(&p,
                                    -EINVAL,
                                    t.pos,
                                    "expected ',' or the end but found %s",
                                    describe(&p, t, q));
        }
        *ret = TAKE_PTR(selector);
        return 0;
}

static bool has_value(const struct requirement *req, const char *value)
{
        for (size_t i = 0; i < req->n_values; i++)
                if (strcmp(req->values[i], value) == 0)
                        return true;
        return false;
}

/* value: the label's value, NULL when the object has no such label. */
static bool requirement_matches(const struct requirement *req, const char *value)
{
        int64_t n;

        switch (req->op) {
        case OP_EXISTS:
                return value;
        case OP_NOT_EXISTS:
                return !value;
        case OP_EQUALS:
        case OP_IN:
                return value && has_value(req, value);
        case OP_NOT_EQUALS:
        case OP_NOT_IN:
                return !value || !has_value(req, value);
        case OP_GT:
                return value && parse_int64(value, &n) && n > req->number;
        case OP_LT:
                return value && parse_int64(value, &n) && n < req->number;
        }
        return false;
}

bool xp_label_selector_matches(const struct xp_label_selector *selector, const json_t *labels)
{
        if (!selector)
                return true;
        for (size_t i = 0; i < selector->n; i++) {
                const struct requirement *req = &selector->items[i];
                json_t *v = json_is_object(labels) ? json_object_get(labels, req->key) : NULL;

                if (!requirement_matches(req, json_is_string(v) ? json_string_value(v) : NULL))
                        return false;
        }
        return true;
}

bool xp_label_selector_matches_map(const struct xp_label_selector *selector,
                                   const struct xp_strmap *labels)
{
        if (!selector)
                return true;
        for (size_t i = 0; i < selector->n; i++) {
                const struct requirement *req = &selector->items[i];

                if (!requirement_matches(req, labels ? xp_strmap_get(labels, req->key) : NULL))
                        return false;
        }
        return true;
}

bool xp_label_selector_is_empty(const struct xp_label_selector *selector)
{
        return !selector || selector->n == 0;
}
