/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one CIDR parser (src/util/netcidr.c) the agent's forwarder, the pod network and the
 * server's Service ranges share: IPv4 and IPv6, the prefix's bounds, host bits, and the reason
 * each refusal gives.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "xpool/netcidr.h"

struct good_case {
        const char *text;
        unsigned flags;
        int family;
        const char *addr;
        unsigned prefix;
};

static void reads_networks(void **state)
{
        static const struct good_case cases[] = {
            {"10.0.0.0/16", 0, AF_INET, "10.0.0.0", 16},
            {"0.0.0.0/0", 0, AF_INET, "0.0.0.0", 0},
            {"192.168.1.7/32", 0, AF_INET, "192.168.1.7", 32},
            {"10.96.0.0/12", 0, AF_INET, "10.96.0.0", 12},
            {"10.96.0.1/12", XP_NET_CIDR_HOST_BITS, AF_INET, "10.96.0.1", 12},
            {"255.255.255.254/31", 0, AF_INET, "255.255.255.254", 31},
            {"::/0", 0, AF_INET6, "::", 0},
            {"fd00::/64", 0, AF_INET6, "fd00::", 64},
            {"fd00:10:96::/108", 0, AF_INET6, "fd00:10:96::", 108},
            {"2001:db8::1/128", 0, AF_INET6, "2001:db8::1", 128},
            {"fd00::5/64", XP_NET_CIDR_HOST_BITS, AF_INET6, "fd00::5", 64},
            {"::ffff:10.0.0.0/104", 0, AF_INET6, "::ffff:10.0.0.0", 104},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct good_case *c = &cases[i];
                struct xp_net_cidr cidr;
                struct xp_error err = {0};
                unsigned char want[16] = {0};

                if (xp_net_cidr_parse(c->text, c->flags, &cidr, &err) != 0)
                        fail_msg("'%s' was refused: %s", c->text, err.msg);
                assert_int_equal(inet_pton(c->family, c->addr, want), 1);
                assert_int_equal(cidr.family, c->family);
                assert_int_equal(cidr.prefix, c->prefix);
                assert_int_equal(xp_net_cidr_len(&cidr), c->family == AF_INET6 ? 16 : 4);
                assert_memory_equal(cidr.addr, want, xp_net_cidr_len(&cidr));
        }
}

struct bad_case {
        const char *text;
        unsigned flags;
        const char *reason; /* a part of the message */
};

static void refuses_with_reasons(void **state)
{
        static const struct bad_case cases[] = {
            {"", 0, "an empty CIDR"},
            {"10.0.0.0", 0, "'10.0.0.0': no /PREFIX"},
            {"/8", 0, "'' is not an IPv4 address"},
            {"banana/16", 0, "'banana' is not an IPv4 address"},
            {"10.0.0/16", 0, "'10.0.0' is not an IPv4 address"},
            {"10.0.0.256/16", 0, "is not an IPv4 address"},
            {"010.0.0.0/16", 0, "is not an IPv4 address"},
            {" 10.0.0.0/16", 0, "is not an IPv4 address"},
            {"fd00:::/64", 0, "'fd00:::' is not an IPv6 address"},
            {"fd00::g/64", 0, "is not an IPv6 address"},
            {"10.0.0.0/", 0, "the prefix '' is not a number from 0 to 32"},
            {"10.0.0.0/x", 0, "the prefix 'x' is not a number from 0 to 32"},
            {"10.0.0.0/+8", 0, "the prefix '+8' is not a number"},
            {"10.0.0.0/-1", 0, "the prefix '-1' is not a number"},
            {"10.0.0.0/ 8", 0, "the prefix ' 8' is not a number"},
            {"10.0.0.0/8 ", 0, "the prefix '8 ' is not a number"},
            {"10.0.0.0/08", 0, "the prefix '08' is not a number"},
            {"10.0.0.0/8/8", 0, "the prefix '8/8' is not a number"},
            {"10.0.0.0/4294967312", 0, "is not a number from 0 to 32"},
            {"fd00::/1000", 0, "is not a number from 0 to 128"},
            {"10.0.0.0/33", 0, "'10.0.0.0/33': the prefix /33 is out of range for IPv4 (0 to 32)"},
            {"fd00::/129", 0, "the prefix /129 is out of range for IPv6 (0 to 128)"},
            {"10.0.0.0/33", XP_NET_CIDR_HOST_BITS, "out of range for IPv4"},
            {"10.0.0.1/8",
             0,
             "'10.0.0.1/8': host bits are set after the /8 prefix (the network is 10.0.0.0/8)"},
            {"10.0.0.1/31", 0, "(the network is 10.0.0.0/31)"},
            {"0.0.0.1/0", 0, "(the network is 0.0.0.0/0)"},
            {"fd00::1/64", 0, "host bits are set after the /64 prefix (the network is fd00::/64)"},
            {"fd00::1/127", 0, "(the network is fd00::/127)"},
            {"fd00:0:0:0:0:0:0:1:2/64", 0, "is not an IPv6 address"},
            {"1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb/64",
             0,
             "the address is too long"},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct bad_case *c = &cases[i];
                struct xp_net_cidr cidr = {.family = -1, .prefix = 77};
                struct xp_error err = {0};

                if (xp_net_cidr_parse(c->text, c->flags, &cidr, &err) != -EINVAL)
                        fail_msg("'%s' was taken", c->text);
                if (!strstr(err.msg, c->reason))
                        fail_msg("'%s': '%s' is not in '%s'", c->text, c->reason, err.msg);
                assert_int_equal(cidr.family, -1); /* unchanged */
                assert_int_equal(cidr.prefix, 77);
        }
}

static void refuses_null(void **state)
{
        struct xp_net_cidr cidr;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_net_cidr_parse(NULL, 0, &cidr, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "an empty CIDR"));
        assert_int_equal(xp_net_cidr_parse("10.0.0.0/x", 0, &cidr, NULL), -EINVAL);
}

/* Every prefix of each family: the largest is taken, one past it is not. */
static void prefix_boundaries(void **state)
{
        char text[64];
        struct xp_net_cidr cidr;

        (void)state;
        for (unsigned p = 0; p <= 129; p++) {
                snprintf(text, sizeof(text), "0.0.0.0/%u", p);
                assert_int_equal(xp_net_cidr_parse(text, 0, &cidr, NULL), p <= 32 ? 0 : -EINVAL);
                snprintf(text, sizeof(text), "::/%u", p);
                assert_int_equal(xp_net_cidr_parse(text, 0, &cidr, NULL), p <= 128 ? 0 : -EINVAL);
                if (p <= 128)
                        assert_int_equal(cidr.prefix, p);
        }
        /* the lowest host bit of each prefix is refused, then taken with the flag */
        for (unsigned p = 0; p < 32; p++) {
                snprintf(text, sizeof(text), "255.255.255.255/%u", p);
                assert_int_equal(xp_net_cidr_parse(text, 0, &cidr, NULL), -EINVAL);
                assert_int_equal(xp_net_cidr_parse(text, XP_NET_CIDR_HOST_BITS, &cidr, NULL), 0);
        }
        assert_int_equal(xp_net_cidr_parse("255.255.255.255/32", 0, &cidr, NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(reads_networks),
            cmocka_unit_test(refuses_with_reasons),
            cmocka_unit_test(refuses_null),
            cmocka_unit_test(prefix_boundaries),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
