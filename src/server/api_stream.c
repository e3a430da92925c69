/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pods/exec, pods/attach, pods/portforward (docs/server.md, "exec, attach, port-forward"): the
 * request is checked here (the pod, its node, its container; the caller was authorised for the
 * subresource with verb create), then passed to the agent of the pod's node with the client's
 * upgrade headers and the server's signature. The agent answers the upgrade itself: its 101 goes
 * back to the client, and from then on this side copies bytes both ways, as kube-apiserver's
 * upgrade-aware proxy does with the kubelet, until either side closes. What the agent refuses
 * before the upgrade comes back as a Status.
 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "internal.h"
#include "relay_thread.h"
#include "xpool/log.h"
#include "xpool/logsign.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

#define HEAD_WAIT_MS   30000
#define BODY_WAIT_MS   5000 /* the rest of a refusal's body, once its head came */
#define WAIT_MS        1000
#define COPY_BUF       (64 * 1024)
#define HALF_CLOSED_MS 5000 /* after one side closed, the other's last bytes */
#define TLS_SETTLE_MS  50   /* under TLS: see tls_relay_idle() */

/* The upgrade headers of the agent's 101 passed to the client. */
static const char *const passed_headers[] = {
    "Upgrade", "Sec-WebSocket-Accept", "Sec-WebSocket-Protocol", "X-Stream-Protocol-Version"};
#define N_PASSED XP_ELEMENTSOF(passed_headers)

struct tunnel {
        struct api *api;
        int agent;
        int client_tcp;  /* the client's own socket: with TLS, what run() gets is libmicrohttpd's
                            socketpair, which does not see the client go away; -1 if unknown */
        pid_t relay_tid; /* libmicrohttpd's thread of this connection, its TLS relay after the
                            101 (thread per connection: it ran the request); 0 if unknown */
        char *what;      /* "pods/exec NAMESPACE/NAME", for the debug log */
        char *pending;   /* the agent's bytes that came with its 101 */
        size_t pending_len;
        char *values[N_PASSED];
        const char *headers[2 * N_PASSED + 1];
};

static void tunnel_free(void *state)
{
        struct tunnel *t = state;

        if (!t)
                return;
        if (t->agent >= 0)
                close(t->agent);
        free(t->pending);
        free(t->what);
        for (size_t i = 0; i < N_PASSED; i++)
                free(t->values[i]);
        free(t);
}

/* ---- copying ----------------------------------------------------------------------------------
 */

/* The wait for the open side's close, once the closed side's bytes were all passed on. */
struct linger_clock {
        int64_t since_ms; /* the last progress */
        int unread;       /* what the sockets' peers had not taken then */
};

struct half {
        int from, to;
        char buf[COPY_BUF];
        size_t off, len;
        bool eof;
        bool broken; /* writing to failed: its reader is gone, what comes for it is dropped */
};

/* Whether h has nothing more to pass on: its source ended and all it read went (or its reader
 * is gone). */
static bool half_done(const struct half *h)
{
        return h->eof && (h->len == 0 || h->broken);
}

/*
 * Reads into h when it is empty, writes what it holds. A side that is gone ends only its own
 * direction: the other's last bytes still go (the agent that ended and closed leaves its output
 * on the way to a slow client, and the client's pings behind it find no reader).
 */
static void half_move(struct half *h, short rev_from, short rev_to)
{
        ssize_t n;

        if (!h->eof && h->len == 0 && (rev_from & (POLLIN | POLLHUP | POLLERR))) {
                n = recv(h->from, h->buf, sizeof(h->buf), MSG_DONTWAIT);
                if (n > 0) {
                        h->off = 0;
                        h->len = (size_t)n;
                } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                        h->eof = true;
                        shutdown(h->to, SHUT_WR);
                }
        }
        if (h->len > h->off && !h->broken && (rev_to & (POLLOUT | POLLERR | POLLHUP))) {
                n = send(h->to, h->buf + h->off, h->len - h->off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        h->broken = true;
                if (n > 0)
                        h->off += (size_t)n;
        }
        if (h->off == h->len || h->broken)
                h->off = h->len = 0;
}

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Bytes given to fd that its reader has not taken yet (its kernel's send queue). */
static int unread_by_peer(int fd)
{
        int n = 0;

        return ioctl(fd, SIOCOUTQ, &n) < 0 ? 0 : n;
}

/* What the kernel sent on the client's TCP socket so far (TCP_INFO); -1 if it cannot say. */
static int64_t bytes_sent(int tcp)
{
        struct tcp_info info;
        socklen_t len = sizeof(info);

        if (getsockopt(tcp, IPPROTO_TCP, TCP_INFO, &info, &len) < 0 ||
            len < offsetof(struct tcp_info, tcpi_bytes_sent) + sizeof(info.tcpi_bytes_sent))
                return -1;
        return (int64_t)info.tcpi_bytes_sent;
}

/*
 * Under TLS, whether libmicrohttpd's relay (0.9.75: daemon.c process_urh(), driven by
 * thread_main_connection_upgrade()) holds none of the agent's bytes. It recv()s them from the
 * pair into its urh out buffer and gnutls_record_send()s them one record (16 KiB) per poll
 * round: between the two, the pair and the client's socket both look empty. It does flush that
 * buffer after MHD_UPGRADE_ACTION_CLOSE (the forwarding loop runs while out_buffer_used is not 0;
 * only a failed send or the daemon's stop discards it), but from CLOSE on it reads nothing more
 * from the client (process_urh()'s was_closed branch), and MHD_cleanup_connections() then
 * close()s the TCP socket: a byte of the client's unread there turns that close into a reset,
 * which drops what the kernel still held of ours. So the relay must be done before CLOSE: nothing
 * queued in the pair or on the client's socket, no byte sent on it meanwhile, and the relay's
 * thread asleep in its poll(), which it is only with its buffer empty (or the socket full, which
 * the queue would show). "No byte sent for TLS_SETTLE_MS" alone was a guess about the scheduler:
 * at a load of 48 the thread waited longer than that between its recv() and its send, the
 * tunnel ended, and the client lost the tail to the reset (60-stream-stress, 81-stream-tail).
 * TLS_SETTLE_MS now only paces the checks. Where /proc cannot say, the relay is not taken for
 * idle: the half-closed wait (HALF_CLOSED_MS without progress) ends the tunnel.
 */
static bool tls_relay_idle(const struct tunnel *t, int fd, int tcp)
{
        int64_t before = bytes_sent(tcp);

        poll(NULL, 0, TLS_SETTLE_MS);
        /* in this order: with the pair and the socket's queue empty and nothing sent since,
         * a relay asleep in poll() holds nothing */
        return before >= 0 && unread_by_peer(fd) == 0 && unread_by_peer(tcp) == 0 &&
               t->relay_tid > 0 && relay_thread_waits(t->relay_tid) == 1 &&
               bytes_sent(tcp) == before && unread_by_peer(tcp) == 0;
}

/* How a tunnel ended, for the debug log (XPOOL_DEBUG=stream). */
enum tunnel_end {
        END_BOTH_CLOSED,  /* each side closed, and each one's bytes went to the other */
        END_AGENT_DONE,   /* the agent closed, and the client took every byte of it */
        END_CLIENT_GONE,  /* the client's connection closed, or it stopped taking bytes */
        END_NO_PROGRESS,  /* after one side closed, HALF_CLOSED_MS without a byte moving */
        END_SERVER_STOPS, /* the server stops */
        END_FAILED,       /* no memory, a poll that failed */
};

static const char *const end_words[] = {
    [END_BOTH_CLOSED] = "both sides closed",
    [END_AGENT_DONE] = "the agent closed and the client took all it sent",
    [END_CLIENT_GONE] = "the client went away",
    [END_NO_PROGRESS] = "one side closed, then nothing moved for the half-closed wait",
    [END_SERVER_STOPS] = "the server stops",
    [END_FAILED] = "it failed",
};

/*
 * After one side closed, the other's last bytes. The agent closes once its stream is over (the
 * command ended, its output and status sent; over WebSocket the closing handshake done): when
 * all it sent has gone on and the client's kernel took it (nothing in libmicrohttpd's pair,
 * nothing the client's TCP socket waits an acknowledgement for; under TLS nothing in the relay's
 * own buffer either, tls_relay_idle()), the tunnel ends at once. The
 * client cannot see the agent's close itself: under TLS libmicrohttpd's relay does not pass a
 * shutdown of its pair on, and a client that waits for the server to close (RFC 6455 has the
 * server close first) would wait for the tunnel. A reset for bytes of the client's that come
 * after costs it nothing: nothing of ours is in flight. Otherwise (the client closed first, or
 * the agent's bytes are still on their way) the wait ends HALF_CLOSED_MS after the last
 * progress, not after the close: a slow client behind a busy server is still reading the
 * output of an exec whose agent side ended, and an agent still has its last bytes to send.
 */
static bool half_closed_over(struct tunnel *t,
                             int fd,
                             const struct half *up,
                             const struct half *down,
                             struct linger_clock *clock,
                             enum tunnel_end *end)
{
        int unread, to_client;
        int64_t now = now_ms();

        if (!half_done(up) && !half_done(down))
                return false;
        /* either way: libmicrohttpd's socket pair, the client's own socket, the agent's */
        to_client = unread_by_peer(fd) + (t->client_tcp >= 0 ? unread_by_peer(t->client_tcp) : 0);
        unread = to_client + unread_by_peer(t->agent);
        if (half_done(down) && to_client == 0 &&
            (t->client_tcp < 0 || t->client_tcp == fd || tls_relay_idle(t, fd, t->client_tcp))) {
                *end = END_AGENT_DONE;
                return true;
        }
        if (!clock->since_ms || unread != clock->unread) {
                clock->since_ms = now;
                clock->unread = unread;
        }
        *end = END_NO_PROGRESS;
        return now - clock->since_ms > HALF_CLOSED_MS;
}

/* Copies both ways until the stream is over: how it ended. */
static enum tunnel_end tunnel_copy(struct tunnel *t, int fd, struct half *up, struct half *down)
{
        struct linger_clock clock = {0};
        enum tunnel_end end = END_BOTH_CLOSED;

        while (!(half_done(up) && half_done(down))) {
                /* a side with nothing left to read or write is not polled: a reset socket
                 * would be ready (POLLERR) at every turn */
                bool client_idle = up->eof && half_done(down);
                bool agent_idle = down->eof && (half_done(up) || up->broken);
                struct pollfd p[3] = {
                    {.fd = client_idle ? -1 : fd,
                     .events =
                         (short)((!up->eof && !up->len ? POLLIN : 0) | (down->len ? POLLOUT : 0))},
                    {.fd = agent_idle ? -1 : t->agent,
                     .events = (short)((!down->eof && !down->len ? POLLIN : 0) |
                                       (up->len ? POLLOUT : 0))},
                    {.fd = t->client_tcp, .events = POLLRDHUP},
                };
                int r;

                if (atomic_load(&t->api->stopping))
                        return END_SERVER_STOPS;
                r = poll(p, t->client_tcp >= 0 ? 3 : 2, WAIT_MS);
                if (r < 0 && errno != EINTR)
                        return END_FAILED;
                /* the client closed its connection (kubectl never half-closes one) */
                if (r > 0 && t->client_tcp >= 0 && (p[2].revents & (POLLRDHUP | POLLHUP | POLLERR)))
                        return END_CLIENT_GONE;
                if (r > 0) {
                        half_move(up, p[0].revents, p[1].revents);
                        half_move(down, p[1].revents, p[0].revents);
                }
                if (down->broken) /* the client is gone */
                        return END_CLIENT_GONE;
                if (half_closed_over(t, fd, up, down, &clock, &end))
                        return end;
        }
        return END_BOTH_CLOSED;
}

static void tunnel_run(void *state, int fd, const char *early, size_t early_len)
{
        struct tunnel *t = state;
        struct half *up = calloc(1, sizeof(*up)), *down = calloc(1, sizeof(*down));
        enum tunnel_end end = END_FAILED;
        int64_t start = now_ms();

        if (up && down && agent_send_all(t->agent, early, early_len) >= 0 &&
            agent_send_all(fd, t->pending ? t->pending : "", t->pending_len) >= 0) {
                *up = (struct half){.from = fd, .to = t->agent};
                *down = (struct half){.from = t->agent, .to = fd};
                end = tunnel_copy(t, fd, up, down);
        }
        xp_debug("stream",
                 "stream: %s ended after %" PRId64 " ms: %s",
                 t->what ? t->what : "a tunnel",
                 now_ms() - start,
                 end_words[end]);
        free(up);
        free(down);
}

/* ---- the agent's answer -----------------------------------------------------------------------
 */

/* The value of header name in head (NUL-terminated, lines ending in CRLF), copied; NULL if none. */
static char *head_value(const char *head, const char *name)
{
        size_t nlen = strlen(name);

        for (const char *line = strstr(head, "\r\n"); line && line[2];
             line = strstr(line + 2, "\r\n")) {
                const char *v = line + 2, *eol;

                if (strncasecmp(v, name, nlen) != 0 || v[nlen] != ':')
                        continue;
                v += nlen + 1;
                v += strspn(v, " \t");
                eol = strstr(v, "\r\n");
                return strndup(v, eol ? (size_t)(eol - v) : strlen(v));
        }
        return NULL;
}

/* The agent's 101: the upgrade for the client. 0, or -ENOMEM. */
static int
upgrade_reply(struct tunnel *t, const char *head, size_t head_len, size_t len, struct reply *ret)
{
        size_t k = 0;

        for (size_t i = 0; i < N_PASSED; i++) {
                t->values[i] = head_value(head, passed_headers[i]);
                if (t->values[i]) {
                        t->headers[k++] = passed_headers[i];
                        t->headers[k++] = t->values[i];
                }
        }
        t->headers[k] = NULL;
        if (len > head_len) {
                t->pending = malloc(len - head_len);
                if (!t->pending)
                        return -ENOMEM;
                memcpy(t->pending, head + head_len, len - head_len);
                t->pending_len = len - head_len;
        }
        ret->code = 101;
        ret->upgrade = (struct upgrade){
            .headers = t->headers, .run = tunnel_run, .free = tunnel_free, .state = t};
        return 0;
}

/* ---- the request to the agent -----------------------------------------------------------------
 */

void api_stream_owner(const struct request *req, char ret[static 17])
{
        uint8_t digest[32];
        char name[XP_TOKEN_SUBJECT_MAX + 8];

        ret[0] = '\0';
        if (!req->who)
                return;
        snprintf(name,
                 sizeof name,
                 "%s:%s",
                 req->who->service_account ? "sa" : "user",
                 req->who->subject);
        if (gnutls_hash_fast(GNUTLS_DIG_SHA256, name, strlen(name), digest) == 0)
                xp_hex_encode(digest, 8, ret);
}

/* The agent's path: /exec|attach/NS/POD/CONTAINER or /portForward/NS/POD, ?podUID=, a random
 * xpoolNonce=, xpoolUser= (api_stream_owner()) and the client's query without its own podUID.
 * NULL: -ENOMEM. */
static char *
agent_path(const struct request *req, const char *sub, const char *container, const char *uid)
{
        const char *q = strchr(request_raw_target(req), '?');
        uint8_t nonce[16];
        char nonce_hex[2 * sizeof nonce + 1], owner[17], *path = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&path, &len);

        if (!f || gnutls_rnd(GNUTLS_RND_NONCE, nonce, sizeof nonce) < 0) {
                if (f)
                        fclose(f);
                free(path);
                return NULL;
        }
        xp_hex_encode(nonce, sizeof nonce, nonce_hex);
        if (strcmp(sub, "portforward") == 0)
                fprintf(f, "/portForward/%s/%s?podUID=%s", req->namespace, req->name, uid);
        else
                fprintf(
                    f, "/%s/%s/%s/%s?podUID=%s", sub, req->namespace, req->name, container, uid);
        /* each request signed unique: the agent takes a signature once (xpool/signonce.h) */
        fprintf(f, "&xpoolNonce=%s", nonce_hex);
        api_stream_owner(req, owner);
        if (*owner)
                fprintf(f, "&xpoolUser=%s", owner);
        for (const char *p = q ? q + 1 : NULL; p && *p;) {
                size_t n = strcspn(p, "&");

                /* the pod is this one: a podUID of the client's would name another; the xpool
                 * parameters are the server's (a client's xpoolUser would take another's share),
                 * "%78poolUser" too, as the agent decodes names */
                if (n > 0 && !xp_logsign_server_parameter(p, n))
                        fprintf(f, "&%.*s", (int)n, p);
                p += n;
                if (*p == '&')
                        p++;
        }
        if (fclose(f) != 0) {
                free(path);
                return NULL;
        }
        return path;
}

/* The upgrade request: the client's upgrade headers, the server's signature. NULL: -ENOMEM. */
static char *agent_head(const struct request *req,
                        const char *path,
                        const char *host,
                        unsigned port,
                        const char *signature)
{
        static const char *const copied[] = {"Upgrade",
                                             "Sec-WebSocket-Key",
                                             "Sec-WebSocket-Version",
                                             "Sec-WebSocket-Protocol",
                                             "X-Stream-Protocol-Version"};
        bool v6 = strchr(host, ':') != NULL;
        char *head = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&head, &len);

        if (!f)
                return NULL;
        fprintf(
            f,
            "GET %s HTTP/1.1\r\nHost: %s%s%s:%u\r\nConnection: Upgrade\r\n%s: %s\r\nUser-Agent: xpool-server\r\n",
            path,
            v6 ? "[" : "",
            host,
            v6 ? "]" : "",
            port,
            XP_LOGSIGN_HEADER,
            signature);
        for (size_t i = 0; i < XP_ELEMENTSOF(copied); i++) {
                const char *v = request_header(req, copied[i]);

                if (v && !strpbrk(v, "\r\n"))
                        fprintf(f, "%s: %s\r\n", copied[i], v);
        }
        fputs("\r\n", f);
        if (fclose(f) != 0) {
                free(head);
                return NULL;
        }
        return head;
}

/* Connects to the agent and asks for the upgrade; its answer becomes ret. */
static int
to_agent(const struct request *req, const char *node, const char *path, struct reply *ret)
{
        char host[64], key_id[XP_TOKEN_ID_LEN + 1], signature[XP_LOGSIGN_TEXT_MAX];
        _cleanup_free_ char *request = NULL, *buf = malloc(AGENT_HEAD_MAX + 1);
        struct xp_error err = {0};
        uint8_t key[AUTH_KEY_LEN];
        struct tunnel *t;
        unsigned port = 0, code = 0;
        size_t head_len = 0;
        int r, len;

        r = node_log_endpoint(req, node, host, &port, ret);
        if (r <= 0)
                return r;
        if (!req->api->auth || auth_node_key(req->api->auth, node, key_id, key) < 0)
                return reply_status(
                    ret,
                    503,
                    "ServiceUnavailable",
                    req->name,
                    "pods",
                    "the server has no node token for node \"%s\" to sign the request to its agent with",
                    node);
        if (xp_logsign_sign(
                key_id, key, path, (int64_t)time(NULL) + XP_LOGSIGN_STREAM_TTL, signature) < 0)
                return -ENOMEM;
        request = agent_head(req, path, host, port, signature);
        t = calloc(1, sizeof(*t));
        if (!request || !t || !buf) {
                free(t);
                return -ENOMEM;
        }
        *t = (struct tunnel){.api = req->api,
                             .agent = -1,
                             .client_tcp = request_socket(req),
                             .relay_tid = (pid_t)syscall(SYS_gettid)};
        if (asprintf(&t->what, "pods/%s %s/%s", req->subresource, req->namespace, req->name) < 0)
                t->what = NULL; /* the log then says "a tunnel" */
        r = t->agent = agent_connect(req->api, node, host, port, &err);
        if (r >= 0 && (r = agent_send_all(t->agent, request, strlen(request))) < 0)
                xp_errorf(&err, r, "cannot send the request: %s", strerror(-r));
        len = r >= 0
                  ? agent_read_head(t->api, t->agent, -1, HEAD_WAIT_MS, buf, &head_len, &code, &err)
                  : r;
        if (len >= 0 && code == 101) {
                r = upgrade_reply(t, buf, head_len, (size_t)len, ret);
                if (r < 0)
                        tunnel_free(t);
                return r;
        }
        if (len >= 0) {
                len = agent_read_body(t->api, t->agent, BODY_WAIT_MS, buf, (size_t)len, head_len);
                r = agent_refusal(req, node, code, "", true, buf + head_len, ret);
        }
        tunnel_free(t);
        if (len == -ENOMEM)
                return len;
        if (len < 0)
                return reply_status(ret,
                                    503,
                                    "ServiceUnavailable",
                                    req->name,
                                    "pods",
                                    "cannot reach the xpool agent of node \"%s\" at %s:%u: %s",
                                    node,
                                    host,
                                    port,
                                    xp_error_message(&err));
        return r;
}

int handle_stream(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *pods = route->kind;
        struct xp_error err = {0};
        const char *node, *uid, *container = NULL;
        _cleanup_free_ char *path = NULL;
        json_t *pod = NULL;
        uint64_t version;
        int r;

        r = xp_store_get(
            req->api->store, pods->plural, req->namespace, req->name, &pod, &version, &err);
        if (r < 0)
                return reply_store_error(ret, r, pods, req->name, &err);
        node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        if (!node || !node[0] || !uid) {
                r = reply_status(ret,
                                 400,
                                 "BadRequest",
                                 req->name,
                                 pods->plural,
                                 "pod %s does not have a host assigned",
                                 req->name);
                goto out;
        }
        if (strcmp(route->subresource, "portforward") != 0) {
                r = pod_container(req, pods, pod, &container, ret);
                if (r <= 0)
                        goto out;
        }
        path = agent_path(req, route->subresource, container, uid);
        r = path ? to_agent(req, node, path, ret) : -ENOMEM;
out:
        json_decref(pod);
        return r;
}
