/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helper of tests/integration/05-server-crash.sh.
 *
 *   api_burst URL COUNT CLIENTS [TOKEN]
 *
 * Creates the pods burst-0 ... burst-(COUNT-1) in the namespace default through the API server at
 * URL (http://HOST:PORT) from CLIENTS threads, each with its own keep-alive HTTP/1.1 connection,
 * and prints each pod's name on stdout (one line, flushed) the moment its 201 arrives, never
 * before: the lines are exactly the acknowledged creates. Sends "Authorization: Bearer TOKEN" when
 * TOKEN is given.
 *
 * When the server dies (connection refused, reset or closed), the client that saw it stops
 * quietly and the others go on until they see it too. At the end a summary goes to stderr.
 * Exit status: 0 when all COUNT were acknowledged, 1 when some were not (a lost connection or an
 * answer other than 201, which is also reported on stderr), 2 on bad usage. API_BURST_FIRST=N in
 * the environment starts the names at burst-N: a second burst beside the first one's pods.
 *
 * The HTTP client is the small one of tests/tools/http_client.c.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "http_client.h"
#include "xpool/macro.h"

#define PODS_PATH   "/api/v1/namespaces/default/pods"
#define MAX_CLIENTS 256

static struct http_target target;
static const char *token;
static long count, first_index; /* the names: burst-first_index ... burst-(count - 1) */
static atomic_long next_index;
static atomic_long acknowledged;
static atomic_long lost_connections;
static atomic_long unexpected;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void *client(void *arg)
{
        struct http_conn *c = arg;
        char req[2048];

        c->fd = -1;
        for (;;) {
                long i = atomic_fetch_add(&next_index, 1);
                bool close_after = false;
                char body[512];
                int r;

                if (i >= count)
                        break;
                snprintf(body,
                         sizeof(body),
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                         "\"burst-%ld\"},\"spec\":{\"containers\":[{\"name\":\"main\","
                         "\"image\":\"busybox\"}]}}",
                         i);
                r = http_format_json_request(
                    req, sizeof(req), "POST", PODS_PATH, &target, NULL, token, body);
                if (r < 0) {
                        fprintf(stderr, "api_burst: the request for burst-%ld does not fit\n", i);
                        atomic_fetch_add(&unexpected, 1);
                        break;
                }
                if (c->fd < 0 && http_conn_open(c, &target) < 0) {
                        /* refused: the server is gone, and this client with it */
                        atomic_fetch_add(&lost_connections, 1);
                        break;
                }
                r = http_conn_exchange(c, req, (size_t)r, &close_after);
                if (r < 0) {
                        /* reset or closed mid-request: not acknowledged, and the server is gone */
                        atomic_fetch_add(&lost_connections, 1);
                        break;
                }
                if (r == 201) {
                        atomic_fetch_add(&acknowledged, 1);
                        pthread_mutex_lock(&out_lock);
                        printf("burst-%ld\n", i);
                        fflush(stdout);
                        pthread_mutex_unlock(&out_lock);
                } else {
                        fprintf(stderr, "api_burst: create burst-%ld: HTTP %d\n", i, r);
                        atomic_fetch_add(&unexpected, 1);
                }
                if (close_after)
                        http_conn_close(c);
        }
        http_conn_close(c);
        return NULL;
}

int main(int argc, char **argv)
{
        _cleanup_free_ struct http_conn *conns = NULL;
        _cleanup_free_ pthread_t *th = NULL;
        struct xp_error err = {0};
        long clients;
        char *end1, *end2;

        if (argc != 4 && argc != 5) {
                fprintf(stderr, "usage: api_burst URL COUNT CLIENTS [TOKEN]\n");
                return 2;
        }
        count = strtol(argv[2], &end1, 10);
        clients = strtol(argv[3], &end2, 10);
        if (*end1 || *end2 || count < 1 || clients < 1 || clients > MAX_CLIENTS) {
                fprintf(stderr,
                        "api_burst: COUNT must be a positive number and CLIENTS one from 1 to %d\n",
                        MAX_CLIENTS);
                return 2;
        }
        token = argc == 5 && argv[4][0] ? argv[4] : NULL;
        if (getenv("API_BURST_FIRST")) {
                long first = strtol(getenv("API_BURST_FIRST"), &end1, 10);

                if (*end1 || first < 0 || first > LONG_MAX - count) {
                        fprintf(stderr, "api_burst: API_BURST_FIRST must be a number from 0\n");
                        return 2;
                }
                first_index = first;
                atomic_store(&next_index, first);
                count += first;
        }
        if (http_target_parse(argv[1], &target, &err) < 0) {
                fprintf(stderr, "api_burst: %s: %s\n", argv[1], xp_error_message(&err));
                return 2;
        }
        conns = calloc((size_t)clients, sizeof(*conns));
        th = calloc((size_t)clients, sizeof(*th));
        if (!conns || !th) {
                fprintf(stderr, "api_burst: out of memory\n");
                return 1;
        }
        for (long i = 0; i < clients; i++)
                if (pthread_create(&th[i], NULL, client, &conns[i]) != 0) {
                        fprintf(stderr, "api_burst: cannot start client %ld\n", i);
                        return 1;
                }
        for (long i = 0; i < clients; i++)
                pthread_join(th[i], NULL);
        fprintf(stderr,
                "api_burst: %ld of %ld acknowledged, %ld clients lost their connection, %ld other "
                "answers\n",
                atomic_load(&acknowledged),
                count - first_index,
                atomic_load(&lost_connections),
                atomic_load(&unexpected));
        return atomic_load(&acknowledged) == count - first_index ? 0 : 1;
}
