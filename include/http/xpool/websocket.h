/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The WebSocket protocol (RFC 6455) as the agent's streaming endpoint speaks it to kubectl
 * (docs/agent.md, "Exec, attach, port-forward"): the opening handshake's checks and
 * Sec-WebSocket-Accept, frames parsed from bytes as they arrive and written with bounded sizes,
 * fragmented messages put together, close codes. Pure functions over buffers, no I/O:
 * tests/fuzz/fuzz_websocket.c runs the parser on arbitrary bytes.
 *
 * Both sides are here: a server reads masked frames and writes unmasked ones, a client (the
 * tests' own) the other way round.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XP_WS_ACCEPT_LEN    28  /* base64 of a SHA-1 */
#define XP_WS_HEADER_MAX    14  /* the longest frame header: 2 + 8 (length) + 4 (mask) */
#define XP_WS_CONTROL_MAX   125 /* a control frame's payload */
#define XP_WS_PROTOCOLS_MAX 16  /* subprotocols a client may offer */

enum xp_ws_opcode {
        XP_WS_CONTINUATION = 0x0,
        XP_WS_TEXT = 0x1,
        XP_WS_BINARY = 0x2,
        XP_WS_CLOSE = 0x8,
        XP_WS_PING = 0x9,
        XP_WS_PONG = 0xa,
};

/* The close codes this code sends (RFC 6455 section 7.4.1). */
enum xp_ws_close_code {
        XP_WS_CLOSE_NORMAL = 1000,
        XP_WS_CLOSE_GOING_AWAY = 1001,
        XP_WS_CLOSE_PROTOCOL_ERROR = 1002,
        XP_WS_CLOSE_UNSUPPORTED_DATA = 1003,
        XP_WS_CLOSE_INVALID_DATA = 1007,
        XP_WS_CLOSE_POLICY = 1008,
        XP_WS_CLOSE_TOO_BIG = 1009,
        XP_WS_CLOSE_INTERNAL_ERROR = 1011,
};

/* Why a frame or a message is refused: the close code to answer with and a static reason. */
struct xp_ws_violation {
        uint16_t code;
        const char *reason;
};

/*
 * The opening handshake of a server (RFC 6455 section 4.2.1), from the request's header values
 * (NULL when absent): Upgrade holds the token "websocket", Connection the token "upgrade"
 * (case-insensitive, in comma-separated lists), Sec-WebSocket-Version is 13, and
 * Sec-WebSocket-Key the base64 of 16 bytes. 0, or -EINVAL with *ret_why (static) saying what.
 */
int xp_ws_check_handshake(const char *upgrade,
                          const char *connection,
                          const char *version,
                          const char *key,
                          const char **ret_why);

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key. 0, -EINVAL (not 16 bytes of base64), -EIO.
 */
int xp_ws_accept_key(const char *key, char ret[static XP_WS_ACCEPT_LEN + 1]);

/*
 * The subprotocol to answer with: the first of the client's offer (Sec-WebSocket-Protocol, a
 * comma-separated list; the values of several such headers joined with ',') that supported
 * (NULL-terminated) holds. NULL when none does or the offer is empty; borrowed from supported.
 */
const char *xp_ws_select_protocol(const char *offer, const char *const *supported);

/* Whether list (comma-separated, blanks around items) holds token, compared case-insensitively. */
bool xp_ws_has_token(const char *list, const char *token);

/* One frame as parsed: its payload points into the parsed buffer, unmasked in place. */
struct xp_ws_frame {
        bool fin;
        uint8_t opcode;
        uint8_t *payload;
        size_t len;
};

/*
 * Parses the frame at buf[0..len): masked says what the peer must do (a server reads masked
 * frames). Refuses (-EPROTO with ret_violation filled): reserved bits, unknown opcodes, a
 * control frame that is fragmented or longer than 125 bytes, a mask that is missing or not
 * expected, a length not in its shortest form or with its top bit set; a payload over
 * max_payload is -EMSGSIZE (1009). Returns the frame's size with *ret filled (its payload
 * unmasked in buf), or 0 while the frame is incomplete (nothing changed).
 */
int xp_ws_frame_parse(uint8_t *buf,
                      size_t len,
                      bool masked,
                      size_t max_payload,
                      struct xp_ws_frame *ret,
                      struct xp_ws_violation *ret_violation);

/*
 * A frame's header for a payload of len bytes: masked with mask (4 bytes; NULL: not masked).
 * Returns the header's length (at most XP_WS_HEADER_MAX). The caller masks the payload with
 * xp_ws_mask().
 */
size_t xp_ws_frame_header(uint8_t out[static XP_WS_HEADER_MAX],
                          uint8_t opcode,
                          bool fin,
                          uint64_t len,
                          const uint8_t *mask);

/* XORs data with mask as if data started offset bytes into the payload. */
void xp_ws_mask(uint8_t *data, size_t len, const uint8_t mask[static 4], size_t offset);

/*
 * A close frame's payload: the code in network order and the reason, cut at a character
 * boundary to fit 125 bytes. Returns its length.
 */
size_t
xp_ws_close_payload(uint16_t code, const char *reason, uint8_t out[static XP_WS_CONTROL_MAX]);

/*
 * Reads a received close frame's payload: *ret_code is 1005 (no status) for an empty one.
 * -EPROTO for one byte, a code that may not be sent (RFC 6455 section 7.4), or a reason that is
 * not UTF-8.
 */
int xp_ws_close_parse(const uint8_t *payload, size_t len, uint16_t *ret_code);

/*
 * Puts fragmented data messages together. Zero-initialise, set max (the largest message), feed
 * each data frame (text, binary, continuation) in order; control frames do not pass here.
 * xp_ws_message_done() frees it.
 */
struct xp_ws_message {
        size_t max;
        uint8_t opcode; /* of the message being put together: text or binary */
        bool open;      /* a message is being put together */
        uint8_t *data;
        size_t len, cap;
};

/*
 * Adds a data frame. 1 when a message is complete: *ret_data and *ret_len are the whole
 * message, borrowed until the next call, *ret_opcode its opcode. 0 when more frames are to
 * come. -EPROTO with ret_violation for a continuation with no message open or a new message
 * while one is open, -EMSGSIZE when the message grows past max, -ENOMEM.
 */
int xp_ws_message_add(struct xp_ws_message *m,
                      const struct xp_ws_frame *frame,
                      uint8_t *ret_opcode,
                      const uint8_t **ret_data,
                      size_t *ret_len,
                      struct xp_ws_violation *ret_violation);
void xp_ws_message_done(struct xp_ws_message *m);
