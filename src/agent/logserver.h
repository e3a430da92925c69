/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's log endpoint: the API server proxies `kubectl logs` here (docs/agent.md, "Logs").
 * libmicrohttpd with a thread per connection behind the front door (http/door.h: deadlines,
 * limits, idle connections kept out of the daemon); every request must carry the server's signature
 * (xpool/logsign.h) made with this node's token, else 401. HTTPS with the node's serving
 * certificate (the server checks it against the cluster CA), so neither the signatures, the
 * bearer tokens of /metrics nor the logs travel in the clear; plain HTTP under --no-tls only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

struct MHD_Connection;
struct xp_http_door;

/*
 * The other requests the endpoint serves (exec, attach, port-forward: src/agent/stream.h), under
 * the same signature: claims() says whether a path is theirs; handle() answers a GET on it once
 * its signature is checked and the door counted it as a stream, with a response or an upgrade
 * (libmicrohttpd's enum MHD_Result, as an int); *ret_busy set when it refused the stream for
 * want of room (503: too many at once), which leaves the signature unused.
 */
struct xp_logserver_streams {
        bool (*claims)(const char *url);
        int (*handle)(void *cls,
                      struct MHD_Connection *conn,
                      const char *url,
                      struct xp_http_door *door,
                      bool *ret_busy);
        void *cls;
};
/*
 * GET /metrics and /metrics/resource (agent/metrics.h): the text in a new string and its content
 * type, or -errno. resource: the signed path the server reads.
 */
typedef int (*xp_logserver_metrics_fn)(void *userdata,
                                       bool resource,
                                       const char *accept,
                                       char **ret_text,
                                       size_t *ret_len,
                                       const char **ret_content_type);

/*
 * Whether a request may read /metrics, from its Authorization header (NULL: none): 0, or
 * -EACCES (401), -EPERM (403), another -errno (503), each with err (agent/metricsauth.h).
 */
typedef int (*xp_logserver_authorize_fn)(void *userdata,
                                         const char *authorization,
                                         struct xp_error *err);

struct xp_logserver_options {
        const char *host;    /* an IPv4 or IPv6 literal; NULL: 127.0.0.1 */
        uint16_t port;       /* 0: free */
        const char *log_dir; /* DATA/logs */
        /* the serving certificate and its key, PEM text (servingcert.h); NULL: plain HTTP */
        const char *tls_cert, *tls_key;
        const char *token_id; /* the agent's token id (the part between "xpn_" and ".") */
        uint8_t key[32];      /* SHA-256 of the agent's whole token text */
        const struct xp_logserver_streams *streams; /* copied; NULL: none */
        /* /metrics (for whom metrics_authorize allows) and /metrics/resource (signed, as the
         * logs); NULL: 404 */
        xp_logserver_metrics_fn metrics;
        void *metrics_userdata;
        /* NULL: /metrics for anyone who reaches the port (--metrics-anonymous) */
        xp_logserver_authorize_fn metrics_authorize;
        void *metrics_authorize_userdata;
};

struct xp_logserver;

/*
 * GET /containerLogs/NS/POD/CONTAINER?follow=&tailLines=&previous=&timestamps=&sinceSeconds=
 * &limitBytes=&podUID= ; podUID picks <ns>_<pod>_<uid> (else the newest such directory).
 * Answers 200 text/plain with the log (streamed; with follow=true until the attempt's log ends or
 * the client goes away), 401 for a missing, expired or wrong signature, 400 for bad parameters
 * (and previous=true with no previous attempt), 404 for an unknown pod or container, each with a
 * plain-text message. Options are copied. -errno with err when the listener cannot be set up.
 * Caller frees with xp_logserver_free(), which ends open streams within about a second.
 */
int xp_logserver_new(const struct xp_logserver_options *o,
                     struct xp_logserver **ret,
                     struct xp_error *err);
uint16_t xp_logserver_port(const struct xp_logserver *s);
void xp_logserver_free(struct xp_logserver *s);
XP_DEFINE_FREEP(struct xp_logserver, xp_logserver_free)
