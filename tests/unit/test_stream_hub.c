/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stream hub (src/server/stream_hub.c) on one end of a socket pair: what a stream has at its
 * start goes out as a chunk at once; a write to the store makes the hub ask the stream again; a
 * stream's end, a client that hangs up, the hub's stop and a stream's error each end the serve
 * call as documented; a client that does not read holds its stream back (no bytes lost, the
 * stream not asked for more meanwhile) and the rest follows once it reads, with what was written
 * meanwhile at once; one that stops reading is dropped after the stall limit, others served on.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "registry_fixture.h"
#include "server/stream_hub.h"
#include "xpool/timeutil.h"

#define FAR_MS    60000 /* a due time no test waits for */
#define BIG_CHUNK (256 * 1024)

/* A scripted stream: its first call sends "start", each write to the store one "news N" line,
 * and it ends (or fails with fail) after last lines; big: every call, BIG_CHUNK bytes at once;
 * backlog: that many BIG_CHUNK blocks first, due at once but the last (then the news lines). */
struct script {
        struct xp_store *store;
        uint64_t seen;
        int calls, lines, last, fail, backlog;
        bool big;
        atomic_int asked; /* calls, as another thread sees them */
        char text[64];
        char *block;
};

static int
script_pump(void *state, int64_t now, const char **ret_data, size_t *ret_len, int64_t *ret_due_ms)
{
        struct script *s = state;
        uint64_t version = xp_store_version(s->store);

        atomic_fetch_add(&s->asked, 1);
        *ret_due_ms = now + FAR_MS;
        *ret_len = 0;
        if (s->calls++ == 0) {
                snprintf(s->text, sizeof s->text, "start\n");
                if (s->big || s->backlog)
                        *ret_due_ms = now; /* the big blocks follow at once */
        } else if (s->big || s->calls <= s->backlog + 1) {
                memset(s->block, 'a' + s->calls % 26, BIG_CHUNK);
                *ret_data = s->block;
                *ret_len = BIG_CHUNK;
                if (s->big || s->calls <= s->backlog)
                        *ret_due_ms = now; /* more at once */
                return 1;
        } else if (s->lines >= s->last) {
                return s->fail ? s->fail : 0;
        } else if (version > s->seen) {
                snprintf(s->text, sizeof s->text, "news %d\n", ++s->lines);
        } else {
                return 1;
        }
        s->seen = version;
        *ret_data = s->text;
        *ret_len = strlen(s->text);
        return 1;
}

struct serving {
        pthread_t thread;
        struct stream_hub *hub;
        int fd;
        struct script *script;
        int result;
};

static void *serve_thread(void *arg)
{
        struct serving *sv = arg;

        sv->result = stream_hub_serve(sv->hub, sv->fd, NULL, script_pump, sv->script);
        return NULL;
}

struct hub_test {
        struct registry_fixture f;
        struct stream_hub *hub;
        int pair[2]; /* [0] the server's, [1] the client's */
        atomic_bool stopping;
        struct script script;
        struct serving sv;
};

static void start(struct hub_test *t)
{
        t->script.store = t->f.store;
        t->script.seen = xp_store_version(t->f.store);
        t->sv =
            (struct serving){.hub = t->hub, .fd = t->pair[0], .script = &t->script, .result = 1};
        assert_int_equal(pthread_create(&t->sv.thread, NULL, serve_thread, &t->sv), 0);
}

static int setup_stall(void **state, int64_t stall_ms)
{
        struct hub_test *t = calloc(1, sizeof *t);

        assert_non_null(t);
        fixture_open(&t->f, "stream_hub", 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, t->pair), 0);
        assert_int_equal(stream_hub_new(t->f.store, &t->stopping, stall_ms, &t->hub), 0);
        t->script.last = 2;
        t->script.block = malloc(BIG_CHUNK);
        assert_non_null(t->script.block);
        *state = t;
        return 0;
}

static int setup(void **state)
{
        return setup_stall(state, 0);
}

/* A client that takes nothing for 300 ms is dropped. */
static int setup_short_stall(void **state)
{
        return setup_stall(state, 300);
}

static int teardown(void **state)
{
        struct hub_test *t = *state;

        stream_hub_stop(t->hub);
        stream_hub_free(t->hub);
        close(t->pair[0]);
        if (t->pair[1] >= 0)
                close(t->pair[1]);
        free(t->script.block);
        fixture_close(&t->f);
        free(t);
        return 0;
}

/* Reads exactly n bytes from a client's end, within 10 s. */
static void read_exactly(int fd, char *buf, size_t n)
{
        int64_t deadline = xp_monotonic_ms() + 10000;
        size_t have = 0;

        while (have < n) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t r;

                assert_true(xp_monotonic_ms() < deadline);
                if (poll(&p, 1, 100) <= 0)
                        continue;
                r = read(fd, buf + have, n - have);
                assert_true(r > 0);
                have += (size_t)r;
        }
}

static void expect(struct hub_test *t, const char *text)
{
        char buf[256] = {0};

        read_exactly(t->pair[1], buf, strlen(text));
        assert_string_equal(buf, text);
}

static void write_pod(struct hub_test *t, const char *name)
{
        fixture_put_text(&t->f,
                         "pods",
                         "default",
                         name,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                         "\"namespace\":\"default\"}}",
                         name);
}

/* The serve call's result, once it returned. */
static int joined(struct hub_test *t)
{
        assert_int_equal(pthread_join(t->sv.thread, NULL), 0);
        return t->sv.result;
}

/* Two writes, each a chunk of news, then a third after which the stream says it ended. */
static void two_news_then_end(struct hub_test *t)
{
        write_pod(t, "a");
        expect(t, "7\r\nnews 1\n\r\n");
        write_pod(t, "b");
        expect(t, "7\r\nnews 2\n\r\n");
        write_pod(t, "c"); /* asked again: the stream says it ended */
        assert_int_equal(joined(t), 0);
}

static void news_as_chunks_then_end(void **state)
{
        struct hub_test *t = *state;

        start(t);
        expect(t, "6\r\nstart\n\r\n");
        two_news_then_end(t);
}

static void client_gone(void **state)
{
        struct hub_test *t = *state;

        start(t);
        expect(t, "6\r\nstart\n\r\n");
        close(t->pair[1]);
        t->pair[1] = -1;
        assert_int_equal(joined(t), -EPIPE);
}

static void stream_error(void **state)
{
        struct hub_test *t = *state;

        t->script.last = 0;
        t->script.fail = -EIO;
        start(t);
        expect(t, "6\r\nstart\n\r\n");
        write_pod(t, "a");
        assert_int_equal(joined(t), -EIO);
}

static void server_stopping(void **state)
{
        struct hub_test *t = *state;

        start(t);
        expect(t, "6\r\nstart\n\r\n");
        atomic_store(&t->stopping, true);
        assert_int_equal(joined(t), 0);
}

static void hub_stop(void **state)
{
        struct hub_test *t = *state;

        start(t);
        expect(t, "6\r\nstart\n\r\n");
        stream_hub_stop(t->hub);
        assert_int_equal(joined(t), 0);
        assert_int_equal(stream_hub_serve(t->hub, t->pair[0], NULL, script_pump, &t->script),
                         -ESHUTDOWN);
}

/* A client that does not read: the stream is not asked while its bytes wait, none is lost. */
static void slow_client(void **state)
{
        struct hub_test *t = *state;
        char *chunk = malloc(BIG_CHUNK + 16), head[16];
        int asked;

        assert_non_null(chunk);
        t->script.big = true;
        start(t);
        expect(t, "6\r\nstart\n\r\n");
        /* the socket fills up with a chunk or two; the hub waits for it, asking nothing more
         * (a stream always due would otherwise be asked thousands of times meanwhile) */
        usleep(300000);
        asked = atomic_load(&t->script.asked);
        assert_true(asked < 10);
        /* each chunk whole and in order, once the client reads */
        for (int i = 2; i <= asked + 2; i++) {
                snprintf(head, sizeof head, "%x\r\n", BIG_CHUNK);
                expect(t, head);
                read_exactly(t->pair[1], chunk, BIG_CHUNK + 2);
                for (size_t k = 0; k < BIG_CHUNK; k++)
                        if (chunk[k] != 'a' + i % 26)
                                fail_msg("chunk %d, byte %zu: %c", i, k, chunk[k]);
                assert_memory_equal(chunk + BIG_CHUNK, "\r\n", 2);
        }
        close(t->pair[1]);
        t->pair[1] = -1;
        assert_int_equal(joined(t), -EPIPE);
        free(chunk);
}

/* Reads a chunk of BIG_CHUNK bytes, whole. */
static void expect_block(struct hub_test *t, char *chunk)
{
        char head[16];

        snprintf(head, sizeof head, "%x\r\n", BIG_CHUNK);
        expect(t, head);
        read_exactly(t->pair[1], chunk, BIG_CHUNK + 2);
        assert_memory_equal(chunk + BIG_CHUNK, "\r\n", 2);
}

/* Waits (10 s at most) until the stream was asked n times. */
static void wait_asked(struct script *s, int n)
{
        int64_t deadline = xp_monotonic_ms() + 10000;

        while (atomic_load(&s->asked) < n) {
                assert_true(xp_monotonic_ms() < deadline);
                usleep(10000);
        }
}

/*
 * A write while the stream's bytes wait for the client: once they went, the stream is asked at
 * once, not at the far due time it gave with its last block (nor at the next write).
 */
static void news_while_blocked(void **state)
{
        struct hub_test *t = *state;
        char *chunk = malloc(BIG_CHUNK + 16);
        int small = 65536;

        assert_non_null(chunk);
        /* a block more than the socket pair holds: the writer waits for the client with it */
        assert_int_equal(setsockopt(t->pair[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
        t->script.backlog = 1;
        start(t);
        expect(t, "6\r\nstart\n\r\n");
        wait_asked(&t->script, t->script.backlog + 1);
        write_pod(t, "a"); /* the writer sees it while the socket is full */
        for (int i = 0; i < t->script.backlog; i++)
                expect_block(t, chunk);
        expect(t, "7\r\nnews 1\n\r\n");
        close(t->pair[1]);
        t->pair[1] = -1;
        assert_int_equal(joined(t), -EPIPE);
        free(chunk);
}

/* A client that stops reading is dropped after the stall limit; another stream goes on. */
static void stalled_client_dropped(void **state)
{
        struct hub_test *t = *state;
        struct script other = {.store = t->f.store, .last = 1};
        struct serving sv;
        int pair[2];
        char buf[32] = {0};

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        other.seen = xp_store_version(t->f.store);
        sv = (struct serving){.hub = t->hub, .fd = pair[0], .script = &other, .result = 1};
        assert_int_equal(pthread_create(&sv.thread, NULL, serve_thread, &sv), 0);
        t->script.big = true;
        start(t);
        expect(t, "6\r\nstart\n\r\n");
        /* this client reads no more: its stream ends within the stall limit's passes */
        assert_int_equal(joined(t), -ETIMEDOUT);
        /* the other stream was not held back, and is served still */
        read_exactly(pair[1], buf, 11);
        assert_string_equal(buf, "6\r\nstart\n\r\n");
        write_pod(t, "a");
        memset(buf, 0, sizeof buf);
        read_exactly(pair[1], buf, 12);
        assert_string_equal(buf, "7\r\nnews 1\n\r\n");
        write_pod(t, "b"); /* asked again: it ended */
        assert_int_equal(pthread_join(sv.thread, NULL), 0);
        assert_int_equal(sv.result, 0);
        close(pair[0]);
        close(pair[1]);
}

/* Waits (60 s at most) until the hub's listener waits on the store, or rests, as asked. */
static void wait_listening(struct stream_hub *hub, bool listening)
{
        int64_t deadline = xp_monotonic_ms() + 60000;

        while (stream_hub_listening(hub) != listening) {
                assert_true(xp_monotonic_ms() < deadline);
                poll(NULL, 0, 1);
        }
}

/*
 * Without streams the listener rests instead of waking for every commit; a stream that arrives
 * then gets what is written after its start, and once the last stream is gone it rests again.
 */
static void listener_rests_without_streams(void **state)
{
        struct hub_test *t = *state;

        wait_listening(t->hub, false);
        write_pod(t, "before"); /* news to nobody */
        assert_false(stream_hub_listening(t->hub));
        start(t);
        expect(t, "6\r\nstart\n\r\n");
        wait_listening(t->hub, true);
        two_news_then_end(t);
        write_pod(t, "after"); /* the listener's last wait on the store ends */
        wait_listening(t->hub, false);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(news_as_chunks_then_end, setup, teardown),
            cmocka_unit_test_setup_teardown(client_gone, setup, teardown),
            cmocka_unit_test_setup_teardown(stream_error, setup, teardown),
            cmocka_unit_test_setup_teardown(server_stopping, setup, teardown),
            cmocka_unit_test_setup_teardown(hub_stop, setup, teardown),
            cmocka_unit_test_setup_teardown(slow_client, setup, teardown),
            cmocka_unit_test_setup_teardown(news_while_blocked, setup, teardown),
            cmocka_unit_test_setup_teardown(listener_rests_without_streams, setup, teardown),
            cmocka_unit_test_setup_teardown(stalled_client_dropped, setup_short_stall, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
