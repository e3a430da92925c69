/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the kube layer's gRPC code shares: gRPC over HTTP/2 on Unix sockets, with no TLS, as the
 * kubelet speaks it, on libnghttp2 (the HTTP/2 framing, flow control and HPACK) and protobuf-c
 * (the messages). gRPC's part on top of HTTP/2 is small: a POST to "/package.Service/Method",
 * each message behind a 5-byte prefix (a compression flag, then its length, big-endian), and the
 * status in trailers (grpc-status, grpc-message). Only src/kube/ includes this.
 *
 * One poll loop (struct kube_loop) drives every connection, server and client alike, on the
 * caller's thread: handlers need no locks.
 */

#include <nghttp2/nghttp2.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

/* gRPC's status codes (its wire values). */
enum kube_status {
        KUBE_STATUS_OK = 0,
        KUBE_STATUS_CANCELLED = 1,
        KUBE_STATUS_UNKNOWN = 2,
        KUBE_STATUS_INVALID_ARGUMENT = 3,
        KUBE_STATUS_DEADLINE_EXCEEDED = 4,
        KUBE_STATUS_NOT_FOUND = 5,
        KUBE_STATUS_RESOURCE_EXHAUSTED = 8,
        KUBE_STATUS_UNIMPLEMENTED = 12,
        KUBE_STATUS_INTERNAL = 13,
        KUBE_STATUS_UNAVAILABLE = 14,
};

const char *kube_rpc_status_name(int status);
/* UNAVAILABLE -ECONNREFUSED, DEADLINE_EXCEEDED -ETIMEDOUT, UNIMPLEMENTED -EOPNOTSUPP, NOT_FOUND
 * -ENOENT, INVALID_ARGUMENT -EINVAL, RESOURCE_EXHAUSTED -EMSGSIZE, other -EIO; OK 0. */
int kube_rpc_status_errno(int status);

/* ---- the loop ------------------------------------------------------------------------------- */

/* One file descriptor the loop polls. ready() runs on the loop's thread with poll's revents, or
 * with 0 when deadline_ms (monotonic, 0: none) has passed first. */
struct kube_io {
        int fd;
        short events;
        int64_t deadline_ms;
        void (*ready)(struct kube_io *io, short revents);
};

struct kube_loop;

int kube_loop_new(struct kube_loop **ret);
/* The loop must have no io left. NULL is allowed. */
void kube_loop_free(struct kube_loop *loop);
/* -ENOMEM. io is borrowed until kube_loop_remove(), which ready() may call on any io. */
int kube_loop_add(struct kube_loop *loop, struct kube_io *io);
void kube_loop_remove(struct kube_loop *loop, struct kube_io *io);
/* Waits at most timeout_ms for ready descriptors or deadlines and runs them: 1 when any ran. */
int kube_loop_run_once(struct kube_loop *loop, int64_t timeout_ms);

/* ---- messages -------------------------------------------------------------------------------- */

/* A growing byte buffer: a connection's message in or out. */
struct kube_bytes {
        uint8_t *data;
        size_t len, off; /* off: how much of it is already sent */
};

void kube_bytes_done(struct kube_bytes *b);
/* Appends len bytes, or refuses (-EMSGSIZE) past max: the bytes stay as they were. */
int kube_bytes_append(struct kube_bytes *b, const void *data, size_t len, size_t max);

/* msg packed behind gRPC's 5-byte prefix, appended to b. -ENOMEM. */
int kube_rpc_frame(const ProtobufCMessage *msg, struct kube_bytes *b);

/*
 * Decodes the one message of type desc that data holds (prefix and all). -ENODATA for no message
 * at all, -EMSGSIZE over max bytes, -EOPNOTSUPP for a compressed one, -EBADMSG when the bytes
 * are not such a message (err says which type and how long), -ENOMEM. Caller frees *ret with
 * protobuf_c_message_free_unpacked(*ret, NULL).
 */
int kube_rpc_unframe(const struct kube_bytes *data,
                     const ProtobufCMessageDescriptor *desc,
                     size_t max,
                     ProtobufCMessage **ret,
                     struct xp_error *err);

/* grpc-message's percent-encoding (gRPC's HTTP/2 protocol), into out (always terminated). */
void kube_rpc_percent_encode(const char *text, char *out, size_t size);
void kube_rpc_percent_decode(const char *text, size_t len, char *out, size_t size);

/* ---- HTTP/2 connections ---------------------------------------------------------------------- */

/* A Unix socket with its HTTP/2 session; the first member of the server's and the client's
 * connection, so nghttp2's user_data is one. */
struct kube_conn {
        struct kube_io io;
        struct kube_loop *loop;
        nghttp2_session *session;
};

/* nghttp2 callbacks with the socket I/O set (nonblocking send and recv on conn->io.fd). NULL on
 * -ENOMEM. */
nghttp2_session_callbacks *kube_conn_callbacks(void);
/*
 * Reads what came (revents with POLLIN, POLLHUP or POLLERR), sends what nghttp2 has queued and
 * sets the events to poll for. -EPIPE when the connection is over (closed by the peer, broken,
 * or nothing left to read or write).
 */
int kube_conn_pump(struct kube_conn *c, short revents);

/* An nghttp2_nv of two C strings (nghttp2 copies them). */
#define KUBE_NV(n, v)                                                                              \
        ((nghttp2_nv){(uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE})

/* ---- the client ------------------------------------------------------------------------------ */

/* A call's end: its status (a kube_status), the server's message and the response's bytes. */
struct kube_reply {
        int status;
        char details[256];
        struct kube_bytes body;
};

struct kube_client_call;

/*
 * Calls method ("/v1beta1.Registration/Register") with req on the server at socket_path, on
 * loop: done(userdata, reply) runs once from the loop, with the reply borrowed for its duration,
 * and the call is freed after it. An answer longer than max bytes ends it RESOURCE_EXHAUSTED,
 * none within timeout_ms DEADLINE_EXCEEDED. -errno with err when the socket cannot be reached
 * (done does not run then).
 */
int kube_client_call_start(struct kube_loop *loop,
                           const char *socket_path,
                           const char *method,
                           const ProtobufCMessage *req,
                           size_t max,
                           int64_t timeout_ms,
                           void (*done)(void *userdata, const struct kube_reply *reply),
                           void *userdata,
                           struct kube_client_call **ret,
                           struct xp_error *err);
/* Ends the call at once; done does not run. NULL is allowed. */
void kube_client_call_cancel(struct kube_client_call *call);

/*
 * A blocking unary call on a loop of its own: 0 with *ret decoded as resp_desc (free as above),
 * or -errno with err naming the method and the status the server gave.
 */
int kube_rpc_unary(const char *socket_path,
                   const char *method,
                   const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *resp_desc,
                   size_t max,
                   int64_t timeout_ms,
                   ProtobufCMessage **ret,
                   struct xp_error *err);

/* Connects a nonblocking, close-on-exec Unix stream socket to path. -errno with err. */
int kube_rpc_connect(const char *path, struct xp_error *err);
