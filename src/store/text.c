/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stored text handed out as text: the body with metadata.resourceVersion written into it, the
 * same member at the same place as store_set_resource_version() gives the parsed object (the last
 * member of metadata; a metadata of its own at the end when the object has none). A reply, a
 * list or a watch event can then copy the bytes the store already has instead of parsing them
 * into a tree and encoding the tree again.
 *
 * The scanner needs only what JSON's grammar gives: strings (with their escapes) and nesting. A
 * body that does not read as a JSON object is -EBADMSG: the caller falls back to parsing it, which
 * reports the damage as before.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

static size_t skip_space(const char *s, size_t len, size_t i)
{
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
                i++;
        return i;
}

/* The index just past the string that starts at s[i] ('"'), or len when it does not end. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
        for (i++; i < len; i++) {
                if (s[i] == '\\')
                        i++;
                else if (s[i] == '"')
                        return i + 1;
        }
        return len;
}

/* The index just past the value at s[i] (after space), or len when it does not end. */
static size_t skip_value(const char *s, size_t len, size_t i)
{
        size_t depth = 0;

        i = skip_space(s, len, i);
        if (i < len && s[i] == '"')
                return skip_string(s, len, i);
        for (; i < len; i++) {
                char c = s[i];

                if (c == '"') {
                        i = skip_string(s, len, i) - 1;
                } else if (c == '{' || c == '[') {
                        depth++;
                } else if (c == '}' || c == ']') {
                        if (depth == 0)
                                return i; /* the end of the enclosing container */
                        if (--depth == 0)
                                return i + 1;
                } else if (depth == 0 && c == ',') {
                        return i;
                }
        }
        return len;
}

/*
 * The value of member key (quoted, as it appears in the text) of the JSON object at s[0..len):
 * 0 with *ret_value the index of its first character and *ret_end just past it; -ENOENT with
 * *ret_end the index of the '}' that closes the object, *ret_empty whether it has no member;
 * -EBADMSG when s is not a JSON object.
 */
static int find_member(
    const char *s, size_t len, const char *key, size_t *ret_value, size_t *ret_end, bool *ret_empty)
{
        size_t i = skip_space(s, len, 0), key_len = strlen(key);

        *ret_empty = true;
        if (i >= len || s[i] != '{')
                return -EBADMSG;
        for (i = skip_space(s, len, i + 1); i < len && s[i] != '}';) {
                size_t name = i, end, value;

                if (s[i] != '"')
                        return -EBADMSG;
                end = skip_string(s, len, i);
                i = skip_space(s, len, end);
                if (i >= len || s[i] != ':')
                        return -EBADMSG;
                value = skip_space(s, len, i + 1);
                *ret_empty = false;
                i = skip_value(s, len, value);
                if (i > len)
                        return -EBADMSG;
                if (end - name == key_len && memcmp(s + name, key, key_len) == 0) {
                        *ret_value = value;
                        *ret_end = i;
                        return 0;
                }
                i = skip_space(s, len, i);
                if (i < len && s[i] == ',')
                        i = skip_space(s, len, i + 1);
        }
        if (i >= len)
                return -EBADMSG;
        *ret_end = i;
        return -ENOENT;
}

/*
 * Where the member goes: *ret_at is the index of the '}' that closes metadata (or the object,
 * when *ret_whole: the object has no metadata), *ret_empty whether that object has no member;
 * *ret_open the index of metadata's '{' (when not *ret_whole).
 */
static int find_insert(
    const char *s, size_t len, size_t *ret_open, size_t *ret_at, bool *ret_empty, bool *ret_whole)
{
        size_t open, close;
        int r = find_member(s, len, "\"metadata\"", &open, &close, ret_empty);

        if (r == -ENOENT) {
                *ret_at = close;
                *ret_whole = true;
                return 0;
        }
        if (r < 0)
                return r;
        if (open >= len || s[open] != '{' || close < 2 || s[close - 1] != '}')
                return -EBADMSG;
        *ret_open = open;
        *ret_at = close - 1;
        *ret_empty = skip_space(s, len, open + 1) == close - 1;
        *ret_whole = false;
        return 0;
}

size_t store_text_versioned_max(size_t len)
{
        /* ,"metadata":{"resourceVersion":"18446744073709551615"} */
        return len + 64;
}

int store_text_mark_find(const char *body, size_t len, struct store_text_mark *ret)
{
        size_t open;

        *ret = (struct store_text_mark){0};
        return find_insert(body, len, &open, &ret->at, &ret->empty, &ret->whole);
}

/* The member that goes at the mark, for version: its length (at most 64 bytes). */
static size_t versioned_member(const struct store_text_mark *mark, uint64_t version, char *out)
{
        static const char key[] = "\"resourceVersion\":\"";
        char digits[20];
        size_t n = 0, d = sizeof(digits);

        /* digit by digit: snprintf() was most of what the leader spent on the text */
        do {
                digits[--d] = (char)('0' + version % 10);
                version /= 10;
        } while (version);
        if (!mark->empty)
                out[n++] = ',';
        if (mark->whole) {
                memcpy(out + n, "\"metadata\":{", 12);
                n += 12;
        }
        memcpy(out + n, key, sizeof(key) - 1);
        n += sizeof(key) - 1;
        memcpy(out + n, digits + d, sizeof(digits) - d);
        n += sizeof(digits) - d;
        out[n++] = '"';
        if (mark->whole)
                out[n++] = '}';
        return n;
}

/* body with the member at mark into out (size bytes, with a NUL). */
static int splice(const char *body,
                  size_t len,
                  const struct store_text_mark *mark,
                  uint64_t version,
                  char *out,
                  size_t size,
                  size_t *ret_len)
{
        char member[64];
        size_t m, n;

        if (mark->bad || mark->at > len)
                return -EBADMSG;
        m = versioned_member(mark, version, member);
        n = len + m;
        if (n + 1 > size)
                return -ENOBUFS;
        memcpy(out, body, mark->at);
        memcpy(out + mark->at, member, m);
        memcpy(out + mark->at + m, body + mark->at, len - mark->at);
        out[n] = '\0';
        *ret_len = n;
        return 0;
}

int store_text_versioned(
    const char *body, size_t len, uint64_t version, char *out, size_t size, size_t *ret_len)
{
        struct store_text_mark mark;
        int r = store_text_mark_find(body, len, &mark);

        return r < 0 ? r : splice(body, len, &mark, version, out, size, ret_len);
}

int store_text_versioned_dup_marked(const char *body,
                                    size_t len,
                                    const struct store_text_mark *mark,
                                    uint64_t version,
                                    char **ret,
                                    size_t *ret_len)
{
        size_t size = store_text_versioned_max(len) + 1;
        char *out = malloc(size);
        int r;

        if (!out)
                return -ENOMEM;
        r = splice(body, len, mark, version, out, size, ret_len);
        if (r < 0) {
                free(out);
                return r;
        }
        *ret = out;
        return 0;
}

int store_text_versioned_dup(
    const char *body, size_t len, uint64_t version, char **ret, size_t *ret_len)
{
        struct store_text_mark mark;
        int r = store_text_mark_find(body, len, &mark);

        return r < 0 ? r : store_text_versioned_dup_marked(body, len, &mark, version, ret, ret_len);
}

int xp_store_text_metadata(const char *text, size_t len, size_t *ret_start, size_t *ret_len)
{
        size_t open = 0, at;
        bool empty, whole;
        int r = find_insert(text, len, &open, &at, &empty, &whole);

        if (r < 0)
                return r;
        if (whole)
                return -ENOENT;
        *ret_start = open;
        *ret_len = at + 1 - open;
        return 0;
}

int xp_store_text_labels(const char *text, size_t len, size_t *ret_start, size_t *ret_len)
{
        size_t start, n, value, end;
        bool empty;
        int r = xp_store_text_metadata(text, len, &start, &n);

        if (r < 0)
                return r;
        r = find_member(text + start, n, "\"labels\"", &value, &end, &empty);
        if (r < 0)
                return r;
        *ret_start = start + value;
        *ret_len = end - value;
        return 0;
}
