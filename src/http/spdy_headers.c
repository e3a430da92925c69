/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SPDY/3 header blocks (spdy.h): a 32-bit count of pairs, then each name and value with a 32-bit
 * length, compressed with zlib primed with the protocol's dictionary. Each direction of a
 * connection is one zlib stream, flushed (Z_SYNC_FLUSH) at the end of every block, so a block can
 * only be read after every block before it: the decoder keeps its stream.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/macro.h"
#include "xpool/spdy.h"

int xp_spdy_zlib_init(struct xp_spdy_zlib *z)
{
        size_t dict_len;
        const uint8_t *dict = xp_spdy_dictionary(&dict_len);

        *z = (struct xp_spdy_zlib){0};
        if (inflateInit(&z->in) != Z_OK)
                return -ENOMEM;
        z->in_ready = true;
        if (deflateInit(&z->out, Z_DEFAULT_COMPRESSION) != Z_OK) {
                xp_spdy_zlib_done(z);
                return -ENOMEM;
        }
        z->out_ready = true;
        if (deflateSetDictionary(&z->out, dict, (uInt)dict_len) != Z_OK) {
                xp_spdy_zlib_done(z);
                return -ENOMEM;
        }
        return 0;
}

void xp_spdy_zlib_done(struct xp_spdy_zlib *z)
{
        if (z->in_ready)
                inflateEnd(&z->in);
        if (z->out_ready)
                deflateEnd(&z->out);
        z->in_ready = z->out_ready = false;
}

void xp_spdy_headers_done(struct xp_spdy_headers *h)
{
        for (size_t i = 0; i < h->n; i++) {
                free(h->items[i].name);
                free(h->items[i].value);
        }
        free(h->items);
        *h = (struct xp_spdy_headers){0};
}

const char *xp_spdy_headers_get(const struct xp_spdy_headers *h, const char *name)
{
        for (size_t i = 0; i < h->n; i++)
                if (strcasecmp(h->items[i].name, name) == 0)
                        return h->items[i].value;
        return NULL;
}

/* Inflates block into out (XP_SPDY_HEADERS_BYTES): the decompressed length, or -errno. */
static int inflate_block(
    struct xp_spdy_zlib *z, const uint8_t *block, size_t len, uint8_t *out, const char **why)
{
        size_t dict_len;
        const uint8_t *dict = xp_spdy_dictionary(&dict_len);
        int zr;

        z->in.next_in = (Bytef *)block;
        z->in.avail_in = (uInt)len;
        z->in.next_out = out;
        z->in.avail_out = XP_SPDY_HEADERS_BYTES;
        for (;;) {
                zr = inflate(&z->in, Z_SYNC_FLUSH);
                if (zr == Z_NEED_DICT) {
                        if (inflateSetDictionary(&z->in, dict, (uInt)dict_len) != Z_OK) {
                                *why = "the header block was compressed with another dictionary";
                                return -EPROTO;
                        }
                        continue;
                }
                if (zr == Z_BUF_ERROR && z->in.avail_in == 0)
                        break; /* all of the block is in, nothing more to flush */
                if (zr != Z_OK) {
                        *why = zr == Z_MEM_ERROR ? "out of memory"
                                                 : "the header block does not inflate";
                        return zr == Z_MEM_ERROR ? -ENOMEM : -EPROTO;
                }
                if (z->in.avail_in == 0 && z->in.avail_out > 0)
                        break;
                if (z->in.avail_out == 0) {
                        *why = "the header block inflates past the limit";
                        return -EMSGSIZE;
                }
        }
        return (int)(XP_SPDY_HEADERS_BYTES - z->in.avail_out);
}

static uint32_t be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The next length-prefixed string of raw[*off..len): its length and start, or -EPROTO. */
static int
take_string(const uint8_t *raw, size_t len, size_t *off, const uint8_t **ret, size_t *ret_len)
{
        uint32_t n;

        if (len - *off < 4)
                return -EPROTO;
        n = be32(raw + *off);
        *off += 4;
        if (n > len - *off)
                return -EPROTO;
        *ret = raw + *off;
        *ret_len = n;
        *off += n;
        return 0;
}

static int parse_pairs(const uint8_t *raw, size_t len, struct xp_spdy_headers *h, const char **why)
{
        size_t off = 0;
        uint32_t n;

        if (len < 4)
                return *why = "header block shorter than its count", -EPROTO;
        n = be32(raw);
        off = 4;
        if (n > XP_SPDY_HEADERS_MAX)
                return *why = "too many headers", -EMSGSIZE;
        h->items = calloc(n ? n : 1, sizeof(*h->items));
        if (!h->items)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                const uint8_t *name, *value;
                size_t name_len, value_len;

                if (take_string(raw, len, &off, &name, &name_len) < 0 ||
                    take_string(raw, len, &off, &value, &value_len) < 0)
                        return *why = "header block cut short", -EPROTO;
                if (name_len == 0)
                        return *why = "empty header name", -EPROTO;
                for (size_t k = 0; k < name_len; k++)
                        if (name[k] >= 'A' && name[k] <= 'Z')
                                return *why = "uppercase header name", -EPROTO;
                h->items[i].name = strndup((const char *)name, name_len);
                h->items[i].value = malloc(value_len + 1);
                if (!h->items[i].name || !h->items[i].value) {
                        h->n = i + 1;
                        return -ENOMEM;
                }
                memcpy(h->items[i].value, value, value_len);
                h->items[i].value[value_len] = '\0';
                h->items[i].value_len = value_len;
                h->n = i + 1;
        }
        if (off != len)
                return *why = "bytes after the last header", -EPROTO;
        return 0;
}

int xp_spdy_headers_decode(struct xp_spdy_zlib *z,
                           const uint8_t *block,
                           size_t len,
                           struct xp_spdy_headers *ret,
                           const char **ret_why)
{
        _cleanup_free_ uint8_t *raw = malloc(XP_SPDY_HEADERS_BYTES);
        struct xp_spdy_headers h = {0};
        int n, r;

        if (!raw)
                return -ENOMEM;
        n = inflate_block(z, block, len, raw, ret_why);
        if (n < 0)
                return n;
        r = parse_pairs(raw, (size_t)n, &h, ret_why);
        if (r < 0) {
                xp_spdy_headers_done(&h);
                return r;
        }
        *ret = h;
        return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

/* The uncompressed block: caller frees; NULL on -ENOMEM. */
static uint8_t *
raw_block(const char *const *names, const char *const *values, size_t n, size_t *ret_len)
{
        size_t len = 4, off = 4;
        uint8_t *raw;

        for (size_t i = 0; i < n; i++)
                len += 8 + strlen(names[i]) + strlen(values[i]);
        raw = malloc(len);
        if (!raw)
                return NULL;
        put32(raw, (uint32_t)n);
        for (size_t i = 0; i < n; i++) {
                const char *s[2] = {names[i], values[i]};

                for (int k = 0; k < 2; k++) {
                        size_t sl = strlen(s[k]);

                        put32(raw + off, (uint32_t)sl);
                        memcpy(raw + off + 4, s[k], sl);
                        off += 4 + sl;
                }
        }
        *ret_len = len;
        return raw;
}

/* A control frame of type with prefix (the stream id and what follows it) and n headers. */
static int header_frame(struct xp_spdy_zlib *z,
                        uint16_t type,
                        uint8_t flags,
                        const uint8_t *prefix,
                        size_t prefix_len,
                        const char *const *names,
                        const char *const *values,
                        size_t n,
                        uint8_t **ret,
                        size_t *ret_len)
{
        size_t raw_len = 0, cap, body;
        _cleanup_free_ uint8_t *raw = raw_block(names, values, n, &raw_len);
        uint8_t *frame;

        if (!raw)
                return -ENOMEM;
        cap = XP_SPDY_HEADER_LEN + prefix_len + deflateBound(&z->out, (uLong)raw_len) + 64;
        frame = malloc(cap);
        if (!frame)
                return -ENOMEM;
        memcpy(frame + XP_SPDY_HEADER_LEN, prefix, prefix_len);
        z->out.next_in = raw;
        z->out.avail_in = (uInt)raw_len;
        z->out.next_out = frame + XP_SPDY_HEADER_LEN + prefix_len;
        z->out.avail_out = (uInt)(cap - XP_SPDY_HEADER_LEN - prefix_len);
        if (deflate(&z->out, Z_SYNC_FLUSH) != Z_OK || z->out.avail_in != 0 ||
            z->out.avail_out == 0) {
                free(frame);
                return -EIO;
        }
        body = cap - XP_SPDY_HEADER_LEN - z->out.avail_out;
        frame[0] = 0x80;
        frame[1] = XP_SPDY_VERSION;
        frame[2] = (uint8_t)(type >> 8);
        frame[3] = (uint8_t)type;
        put32(frame + 4, (uint32_t)body);
        frame[4] = flags;
        *ret = frame;
        *ret_len = XP_SPDY_HEADER_LEN + body;
        return 0;
}

int xp_spdy_syn_reply(struct xp_spdy_zlib *z,
                      uint32_t stream_id,
                      uint8_t flags,
                      const char *const *names,
                      const char *const *values,
                      size_t n,
                      uint8_t **ret,
                      size_t *ret_len)
{
        uint8_t prefix[4];

        put32(prefix, stream_id & 0x7fffffff);
        return header_frame(
            z, XP_SPDY_SYN_REPLY, flags, prefix, sizeof(prefix), names, values, n, ret, ret_len);
}

int xp_spdy_syn_stream(struct xp_spdy_zlib *z,
                       uint32_t stream_id,
                       uint8_t flags,
                       const char *const *names,
                       const char *const *values,
                       size_t n,
                       uint8_t **ret,
                       size_t *ret_len)
{
        uint8_t prefix[10] = {0};

        put32(prefix, stream_id & 0x7fffffff);
        return header_frame(
            z, XP_SPDY_SYN_STREAM, flags, prefix, sizeof(prefix), names, values, n, ret, ret_len);
}
