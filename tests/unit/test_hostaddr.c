/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The default route's interface (src/net/hostaddr.c), from samples of /proc/net/route and
 * /proc/net/ipv6_route: the lowest metric wins, lo and routes that are down or not default do
 * not count, and a table without a default route says so.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/hostaddr.h"

static const char routes4[] =
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    "wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n"
    "eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
    "eth1\t00000000\t010200C0\t0002\t0\t0\t1\t00000000\t0\t0\t0\n"
    "xpool0\t0000570A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n";

static const char routes6[] =
    "fd000000000000000000000000000000 40 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n"
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0\n"
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n";

static void picks_the_default_route(void **state)
{
        char iface[16];

        (void)state;
        assert_int_equal(xp_hostaddr_default_interface(routes4, 0, iface, sizeof(iface)), 0);
        assert_string_equal(iface, "eth0"); /* metric 100 over 600; eth1's route is down */
        assert_int_equal(xp_hostaddr_default_interface(routes6, 1, iface, sizeof(iface)), 0);
        assert_string_equal(iface, "eth0"); /* lo's unreachable default does not count */
}

static void none_without_a_default_route(void **state)
{
        static const char local_only[] =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
            "xpool0\t0000570A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
            "lo\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n";
        char iface[16] = "";

        (void)state;
        assert_int_equal(xp_hostaddr_default_interface(local_only, 0, iface, sizeof(iface)),
                         -ENOENT);
        assert_int_equal(xp_hostaddr_default_interface("", 1, iface, sizeof(iface)), -ENOENT);
        assert_int_equal(xp_hostaddr_default_interface("garbage\n\n", 0, iface, sizeof(iface)),
                         -ENOENT);
        /* a name longer than the room for it is not cut */
        assert_int_equal(xp_hostaddr_default_interface(routes4, 0, iface, 4), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(picks_the_default_route),
            cmocka_unit_test(none_without_a_default_route),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
