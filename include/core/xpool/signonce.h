/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The signatures (xpool/logsign.h) an agent has already accepted for a stream (exec, attach,
 * port-forward), each remembered until it expires, so that a signed request is good once: who
 * saw one on the plain HTTP between the server and the node cannot open the stream again with
 * it. The server makes each request it signs unique (a random nonce in its query), so the MAC
 * alone tells two requests apart. Bounded: at most cap signatures within their lifetime
 * (XP_LOGSIGN_AHEAD_MAX s); past that a new one is refused, never an old one forgotten early.
 * Fair: each owner the server names (a hash of the user who asked for the stream, signed with the
 * rest) holds at most a share of them (cap / XP_SIGN_ONCE_SHARES), so that one user opening
 * streams as fast as they can fills only their share and the others' exec still gets in.
 * Signatures without an owner (a server that names none) count against the whole cap only.
 * Thread-safe.
 */

#include <stddef.h>
#include <stdint.h>

#define XP_SIGN_ONCE_SHARES    4  /* one owner holds at most 1/4 of the signatures */
#define XP_SIGN_ONCE_OWNER_MAX 32 /* an owner's name, at most (the server's: 16 hex digits) */

struct xp_sign_once;

/* cap: the signatures remembered at most (> 0). -ENOMEM, -EINVAL. */
int xp_sign_once_new(size_t cap, struct xp_sign_once **ret);
void xp_sign_once_free(struct xp_sign_once *g);

/*
 * Claims header (a signature xp_logsign_verify() accepted at now) for owner (NULL or "": none): 0
 * the first time, -EALREADY when it was claimed before and has not expired, -EDQUOT when owner
 * holds its share of unexpired signatures, -ENOSPC when cap are held, -EINVAL for a header that is
 * not <id>:<expiry>:<64 hex digits> or an owner longer than XP_SIGN_ONCE_OWNER_MAX.
 */
int xp_sign_once_claim(struct xp_sign_once *g, const char *header, const char *owner, int64_t now);
/*
 * Gives back a signature claimed for a request that was then refused for want of room (the
 * door's per-user limit, the node's streams): it opened nothing, so it is not used up, and the
 * request may come again within its lifetime. An unclaimed or malformed header: nothing changes.
 */
void xp_sign_once_release(struct xp_sign_once *g, const char *header);
/* The signatures held now (expired ones included until a claim drops them), for tests. */
size_t xp_sign_once_count(struct xp_sign_once *g);
