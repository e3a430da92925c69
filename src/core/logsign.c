/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xpool/logsign.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

#define MAC_LEN     32
#define NODE_PREFIX "xpn_"
#define ID_LEN      12
#define SECRET_HEX  64

static bool is_lower_hex(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

int xp_logsign_key_from_token(const char *token,
                              char ret_id[static XP_LOGSIGN_ID_MAX],
                              uint8_t ret_key[static XP_LOGSIGN_KEY_LEN],
                              struct xp_error *err)
{
        size_t len = strlen(token);
        uint8_t key[XP_LOGSIGN_KEY_LEN];

        if (len != strlen(NODE_PREFIX) + ID_LEN + 1 + SECRET_HEX ||
            strncmp(token, NODE_PREFIX, strlen(NODE_PREFIX)) != 0 ||
            token[strlen(NODE_PREFIX) + ID_LEN] != '.' ||
            !is_lower_hex(token + strlen(NODE_PREFIX), ID_LEN) ||
            !is_lower_hex(token + strlen(NODE_PREFIX) + ID_LEN + 1, SECRET_HEX))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "not a node token: a node token looks like xpn_<12 hex digits>.<64 hex digits>");
        if (gnutls_hash_fast(GNUTLS_DIG_SHA256, token, len, key) < 0)
                return xp_errorf(err, -EIO, "cannot compute the SHA-256 of the node token");
        memcpy(ret_id, token + strlen(NODE_PREFIX), ID_LEN);
        ret_id[ID_LEN] = '\0';
        memcpy(ret_key, key, sizeof key);
        return 0;
}

static int compute_mac(const uint8_t key[static XP_LOGSIGN_KEY_LEN],
                       const char *path_query,
                       int64_t expiry,
                       uint8_t mac[static MAC_LEN])
{
        _cleanup_free_ char *text = NULL;
        int n;

        n = asprintf(&text, "GET\n%s\n%" PRId64, path_query, expiry);
        if (n < 0)
                return -ENOMEM;
        if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, key, XP_LOGSIGN_KEY_LEN, text, (size_t)n, mac) < 0)
                return -EIO;
        return 0;
}

static bool id_valid(const char *id)
{
        size_t len = strlen(id);

        return len > 0 && len < XP_LOGSIGN_ID_MAX && !strchr(id, ':');
}

int xp_logsign_sign(const char *token_id,
                    const uint8_t key[static XP_LOGSIGN_KEY_LEN],
                    const char *path_query,
                    int64_t expiry,
                    char ret[static XP_LOGSIGN_TEXT_MAX])
{
        uint8_t mac[MAC_LEN];
        char hex[2 * MAC_LEN + 1];
        int r;

        if (!id_valid(token_id))
                return -EINVAL;
        r = compute_mac(key, path_query, expiry, mac);
        if (r < 0)
                return r;
        xp_hex_encode(mac, MAC_LEN, hex);
        snprintf(ret, XP_LOGSIGN_TEXT_MAX, "%s:%" PRId64 ":%s", token_id, expiry, hex);
        return 0;
}

int xp_logsign_verify(const char *header,
                      const char *token_id,
                      const uint8_t key[static XP_LOGSIGN_KEY_LEN],
                      const char *path_query,
                      int64_t now,
                      struct xp_error *err)
{
        uint8_t want[MAC_LEN], got[MAC_LEN];
        volatile uint8_t diff = 0;
        const char *colon, *mac_text;
        char *end;
        long long expiry;
        size_t id_len;
        int r;

        if (!header || !header[0])
                return xp_errorf(err,
                                 -EACCES,
                                 "no %s header: only the API server may read logs here",
                                 XP_LOGSIGN_HEADER);
        colon = strchr(header, ':');
        if (!colon)
                return xp_errorf(err,
                                 -EACCES,
                                 "malformed %s header: want <token id>:<expiry>:<hex MAC>",
                                 XP_LOGSIGN_HEADER);
        id_len = (size_t)(colon - header);
        if (id_len != strlen(token_id) || strncmp(header, token_id, id_len) != 0)
                return xp_errorf(
                    err, -EACCES, "the request is signed with a token other than this node's");
        if (colon[1] < '0' || colon[1] > '9')
                return xp_errorf(err,
                                 -EACCES,
                                 "malformed %s header: the expiry is not a number",
                                 XP_LOGSIGN_HEADER);
        errno = 0;
        expiry = strtoll(colon + 1, &end, 10);
        if (errno != 0 || *end != ':')
                return xp_errorf(err,
                                 -EACCES,
                                 "malformed %s header: the expiry is not a number",
                                 XP_LOGSIGN_HEADER);
        mac_text = end + 1;
        if (strlen(mac_text) != 2 * MAC_LEN)
                return xp_errorf(err,
                                 -EACCES,
                                 "malformed %s header: the MAC is not %d hex digits",
                                 XP_LOGSIGN_HEADER,
                                 2 * MAC_LEN);
        if (xp_hex_decode(mac_text, got, MAC_LEN) < 0)
                return xp_errorf(err,
                                 -EACCES,
                                 "malformed %s header: the MAC is not %d hex digits",
                                 XP_LOGSIGN_HEADER,
                                 2 * MAC_LEN);
        if (expiry < now)
                return xp_errorf(err,
                                 -EACCES,
                                 "the signature expired at %lld (now %" PRId64
                                 "): are the clocks of the server and this node apart?",
                                 expiry,
                                 now);
        if (expiry > now + XP_LOGSIGN_AHEAD_MAX)
                return xp_errorf(
                    err,
                    -EACCES,
                    "the signature's expiry %lld lies more than %d s ahead (now %" PRId64 ")",
                    expiry,
                    XP_LOGSIGN_AHEAD_MAX,
                    now);
        r = compute_mac(key, path_query, (int64_t)expiry, want);
        if (r < 0)
                return xp_errorf(err, -EACCES, "cannot compute the request's MAC");
        for (size_t i = 0; i < MAC_LEN; i++)
                diff |= want[i] ^ got[i];
        if (diff != 0)
                return xp_errorf(err, -EACCES, "the signature does not match the request");
        return 0;
}

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        c = (char)(c | 0x20);
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool xp_logsign_server_parameter(const char *param, size_t n)
{
        char name[8]; /* "podUID" and "xpool" need 6; one more tells a longer name */
        size_t len = 0;

        for (size_t i = 0; i < n && param[i] != '=' && len < sizeof name; len++) {
                int hi = i + 2 < n ? hex_digit(param[i + 1]) : -1;
                int lo = i + 2 < n ? hex_digit(param[i + 2]) : -1;

                if (param[i] == '%' && hi >= 0 && lo >= 0) {
                        name[len] = (char)(hi << 4 | lo);
                        i += 3;
                } else {
                        name[len] = param[i] == '+' ? ' ' : param[i];
                        i++;
                }
        }
        return (len >= 5 && strncasecmp(name, "xpool", 5) == 0) ||
               (len == 6 && strncasecmp(name, "podUID", 6) == 0);
}
