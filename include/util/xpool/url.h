/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The one reading of a URL that names a server (the client's server, the agent's, the server's
 * Prometheus): scheme://host[:port][path], host a name, an IPv4 address or an IPv6 one in
 * brackets. A user name or password before the host is refused, not ignored: nothing here would
 * send it, and a URL that carries one usually means another server than the host it names.
 */

#include <stdbool.h>

#include "xpool/error.h"

struct xp_url {
        char *scheme; /* as written ("https") */
        char *host;   /* an IPv6 address without its brackets */
        /* what follows host and port: "" or from the first '/', '?' or '#' on, as written */
        char *path;
        unsigned port;   /* 1 to 65535: as written, else the scheme's (http 80, https 443) */
        bool port_given; /* whether the URL wrote one */
};

/*
 * Splits url into *ret (xp_url_done() frees it). -EINVAL with err saying what is wrong (no
 * scheme, a user name, no host, an unclosed '[', a port that is not 1 to 65535, no port for a
 * scheme without a default one), then *ret holds nothing; -ENOMEM.
 */
int xp_url_split(const char *url, struct xp_url *ret, struct xp_error *err);
/* Frees what xp_url_split() set and empties *url; safe on an empty one, and twice. */
void xp_url_done(struct xp_url *url);
