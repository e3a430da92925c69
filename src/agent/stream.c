/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's streaming endpoint (stream.h): a request's path and query read into a
 * stream_request, the upgrade it asks for checked and answered (101 with the protocol chosen),
 * and the session run on a thread of its own until it ends. Bad requests are answered in plain
 * text with 400 (the API server turns that into a Status for the client); the endpoint stopping,
 * or too many streams at once, 503.
 */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "stream_internal.h"
#include "xpool/http_door.h"
#include "xpool/http_text.h"
#include "xpool/log.h"
#include "xpool/macro.h"

#define DEFAULT_IDLE_MS (4 * 3600 * 1000LL)
#define ARGV_MAX        1024 /* words of an exec's command */
#define POLL_MS         1000
#define LINGER_MS       30000 /* after the end, the client's close: how long it may stall */

struct xp_agent_streams {
        struct xp_runtime *runtime;
        int64_t idle_timeout_ms;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct stream_users users; /* the streams at once, each user's */
        bool stopping;
        int stop_fd; /* eventfd: readable once stopping */
};

int64_t stream_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the request ------------------------------------------------------------------------------
 */

static const struct {
        const char *prefix;
        enum stream_kind kind;
        int components; /* after the prefix: NS/POD[/CONTAINER] */
} kinds[] = {
    {"/exec/", STREAM_EXEC, 3},
    {"/attach/", STREAM_ATTACH, 3},
    {"/portForward/", STREAM_PORTFORWARD, 2},
};

static bool claims(const char *url)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(kinds); i++)
                if (strncmp(url, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
                        return true;
        return false;
}

static void request_free(struct stream_request *req)
{
        for (size_t i = 0; req->argv && req->argv[i]; i++)
                free(req->argv[i]);
        free(req->argv);
        req->argv = NULL;
}

struct args {
        char **argv;
        size_t n;
        bool failed;
};

static enum MHD_Result
collect_command(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        struct args *a = cls;
        char **v;

        (void)kind;
        if (strcmp(key, "command") != 0 || a->failed)
                return MHD_YES;
        if (a->n + 1 >= ARGV_MAX || !(v = realloc(a->argv, (a->n + 2) * sizeof(*v)))) {
                a->failed = true;
                return MHD_YES;
        }
        a->argv = v;
        a->argv[a->n] = strdup(value ? value : "");
        if (!a->argv[a->n]) {
                a->failed = true;
                return MHD_YES;
        }
        a->argv[++a->n] = NULL;
        return MHD_YES;
}

static bool query_bool(struct MHD_Connection *conn, const char *key)
{
        const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);

        return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0);
}

/* Copies one path component (up to '/' or the end) into out: false when empty or too long. */
static bool component(const char **p, char *out, size_t size)
{
        size_t len = strcspn(*p, "/");

        if (len == 0 || len >= size || (len <= 2 && strncmp(*p, "..", len) == 0))
                return false;
        memcpy(out, *p, len);
        out[len] = '\0';
        *p += len;
        if (**p == '/')
                (*p)++;
        return true;
}

/* Reads the path and query: NULL, or why the request is bad (static). */
static const char *
request_parse(struct MHD_Connection *conn, const char *url, struct stream_request *req)
{
        const char *p = NULL, *uid, *user;
        struct args a = {0};
        int n = 0;

        for (size_t i = 0; i < XP_ELEMENTSOF(kinds) && !p; i++)
                if (strncmp(url, kinds[i].prefix, strlen(kinds[i].prefix)) == 0) {
                        p = url + strlen(kinds[i].prefix);
                        req->kind = kinds[i].kind;
                        n = kinds[i].components;
                }
        if (!p || !component(&p, req->ns, sizeof(req->ns)) ||
            !component(&p, req->pod, sizeof(req->pod)) ||
            (n == 3 && !component(&p, req->container, sizeof(req->container))) || *p)
                return "the path is not /exec|attach/NAMESPACE/POD/CONTAINER or /portForward/NAMESPACE/POD";
        uid = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "podUID");
        if (!uid || !uid[0] || strlen(uid) >= sizeof(req->uid) || strchr(uid, '/') || uid[0] == '.')
                return "podUID is missing or not a pod uid";
        strcpy(req->uid, uid);
        /* signed by the server with the rest (verified before): who asked, for their share */
        user = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "xpoolUser");
        if (user && strlen(user) >= sizeof(req->user))
                return "xpoolUser is not a user the API server names";
        snprintf(req->user, sizeof(req->user), "%s", user ? user : "");
        if (req->kind == STREAM_PORTFORWARD)
                return NULL;
        req->in = query_bool(conn, "stdin");
        req->out = query_bool(conn, "stdout");
        req->err = query_bool(conn, "stderr");
        req->tty = query_bool(conn, "tty");
        if (req->tty)
                req->err = false; /* a terminal has one output, as the kubelet has it */
        if (!req->in && !req->out && !req->err)
                return "you must specify at least 1 of stdin, stdout, stderr";
        if (req->kind == STREAM_ATTACH)
                return NULL;
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_command, &a);
        req->argv = a.argv;
        if (a.failed)
                return "the command has more than 1024 words, or there is no memory for it";
        if (a.n == 0 || !req->argv[0][0])
                return "you must specify at least one command for the container";
        return NULL;
}

/* ---- the upgrade ------------------------------------------------------------------------------
 */

static const char *const channel_protocols[] = {XP_RC_V5, XP_RC_V4, NULL};
static const char *const pf_ws_protocols[] = {XP_PF_WS_PROTOCOL, NULL};
static const char *const pf_spdy_protocols[] = {XP_PF_PROTOCOL, NULL};

struct joined {
        const char *name;
        char *text;
        bool failed;
};

static enum MHD_Result
join_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        struct joined *j = cls;
        char *t;

        (void)kind;
        if (strcasecmp(key, j->name) != 0 || !value || j->failed)
                return MHD_YES;
        if (asprintf(&t, "%s%s%s", j->text ? j->text : "", j->text ? "," : "", value) < 0) {
                j->failed = true;
                return MHD_YES;
        }
        free(j->text);
        j->text = t;
        return MHD_YES;
}

/* The values of every header called name, joined with ','; NULL when none (caller frees). */
static char *header_all(struct MHD_Connection *conn, const char *name)
{
        struct joined j = {.name = name};

        MHD_get_connection_values(conn, MHD_HEADER_KIND, join_header, &j);
        if (j.failed) {
                free(j.text);
                return NULL;
        }
        return j.text;
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned code, const char *fmt, ...)
    _printf_(3, 4);
static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned code, const char *fmt, ...)
{
        enum MHD_Result r;
        va_list ap;

        va_start(ap, fmt);
        r = xp_http_queue_text(conn, code, fmt, ap);
        va_end(ap);
        return r;
}

/* The protocols offered, as "[a b]" for a refusal (static buffer of the caller). */
static const char *offer_text(const char *offer, char *buf, size_t size)
{
        size_t k = 0;

        buf[0] = '\0';
        for (const char *p = offer ? offer : ""; *p && k + 2 < size; p++)
                if (*p != ' ')
                        buf[k++] = *p == ',' ? ' ' : *p;
        buf[k] = '\0';
        return buf;
}

/*
 * The protocol: a WebSocket (Upgrade: websocket, with a subprotocol of Sec-WebSocket-Protocol)
 * or SPDY (Upgrade: SPDY/3.1, with one of X-Stream-Protocol-Version). NULL with *ret_why and
 * *ret_code when the upgrade cannot be made.
 */
static const char *choose_protocol(struct MHD_Connection *conn,
                                   struct stream_request *req,
                                   unsigned *ret_code,
                                   char *why,
                                   size_t why_size)
{
        const char *upgrade = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Upgrade");
        const char *ws_why = NULL, *chosen;
        bool pf = req->kind == STREAM_PORTFORWARD;
        _cleanup_free_ char *offer = NULL;
        char offered[512];

        *ret_code = 400;
        req->websocket = xp_ws_has_token(upgrade, "websocket");
        if (!req->websocket && !xp_ws_has_token(upgrade, "SPDY/3.1")) {
                snprintf(
                    why,
                    why_size,
                    "unable to upgrade: missing upgrade headers in request: the Upgrade header must be websocket or SPDY/3.1");
                return NULL;
        }
        if (req->websocket &&
            xp_ws_check_handshake(
                upgrade,
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Connection"),
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Version"),
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Key"),
                &ws_why) < 0) {
                snprintf(why, why_size, "unable to upgrade: %s", ws_why);
                return NULL;
        }
        offer = header_all(conn,
                           req->websocket ? "Sec-WebSocket-Protocol" : "X-Stream-Protocol-Version");
        chosen = xp_ws_select_protocol(
            offer, pf ? (req->websocket ? pf_ws_protocols : pf_spdy_protocols) : channel_protocols);
        if (!chosen) {
                *ret_code = 403;
                snprintf(
                    why,
                    why_size,
                    "unable to upgrade: requested protocol(s) are not supported: [%s]; supports [%s]",
                    offer_text(offer, offered, sizeof(offered)),
                    pf ? (req->websocket ? XP_PF_WS_PROTOCOL : XP_PF_PROTOCOL)
                       : XP_RC_V5 " " XP_RC_V4);
        }
        return chosen;
}

/* ---- sessions ---------------------------------------------------------------------------------
 */

static void session_free(struct session *s)
{
        if (!s)
                return;
        if (s->ops && s->ops->free)
                s->ops->free(s);
        if (s->spdy_ready)
                spdy_done(&s->spdy);
        sconn_done(&s->conn);
        request_free(&s->req);
        free(s);
}

static void session_release(struct xp_agent_streams *st, const char *user)
{
        pthread_mutex_lock(&st->lock);
        stream_users_release(&st->users, user);
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->lock);
}

/* One pass: input handled, done checked, output flushed. 1 to go on, 0 when over. */
static int session_step(struct session *s)
{
        int r = s->ops->input(s);
        bool done;

        if (r < 0)
                return 0;
        done = s->ops->done(s);
        if (sconn_flush(&s->conn) < 0)
                return 0;
        if (done)
                return sconn_pending(&s->conn) > 0 ? 1 : 0;
        return s->conn.eof || s->conn.close_received ? 0 : 1;
}

/* POLL_MS, or less up to the session's next deadline (a terminal's first size waits 1 s, not 2). */
static int poll_timeout(struct session *s)
{
        int64_t due = s->ops->due ? s->ops->due(s) : INT64_MAX, left;

        if (due == INT64_MAX)
                return POLL_MS;
        left = due - stream_now_ms();
        return left <= 0 ? 0 : left < POLL_MS ? (int)left : POLL_MS;
}

/* Polls the connection, the stop signal and the session's own descriptors; 0 when it is over. */
static int session_wait(struct session *s, int stop_fd)
{
        struct pollfd fds[SESSION_POLL_MAX];
        size_t n = 2, own;
        int r;

        fds[0] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
        fds[1] = (struct pollfd){.fd = s->conn.fd,
                                 .events = (short)((sconn_wants_input(&s->conn) ? POLLIN : 0) |
                                                   (sconn_pending(&s->conn) ? POLLOUT : 0))};
        own = s->ops->poll(s, fds + 2, SESSION_POLL_MAX - 3);
        fds[n + own] = (struct pollfd){.fd = s->peer_fd, .events = POLLRDHUP};
        r = poll(fds, n + own + (s->peer_fd >= 0), poll_timeout(s));
        if (r < 0 && errno != EINTR)
                return 0;
        if (r > 0 && (fds[0].revents || (s->peer_fd >= 0 && fds[n + own].revents)))
                return 0;
        if (r > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
                (void)sconn_fill(&s->conn);
        if (r > 0 && s->ops->handle(s, fds + 2, own) < 0)
                return 0;
        if (stream_now_ms() - s->conn.last_data_ms > s->idle_timeout_ms) {
                xp_debug("stream",
                         "%s/%s: idle for %lld ms: ended",
                         s->req.ns,
                         s->req.pod,
                         (long long)s->idle_timeout_ms);
                return 0;
        }
        return 1;
}

/* The client's socket when libmicrohttpd hands the upgraded stream over a pair (TLS), else -1. */
static int tls_peer_fd(struct MHD_Connection *conn, MHD_socket sock)
{
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

        return info && info->connect_fd != sock ? info->connect_fd : -1;
}

struct upgraded {
        struct session *s;
        struct MHD_UpgradeResponseHandle *urh;
};

static void *session_thread(void *arg)
{
        struct upgraded *u = arg;
        struct session *s = u->s;
        struct xp_agent_streams *st = s->owner;
        char user[sizeof(s->req.user)];

        memcpy(user, s->req.user, sizeof(user));
        if (s->ops->start(s) >= 0)
                while (session_step(s) > 0 && session_wait(s, st->stop_fd) > 0)
                        ;
        if (s->ops->abort)
                s->ops->abort(s);
        sconn_linger(&s->conn, st->stop_fd, s->peer_fd, LINGER_MS);
        MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
        session_free(s);
        free(u);
        session_release(st, user);
        return NULL;
}

static void on_upgrade(void *cls,
                       struct MHD_Connection *conn,
                       void *req_cls,
                       const char *extra_in,
                       size_t extra_in_size,
                       MHD_socket sock,
                       struct MHD_UpgradeResponseHandle *urh)
{
        struct session *s = cls;
        struct xp_agent_streams *st = s->owner;
        struct upgraded *u = calloc(1, sizeof(*u));
        bool tunnel = s->req.websocket && s->req.kind == STREAM_PORTFORWARD;
        pthread_attr_t attr;
        pthread_t thread;
        int r = u ? 0 : -ENOMEM;

        (void)req_cls;
        fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
        s->peer_fd = tls_peer_fd(conn, sock);
        if (r >= 0)
                r = sconn_init(&s->conn,
                               sock,
                               tunnel             ? SCONN_WS_TUNNEL
                               : s->req.websocket ? SCONN_WS
                                                  : SCONN_RAW,
                               extra_in,
                               extra_in_size);
        if (r >= 0 && (!s->req.websocket || tunnel)) {
                r = spdy_init(&s->spdy, &s->conn);
                s->spdy_ready = r >= 0;
        }
        if (r >= 0) {
                *u = (struct upgraded){.s = s, .urh = urh};
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = -pthread_create(&thread, &attr, session_thread, u);
                pthread_attr_destroy(&attr);
        }
        if (r < 0) {
                xp_debug("stream", "cannot run a stream: %s", strerror(-r));
                MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
                session_release(st, s->req.user);
                session_free(s);
                free(u);
        }
}

/* Counts the stream of user in: 0, -ESHUTDOWN when the endpoint stops, else
 * stream_users_admit()'s refusal (the node full, the user's share full). */
static int session_admit(struct xp_agent_streams *st, const char *user)
{
        int r;

        pthread_mutex_lock(&st->lock);
        r = st->stopping ? -ESHUTDOWN : stream_users_admit(&st->users, user);
        pthread_mutex_unlock(&st->lock);
        return r;
}

/* The answer to a stream session_admit() refused (r): 429 for a user at their share, else 503. */
static enum MHD_Result send_busy(struct MHD_Connection *conn, int r)
{
        if (r == -EDQUOT)
                return send_text(conn,
                                 429,
                                 "you have %d streams open on this node at once, your share of its "
                                 "%d; try again later\n",
                                 XP_AGENT_STREAMS_PER_USER,
                                 XP_AGENT_STREAMS_MAX);
        if (r == -EBUSY)
                return send_text(conn, 503, "too many streams at once, try again later\n");
        return send_text(conn, 503, "too many streams at once, or the agent is stopping\n");
}

static enum MHD_Result
answer_upgrade(struct MHD_Connection *conn, struct session *s, struct xp_http_door *door)
{
        char accept[XP_WS_ACCEPT_LEN + 1];
        struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, s);
        enum MHD_Result ret;

        if (!resp)
                return MHD_NO;
        if (s->req.websocket) {
                if (xp_ws_accept_key(
                        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Key"),
                        accept) < 0) {
                        MHD_destroy_response(resp);
                        return MHD_NO;
                }
                MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
                MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
                MHD_add_response_header(resp, "Sec-WebSocket-Protocol", s->req.protocol);
        } else {
                MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "SPDY/3.1");
                MHD_add_response_header(resp, "X-Stream-Protocol-Version", s->req.protocol);
        }
        xp_http_door_upgraded(door, conn);
        ret = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
        MHD_destroy_response(resp);
        return ret;
}

static int handle(void *cls,
                  struct MHD_Connection *conn,
                  const char *url,
                  struct xp_http_door *door,
                  bool *ret_busy)
{
        struct xp_agent_streams *st = cls;
        struct session *s = calloc(1, sizeof(*s));
        const char *why;
        char reason[1024];
        unsigned code;
        enum MHD_Result ret;
        int r;

        if (!s)
                return MHD_NO;
        s->peer_fd = -1;
        why = request_parse(conn, url, &s->req);
        if (!why &&
            !(s->req.protocol = choose_protocol(conn, &s->req, &code, reason, sizeof(reason))))
                why = reason;
        else if (why)
                code = 400;
        if (why) {
                ret = send_text(conn, code, "%s\n", why);
                session_free(s);
                return ret;
        }
        r = session_admit(st, s->req.user);
        if (r < 0) {
                session_free(s);
                *ret_busy = true;
                return send_busy(conn, r);
        }
        s->owner = st;
        s->runtime = st->runtime;
        s->idle_timeout_ms = st->idle_timeout_ms;
        s->ops = s->req.kind == STREAM_PORTFORWARD ? &xp_stream_pf_ops : &xp_stream_exec_ops;
        ret = answer_upgrade(conn, s, door);
        if (ret != MHD_YES) {
                session_release(st, s->req.user);
                session_free(s);
        }
        return ret;
}

/* ---- lifecycle --------------------------------------------------------------------------------
 */

int xp_agent_streams_new(const struct xp_agent_streams_options *o,
                         struct xp_agent_streams **ret,
                         struct xp_error *err)
{
        struct xp_agent_streams *st = calloc(1, sizeof(*st));

        if (!st)
                return -ENOMEM;
        st->runtime = o->runtime;
        st->idle_timeout_ms = o->idle_timeout_ms > 0 ? o->idle_timeout_ms : DEFAULT_IDLE_MS;
        st->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (st->stop_fd < 0) {
                int r = -errno;

                free(st);
                return xp_errorf(err, r, "eventfd: %s", strerror(-r));
        }
        pthread_mutex_init(&st->lock, NULL);
        pthread_cond_init(&st->cond, NULL);
        stream_users_init(&st->users, XP_AGENT_STREAMS_MAX, XP_AGENT_STREAMS_PER_USER);
        *ret = st;
        return 0;
}

void xp_agent_streams_hook(struct xp_agent_streams *st, struct xp_logserver_streams *ret)
{
        *ret = (struct xp_logserver_streams){.claims = claims, .handle = handle, .cls = st};
}

void xp_agent_streams_stop(struct xp_agent_streams *st)
{
        uint64_t one = 1;

        if (!st)
                return;
        pthread_mutex_lock(&st->lock);
        st->stopping = true;
        if (write(st->stop_fd, &one, sizeof(one)) < 0)
                xp_debug("stream", "waking the streams: %s", strerror(errno));
        while (st->users.active > 0)
                pthread_cond_wait(&st->cond, &st->lock);
        pthread_mutex_unlock(&st->lock);
}

void xp_agent_streams_free(struct xp_agent_streams *st)
{
        if (!st)
                return;
        xp_agent_streams_stop(st);
        close(st->stop_fd);
        stream_users_done(&st->users);
        pthread_mutex_destroy(&st->lock);
        pthread_cond_destroy(&st->cond);
        free(st);
}

unsigned xp_agent_streams_active(struct xp_agent_streams *st)
{
        unsigned n;

        pthread_mutex_lock(&st->lock);
        n = st->users.active;
        pthread_mutex_unlock(&st->lock);
        return n;
}
