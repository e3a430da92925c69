/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SPDY streams over a stream's connection (stream_internal.h), the server's side as kubectl's
 * library (moby/spdystream) expects it: the client opens every stream (odd ids, increasing), each
 * is accepted at once with an empty SYN_REPLY, PINGs are answered, SETTINGS and WINDOW_UPDATE are
 * ignored (it has no flow control). A frame that breaks the protocol ends the connection with a
 * GOAWAY: the header compression is one stream per direction, so there is no recovering.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stream_internal.h"
#include "xpool/macro.h"

int spdy_init(struct spdy *sp, struct sconn *conn)
{
        *sp = (struct spdy){.conn = conn};
        return xp_spdy_zlib_init(&sp->z);
}

static void stream_free(struct spdy_stream *st)
{
        if (!st)
                return;
        xp_spdy_headers_done(&st->headers);
        free(st);
}

void spdy_done(struct spdy *sp)
{
        for (size_t i = 0; i < SPDY_STREAMS_MAX; i++)
                stream_free(sp->streams[i]);
        xp_spdy_zlib_done(&sp->z);
        *sp = (struct spdy){0};
}

static struct spdy_stream *find(struct spdy *sp, uint32_t id)
{
        for (size_t i = 0; i < SPDY_STREAMS_MAX; i++)
                if (sp->streams[i] && sp->streams[i]->id == id)
                        return sp->streams[i];
        return NULL;
}

/* Ends the connection: GOAWAY with status, and why. */
static int fail(struct spdy *sp, uint32_t status, const char *why, int r)
{
        uint8_t frame[16];

        if (!sp->goaway) {
                xp_spdy_goaway(frame, sp->last_id, status);
                (void)sconn_bytes_send(sp->conn, frame, sizeof(frame));
                sp->goaway = true;
        }
        sp->error = why;
        return r;
}

static void rst(struct spdy *sp, uint32_t id, uint32_t status)
{
        uint8_t frame[16];

        xp_spdy_rst_stream(frame, id, status);
        (void)sconn_bytes_send(sp->conn, frame, sizeof(frame));
}

static int syn_stream(struct spdy *sp, const struct xp_spdy_frame *f, const struct spdy_handler *h)
{
        const char *why = NULL;
        _cleanup_free_ uint8_t *reply = NULL;
        struct spdy_stream *st;
        size_t slot = SPDY_STREAMS_MAX, len = 0;
        int r;

        st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        st->id = f->stream_id;
        st->tag = -1;
        /* the header block is read first in every case: the compression state depends on it */
        r = xp_spdy_headers_decode(&sp->z, f->data, f->len, &st->headers, &why);
        if (r < 0) {
                stream_free(st);
                return fail(sp, XP_SPDY_GOAWAY_PROTOCOL_ERROR, why, r);
        }
        if (!(f->stream_id & 1) || f->stream_id <= sp->last_id) {
                stream_free(st);
                return fail(sp,
                            XP_SPDY_GOAWAY_PROTOCOL_ERROR,
                            "stream ids must be odd and increase",
                            -EPROTO);
        }
        sp->last_id = f->stream_id;
        st->remote_fin = f->flags & (XP_SPDY_FLAG_FIN | XP_SPDY_FLAG_UNIDIRECTIONAL);
        for (size_t i = 0; i < SPDY_STREAMS_MAX && slot == SPDY_STREAMS_MAX; i++)
                if (!sp->streams[i])
                        slot = i;
        if (slot == SPDY_STREAMS_MAX || h->open(h->cls, st) < 0) {
                rst(sp, st->id, XP_SPDY_RST_REFUSED_STREAM);
                stream_free(st);
                return 0;
        }
        sp->streams[slot] = st;
        r = xp_spdy_syn_reply(&sp->z, st->id, 0, NULL, NULL, 0, &reply, &len);
        if (r < 0)
                return fail(sp, XP_SPDY_GOAWAY_INTERNAL_ERROR, "out of memory", r);
        sp->conn->last_data_ms = stream_now_ms();
        return sconn_bytes_send(sp->conn, reply, len);
}

static int data_frame(struct spdy *sp, const struct xp_spdy_frame *f, const struct spdy_handler *h)
{
        struct spdy_stream *st = find(sp, f->stream_id);

        if (!st || st->reset)
                return 0; /* a stream ended meanwhile: its late data is dropped */
        if (st->remote_fin) {
                rst(sp, st->id, XP_SPDY_RST_PROTOCOL_ERROR);
                st->reset = true;
                h->reset(h->cls, st);
                return 0;
        }
        sp->conn->last_data_ms = stream_now_ms();
        if (f->len)
                h->data(h->cls, st, f->data, f->len);
        if (f->flags & XP_SPDY_FLAG_FIN) {
                st->remote_fin = true;
                h->fin(h->cls, st);
        }
        return 0;
}

static int frame(struct spdy *sp, const struct xp_spdy_frame *f, const struct spdy_handler *h)
{
        const char *why = NULL;
        struct xp_spdy_headers ignored = {0};
        struct spdy_stream *st;
        uint8_t ping[12];
        int r;

        switch (f->type) {
        case XP_SPDY_DATA:
                return data_frame(sp, f, h);
        case XP_SPDY_SYN_STREAM:
                return syn_stream(sp, f, h);
        case XP_SPDY_HEADERS:
        case XP_SPDY_SYN_REPLY:
                /* read to keep the compression state; a client has nothing to say with them */
                r = xp_spdy_headers_decode(&sp->z, f->data, f->len, &ignored, &why);
                xp_spdy_headers_done(&ignored);
                return r < 0 ? fail(sp, XP_SPDY_GOAWAY_PROTOCOL_ERROR, why, r) : 0;
        case XP_SPDY_RST_STREAM:
                st = find(sp, f->stream_id);
                if (st && !st->reset) {
                        st->reset = true;
                        h->reset(h->cls, st);
                }
                return 0;
        case XP_SPDY_PING:
                /* the client's pings are odd; an even one would be an answer to ours */
                if (!(f->value & 1))
                        return 0;
                xp_spdy_ping(ping, f->value);
                return sconn_bytes_send(sp->conn, ping, sizeof(ping));
        case XP_SPDY_GOAWAY:
                sp->goaway = true;
                return -ECONNRESET;
        default:
                return 0; /* SETTINGS, WINDOW_UPDATE, unknown control frames */
        }
}

int spdy_process(struct spdy *sp, const struct spdy_handler *h)
{
        for (;;) {
                const uint8_t *data;
                const char *why = NULL;
                struct xp_spdy_frame f;
                size_t len;
                int n, r;

                if (sp->goaway)
                        return -ECONNRESET;
                r = sconn_bytes(sp->conn, &data, &len);
                if (r < 0)
                        return fail(
                            sp, XP_SPDY_GOAWAY_PROTOCOL_ERROR, "WebSocket protocol error", r);
                n = xp_spdy_frame_parse(data, len, STREAM_MESSAGE_MAX, &f, &why);
                if (n == 0)
                        return 0;
                if (n < 0)
                        return fail(sp, XP_SPDY_GOAWAY_PROTOCOL_ERROR, why, n);
                r = frame(sp, &f, h);
                sconn_bytes_consume(sp->conn, (size_t)n);
                if (r < 0)
                        return r;
        }
}

int spdy_send(struct spdy *sp, struct spdy_stream *st, const void *data, size_t len, bool fin)
{
        uint8_t header[XP_SPDY_HEADER_LEN];
        int r;

        if (st->local_fin || st->reset)
                return -EPIPE;
        while (len > 0 || fin) {
                size_t k = len > STREAM_CHUNK ? STREAM_CHUNK : len;
                bool last = fin && k == len;

                xp_spdy_data_header(header, st->id, last ? XP_SPDY_FLAG_FIN : 0, k);
                r = sconn_bytes_send(sp->conn, header, sizeof(header));
                if (r >= 0 && k)
                        r = sconn_bytes_send(sp->conn, data, k);
                if (r < 0)
                        return r;
                if (k)
                        data = (const uint8_t *)data + k;
                len -= k;
                if (last) {
                        st->local_fin = true;
                        break;
                }
        }
        sp->conn->last_data_ms = stream_now_ms();
        return 0;
}

void spdy_reset(struct spdy *sp, struct spdy_stream *st, uint32_t status)
{
        if (st->reset)
                return;
        rst(sp, st->id, status);
        st->reset = true;
}

void spdy_gc(struct spdy *sp)
{
        for (size_t i = 0; i < SPDY_STREAMS_MAX; i++) {
                struct spdy_stream *st = sp->streams[i];

                if (st && (st->reset || (st->local_fin && st->remote_fin))) {
                        stream_free(st);
                        sp->streams[i] = NULL;
                }
        }
}
