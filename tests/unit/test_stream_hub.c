/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stream hub (src/server/stream_hub.c) on one end of a socket pair: what a stream has at its
 * start goes out as a chunk at once; a write to the store makes the hub ask the stream again; a
 * stream's end, a client that hangs up, the hub's stop and a stream's error each end the serve
 * call as documented; a client that does not read holds its stream back (no bytes lost, the
 * stream not asked for more meanwhile) and the rest follows once it reads.
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
 * and it ends (or fails with fail) after last lines; big: every call, BIG_CHUNK bytes at once. */
struct script {
        struct xp_store *store;
        uint64_t seen;
        int calls, lines, last, fail;
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
                if (s->big)
                        *ret_due_ms = now; /* the big blocks follow at once */
        } else if (s->big) {
                memset(s->block, 'a' + s->calls % 26, BIG_CHUNK);
                *ret_data = s->block;
                *ret_len = BIG_CHUNK;
                *ret_due_ms = now; /* always more */
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

static int setup(void **state)
{
        struct hub_test *t = calloc(1, sizeof *t);

        assert_non_null(t);
        fixture_open(&t->f, "stream_hub", 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, t->pair), 0);
        assert_int_equal(stream_hub_new(t->f.store, &t->stopping, &t->hub), 0);
        t->script.last = 2;
        *state = t;
        return 0;
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

/* Reads exactly n bytes from the client's end, within 10 s. */
static void read_exactly(struct hub_test *t, char *buf, size_t n)
{
        int64_t deadline = xp_monotonic_ms() + 10000;
        size_t have = 0;

        while (have < n) {
                struct pollfd p = {.fd = t->pair[1], .events = POLLIN};
                ssize_t r;

                assert_true(xp_monotonic_ms() < deadline);
                if (poll(&p, 1, 100) <= 0)
                        continue;
                r = read(t->pair[1], buf + have, n - have);
                assert_true(r > 0);
                have += (size_t)r;
        }
}

static void expect(struct hub_test *t, const char *text)
{
        char buf[256] = {0};

        read_exactly(t, buf, strlen(text));
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

static void news_as_chunks_then_end(void **state)
{
        struct hub_test *t = *state;

        start(t);
        expect(t, "6\r\nstart\n\r\n");
        write_pod(t, "a");
        expect(t, "7\r\nnews 1\n\r\n");
        write_pod(t, "b");
        expect(t, "7\r\nnews 2\n\r\n");
        write_pod(t, "c"); /* asked again: the stream says it ended */
        assert_int_equal(joined(t), 0);
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
        t->script.block = malloc(BIG_CHUNK);
        assert_non_null(t->script.block);
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
                read_exactly(t, chunk, BIG_CHUNK + 2);
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

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(news_as_chunks_then_end, setup, teardown),
            cmocka_unit_test_setup_teardown(client_gone, setup, teardown),
            cmocka_unit_test_setup_teardown(stream_error, setup, teardown),
            cmocka_unit_test_setup_teardown(server_stopping, setup, teardown),
            cmocka_unit_test_setup_teardown(hub_stop, setup, teardown),
            cmocka_unit_test_setup_teardown(slow_client, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
