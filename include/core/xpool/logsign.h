/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The signature the API server puts on the log requests it proxies to a node's agent
 * (docs/agent.md, "Logs"), in one place for both sides:
 *
 *     X-Xpool-Signature: <token id>:<expiry unix s>:<hex HMAC-SHA256(key, "GET\n" + path-with-query
 *                        + "\n" + expiry)>
 *
 * key is the SHA-256 of the node token's whole text: the server stores exactly that hash for the
 * token, the agent computes it from its own token, so no secret crosses the wire.
 */

#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"

#define XP_LOGSIGN_HEADER    "X-Xpool-Signature"
#define XP_LOGSIGN_KEY_LEN   32
#define XP_LOGSIGN_ID_MAX    32  /* a token id and its NUL */
#define XP_LOGSIGN_AHEAD_MAX 60  /* seconds an expiry may lie in the future */
#define XP_LOGSIGN_TEXT_MAX  160 /* the header's value and its NUL */
#define XP_LOGSIGN_STREAM_TTL                                                                      \
        30 /* seconds the server's signature on a stream request is good for */

/*
 * From a node token's text (xpn_<id>.<secret>): the id and the key (SHA-256 of the text).
 * -EINVAL with err when the text is not a node token; -EIO when hashing fails.
 */
int xp_logsign_key_from_token(const char *token,
                              char ret_id[static XP_LOGSIGN_ID_MAX],
                              uint8_t ret_key[static XP_LOGSIGN_KEY_LEN],
                              struct xp_error *err);

/*
 * The header value signing GET path_query (the URL's path and query exactly as sent) until
 * expiry (unix seconds). -EINVAL for an id that is empty, too long or holds ':'; -EIO.
 */
int xp_logsign_sign(const char *token_id,
                    const uint8_t key[static XP_LOGSIGN_KEY_LEN],
                    const char *path_query,
                    int64_t expiry,
                    char ret[static XP_LOGSIGN_TEXT_MAX]);

/*
 * 0 when header (NULL when absent) signs GET path_query with token_id's key, and its expiry is
 * not before now and at most XP_LOGSIGN_AHEAD_MAX seconds after it. Otherwise -EACCES with err
 * saying why in words fit for a 401 answer (never what the right MAC would be). The MAC is
 * compared in constant time.
 */
int xp_logsign_verify(const char *header,
                      const char *token_id,
                      const uint8_t key[static XP_LOGSIGN_KEY_LEN],
                      const char *path_query,
                      int64_t now,
                      struct xp_error *err);

/*
 * Whether a query parameter (name=value, n bytes, still percent-encoded) is one the server
 * writes itself into a stream request it signs: podUID or any xpool* name, compared as the agent
 * reads names (percent- and '+'-decoded, case-insensitive), so that "%78poolUser=" is one too.
 */
bool xp_logsign_server_parameter(const char *param, size_t n);
