/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A plain list decoded for a table: the text is copied without the members no table reads, and
 * only that copy is parsed. Most of a pod's text is what a table never looks at (its
 * managedFields, its projected service-account volume, its default tolerations), and parsing is
 * most of the cost of `xpool get pods`: building a tree of every one of those members costs more
 * than scanning past them.
 *
 * The scanner needs only JSON's strings (with their escapes) and nesting; the parse of the copy
 * checks the rest (a member left out is checked no further than its strings and nesting). Text
 * it cannot follow is -EBADMSG.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/table.h"

/* Where a member is: what it holds decides which of its members are copied. */
enum level {
        LEVEL_LIST,     /* the list: its items are objects */
        LEVEL_ITEM,     /* one object of the list */
        LEVEL_METADATA, /* an item's metadata */
        LEVEL_SPEC,     /* an item's spec */
        LEVEL_COPY,     /* everything else: copied as it is */
};

/* Members no table reads (tests/unit/test_table_decode.c checks, for every kind, that leaving
 * them out changes no cell). */
static const char *const metadata_unread[] = {"\"managedFields\"", NULL};
static const char *const spec_unread[] = {"\"volumes\"", "\"tolerations\"", "\"affinity\"", NULL};

struct copy {
        const char *s;
        size_t len;
        size_t metadata_start, metadata_len; /* where the last item's metadata is in s */
        FILE *out;                           /* the text kept */
};

static int emit(struct copy *c, const char *text, size_t n)
{
        return fwrite(text, 1, n, c->out) == n ? 0 : -ENOMEM;
}

static size_t skip_space(const struct copy *c, size_t i)
{
        while (i < c->len && c->s[i] && strchr(" \t\n\r", c->s[i]))
                i++;
        return i;
}

/* The index past the string that opens at s[i], or len when it does not close. */
static size_t past_string(const struct copy *c, size_t i)
{
        for (i++; i < c->len; i++) {
                if (c->s[i] == '"')
                        return i + 1;
                if (c->s[i] == '\\')
                        i++;
        }
        return c->len;
}

/* The index past the value that starts at s[i] (no space before it), or len. */
static size_t past_value(const struct copy *c, size_t i)
{
        size_t depth = 0;

        for (; i < c->len; i++) {
                char ch = c->s[i];

                if (ch == '"') {
                        i = past_string(c, i);
                        if (depth == 0 || i >= c->len)
                                return i;
                        i--;
                } else if (ch == '{' || ch == '[') {
                        depth++;
                } else if (ch == '}' || ch == ']' || ch == ',') {
                        if (depth == 0)
                                return i; /* a scalar ends where its container goes on */
                        if (ch != ',' && --depth == 0)
                                return i + 1;
                }
        }
        return c->len;
}

static bool listed(const char *const *keys, const char *key, size_t n)
{
        for (; *keys; keys++)
                if (strlen(*keys) == n && memcmp(*keys, key, n) == 0)
                        return true;
        return false;
}

/* What a member's value is copied as: LEVEL_COPY as it is, -1 not at all. */
static int member_level(enum level level, const char *key, size_t n)
{
        switch (level) {
        case LEVEL_LIST:
                return n == 7 && memcmp(key, "\"items\"", 7) == 0 ? LEVEL_LIST : LEVEL_COPY;
        case LEVEL_ITEM:
                if (n == 10 && memcmp(key, "\"metadata\"", 10) == 0)
                        return LEVEL_METADATA;
                return n == 6 && memcmp(key, "\"spec\"", 6) == 0 ? LEVEL_SPEC : LEVEL_COPY;
        case LEVEL_METADATA:
                return listed(metadata_unread, key, n) ? -1 : LEVEL_COPY;
        case LEVEL_SPEC:
                return listed(spec_unread, key, n) ? -1 : LEVEL_COPY;
        default:
                return LEVEL_COPY;
        }
}

static int copy_value(struct copy *c, size_t *i, int level);

/* After an element of an array or object (r: its copy's result), skips to the next one: 1 past a
 * comma, 0 at close, -EBADMSG for anything else (a comma before close included). */
static int next_element(struct copy *c, size_t *i, char close, int r)
{
        *i = skip_space(c, *i);
        if (r < 0)
                return r;
        if (*i < c->len && c->s[*i] == ',') {
                *i = skip_space(c, *i + 1);
                return *i < c->len && c->s[*i] == close ? -EBADMSG : 1;
        }
        return *i < c->len && c->s[*i] == close ? 0 : -EBADMSG;
}

/* Copies the array at s[*i] ('['), each element at level; *i moves past it. */
static int copy_array(struct copy *c, size_t *i, int level)
{
        int r = emit(c, "[", 1);

        for (*i = skip_space(c, *i + 1); r >= 0 && *i < c->len && c->s[*i] != ']';) {
                r = next_element(c, i, ']', copy_value(c, i, level));
                if (r == 1)
                        r = emit(c, ",", 1);
        }
        if (r >= 0 && *i >= c->len)
                r = -EBADMSG;
        (*i)++;
        return r < 0 ? r : emit(c, "]", 1);
}

/* Copies the object at s[*i] ('{') with the members level keeps; *i moves past it. */
static int copy_object(struct copy *c, size_t *i, enum level level)
{
        bool first = true;
        int r = emit(c, "{", 1);

        for (*i = skip_space(c, *i + 1); r >= 0 && *i < c->len && c->s[*i] != '}';) {
                size_t key = *i, key_end = past_string(c, key);
                int inner;

                if (c->s[key] != '"' || (*i = skip_space(c, key_end)) >= c->len || c->s[*i] != ':')
                        return -EBADMSG;
                *i = skip_space(c, *i + 1);
                inner = member_level(level, c->s + key, key_end - key);
                if (inner < 0) {
                        size_t value = *i;

                        *i = past_value(c, value);
                        if (*i == value)
                                return -EBADMSG;
                } else {
                        r = first ? 0 : emit(c, ",", 1);
                        if (r >= 0)
                                r = emit(c, c->s + key, key_end - key);
                        if (r >= 0)
                                r = emit(c, ":", 1);
                        if (inner == LEVEL_METADATA)
                                c->metadata_start = *i;
                        if (r >= 0)
                                r = copy_value(c, i, inner);
                        if (inner == LEVEL_METADATA)
                                c->metadata_len = *i - c->metadata_start;
                        first = false;
                }
                r = next_element(c, i, '}', r);
        }
        if (r >= 0 && *i >= c->len)
                r = -EBADMSG;
        (*i)++;
        return r < 0 ? r : emit(c, "}", 1);
}

/* Copies the value at s[*i]: a list's items one by one, an object by its level, else as is. */
static int copy_value(struct copy *c, size_t *i, int level)
{
        size_t start = *i;

        if (*i >= c->len)
                return -EBADMSG;
        if (level == LEVEL_LIST && c->s[*i] == '[')
                return copy_array(c, i, LEVEL_ITEM);
        if (level != LEVEL_COPY && level != LEVEL_LIST && c->s[*i] == '{')
                return copy_object(c, i, level);
        *i = past_value(c, *i);
        return *i > start ? emit(c, c->s + start, *i - start) : -EBADMSG;
}

/* Parses the copy of text[0..len) that opens at level, less what that level leaves out. */
static int decode(const char *text, size_t len, enum level level, struct copy *c_out, json_t **ret)
{
        struct copy c = {.s = text, .len = len};
        size_t i = 0, kept_len = 0;
        char *kept = NULL;
        json_t *decoded;
        int r;

        c.out = open_memstream(&kept, &kept_len);
        if (!c.out)
                return -ENOMEM;
        i = skip_space(&c, 0);
        r = i < len && text[i] == '{' ? copy_object(&c, &i, level) : -EBADMSG;
        if (r >= 0 && skip_space(&c, i) != len)
                r = -EBADMSG;
        if (fclose(c.out) != 0 && r >= 0)
                r = -ENOMEM;
        decoded = r < 0 ? NULL : json_loadb(kept, kept_len, 0, NULL);
        free(kept);
        if (r < 0)
                return r;
        if (!json_is_object(decoded)) {
                json_decref(decoded);
                return -EBADMSG;
        }
        if (c_out)
                *c_out = c;
        *ret = decoded;
        return 0;
}

int xp_table_list_decode(const char *text, size_t len, json_t **ret)
{
        return decode(text, len, LEVEL_LIST, NULL, ret);
}

int xp_table_object_decode(const char *text,
                           size_t len,
                           json_t **ret,
                           size_t *ret_metadata_start,
                           size_t *ret_metadata_len)
{
        struct copy c = {0};
        int r = decode(text, len, LEVEL_ITEM, &c, ret);

        if (r >= 0 && ret_metadata_start)
                *ret_metadata_start = c.metadata_start;
        if (r >= 0 && ret_metadata_len)
                *ret_metadata_len = c.metadata_len;
        return r;
}
