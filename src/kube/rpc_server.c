/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gRPC server of rpc_server.h on nghttp2. A call is an HTTP/2 stream: its request message
 * gathers until the client half-closes, then the method answers. An answer goes out through one
 * data source per call: the response headers once, the message bytes as they come, and the
 * status as trailers when the call is finished (or, for a call refused before any message, as
 * gRPC's trailers-only answer: one HEADERS frame).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "rpc_server.h"
#include "xpool/log.h"
#include "xpool/macro.h"

struct kube_server {
        struct kube_io io; /* the listening socket */
        struct kube_loop *loop;
        struct kube_server_config config;
        char *socket_path;
        ino_t socket_ino;
        struct server_conn *conns;
};

struct server_conn {
        struct kube_conn conn; /* first: nghttp2's user_data */
        struct kube_server *server;
        struct server_conn *next;
        struct kube_call *calls;
};

struct kube_call {
        struct server_conn *conn;
        struct kube_call *next;
        int32_t stream_id;
        const struct kube_method *method;
        char path[128];
        struct kube_bytes in, out;
        bool too_big, dispatched, stream_open, responding, finished, deferred;
        int status;
        char details[256];
};

/* ---- answers --------------------------------------------------------------------------------- */

static void submit_trailers(struct kube_call *c)
{
        char code[12], message[768];
        nghttp2_nv nva[2];

        snprintf(code, sizeof(code), "%d", c->status);
        kube_rpc_percent_encode(c->details, message, sizeof(message));
        nva[0] = KUBE_NV("grpc-status", code);
        nva[1] = KUBE_NV("grpc-message", message);
        nghttp2_submit_trailer(c->conn->conn.session, c->stream_id, nva, *message ? 2 : 1);
}

static ssize_t read_answer(nghttp2_session *session,
                           int32_t stream_id,
                           uint8_t *buf,
                           size_t length,
                           uint32_t *data_flags,
                           nghttp2_data_source *source,
                           void *user_data)
{
        struct kube_call *c = source->ptr;
        size_t n = c->out.len - c->out.off < length ? c->out.len - c->out.off : length;

        (void)session;
        (void)stream_id;
        (void)user_data;
        memcpy(buf, c->out.data + c->out.off, n);
        c->out.off += n;
        if (c->out.off == c->out.len) {
                c->out.len = c->out.off = 0;
                if (c->finished) {
                        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
                        submit_trailers(c);
                } else if (n == 0) {
                        c->deferred = true;
                        return NGHTTP2_ERR_DEFERRED;
                }
        }
        return (ssize_t)n;
}

/* Puts what the call has (out, finished) on its way: headers first, the data source after. */
static void flush(struct kube_call *c)
{
        nghttp2_session *session = c->conn->conn.session;
        char code[12], message[768];
        nghttp2_nv nva[4];

        nva[0] = KUBE_NV(":status", "200");
        nva[1] = KUBE_NV("content-type", "application/grpc");
        if (!c->responding && c->finished && c->out.len == 0) {
                /* trailers-only: a refusal before any message */
                snprintf(code, sizeof(code), "%d", c->status);
                kube_rpc_percent_encode(c->details, message, sizeof(message));
                nva[2] = KUBE_NV("grpc-status", code);
                nva[3] = KUBE_NV("grpc-message", message);
                nghttp2_submit_response(session, c->stream_id, nva, *message ? 4 : 3, NULL);
                c->responding = true;
        } else if (!c->responding) {
                nghttp2_data_provider body = {.source.ptr = c, .read_callback = read_answer};

                nghttp2_submit_response(session, c->stream_id, nva, 2, &body);
                c->responding = true;
        } else if (c->deferred) {
                c->deferred = false;
                nghttp2_session_resume_data(session, c->stream_id);
        }
        c->conn->conn.io.events |= POLLOUT;
}

static void finish(struct kube_call *c, int status, const char *details)
{
        c->status = status;
        snprintf(c->details, sizeof(c->details), "%s", details);
        c->finished = true;
        flush(c);
}

int kube_call_send(struct kube_call *c, const ProtobufCMessage *msg)
{
        struct kube_bytes b = {0};
        int r;

        if (!c->stream_open || c->finished)
                return -EPIPE;
        r = kube_rpc_frame(msg, &b);
        if (r < 0)
                return r;
        if (c->out.off == 0) {
                /* a newer full state replaces the one not yet started out */
                kube_bytes_done(&c->out);
                c->out = b;
        } else {
                r = kube_bytes_append(&c->out, b.data, b.len, SIZE_MAX);
                kube_bytes_done(&b);
                if (r < 0)
                        return r;
        }
        flush(c);
        return 0;
}

static int errno_status(int r)
{
        switch (r) {
        case -EINVAL:
        case -EBADMSG:
        case -ENODATA:
                return KUBE_STATUS_INVALID_ARGUMENT;
        case -ENOENT:
                return KUBE_STATUS_NOT_FOUND;
        case -EOPNOTSUPP:
                return KUBE_STATUS_UNIMPLEMENTED;
        case -EMSGSIZE:
                return KUBE_STATUS_RESOURCE_EXHAUSTED;
        default:
                return KUBE_STATUS_INTERNAL;
        }
}

static void answer(struct kube_call *c, const ProtobufCMessage *request)
{
        const struct kube_method *m = c->method;
        void *userdata = c->conn->server->config.userdata;
        struct xp_error err = {0};
        ProtobufCMessage *response = NULL;
        int r;

        if (m->stream) {
                c->stream_open = true;
                m->stream(userdata, c, request);
                return;
        }
        r = m->unary(userdata, request, &response, &err);
        if (r < 0) {
                xp_debug("kube", "%s: %s", m->path, xp_error_message(&err));
                finish(c, errno_status(r), xp_error_message(&err));
                return;
        }
        r = kube_rpc_frame(response, &c->out);
        m->free_response(response);
        if (r < 0)
                finish(c, KUBE_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        else
                finish(c, KUBE_STATUS_OK, "");
}

/* The client has sent its request whole. */
static void dispatch(struct kube_call *c)
{
        const struct kube_server *s = c->conn->server;
        ProtobufCMessage *request = NULL;
        struct xp_error err = {0};
        int r;

        c->dispatched = true;
        for (size_t i = 0; !c->method && i < s->config.n_methods; i++)
                if (strcmp(c->path, s->config.methods[i].path) == 0)
                        c->method = &s->config.methods[i];
        if (!c->method) {
                xp_log(LOG_WARNING, "%s: a call of unknown method %s", s->socket_path, c->path);
                finish(c, KUBE_STATUS_UNIMPLEMENTED, "no such method on this device plugin");
                return;
        }
        if (c->too_big)
                r = xp_errorf(&err, -EMSGSIZE, "a request over %d bytes", KUBE_REQUEST_MAX);
        else
                r = kube_rpc_unframe(&c->in, c->method->request, KUBE_REQUEST_MAX, &request, &err);
        if (r < 0) {
                xp_log(LOG_WARNING,
                       "%s: refused a request: %s",
                       c->method->path,
                       xp_error_message(&err));
                finish(c, errno_status(r), xp_error_message(&err));
                return;
        }
        answer(c, request);
        protobuf_c_message_free_unpacked(request, NULL);
}

/* ---- calls ----------------------------------------------------------------------------------- */

static void call_end(struct kube_call *c)
{
        struct kube_server *s = c->conn->server;

        for (struct kube_call **p = &c->conn->calls; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        if (c->stream_open && s->config.on_close) {
                c->stream_open = false;
                s->config.on_close(s->config.userdata, c);
        }
        kube_bytes_done(&c->in);
        kube_bytes_done(&c->out);
        free(c);
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        struct server_conn *sc = user_data;
        struct kube_call *c;

        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        c = calloc(1, sizeof(*c));
        if (!c)
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        c->conn = sc;
        c->stream_id = frame->hd.stream_id;
        c->next = sc->calls;
        sc->calls = c;
        nghttp2_session_set_stream_user_data(session, c->stream_id, c);
        return 0;
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
        struct kube_call *c = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);

        (void)flags;
        (void)user_data;
        if (c && namelen == 5 && memcmp(name, ":path", 5) == 0)
                snprintf(c->path, sizeof(c->path), "%.*s", (int)valuelen, (const char *)value);
        return 0;
}

static int on_data(nghttp2_session *session,
                   uint8_t flags,
                   int32_t stream_id,
                   const uint8_t *data,
                   size_t len,
                   void *user_data)
{
        struct kube_call *c = nghttp2_session_get_stream_user_data(session, stream_id);

        (void)flags;
        (void)user_data;
        if (c && !c->too_big && kube_bytes_append(&c->in, data, len, KUBE_REQUEST_MAX + 5) < 0) {
                c->too_big = true;
                kube_bytes_done(&c->in);
        }
        return 0;
}

static int on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        struct kube_call *c;

        (void)user_data;
        if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
            !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
                return 0;
        c = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (c && !c->dispatched)
                dispatch(c);
        return 0;
}

static int
on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data)
{
        struct kube_call *c = nghttp2_session_get_stream_user_data(session, stream_id);

        (void)error_code;
        (void)user_data;
        if (c)
                call_end(c);
        return 0;
}

/* ---- connections ----------------------------------------------------------------------------- */

static void conn_close(struct server_conn *sc)
{
        struct kube_server *s = sc->server;

        for (struct server_conn **p = &s->conns; *p; p = &(*p)->next)
                if (*p == sc) {
                        *p = sc->next;
                        break;
                }
        kube_loop_remove(sc->conn.loop, &sc->conn.io);
        nghttp2_session_del(sc->conn.session); /* calls no callback: the calls end below */
        while (sc->calls)
                call_end(sc->calls);
        close(sc->conn.io.fd);
        free(sc);
}

static void conn_ready(struct kube_io *io, short revents)
{
        struct server_conn *sc = (struct server_conn *)io;

        if (kube_conn_pump(&sc->conn, revents) < 0)
                conn_close(sc);
}

static int conn_new(struct kube_server *s, int fd)
{
        nghttp2_session_callbacks *cbs = kube_conn_callbacks();
        nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
        struct server_conn *sc = calloc(1, sizeof(*sc));
        int r = -ENOMEM;

        if (!cbs || !sc)
                goto fail;
        sc->conn.io = (struct kube_io){.fd = fd, .events = POLLIN | POLLOUT, .ready = conn_ready};
        sc->conn.loop = s->loop;
        sc->server = s;
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
        if (nghttp2_session_server_new(&sc->conn.session, cbs, sc) != 0)
                goto fail;
        if (nghttp2_submit_settings(sc->conn.session, NGHTTP2_FLAG_NONE, settings, 1) != 0 ||
            kube_loop_add(s->loop, &sc->conn.io) < 0)
                goto fail;
        nghttp2_session_callbacks_del(cbs);
        sc->next = s->conns;
        s->conns = sc;
        return 0;
fail:
        if (cbs)
                nghttp2_session_callbacks_del(cbs);
        if (sc)
                nghttp2_session_del(sc->conn.session);
        free(sc);
        close(fd);
        return r;
}

static void accept_ready(struct kube_io *io, short revents)
{
        struct kube_server *s = (struct kube_server *)io;

        (void)revents;
        /* a bounded batch: the loop comes back for the rest */
        for (unsigned k = 0; k < 16; k++) {
                int fd = accept4(s->io.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (fd < 0)
                        return;
                if (conn_new(s, fd) < 0)
                        xp_log(LOG_ERR, "%s: out of memory for a connection", s->socket_path);
        }
}

/* ---- the server ------------------------------------------------------------------------------ */

void kube_server_stop(struct kube_server *s)
{
        struct stat st;

        if (!s)
                return;
        /* the socket goes with its server, unless another process has put its own there */
        if (lstat(s->socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == s->socket_ino)
                unlink(s->socket_path);
        while (s->conns)
                conn_close(s->conns);
        kube_loop_remove(s->loop, &s->io);
        close(s->io.fd);
        free(s->socket_path);
        free(s);
}

static int listen_on(const char *path, struct xp_error *err)
{
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        struct stat st;
        int fd;

        if (strlen(path) >= sizeof(sun.sun_path))
                return xp_errorf(err, -ENAMETOOLONG, "%s: too long for a Unix socket", path);
        strcpy(sun.sun_path, path);
        /* a stale socket is replaced; anything else is not ours to remove */
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return xp_errorf(err, -EEXIST, "%s exists and is not a socket", path);
                unlink(path);
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return xp_errorf(err, -errno, "socket: %m");
        if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 64) < 0) {
                int r = -errno;

                close(fd);
                return xp_errorf(err, -EADDRINUSE, "cannot listen on %s: %s", path, strerror(-r));
        }
        /* owner only: the kubelet runs as root, and nobody else has business here */
        chmod(path, 0600);
        return fd;
}

int kube_server_start(const struct kube_server_config *config,
                      struct kube_loop *loop,
                      struct kube_server **ret,
                      struct xp_error *err)
{
        struct kube_server *s;
        struct stat st;
        int fd;

        if (!config->socket_path || !*config->socket_path)
                return xp_errorf(err, -EINVAL, "no socket path");
        s = calloc(1, sizeof(*s));
        if (!s || !(s->socket_path = strdup(config->socket_path))) {
                free(s);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        fd = listen_on(config->socket_path, err);
        if (fd < 0) {
                free(s->socket_path);
                free(s);
                return fd;
        }
        s->io = (struct kube_io){.fd = fd, .events = POLLIN, .ready = accept_ready};
        s->loop = loop;
        s->config = *config;
        if (kube_loop_add(loop, &s->io) < 0) {
                close(fd);
                unlink(config->socket_path);
                free(s->socket_path);
                free(s);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        if (lstat(config->socket_path, &st) == 0)
                s->socket_ino = st.st_ino;
        *ret = s;
        return 0;
}
