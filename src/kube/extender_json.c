/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JSON of the extender's hot path, read and written by hand. kube-scheduler sends every
 * candidate with each request (5,000 node names is 60 KiB; whole Nodes megabytes) and waits on
 * the answer, and jansson builds a tree of allocations for each value: 2.5 ms to read 5,000
 * names, 9 ms to write as many priorities. Here the body is scanned once, validating as JSON, and
 * only what the extender uses is taken: the Pod's text (then decoded by the codec), the node
 * names, and each whole Node's text, which goes back out unchanged. Answers are written straight
 * into one buffer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kube_internal.h"
#include "xpool/strutil.h"

#define DEPTH_MAX 100 /* as XP_OBJECT_MAX_DEPTH */

/* ---- reading ----------------------------------------------------------------------------- */

static void ws(struct jscan *s)
{
        while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
                s->p++;
}

static int fail(struct jscan *s, const char *what)
{
        if (!s->what)
                s->what = what;
        if (!s->at)
                s->at = s->p;
        return -EINVAL;
}

static int hex4(const char *p, unsigned *ret)
{
        unsigned v = 0;

        for (int i = 0; i < 4; i++) {
                char c = p[i];
                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (unsigned)(c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (unsigned)(c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (unsigned)(c - 'A' + 10);
                else
                        return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* One escape after the backslash at *p: appended to out (when not NULL) as UTF-8. */
static int escape(struct jscan *s, const char **p, char *out, size_t *n)
{
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *e = strchr(from, (*p)[1]);
        unsigned cp, lo;

        if ((*p)[1] && e) {
                if (out)
                        out[(*n)++] = to[e - from];
                *p += 2;
                return 0;
        }
        if ((*p)[1] != 'u' || s->end - *p < 6 || hex4(*p + 2, &cp) < 0)
                return fail(s, "a bad escape in a string");
        *p += 6;
        if (cp >= 0xd800 && cp < 0xdc00) {
                if (s->end - *p < 6 || (*p)[0] != '\\' || (*p)[1] != 'u' || hex4(*p + 2, &lo) < 0 ||
                    lo < 0xdc00 || lo > 0xdfff)
                        return fail(s, "a lone UTF-16 surrogate in a string");
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                *p += 6;
        } else if (cp >= 0xdc00 && cp < 0xe000) {
                return fail(s, "a lone UTF-16 surrogate in a string");
        }
        if (cp == 0)
                return fail(s, "a NUL character in a string");
        if (out)
                *n += xp_utf8_put(out + *n, cp);
        return 0;
}

/* The text of the string at s->p into out (NULL: only checked): *ret_n bytes written. */
static int string_into(struct jscan *s, char *out, size_t *ret_n)
{
        const char *p = s->p + 1, *close = p;
        bool plain = true;
        size_t n = 0;
        int r;

        if (s->p >= s->end || *s->p != '"')
                return fail(s, "a string");
        /* one pass to the closing quote; most strings (names) have nothing to unescape */
        while (close < s->end && *close != '"') {
                unsigned char c = (unsigned char)*close;
                if (c == '\\') {
                        plain = false;
                        close += 2;
                        continue;
                }
                if (c < 0x20) {
                        s->p = close;
                        return fail(s, "a control character in a string");
                }
                close++;
        }
        if (close >= s->end) {
                s->p = s->end;
                return fail(s, "the end of a string");
        }
        if (!xp_utf8_valid(p, (size_t)(close - p)))
                return fail(s, "UTF-8 text in a string");
        if (plain) {
                if (out)
                        memcpy(out, p, (size_t)(close - p));
                n = (size_t)(close - p);
        }
        while (!plain && p < close) {
                if (*p == '\\') {
                        r = escape(s, &p, out, &n);
                        if (r < 0) {
                                s->p = p;
                                return r;
                        }
                        continue;
                }
                if (out)
                        out[n] = *p;
                n++;
                p++;
        }
        s->p = close + 1;
        *ret_n = n;
        return 0;
}

int jscan_string(struct jscan *s, char **ret)
{
        const char *start = s->p;
        size_t n = 0;
        char *out;
        int r;

        if (!ret)
                return string_into(s, NULL, &n);
        /* the text decoded is never longer than the text escaped */
        r = string_into(s, NULL, &n);
        if (r < 0)
                return r;
        out = malloc((size_t)(s->p - start));
        if (!out)
                return -ENOMEM;
        s->p = start;
        r = string_into(s, out, &n);
        if (r < 0) {
                free(out);
                return r;
        }
        out[n] = '\0';
        *ret = out;
        return 0;
}

int jscan_string_to(struct jscan *s, char *out, size_t *ret_n)
{
        size_t n = 0;
        int r = string_into(s, out, &n);

        if (r >= 0) {
                out[n] = '\0';
                *ret_n = n + 1;
        }
        return r;
}

static int number(struct jscan *s)
{
        const char *p = s->p;

        if (p < s->end && *p == '-')
                p++;
        if (p >= s->end || *p < '0' || *p > '9')
                return fail(s, "a value");
        if (*p == '0')
                p++;
        else
                while (p < s->end && *p >= '0' && *p <= '9')
                        p++;
        if (p < s->end && *p == '.') {
                if (++p >= s->end || *p < '0' || *p > '9')
                        return fail(s, "a digit");
                while (p < s->end && *p >= '0' && *p <= '9')
                        p++;
        }
        if (p < s->end && (*p == 'e' || *p == 'E')) {
                p++;
                if (p < s->end && (*p == '+' || *p == '-'))
                        p++;
                if (p >= s->end || *p < '0' || *p > '9')
                        return fail(s, "a digit");
                while (p < s->end && *p >= '0' && *p <= '9')
                        p++;
        }
        s->p = p;
        return 0;
}

static int literal(struct jscan *s, const char *word)
{
        size_t n = strlen(word);

        if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
                return fail(s, "a value");
        s->p += n;
        return 0;
}

static int skip_member(struct jscan *s, const char *key, void *ud)
{
        (void)key;
        (void)ud;
        return jscan_skip(s);
}

static int skip_element(struct jscan *s, size_t i, void *ud)
{
        (void)i;
        (void)ud;
        return jscan_skip(s);
}

int jscan_skip(struct jscan *s)
{
        ws(s);
        if (s->p >= s->end)
                return fail(s, "a value");
        switch (*s->p) {
        case '{':
                return jscan_object(s, skip_member, NULL);
        case '[':
                return jscan_array(s, skip_element, NULL);
        case '"':
                return jscan_string(s, NULL);
        case 't':
                return literal(s, "true");
        case 'f':
                return literal(s, "false");
        case 'n':
                return literal(s, "null");
        default:
                return number(s);
        }
}

int jscan_object(struct jscan *s,
                 int (*member)(struct jscan *s, const char *key, void *ud),
                 void *ud)
{
        int r;

        ws(s);
        if (s->p >= s->end || *s->p != '{')
                return fail(s, "an object");
        if (!member)
                member = skip_member;
        if (++s->depth > DEPTH_MAX)
                return fail(s, "values nested no deeper than 100");
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == '}') {
                s->p++;
                s->depth--;
                return 0;
        }
        for (;;) {
                _cleanup_free_ char *key = NULL;

                ws(s);
                /* a skipped object's names are only checked, not copied */
                r = jscan_string(s, member == skip_member ? NULL : &key);
                if (r < 0)
                        return r;
                ws(s);
                if (s->p >= s->end || *s->p != ':')
                        return fail(s, "':' after a member name");
                s->p++;
                ws(s);
                r = member(s, key ? key : "", ud);
                if (r < 0)
                        return r;
                ws(s);
                if (s->p < s->end && *s->p == ',') {
                        s->p++;
                        continue;
                }
                if (s->p < s->end && *s->p == '}') {
                        s->p++;
                        s->depth--;
                        return 0;
                }
                return fail(s, "',' or '}'");
        }
}

int jscan_array(struct jscan *s, int (*element)(struct jscan *s, size_t i, void *ud), void *ud)
{
        size_t i = 0;
        int r;

        ws(s);
        if (s->p >= s->end || *s->p != '[')
                return fail(s, "a list");
        if (++s->depth > DEPTH_MAX)
                return fail(s, "values nested no deeper than 100");
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == ']') {
                s->p++;
                s->depth--;
                return 0;
        }
        for (;; i++) {
                ws(s);
                r = element(s, i, ud);
                if (r < 0)
                        return r;
                ws(s);
                if (s->p < s->end && *s->p == ',') {
                        s->p++;
                        continue;
                }
                if (s->p < s->end && *s->p == ']') {
                        s->p++;
                        s->depth--;
                        return 0;
                }
                return fail(s, "',' or ']'");
        }
}

bool jscan_null(struct jscan *s)
{
        ws(s);
        if ((size_t)(s->end - s->p) >= 4 && memcmp(s->p, "null", 4) == 0) {
                s->p += 4;
                return true;
        }
        return false;
}

void jscan_where(const struct jscan *s, const char *start, int *ret_line, int *ret_column)
{
        const char *at = s->at ? s->at : s->p;
        int line = 1, column = 1;

        for (const char *p = start; p < at; p++) {
                if (*p == '\n') {
                        line++;
                        column = 1;
                } else {
                        column++;
                }
        }
        *ret_line = line;
        *ret_column = column;
}

/* ---- writing ------------------------------------------------------------------------------- */

static void grow(struct jbuf *b, size_t more)
{
        char *m;
        size_t cap;

        if (b->oom || b->len + more + 1 <= b->cap)
                return;
        cap = (b->len + more + 1) * 2;
        m = realloc(b->p, cap);
        if (!m) {
                b->oom = true;
                return;
        }
        b->p = m;
        b->cap = cap;
}

void jbuf_reserve(struct jbuf *b, size_t bytes)
{
        grow(b, bytes);
}

void jbuf_put(struct jbuf *b, const char *text, size_t len)
{
        grow(b, len);
        if (b->oom)
                return;
        memcpy(b->p + b->len, text, len);
        b->len += len;
        b->p[b->len] = '\0';
}

void jbuf_repeat(struct jbuf *b, size_t at, size_t len)
{
        grow(b, len); /* may move b->p: the source is taken after */
        if (b->oom)
                return;
        memcpy(b->p + b->len, b->p + at, len);
        b->len += len;
        b->p[b->len] = '\0';
}

void jbuf_puts(struct jbuf *b, const char *text)
{
        jbuf_put(b, text, strlen(text));
}

/* Whether c goes into a JSON string as it is. */
static bool plain(unsigned char c)
{
        return c >= 0x20 && c != '"' && c != '\\';
}

/* The escape of c (not plain) at out; returns its length. */
static size_t escape_into(unsigned char c, char *out)
{
        static const char hex[] = "0123456789abcdef";

        if (c == '"' || c == '\\') {
                out[0] = '\\';
                out[1] = (char)c;
                return 2;
        }
        memcpy(out, "\\u00", 4);
        out[4] = hex[c >> 4];
        out[5] = hex[c & 0xf];
        return 6;
}

/* The answers carry thousands of node names and reasons, nearly all plain: runs of plain bytes
 * are copied whole. */
#define SHORT_STRING 62 /* node names mostly are: written in one pass, as they are scanned */

static void string_escaped(struct jbuf *b, const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t len = strlen(s);

        grow(b, len * 6 + 2);
        if (b->oom)
                return;
        b->p[b->len++] = '"';
        while (*p) {
                const unsigned char *run = p;

                while (plain(*p))
                        p++;
                memcpy(b->p + b->len, run, (size_t)(p - run));
                b->len += (size_t)(p - run);
                if (*p)
                        b->len += escape_into(*p++, b->p + b->len);
        }
        b->p[b->len++] = '"';
        b->p[b->len] = '\0';
}

void jbuf_string(struct jbuf *b, const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        char *out;
        size_t k = 0;

        grow(b, SHORT_STRING + 2);
        if (b->oom)
                return;
        out = b->p + b->len + 1;
        while (k < SHORT_STRING && plain(p[k])) {
                out[k] = (char)p[k];
                k++;
        }
        if (p[k] != '\0') {
                string_escaped(b, s); /* long, or with something to escape */
                return;
        }
        out[-1] = '"';
        out[k] = '"';
        b->len += k + 2;
        b->p[b->len] = '\0';
}

void jbuf_int(struct jbuf *b, long long v)
{
        char digits[24];
        unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        size_t n = sizeof(digits);

        do
                digits[--n] = (char)('0' + u % 10);
        while ((u /= 10) > 0);
        if (v < 0)
                digits[--n] = '-';
        jbuf_put(b, digits + n, sizeof(digits) - n);
}

char *jbuf_take(struct jbuf *b)
{
        char *p = b->oom ? NULL : b->p;

        if (b->oom || !p)
                free(b->p);
        *b = (struct jbuf){0};
        return p ? p : NULL;
}
