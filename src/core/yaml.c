/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML and JSON manifests into jansson values, with a source map from JSON pointers to where each
 * value was written.
 *
 * The libyaml event API drives a stack of open collections; complete values are added to the
 * collection below them. The source map is a tree shaped like the document: one node per
 * collection, holding each member's key and value positions, mapping members sorted by key for
 * binary search. An alias shares its anchor's json_t and its anchor's map node (both reference
 * counted), so a "billion laughs" document costs memory in proportion to its text; the values it
 * would expand to are counted and the load fails with -E2BIG as soon as the count passes the
 * bound. Merge keys copy member references into the merging mapping once it is complete, so that
 * explicit keys win wherever they were written.
 */
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "xpool/strutil.h"
#include "xpool/yaml.h"

#define TAG_PREFIX "tag:yaml.org,2002:"
#define MERGE_TAG  TAG_PREFIX "merge"
#define MAP_TAG    TAG_PREFIX "map"
#define SEQ_TAG    TAG_PREFIX "seq"
#define DIGITS     "0123456789"

/* ------------------------------------------------------------------------------------------ */
/* Source map */

struct sm_node;

struct sm_child {
        char *key; /* owned; NULL in a sequence */
        struct xp_source_entry entry;
        struct sm_node *node; /* a reference; NULL for a scalar */
};

struct sm_node {
        unsigned long refs;
        bool mapping;
        unsigned height; /* levels of collections, this one included */
        size_t values;   /* values in this subtree after expansion, saturating past the bound */
        size_t n;
        size_t allocated;
        struct sm_child *children; /* a complete mapping's are sorted by key */
};

struct xp_source_map {
        struct xp_source_entry root;
        struct sm_node *node; /* NULL when the root is a scalar */
};

static struct sm_node *sm_node_new(bool mapping)
{
        struct sm_node *node = calloc(1, sizeof(*node));

        if (!node)
                return NULL;
        node->refs = 1;
        node->mapping = mapping;
        node->height = 1;
        node->values = 1;
        return node;
}

static struct sm_node *sm_node_ref(struct sm_node *node)
{
        if (node)
                node->refs++;
        return node;
}

static void sm_node_unref(struct sm_node *node)
{
        if (!node || --node->refs > 0)
                return;
        for (size_t i = 0; i < node->n; i++) {
                free(node->children[i].key);
                sm_node_unref(node->children[i].node);
        }
        free(node->children);
        free(node);
}

static void sm_node_unrefp(struct sm_node **node)
{
        sm_node_unref(*node);
}

static size_t child_values(const struct sm_node *child)
{
        return child ? child->values : 1;
}

static unsigned child_height(const struct sm_node *child)
{
        return child ? child->height : 0;
}

/* Appends a member, taking key and the reference to child even on failure. */
static int
sm_node_append(struct sm_node *node, char *key, struct xp_source_entry entry, struct sm_node *child)
{
        size_t values = child_values(child);

        if (node->n == node->allocated) {
                size_t allocated = node->allocated ? node->allocated * 2 : 4;
                struct sm_child *children =
                    reallocarray(node->children, allocated, sizeof(*children));

                if (!children) {
                        free(key);
                        sm_node_unref(child);
                        return -ENOMEM;
                }
                node->children = children;
                node->allocated = allocated;
        }
        node->children[node->n++] = (struct sm_child){.key = key, .entry = entry, .node = child};
        if (node->values > XP_YAML_MAX_VALUES || values > XP_YAML_MAX_VALUES - node->values)
                node->values = XP_YAML_MAX_VALUES + 1;
        else
                node->values += values;
        if (child_height(child) + 1 > node->height)
                node->height = child_height(child) + 1;
        return 0;
}

static int child_cmp(const void *a, const void *b)
{
        return strcmp(((const struct sm_child *)a)->key, ((const struct sm_child *)b)->key);
}

static void sm_node_sort(struct sm_node *node)
{
        if (node->mapping && node->n > 1)
                qsort(node->children, node->n, sizeof(node->children[0]), child_cmp);
}

/* strcmp(key, unescaped token) for an RFC 6901 token of len bytes with valid escapes. */
static int token_cmp(const char *key, const char *token, size_t len)
{
        for (size_t i = 0; i < len; key++) {
                unsigned char t = (unsigned char)token[i++];

                if (t == '~')
                        t = token[i++] == '0' ? '~' : '/';
                if ((unsigned char)*key != t)
                        return (unsigned char)*key < t ? -1 : 1;
        }
        return *key ? 1 : 0;
}

static const struct sm_child *find_key(const struct sm_node *node, const char *token, size_t len)
{
        size_t lo = 0, hi = node->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = token_cmp(node->children[mid].key, token, len);

                if (c == 0)
                        return &node->children[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* A member of a complete mapping by its (unescaped) key. */
static const struct sm_child *find_member(const struct sm_node *node, const char *key)
{
        size_t lo = 0, hi = node->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(node->children[mid].key, key);

                if (c == 0)
                        return &node->children[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static const struct sm_child *find_index(const struct sm_node *node, const char *token, size_t len)
{
        size_t index = 0;

        if (len == 0 || len > 19 || (len > 1 && token[0] == '0'))
                return NULL;
        for (size_t i = 0; i < len; i++) {
                if (token[i] < '0' || token[i] > '9')
                        return NULL;
                index = index * 10 + (size_t)(token[i] - '0');
        }
        return index < node->n ? &node->children[index] : NULL;
}

static bool token_valid(const char *token, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (token[i] == '~' &&
                    (i + 1 == len || (token[i + 1] != '0' && token[i + 1] != '1')))
                        return false;
        return true;
}

int xp_source_map_lookup(const struct xp_source_map *map,
                         const char *pointer,
                         struct xp_source_entry *ret)
{
        const struct xp_source_entry *found;
        const struct sm_node *node;
        const char *p = pointer;

        if (!map || !pointer || !ret || (*p && *p != '/'))
                return -EINVAL;
        found = &map->root;
        node = map->node;
        while (*p == '/') {
                const char *token = p + 1;
                size_t len = strcspn(token, "/");
                const struct sm_child *child;

                if (!token_valid(token, len))
                        return -EINVAL;
                if (!node)
                        return -ENOENT;
                child = node->mapping ? find_key(node, token, len) : find_index(node, token, len);
                if (!child)
                        return -ENOENT;
                found = &child->entry;
                node = child->node;
                p = token + len;
        }
        *ret = *found;
        return 0;
}

static void xp_source_map_free(struct xp_source_map *map)
{
        if (!map)
                return;
        sm_node_unref(map->node);
        free(map);
}

void xp_yaml_documents_free(struct xp_yaml_document *docs, size_t n)
{
        if (!docs)
                return;
        for (size_t i = 0; i < n; i++) {
                json_decref(docs[i].root);
                xp_source_map_free(docs[i].map);
        }
        free(docs);
}

/* ------------------------------------------------------------------------------------------ */
/* Loader state */

struct anchor {
        json_t *value;        /* a reference */
        struct sm_node *node; /* a reference; NULL for a scalar */
        char *text;           /* a scalar's raw text, for an alias used as a key */
        size_t text_len;
};

struct merge_source {
        json_t *value; /* a mapping; a reference */
        struct sm_node *node;
        struct xp_source_pos pos; /* the merge key */
};

struct frame {
        json_t *value;        /* the collection being built */
        struct sm_node *node; /* its source map node */
        struct xp_source_pos pos;
        char *anchor;    /* registered when the collection is complete */
        bool merge_list; /* a sequence written as a merge key's value */
        /* mappings: the key waiting for its value */
        bool have_key;
        bool key_is_merge;
        bool seen_merge;
        char *key;
        struct xp_source_pos key_pos;
        struct merge_source *merges;
        size_t n_merges;
};

struct loader {
        const char *data;
        size_t size;
        const char *name;
        struct xp_error *err;
        bool reported; /* err holds a positioned message */
        locale_t c_locale;
        yaml_parser_t parser;
        bool parser_ready;

        struct frame *stack;
        size_t depth;
        size_t stack_allocated;

        json_t *anchor_index; /* anchor name -> index into anchors */
        struct anchor *anchors;
        size_t n_anchors;
        size_t anchors_allocated;

        /* the document being built */
        json_t *root;
        struct sm_node *root_node;
        struct xp_source_pos root_pos;
        bool have_root;
        size_t values;
        size_t total_values;

        struct xp_yaml_document *docs;
        size_t n_docs;
        size_t docs_allocated;
};

static int fail(struct loader *l, struct xp_source_pos pos, int code, const char *fmt, ...)
    _printf_(4, 5);

static int fail(struct loader *l, struct xp_source_pos pos, int code, const char *fmt, ...)
{
        char msg[XP_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        l->reported = true;
        return xp_errorf(l->err, code, "%s:%u:%u: %s", l->name, pos.line, pos.column, msg);
}

static struct xp_source_pos mark_pos(yaml_mark_t mark)
{
        return (struct xp_source_pos){
            .line = mark.line >= UINT_MAX ? UINT_MAX : (unsigned)mark.line + 1,
            .column = mark.column >= UINT_MAX ? UINT_MAX : (unsigned)mark.column + 1,
        };
}

static char *memdup0(const char *s, size_t len)
{
        char *copy = malloc(len + 1);

        if (!copy)
                return NULL;
        memcpy(copy, s, len);
        copy[len] = '\0';
        return copy;
}

/* "!!int" for the core schema's tags, the tag itself otherwise; quoted for a message. */
static char *tag_quote(const char *tag, char buf[static XP_QUOTE_MAX])
{
        char shown[XP_QUOTE_MAX];

        if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0) {
                snprintf(shown, sizeof(shown), "!!%.64s", tag + strlen(TAG_PREFIX));
                return xp_quote(shown, buf);
        }
        return xp_quote(tag, buf);
}

static void frame_done(struct frame *f)
{
        json_decref(f->value);
        sm_node_unref(f->node);
        free(f->anchor);
        free(f->key);
        for (size_t i = 0; i < f->n_merges; i++) {
                json_decref(f->merges[i].value);
                sm_node_unref(f->merges[i].node);
        }
        free(f->merges);
        *f = (struct frame){0};
}

static void anchors_clear(struct loader *l)
{
        for (size_t i = 0; i < l->n_anchors; i++) {
                json_decref(l->anchors[i].value);
                sm_node_unref(l->anchors[i].node);
                free(l->anchors[i].text);
        }
        l->n_anchors = 0;
        json_object_clear(l->anchor_index);
}

static void document_clear(struct loader *l)
{
        while (l->depth > 0)
                frame_done(&l->stack[--l->depth]);
        json_decref(TAKE_PTR(l->root));
        sm_node_unref(TAKE_PTR(l->root_node));
        l->have_root = false;
        l->values = 0;
        anchors_clear(l);
}

static void loader_done(struct loader *l)
{
        document_clear(l);
        free(l->stack);
        free(l->anchors);
        json_decref(l->anchor_index);
        xp_yaml_documents_free(l->docs, l->n_docs);
        if (l->parser_ready)
                yaml_parser_delete(&l->parser);
        if (l->c_locale)
                freelocale(l->c_locale);
}

/* Counts n more values into the document, failing once past the bounds. */
static int count_values(struct loader *l, size_t n, struct xp_source_pos pos)
{
        if (n > XP_YAML_MAX_VALUES - l->values)
                return fail(l,
                            pos,
                            -E2BIG,
                            "document has more than %d values after alias expansion",
                            XP_YAML_MAX_VALUES);
        if (n > XP_YAML_MAX_TOTAL_VALUES - l->total_values)
                return fail(l,
                            pos,
                            -E2BIG,
                            "input has more than %d values in all documents after alias expansion",
                            XP_YAML_MAX_TOTAL_VALUES);
        l->values += n;
        l->total_values += n;
        return 0;
}

static int too_deep(struct loader *l, struct xp_source_pos pos)
{
        return fail(l, pos, -E2BIG, "nesting is deeper than %d levels", XP_YAML_MAX_DEPTH);
}

static struct frame *top(struct loader *l)
{
        return l->depth > 0 ? &l->stack[l->depth - 1] : NULL;
}

/* The parent expects a key: the next node is a mapping key. */
static bool expects_key(struct loader *l)
{
        struct frame *f = top(l);

        return f && f->node->mapping && !f->have_key;
}

/* Values in a merge key's value are not part of the document, only the members merged. */
static bool in_merge_value(struct loader *l)
{
        struct frame *f = top(l);

        return f && (f->node->mapping ? f->have_key && f->key_is_merge : f->merge_list);
}

/* ------------------------------------------------------------------------------------------ */
/* Scalars */

static bool is_null(const char *s)
{
        return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
               !strcmp(s, "NULL");
}

/* 1 for true, 0 for false, -1 for neither. */
static int parse_bool(const char *s)
{
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
                return 1;
        if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
                return 0;
        return -1;
}

static const char *skip_sign(const char *s)
{
        return *s == '+' || *s == '-' ? s + 1 : s;
}

static bool is_inf(const char *s)
{
        s = skip_sign(s);
        return !strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, ".INF");
}

static bool is_nan(const char *s)
{
        return !strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN");
}

static bool is_decimal(const char *s)
{
        s = skip_sign(s);
        return *s && strspn(s, DIGITS) == strlen(s);
}

/* 0x hex or 0o octal: returns the base, or 0. */
static unsigned prefixed_base(const char *s)
{
        if (s[0] != '0')
                return 0;
        if (s[1] == 'x' && s[2] && strspn(s + 2, DIGITS "abcdefABCDEF") == strlen(s + 2))
                return 16;
        if (s[1] == 'o' && s[2] && strspn(s + 2, "01234567") == strlen(s + 2))
                return 8;
        return 0;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_float(const char *s)
{
        size_t n;

        s = skip_sign(s);
        n = strspn(s, DIGITS);
        if (s[n] == '.') {
                size_t fraction = strspn(s + n + 1, DIGITS);

                if (n == 0 && fraction == 0)
                        return false;
                s += n + 1 + fraction;
        } else {
                if (n == 0)
                        return false;
                s += n;
        }
        if (*s == 'e' || *s == 'E') {
                s = skip_sign(s + 1);
                n = strspn(s, DIGITS);
                if (n == 0)
                        return false;
                s += n;
        }
        return *s == '\0';
}

static int
make_real(struct loader *l, double d, const char *text, struct xp_source_pos pos, json_t **ret)
{
        char q[XP_QUOTE_MAX];

        if (!isfinite(d))
                return fail(
                    l, pos, -EINVAL, "%s is out of range: JSON has no infinity", xp_quote(text, q));
        *ret = json_real(d);
        return *ret ? 0 : -ENOMEM;
}

static int make_int(struct loader *l, const char *text, struct xp_source_pos pos, json_t **ret)
{
        unsigned base = prefixed_base(text);
        long long n;

        if (base) {
                uint64_t u = 0;
                double d = 0;
                bool big = false;

                for (const char *p = text + 2; *p; p++) {
                        unsigned digit =
                            *p <= '9' ? (unsigned)(*p - '0') : (unsigned)((*p | 0x20) - 'a' + 10);

                        if (u > (UINT64_MAX - digit) / base)
                                big = true;
                        else
                                u = u * base + digit;
                        d = d * base + digit;
                }
                if (big || u > INT64_MAX)
                        return make_real(l, d, text, pos, ret);
                n = (long long)u;
        } else {
                errno = 0;
                n = strtoll(text, NULL, 10);
                if (errno == ERANGE)
                        return make_real(l, strtod_l(text, NULL, l->c_locale), text, pos, ret);
        }
        *ret = json_integer(n);
        return *ret ? 0 : -ENOMEM;
}

static int not_finite(struct loader *l, const char *text, struct xp_source_pos pos)
{
        if (is_inf(text))
                return fail(l, pos, -EINVAL, "%s is not a valid value: JSON has no infinity", text);
        return fail(l, pos, -EINVAL, "%s is not a valid value: JSON has no NaN", text);
}

/* A plain scalar without a tag, by the YAML 1.2 core schema. */
static int resolve_plain(struct loader *l, const char *text, struct xp_source_pos pos, json_t **ret)
{
        int b;

        if (is_null(text)) {
                *ret = json_null();
                return 0;
        }
        b = parse_bool(text);
        if (b >= 0) {
                *ret = json_boolean(b);
                return 0;
        }
        if (is_decimal(text) || prefixed_base(text))
                return make_int(l, text, pos, ret);
        if (is_float(text))
                return make_real(l, strtod_l(text, NULL, l->c_locale), text, pos, ret);
        if (is_inf(text) || is_nan(text))
                return not_finite(l, text, pos);
        *ret = NULL;
        return 0;
}

static int make_string(const char *text, size_t len, json_t **ret)
{
        if (!xp_utf8_valid(text, len))
                return -EILSEQ;
        *ret = json_stringn_nocheck(text, len);
        return *ret ? 0 : -ENOMEM;
}

static int
make_scalar(struct loader *l, const yaml_event_t *e, struct xp_source_pos pos, json_t **ret)
{
        const char *text = (const char *)e->data.scalar.value;
        size_t len = e->data.scalar.length;
        const char *tag = (const char *)e->data.scalar.tag;
        bool clean = strlen(text) == len; /* no NUL inside */
        char q[XP_QUOTE_MAX], t[XP_QUOTE_MAX];
        json_t *v = NULL;
        int r;

        if (!tag && e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
                tag = YAML_STR_TAG;
        if (!tag) {
                r = resolve_plain(l, text, pos, &v);
                if (r < 0)
                        return r;
        } else if (!strcmp(tag, "!") || !strcmp(tag, YAML_STR_TAG)) {
                /* a string */
        } else if (!strcmp(tag, YAML_NULL_TAG)) {
                if (!clean || !is_null(text))
                        goto invalid;
                v = json_null();
        } else if (!strcmp(tag, YAML_BOOL_TAG)) {
                int b = clean ? parse_bool(text) : -1;

                if (b < 0)
                        goto invalid;
                v = json_boolean(b);
        } else if (!strcmp(tag, YAML_INT_TAG)) {
                if (!clean || (!is_decimal(text) && !prefixed_base(text)))
                        goto invalid;
                return make_int(l, text, pos, ret);
        } else if (!strcmp(tag, YAML_FLOAT_TAG)) {
                if (clean && (is_inf(text) || is_nan(text)))
                        return not_finite(l, text, pos);
                if (!clean || !is_float(text))
                        goto invalid;
                return make_real(l, strtod_l(text, NULL, l->c_locale), text, pos, ret);
        } else {
                return fail(l, pos, -EINVAL, "unsupported tag %s", tag_quote(tag, t));
        }
        if (!v) {
                r = make_string(text, len, &v);
                if (r == -EILSEQ)
                        return fail(l, pos, -EINVAL, "string is not valid UTF-8");
                if (r < 0)
                        return r;
        }
        *ret = v;
        return 0;

invalid:
        /* one of the core schema's tags */
        return fail(l,
                    pos,
                    -EINVAL,
                    "%s is not a valid !!%s",
                    xp_quote_mem(text, len, q),
                    tag + strlen(TAG_PREFIX));
}

/* ------------------------------------------------------------------------------------------ */
/* Building the tree */

static int
add_merge_source(struct frame *f, json_t *value, struct sm_node *node, struct xp_source_pos pos)
{
        struct merge_source *merges = reallocarray(f->merges, f->n_merges + 1, sizeof(*merges));

        if (!merges)
                return -ENOMEM;
        f->merges = merges;
        f->merges[f->n_merges++] = (struct merge_source){
            .value = json_incref(value),
            .node = sm_node_ref(node),
            .pos = pos,
        };
        return 0;
}

/* The value of a merge key: a mapping, or a sequence of mappings. */
static int add_merge_value(struct loader *l,
                           struct frame *f,
                           json_t *value,
                           struct sm_node *node,
                           struct xp_source_pos pos)
{
        static const char what[] =
            "the value of a merge key must be a mapping or a list of mappings";

        if (json_is_object(value))
                return add_merge_source(f, value, node, f->key_pos);
        if (!json_is_array(value))
                return fail(l, pos, -EINVAL, "%s", what);
        for (size_t i = 0; i < node->n; i++) {
                json_t *member = json_array_get(value, i);
                int r;

                if (!json_is_object(member))
                        return fail(l, node->children[i].entry.value, -EINVAL, "%s", what);
                r = add_merge_source(f, member, node->children[i].node, f->key_pos);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Adds a complete value to the open collection, or makes it the root. Takes the references. */
static int
add_value(struct loader *l, json_t *value, struct sm_node *node, struct xp_source_pos pos)
{
        json_auto_t *v = value;
        _cleanup_(sm_node_unrefp) struct sm_node *n = node;
        struct frame *f = top(l);
        int r;

        if (!f) {
                l->root = TAKE_PTR(v);
                l->root_node = TAKE_PTR(n);
                l->root_pos = pos;
                l->have_root = true;
                return 0;
        }
        if (!f->node->mapping) {
                if (json_array_append_new(f->value, TAKE_PTR(v)) < 0)
                        return -ENOMEM;
                r = sm_node_append(f->node, NULL, (struct xp_source_entry){pos, pos}, TAKE_PTR(n));
        } else if (f->key_is_merge) {
                r = add_merge_value(l, f, v, n, pos);
        } else {
                if (json_object_set_new_nocheck(f->value, f->key, TAKE_PTR(v)) < 0)
                        return -ENOMEM;
                r = sm_node_append(f->node,
                                   TAKE_PTR(f->key),
                                   (struct xp_source_entry){.value = pos, .key = f->key_pos},
                                   TAKE_PTR(n));
        }
        if (r < 0)
                return r;
        free(TAKE_PTR(f->key));
        f->have_key = false;
        f->key_is_merge = false;
        if (f->node->values > XP_YAML_MAX_VALUES)
                return fail(l,
                            f->pos,
                            -E2BIG,
                            "document has more than %d values after alias expansion",
                            XP_YAML_MAX_VALUES);
        return 0;
}

static int register_anchor(struct loader *l,
                           const char *name,
                           json_t *value,
                           struct sm_node *node,
                           const char *text,
                           size_t text_len)
{
        struct anchor a = {.text_len = text_len};
        json_t *index;

        if (l->n_anchors == l->anchors_allocated) {
                size_t allocated = l->anchors_allocated ? l->anchors_allocated * 2 : 8;
                struct anchor *anchors = reallocarray(l->anchors, allocated, sizeof(*anchors));

                if (!anchors)
                        return -ENOMEM;
                l->anchors = anchors;
                l->anchors_allocated = allocated;
        }
        if (text) {
                a.text = memdup0(text, text_len);
                if (!a.text)
                        return -ENOMEM;
        }
        index = json_integer((json_int_t)l->n_anchors);
        /* libyaml's anchor names are [0-9A-Za-z_-]+: valid UTF-8 without NUL */
        if (!index || json_object_set_new_nocheck(l->anchor_index, name, index) < 0) {
                free(a.text);
                return -ENOMEM;
        }
        a.value = json_incref(value);
        a.node = sm_node_ref(node);
        l->anchors[l->n_anchors++] = a;
        return 0;
}

static const struct anchor *find_anchor(struct loader *l, const char *name)
{
        json_t *index = json_object_get(l->anchor_index, name);

        return index ? &l->anchors[json_integer_value(index)] : NULL;
}

static int
set_key(struct loader *l, const char *text, size_t len, bool merge, struct xp_source_pos pos)
{
        struct frame *f = top(l);
        char q[XP_QUOTE_MAX];

        if (strlen(text) != len)
                return fail(l,
                            pos,
                            -EINVAL,
                            "mapping key %s contains a NUL byte",
                            xp_quote_mem(text, len, q));
        if (!xp_utf8_valid(text, len))
                return fail(l, pos, -EINVAL, "mapping key is not valid UTF-8");
        if (merge ? f->seen_merge : json_object_get(f->value, text) != NULL)
                return fail(l, pos, -EINVAL, "duplicate key %s", xp_quote(text, q));
        f->key = memdup0(text, len);
        if (!f->key)
                return -ENOMEM;
        f->key_pos = pos;
        f->have_key = true;
        f->key_is_merge = merge;
        f->seen_merge |= merge;
        return 0;
}

static int on_scalar(struct loader *l, const yaml_event_t *e)
{
        struct xp_source_pos pos = mark_pos(e->start_mark);
        const char *text = (const char *)e->data.scalar.value;
        size_t len = e->data.scalar.length;
        const char *anchor = (const char *)e->data.scalar.anchor;
        const char *tag = (const char *)e->data.scalar.tag;
        json_auto_t *value = NULL;
        int r;

        if (expects_key(l)) {
                bool merge = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                             (!tag || !strcmp(tag, MERGE_TAG)) && !strcmp(text, "<<");

                r = set_key(l, text, len, merge, pos);
                if (r < 0)
                        return r;
                if (!anchor)
                        return 0;
                /* an anchored key is the string it reads as */
                r = make_string(text, len, &value);
                if (r < 0)
                        return r;
                return register_anchor(l, anchor, value, NULL, text, len);
        }

        r = make_scalar(l, e, pos, &value);
        if (r < 0)
                return r;
        if (!in_merge_value(l)) {
                r = count_values(l, 1, pos);
                if (r < 0)
                        return r;
        }
        if (anchor) {
                r = register_anchor(l, anchor, value, NULL, text, len);
                if (r < 0)
                        return r;
        }
        return add_value(l, TAKE_PTR(value), NULL, pos);
}

static int on_alias(struct loader *l, const yaml_event_t *e)
{
        struct xp_source_pos pos = mark_pos(e->start_mark);
        const char *name = (const char *)e->data.alias.anchor;
        const struct anchor *a = find_anchor(l, name);
        char q[XP_QUOTE_MAX];
        int r;

        if (!a)
                return fail(l, pos, -EINVAL, "undefined alias %s", xp_quote(name, q));
        if (expects_key(l)) {
                if (a->node)
                        return fail(l,
                                    pos,
                                    -EINVAL,
                                    "mapping key must be a scalar, not a %s",
                                    a->node->mapping ? "mapping" : "sequence");
                return set_key(l, a->text, a->text_len, false, pos);
        }
        if (l->depth + child_height(a->node) > XP_YAML_MAX_DEPTH)
                return too_deep(l, pos);
        if (!in_merge_value(l)) {
                r = count_values(l, child_values(a->node), pos);
                if (r < 0)
                        return r;
        }
        return add_value(l, json_incref(a->value), sm_node_ref(a->node), pos);
}

static int on_collection_start(struct loader *l, const yaml_event_t *e, bool mapping)
{
        struct xp_source_pos pos = mark_pos(e->start_mark);
        const char *tag =
            (const char *)(mapping ? e->data.mapping_start.tag : e->data.sequence_start.tag);
        const char *anchor =
            (const char *)(mapping ? e->data.mapping_start.anchor : e->data.sequence_start.anchor);
        struct frame f = {.pos = pos};
        char t[XP_QUOTE_MAX];
        int r;

        if (expects_key(l))
                return fail(l,
                            pos,
                            -EINVAL,
                            "mapping key must be a scalar, not a %s",
                            mapping ? "mapping" : "sequence");
        if (tag && strcmp(tag, "!") && strcmp(tag, mapping ? MAP_TAG : SEQ_TAG))
                return fail(l, pos, -EINVAL, "unsupported tag %s", tag_quote(tag, t));
        if (l->depth >= XP_YAML_MAX_DEPTH)
                return too_deep(l, pos);
        f.merge_list = !mapping && in_merge_value(l);
        r = count_values(l, 1, pos);
        if (r < 0)
                return r;

        if (l->depth == l->stack_allocated) {
                size_t allocated = l->stack_allocated ? l->stack_allocated * 2 : 16;
                struct frame *stack = reallocarray(l->stack, allocated, sizeof(*stack));

                if (!stack)
                        return -ENOMEM;
                l->stack = stack;
                l->stack_allocated = allocated;
        }
        f.value = mapping ? json_object() : json_array();
        f.node = sm_node_new(mapping);
        f.anchor = anchor ? strdup(anchor) : NULL;
        if (!f.value || !f.node || (anchor && !f.anchor)) {
                frame_done(&f);
                return -ENOMEM;
        }
        l->stack[l->depth++] = f;
        return 0;
}

/* Merges the members of the merge keys' mappings that no explicit key overrides. */
static int apply_merges(struct loader *l, struct frame *f, size_t level)
{
        for (size_t i = 0; i < f->n_merges; i++) {
                const struct merge_source *m = &f->merges[i];
                const char *key;
                json_t *member;

                json_object_foreach(m->value, key, member)
                {
                        const struct sm_child *child;
                        char *copy;
                        int r;

                        if (json_object_get(f->value, key))
                                continue;
                        child = find_member(m->node, key);
                        if (!child)
                                return -EINVAL;
                        if (level + child_height(child->node) > XP_YAML_MAX_DEPTH)
                                return too_deep(l, m->pos);
                        r = count_values(l, child_values(child->node), m->pos);
                        if (r < 0)
                                return r;
                        copy = strdup(key);
                        if (!copy || json_object_set_nocheck(f->value, key, member) < 0) {
                                free(copy);
                                return -ENOMEM;
                        }
                        r = sm_node_append(f->node, copy, child->entry, sm_node_ref(child->node));
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int on_collection_end(struct loader *l)
{
        size_t level = l->depth;
        struct frame f = l->stack[--l->depth];
        int r = 0;

        if (f.node->mapping)
                r = apply_merges(l, &f, level);
        if (r >= 0 && f.node->values > XP_YAML_MAX_VALUES)
                r = fail(l,
                         f.pos,
                         -E2BIG,
                         "document has more than %d values after alias expansion",
                         XP_YAML_MAX_VALUES);
        if (r >= 0) {
                sm_node_sort(f.node);
                if (f.anchor)
                        r = register_anchor(l, f.anchor, f.value, f.node, NULL, 0);
        }
        if (r >= 0)
                r = add_value(l, TAKE_PTR(f.value), TAKE_PTR(f.node), f.pos);
        frame_done(&f);
        return r;
}

static int on_document_end(struct loader *l)
{
        int r = 0;

        if (l->have_root && !json_is_null(l->root)) {
                struct xp_source_map *map = calloc(1, sizeof(*map));

                if (l->n_docs == l->docs_allocated) {
                        size_t allocated = l->docs_allocated ? l->docs_allocated * 2 : 4;
                        struct xp_yaml_document *docs =
                            map ? reallocarray(l->docs, allocated, sizeof(*docs)) : NULL;

                        if (docs) {
                                l->docs = docs;
                                l->docs_allocated = allocated;
                        } else {
                                r = -ENOMEM;
                        }
                }
                if (!map)
                        r = -ENOMEM;
                if (r < 0) {
                        free(map);
                } else {
                        map->root = (struct xp_source_entry){l->root_pos, l->root_pos};
                        map->node = TAKE_PTR(l->root_node);
                        l->docs[l->n_docs++] = (struct xp_yaml_document){
                            .root = TAKE_PTR(l->root),
                            .map = map,
                            .start = l->root_pos,
                        };
                }
        }
        document_clear(l);
        return r;
}

static int on_event(struct loader *l, const yaml_event_t *e)
{
        switch (e->type) {
        case YAML_DOCUMENT_START_EVENT:
                document_clear(l);
                return 0;
        case YAML_DOCUMENT_END_EVENT:
                return on_document_end(l);
        case YAML_SCALAR_EVENT:
                return on_scalar(l, e);
        case YAML_ALIAS_EVENT:
                return on_alias(l, e);
        case YAML_SEQUENCE_START_EVENT:
                return on_collection_start(l, e, false);
        case YAML_MAPPING_START_EVENT:
                return on_collection_start(l, e, true);
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
                return l->depth > 0 ? on_collection_end(l) : -EINVAL;
        default:
                return 0;
        }
}

/* ------------------------------------------------------------------------------------------ */
/* libyaml's errors */

/* libyaml reports reader errors by byte offset: count lines and characters up to it. */
static struct xp_source_pos offset_pos(const struct loader *l, size_t offset)
{
        struct xp_source_pos pos = {1, 1};

        for (size_t i = 0; i < offset && i < l->size; i++) {
                unsigned char c = (unsigned char)l->data[i];

                if (c == '\n' || (c == '\r' && (i + 1 >= l->size || l->data[i + 1] != '\n'))) {
                        pos.line++;
                        pos.column = 1;
                } else if ((c & 0xc0) != 0x80) {
                        pos.column++;
                }
        }
        return pos;
}

/* The byte at a libyaml mark (line and column count characters), or -1. */
static int byte_at(const struct loader *l, yaml_mark_t mark)
{
        size_t i = 0;

        for (size_t line = 0; line < mark.line; i++) {
                if (i >= l->size)
                        return -1;
                if (l->data[i] == '\n')
                        line++;
        }
        for (size_t column = 0; i < l->size; i++) {
                if (((unsigned char)l->data[i] & 0xc0) == 0x80)
                        continue;
                if (column++ == mark.column)
                        return (unsigned char)l->data[i];
        }
        return -1;
}

static int parser_error(struct loader *l)
{
        const yaml_parser_t *p = &l->parser;
        const char *problem = p->problem ? p->problem : "syntax error";
        struct xp_source_pos pos = mark_pos(p->problem_mark);
        struct xp_source_pos ctx = mark_pos(p->context_mark);

        switch (p->error) {
        case YAML_MEMORY_ERROR:
                return -ENOMEM;
        case YAML_READER_ERROR:
                pos = offset_pos(l, p->problem_offset);
                if (p->problem_value < 0)
                        return fail(l, pos, -EINVAL, "%s", problem);
                if (strstr(problem, "octet"))
                        return fail(l, pos, -EINVAL, "%s (byte 0x%02X)", problem, p->problem_value);
                return fail(l, pos, -EINVAL, "%s (U+%04X)", problem, p->problem_value);
        default:
                break;
        }
        if (!strcmp(problem, "found character that cannot start any token") &&
            byte_at(l, p->problem_mark) == '\t')
                return fail(l, pos, -EINVAL, "%s (tabs are not allowed for indentation)", problem);
        if (p->context && (ctx.line != pos.line || ctx.column != pos.column))
                return fail(
                    l, pos, -EINVAL, "%s (%s at %u:%u)", problem, p->context, ctx.line, ctx.column);
        return fail(l, pos, -EINVAL, "%s", problem);
}

static int load(struct loader *l)
{
        for (;;) {
                yaml_event_t e;
                bool end;
                int r;

                if (!yaml_parser_parse(&l->parser, &e))
                        return parser_error(l);
                r = on_event(l, &e);
                end = e.type == YAML_STREAM_END_EVENT;
                yaml_event_delete(&e);
                if (r < 0)
                        return r;
                if (end)
                        return 0;
        }
}

int xp_yaml_load(const char *data,
                 size_t size,
                 const char *source_name,
                 struct xp_yaml_document **ret_docs,
                 size_t *ret_n,
                 struct xp_error *err)
{
        struct loader l = {
            .data = data ? data : "",
            .size = data ? size : 0,
            .name = source_name ? source_name : "<input>",
            .err = err,
        };
        int r;

        if ((!data && size > 0) || !ret_docs || !ret_n)
                return xp_errorf(err, -EINVAL, "%s: invalid arguments", l.name);
        l.c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        l.anchor_index = json_object();
        if (!l.c_locale || !l.anchor_index || !yaml_parser_initialize(&l.parser)) {
                loader_done(&l);
                return xp_errorf(err, -ENOMEM, "%s: out of memory", l.name);
        }
        l.parser_ready = true;
        yaml_parser_set_input_string(&l.parser, (const unsigned char *)l.data, l.size);

        r = load(&l);
        if (r < 0) {
                if (!l.reported)
                        xp_errorf(err, r, "%s: %s", l.name, strerror(-r));
                loader_done(&l);
                return r;
        }
        *ret_docs = TAKE_PTR(l.docs);
        *ret_n = l.n_docs;
        l.n_docs = 0;
        loader_done(&l);
        return 0;
}
