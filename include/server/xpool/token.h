/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The API server's bearer tokens, as `xpool token` and `xpool up` manage them in a data
 * directory (the server reads them: src/server/auth.h). docs/security.md is the user's view.
 *
 * Tokens live in DATA_DIR/tokens (mode 0600), one line per token:
 *
 *     <id> <sha256-hex-of-the-token-text> <role> <subject> <created-RFC3339>
 *
 * Only the hash is stored. A token's text is `xp<r>_<id>.<secret>`: <r> is the role's letter
 * (a admin, r reader, n node), <id> 12 lowercase hex digits (48 random bits, a public handle for
 * `xpool token list|revoke`), <secret> 64 lowercase hex digits (256 bits of getrandom()).
 * Empty lines and lines starting with '#' are ignored. Writers (xp_token_create/revoke, the
 * server's bootstrap) hold an flock on DATA_DIR/tokens.lock, read the file, and replace it
 * atomically (temporary file, fsync, rename), so concurrent `xpool token` runs lose nothing.
 */

#include <stddef.h>

#include "xpool/error.h"

enum xp_token_role {
        XP_TOKEN_ADMIN = 1,
        XP_TOKEN_READER,
        XP_TOKEN_NODE,
};

/* "admin", "reader", "node"; NULL for anything else. */
const char *xp_token_role_to_string(enum xp_token_role role);
/* The role, or -EINVAL. */
int xp_token_role_from_string(const char *s);

#define XP_TOKEN_SUBJECT_MAX 253 /* a node name is a DNS subdomain */
#define XP_TOKEN_ID_LEN      12
#define XP_TOKENS_MAX        10000 /* lines in the tokens file */

/*
 * Creates a token and adds it to DATA_DIR/tokens (created when absent; DATA_DIR must exist).
 * subject: the node name for XP_TOKEN_NODE (a DNS subdomain), otherwise a label of letters,
 * digits and ._:@- (at most XP_TOKEN_SUBJECT_MAX). On success *ret_token holds the token's text and
 * *ret_id its id (caller frees both); -EINVAL for a bad subject or a corrupt file, -errno else.
 */
int xp_token_create(const char *data_dir,
                    enum xp_token_role role,
                    const char *subject,
                    char **ret_token,
                    char **ret_id,
                    struct xp_error *err);

/* Removes the token with that id: 0, -ENOENT when there is none, -errno else. */
int xp_token_revoke(const char *data_dir, const char *id, struct xp_error *err);

struct xp_token_info {
        char id[32];
        enum xp_token_role role;
        char subject[XP_TOKEN_SUBJECT_MAX + 1];
        char created[40]; /* RFC 3339 */
};

/*
 * The tokens in DATA_DIR/tokens, in file order (never their hashes): *ret (caller frees with
 * free()) and *ret_n. -ENOENT when the file does not exist, -EINVAL for a corrupt one.
 */
int xp_token_list(const char *data_dir,
                  struct xp_token_info **ret,
                  size_t *ret_n,
                  struct xp_error *err);
