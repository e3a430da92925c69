/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The front door of an HTTP endpoint served by libmicrohttpd (the API server, the agent's log
 * endpoint): what keeps floods from starving the requests that matter.
 *
 * The door owns the listening socket. Its thread accepts connections and holds each one, at the
 * cost of a file descriptor, until its first request has arrived: for plain HTTP the whole head,
 * checked (head.h) and refused here when it is bad; for TLS the first bytes. Only then is the
 * connection handed to the daemon, which gives it a thread. So idle and slow connections never
 * hold the daemon's threads or slots. Connections still waiting are limited in number, overall
 * and per client address (a /64 for IPv6); when the limit is reached the oldest waiting one is
 * closed, so the newest, which is about to send its request, gets in: a flood from one address
 * can keep only itself waiting. A connection that has not sent its head within head_timeout is
 * closed, whatever it trickles.
 *
 * Inside the daemon the door keeps a record of every connection (through libmicrohttpd's
 * connection notifications) and the same thread enforces the deadlines there: the rest of the
 * head (TLS), the body, and the idle time between requests. A connection that has not
 * authenticated yet is "pre-auth"; pre-auth connections have their own limit (preauth_max, per
 * client preauth_per_client), again making room by closing the oldest, so the rest of the
 * daemon's slots stay reserved for authenticated clients. Authenticated connections and their
 * streams (watches, log follows) are limited per user: over the limit the request is refused
 * with 429 and Retry-After.
 *
 * libmicrohttpd answers some malformed requests itself, with HTML pages. The door turns those
 * into the owner's error bodies too (format_error): see mhderr.c for how and where.
 */

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/http.h"

struct xp_http_door_limits {
        unsigned head_timeout_ms; /* request line and headers, from the connection (or TLS's
                                     first byte) */
        unsigned body_timeout_ms; /* the body, from the end of the head */
        unsigned idle_timeout_ms; /* an authenticated connection between requests */
        unsigned pending_max;     /* connections waiting in the door for their first head */
        unsigned pending_per_client;
        unsigned connections_max; /* connections in the daemon */
        unsigned preauth_max;     /* of which not authenticated */
        unsigned preauth_per_client;
        unsigned user_connections_max;
        unsigned user_streams_max;
};

/* The API server's: 2,000 idle connections and 1,024 slow ones must not stop a request. */
extern const struct xp_http_door_limits xp_http_door_server_limits;

/*
 * Formats an error answer: *ret_body (malloc'ed, the caller frees) and *ret_type (static).
 * reason is Kubernetes' (head.h). 0 or -ENOMEM.
 */
typedef int (*xp_http_format_error)(
    unsigned code, const char *reason, const char *message, char **ret_body, const char **ret_type);

struct xp_http_door_options {
        int listen_fd; /* bound and listening; taken in every case */
        bool tls;      /* the daemon will speak TLS on the connections it is handed */
        const struct xp_http_door_limits *limits;
        xp_http_format_error format_error;
};

struct xp_http_door;

/*
 * Binds and listens on host (an IPv4 or IPv6 literal; names are not resolved) and port (0: a
 * free one): the socket, *ret_port the port bound, *ret_ipv6 whether it is IPv6. -errno with err
 * ("cannot listen on [::1]:6443: Address already in use").
 */
int xp_http_listen(
    const char *host, uint16_t port, bool *ret_ipv6, uint16_t *ret_port, struct xp_error *err);

/*
 * Takes the listening socket and raises RLIMIT_NOFILE (to its hard limit, as far as the limits
 * need); nothing runs yet. -errno with err.
 */
int xp_http_door_new(const struct xp_http_door_options *o,
                     struct xp_http_door **ret,
                     struct xp_error *err);

/*
 * The options the daemon must be started with (with MHD_USE_NO_LISTEN_SOCKET and MHD_USE_ITC
 * among its flags, and MHD_USE_ERROR_LOG, as xp_http_door_mhd_flags() gives them): the
 * connection notifications, the connection limit and memory, the error log. Ends with
 * MHD_OPTION_END; give it with MHD_OPTION_ARRAY.
 */
#define XP_HTTP_DOOR_MHD_OPTIONS 6
void xp_http_door_mhd_options(struct xp_http_door *door,
                              struct MHD_OptionItem ret[static XP_HTTP_DOOR_MHD_OPTIONS]);
unsigned xp_http_door_mhd_flags(void);

/* Starts accepting: connections go to daemon (borrowed until xp_http_door_free()). */
int xp_http_door_start(struct xp_http_door *door, struct MHD_Daemon *daemon, struct xp_error *err);

/*
 * Stops accepting and closes the connections still waiting. Call it before MHD_stop_daemon(),
 * and xp_http_door_free() after. NULL is fine.
 */
void xp_http_door_stop(struct xp_http_door *door);
void xp_http_door_free(struct xp_http_door *door);

/* ---- called from the daemon's callbacks, in the connection's thread ----------------------------
 */

/* A request begins (the URI log callback). */
void xp_http_door_request_begin(struct xp_http_door *door, struct MHD_Connection *conn);

/*
 * The head has arrived (the first call of the access handler): checks the raw target (as the
 * URI log callback saw it) and the headers as libmicrohttpd parsed them (head.h); the body's
 * deadline starts. 0, or -EINVAL with ret filled.
 */
int xp_http_door_check_request(struct xp_http_door *door,
                               struct MHD_Connection *conn,
                               const char *raw_target,
                               struct xp_http_refusal *ret);

/*
 * The request is authenticated as user (a token's subject, the log endpoint's signer): counts
 * the connection for user, and the request as a stream when it is one, against their limits.
 * 0, or -EBUSY with ret filled (429).
 */
int xp_http_door_admit(struct xp_http_door *door,
                       struct MHD_Connection *conn,
                       const char *user,
                       bool stream,
                       struct xp_http_refusal *ret);

/* The body has arrived: the handler runs, as long as it takes (no deadline). */
void xp_http_door_body_done(struct xp_http_door *door, struct MHD_Connection *conn);

/* A response was queued for the request (libmicrohttpd's own errors are then left alone). */
void xp_http_door_response_queued(struct xp_http_door *door, struct MHD_Connection *conn);

/* The request ended (the completion callback): the next one must come within idle_timeout. */
void xp_http_door_request_end(struct xp_http_door *door, struct MHD_Connection *conn);

/* Queues a refusal as the answer, with "Connection: close" (and Retry-After for 429). */
enum MHD_Result xp_http_door_send_refusal(struct xp_http_door *door,
                                          struct MHD_Connection *conn,
                                          const struct xp_http_refusal *refusal);
