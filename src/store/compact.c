/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's own writer of compact JSON: the bytes json_dumpb(JSON_COMPACT) gives, written
 * faster. Every create and update is serialised once, and jansson's writer spent as much on its
 * bookkeeping as on the text: a cycle check that formats each container's address with
 * snprintf() and enters it in a hash table (a malloc and a free per object), and a callback per
 * token. A store's object is a tree (no cycles), so this writer walks it directly into one
 * buffer.
 *
 * What it does not write itself it declines (-EBADMSG), and the caller asks jansson, whose
 * answer then stands: reals (jansson's %.17g and its fix-ups are kept that way exactly), strings
 * that are not UTF-8, trees deeper than MAX_DEPTH. tests/unit/test_store_compact.c holds the two
 * writers to the same bytes.
 *
 * The trees the program shares by reference across objects (xpool/sharedtree.h: a pod's
 * kube-api-access projected source, its default tolerations) it writes once, on first use, and
 * copies from then on: their walk and escaping were the same work on every create.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "xpool/sharedtree.h"
#include "xpool/strutil.h"

#define MAX_DEPTH 512

struct out {
        char *buf;
        size_t len, cap, max;
        bool heap;                    /* buf is ours to free (else the caller's stack) */
        struct store_text_mark *mark; /* where resourceVersion goes, noted on the way (or NULL) */
};

/* Room for n more bytes: 0, -E2BIG past o->max, -ENOMEM. */
static int grow(struct out *o, size_t n)
{
        size_t cap = o->cap;
        char *buf;

        if (o->len + n > o->max)
                return -E2BIG;
        while (cap < o->len + n)
                cap *= 2;
        buf = o->heap ? realloc(o->buf, cap) : malloc(cap);
        if (!buf)
                return -ENOMEM;
        if (!o->heap)
                memcpy(buf, o->buf, o->len);
        o->buf = buf;
        o->cap = cap;
        o->heap = true;
        return 0;
}

static inline int put(struct out *o, const char *s, size_t n)
{
        if (o->len + n > o->cap) {
                int r = grow(o, n);

                if (r < 0)
                        return r;
        }
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        return 0;
}

static inline int put_char(struct out *o, char c)
{
        return put(o, &c, 1);
}

/* A byte below 0x20, '"' or '\\' as jansson escapes it. */
static int put_escape(struct out *o, unsigned char c)
{
        static const char hex[] = "0123456789ABCDEF";
        char seq[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};

        switch (c) {
        case '"':
                return put(o, "\\\"", 2);
        case '\\':
                return put(o, "\\\\", 2);
        case '\b':
                return put(o, "\\b", 2);
        case '\f':
                return put(o, "\\f", 2);
        case '\n':
                return put(o, "\\n", 2);
        case '\r':
                return put(o, "\\r", 2);
        case '\t':
                return put(o, "\\t", 2);
        default:
                return put(o, seq, sizeof(seq));
        }
}

/*
 * Whether the 8 bytes at s are all written as they are (none below 0x20, '"', '\\' or past
 * ASCII): a word at a time, as most of a pod's strings are plain, instead of four compares per
 * byte. Each test may flag a plain byte that follows a flagged one, never miss one; a flagged
 * word is then read byte by byte.
 */
static bool plain8(const unsigned char *s)
{
        const uint64_t ones = 0x0101010101010101ULL, highs = ones * 0x80;
        uint64_t x, quote, backslash;

        memcpy(&x, s, sizeof(x));
        quote = x ^ (ones * '"');
        backslash = x ^ (ones * '\\');
        return ((((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) |
                 ((backslash - ones) & ~backslash) | x) &
                highs) == 0;
}

static int put_string(struct out *o, const char *str, size_t n)
{
        const unsigned char *s = (const unsigned char *)str;
        size_t run = 0, i = 0;
        bool checked = false;
        int r = put_char(o, '"');

        while (r >= 0 && i < n) {
                if (i + 8 <= n && plain8(s + i)) {
                        i += 8;
                        continue;
                }
                if (s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\') {
                        i++;
                        continue;
                }
                if (s[i] >= 0x80) {
                        /* once, for the rest: jansson refuses to write what is not UTF-8 */
                        if (!checked && !xp_utf8_valid(str + i, n - i))
                                return -EBADMSG;
                        checked = true;
                        i++;
                        continue;
                }
                r = put(o, str + run, i - run);
                if (r >= 0)
                        r = put_escape(o, s[i]);
                run = ++i;
        }
        if (r >= 0)
                r = put(o, str + run, n - run);
        return r < 0 ? r : put_char(o, '"');
}

static int put_integer(struct out *o, json_int_t value)
{
        char digits[24];
        size_t i = sizeof(digits);
        unsigned long long u =
            value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;

        do {
                digits[--i] = (char)('0' + u % 10);
                u /= 10;
        } while (u);
        if (value < 0)
                digits[--i] = '-';
        return put(o, digits + i, sizeof(digits) - i);
}

static int put_value(struct out *o, const json_t *json, unsigned depth, const char *drop);

static bool key_is(const char *key, size_t key_len, const char *name)
{
        return name && strlen(name) == key_len && memcmp(key, name, key_len) == 0;
}

/*
 * The top object's member metadata was just written: the '}' that closed it is where
 * store_text_versioned() puts resourceVersion (what text.c's scan of the text would find).
 */
static void mark_metadata(struct out *o, const json_t *value)
{
        if (!json_is_object(value)) {
                o->mark->bad = true;
                return;
        }
        o->mark->at = o->len - 1;
        o->mark->empty = o->buf[o->len - 2] == '{';
        o->mark->found = true;
}

/*
 * An object's members in their order, less the member named drop (NULL: none); its member
 * "metadata", when an object, less its member named drop_in_metadata. The top object's notes
 * where its metadata ends (o->mark).
 */
static int put_object(struct out *o,
                      const json_t *json,
                      unsigned depth,
                      const char *drop,
                      const char *drop_in_metadata)
{
        bool first = true;
        int r = put_char(o, '{');

        for (void *it = json_object_iter((json_t *)json); it && r >= 0;
             it = json_object_iter_next((json_t *)json, it)) {
                const char *key = json_object_iter_key(it);
                size_t key_len = json_object_iter_key_len(it);
                bool metadata = key_is(key, key_len, "metadata");

                if (key_is(key, key_len, drop))
                        continue;
                if (!first)
                        r = put_char(o, ',');
                first = false;
                if (r >= 0)
                        r = put_string(o, key, key_len);
                if (r >= 0)
                        r = put_char(o, ':');
                if (r >= 0)
                        r = put_value(o,
                                      json_object_iter_value(it),
                                      depth + 1,
                                      metadata ? drop_in_metadata : NULL);
                if (r >= 0 && metadata && depth == 0 && o->mark)
                        mark_metadata(o, json_object_iter_value(it));
        }
        if (depth == 0 && o->mark && !o->mark->found) {
                /* no metadata: one of its own goes at the end */
                o->mark->at = o->len;
                o->mark->empty = first;
                o->mark->whole = true;
        }
        return r < 0 ? r : put_char(o, '}');
}

static int put_array(struct out *o, const json_t *json, unsigned depth)
{
        size_t n = json_array_size(json);
        int r = put_char(o, '[');

        for (size_t i = 0; i < n && r >= 0; i++) {
                if (i > 0)
                        r = put_char(o, ',');
                if (r >= 0)
                        r = put_value(o, json_array_get(json, i), depth + 1, NULL);
        }
        return r < 0 ? r : put_char(o, ']');
}

/*
 * A marked tree's text as this writer writes it anywhere below the top with nothing dropped (its
 * bytes depend on the tree alone), and the levels of values below the tree: at a depth where the
 * walk would pass MAX_DEPTH the tree is walked, and declined, as before. Kept for the process's
 * life, as the trees are.
 */
struct shared_text {
        unsigned levels;
        size_t len;
        char text[];
};

static _Atomic(struct shared_text *) shared_texts[XP_SHARED_TREES];
/* in shared_texts: the tree holds what this writer leaves to jansson, so it is walked */
static struct shared_text declined;
static _Thread_local size_t shared_text_copies;

size_t store_json_shared_text_copies(void)
{
        return shared_text_copies;
}

/* The deepest level of a value below json, which is at level; counted up to MAX_DEPTH + 1. */
static unsigned levels_below(const json_t *json, unsigned level)
{
        unsigned deepest = level;

        if (level > MAX_DEPTH)
                return level;
        if (json_is_array(json))
                for (size_t i = 0; i < json_array_size(json); i++) {
                        unsigned d = levels_below(json_array_get(json, i), level + 1);

                        deepest = d > deepest ? d : deepest;
                }
        for (void *it = json_is_object(json) ? json_object_iter((json_t *)json) : NULL; it;
             it = json_object_iter_next((json_t *)json, it)) {
                unsigned d = levels_below(json_object_iter_value(it), level + 1);

                deepest = d > deepest ? d : deepest;
        }
        return deepest;
}

/* tree's text, written as put_value() writes it; &declined; NULL without memory. */
static struct shared_text *shared_text_make(const json_t *tree)
{
        char stack[2048];
        struct out o = {.buf = stack, .cap = sizeof(stack), .max = XP_STORE_BODY_MAX};
        struct shared_text *made = NULL;
        /* an array at the top would look itself up again */
        int r = json_is_array(tree) ? put_array(&o, tree, 0) : put_value(&o, tree, 0, NULL);

        if (r >= 0)
                made = malloc(sizeof(*made) + o.len);
        if (made) {
                made->levels = levels_below(tree, 0);
                made->len = o.len;
                memcpy(made->text, o.buf, o.len);
        }
        if (o.heap)
                free(o.buf);
        return r == -EBADMSG || r == -E2BIG ? &declined : made;
}

/* The text of the marked tree at index, made by the first thread that meets it. */
static struct shared_text *shared_text_get(int index, const json_t *tree)
{
        struct shared_text *text = atomic_load_explicit(&shared_texts[index], memory_order_acquire),
                           *expected = NULL;

        if (text)
                return text;
        text = shared_text_make(tree);
        if (!text ||
            atomic_compare_exchange_strong_explicit(
                &shared_texts[index], &expected, text, memory_order_acq_rel, memory_order_acquire))
                return text;
        if (text != &declined)
                free(text); /* another thread's came first: the same bytes */
        return expected;
}

/* 1 when json, a marked tree, was written from its text; 0 when it is to be walked; put()'s error.
 */
static int put_shared(struct out *o, const json_t *json, unsigned depth)
{
        struct shared_text *text;
        int index, r;

        /* a shared tree has the table's maker's reference and its holder's: most containers of a
         * body have one, and skip the table's look-up (a call per container) */
        if (__atomic_load_n(&json->refcount, __ATOMIC_RELAXED) < 2)
                return 0;
        index = xp_shared_tree_index(json);
        if (index < 0)
                return 0;
        text = shared_text_get(index, json);
        if (!text || text == &declined || depth + text->levels > MAX_DEPTH)
                return 0;
        shared_text_copies++;
        r = put(o, text->text, text->len);
        return r < 0 ? r : 1;
}

static int put_value(struct out *o, const json_t *json, unsigned depth, const char *drop)
{
        int r;

        if (depth > MAX_DEPTH)
                return -EBADMSG;
        switch (json_typeof(json)) {
        case JSON_OBJECT:
                r = depth > 0 && !drop ? put_shared(o, json, depth) : 0;
                return r != 0 ? (r < 0 ? r : 0) : put_object(o, json, depth, drop, NULL);
        case JSON_ARRAY:
                r = put_shared(o, json, depth);
                return r != 0 ? (r < 0 ? r : 0) : put_array(o, json, depth);
        case JSON_STRING:
                return put_string(o, json_string_value(json), json_string_length(json));
        case JSON_INTEGER:
                return put_integer(o, json_integer_value(json));
        case JSON_TRUE:
                return put(o, "true", 4);
        case JSON_FALSE:
                return put(o, "false", 5);
        case JSON_NULL:
                return put(o, "null", 4);
        case JSON_REAL:
        default:
                return -EBADMSG;
        }
}

int store_json_compact(
    const json_t *object, const char *drop_in_metadata, size_t max, char **ret, size_t *ret_len)
{
        return store_json_compact_marked(object, drop_in_metadata, max, ret, ret_len, NULL);
}

int store_json_compact_marked(const json_t *object,
                              const char *drop_in_metadata,
                              size_t max,
                              char **ret,
                              size_t *ret_len,
                              struct store_text_mark *ret_mark)
{
        char stack[8192];
        struct out o = {.buf = stack, .cap = sizeof(stack), .max = max, .mark = ret_mark};
        int r;

        if (!json_is_object(object))
                return -EBADMSG;
        if (ret_mark)
                *ret_mark = (struct store_text_mark){0};
        r = put_object(&o, object, 0, NULL, drop_in_metadata);
        if (r >= 0 && o.len > max)
                r = -E2BIG;
        if (r >= 0 && !o.heap) {
                o.buf = malloc(o.len + 1);
                if (!o.buf)
                        return -ENOMEM;
                memcpy(o.buf, stack, o.len);
        } else if (r >= 0 && o.len + 1 > o.cap) {
                char *buf = realloc(o.buf, o.len + 1);

                if (!buf)
                        r = -ENOMEM;
                else
                        o.buf = buf;
        }
        if (r < 0) {
                if (o.heap)
                        free(o.buf);
                return r;
        }
        o.buf[o.len] = '\0';
        *ret = o.buf;
        *ret_len = o.len;
        return 0;
}
