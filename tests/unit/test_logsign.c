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

#define TOKEN "xpn_0123456789ab.00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define PATH  "/containerLogs/default/web/app?tailLines=10&podUID=u1"
#define NOW   1796250680

static void key_from_token(void **state)
{
        struct xp_error err = {0};
        char id[XP_LOGSIGN_ID_MAX] = "";
        uint8_t key[XP_LOGSIGN_KEY_LEN] = {0}, zero[XP_LOGSIGN_KEY_LEN] = {0};

        (void)state;
        assert_int_equal(xp_logsign_key_from_token(TOKEN, id, key, &err), 0);
        assert_string_equal(id, "0123456789ab");
        assert_memory_not_equal(key, zero, sizeof key);
        /* An admin token, a short secret, upper-case hex: refused. */
        assert_int_equal(
            xp_logsign_key_from_token(
                "xpa_0123456789ab.00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
                id,
                key,
                &err),
            -EINVAL);
        assert_non_null(strstr(err.msg, "not a node token"));
        assert_int_equal(xp_logsign_key_from_token("xpn_0123456789ab.0011", id, key, &err),
                         -EINVAL);
        assert_int_equal(
            xp_logsign_key_from_token(
                "xpn_0123456789AB.00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
                id,
                key,
                &err),
            -EINVAL);
}

static void sign_verify(void **state)
{
        struct xp_error err = {0};
        char id[XP_LOGSIGN_ID_MAX], sig[XP_LOGSIGN_TEXT_MAX], bad[XP_LOGSIGN_TEXT_MAX];
        uint8_t key[XP_LOGSIGN_KEY_LEN], other[XP_LOGSIGN_KEY_LEN];
        size_t len;

        (void)state;
        assert_int_equal(xp_logsign_key_from_token(TOKEN, id, key, &err), 0);
        assert_int_equal(xp_logsign_sign(id, key, PATH, NOW + 30, sig), 0);
        assert_int_equal(strncmp(sig, "0123456789ab:1796250710:", 24), 0);
        assert_int_equal(strlen(sig), 24 + 64);
        assert_int_equal(xp_logsign_verify(sig, id, key, PATH, NOW, &err), 0);
        /* The expiry itself is still fine; one second later it is not. */
        assert_int_equal(xp_logsign_verify(sig, id, key, PATH, NOW + 30, &err), 0);
        assert_int_equal(xp_logsign_verify(sig, id, key, PATH, NOW + 31, &err), -EACCES);
        assert_non_null(strstr(err.msg, "expired"));
        /* Too far ahead. */
        assert_int_equal(xp_logsign_verify(sig, id, key, PATH, NOW - 31, &err), -EACCES);
        assert_non_null(strstr(err.msg, "ahead"));
        /* Another path, another key, another id, a flipped MAC digit. */
        assert_int_equal(xp_logsign_verify(sig, id, key, PATH "&follow=true", NOW, &err), -EACCES);
        assert_non_null(strstr(err.msg, "does not match"));
        memcpy(other, key, sizeof key);
        other[0] ^= 1;
        assert_int_equal(xp_logsign_verify(sig, id, other, PATH, NOW, &err), -EACCES);
        assert_int_equal(xp_logsign_verify(sig, "0123456789ac", key, PATH, NOW, &err), -EACCES);
        assert_non_null(strstr(err.msg, "other than this node's"));
        strcpy(bad, sig);
        len = strlen(bad);
        bad[len - 1] = bad[len - 1] == '0' ? '1' : '0';
        assert_int_equal(xp_logsign_verify(bad, id, key, PATH, NOW, &err), -EACCES);
        /* Malformed headers. */
        assert_int_equal(xp_logsign_verify(NULL, id, key, PATH, NOW, &err), -EACCES);
        assert_non_null(strstr(err.msg, "no X-Xpool-Signature"));
        assert_int_equal(xp_logsign_verify("0123456789ab", id, key, PATH, NOW, &err), -EACCES);
        assert_int_equal(xp_logsign_verify("0123456789ab:x:00", id, key, PATH, NOW, &err), -EACCES);
        assert_int_equal(xp_logsign_verify("0123456789ab:1796250710:00", id, key, PATH, NOW, &err),
                         -EACCES);
        assert_non_null(strstr(err.msg, "64 hex digits"));
        assert_int_equal(xp_logsign_sign("a:b", key, PATH, NOW, sig), -EINVAL);
        assert_int_equal(xp_logsign_sign("", key, PATH, NOW, sig), -EINVAL);
}

/* The parameters the server writes itself, as the agent decodes names: a client's cannot pass. */
static void server_parameters(void **state)
{
        (void)state;
        static const char *const server[] = {"xpoolUser=abc",
                                             "%78poolUser=abc",
                                             "XPOOLNONCE=1",
                                             "%58%50ool=",
                                             "xpool",
                                             "podUID=u",
                                             "pod%55ID=u",
                                             "PODUID",
                                             "xpool+User=x",
                                             "%78%70%6f%6f%6cUser=1"};
        static const char *const client[] = {"command=ls",
                                             "podUIDx=u",
                                             "pod=u",
                                             "xpoo=1",
                                             "%78poo=1",
                                             "stdin=1",
                                             "%zzpoolUser=1",
                                             "%7"};

        for (size_t i = 0; i < sizeof server / sizeof *server; i++)
                assert_true(xp_logsign_server_parameter(server[i], strlen(server[i])));
        for (size_t i = 0; i < sizeof client / sizeof *client; i++)
                assert_false(xp_logsign_server_parameter(client[i], strlen(client[i])));
        /* only the n bytes given count: "xpoolUser" cut after "xpo" is not one */
        assert_false(xp_logsign_server_parameter("xpoolUser=1", 3));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(key_from_token),
            cmocka_unit_test(sign_verify),
            cmocka_unit_test(server_parameters),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
