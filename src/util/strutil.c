/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xpool/strutil.h"

#define QUOTE_SHOWN_MAX 64

/* Writes the escaped, possibly cut form of s[0..len) at buf + o; returns the new end. */
static size_t escape_into(const char *s, size_t len, char *buf, size_t o)
{
        size_t shown = len < QUOTE_SHOWN_MAX ? len : QUOTE_SHOWN_MAX;

        for (size_t i = 0; i < shown; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c == '"' || c == '\\') {
                        buf[o++] = '\\';
                        buf[o++] = (char)c;
                } else if (c < 0x20 || c >= 0x7f) {
                        o += (size_t)snprintf(buf + o, XP_QUOTE_MAX - o, "\\x%02x", c);
                } else {
                        buf[o++] = (char)c;
                }
        }
        buf[o] = '\0';
        return o;
}

static size_t append_cut_mark(size_t len, char *buf, size_t o)
{
        if (len > QUOTE_SHOWN_MAX) {
                memcpy(buf + o, "...", 4);
                o += 3;
        }
        return o;
}

char *xp_escape(const char *s, char buf[static XP_QUOTE_MAX])
{
        size_t len = strlen(s);

        append_cut_mark(len, buf, escape_into(s, len, buf, 0));
        return buf;
}

char *xp_quote_mem(const char *s, size_t len, char buf[static XP_QUOTE_MAX])
{
        size_t o;

        buf[0] = '"';
        o = escape_into(s, len, buf, 1);
        buf[o++] = '"';
        buf[o] = '\0';
        append_cut_mark(len, buf, o);
        return buf;
}

char *xp_quote(const char *s, char buf[static XP_QUOTE_MAX])
{
        if (!s) {
                snprintf(buf, XP_QUOTE_MAX, "(null)");
                return buf;
        }
        return xp_quote_mem(s, strlen(s), buf);
}

char *xp_strdup0(const char *s)
{
        return s ? strdup(s) : NULL;
}

bool xp_streq0(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

int xp_hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

bool xp_hex_is_lower(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

void xp_hex_encode(const void *data, size_t len, char *out)
{
        static const char digits[] = "0123456789abcdef";
        const unsigned char *p = data;

        for (size_t i = 0; i < len; i++) {
                out[2 * i] = digits[p[i] >> 4];
                out[2 * i + 1] = digits[p[i] & 15];
        }
        out[2 * len] = '\0';
}

int xp_hex_decode(const char *text, void *out, size_t len)
{
        unsigned char *p = out;

        for (size_t i = 0; i < len; i++) {
                int hi = xp_hex_digit(text[2 * i]),
                    lo = hi < 0 ? -1 : xp_hex_digit(text[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                p[i] = (unsigned char)(hi << 4 | lo);
        }
        return 0;
}

bool xp_utf8_valid(const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s, *end = p + len;

        while (p < end) {
                unsigned c = *p++;
                size_t extra;
                uint32_t cp;

                if (c < 0x80)
                        continue;
                if (c >= 0xc2 && c <= 0xdf) {
                        extra = 1;
                        cp = c & 0x1f;
                } else if (c >= 0xe0 && c <= 0xef) {
                        extra = 2;
                        cp = c & 0x0f;
                } else if (c >= 0xf0 && c <= 0xf4) {
                        extra = 3;
                        cp = c & 0x07;
                } else {
                        return false;
                }
                if ((size_t)(end - p) < extra)
                        return false;
                for (size_t i = 0; i < extra; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                        cp = (cp << 6) | (p[i] & 0x3f);
                }
                p += extra;
                if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) || cp > 0x10ffff ||
                    (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
        }
        return true;
}

size_t xp_utf8_put(char *out, uint32_t cp)
{
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}
