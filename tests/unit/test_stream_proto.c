/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The streaming protocols' data (src/http/websocket.h, spdy.h, remotecmd.h): the WebSocket
 * handshake, frames and messages, SPDY frames and header blocks both ways, terminal size
 * messages and the Status a remote command ends with.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/remotecmd.h"
#include "xpool/spdy.h"
#include "xpool/strutil.h"
#include "xpool/websocket.h"

static void ws_handshake(void **state)
{
        char accept[XP_WS_ACCEPT_LEN + 1];
        const char *why = NULL;
        static const char *const supported[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", NULL};

        (void)state;
        /* RFC 6455 section 1.3's example */
        assert_int_equal(xp_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", accept), 0);
        assert_string_equal(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_int_equal(xp_ws_accept_key("short", accept), -EINVAL);
        assert_int_equal(
            xp_ws_check_handshake(
                "websocket", "keep-alive, Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==", &why),
            0);
        assert_int_equal(
            xp_ws_check_handshake("h2c", "upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==", &why),
            -EINVAL);
        assert_non_null(strstr(why, "Upgrade"));
        assert_int_equal(
            xp_ws_check_handshake("websocket", "upgrade", "8", "dGhlIHNhbXBsZSBub25jZQ==", &why),
            -EINVAL);
        assert_non_null(strstr(why, "13"));
        assert_string_equal(
            xp_ws_select_protocol("v9.channel.k8s.io, v4.channel.k8s.io,v5.channel.k8s.io",
                                  supported),
            "v4.channel.k8s.io");
        assert_null(xp_ws_select_protocol("channel.k8s.io", supported));
        assert_null(xp_ws_select_protocol(NULL, supported));
}

/* A masked client frame of payload into buf: its length. */
static size_t client_frame(uint8_t *buf, uint8_t op, bool fin, const char *payload, size_t len)
{
        static const uint8_t mask[4] = {1, 2, 3, 4};
        size_t h = xp_ws_frame_header(buf, op, fin, len, mask);

        memcpy(buf + h, payload, len);
        xp_ws_mask(buf + h, len, mask, 0);
        return h + len;
}

static void ws_frames(void **state)
{
        uint8_t buf[70000];
        struct xp_ws_frame f;
        struct xp_ws_violation v = {0};
        size_t n;

        (void)state;
        n = client_frame(buf, XP_WS_BINARY, true, "\x00hello", 6);
        /* incomplete: nothing yet, at every cut */
        for (size_t cut = 0; cut < n; cut++)
                assert_int_equal(xp_ws_frame_parse(buf, cut, true, 1024, &f, &v), 0);
        assert_int_equal(xp_ws_frame_parse(buf, n, true, 1024, &f, &v), (int)n);
        assert_true(f.fin);
        assert_int_equal(f.opcode, XP_WS_BINARY);
        assert_int_equal(f.len, 6);
        assert_memory_equal(f.payload, "\x00hello", 6);
        /* a server must get masked frames */
        n = xp_ws_frame_header(buf, XP_WS_BINARY, true, 3, NULL);
        assert_int_equal(xp_ws_frame_parse(buf, n + 3, true, 1024, &f, &v), -EPROTO);
        assert_int_equal(v.code, XP_WS_CLOSE_PROTOCOL_ERROR);
        /* too big for the limit, before its payload came */
        n = xp_ws_frame_header(buf, XP_WS_BINARY, true, 60000, (const uint8_t[4]){0});
        assert_int_equal(xp_ws_frame_parse(buf, n, true, 1024, &f, &v), -EMSGSIZE);
        assert_int_equal(v.code, XP_WS_CLOSE_TOO_BIG);
        /* a fragmented control frame, reserved bits, a non-minimal length */
        n = client_frame(buf, XP_WS_PING, false, "x", 1);
        assert_int_equal(xp_ws_frame_parse(buf, n, true, 1024, &f, &v), -EPROTO);
        n = client_frame(buf, XP_WS_BINARY, true, "x", 1);
        buf[0] |= 0x40;
        assert_int_equal(xp_ws_frame_parse(buf, n, true, 1024, &f, &v), -EPROTO);
        memcpy(buf,
               (const uint8_t[]){0x82, 0xfe, 0x00, 0x05, 0, 0, 0, 0, 'a', 'b', 'c', 'd', 'e'},
               13);
        assert_int_equal(xp_ws_frame_parse(buf, 13, true, 1024, &f, &v), -EPROTO);
}

static void ws_messages(void **state)
{
        struct xp_ws_message m = {.max = 8};
        struct xp_ws_frame a = {
            .fin = false, .opcode = XP_WS_BINARY, .payload = (uint8_t *)"abc", .len = 3};
        struct xp_ws_frame b = {
            .fin = true, .opcode = XP_WS_CONTINUATION, .payload = (uint8_t *)"de", .len = 2};
        struct xp_ws_frame big = {
            .fin = true, .opcode = XP_WS_CONTINUATION, .payload = (uint8_t *)"123456", .len = 6};
        struct xp_ws_violation v = {0};
        const uint8_t *data;
        size_t len;
        uint8_t op;

        (void)state;
        assert_int_equal(xp_ws_message_add(&m, &b, &op, &data, &len, &v), -EPROTO);
        assert_int_equal(xp_ws_message_add(&m, &a, &op, &data, &len, &v), 0);
        assert_int_equal(xp_ws_message_add(&m, &b, &op, &data, &len, &v), 1);
        assert_int_equal(op, XP_WS_BINARY);
        assert_int_equal(len, 5);
        assert_memory_equal(data, "abcde", 5);
        assert_int_equal(xp_ws_message_add(&m, &a, &op, &data, &len, &v), 0);
        assert_int_equal(xp_ws_message_add(&m, &big, &op, &data, &len, &v), -EMSGSIZE);
        xp_ws_message_done(&m);
}

static void ws_close(void **state)
{
        uint8_t payload[XP_WS_CONTROL_MAX];
        uint16_t code = 0;
        char reason[300];
        size_t n;

        (void)state;
        memset(reason, 'x', sizeof(reason) - 1);
        reason[sizeof(reason) - 1] = '\0';
        n = xp_ws_close_payload(1000, reason, payload);
        assert_int_equal(n, XP_WS_CONTROL_MAX);
        assert_int_equal(xp_ws_close_parse(payload, n, &code), 0);
        assert_int_equal(code, 1000);
        assert_int_equal(xp_ws_close_parse(payload, 0, &code), 0);
        assert_int_equal(code, 1005);
        assert_int_equal(xp_ws_close_parse((const uint8_t *)"\x03\xed", 2, &code),
                         -EPROTO); /* 1005 */
        assert_int_equal(xp_ws_close_parse(payload, 1, &code), -EPROTO);
        assert_false(xp_utf8_valid("\xc0\xaf", 2));
        assert_false(xp_utf8_valid("\xed\xa0\x80", 3));
        assert_true(xp_utf8_valid("gr\xc3\xbc\xc3\x9f", 6));
}

static void spdy_roundtrip(void **state)
{
        struct xp_spdy_zlib client, server;
        struct xp_spdy_headers h = {0};
        struct xp_spdy_frame f;
        const char *names[] = {"streamtype", "port", "requestid"};
        const char *values[] = {"data", "8080", "0"};
        const char *why = NULL;
        uint8_t *frame = NULL, small[16];
        size_t len = 0;

        (void)state;
        assert_int_equal(xp_spdy_zlib_init(&client), 0);
        assert_int_equal(xp_spdy_zlib_init(&server), 0);
        /* two blocks: the second depends on the first's compression state */
        for (int round = 0; round < 2; round++) {
                assert_int_equal(
                    xp_spdy_syn_stream(
                        &client, 1 + 2 * (uint32_t)round, 0, names, values, 3, &frame, &len),
                    0);
                assert_int_equal(xp_spdy_frame_parse(frame, len, XP_SPDY_FRAME_MAX, &f, &why),
                                 (int)len);
                assert_int_equal(f.type, XP_SPDY_SYN_STREAM);
                assert_int_equal(f.stream_id, 1 + 2 * round);
                assert_int_equal(xp_spdy_headers_decode(&server, f.data, f.len, &h, &why), 0);
                assert_string_equal(xp_spdy_headers_get(&h, "streamType"), "data");
                assert_string_equal(xp_spdy_headers_get(&h, "port"), "8080");
                xp_spdy_headers_done(&h);
                free(frame);
        }
        /* fixed-size control frames of the wrong size, another version */
        xp_spdy_ping(small, 1);
        assert_int_equal(xp_spdy_frame_parse(small, 12, XP_SPDY_FRAME_MAX, &f, &why), 12);
        assert_int_equal(f.value, 1);
        small[7] = 5;
        assert_int_equal(xp_spdy_frame_parse(small, 13, XP_SPDY_FRAME_MAX, &f, &why), -EPROTO);
        xp_spdy_ping(small, 1);
        small[1] = 2;
        assert_int_equal(xp_spdy_frame_parse(small, 12, XP_SPDY_FRAME_MAX, &f, &why), -EPROTO);
        /* a data frame longer than the limit */
        xp_spdy_data_header(small, 1, 0, 5000);
        assert_int_equal(xp_spdy_frame_parse(small, 8, 4096, &f, &why), -EMSGSIZE);
        /* garbage as a header block: refused, never read past */
        assert_int_not_equal(
            xp_spdy_headers_decode(&server, (const uint8_t *)"garbage", 7, &h, &why), 0);
        xp_spdy_headers_done(&h);
        xp_spdy_zlib_done(&client);
        xp_spdy_zlib_done(&server);
}

static void remotecmd(void **state)
{
        const char *why = NULL;
        char big[400];
        char *argv[] = {"sh", "-c", "exit 3", NULL};
        char *s;
        uint16_t w = 0, h = 0;

        (void)state;
        assert_int_equal(
            xp_rc_parse_resize((const uint8_t *)"{\"Width\":80,\"Height\":24}", 24, &w, &h, &why),
            0);
        assert_int_equal(w, 80);
        assert_int_equal(h, 24);
        assert_int_equal(
            xp_rc_parse_resize((const uint8_t *)" {\"height\":5,\"width\":7} ", 24, &w, &h, &why),
            0);
        assert_int_equal(w, 7);
        assert_int_equal(h, 5);
        assert_int_equal(xp_rc_parse_resize((const uint8_t *)"{\"Width\":80}", 12, &w, &h, &why),
                         -EINVAL);
        assert_int_equal(
            xp_rc_parse_resize((const uint8_t *)"{\"Width\":70000,\"Height\":1}", 26, &w, &h, &why),
            -EINVAL);
        memset(big, ' ', sizeof(big));
        assert_int_equal(xp_rc_parse_resize((const uint8_t *)big, sizeof(big), &w, &h, &why),
                         -EINVAL);
        assert_non_null(strstr(why, "256"));
        assert_int_equal(xp_rc_channel_from_stream_type("resize"), XP_RC_RESIZE);
        assert_int_equal(xp_rc_channel_from_stream_type("bogus"), -EINVAL);
        s = xp_rc_status_exit(argv, 0);
        assert_string_equal(s, "{\"metadata\":{},\"status\":\"Success\"}");
        free(s);
        s = xp_rc_status_exit(argv, 3);
        assert_non_null(strstr(s, "\"reason\":\"NonZeroExitCode\""));
        assert_non_null(strstr(s, "error executing command [sh -c exit 3], exit code 3"));
        assert_non_null(strstr(s, "{\"reason\":\"ExitCode\",\"message\":\"3\"}"));
        free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(ws_handshake),
            cmocka_unit_test(ws_frames),
            cmocka_unit_test(ws_messages),
            cmocka_unit_test(ws_close),
            cmocka_unit_test(spdy_roundtrip),
            cmocka_unit_test(remotecmd),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
