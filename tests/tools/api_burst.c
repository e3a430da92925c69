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
 * answer other than 201, which is also reported on stderr), 2 on bad usage.
 *
 * The HTTP client is a small one on a plain socket: Content-Length and chunked bodies.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xpool/macro.h"

#define PODS_PATH   "/api/v1/namespaces/default/pods"
#define LINE_MAX_   8192
#define BUF_SIZE    16384
#define MAX_CLIENTS 256

/* One keep-alive connection and what has been read from it but not yet parsed. */
struct conn {
        int fd;
        size_t start, end;
        char buf[BUF_SIZE];
};

static struct sockaddr_storage server_addr;
static socklen_t server_addr_len;
static char host_header[300];
static const char *token;
static long count;
static atomic_long next_index;
static atomic_long acknowledged;
static atomic_long lost_connections;
static atomic_long unexpected;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* Splits http://HOST[:PORT][/...] and resolves it. */
static int parse_url(const char *url)
{
        _cleanup_free_ char *copy = NULL;
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
        char *host, *port = NULL, *end;
        int r;

        if (strncmp(url, "http://", 7) != 0) {
                fprintf(stderr, "api_burst: %s: only http:// URLs are supported\n", url);
                return -EINVAL;
        }
        copy = strdup(url + 7);
        if (!copy)
                return -ENOMEM;
        copy[strcspn(copy, "/")] = '\0';
        snprintf(host_header, sizeof(host_header), "%s", copy);
        host = copy;
        if (*host == '[') {
                end = strchr(host, ']');
                if (!end) {
                        fprintf(stderr, "api_burst: %s: no ']' after the IPv6 host\n", url);
                        return -EINVAL;
                }
                *end = '\0';
                host++;
                if (end[1] == ':')
                        port = end + 2;
        } else if ((end = strchr(host, ':'))) {
                *end = '\0';
                port = end + 1;
        }
        r = getaddrinfo(host, port && *port ? port : "80", &hints, &ai);
        if (r != 0) {
                fprintf(stderr, "api_burst: %s: %s\n", url, gai_strerror(r));
                return -EINVAL;
        }
        memcpy(&server_addr, ai->ai_addr, ai->ai_addrlen);
        server_addr_len = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
}

static int conn_open(struct conn *c)
{
        int one = 1, fd;

        fd = socket(server_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* requests go out in one write; Nagle would only add delay to the next one */
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (struct sockaddr *)&server_addr, server_addr_len) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        c->fd = fd;
        c->start = c->end = 0;
        return 0;
}

static void conn_close(struct conn *c)
{
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
}

static int send_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* Reads more into the buffer; 0 at end of stream. */
static int conn_fill(struct conn *c)
{
        ssize_t n;

        if (c->start > 0) {
                memmove(c->buf, c->buf + c->start, c->end - c->start);
                c->end -= c->start;
                c->start = 0;
        }
        if (c->end == sizeof(c->buf))
                return -EMSGSIZE;
        do
                n = recv(c->fd, c->buf + c->end, sizeof(c->buf) - c->end, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        c->end += (size_t)n;
        return (int)(n > 0);
}

/* One CRLF-terminated line, without the CRLF, into line (at most LINE_MAX_ bytes). */
static int conn_line(struct conn *c, char *line)
{
        for (;;) {
                char *eol = memchr(c->buf + c->start, '\n', c->end - c->start);

                if (eol) {
                        size_t n = (size_t)(eol - (c->buf + c->start));

                        if (n >= LINE_MAX_)
                                return -EMSGSIZE;
                        memcpy(line, c->buf + c->start, n);
                        if (n > 0 && line[n - 1] == '\r')
                                n--;
                        line[n] = '\0';
                        c->start += (size_t)(eol - (c->buf + c->start)) + 1;
                        return 0;
                }
                int r = conn_fill(c);
                if (r <= 0)
                        return r < 0 ? r : -ECONNRESET;
        }
}

static int conn_skip(struct conn *c, unsigned long long n)
{
        while (n > 0) {
                size_t have = c->end - c->start;

                if (have == 0) {
                        int r = conn_fill(c);
                        if (r <= 0)
                                return r < 0 ? r : -ECONNRESET;
                        continue;
                }
                if (have > n)
                        have = (size_t)n;
                c->start += have;
                n -= have;
        }
        return 0;
}

/*
 * Reads one response and discards its body (Content-Length or chunked, else up to the end of the
 * stream). Returns the status code, or -errno when the connection broke or the answer is not HTTP.
 * *ret_close says the connection cannot carry another request.
 */
static int read_response(struct conn *c, bool *ret_close)
{
        char line[LINE_MAX_];
        long long length = -1;
        bool chunked = false, close_after = false;
        int code, r;

        r = conn_line(c, line);
        if (r < 0)
                return r;
        if (sscanf(line, "HTTP/1.%*1[01] %3d", &code) != 1 || code < 100)
                return -EPROTO;
        for (;;) {
                char *value;

                r = conn_line(c, line);
                if (r < 0)
                        return r;
                if (line[0] == '\0')
                        break;
                value = strchr(line, ':');
                if (!value)
                        return -EPROTO;
                *value++ = '\0';
                value += strspn(value, " \t");
                if (strcasecmp(line, "Content-Length") == 0)
                        length = strtoll(value, NULL, 10);
                else if (strcasecmp(line, "Transfer-Encoding") == 0)
                        chunked = strcasestr(value, "chunked") != NULL;
                else if (strcasecmp(line, "Connection") == 0)
                        close_after = strcasestr(value, "close") != NULL;
        }
        if (code < 200 || code == 204 || code == 304)
                length = 0; /* no body whatever the headers say */
        if (chunked) {
                for (;;) {
                        unsigned long long size;
                        char *end;

                        r = conn_line(c, line);
                        if (r < 0)
                                return r;
                        size = strtoull(line, &end, 16);
                        if (end == line)
                                return -EPROTO;
                        if (size == 0)
                                break;
                        r = conn_skip(c, size + 2); /* the chunk and its CRLF */
                        if (r < 0)
                                return r;
                }
                do { /* trailers up to the empty line */
                        r = conn_line(c, line);
                        if (r < 0)
                                return r;
                } while (line[0] != '\0');
        } else if (length >= 0) {
                r = conn_skip(c, (unsigned long long)length);
                if (r < 0)
                        return r;
        } else {
                while ((r = conn_fill(c)) > 0)
                        c->start = c->end;
                if (r < 0)
                        return r;
                close_after = true;
        }
        *ret_close = close_after;
        return code;
}

static void *client(void *arg)
{
        struct conn *c = arg;
        char req[2048];

        c->fd = -1;
        for (;;) {
                long i = atomic_fetch_add(&next_index, 1);
                bool close_after = false;
                char body[512];
                int n, r;

                if (i >= count)
                        break;
                n = snprintf(body,
                             sizeof(body),
                             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                             "\"burst-%ld\"},\"spec\":{\"containers\":[{\"name\":\"main\","
                             "\"image\":\"busybox\"}]}}",
                             i);
                r = snprintf(req,
                             sizeof(req),
                             "POST " PODS_PATH " HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                             "application/json\r\n%s%s%sContent-Length: %d\r\n\r\n%s",
                             host_header,
                             token ? "Authorization: Bearer " : "",
                             token ?: "",
                             token ? "\r\n" : "",
                             n,
                             body);
                if (r < 0 || (size_t)r >= sizeof(req)) {
                        fprintf(stderr, "api_burst: the request for burst-%ld does not fit\n", i);
                        atomic_fetch_add(&unexpected, 1);
                        break;
                }
                if (c->fd < 0 && conn_open(c) < 0) {
                        /* refused: the server is gone, and this client with it */
                        atomic_fetch_add(&lost_connections, 1);
                        break;
                }
                r = send_all(c->fd, req, (size_t)r);
                if (r >= 0)
                        r = read_response(c, &close_after);
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
                        conn_close(c);
        }
        conn_close(c);
        return NULL;
}

int main(int argc, char **argv)
{
        _cleanup_free_ struct conn *conns = NULL;
        _cleanup_free_ pthread_t *th = NULL;
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
        if (parse_url(argv[1]) < 0)
                return 2;
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
                count,
                atomic_load(&lost_connections),
                atomic_load(&unexpected));
        return atomic_load(&acknowledged) == count ? 0 : 1;
}
