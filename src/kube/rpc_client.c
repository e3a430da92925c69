/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC calls to a server on a Unix socket (rpc.h): a connection per call, as the kubelet's
 * sockets come and go with the kubelet, and nothing is carried over from one that left. One
 * request message, then the answer's headers, message and trailers (or the trailers alone).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rpc.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

struct kube_client_call {
        struct kube_conn conn; /* first: nghttp2's user_data */
        struct kube_bytes request;
        struct kube_reply reply;
        size_t max;
        int64_t timeout_ms;
        int32_t stream_id;
        bool status_seen, closed;
        void (*done)(void *userdata, const struct kube_reply *reply);
        void *userdata;
};

int kube_rpc_connect(const char *path, struct xp_error *err)
{
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        int fd;

        if (!path || !*path)
                return xp_errorf(err, -EINVAL, "no socket path");
        if (strlen(path) >= sizeof(sun.sun_path))
                return xp_errorf(err,
                                 -ENAMETOOLONG,
                                 "%s: longer than a Unix socket path may be (%zu bytes)",
                                 path,
                                 sizeof(sun.sun_path) - 1);
        strcpy(sun.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return xp_errorf(err, -errno, "socket: %m");
        /* blocking connect: a Unix socket's is immediate, or refused at once */
        if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
                int r = -errno;

                close(fd);
                return xp_errorf(err, r, "cannot connect to %s: %s", path, strerror(-r));
        }
        if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
                int r = -errno;

                close(fd);
                return xp_errorf(err, r, "%s: %s", path, strerror(-r));
        }
        return fd;
}

static void call_free(struct kube_client_call *c)
{
        kube_loop_remove(c->conn.loop, &c->conn.io);
        nghttp2_session_del(c->conn.session);
        if (c->conn.io.fd >= 0)
                close(c->conn.io.fd);
        kube_bytes_done(&c->request);
        kube_bytes_done(&c->reply.body);
        free(c);
}

void kube_client_call_cancel(struct kube_client_call *c)
{
        if (c)
                call_free(c);
}

static void finish(struct kube_client_call *c, int status, const char *details)
{
        if (!c->status_seen) {
                c->reply.status = status;
                snprintf(c->reply.details, sizeof(c->reply.details), "%s", details);
        }
        c->done(c->userdata, &c->reply);
        call_free(c);
}

static void ready(struct kube_io *io, short revents)
{
        struct kube_client_call *c = (struct kube_client_call *)io;
        char why[64];

        if (revents == 0) {
                snprintf(why, sizeof(why), "no answer in %" PRId64 " ms", c->timeout_ms);
                finish(c, KUBE_STATUS_DEADLINE_EXCEEDED, why);
                return;
        }
        if (kube_conn_pump(&c->conn, revents) < 0 || c->closed)
                finish(c,
                       c->closed ? KUBE_STATUS_INTERNAL : KUBE_STATUS_UNAVAILABLE,
                       c->closed ? "the server ended the call without a status"
                                 : "the connection closed before the answer");
}

/* ---- nghttp2's callbacks -------------------------------------------------------------------- */

static ssize_t read_request(nghttp2_session *session,
                            int32_t stream_id,
                            uint8_t *buf,
                            size_t length,
                            uint32_t *data_flags,
                            nghttp2_data_source *source,
                            void *user_data)
{
        struct kube_bytes *b = source->ptr;
        size_t n = b->len - b->off < length ? b->len - b->off : length;

        (void)session;
        (void)stream_id;
        (void)user_data;
        memcpy(buf, b->data + b->off, n);
        b->off += n;
        if (b->off == b->len)
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
}

static int on_header(nghttp2_session *session,
                     const nghttp2_frame *frame,
                     const uint8_t *name,
                     size_t namelen,
                     const uint8_t *value,
                     size_t valuelen,
                     uint8_t flags,
                     void *user_data)
{
        struct kube_client_call *c = user_data;

        (void)session;
        (void)flags;
        if (frame->hd.stream_id != c->stream_id)
                return 0;
        if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
                char digits[12];

                snprintf(digits, sizeof(digits), "%.*s", (int)valuelen, (const char *)value);
                c->reply.status = atoi(digits);
                c->status_seen = true;
        } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
                kube_rpc_percent_decode(
                    (const char *)value, valuelen, c->reply.details, sizeof(c->reply.details));
        }
        return 0;
}

static int on_data(nghttp2_session *session,
                   uint8_t flags,
                   int32_t stream_id,
                   const uint8_t *data,
                   size_t len,
                   void *user_data)
{
        struct kube_client_call *c = user_data;

        (void)session;
        (void)flags;
        if (stream_id != c->stream_id)
                return 0;
        if (kube_bytes_append(&c->reply.body, data, len, c->max + 5) < 0) {
                c->reply.status = KUBE_STATUS_RESOURCE_EXHAUSTED;
                snprintf(c->reply.details,
                         sizeof(c->reply.details),
                         "an answer of more than %zu bytes",
                         c->max);
                c->status_seen = true;
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        return 0;
}

static int
on_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data)
{
        struct kube_client_call *c = user_data;

        (void)session;
        (void)error_code;
        if (stream_id == c->stream_id)
                c->closed = true;
        return 0;
}

static int start_session(struct kube_client_call *c, const char *method)
{
        nghttp2_session_callbacks *cbs = kube_conn_callbacks();
        nghttp2_data_provider body = {.source.ptr = &c->request, .read_callback = read_request};
        char timeout[32];
        nghttp2_nv nva[7];
        int r;

        if (!cbs)
                return -ENOMEM;
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close);
        r = nghttp2_session_client_new(&c->conn.session, cbs, c);
        nghttp2_session_callbacks_del(cbs);
        if (r != 0)
                return -ENOMEM;
        snprintf(timeout, sizeof(timeout), "%" PRId64 "m", c->timeout_ms);
        nva[0] = KUBE_NV(":method", "POST");
        nva[1] = KUBE_NV(":scheme", "http");
        nva[2] = KUBE_NV(":path", method);
        nva[3] = KUBE_NV(":authority", "localhost");
        nva[4] = KUBE_NV("content-type", "application/grpc");
        nva[5] = KUBE_NV("te", "trailers");
        nva[6] = KUBE_NV("grpc-timeout", timeout);
        if (nghttp2_submit_settings(c->conn.session, NGHTTP2_FLAG_NONE, NULL, 0) != 0)
                return -ENOMEM;
        c->stream_id = nghttp2_submit_request(c->conn.session, NULL, nva, 7, &body, c);
        return c->stream_id < 0 ? -ENOMEM : 0;
}

int kube_client_call_start(struct kube_loop *loop,
                           const char *socket_path,
                           const char *method,
                           const ProtobufCMessage *req,
                           size_t max,
                           int64_t timeout_ms,
                           void (*done)(void *userdata, const struct kube_reply *reply),
                           void *userdata,
                           struct kube_client_call **ret,
                           struct xp_error *err)
{
        struct kube_client_call *c = calloc(1, sizeof(*c));
        int fd, r;

        if (!c)
                return xp_errorf(err, -ENOMEM, "out of memory");
        c->conn.io = (struct kube_io){.fd = -1, .events = POLLOUT, .ready = ready};
        c->conn.loop = loop;
        c->max = max;
        c->timeout_ms = timeout_ms;
        c->done = done;
        c->userdata = userdata;
        c->reply.status = KUBE_STATUS_UNKNOWN;
        fd = kube_rpc_connect(socket_path, err);
        if (fd < 0) {
                free(c);
                return fd;
        }
        c->conn.io.fd = fd;
        c->conn.io.deadline_ms = xp_monotonic_ms() + timeout_ms;
        r = kube_rpc_frame(req, &c->request);
        if (r >= 0)
                r = start_session(c, method);
        if (r >= 0)
                r = kube_loop_add(loop, &c->conn.io);
        if (r < 0) {
                call_free(c);
                return xp_errorf(err, r, "%s: cannot start the call: %s", method, strerror(-r));
        }
        *ret = c;
        return 0;
}

/* ---- a blocking call ------------------------------------------------------------------------- */

struct unary_state {
        const ProtobufCMessageDescriptor *desc;
        size_t max;
        ProtobufCMessage *msg;
        struct xp_error *err;
        int r;
        bool done;
};

static void unary_done(void *userdata, const struct kube_reply *reply)
{
        struct unary_state *u = userdata;

        u->done = true;
        if (reply->status != KUBE_STATUS_OK)
                u->r = xp_errorf(u->err,
                                 kube_rpc_status_errno(reply->status),
                                 "%s: %s",
                                 kube_rpc_status_name(reply->status),
                                 *reply->details ? reply->details : "(no details)");
        else
                u->r = kube_rpc_unframe(&reply->body, u->desc, u->max, &u->msg, u->err);
}

int kube_rpc_unary(const char *socket_path,
                   const char *method,
                   const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *resp_desc,
                   size_t max,
                   int64_t timeout_ms,
                   ProtobufCMessage **ret,
                   struct xp_error *err)
{
        struct unary_state u = {.desc = resp_desc, .max = max, .err = err};
        struct kube_client_call *call = NULL;
        struct kube_loop *loop = NULL;
        int r;

        if (kube_loop_new(&loop) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r = kube_client_call_start(
            loop, socket_path, method, req, max, timeout_ms, unary_done, &u, &call, err);
        /* the call's deadline ends it; the count only bounds the loop */
        for (unsigned k = 0; r >= 0 && !u.done && k < 1000000; k++)
                kube_loop_run_once(loop, timeout_ms);
        if (r >= 0 && !u.done) {
                kube_client_call_cancel(call);
                r = xp_errorf(err, -ETIMEDOUT, "no answer");
        } else if (r >= 0) {
                r = u.r;
        }
        kube_loop_free(loop);
        if (r < 0)
                return xp_error_prefix(err, r, "%s", method);
        *ret = u.msg;
        return 0;
}
