/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC's framing and status codes, the poll loop and the HTTP/2 connections' I/O (rpc.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rpc.h"
#include "xpool/timeutil.h"

/* gRPC's prefix: a compression flag and the message's length, big-endian */
#define FRAME_PREFIX 5

const char *kube_rpc_status_name(int status)
{
        static const char *const names[] = {
            "OK",
            "CANCELLED",
            "UNKNOWN",
            "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND",
            "ALREADY_EXISTS",
            "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED",
            "FAILED_PRECONDITION",
            "ABORTED",
            "OUT_OF_RANGE",
            "UNIMPLEMENTED",
            "INTERNAL",
            "UNAVAILABLE",
            "DATA_LOSS",
            "UNAUTHENTICATED",
        };

        if (status >= 0 && (size_t)status < sizeof(names) / sizeof(names[0]))
                return names[status];
        return "UNKNOWN";
}

int kube_rpc_status_errno(int status)
{
        switch (status) {
        case KUBE_STATUS_OK:
                return 0;
        case KUBE_STATUS_UNAVAILABLE:
                return -ECONNREFUSED;
        case KUBE_STATUS_DEADLINE_EXCEEDED:
                return -ETIMEDOUT;
        case KUBE_STATUS_UNIMPLEMENTED:
                return -EOPNOTSUPP;
        case KUBE_STATUS_NOT_FOUND:
                return -ENOENT;
        case KUBE_STATUS_INVALID_ARGUMENT:
                return -EINVAL;
        case KUBE_STATUS_RESOURCE_EXHAUSTED:
                return -EMSGSIZE;
        default:
                return -EIO;
        }
}

/* ---- the loop ------------------------------------------------------------------------------- */

struct kube_loop {
        struct kube_io **ios; /* NULL where one was removed during a round */
        struct pollfd *fds;
        size_t n, cap;
};

int kube_loop_new(struct kube_loop **ret)
{
        struct kube_loop *loop = calloc(1, sizeof(*loop));

        if (!loop)
                return -ENOMEM;
        *ret = loop;
        return 0;
}

void kube_loop_free(struct kube_loop *loop)
{
        if (!loop)
                return;
        free(loop->ios);
        free(loop->fds);
        free(loop);
}

int kube_loop_add(struct kube_loop *loop, struct kube_io *io)
{
        if (loop->n == loop->cap) {
                size_t cap = loop->cap ? loop->cap * 2 : 8;
                struct kube_io **ios = realloc(loop->ios, cap * sizeof(*ios));
                struct pollfd *fds;

                if (!ios)
                        return -ENOMEM;
                loop->ios = ios;
                fds = realloc(loop->fds, cap * sizeof(*fds));
                if (!fds)
                        return -ENOMEM;
                loop->fds = fds;
                loop->cap = cap;
        }
        loop->ios[loop->n++] = io;
        return 0;
}

void kube_loop_remove(struct kube_loop *loop, struct kube_io *io)
{
        for (size_t i = 0; i < loop->n; i++)
                if (loop->ios[i] == io)
                        loop->ios[i] = NULL;
}

static void compact(struct kube_loop *loop)
{
        size_t k = 0;

        for (size_t i = 0; i < loop->n; i++)
                if (loop->ios[i])
                        loop->ios[k++] = loop->ios[i];
        loop->n = k;
}

int kube_loop_run_once(struct kube_loop *loop, int64_t timeout_ms)
{
        int64_t now = xp_monotonic_ms();
        size_t n;
        int ran = 0;

        compact(loop);
        n = loop->n;
        for (size_t i = 0; i < n; i++) {
                const struct kube_io *io = loop->ios[i];

                loop->fds[i] = (struct pollfd){.fd = io->fd, .events = io->events};
                if (io->deadline_ms > 0 && io->deadline_ms - now < timeout_ms)
                        timeout_ms = io->deadline_ms > now ? io->deadline_ms - now : 0;
        }
        if (poll(loop->fds, n, (int)(timeout_ms < 0 ? 0 : timeout_ms)) < 0 && errno != EINTR)
                return 0;
        now = xp_monotonic_ms();
        /* only the ios polled: one added during the round waits for the next */
        for (size_t i = 0; i < n; i++) {
                struct kube_io *io = loop->ios[i];
                short revents = loop->fds[i].revents;

                if (!io)
                        continue;
                if (revents || (io->deadline_ms > 0 && now >= io->deadline_ms)) {
                        io->ready(io, revents);
                        ran = 1;
                }
        }
        compact(loop);
        return ran;
}

/* ---- messages -------------------------------------------------------------------------------- */

void kube_bytes_done(struct kube_bytes *b)
{
        free(b->data);
        *b = (struct kube_bytes){0};
}

int kube_bytes_append(struct kube_bytes *b, const void *data, size_t len, size_t max)
{
        uint8_t *grown;

        if (len > max || b->len > max - len)
                return -EMSGSIZE;
        if (len == 0)
                return 0;
        grown = realloc(b->data, b->len + len);
        if (!grown)
                return -ENOMEM;
        memcpy(grown + b->len, data, len);
        b->data = grown;
        b->len += len;
        return 0;
}

int kube_rpc_frame(const ProtobufCMessage *msg, struct kube_bytes *b)
{
        size_t size = protobuf_c_message_get_packed_size(msg);
        uint8_t *grown;

        if (size > UINT32_MAX)
                return -EMSGSIZE;
        grown = realloc(b->data, b->len + FRAME_PREFIX + size);
        if (!grown)
                return -ENOMEM;
        b->data = grown;
        grown += b->len;
        grown[0] = 0; /* not compressed */
        grown[1] = (uint8_t)(size >> 24);
        grown[2] = (uint8_t)(size >> 16);
        grown[3] = (uint8_t)(size >> 8);
        grown[4] = (uint8_t)size;
        protobuf_c_message_pack(msg, grown + FRAME_PREFIX);
        b->len += FRAME_PREFIX + size;
        return 0;
}

int kube_rpc_unframe(const struct kube_bytes *data,
                     const ProtobufCMessageDescriptor *desc,
                     size_t max,
                     ProtobufCMessage **ret,
                     struct xp_error *err)
{
        const uint8_t *p = data->data;
        ProtobufCMessage *msg;
        size_t size;

        if (data->len == 0)
                return xp_errorf(err, -ENODATA, "no %s message", desc->name);
        if (data->len < FRAME_PREFIX)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "%zu bytes that are not a gRPC message (5 bytes of prefix first)",
                                 data->len);
        size = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
        if (size > max)
                return xp_errorf(err,
                                 -EMSGSIZE,
                                 "%s message of %zu bytes, the limit is %zu",
                                 desc->name,
                                 size,
                                 max);
        if (p[0] != 0)
                return xp_errorf(err, -EOPNOTSUPP, "%s message: compressed", desc->name);
        if (size != data->len - FRAME_PREFIX)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "%s message: its prefix says %zu bytes, %zu came (one message "
                                 "per call)",
                                 desc->name,
                                 size,
                                 data->len - FRAME_PREFIX);
        msg = protobuf_c_message_unpack(desc, NULL, size, p + FRAME_PREFIX);
        if (!msg)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "%zu bytes that are not a protobuf %s message",
                                 size,
                                 desc->name);
        *ret = msg;
        return 0;
}

void kube_rpc_percent_encode(const char *text, char *out, size_t size)
{
        size_t k = 0;

        for (const unsigned char *s = (const unsigned char *)text; *s && k + 4 < size; s++) {
                if (*s >= 0x20 && *s <= 0x7e && *s != '%')
                        out[k++] = (char)*s;
                else
                        k += (size_t)snprintf(out + k, size - k, "%%%02X", *s);
        }
        if (size > 0)
                out[k < size ? k : size - 1] = '\0';
}

void kube_rpc_percent_decode(const char *text, size_t len, char *out, size_t size)
{
        size_t k = 0;

        for (size_t i = 0; i < len && k + 1 < size; i++) {
                unsigned v;

                if (text[i] == '%' && i + 2 < len && sscanf(text + i + 1, "%2x", &v) == 1) {
                        out[k++] = (char)v;
                        i += 2;
                } else {
                        out[k++] = text[i];
                }
        }
        if (size > 0)
                out[k] = '\0';
}

/* ---- HTTP/2 connections ---------------------------------------------------------------------- */

static ssize_t
conn_send(nghttp2_session *session, const uint8_t *data, size_t len, int flags, void *user_data)
{
        struct kube_conn *c = user_data;
        ssize_t n = send(c->io.fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

        (void)session;
        (void)flags;
        if (n >= 0)
                return n;
        return errno == EAGAIN || errno == EINTR ? NGHTTP2_ERR_WOULDBLOCK
                                                 : NGHTTP2_ERR_CALLBACK_FAILURE;
}

static ssize_t
conn_recv(nghttp2_session *session, uint8_t *buf, size_t len, int flags, void *user_data)
{
        struct kube_conn *c = user_data;
        ssize_t n = recv(c->io.fd, buf, len, MSG_DONTWAIT);

        (void)session;
        (void)flags;
        if (n > 0)
                return n;
        if (n == 0)
                return NGHTTP2_ERR_EOF;
        return errno == EAGAIN || errno == EINTR ? NGHTTP2_ERR_WOULDBLOCK
                                                 : NGHTTP2_ERR_CALLBACK_FAILURE;
}

nghttp2_session_callbacks *kube_conn_callbacks(void)
{
        nghttp2_session_callbacks *cbs;

        if (nghttp2_session_callbacks_new(&cbs) != 0)
                return NULL;
        nghttp2_session_callbacks_set_send_callback(cbs, conn_send);
        nghttp2_session_callbacks_set_recv_callback(cbs, conn_recv);
        return cbs;
}

int kube_conn_pump(struct kube_conn *c, short revents)
{
        bool want_read, want_write;

        if ((revents & (POLLIN | POLLHUP | POLLERR)) && nghttp2_session_recv(c->session) != 0)
                return -EPIPE;
        if (nghttp2_session_send(c->session) != 0)
                return -EPIPE;
        want_read = nghttp2_session_want_read(c->session);
        want_write = nghttp2_session_want_write(c->session);
        if (!want_read && !want_write)
                return -EPIPE;
        c->io.events = (short)((want_read ? POLLIN : 0) | (want_write ? POLLOUT : 0));
        return 0;
}
