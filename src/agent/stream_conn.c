/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client's side of a stream (stream_internal.h): the upgraded socket, buffered both ways.
 * What is read is parsed as WebSocket frames (SCONN_WS, SCONN_WS_TUNNEL) or kept as bytes
 * (SCONN_RAW). Buffers grow to what one message or frame needs and no further; what is queued to
 * send is bounded by the sessions, which stop reading what would add to it.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream_internal.h"

/* The most read into the buffer: one message or frame, and its header. */
#define IN_MAX (STREAM_MESSAGE_MAX + XP_WS_HEADER_MAX)
/* While lingering, how often the client's progress is looked at. */
#define LINGER_TICK_MS 500

static int buf_reserve(struct buf *b, size_t more)
{
        size_t cap;
        uint8_t *p;

        if (b->off > 0 && b->off == b->len)
                b->off = b->len = 0;
        if (b->len + more <= b->cap)
                return 0;
        if (b->off > 0) {
                memmove(b->data, b->data + b->off, b->len - b->off);
                b->len -= b->off;
                b->off = 0;
                if (b->len + more <= b->cap)
                        return 0;
        }
        cap = b->cap ? b->cap : 16 * 1024;
        while (cap < b->len + more)
                cap *= 2;
        p = realloc(b->data, cap);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->cap = cap;
        return 0;
}

static int buf_add(struct buf *b, const void *data, size_t len)
{
        int r = buf_reserve(b, len);

        if (r < 0)
                return r;
        if (len)
                memcpy(b->data + b->len, data, len);
        b->len += len;
        return 0;
}

static void buf_free(struct buf *b)
{
        free(b->data);
        *b = (struct buf){0};
}

int sconn_init(struct sconn *c, int fd, enum sconn_mode mode, const void *early, size_t early_len)
{
        *c = (struct sconn){.fd = fd, .mode = mode, .last_data_ms = stream_now_ms()};
        c->msg.max = STREAM_MESSAGE_MAX;
        return buf_add(&c->in, early, early_len);
}

void sconn_done(struct sconn *c)
{
        buf_free(&c->in);
        buf_free(&c->bytes);
        buf_free(&c->out);
        buf_free(&c->ctrl);
        xp_ws_message_done(&c->msg);
}

int sconn_fill(struct sconn *c)
{
        size_t room;
        ssize_t n;
        int r;

        if (c->eof)
                return -EPIPE;
        r = buf_reserve(&c->in, STREAM_CHUNK);
        if (r < 0)
                return r;
        room = c->in.cap - c->in.len;
        n = recv(c->fd, c->in.data + c->in.len, room, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                c->eof = true;
                return n == 0 ? -EPIPE : -errno;
        }
        c->in.len += (size_t)n;
        return 0;
}

/* Sends from b as far as the socket takes it, at most max bytes: the bytes sent, or -errno. */
static ssize_t send_some(struct sconn *c, struct buf *b, size_t max)
{
        size_t len = b->len - b->off;
        ssize_t n =
            send(c->fd, b->data + b->off, len < max ? len : max, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n < 0) {
                c->eof = true;
                return -errno;
        }
        b->off += (size_t)n;
        if (b->off == b->len)
                b->off = b->len = 0;
        return n;
}

/* The size of the whole frame that starts out's unsent bytes (our own: unmasked, complete). */
static size_t next_frame_size(struct sconn *c)
{
        struct xp_ws_frame f;
        struct xp_ws_violation v = {0};
        int n = xp_ws_frame_parse(
            c->out.data + c->out.off, c->out.len - c->out.off, false, SIZE_MAX, &f, &v);

        return n > 0 ? (size_t)n : c->out.len - c->out.off;
}

/*
 * A pong goes out at the next frame boundary, not behind everything queued: a client such as
 * kubectl gives up when no pong comes within seconds of its ping, and up to STREAM_OUT_HIGH of
 * output may be waiting for a slow reader.
 */
int sconn_flush(struct sconn *c)
{
        for (;;) {
                bool ctrl_first =
                    c->ctrl.off < c->ctrl.len && (c->frame_left == 0 || c->ctrl.off > 0);
                ssize_t n;

                if (ctrl_first) {
                        n = send_some(c, &c->ctrl, SIZE_MAX);
                } else if (c->out.off < c->out.len) {
                        if (c->mode != SCONN_RAW && c->frame_left == 0)
                                c->frame_left = next_frame_size(c);
                        n = send_some(c, &c->out, c->mode != SCONN_RAW ? c->frame_left : SIZE_MAX);
                        if (n > 0 && c->mode != SCONN_RAW)
                                c->frame_left -= (size_t)n;
                } else {
                        return 0;
                }
                if (n <= 0)
                        return n < 0 ? (int)n : 0;
        }
}

size_t sconn_pending(const struct sconn *c)
{
        return c->out.len - c->out.off + c->ctrl.len - c->ctrl.off;
}

bool sconn_wants_input(const struct sconn *c)
{
        return !c->eof && !c->close_received && c->in.len - c->in.off < IN_MAX &&
               c->bytes.len - c->bytes.off < IN_MAX;
}

/* Appends a whole unmasked frame to to. */
static int
frame_into(struct buf *to, uint8_t opcode, const void *a, size_t alen, const void *b, size_t blen)
{
        uint8_t header[XP_WS_HEADER_MAX];
        size_t hlen = xp_ws_frame_header(header, opcode, true, alen + blen, NULL);
        int r = buf_reserve(to, hlen + alen + blen);

        if (r < 0)
                return r;
        buf_add(to, header, hlen);
        buf_add(to, a, alen);
        buf_add(to, b, blen);
        return 0;
}

/* Queues a frame; nothing after a close frame. */
static int
ws_frame(struct sconn *c, uint8_t opcode, const void *a, size_t alen, const void *b, size_t blen)
{
        int r;

        if (c->close_sent)
                return 0;
        r = frame_into(&c->out, opcode, a, alen, b, blen);
        if (r >= 0 && opcode == XP_WS_CLOSE)
                c->close_sent = true;
        return r;
}

/* Queues a pong on ctrl (sconn_flush() sends it between two frames of out). */
static int ws_pong(struct sconn *c, const void *data, size_t len)
{
        if (c->close_sent)
                return 0;
        /* only the latest ping is answered while earlier pongs wait (RFC 6455, 5.5.3) */
        if (c->ctrl.off == 0)
                c->ctrl.len = 0;
        else if (c->ctrl.len - c->ctrl.off > XP_WS_HEADER_MAX + XP_WS_CONTROL_MAX)
                return 0;
        return frame_into(&c->ctrl, XP_WS_PONG, data, len, NULL, 0);
}

void sconn_ws_close(struct sconn *c, uint16_t code, const char *reason)
{
        uint8_t payload[XP_WS_CONTROL_MAX];
        size_t len = xp_ws_close_payload(code, reason, payload);

        (void)ws_frame(c, XP_WS_CLOSE, payload, len, NULL, 0);
}

/* A control frame from the client. */
static int ws_control(struct sconn *c, const struct xp_ws_frame *f)
{
        uint16_t code;

        switch (f->opcode) {
        case XP_WS_PING:
                return ws_pong(c, f->payload, f->len);
        case XP_WS_PONG:
                return 0;
        default: /* close */
                c->close_received = true;
                if (xp_ws_close_parse(f->payload, f->len, &code) < 0) {
                        sconn_ws_close(c, XP_WS_CLOSE_PROTOCOL_ERROR, "malformed close frame");
                        return -EPROTO;
                }
                sconn_ws_close(c, code == 1005 ? XP_WS_CLOSE_NORMAL : code, NULL);
                return 0;
        }
}

/* The next frame, control frames handled: 1 with a data frame's message complete, 0, -EPROTO. */
static int
ws_next_message(struct sconn *c, uint8_t *ret_op, const uint8_t **ret_data, size_t *ret_len)
{
        struct xp_ws_violation v = {0};

        while (!c->close_received) {
                struct xp_ws_frame f;
                int n, r;

                if (c->in.len == c->in.off)
                        return 0; /* nothing read yet (the buffer may not even exist) */
                n = xp_ws_frame_parse(c->in.data + c->in.off,
                                      c->in.len - c->in.off,
                                      true,
                                      STREAM_MESSAGE_MAX,
                                      &f,
                                      &v);
                if (n == 0)
                        return 0;
                if (n < 0)
                        goto violation;
                c->in.off += (size_t)n;
                if (f.opcode >= XP_WS_CLOSE) {
                        r = ws_control(c, &f);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = xp_ws_message_add(&c->msg, &f, ret_op, ret_data, ret_len, &v);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        goto violation;
                if (r > 0)
                        return 1;
        }
        return 0;
violation:
        sconn_ws_close(c, v.code, v.reason);
        c->close_received = true;
        return -EPROTO;
}

int sconn_ws_next(struct sconn *c, const uint8_t **ret_data, size_t *ret_len)
{
        uint8_t op;
        int r = ws_next_message(c, &op, ret_data, ret_len);

        if (r <= 0)
                return r;
        /* a text message counts as a binary one, as with the kubelet: the Python client writes
         * str data (stdin, resize) as text */
        (void)op;
        if (c->mode == SCONN_WS)
                c->last_data_ms = stream_now_ms(); /* SPDY's frames count in stream_spdy.c */
        return 1;
}

int sconn_ws_send(struct sconn *c, uint8_t b, const void *data, size_t len)
{
        c->last_data_ms = stream_now_ms();
        return ws_frame(c, XP_WS_BINARY, &b, 1, data, len);
}

int sconn_bytes(struct sconn *c, const uint8_t **ret_data, size_t *ret_len)
{
        struct buf *b = c->mode == SCONN_RAW ? &c->in : &c->bytes;

        while (c->mode == SCONN_WS_TUNNEL) {
                const uint8_t *data;
                size_t len;
                int r = sconn_ws_next(c, &data, &len);

                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = buf_add(&c->bytes, data, len);
                if (r < 0)
                        return r;
        }
        *ret_data = b->data ? b->data + b->off : (const uint8_t *)"";
        *ret_len = b->len - b->off;
        return 0;
}

void sconn_bytes_consume(struct sconn *c, size_t n)
{
        struct buf *b = c->mode == SCONN_RAW ? &c->in : &c->bytes;

        b->off += n;
        if (b->off == b->len)
                b->off = b->len = 0;
}

int sconn_bytes_send(struct sconn *c, const void *data, size_t len)
{
        if (c->mode == SCONN_WS_TUNNEL)
                return ws_frame(c, XP_WS_BINARY, data, len, NULL, 0);
        return buf_add(&c->out, data, len);
}

/* Bytes fd's kernel holds that its peer has not taken (a pair's unread, TCP's unacknowledged). */
static size_t queued(int fd)
{
        int n = 0;

        return ioctl(fd, SIOCOUTQ, &n) == 0 && n > 0 ? (size_t)n : 0;
}

/* What the socket holds that the client has not taken yet: ours (queued) and the kernel's. */
static size_t untaken(const struct sconn *c)
{
        return sconn_pending(c) + queued(c->fd);
}

/*
 * While lingering, what the client sends is read (and its data dropped) for its close frame: the
 * end of a WebSocket's closing handshake. What is not a whole frame yet stays in the buffer.
 */
static int linger_read_frames(struct sconn *c)
{
        const uint8_t *data;
        size_t len;
        int r = sconn_fill(c);

        while (r >= 0 && !c->close_received && (r = sconn_ws_next(c, &data, &len)) > 0)
                ;
        return r == -EPROTO ? 0 : r;
}

/*
 * Under TLS our FIN cannot reach the client: libmicrohttpd's relay does not pass a shutdown of
 * its pair on. So once the closing handshake is over (our close frame sent, the client's read)
 * and every byte of ours reached the client (none queued here, none left in the pair for the
 * relay to read, none its TCP socket still waits an acknowledgement for), the wait ends and the
 * connection is closed, as RFC 6455 (7.1.1) has the server close first: a client that waits for
 * that close (Python's websocket-client, a proxy) is not held until linger_ms. With nothing of
 * ours in flight, a reset for bytes of the client's that came meanwhile costs it nothing.
 */
static bool tls_closed_cleanly(const struct sconn *c, int peer_fd)
{
        return peer_fd >= 0 && c->mode != SCONN_RAW && c->close_sent && c->close_received &&
               sconn_pending(c) == 0 && queued(c->fd) == 0 && queued(peer_fd) == 0;
}

void sconn_linger(struct sconn *c, int stop_fd, int peer_fd, int64_t linger_ms)
{
        int64_t since = stream_now_ms(), left;
        size_t last = untaken(c);
        uint8_t sink[4096];
        /* our FIN on the relay pair is not the client's to see: under TLS its hang-up ends it */
        bool shut = peer_fd >= 0;

        /* the time runs from the client's last progress: a slow reader is no stalled one */
        while (!c->eof && !tls_closed_cleanly(c, peer_fd) &&
               (left = since + linger_ms - stream_now_ms()) > 0) {
                struct pollfd fds[3] = {
                    {.fd = stop_fd, .events = POLLIN},
                    {.fd = c->fd, .events = (short)(POLLIN | (sconn_pending(c) ? POLLOUT : 0))},
                    {.fd = peer_fd, .events = POLLRDHUP},
                };
                ssize_t n;

                if (sconn_flush(c) < 0)
                        return;
                if (!shut && sconn_pending(c) == 0) {
                        shutdown(c->fd, SHUT_WR);
                        shut = true;
                }
                if (poll(fds,
                         peer_fd >= 0 ? 3 : 2,
                         (int)(left < LINGER_TICK_MS ? left : LINGER_TICK_MS)) < 0 &&
                    errno != EINTR)
                        return;
                if (fds[0].revents || fds[2].revents)
                        return;
                if (untaken(c) != last) {
                        last = untaken(c);
                        since = stream_now_ms();
                }
                if (!(fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                if (peer_fd >= 0 && c->mode != SCONN_RAW && !c->close_received) {
                        if (linger_read_frames(c) < 0)
                                return;
                        continue;
                }
                n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                        return;
        }
}
