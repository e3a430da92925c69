/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request body's reader (xpool/jsonread.h). jansson's own reader copies every token into a
 * buffer, then every string again into its node, and goes through its stream one character at a
 * time; this one reads the body in place: a string without escapes goes straight from the body
 * into its node. What it is not sure to read as jansson would, it declines (-EBADMSG) at once.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/jsonread.h"
#include "xpool/strutil.h"

struct reader {
        const char *s;
        size_t len, i;
        char *scratch;    /* an escaped string's decoded bytes: never longer than the body */
        unsigned deepest; /* the most mappings and lists nested yet, the object being the first */
};

static void skip_space(struct reader *r)
{
        while (r->i < r->len && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' ||
                                 r->s[r->i] == '\r'))
                r->i++;
}

/* Four hexadecimal digits (either case) at s as a number. */
static int hex4(const char *s, unsigned *ret)
{
        unsigned char bytes[2];

        if (xp_hex_decode(s, bytes, sizeof(bytes)) < 0)
                return -EBADMSG;
        *ret = (unsigned)bytes[0] << 8 | bytes[1];
        return 0;
}

/* \uXXXX at s[i] (i at the 'u'), a surrogate pair as one code point: the index after it. */
static int read_code_point(struct reader *r, size_t i, unsigned *ret, size_t *ret_next)
{
        unsigned cp, low;

        if (i + 5 > r->len || hex4(r->s + i + 1, &cp) < 0 || cp == 0 ||
            (cp >= 0xdc00 && cp <= 0xdfff))
                return -EBADMSG;
        i += 5;
        if (cp >= 0xd800 && cp <= 0xdbff) {
                if (i + 6 > r->len || r->s[i] != '\\' || r->s[i + 1] != 'u' ||
                    hex4(r->s + i + 2, &low) < 0 || low < 0xdc00 || low > 0xdfff)
                        return -EBADMSG;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                i += 6;
        }
        *ret = cp;
        *ret_next = i;
        return 0;
}

/* One escape at s[i] (just past the backslash) decoded into out: the index after it. */
static int read_escape(struct reader *r, size_t i, char *out, size_t *ret_n, size_t *ret_next)
{
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *at = i < r->len ? memchr(from, r->s[i], sizeof(from) - 1) : NULL;
        unsigned cp;

        if (at) {
                out[0] = to[at - from];
                *ret_n = 1;
                *ret_next = i + 1;
                return 0;
        }
        if (i >= r->len || r->s[i] != 'u' || read_code_point(r, i, &cp, ret_next) < 0)
                return -EBADMSG;
        *ret_n = xp_utf8_put(out, cp);
        return 0;
}

/* The rest of a string with escapes, from s[start] (what is before i has none) into scratch. */
static int read_escaped(struct reader *r, size_t start, size_t i, const char **ret, size_t *ret_len)
{
        size_t n = i - start;

        if (!r->scratch && !(r->scratch = malloc(r->len)))
                return -ENOMEM;
        memcpy(r->scratch, r->s + start, n);
        while (i < r->len && r->s[i] != '"') {
                unsigned char c = (unsigned char)r->s[i];
                size_t m;

                if (c < 0x20)
                        return -EBADMSG;
                if (c != '\\') {
                        r->scratch[n++] = (char)c;
                        i++;
                        continue;
                }
                if (read_escape(r, i + 1, r->scratch + n, &m, &i) < 0)
                        return -EBADMSG;
                n += m;
        }
        if (i >= r->len)
                return -EBADMSG;
        r->i = i + 1;
        *ret = r->scratch;
        *ret_len = n;
        return 0;
}

/* The string at s[i] ('"'): its bytes in the body, or decoded in scratch when it has escapes. */
static int read_string(struct reader *r, const char **ret, size_t *ret_len)
{
        size_t start = r->i + 1, i = start;
        bool ascii = true;

        for (; i < r->len; i++) {
                unsigned char c = (unsigned char)r->s[i];

                if (c == '"') {
                        *ret = r->s + start;
                        *ret_len = i - start;
                        r->i = i + 1;
                        break;
                }
                if (c < 0x20)
                        return -EBADMSG;
                if (c == '\\') {
                        int e = read_escaped(r, start, i, ret, ret_len);

                        if (e < 0)
                                return e;
                        ascii = false; /* what follows the escape was not looked at */
                        break;
                }
                if (c >= 0x80)
                        ascii = false;
        }
        if (i >= r->len)
                return -EBADMSG;
        return ascii || xp_utf8_valid(*ret, *ret_len) ? 0 : -EBADMSG;
}

/* An integer as jansson reads one (no leading zeros, within int64); reals are declined. */
static int read_integer(struct reader *r, json_t **ret)
{
        bool negative = r->s[r->i] == '-';
        size_t i = r->i + negative, start = i;
        uint64_t value = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

        for (; i < r->len && r->s[i] >= '0' && r->s[i] <= '9'; i++) {
                unsigned digit = (unsigned)(r->s[i] - '0');

                if (value > (limit - digit) / 10)
                        return -EBADMSG;
                value = value * 10 + digit;
        }
        if (i == start || (r->s[start] == '0' && i - start > 1) ||
            (i < r->len && (r->s[i] == '.' || r->s[i] == 'e' || r->s[i] == 'E')))
                return -EBADMSG;
        r->i = i;
        *ret = json_integer(negative ? (json_int_t)(0 - value) : (json_int_t)value);
        return *ret ? 0 : -ENOMEM;
}

static int read_literal(struct reader *r, const char *word, json_t *(*make)(void), json_t **ret)
{
        size_t n = strlen(word);

        if (r->len - r->i < n || memcmp(r->s + r->i, word, n) != 0)
                return -EBADMSG;
        r->i += n;
        *ret = make();
        return *ret ? 0 : -ENOMEM;
}

static int read_value(struct reader *r, unsigned depth, json_t **ret);

/* After a member or an element: 1 at the container's end (close), 0 after a ',', or -EBADMSG. */
static int next_item(struct reader *r, char close)
{
        skip_space(r);
        if (r->i < r->len && r->s[r->i] == close) {
                r->i++;
                return 1;
        }
        if (r->i >= r->len || r->s[r->i] != ',')
                return -EBADMSG;
        r->i++;
        skip_space(r);
        return 0;
}

static int read_member(struct reader *r, unsigned depth, json_t *object)
{
        const char *key;
        char *own_key = NULL; /* an escaped key: scratch is the value's to reuse */
        size_t key_len;
        json_t *value = NULL;
        int e;

        if (r->i >= r->len || r->s[r->i] != '"')
                return -EBADMSG;
        e = read_string(r, &key, &key_len);
        if (e == 0 && key == r->scratch) {
                own_key = malloc(key_len + 1);
                if (own_key)
                        key = memcpy(own_key, key, key_len);
                else
                        e = -ENOMEM;
        }
        if (e == 0)
                skip_space(r);
        if (e == 0 && (r->i >= r->len || r->s[r->i] != ':'))
                e = -EBADMSG;
        if (e == 0) {
                r->i++;
                skip_space(r);
                e = read_value(r, depth + 1, &value);
        }
        if (e < 0) {
                json_decref(value);
        } else {
                size_t members = json_object_size(object);

                if (json_object_setn_new_nocheck(object, key, key_len, value) < 0)
                        e = -ENOMEM;
                /* A duplicate replaced its first value instead of adding a member: it is
                 * JSON_REJECT_DUPLICATES's error, and jansson says where. Counted, not looked up
                 * before the set: one hash of the key per member instead of two. */
                else if (json_object_size(object) == members)
                        e = -EBADMSG;
        }
        free(own_key);
        return e;
}

static int read_container(struct reader *r, unsigned depth, bool is_object, json_t **ret)
{
        json_t *json = is_object ? json_object() : json_array();
        char close = is_object ? '}' : ']';
        int e = 0;

        if (!json)
                return -ENOMEM;
        if (depth > r->deepest)
                r->deepest = depth;
        r->i++;
        skip_space(r);
        if (r->i < r->len && r->s[r->i] == close) {
                r->i++;
                *ret = json;
                return 0;
        }
        while (e == 0) {
                json_t *element = NULL;

                if (is_object) {
                        e = read_member(r, depth, json);
                } else {
                        e = read_value(r, depth + 1, &element);
                        if (e == 0 && json_array_append_new(json, element) < 0)
                                e = -ENOMEM;
                }
                if (e == 0)
                        e = next_item(r, close);
        }
        if (e < 0) {
                json_decref(json);
                return e;
        }
        *ret = json;
        return 0;
}

static int read_value(struct reader *r, unsigned depth, json_t **ret)
{
        const char *s;
        size_t n;
        int e;

        if (depth > XP_JSON_READ_DEPTH || r->i >= r->len)
                return -EBADMSG;
        switch (r->s[r->i]) {
        case '{':
                return read_container(r, depth, true, ret);
        case '[':
                return read_container(r, depth, false, ret);
        case '"':
                e = read_string(r, &s, &n);
                if (e < 0)
                        return e;
                *ret = json_stringn_nocheck(s, n);
                return *ret ? 0 : -ENOMEM;
        case 't':
                return read_literal(r, "true", json_true, ret);
        case 'f':
                return read_literal(r, "false", json_false, ret);
        case 'n':
                return read_literal(r, "null", json_null, ret);
        default:
                return read_integer(r, ret);
        }
}

int xp_json_read_object_depth(const char *text, size_t len, json_t **ret, unsigned *ret_depth)
{
        struct reader r = {.s = text, .len = len};
        json_t *json = NULL;
        int e;

        skip_space(&r);
        if (r.i >= len || text[r.i] != '{')
                return -EBADMSG;
        e = read_value(&r, 1, &json);
        free(r.scratch);
        if (e < 0)
                return e;
        skip_space(&r);
        if (r.i != len) {
                json_decref(json);
                return -EBADMSG; /* something after the object */
        }
        *ret = json;
        if (ret_depth)
                *ret_depth = r.deepest;
        return 0;
}

int xp_json_read_object(const char *text, size_t len, json_t **ret)
{
        return xp_json_read_object_depth(text, len, ret, NULL);
}
