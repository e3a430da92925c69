/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/logsign.h"
#include "xpool/signonce.h"

#define NOW 1796250680

static const uint8_t key[XP_LOGSIGN_KEY_LEN] = {1, 2, 3};

static void sign(const char *path, int64_t expiry, char ret[static XP_LOGSIGN_TEXT_MAX])
{
        assert_int_equal(xp_logsign_sign("0123456789ab", key, path, expiry, ret), 0);
}

/* A signature is good once; another request (another nonce) is not held up by it. */
static void claimed_once(void **state)
{
        struct xp_sign_once *g = NULL;
        char a[XP_LOGSIGN_TEXT_MAX], b[XP_LOGSIGN_TEXT_MAX];

        (void)state;
        assert_int_equal(xp_sign_once_new(4, &g), 0);
        sign("/exec/ns/p/c?podUID=u&command=ls&xpoolNonce=01", NOW + 30, a);
        sign("/exec/ns/p/c?podUID=u&command=ls&xpoolNonce=02", NOW + 30, b);
        assert_int_equal(xp_sign_once_claim(g, a, NULL, NOW), 0);
        assert_int_equal(xp_sign_once_claim(g, a, NULL, NOW), -EALREADY);
        assert_int_equal(xp_sign_once_claim(g, a, NULL, NOW + 30), -EALREADY);
        assert_int_equal(xp_sign_once_claim(g, b, NULL, NOW + 1), 0);
        assert_int_equal(xp_sign_once_count(g), 2);
        xp_sign_once_free(g);
}

/* Full of live signatures: a new one is refused, none forgotten; once they expire, room again. */
static void bounded(void **state)
{
        struct xp_sign_once *g = NULL;
        char sig[XP_LOGSIGN_TEXT_MAX], path[64];

        (void)state;
        assert_int_equal(xp_sign_once_new(3, &g), 0);
        for (int i = 0; i < 3; i++) {
                snprintf(path, sizeof path, "/portForward/ns/p?podUID=u&xpoolNonce=%d", i);
                sign(path, NOW + 10 + i, sig);
                assert_int_equal(xp_sign_once_claim(g, sig, NULL, NOW), 0);
        }
        sign("/portForward/ns/p?podUID=u&xpoolNonce=x", NOW + 30, sig);
        assert_int_equal(xp_sign_once_claim(g, sig, NULL, NOW + 5), -ENOSPC);
        assert_int_equal(xp_sign_once_count(g), 3);
        /* two of the three expired: they go, the third stays */
        assert_int_equal(xp_sign_once_claim(g, sig, NULL, NOW + 12), 0);
        assert_int_equal(xp_sign_once_count(g), 2);
        assert_int_equal(xp_sign_once_claim(g, sig, NULL, NOW + 12), -EALREADY);
        xp_sign_once_free(g);
}

/* A signature given back (its request refused for want of room) is good again; the others stay. */
static void released(void **state)
{
        struct xp_sign_once *g = NULL;
        char a[XP_LOGSIGN_TEXT_MAX], b[XP_LOGSIGN_TEXT_MAX];

        (void)state;
        assert_int_equal(xp_sign_once_new(1, &g), 0);
        sign("/exec/ns/p/c?podUID=u&command=ls&xpoolNonce=01", NOW + 30, a);
        sign("/exec/ns/p/c?podUID=u&command=ls&xpoolNonce=02", NOW + 30, b);
        assert_int_equal(xp_sign_once_claim(g, a, NULL, NOW), 0);
        /* the one place is taken until a is given back */
        assert_int_equal(xp_sign_once_claim(g, b, NULL, NOW), -ENOSPC);
        xp_sign_once_release(g, b); /* not held: nothing changes */
        xp_sign_once_release(g, "id:5:zz");
        assert_int_equal(xp_sign_once_count(g), 1);
        assert_int_equal(xp_sign_once_claim(g, a, NULL, NOW), -EALREADY);
        xp_sign_once_release(g, a);
        assert_int_equal(xp_sign_once_count(g), 0);
        assert_int_equal(xp_sign_once_claim(g, b, NULL, NOW), 0);
        xp_sign_once_release(g, b);
        assert_int_equal(xp_sign_once_claim(g, a, NULL, NOW + 1), 0);
        assert_int_equal(xp_sign_once_claim(g, a, NULL, NOW + 1), -EALREADY);
        xp_sign_once_free(g);
}

/*
 * One owner fills only its share (cap / XP_SIGN_ONCE_SHARES): another owner, and requests that
 * name none, still get in; the share frees as its signatures expire.
 */
static void fair_share(void **state)
{
        struct xp_sign_once *g = NULL;
        char sig[XP_LOGSIGN_TEXT_MAX], path[64];
        size_t share = 8 / XP_SIGN_ONCE_SHARES;

        (void)state;
        assert_int_equal(xp_sign_once_new(8, &g), 0);
        for (size_t i = 0; i < share; i++) {
                snprintf(path, sizeof path, "/exec/ns/p/c?xpoolNonce=a%zu", i);
                sign(path, NOW + 10, sig);
                assert_int_equal(xp_sign_once_claim(g, sig, "0123456789abcdef", NOW), 0);
        }
        sign("/exec/ns/p/c?xpoolNonce=a-more", NOW + 30, sig);
        assert_int_equal(xp_sign_once_claim(g, sig, "0123456789abcdef", NOW), -EDQUOT);
        assert_int_equal(xp_sign_once_count(g), share);
        /* another user, and a server that names none, are not held up by the first */
        sign("/exec/ns/p/c?xpoolNonce=b", NOW + 30, sig);
        assert_int_equal(xp_sign_once_claim(g, sig, "fedcba9876543210", NOW), 0);
        sign("/exec/ns/p/c?xpoolNonce=c", NOW + 30, sig);
        assert_int_equal(xp_sign_once_claim(g, sig, "", NOW), 0);
        /* the first user's share frees as its signatures expire */
        sign("/exec/ns/p/c?xpoolNonce=a-later", NOW + 30, sig);
        assert_int_equal(xp_sign_once_claim(g, sig, "0123456789abcdef", NOW + 11), 0);
        /* an owner longer than a server names: malformed, nothing held */
        sign("/exec/ns/p/c?xpoolNonce=d", NOW + 30, sig);
        assert_int_equal(xp_sign_once_claim(g, sig, "0123456789abcdef0123456789abcdef0", NOW + 11),
                         -EINVAL);
        assert_int_equal(xp_sign_once_count(g), 3);
        xp_sign_once_free(g);
}

static void malformed(void **state)
{
        struct xp_sign_once *g = NULL;

        (void)state;
        assert_int_equal(xp_sign_once_new(0, &g), -EINVAL);
        assert_int_equal(xp_sign_once_new(2, &g), 0);
        assert_int_equal(xp_sign_once_claim(g, NULL, NULL, NOW), -EINVAL);
        assert_int_equal(xp_sign_once_claim(g, "id", NULL, NOW), -EINVAL);
        assert_int_equal(xp_sign_once_claim(g, "id:x:00", NULL, NOW), -EINVAL);
        assert_int_equal(xp_sign_once_claim(g, "id:5:zz", NULL, NOW), -EINVAL);
        assert_int_equal(xp_sign_once_count(g), 0);
        xp_sign_once_free(g);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(claimed_once),
            cmocka_unit_test(bounded),
            cmocka_unit_test(released),
            cmocka_unit_test(fair_share),
            cmocka_unit_test(malformed),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
