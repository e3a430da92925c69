/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the WebSocket frame parser and message assembly (src/http/websocket.h) as the agent's
 * streaming endpoint runs them on a client's bytes: frames parsed one after the other from the
 * input, data frames put together into messages, close payloads read. Checks: a parsed frame
 * lies inside the input and within the limit; a refusal names a close code; a message never
 * exceeds its maximum.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/websocket.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PAYLOAD 4096

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint8_t *buf = malloc(size ? size : 1);
        struct xp_ws_message m = {.max = 2 * MAX_PAYLOAD};
        size_t off = 0;

        if (!buf)
                return 0;
        memcpy(buf, data, size);
        while (off < size) {
                struct xp_ws_frame f;
                struct xp_ws_violation v = {0};
                const uint8_t *msg;
                size_t len;
                uint8_t op;
                int n = xp_ws_frame_parse(buf + off, size - off, true, MAX_PAYLOAD, &f, &v);

                if (n <= 0) {
                        check(n == 0 ||
                              ((n == -EPROTO || n == -EMSGSIZE) && v.code >= 1000 && v.reason));
                        break;
                }
                check((size_t)n <= size - off && f.len <= MAX_PAYLOAD);
                check(f.payload >= buf + off && f.payload + f.len <= buf + off + (size_t)n);
                off += (size_t)n;
                if (f.opcode == XP_WS_CLOSE) {
                        uint16_t code;

                        if (xp_ws_close_parse(f.payload, f.len, &code) == 0)
                                check(code >= 1000);
                        continue;
                }
                if (f.opcode >= XP_WS_CLOSE)
                        continue;
                n = xp_ws_message_add(&m, &f, &op, &msg, &len, &v);
                if (n == 1)
                        check(len <= m.max && (op == XP_WS_TEXT || op == XP_WS_BINARY));
                if (n < 0 && n != -ENOMEM)
                        break;
        }
        xp_ws_message_done(&m);
        free(buf);
        return 0;
}
