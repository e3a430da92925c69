/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * SPDY/3 framing, as kubectl speaks it for port-forward (always: over a WebSocket tunnel or on
 * its own) and for exec and attach when a WebSocket cannot be had (docs/agent.md): frames parsed
 * from bytes as they arrive, frames written, and the header blocks of SYN_STREAM and SYN_REPLY,
 * compressed with zlib and the protocol's dictionary in one stream per direction and connection.
 * Pure functions over buffers (the header codec keeps its zlib state): tests/fuzz/fuzz_spdy.c runs
 * them on arbitrary bytes.
 *
 * What kubectl's SPDY library (moby/spdystream) needs and no more: no flow control (it neither
 * sends nor honours WINDOW_UPDATE), no server push, no priorities.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#define XP_SPDY_VERSION       3
#define XP_SPDY_HEADER_LEN    8
#define XP_SPDY_FRAME_MAX     (1u << 20) /* the longest frame accepted (the protocol allows 16 MiB) */
#define XP_SPDY_HEADERS_MAX   32         /* name/value pairs of a header block */
#define XP_SPDY_HEADERS_BYTES (16 * 1024) /* a header block, decompressed */

enum xp_spdy_type {
        XP_SPDY_DATA = 0, /* not a control frame */
        XP_SPDY_SYN_STREAM = 1,
        XP_SPDY_SYN_REPLY = 2,
        XP_SPDY_RST_STREAM = 3,
        XP_SPDY_SETTINGS = 4,
        XP_SPDY_PING = 6,
        XP_SPDY_GOAWAY = 7,
        XP_SPDY_HEADERS = 8,
        XP_SPDY_WINDOW_UPDATE = 9,
};

#define XP_SPDY_FLAG_FIN            0x01
#define XP_SPDY_FLAG_UNIDIRECTIONAL 0x02

/* RST_STREAM's status codes */
enum xp_spdy_rst {
        XP_SPDY_RST_PROTOCOL_ERROR = 1,
        XP_SPDY_RST_INVALID_STREAM = 2,
        XP_SPDY_RST_REFUSED_STREAM = 3,
        XP_SPDY_RST_CANCEL = 5,
        XP_SPDY_RST_INTERNAL_ERROR = 6,
};

/* GOAWAY's status codes */
enum xp_spdy_goaway {
        XP_SPDY_GOAWAY_OK = 0,
        XP_SPDY_GOAWAY_PROTOCOL_ERROR = 1,
        XP_SPDY_GOAWAY_INTERNAL_ERROR = 2,
};

/* One frame as parsed; data points into the parsed buffer. */
struct xp_spdy_frame {
        uint16_t type; /* enum xp_spdy_type; a control type this code does not know is kept */
        uint8_t flags;
        uint32_t stream_id;  /* data, SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE */
        uint32_t value;      /* RST_STREAM and GOAWAY: the status; PING: the id; GOAWAY: the last
                                good stream in stream_id; WINDOW_UPDATE: the delta */
        const uint8_t *data; /* a data frame's payload; the compressed header block of SYN_STREAM,
                                SYN_REPLY and HEADERS */
        size_t len;
};

/*
 * Parses the frame at buf[0..len). Returns the frame's size with *ret filled, 0 while it is
 * incomplete, -EMSGSIZE for a frame longer than max (at most XP_SPDY_FRAME_MAX), -EPROTO for a
 * control frame of another version, a known control frame of the wrong length, or a stream id
 * of 0 where one is needed; *ret_why (static) then says what.
 */
int xp_spdy_frame_parse(
    const uint8_t *buf, size_t len, size_t max, struct xp_spdy_frame *ret, const char **ret_why);

/* The 8-byte header of a data frame of len bytes (at most XP_SPDY_FRAME_MAX). */
void xp_spdy_data_header(uint8_t out[static XP_SPDY_HEADER_LEN],
                         uint32_t stream_id,
                         uint8_t flags,
                         size_t len);
/* A whole RST_STREAM frame. */
void xp_spdy_rst_stream(uint8_t out[static 16], uint32_t stream_id, uint32_t status);
/* A whole PING frame: the answer to one is the same frame. */
void xp_spdy_ping(uint8_t out[static 12], uint32_t id);
/* A whole GOAWAY frame. */
void xp_spdy_goaway(uint8_t out[static 16], uint32_t last_good_stream, uint32_t status);

/* A header as decoded: name lowercase as SPDY/3 requires; several values are joined by NUL. */
struct xp_spdy_header {
        char *name;
        char *value;
        size_t value_len;
};

struct xp_spdy_headers {
        struct xp_spdy_header *items;
        size_t n;
};

void xp_spdy_headers_done(struct xp_spdy_headers *h);
/* The first value of name (compared case-insensitively), NUL-terminated; NULL when absent. */
const char *xp_spdy_headers_get(const struct xp_spdy_headers *h, const char *name);

/*
 * The zlib streams of one connection's header blocks: one to read the peer's, one to write ours.
 * Both use the SPDY/3 dictionary (xp_spdy_dictionary()). xp_spdy_zlib_init() -ENOMEM;
 * xp_spdy_zlib_done() frees them.
 */
struct xp_spdy_zlib {
        z_stream in, out;
        bool in_ready, out_ready;
};

int xp_spdy_zlib_init(struct xp_spdy_zlib *z);
void xp_spdy_zlib_done(struct xp_spdy_zlib *z);

/*
 * Decodes a received header block (the frame's data). Its decompressed size is bounded by
 * XP_SPDY_HEADERS_BYTES and its pairs by XP_SPDY_HEADERS_MAX. -EPROTO with *ret_why for a block
 * that does not inflate, does not parse, has an empty or uppercase name; -EMSGSIZE over the
 * limits; -ENOMEM. A block that fails leaves the stream unusable: the connection must end.
 */
int xp_spdy_headers_decode(struct xp_spdy_zlib *z,
                           const uint8_t *block,
                           size_t len,
                           struct xp_spdy_headers *ret,
                           const char **ret_why);

/*
 * A whole SYN_REPLY frame for stream_id with the n headers names[i]: values[i] (names
 * lowercase), compressed in the connection's outgoing stream. *ret (caller frees) and *ret_len.
 * -ENOMEM, -EIO.
 */
int xp_spdy_syn_reply(struct xp_spdy_zlib *z,
                      uint32_t stream_id,
                      uint8_t flags,
                      const char *const *names,
                      const char *const *values,
                      size_t n,
                      uint8_t **ret,
                      size_t *ret_len);

/*
 * A whole SYN_STREAM frame (the tests' client side): stream_id, flags, the headers compressed in
 * z's outgoing stream. Same as xp_spdy_syn_reply() otherwise.
 */
int xp_spdy_syn_stream(struct xp_spdy_zlib *z,
                       uint32_t stream_id,
                       uint8_t flags,
                       const char *const *names,
                       const char *const *values,
                       size_t n,
                       uint8_t **ret,
                       size_t *ret_len);

/* The SPDY/3 header compression dictionary (section 2.6.10.1 of the protocol draft). */
const uint8_t *xp_spdy_dictionary(size_t *ret_len);
