/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "xpool/strutil.h"

#define QUOTE_SHOWN_MAX 64

char *xp_quote_mem(const char *s, size_t len, char buf[static XP_QUOTE_MAX])
{
        size_t o = 0;
        size_t shown = len < QUOTE_SHOWN_MAX ? len : QUOTE_SHOWN_MAX;

        buf[o++] = '"';
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
        buf[o++] = '"';
        if (shown < len) {
                memcpy(buf + o, "...", 3);
                o += 3;
        }
        buf[o] = '\0';
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
