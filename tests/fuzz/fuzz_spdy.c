/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the SPDY/3 frame parser and header-block decoder (src/http/spdy.h) as the agent runs
 * them on kubectl's port-forward and exec streams: frames one after the other from the input,
 * the header blocks of SYN_STREAM, SYN_REPLY and HEADERS through one zlib stream, as on a
 * connection. Checks: a parsed frame lies inside the input and within the limit; decoded headers
 * stay within their bounds and have lowercase, non-empty names.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/spdy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_spdy_zlib z;
        size_t off = 0;

        if (xp_spdy_zlib_init(&z) < 0)
                return 0;
        while (off < size) {
                struct xp_spdy_frame f;
                struct xp_spdy_headers h = {0};
                const char *why = NULL;
                int n = xp_spdy_frame_parse(data + off, size - off, 65536, &f, &why);

                if (n <= 0) {
                        check(n == 0 || ((n == -EPROTO || n == -EMSGSIZE) && why));
                        break;
                }
                check((size_t)n <= size - off && (size_t)n <= 65536 + XP_SPDY_HEADER_LEN);
                off += (size_t)n;
                if (f.type != XP_SPDY_SYN_STREAM && f.type != XP_SPDY_SYN_REPLY &&
                    f.type != XP_SPDY_HEADERS)
                        continue;
                if (xp_spdy_headers_decode(&z, f.data, f.len, &h, &why) < 0) {
                        xp_spdy_headers_done(&h);
                        break; /* the compression state is gone: the connection would end */
                }
                check(h.n <= XP_SPDY_HEADERS_MAX);
                for (size_t i = 0; i < h.n; i++) {
                        check(h.items[i].name[0] != '\0');
                        for (const char *p = h.items[i].name; *p; p++)
                                check(!(*p >= 'A' && *p <= 'Z'));
                }
                xp_spdy_headers_done(&h);
        }
        xp_spdy_zlib_done(&z);
        return 0;
}
