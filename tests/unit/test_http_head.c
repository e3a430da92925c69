/* SPDX-License-Identifier: Apache-2.0 */
/* The front door's request-head checks (src/http/head.h): targets, headers, whole heads, queries.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/http.h"

/* want: 0 accepted, else the refusal's code; part: a piece of its message (NULL: any) */
static void target(const char *t, unsigned want, const char *part)
{
        struct xp_http_refusal r = {0};
        int got = xp_http_check_target(t, strlen(t), &r);

        if (want == 0) {
                if (got != 0)
                        fail_msg("%s refused: %u %s", t, r.code, r.message);
                return;
        }
        assert_int_equal(got, -EINVAL);
        assert_int_equal(r.code, want);
        if (part && !strstr(r.message, part))
                fail_msg("%s: '%s' not in '%s'", t, part, r.message);
}

static void targets(void **state)
{
        char *big = malloc(XP_HTTP_TARGET_MAX + 2);

        (void)state;
        target("/api/v1/namespaces/default/pods/web", 0, NULL);
        target("/api/v1/pods?watch=true&labelSelector=app%3Dweb%2Ctier%21%3Ddb", 0, NULL);
        target("/api/v1/namespaces/default/pods/a%41b", 0, NULL);
        target("/x?a=%20+b&b", 0, NULL);
        /* the case: a NUL cuts no name short */
        target("/api/v1/namespaces/default/pods/sentinel%00extra",
               400,
               "byte 40: %00 encodes a control character");
        target("/api/v1/namespaces/default/pods/a%0a", 400, "control character");
        target("/api/v1/namespaces/default/pods/a%7F", 400, "control character");
        target("/api/v1/namespaces/default/pods/a%2Fstatus", 400, "a '/'");
        target("/api/v1/namespaces/default/pods/a%zz", 400, "two hexadecimal digits");
        target("/api/v1/namespaces/default/pods/a%4", 400, "two hexadecimal digits");
        target("/api/v1/namespaces/default/pods/..", 400, "\"..\"");
        target("/api/v1/namespaces/default/pods/%2e", 400, "\".\"");
        target("/api/v1/namespaces/default/pods/...", 0, NULL);
        target("/api/v1/pods?labelSelector=a%00b", 400, "invalid query");
        target("/api/v1/pods?x=%g0", 400, "two hexadecimal digits");
        target("/a b", 400, "0x20");
        target("/a\x01", 400, "0x01");
        target("/a\xc3\xa9", 400, "0xc3");
        target("/a#frag", 400, "0x23");
        target("api/v1", 400, "starting with '/'");
        target("", 400, "starting with '/'");
        memset(big, 'a', XP_HTTP_TARGET_MAX + 1);
        big[0] = '/';
        big[XP_HTTP_TARGET_MAX + 1] = '\0';
        target(big, 414, "more than the limit of 8192");
        big[XP_HTTP_TARGET_MAX] = '\0';
        target(big, 0, NULL);
        free(big);
}

static void query_limit(void **state)
{
        char q[1024] = "/x?";

        (void)state;
        for (int i = 0; i < XP_HTTP_ARGS_MAX - 1; i++)
                strcat(q, "a=1&");
        strcat(q, "z=1");
        target(q, 0, NULL);
        strcat(q, "&y");
        target(q, 400, "more than 64 query parameters");
}

static int header(struct xp_http_header_check *c,
                  const char *name,
                  const char *value,
                  struct xp_http_refusal *r)
{
        return xp_http_check_header(c, name, strlen(name), value, strlen(value), r);
}

static void headers(void **state)
{
        struct xp_http_header_check c = {0};
        struct xp_http_refusal r;

        (void)state;
        assert_int_equal(header(&c, "Host", "x", &r), 0);
        assert_int_equal(header(&c, "Content-Length", "5", &r), 0);
        /* request smuggling: two lengths, or a length and chunks */
        assert_int_equal(header(&c, "content-length", "5", &r), -EINVAL);
        assert_string_equal(r.message, "the request has more than one content-length header");
        c = (struct xp_http_header_check){0};
        assert_int_equal(header(&c, "Content-Length", "5", &r), 0);
        assert_int_equal(header(&c, "Transfer-Encoding", "chunked", &r), 0);
        assert_int_equal(xp_http_check_headers_end(&c, &r), -EINVAL);
        assert_int_equal(r.code, 400);
        assert_non_null(strstr(r.message, "both Content-Length and Transfer-Encoding"));
        c = (struct xp_http_header_check){0};
        assert_int_equal(header(&c, "Transfer-Encoding", "gzip, chunked", &r), -EINVAL);
        assert_int_equal(header(&c, "Content-Length", "+5", &r), -EINVAL);
        assert_int_equal(header(&c, "Content-Length", "1234567890123456789", &r), -EINVAL);
        assert_int_equal(header(&c, "Authorization", "Bearer a", &r), 0);
        assert_int_equal(header(&c, "Authorization", "Bearer b", &r), -EINVAL);
        assert_int_equal(header(&c, "Bad Name", "x", &r), -EINVAL);
        assert_non_null(strstr(r.message, "not a token character"));
        assert_int_equal(header(&c, "X", "a\x01", &r), -EINVAL);
        assert_int_equal(header(&c, "X", "tab\tand obs-text \xff", &r), 0);
        c = (struct xp_http_header_check){0};
        for (int i = 0; i < XP_HTTP_HEADERS_MAX; i++)
                assert_int_equal(header(&c, "X", "y", &r), 0);
        assert_int_equal(header(&c, "X", "y", &r), -EINVAL);
        assert_int_equal(r.code, 431);
}

/* want: 1 accepted (its length is the whole text), 0 incomplete, else the refusal's code */
static void head(const char *text, int want)
{
        struct xp_http_refusal r = {0};
        size_t len = 0;
        int got = xp_http_check_head(text, strlen(text), &len, &r);

        if (want <= 1) {
                if (got != want)
                        fail_msg("%s: %d, expected %d (%u %s)", text, got, want, r.code, r.message);
                if (want == 1)
                        assert_int_equal(len, strlen(text));
                return;
        }
        if (got != -EINVAL || r.code != (unsigned)want)
                fail_msg("%s: %d %u %s, expected %d", text, got, r.code, r.message, want);
}

static void heads(void **state)
{
        char *big = malloc(XP_HTTP_HEAD_MAX + 64);

        (void)state;
        head("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 1);
        head("\r\nGET /healthz HTTP/1.0\n\n", 1);
        head("GET /healthz HTTP/1.1\r\nHost: x\r\n", 0);
        head("GET /heal", 0);
        head("GET /healthz HTTP/2.0\r\n\r\n", 505);
        head("GET /healthz HTTP/0.9\r\n\r\n", 505);
        head("GET /healthz HTTP/1.x\r\n\r\n", 400);
        head("GET /healthz\r\n\r\n", 400);
        head("GARBAGE\r\n\r\n", 400);
        head("G@T /healthz HTTP/1.1\r\n\r\n", 400);
        head("GET /a%00 HTTP/1.1\r\n\r\n", 400);
        head("GET /a HTTP/1.1\r\nno colon\r\n\r\n", 400);
        head("GET /a HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400);
        head("GET /a HTTP/1.1\r\nX: a\rb\r\n\r\n", 400);
        head("POST /a HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n", 400);
        head("POST /a HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
        /* a head that never ends: refused at the limit, as 414 while still in its first line */
        memset(big, 'a', XP_HTTP_HEAD_MAX + 8);
        memcpy(big, "GET /", 5);
        big[XP_HTTP_HEAD_MAX + 8] = '\0';
        head(big, 414);
        memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
        head(big, 431);
        free(big);
}

static void queries(void **state)
{
        static const char text[] = "watch=true&labelSelector=app%3Dweb+x&flag&&watch=false&e=";
        struct xp_http_query q = {0};

        (void)state;
        assert_int_equal(xp_http_query_parse(text, strlen(text), &q), 0);
        assert_int_equal(q.n, 5);
        assert_string_equal(xp_http_query_get(&q, "watch"), "true");
        assert_string_equal(xp_http_query_get(&q, "labelSelector"), "app=web x");
        assert_null(xp_http_query_get(&q, "flag")); /* no '=': no value, as libmicrohttpd */
        assert_string_equal(q.args[2].key, "flag");
        assert_string_equal(xp_http_query_get(&q, "e"), "");
        assert_null(xp_http_query_get(&q, "absent"));
        xp_http_query_done(&q);
        assert_int_equal(xp_http_query_parse("", 0, &q), 0);
        assert_int_equal(q.n, 0);
        xp_http_query_done(&q);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(targets),
            cmocka_unit_test(query_limit),
            cmocka_unit_test(headers),
            cmocka_unit_test(heads),
            cmocka_unit_test(queries),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
