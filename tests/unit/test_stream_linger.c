/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The end of the agent's streaming connection (sconn_linger(), src/agent/stream_conn.c) over TCP
 * on loopback: a client that reads slowly and pings all the while gets every byte queued before
 * the end, the close frame last, and then our FIN, never a reset (a close() with its pings unread
 * would reset the connection and throw away what the kernel had not sent yet: the CI flake of
 * 29-exec). The wait is bounded by its deadline and ends when the agent stops.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/stream_internal.h"
#include "xpool/websocket.h"

#define DATA_LEN    (2 * 1024 * 1024) /* far more than the client's small window holds */
#define CLIENT_RCV  4096
#define ROUNDS_MAX  200000
#define LINGER_TEST 20000
/* The slow reader's wait: far less than its whole read takes (512 reads, a nap of 2 ms each):
 * the time counts from its last progress, not from the start. */
#define SLOW_LINGER_MS 1000

struct conn_pair {
        struct sconn conn; /* the agent's side */
        int client, stop_fd;
        int64_t linger_ms, lingered_ms;
};

/* A TCP connection on loopback; the client's receive buffer small, so that our output waits in
 * our kernel while the client reads. */
static void tcp_pair(int *ret_server, int *ret_client)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof(a);
        int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
        int rcv = CLIENT_RCV;

        assert_true(l >= 0 && c >= 0);
        assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(l, 1), 0);
        assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
        assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)), 0);
        assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
        *ret_server = accept(l, NULL, NULL);
        assert_true(*ret_server >= 0);
        close(l);
        fcntl(*ret_server, F_SETFL, O_NONBLOCK);
        *ret_client = c;
}

static int setup(void **state)
{
        struct conn_pair *p = calloc(1, sizeof(*p));
        int server;

        assert_non_null(p);
        tcp_pair(&server, &p->client);
        assert_int_equal(sconn_init(&p->conn, server, SCONN_WS, NULL, 0), 0);
        p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(p->stop_fd >= 0);
        *state = p;
        return 0;
}

static int teardown(void **state)
{
        struct conn_pair *p = *state;

        if (p->conn.fd >= 0)
                close(p->conn.fd);
        close(p->client);
        close(p->stop_fd);
        sconn_done(&p->conn);
        free(p);
        return 0;
}

/* The agent's end: linger, then close, as the session's thread does. */
static void *agent_end(void *arg)
{
        struct conn_pair *p = arg;
        int64_t start = stream_now_ms();

        sconn_linger(&p->conn, p->stop_fd, -1, p->linger_ms ? p->linger_ms : LINGER_TEST);
        p->lingered_ms = stream_now_ms() - start;
        close(p->conn.fd);
        p->conn.fd = -1;
        return NULL;
}

static void client_ping(int fd)
{
        static const uint8_t mask[4] = {9, 8, 7, 6};
        uint8_t frame[XP_WS_HEADER_MAX + 4] = {0};
        size_t hlen = xp_ws_frame_header(frame, XP_WS_PING, true, 4, mask);

        memcpy(frame + hlen, "beat", 4);
        xp_ws_mask(frame + hlen, 4, mask, 0);
        (void)send(fd, frame, hlen + 4, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Reads slowly while pinging, until our end of stream: what came, or -errno of the read. */
static ssize_t slow_pinging_read(int fd, uint8_t *buf, size_t cap)
{
        struct timespec nap = {.tv_nsec = 2000000};
        size_t got = 0;

        for (int i = 0; i < ROUNDS_MAX; i++) {
                ssize_t n;

                client_ping(fd);
                nanosleep(&nap, NULL);
                n = recv(fd, buf + got, cap - got < 4096 ? cap - got : 4096, MSG_DONTWAIT);
                if (n == 0)
                        return (ssize_t)got;
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (n > 0)
                        got += (size_t)n;
        }
        fail_msg("the stream did not end within %d reads", ROUNDS_MAX);
        return -ETIMEDOUT;
}

static void a_pinging_slow_reader_gets_everything(void **state)
{
        struct conn_pair *p = *state;
        size_t cap = DATA_LEN + 1024, off = 0;
        uint8_t *data = malloc(DATA_LEN), *got = malloc(cap);
        struct xp_ws_frame f;
        struct xp_ws_violation v = {0};
        pthread_t agent;
        ssize_t n;
        int size;

        assert_non_null(data);
        assert_non_null(got);
        for (size_t i = 0; i < DATA_LEN; i++)
                data[i] = (uint8_t)(i * 7 + 3);
        assert_int_equal(sconn_ws_send(&p->conn, 1, data, DATA_LEN), 0);
        sconn_ws_close(&p->conn, XP_WS_CLOSE_NORMAL, NULL);
        p->linger_ms = SLOW_LINGER_MS;
        assert_int_equal(pthread_create(&agent, NULL, agent_end, p), 0);
        n = slow_pinging_read(p->client, got, cap);
        shutdown(p->client, SHUT_WR); /* the client's close: the agent's wait ends */
        assert_int_equal(pthread_join(agent, NULL), 0);
        assert_true(n > 0);                           /* not -ECONNRESET */
        assert_true(p->lingered_ms > SLOW_LINGER_MS); /* it waited for the reader */
        size = xp_ws_frame_parse(got, (size_t)n, false, SIZE_MAX, &f, &v);
        assert_true(size > 0);
        assert_int_equal(f.opcode, XP_WS_BINARY);
        assert_int_equal(f.len, DATA_LEN + 1);
        assert_memory_equal(f.payload + 1, data, DATA_LEN);
        off = (size_t)size;
        size = xp_ws_frame_parse(got + off, (size_t)n - off, false, SIZE_MAX, &f, &v);
        assert_true(size > 0);
        assert_int_equal(f.opcode, XP_WS_CLOSE);
        assert_int_equal(off + (size_t)size, (size_t)n);
        free(data);
        free(got);
}

/* A client that neither reads nor closes: the agent stopping ends the wait at once. */
static void the_agent_stopping_ends_it(void **state)
{
        struct conn_pair *p = *state;
        uint64_t one = 1;
        pthread_t agent;

        assert_int_equal(sconn_ws_send(&p->conn, 1, "x", 1), 0);
        assert_int_equal(write(p->stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
        assert_int_equal(pthread_create(&agent, NULL, agent_end, p), 0);
        assert_int_equal(pthread_join(agent, NULL), 0);
        assert_true(p->lingered_ms < LINGER_TEST);
}

/* A client that takes what came but never closes: the deadline ends the wait. */
static void the_deadline_ends_it(void **state)
{
        struct conn_pair *p = *state;
        int64_t start = stream_now_ms();

        assert_int_equal(sconn_ws_send(&p->conn, 1, "x", 1), 0);
        sconn_linger(&p->conn, p->stop_fd, -1, 200);
        assert_true(stream_now_ms() - start >= 200);
        assert_int_equal(sconn_pending(&p->conn), 0);
}

/* Under TLS the connection is libmicrohttpd's relay pair, which stays open when the client
 * leaves: the client's own socket hanging up ends the wait long before the deadline. */
static void the_tls_client_hanging_up_ends_it(void **state)
{
        struct conn_pair *p = *state;
        int tls_server, tls_client;
        int64_t start = stream_now_ms();

        tcp_pair(&tls_server, &tls_client);
        assert_int_equal(sconn_ws_send(&p->conn, 1, "x", 1), 0);
        close(tls_client);
        sconn_linger(&p->conn, p->stop_fd, tls_server, LINGER_TEST);
        assert_true(stream_now_ms() - start < LINGER_TEST);
        close(tls_server);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(a_pinging_slow_reader_gets_everything, setup, teardown),
            cmocka_unit_test_setup_teardown(the_agent_stopping_ends_it, setup, teardown),
            cmocka_unit_test_setup_teardown(the_deadline_ends_it, setup, teardown),
            cmocka_unit_test_setup_teardown(the_tls_client_hanging_up_ends_it, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
