/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's side of a streaming connection (src/agent/stream_conn.c) over a socketpair: a pong
 * goes out at the next frame boundary rather than behind every queued frame (kubectl gives up
 * when no pong comes within seconds), and only the latest of several pings waiting is answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/stream_internal.h"
#include "xpool/websocket.h"

#define DATA_FRAMES 3
#define DATA_LEN    (300 * 1024) /* more than a socketpair holds: the first send stops inside */
#define ROUNDS_MAX  10000

/* A client's ping (masked, as a client must send it) written to the client's end. */
static void client_ping(int fd, const char *payload)
{
        static const uint8_t mask[4] = {1, 2, 3, 4};
        uint8_t frame[XP_WS_HEADER_MAX + 125];
        size_t len = strlen(payload);
        size_t hlen = xp_ws_frame_header(frame, XP_WS_PING, true, len, mask);

        memcpy(frame + hlen, payload, len);
        xp_ws_mask(frame + hlen, len, mask, 0);
        assert_int_equal(write(fd, frame, hlen + len), (ssize_t)(hlen + len));
}

/* Flushes c while the client reads everything into *ret (bounded in rounds). */
static size_t drain(struct sconn *c, int client, uint8_t *buf, size_t cap)
{
        size_t got = 0;

        for (int i = 0; i < ROUNDS_MAX && (sconn_pending(c) > 0 || got == 0); i++) {
                ssize_t n;

                assert_int_equal(sconn_flush(c), 0);
                n = recv(client, buf + got, cap - got, MSG_DONTWAIT);
                if (n > 0)
                        got += (size_t)n;
        }
        for (ssize_t n; (n = recv(client, buf + got, cap - got, MSG_DONTWAIT)) > 0;)
                got += (size_t)n;
        assert_int_equal(sconn_pending(c), 0);
        return got;
}

/* The opcodes of the frames in buf, in order, into ops; their count. */
static size_t frame_opcodes(uint8_t *buf, size_t len, uint8_t *ops, size_t max, char *pong)
{
        size_t n = 0, off = 0;

        while (off < len && n < max) {
                struct xp_ws_frame f;
                struct xp_ws_violation v = {0};
                int size = xp_ws_frame_parse(buf + off, len - off, false, SIZE_MAX, &f, &v);

                assert_true(size > 0);
                if (f.opcode == XP_WS_PONG && pong) {
                        memcpy(pong, f.payload, f.len);
                        pong[f.len] = '\0';
                }
                ops[n++] = f.opcode;
                off += (size_t)size;
        }
        assert_int_equal(off, len);
        return n;
}

struct pair {
        struct sconn conn;
        int client;
        uint8_t *data, *received;
};

static int pair_setup(void **state)
{
        struct pair *p = calloc(1, sizeof(*p));
        int fds[2];

        assert_non_null(p);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
        fcntl(fds[0], F_SETFL, O_NONBLOCK);
        assert_int_equal(sconn_init(&p->conn, fds[0], SCONN_WS, NULL, 0), 0);
        p->client = fds[1];
        p->data = calloc(1, DATA_LEN);
        p->received = malloc(DATA_FRAMES * (DATA_LEN + 64) + 1024);
        assert_non_null(p->data);
        assert_non_null(p->received);
        *state = p;
        return 0;
}

static int pair_teardown(void **state)
{
        struct pair *p = *state;

        close(p->conn.fd);
        close(p->client);
        sconn_done(&p->conn);
        free(p->data);
        free(p->received);
        free(p);
        return 0;
}

/* Queued output, a ping arrives while the first frame is half sent: the pong is the 2nd frame. */
static void pong_goes_at_the_next_frame_boundary(void **state)
{
        struct pair *p = *state;
        const uint8_t *msg;
        uint8_t ops[16];
        char pong[126] = "";
        size_t len, n;

        for (int i = 0; i < DATA_FRAMES; i++)
                assert_int_equal(sconn_ws_send(&p->conn, 1, p->data, DATA_LEN), 0);
        assert_int_equal(sconn_flush(&p->conn), 0);
        assert_true(sconn_pending(&p->conn) > (DATA_FRAMES - 1) * (size_t)DATA_LEN);
        client_ping(p->client, "hb-1");
        assert_int_equal(sconn_fill(&p->conn), 0);
        assert_int_equal(sconn_ws_next(&p->conn, &msg, &len), 0);
        n = frame_opcodes(
            p->received,
            drain(&p->conn, p->client, p->received, DATA_FRAMES * (DATA_LEN + 64) + 1024),
            ops,
            16,
            pong);
        assert_int_equal(n, DATA_FRAMES + 1);
        assert_int_equal(ops[0], XP_WS_BINARY);
        assert_int_equal(ops[1], XP_WS_PONG);
        assert_int_equal(ops[2], XP_WS_BINARY);
        assert_int_equal(ops[3], XP_WS_BINARY);
        assert_string_equal(pong, "hb-1");
}

/* Two pings before anything was sent: one pong, for the latest. */
static void only_the_latest_ping_is_answered(void **state)
{
        struct pair *p = *state;
        const uint8_t *msg;
        uint8_t ops[16];
        char pong[126] = "";
        size_t len, n;

        client_ping(p->client, "first");
        client_ping(p->client, "second");
        assert_int_equal(sconn_fill(&p->conn), 0);
        assert_int_equal(sconn_ws_next(&p->conn, &msg, &len), 0);
        assert_int_equal(sconn_ws_send(&p->conn, 1, "x", 1), 0);
        n = frame_opcodes(
            p->received, drain(&p->conn, p->client, p->received, 4096), ops, 16, pong);
        assert_int_equal(n, 2);
        assert_int_equal(ops[0], XP_WS_PONG);
        assert_int_equal(ops[1], XP_WS_BINARY);
        assert_string_equal(pong, "second");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(
                pong_goes_at_the_next_frame_boundary, pair_setup, pair_teardown),
            cmocka_unit_test_setup_teardown(
                only_the_latest_ping_is_answered, pair_setup, pair_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
