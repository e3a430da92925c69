/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SPDY/3 frames (spdy.h): every length is checked against the buffer and the limit before it is
 * used, and the fixed-size control frames against their sizes, so a frame costs at most max bytes
 * of the caller's buffer.
 */
#include <errno.h>
#include <string.h>

#include "xpool/spdy.h"

static uint32_t be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

static int bad(const char **ret_why, const char *why)
{
        *ret_why = why;
        return -EPROTO;
}

/* A control frame's body into f: -EPROTO when it is not as long as its type says. */
static int parse_control(struct xp_spdy_frame *f, const uint8_t *body, const char **why)
{
        switch (f->type) {
        case XP_SPDY_SYN_STREAM:
                /* stream, associated stream, priority and slot, then the header block */
                if (f->len < 10)
                        return bad(why, "SYN_STREAM shorter than 10 bytes");
                f->stream_id = be32(body) & 0x7fffffff;
                f->data = body + 10;
                f->len -= 10;
                break;
        case XP_SPDY_SYN_REPLY:
        case XP_SPDY_HEADERS:
                if (f->len < 4)
                        return bad(why, "SYN_REPLY or HEADERS shorter than 4 bytes");
                f->stream_id = be32(body) & 0x7fffffff;
                f->data = body + 4;
                f->len -= 4;
                break;
        case XP_SPDY_RST_STREAM:
        case XP_SPDY_WINDOW_UPDATE:
                if (f->len != 8)
                        return bad(why, "RST_STREAM or WINDOW_UPDATE not 8 bytes long");
                f->stream_id = be32(body) & 0x7fffffff;
                f->value =
                    be32(body + 4) & (f->type == XP_SPDY_RST_STREAM ? 0xffffffff : 0x7fffffff);
                f->len = 0;
                break;
        case XP_SPDY_GOAWAY:
                if (f->len != 8)
                        return bad(why, "GOAWAY not 8 bytes long");
                f->stream_id = be32(body) & 0x7fffffff;
                f->value = be32(body + 4);
                f->len = 0;
                return 0; /* a last good stream of 0 is fine */
        case XP_SPDY_PING:
                if (f->len != 4)
                        return bad(why, "PING not 4 bytes long");
                f->value = be32(body);
                f->len = 0;
                return 0;
        default:
                /* SETTINGS and unknown types are skipped by the caller */
                f->data = body;
                return 0;
        }
        if (f->stream_id == 0 && f->type != XP_SPDY_WINDOW_UPDATE)
                return bad(why, "stream id 0");
        return 0;
}

int xp_spdy_frame_parse(
    const uint8_t *buf, size_t len, size_t max, struct xp_spdy_frame *ret, const char **ret_why)
{
        struct xp_spdy_frame f = {0};
        size_t flen;
        int r;

        if (len < XP_SPDY_HEADER_LEN)
                return 0;
        if (max > XP_SPDY_FRAME_MAX)
                max = XP_SPDY_FRAME_MAX;
        flen = (size_t)buf[5] << 16 | (size_t)buf[6] << 8 | buf[7];
        if (flen > max) {
                *ret_why = "frame too long";
                return -EMSGSIZE;
        }
        if (len - XP_SPDY_HEADER_LEN < flen)
                return 0;
        f.flags = buf[4];
        f.len = flen;
        if (buf[0] & 0x80) {
                uint16_t version = (uint16_t)((buf[0] & 0x7f) << 8 | buf[1]);

                if (version != XP_SPDY_VERSION)
                        return bad(ret_why, "control frame of another SPDY version than 3");
                f.type = (uint16_t)(buf[2] << 8 | buf[3]);
                if (f.type == XP_SPDY_DATA)
                        return bad(ret_why, "control frame of type 0");
                r = parse_control(&f, buf + XP_SPDY_HEADER_LEN, ret_why);
                if (r < 0)
                        return r;
        } else {
                f.type = XP_SPDY_DATA;
                f.stream_id = be32(buf) & 0x7fffffff;
                if (f.stream_id == 0)
                        return bad(ret_why, "data frame on stream 0");
                f.data = buf + XP_SPDY_HEADER_LEN;
        }
        *ret = f;
        return (int)(XP_SPDY_HEADER_LEN + flen);
}

static void control_header(uint8_t *out, uint16_t type, uint8_t flags, uint32_t len)
{
        out[0] = 0x80;
        out[1] = XP_SPDY_VERSION;
        out[2] = (uint8_t)(type >> 8);
        out[3] = (uint8_t)type;
        put32(out + 4, len);
        out[4] = flags;
}

void xp_spdy_data_header(uint8_t out[static XP_SPDY_HEADER_LEN],
                         uint32_t stream_id,
                         uint8_t flags,
                         size_t len)
{
        put32(out, stream_id & 0x7fffffff);
        put32(out + 4, (uint32_t)len);
        out[4] = flags;
}

void xp_spdy_rst_stream(uint8_t out[static 16], uint32_t stream_id, uint32_t status)
{
        control_header(out, XP_SPDY_RST_STREAM, 0, 8);
        put32(out + 8, stream_id & 0x7fffffff);
        put32(out + 12, status);
}

void xp_spdy_ping(uint8_t out[static 12], uint32_t id)
{
        control_header(out, XP_SPDY_PING, 0, 4);
        put32(out + 8, id);
}

void xp_spdy_goaway(uint8_t out[static 16], uint32_t last_good_stream, uint32_t status)
{
        control_header(out, XP_SPDY_GOAWAY, 0, 8);
        put32(out + 8, last_good_stream & 0x7fffffff);
        put32(out + 12, status);
}
