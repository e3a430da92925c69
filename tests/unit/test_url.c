/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one URL splitter (src/util/url.c) the client, the agent and the server's Prometheus source
 * share: hosts (names, IPv4, bracketed IPv6), ports (given, the scheme's, refused), paths and
 * queries, and what is refused with what reason.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/url.h"

struct split_case {
        const char *url, *scheme, *host, *path;
        unsigned port;
        bool port_given;
};

static void splits(void **state)
{
        static const struct split_case cases[] = {
            {"https://10.1.2.3:6443", "https", "10.1.2.3", "", 6443, true},
            {"http://api.example", "http", "api.example", "", 80, false},
            {"https://api.example", "https", "api.example", "", 443, false},
            {"HTTPS://Api.Example/", "HTTPS", "Api.Example", "/", 443, false},
            {"https://[fd00::1]/prefix", "https", "fd00::1", "/prefix", 443, false},
            {"http://[::1]:9090", "http", "::1", "", 9090, true},
            {"http://[fe80::1%eth0]:1/", "http", "fe80::1%eth0", "/", 1, true},
            {"http://h:65535/a/b/?q=1&r=%2F#frag",
             "http",
             "h",
             "/a/b/?q=1&r=%2F#frag",
             65535,
             true},
            {"http://h?query", "http", "h", "?query", 80, false},
            {"http://h#frag", "http", "h", "#frag", 80, false},
            {"tcp://h:7", "tcp", "h", "", 7, true},
            {"svc+x.y-z://h:08", "svc+x.y-z", "h", "", 8, true},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct split_case *c = &cases[i];
                struct xp_error err = {0};
                struct xp_url u;

                if (xp_url_split(c->url, &u, &err) < 0)
                        fail_msg("%s: %s", c->url, err.msg);
                assert_string_equal(u.scheme, c->scheme);
                assert_string_equal(u.host, c->host);
                assert_string_equal(u.path, c->path);
                assert_int_equal(u.port, c->port);
                assert_int_equal(u.port_given, c->port_given);
                xp_url_done(&u);
                xp_url_done(&u); /* twice is harmless */
                assert_null(u.host);
        }
}

struct refusal {
        const char *url, *why;
};

static void refusals(void **state)
{
        static const struct refusal cases[] = {
            {"10.1.2.3:6443", "no scheme"},
            {"api.example", "no scheme"},
            {"://h", "no scheme"},
            {"1http://h", "no scheme"},
            {"http:/h", "no scheme"},
            {"ht tp://h", "no scheme"},
            {"", "no scheme"},
            {"https://", "no host"},
            {"https:///path", "no host"},
            {"https://:443", "no host"},
            {"https://user@h", "a user name or password"},
            {"https://user:secret@h:443/", "a user name or password"},
            {"https://[::1", "[ADDRESS]"},
            {"https://[]:443", "[ADDRESS]"},
            {"https://[::1]x", "only \":PORT\""},
            {"https://fd00::1", "in brackets"},
            {"https://h:0", "port \"0\": not a number from 1 to 65535"},
            {"https://h:65536", "port \"65536\""},
            {"https://h:99999", "port \"99999\""},
            {"https://h:4294967297", "port \"4294967297\""},
            {"https://h:12x", "port \"12x\""},
            {"https://h:-1", "port \"-1\""},
            {"https://h:+80", "port \"+80\""},
            {"https://h:", "port \"\""},
            {"https://[::1]:", "port \"\""},
            {"ftp://h", "no port, and ftp has no default one"},
            {"ftp://h/path", "no port"},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct xp_error err = {0};
                struct xp_url u;

                assert_int_equal(xp_url_split(cases[i].url, &u, &err), -EINVAL);
                if (!strstr(err.msg, cases[i].why))
                        fail_msg(
                            "%s: \"%s\" does not say \"%s\"", cases[i].url, err.msg, cases[i].why);
                /* nothing is left to free */
                assert_null(u.scheme);
                assert_null(u.host);
                assert_null(u.path);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(splits),
            cmocka_unit_test(refusals),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
