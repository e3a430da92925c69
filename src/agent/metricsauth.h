/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Who may read the agent's /metrics (docs/monitoring.md, "Who may scrape"): as the kubelet asks
 * its API server (TokenReview, SubjectAccessReview), the agent asks the xpool server whether the
 * scrape's bearer token may `get nodes/metrics` on this node, with a SelfSubjectAccessReview
 * made with that token. The server's answer is kept for a while (kubelet's webhook cache TTLs),
 * so steady scrapes cost no round trip and a flood of one wrong token costs the server one; the
 * server's refusals are rationed, so a flood of ever new wrong tokens costs it one a second.
 */

#include <stdint.h>

#include "xpool/client.h"
#include "xpool/error.h"
#include "xpool/macro.h"

struct xp_metrics_auth_options {
        const struct xp_apiclient_options *api; /* the agent's; its token is replaced per check */
        const char *node_name;
        int64_t (*now_ms)(void); /* the clock, monotonic ms (tests); NULL: xp_monotonic_ms */
};

struct xp_metrics_auth;

/* Copies the node's name; the strings of o->api are borrowed (the agent's outlive this). -ENOMEM.
 */
int xp_metrics_auth_new(const struct xp_metrics_auth_options *o, struct xp_metrics_auth **ret);
void xp_metrics_auth_free(struct xp_metrics_auth *auth);
XP_DEFINE_FREEP(struct xp_metrics_auth, xp_metrics_auth_free)

/*
 * authorization: the request's Authorization header (NULL: none). 0: the token may read the
 * metrics. -EACCES (answer 401): no bearer token, or one the server does not accept; -EPERM
 * (403): a token the server accepts that may not get nodes/metrics here; other -errno (503):
 * the server could not be asked (not remembered), -EAGAIN among them when the server refused
 * too many tokens lately and this one is not remembered. err says which.
 */
int xp_metrics_auth_check(struct xp_metrics_auth *auth,
                          const char *authorization,
                          struct xp_error *err);

/* The bearer token in an Authorization header's value ("Bearer T", the scheme in any case), or
 * NULL: what Prometheus' authorization/bearer_token_file sends. Borrowed from header. */
const char *xp_metrics_auth_bearer(const char *header);
