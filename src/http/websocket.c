/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 6455 framing (websocket.h). The parser never reads past the bytes it was given and never
 * trusts a length before checking it against both the buffer and the limit, so a peer's frame
 * costs at most max_payload bytes of the caller's buffer.
 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xpool/strutil.h"
#include "xpool/websocket.h"

#define GUID     "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define KEY_LEN  16 /* bytes behind Sec-WebSocket-Key */
#define SHA1_LEN 20

/* ---- handshake ---------------------------------------------------------------------------- */

static bool is_blank(char c)
{
        return c == ' ' || c == '\t';
}

bool xp_ws_has_token(const char *list, const char *token)
{
        size_t tlen = strlen(token);

        for (const char *p = list; p && *p;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                const char *s = p;

                while (len > 0 && is_blank(*s)) {
                        s++;
                        len--;
                }
                while (len > 0 && is_blank(s[len - 1]))
                        len--;
                if (len == tlen && strncasecmp(s, token, tlen) == 0)
                        return true;
                if (!end)
                        break;
                p = end + 1;
        }
        return false;
}

/* The 16 bytes behind a key: false when it is not exactly that in base64. */
static bool decode_key(const char *key, uint8_t out[static KEY_LEN])
{
        gnutls_datum_t in, raw = {0};
        bool ok;

        /* 16 bytes are 24 characters of base64, the last two "==" */
        if (!key || strlen(key) != 24 || key[22] != '=' || key[23] != '=')
                return false;
        in = (gnutls_datum_t){.data = (unsigned char *)key, .size = 24};
        if (gnutls_base64_decode2(&in, &raw) < 0)
                return false;
        ok = raw.size == KEY_LEN;
        if (ok)
                memcpy(out, raw.data, KEY_LEN);
        gnutls_free(raw.data);
        return ok;
}

int xp_ws_check_handshake(const char *upgrade,
                          const char *connection,
                          const char *version,
                          const char *key,
                          const char **ret_why)
{
        uint8_t raw[KEY_LEN];

        if (!xp_ws_has_token(upgrade, "websocket"))
                *ret_why = "the Upgrade header does not name websocket";
        else if (!xp_ws_has_token(connection, "upgrade"))
                *ret_why = "the Connection header does not hold upgrade";
        else if (!version || strcmp(version, "13") != 0)
                *ret_why = "Sec-WebSocket-Version must be 13";
        else if (!decode_key(key, raw))
                *ret_why = "Sec-WebSocket-Key is not the base64 of 16 bytes";
        else
                return 0;
        return -EINVAL;
}

int xp_ws_accept_key(const char *key, char ret[static XP_WS_ACCEPT_LEN + 1])
{
        uint8_t raw[KEY_LEN], digest[SHA1_LEN];
        char text[24 + sizeof(GUID)];
        gnutls_datum_t in = {.data = digest, .size = SHA1_LEN}, out = {0};
        int r = 0;

        if (!decode_key(key, raw))
                return -EINVAL;
        memcpy(text, key, 24);
        memcpy(text + 24, GUID, sizeof(GUID));
        if (gnutls_hash_fast(GNUTLS_DIG_SHA1, text, strlen(text), digest) < 0)
                return -EIO;
        if (gnutls_base64_encode2(&in, &out) < 0)
                return -EIO;
        if (out.size != XP_WS_ACCEPT_LEN)
                r = -EIO;
        else
                memcpy(ret, out.data, XP_WS_ACCEPT_LEN);
        ret[XP_WS_ACCEPT_LEN] = '\0';
        gnutls_free(out.data);
        return r;
}

const char *xp_ws_select_protocol(const char *offer, const char *const *supported)
{
        unsigned seen = 0;

        for (const char *p = offer; p && *p && seen < XP_WS_PROTOCOLS_MAX; seen++) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                const char *s = p;

                while (len > 0 && is_blank(*s)) {
                        s++;
                        len--;
                }
                while (len > 0 && is_blank(s[len - 1]))
                        len--;
                for (size_t i = 0; supported[i]; i++)
                        if (len > 0 && strlen(supported[i]) == len &&
                            strncmp(s, supported[i], len) == 0)
                                return supported[i];
                if (!end)
                        break;
                p = end + 1;
        }
        return NULL;
}

/* ---- frames ------------------------------------------------------------------------------- */

static int refuse(struct xp_ws_violation *v, uint16_t code, const char *reason)
{
        v->code = code;
        v->reason = reason;
        return code == XP_WS_CLOSE_TOO_BIG ? -EMSGSIZE : -EPROTO;
}

static bool opcode_known(uint8_t op)
{
        return op == XP_WS_CONTINUATION || op == XP_WS_TEXT || op == XP_WS_BINARY ||
               op == XP_WS_CLOSE || op == XP_WS_PING || op == XP_WS_PONG;
}

/* The payload length after the first two bytes: 0 incomplete, else the header's length so far
 * (before the mask), or -EPROTO. */
static int read_length(const uint8_t *buf, size_t len, uint64_t *ret, struct xp_ws_violation *v)
{
        uint8_t n7 = buf[1] & 0x7f;
        uint64_t n = 0;

        if (n7 < 126) {
                *ret = n7;
                return 2;
        }
        if (n7 == 126) {
                if (len < 4)
                        return 0;
                n = (uint64_t)buf[2] << 8 | buf[3];
                if (n < 126)
                        return refuse(
                            v, XP_WS_CLOSE_PROTOCOL_ERROR, "length not in its shortest form");
                *ret = n;
                return 4;
        }
        if (len < 10)
                return 0;
        for (int i = 0; i < 8; i++)
                n = n << 8 | buf[2 + i];
        if (n >> 63)
                return refuse(v, XP_WS_CLOSE_PROTOCOL_ERROR, "length with its top bit set");
        if (n <= 0xffff)
                return refuse(v, XP_WS_CLOSE_PROTOCOL_ERROR, "length not in its shortest form");
        *ret = n;
        return 10;
}

int xp_ws_frame_parse(uint8_t *buf,
                      size_t len,
                      bool masked,
                      size_t max_payload,
                      struct xp_ws_frame *ret,
                      struct xp_ws_violation *ret_violation)
{
        struct xp_ws_violation *v = ret_violation;
        uint8_t op, mask[4];
        uint64_t plen = 0;
        size_t hlen;
        int r;

        if (len < 2)
                return 0;
        op = buf[0] & 0x0f;
        if (buf[0] & 0x70)
                return refuse(v, XP_WS_CLOSE_PROTOCOL_ERROR, "reserved bits set");
        if (!opcode_known(op))
                return refuse(v, XP_WS_CLOSE_PROTOCOL_ERROR, "unknown opcode");
        if (!!(buf[1] & 0x80) != masked)
                return refuse(v,
                              XP_WS_CLOSE_PROTOCOL_ERROR,
                              masked ? "a client's frame must be masked"
                                     : "a server's frame must not be masked");
        if (op >= XP_WS_CLOSE && (!(buf[0] & 0x80) || (buf[1] & 0x7f) > XP_WS_CONTROL_MAX))
                return refuse(v,
                              XP_WS_CLOSE_PROTOCOL_ERROR,
                              "a control frame must be whole and at most 125 bytes");
        r = read_length(buf, len, &plen, v);
        if (r <= 0)
                return r;
        if (plen > max_payload)
                return refuse(v, XP_WS_CLOSE_TOO_BIG, "frame too big");
        hlen = (size_t)r + (masked ? 4 : 0);
        if (len < hlen || len - hlen < plen)
                return 0;
        if (masked) {
                memcpy(mask, buf + r, 4);
                xp_ws_mask(buf + hlen, (size_t)plen, mask, 0);
        }
        *ret = (struct xp_ws_frame){
            .fin = buf[0] & 0x80,
            .opcode = op,
            .payload = buf + hlen,
            .len = (size_t)plen,
        };
        return (int)(hlen + plen);
}

size_t xp_ws_frame_header(uint8_t out[static XP_WS_HEADER_MAX],
                          uint8_t opcode,
                          bool fin,
                          uint64_t len,
                          const uint8_t *mask)
{
        size_t n = 2;

        out[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
        if (len < 126) {
                out[1] = (uint8_t)len;
        } else if (len <= 0xffff) {
                out[1] = 126;
                out[2] = (uint8_t)(len >> 8);
                out[3] = (uint8_t)len;
                n = 4;
        } else {
                out[1] = 127;
                for (int i = 0; i < 8; i++)
                        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
                n = 10;
        }
        if (mask) {
                out[1] |= 0x80;
                memcpy(out + n, mask, 4);
                n += 4;
        }
        return n;
}

void xp_ws_mask(uint8_t *data, size_t len, const uint8_t mask[static 4], size_t offset)
{
        for (size_t i = 0; i < len; i++)
                data[i] ^= mask[(offset + i) & 3];
}

/* ---- close -------------------------------------------------------------------------------- */

size_t xp_ws_close_payload(uint16_t code, const char *reason, uint8_t out[static XP_WS_CONTROL_MAX])
{
        size_t full = reason ? strlen(reason) : 0, len = full;

        if (len > XP_WS_CONTROL_MAX - 2)
                len = XP_WS_CONTROL_MAX - 2;
        /* not in the middle of a UTF-8 sequence */
        while (len > 0 && len < full && ((uint8_t)reason[len] & 0xc0) == 0x80)
                len--;
        out[0] = (uint8_t)(code >> 8);
        out[1] = (uint8_t)code;
        if (len)
                memcpy(out + 2, reason, len);
        return len + 2;
}

static bool code_sendable(uint16_t code)
{
        if (code >= 3000 && code <= 4999)
                return true;
        return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011);
}

int xp_ws_close_parse(const uint8_t *payload, size_t len, uint16_t *ret_code)
{
        uint16_t code;

        if (len == 0) {
                *ret_code = 1005;
                return 0;
        }
        if (len == 1)
                return -EPROTO;
        code = (uint16_t)(payload[0] << 8 | payload[1]);
        if (!code_sendable(code) || !xp_utf8_valid((const char *)payload + 2, len - 2))
                return -EPROTO;
        *ret_code = code;
        return 0;
}

/* ---- messages ----------------------------------------------------------------------------- */

static int message_append(struct xp_ws_message *m, const uint8_t *data, size_t len)
{
        if (m->len + len > m->cap) {
                size_t cap = m->cap ? m->cap : 4096;
                uint8_t *p;

                while (cap < m->len + len)
                        cap *= 2;
                if (cap > m->max)
                        cap = m->max;
                p = realloc(m->data, cap ? cap : 1);
                if (!p)
                        return -ENOMEM;
                m->data = p;
                m->cap = cap;
        }
        if (len)
                memcpy(m->data + m->len, data, len);
        m->len += len;
        return 0;
}

int xp_ws_message_add(struct xp_ws_message *m,
                      const struct xp_ws_frame *f,
                      uint8_t *ret_opcode,
                      const uint8_t **ret_data,
                      size_t *ret_len,
                      struct xp_ws_violation *ret_violation)
{
        int r;

        if (f->opcode == XP_WS_CONTINUATION && !m->open)
                return refuse(
                    ret_violation, XP_WS_CLOSE_PROTOCOL_ERROR, "continuation of no message");
        if (f->opcode != XP_WS_CONTINUATION && m->open)
                return refuse(ret_violation,
                              XP_WS_CLOSE_PROTOCOL_ERROR,
                              "a new message before the last one ended");
        if (f->opcode != XP_WS_CONTINUATION) {
                /* a whole message in one frame is handed over as it is, without a copy */
                if (f->fin) {
                        if (f->len > m->max)
                                return refuse(
                                    ret_violation, XP_WS_CLOSE_TOO_BIG, "message too big");
                        *ret_opcode = f->opcode;
                        *ret_data = f->payload;
                        *ret_len = f->len;
                        return 1;
                }
                m->open = true;
                m->opcode = f->opcode;
                m->len = 0;
        }
        if (f->len > m->max - m->len)
                return refuse(ret_violation, XP_WS_CLOSE_TOO_BIG, "message too big");
        r = message_append(m, f->payload, f->len);
        if (r < 0)
                return r;
        if (!f->fin)
                return 0;
        m->open = false;
        *ret_opcode = m->opcode;
        *ret_data = m->data;
        *ret_len = m->len;
        return 1;
}

void xp_ws_message_done(struct xp_ws_message *m)
{
        free(m->data);
        *m = (struct xp_ws_message){.max = m->max};
}
