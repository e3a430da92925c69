/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "xpool/base64.h"

static int sextet(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

static int is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int xp_base64_decode(const char *text, size_t len, char **ret, size_t *ret_len)
{
        char *out = malloc(len / 4 * 3 + 4);
        uint32_t acc = 0;
        size_t n = 0, digits = 0, pad = 0;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                int v;

                if (is_space(text[i]))
                        continue;
                if (text[i] == '=') {
                        pad++;
                        continue;
                }
                v = sextet(text[i]);
                /* Data after padding would be a second encoding glued on: refuse it. */
                if (v < 0 || pad > 0) {
                        free(out);
                        return -EINVAL;
                }
                acc = acc << 6 | (uint32_t)v;
                if (++digits % 4 == 0) {
                        out[n++] = (char)(acc >> 16);
                        out[n++] = (char)(acc >> 8);
                        out[n++] = (char)acc;
                        acc = 0;
                }
        }
        /* A lone trailing digit carries under 8 bits; padding must complete the last quantum. */
        switch (digits % 4) {
        case 0:
                if (pad != 0)
                        goto invalid;
                break;
        case 2:
                if (pad != 0 && pad != 2)
                        goto invalid;
                out[n++] = (char)(acc >> 4);
                break;
        case 3:
                if (pad > 1)
                        goto invalid;
                out[n++] = (char)(acc >> 10);
                out[n++] = (char)(acc >> 2);
                break;
        default:
                goto invalid;
        }
        out[n] = '\0';
        *ret = out;
        *ret_len = n;
        return 0;
invalid:
        free(out);
        return -EINVAL;
}

int xp_base64_encode(const void *data, size_t len, char **ret)
{
        static const char alphabet[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const uint8_t *in = data;
        char *out = malloc((len + 2) / 3 * 4 + 1), *p = out;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16;

                if (i + 1 < len)
                        v |= (uint32_t)in[i + 1] << 8;
                if (i + 2 < len)
                        v |= in[i + 2];
                *p++ = alphabet[(v >> 18) & 63];
                *p++ = alphabet[(v >> 12) & 63];
                *p++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
                *p++ = i + 2 < len ? alphabet[v & 63] : '=';
        }
        *p = '\0';
        *ret = out;
        return 0;
}
