/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes what the HTTP layer owns of a request before a handler runs: the head checks of the
 * front door (xp_http_check_head(), xp_http_check_target(), src/http/head.h), the query parsing
 * handlers read parameters through (xp_http_query_parse()), and the route lookup
 * (http_route_lookup(), src/server/http_route.c) on the path as libmicrohttpd decodes it. The
 * input is a request head as a client sends it. Checks that:
 *  - a refusal has a code the door answers with (400, 414, 431, 505) and a message;
 *  - an accepted head is complete (it ends with an empty line), within XP_HTTP_HEAD_MAX, and
 *    its target passes xp_http_check_target() on its own;
 *  - an accepted path decodes to no control character and no '/' inside a segment, so that no
 *    lookup ever sees a name cut short at a NUL;
 *  - every decoded query parameter is free of control characters, and lookups find the first;
 *  - the route lookup answers 1, 0 or -ENOENT for every method, with a kind for resource routes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http.h"
#include "xpool/http.h"
#include "xpool/strutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static void check_refusal(const struct xp_http_refusal *r)
{
        check(r->code == 400 || r->code == 414 || r->code == 431 || r->code == 505);
        check(r->reason && r->reason[0]);
        check(memchr(r->message, '\0', sizeof r->message) && r->message[0]);
}

/* Decodes %HH as libmicrohttpd does; false when a byte is one no lookup may see. */
static bool decode_path(const char *path, size_t len, char *out)
{
        size_t o = 0;

        for (size_t i = 0; i < len; i++) {
                unsigned char b = (unsigned char)path[i];

                if (b == '%' && i + 2 < len && xp_hex_digit(path[i + 1]) >= 0 &&
                    xp_hex_digit(path[i + 2]) >= 0) {
                        b = (unsigned char)(xp_hex_digit(path[i + 1]) * 16 +
                                            xp_hex_digit(path[i + 2]));
                        i += 2;
                        if (b == '/')
                                return false;
                }
                if (b < 0x20 || b == 0x7f)
                        return false;
                out[o++] = (char)b;
        }
        out[o] = '\0';
        return true;
}

static void fuzz_query(const char *query, size_t len, bool checked)
{
        struct xp_http_query q = {0};

        if (xp_http_query_parse(query, len, &q) < 0)
                return;
        for (size_t i = 0; i < q.n; i++) {
                const char *v = q.args[i].value;

                check(q.args[i].key != NULL);
                if (checked) {
                        for (const char *p = q.args[i].key; *p; p++)
                                check((unsigned char)*p >= 0x20 && *p != 0x7f);
                        for (const char *p = v; p && *p; p++)
                                check((unsigned char)*p >= 0x20 && *p != 0x7f);
                }
                /* the first of a name is the one found */
                for (size_t j = 0; j < i; j++)
                        if (strcmp(q.args[j].key, q.args[i].key) == 0) {
                                v = q.args[j].value;
                                break;
                        }
                check(xp_http_query_get(&q, q.args[i].key) == v);
        }
        xp_http_query_done(&q);
}

static void fuzz_route(const char *path)
{
        static const enum http_method methods[] = {
            HTTP_GET, HTTP_POST, HTTP_PUT, HTTP_PATCH, HTTP_DELETE, HTTP_OTHER};

        for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
                struct http_captures c;
                struct route route;
                int r = http_route_lookup(methods[i], path, &route, &c);

                check(r == 1 || r == 0 || r == -ENOENT);
                if (r == 1) {
                        check(route.method == methods[i]);
                        check(!route.flags || route.kind);
                        check(!c.has_name || (c.name[0] && !strchr(c.name, '/')));
                }
        }
}

/* An accepted head: its request line's target, checked again on its own, then used. */
static void fuzz_accepted(const char *head, size_t len)
{
        const char *line = head, *end = head + len, *sp1, *sp2, *q;
        struct xp_http_refusal refusal;
        char *path;

        while (*line == '\r' || *line == '\n')
                line++;
        sp1 = memchr(line, ' ', (size_t)(end - line));
        check(sp1 != NULL);
        sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
        check(sp2 != NULL);
        check(xp_http_check_target(sp1 + 1, (size_t)(sp2 - sp1 - 1), &refusal) == 0);
        q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
        path = malloc((size_t)(sp2 - sp1) + 1);
        if (!path)
                return;
        check(decode_path(sp1 + 1, (size_t)((q ? q : sp2) - sp1 - 1), path));
        fuzz_route(path);
        free(path);
        if (q)
                fuzz_query(q + 1, (size_t)(sp2 - q - 1), true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_http_refusal refusal;
        size_t head_len = 0;
        char *text = malloc(size + 1);
        int r;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        r = xp_http_check_head(text, size, &head_len, &refusal);
        check(r == 1 || r == 0 || r == -EINVAL);
        if (r < 0)
                check_refusal(&refusal);
        if (r == 0)
                check(size < XP_HTTP_HEAD_MAX);
        if (r == 1) {
                check(head_len <= size && head_len <= XP_HTTP_HEAD_MAX + 2);
                check(head_len >= 2 && text[head_len - 1] == '\n');
                check(text[head_len - 2] == '\n' ||
                      (head_len >= 3 && text[head_len - 2] == '\r' && text[head_len - 3] == '\n'));
                fuzz_accepted(text, head_len);
        }

        /* the whole input as a target, a query and a path, unchecked */
        r = xp_http_check_target(text, size, &refusal);
        check(r == 0 || r == -EINVAL);
        if (r < 0)
                check_refusal(&refusal);
        fuzz_query(text, size, false);
        if (size < 4096 && !memchr(text, '\0', size))
                fuzz_route(text);
        free(text);
        return 0;
}
