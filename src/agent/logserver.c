/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's log endpoint (logserver.h). Each request is checked against the raw URI as it
 * arrived (libmicrohttpd's URI log callback sees it before any decoding), which is what the
 * server signed. A log is streamed by a reader thread that runs xp_log_read() into one end of a
 * socket pair while libmicrohttpd's content callback reads the other end; the callback also
 * watches the client's socket, so a client that goes away ends the reader (its writes fail, or
 * its once-a-second check sees the pair closed) even while a follow waits for new lines.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "logserver.h"
#include "xpool/http_door.h"
#include "xpool/http_text.h"
#include "xpool/log.h"
#include "xpool/logread.h"
#include "xpool/logsign.h"
#include "xpool/macro.h"
#include "xpool/names.h"
#include "xpool/podlog.h"
#include "xpool/signonce.h"
#include "xpool/tls_priority.h"

#define PREFIX       "/containerLogs/"
#define STREAM_BLOCK (32 * 1024)
#define WAIT_MS      1000
/* Stream signatures remembered (each at most XP_LOGSIGN_AHEAD_MAX s): 40 bytes each, so 160 KiB;
 * more streams a minute than one busy user's */
#define STREAMS_SIGNED_MAX 4096

/*
 * Only the API server calls the log endpoint, one connection per `kubectl logs`, so its limits
 * are those of one busy user; the door keeps idle and slow connections out of the daemon, as
 * the API server's does.
 */
static const struct xp_http_door_limits limits = {
    .head_timeout_ms = 10000,
    .body_timeout_ms = 10000,
    .idle_timeout_ms = 60000,
    .pending_max = 2048,
    .pending_per_client = 1024,
    .connections_max = 512,
    .preauth_max = 128,
    .preauth_per_client = 64,
    .user_connections_max = 384,
    .user_streams_max = 256,
};

struct xp_logserver {
        struct MHD_Daemon *daemon;
        struct xp_http_door *door;
        char *log_dir;
        char *tls_cert, *tls_key; /* PEM; NULL: plain HTTP */
        char token_id[XP_LOGSIGN_ID_MAX];
        uint8_t key[XP_LOGSIGN_KEY_LEN];
        xp_logserver_metrics_fn metrics;
        void *metrics_userdata;
        xp_logserver_authorize_fn metrics_authorize;
        void *metrics_authorize_userdata;
        uint16_t port;
        atomic_bool stopping;
        struct xp_logserver_streams streams;
        struct xp_sign_once *streams_signed; /* the stream signatures used, until they expire */
};

struct logstream {
        struct xp_logserver *server;
        char *dir;
        unsigned attempt;
        struct xp_log_read_options options;
        int rfd, wfd;  /* the socket pair: MHD reads rfd, the reader thread writes wfd */
        int client_fd; /* the HTTP client's socket, watched for hang-ups */
        pthread_t thread;
};

/* A request begins: its target as it arrived, which is what the server signed. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
        struct xp_logserver *s = cls;

        xp_http_door_request_begin(s->door, conn);
        return uri ? strdup(uri) : NULL;
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct xp_logserver *s = cls;

        (void)toe;
        xp_http_door_request_end(s->door, conn);
        free(*req_cls);
        *req_cls = NULL;
}

static enum MHD_Result
send_text(struct xp_logserver *s, struct MHD_Connection *conn, unsigned code, const char *fmt, ...)
    _printf_(4, 5);
static enum MHD_Result
send_text(struct xp_logserver *s, struct MHD_Connection *conn, unsigned code, const char *fmt, ...)
{
        enum MHD_Result r;
        va_list ap;

        va_start(ap, fmt);
        r = xp_http_queue_text(conn, code, fmt, ap);
        va_end(ap);
        if (r == MHD_YES)
                xp_http_door_response_queued(s->door, conn);
        return r;
}

/* The door's errors in the endpoint's own form: plain text, which the server's proxy quotes. */
static int format_text(
    unsigned code, const char *reason, const char *message, char **ret_body, const char **ret_type)
{
        size_t len = strlen(message);

        (void)code;
        (void)reason;
        if (asprintf(ret_body, "%s%s", message, len && message[len - 1] == '\n' ? "" : "\n") < 0)
                return -ENOMEM;
        *ret_type = "text/plain; charset=utf-8";
        return 0;
}

/* ---- the stream ----------------------------------------------------------------------------- */

static int write_to_pair(const char *data, size_t len, void *userdata)
{
        struct logstream *ls = userdata;

        if (atomic_load(&ls->server->stopping))
                return -ECANCELED;
        if (len == 0) {
                /* The follower's heartbeat: has the other end gone? */
                struct pollfd p = {.fd = ls->wfd, .events = 0};

                if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)))
                        return -EPIPE;
                return 0;
        }
        while (len > 0) {
                ssize_t n = send(ls->wfd, data, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

static void *reader_main(void *arg)
{
        struct logstream *ls = arg;
        struct xp_error err = {0};
        int r;

        r = xp_log_read(ls->dir, ls->attempt, &ls->options, write_to_pair, ls, &err);
        if (r < 0 && r != -EPIPE && r != -ECANCELED)
                xp_debug(
                    "logs", "reading the log in '%s' failed: %s", ls->dir, xp_error_message(&err));
        shutdown(ls->wfd, SHUT_WR);
        return NULL;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct logstream *ls = cls;

        (void)pos;
        for (;;) {
                struct pollfd p[2] = {
                    {.fd = ls->rfd, .events = POLLIN},
                    {.fd = ls->client_fd, .events = POLLRDHUP},
                };
                ssize_t n;
                int r;

                r = poll(p, ls->client_fd >= 0 ? 2 : 1, WAIT_MS);
                if (r < 0 && errno != EINTR)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                if (atomic_load(&ls->server->stopping))
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                if (r <= 0)
                        continue;
                if (p[0].revents) {
                        n = recv(ls->rfd, buf, max, 0);
                        if (n > 0)
                                return n;
                        if (n == 0)
                                return MHD_CONTENT_READER_END_OF_STREAM;
                        if (errno != EINTR && errno != EAGAIN)
                                return MHD_CONTENT_READER_END_WITH_ERROR;
                        continue;
                }
                if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
                        return MHD_CONTENT_READER_END_WITH_ERROR;
        }
}

static void stream_free(void *cls)
{
        struct logstream *ls = cls;

        /* Closing our end makes the reader's next write or heartbeat fail: it ends soon. */
        close(ls->rfd);
        pthread_join(ls->thread, NULL);
        close(ls->wfd);
        free(ls->dir);
        free(ls);
}

static enum MHD_Result start_stream(struct xp_logserver *s,
                                    struct MHD_Connection *conn,
                                    char *dir,
                                    unsigned attempt,
                                    const struct xp_log_read_options *options)
{
        const union MHD_ConnectionInfo *info;
        struct MHD_Response *response;
        struct logstream *ls;
        enum MHD_Result r;
        int pair[2];

        ls = calloc(1, sizeof *ls);
        if (!ls) {
                free(dir);
                return MHD_NO;
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                free(dir);
                free(ls);
                return send_text(
                    s, conn, 500, "cannot create a socket pair: %s\n", strerror(errno));
        }
        *ls = (struct logstream){
            .server = s,
            .dir = dir,
            .attempt = attempt,
            .options = *options,
            .rfd = pair[0],
            .wfd = pair[1],
            .client_fd = -1,
        };
        info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (info)
                ls->client_fd = info->connect_fd;
        if (pthread_create(&ls->thread, NULL, reader_main, ls) != 0) {
                close(pair[0]);
                close(pair[1]);
                free(dir);
                free(ls);
                return send_text(s, conn, 500, "cannot start a thread to read the log\n");
        }
        response = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, ls, stream_free);
        if (!response) {
                stream_free(ls);
                return MHD_NO;
        }
        MHD_add_response_header(
            response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
        MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
        r = MHD_queue_response(conn, 200, response);
        MHD_destroy_response(response);
        if (r == MHD_YES)
                xp_http_door_response_queued(s->door, conn);
        return r;
}

/* ---- requests ------------------------------------------------------------------------------- */

static bool uid_valid(const char *uid)
{
        size_t len = strlen(uid);

        if (len == 0 || len > 128)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((uid[i] >= '0' && uid[i] <= '9') || (uid[i] >= 'a' && uid[i] <= 'z') ||
                      (uid[i] >= 'A' && uid[i] <= 'Z') || uid[i] == '-'))
                        return false;
        return true;
}

/* The newest <ns>_<pod>_* directory in log_dir (caller frees), or NULL. */
static char *newest_pod_dir(const char *log_dir, const char *ns, const char *pod)
{
        _cleanup_free_ char *prefix = NULL;
        char *best = NULL;
        struct timespec best_time = {0};
        struct dirent *de;
        DIR *d;

        if (asprintf(&prefix, "%s_%s_", ns, pod) < 0)
                return NULL;
        d = opendir(log_dir);
        if (!d)
                return NULL;
        while ((de = readdir(d))) {
                char *path;
                struct stat st;

                if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
                    !uid_valid(de->d_name + strlen(prefix)))
                        continue;
                if (asprintf(&path, "%s/%s", log_dir, de->d_name) < 0)
                        break;
                if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
                    (!best || st.st_mtim.tv_sec > best_time.tv_sec ||
                     (st.st_mtim.tv_sec == best_time.tv_sec &&
                      st.st_mtim.tv_nsec > best_time.tv_nsec))) {
                        free(best);
                        best = path;
                        best_time = st.st_mtim;
                } else {
                        free(path);
                }
        }
        closedir(d);
        return best;
}

static const char *query_of(void *userdata, const char *name)
{
        return MHD_lookup_connection_value(userdata, MHD_GET_ARGUMENT_KIND, name);
}

/* The query's options, as the log reader takes them: 0, or -EINVAL with bad filled. */
static int parse_options(struct MHD_Connection *conn,
                         struct xp_log_read_options *ret,
                         bool *ret_previous,
                         struct xp_pod_log_refusal *bad)
{
        struct xp_pod_log_options o;
        struct timespec now;

        if (xp_pod_log_options_parse(query_of, conn, &o, bad) < 0)
                return -EINVAL;
        clock_gettime(CLOCK_REALTIME, &now);
        *ret = (struct xp_log_read_options){
            .follow = o.follow,
            .tail_lines = o.tail_lines,
            .since_ns = xp_pod_log_options_since_ns(&o, now.tv_sec * 1000000000LL + now.tv_nsec),
            .limit_bytes = o.limit_bytes < 0 ? 0 : o.limit_bytes,
            .timestamps = o.timestamps,
        };
        *ret_previous = o.previous;
        return 0;
}

/* Finds the container's log and streams the attempt asked for, or answers 400/404. */
static enum MHD_Result open_log(struct xp_logserver *s,
                                struct MHD_Connection *conn,
                                const char *ns,
                                const char *pod,
                                const char *container,
                                bool previous,
                                const struct xp_log_read_options *o)
{
        const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "podUID");
        _cleanup_free_ char *pod_dir = NULL;
        struct xp_error err = {0};
        char *dir = NULL;
        unsigned attempt;
        struct stat st;

        if (v && v[0]) {
                if (!uid_valid(v))
                        return send_text(s, conn, 400, "podUID: not a UID\n");
                if (asprintf(&pod_dir, "%s/%s_%s_%s", s->log_dir, ns, pod, v) < 0)
                        return MHD_NO;
                if (stat(pod_dir, &st) < 0 || !S_ISDIR(st.st_mode))
                        return send_text(s,
                                         conn,
                                         404,
                                         "pod %s/%s (uid %s) has no logs on this node\n",
                                         ns,
                                         pod,
                                         v);
        } else {
                pod_dir = newest_pod_dir(s->log_dir, ns, pod);
                if (!pod_dir)
                        return send_text(
                            s, conn, 404, "pod %s/%s has no logs on this node\n", ns, pod);
        }
        if (asprintf(&dir, "%s/%s", pod_dir, container) < 0)
                return MHD_NO;
        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
            xp_log_latest_attempt(dir, previous, &attempt, &err) < 0) {
                free(dir);
                if (previous)
                        return send_text(
                            s,
                            conn,
                            400,
                            "previous terminated container \"%s\" in pod \"%s\" not found\n",
                            container,
                            pod);
                return send_text(s,
                                 conn,
                                 404,
                                 "container \"%s\" in pod \"%s\" has no logs on this node\n",
                                 container,
                                 pod);
        }
        /* The previous attempt is complete: following it ends at its end. */
        return start_stream(s, conn, dir, attempt, o);
}

/* The server's signature on the request (its raw URI): 0, or -EACCES with the 401 in ret. */
static int verify_signature(struct xp_logserver *s,
                            struct MHD_Connection *conn,
                            const char *raw_uri,
                            struct xp_http_refusal *ret)
{
        struct xp_error err = {0};
        int r;

        r = xp_logsign_verify(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, XP_LOGSIGN_HEADER),
                              s->token_id,
                              s->key,
                              raw_uri,
                              (int64_t)time(NULL),
                              &err);
        if (r < 0)
                xp_http_refuse(ret, 401, "Unauthorized: %s\n", xp_error_message(&err));
        return r;
}

/* The xpool* parameters of a request, by name (the server writes each once). */
struct server_parameters {
        const char *names[4];
        size_t n;
        bool duplicate;
};

static enum MHD_Result
note_server_parameter(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        struct server_parameters *seen = cls;

        (void)kind;
        (void)value;
        if (!key || strncasecmp(key, "xpool", 5) != 0)
                return MHD_YES;
        for (size_t i = 0; i < seen->n; i++)
                if (strcasecmp(seen->names[i], key) == 0)
                        seen->duplicate = true;
        if (seen->n < XP_ELEMENTSOF(seen->names))
                seen->names[seen->n++] = key;
        else
                seen->duplicate = true; /* more than the server writes */
        return seen->duplicate ? MHD_NO : MHD_YES;
}

/*
 * A request naming an xpool* parameter twice was not written by the server, which drops a
 * client's own (decoded, as names are read here): one of them could be the client's, e.g. an
 * xpoolUser charging the stream to another user's share. 0, or -EINVAL with the 400 in ret.
 */
static int refuse_duplicate_server_parameters(struct MHD_Connection *conn,
                                              struct xp_http_refusal *ret)
{
        struct server_parameters seen = {0};

        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, note_server_parameter, &seen);
        if (!seen.duplicate)
                return 0;
        xp_http_refuse(ret,
                       400,
                       "Bad Request: a parameter starting with \"xpool\" is given more than once; "
                       "those are the API server's\n");
        return -EINVAL;
}

/*
 * A stream's signature is good for one request: one replayed (by whoever saw it on the plain
 * HTTP from the server) is refused, as the server's nonce makes each request it signs unique.
 * The user the server names (xpoolUser, signed with the rest) holds at most a share of the
 * signatures remembered: one user's flood of streams fills its share, not the node's.
 * 0, or -EACCES with the refusal in ret.
 */
static int
claim_signature(struct xp_logserver *s, struct MHD_Connection *conn, struct xp_http_refusal *ret)
{
        int r = xp_sign_once_claim(
            s->streams_signed,
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, XP_LOGSIGN_HEADER),
            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "xpoolUser"),
            (int64_t)time(NULL));

        if (r == -EALREADY)
                xp_http_refuse(ret,
                               401,
                               "Unauthorized: this signature was used already: a signed stream "
                               "request opens one stream\n");
        else if (r == -EDQUOT)
                xp_http_refuse(ret,
                               429,
                               "Too Many Requests: you opened %d streams on this node in the last "
                               "%d s, your share; try again later\n",
                               STREAMS_SIGNED_MAX / XP_SIGN_ONCE_SHARES,
                               XP_LOGSIGN_STREAM_TTL);
        else if (r == -ENOSPC)
                xp_http_refuse(ret,
                               503,
                               "Service Unavailable: %d streams were opened in the last %d s, "
                               "try again later\n",
                               STREAMS_SIGNED_MAX,
                               XP_LOGSIGN_STREAM_TTL);
        else if (r < 0)
                xp_http_refuse(ret, 401, "Unauthorized: malformed %s header\n", XP_LOGSIGN_HEADER);
        return r < 0 ? -EACCES : 0;
}

/* Whom the door counts a signed request for: the user the server names (xpoolUser, signed with
 * the rest), so that one user's streams and connections fill their own limits and not those of
 * everyone the server serves; a request without one (auth off, an older server) is the server's. */
static void door_user(struct MHD_Connection *conn, char ret[static 32])
{
        const char *user = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "xpoolUser");

        if (user && *user && strlen(user) < 24)
                snprintf(ret, 32, "user:%s", user);
        else
                snprintf(ret, 32, "apiserver");
}

/*
 * exec, attach, port-forward: signed as the logs are, each a stream of the API server's. The
 * signature is claimed before the door counts the request (a replay takes no room), and given
 * back when the door or the node's streams then refuse it for want of room: a request that opened
 * nothing does not use it up, nor hold a place among the signatures remembered.
 */
static enum MHD_Result handle_stream(struct xp_logserver *s,
                                     struct MHD_Connection *conn,
                                     const char *url,
                                     const char *raw_uri)
{
        const char *signature =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, XP_LOGSIGN_HEADER);
        struct xp_http_refusal refusal;
        bool busy = false;
        enum MHD_Result ret;
        char user[32];

        if (verify_signature(s, conn, raw_uri, &refusal) < 0 ||
            refuse_duplicate_server_parameters(conn, &refusal) < 0 ||
            claim_signature(s, conn, &refusal) < 0)
                return xp_http_door_send_refusal(s->door, conn, &refusal);
        door_user(conn, user);
        if (xp_http_door_admit(s->door, conn, user, true, &refusal) < 0) {
                xp_sign_once_release(s->streams_signed, signature);
                return xp_http_door_send_refusal(s->door, conn, &refusal);
        }
        xp_http_door_body_done(s->door, conn);
        ret = (enum MHD_Result)s->streams.handle(s->streams.cls, conn, url, s->door, &busy);
        if (busy)
                xp_sign_once_release(s->streams_signed, signature);
        return ret;
}

static enum MHD_Result handle_logs(struct xp_logserver *s,
                                   struct MHD_Connection *conn,
                                   const char *url,
                                   const char *raw_uri)
{
        struct xp_log_read_options o;
        struct xp_pod_log_refusal bad;
        struct xp_http_refusal refusal;
        struct xp_error err = {0};
        char ns[64], pod[254], container[64], user[32];
        const char *p = url + strlen(PREFIX);
        bool previous = false;

        if (verify_signature(s, conn, raw_uri, &refusal) < 0)
                return xp_http_door_send_refusal(s->door, conn, &refusal);

        if (sscanf(p, "%63[^/]/%253[^/]/%63[^/]", ns, pod, container) != 3 ||
            strlen(ns) + strlen(pod) + strlen(container) + 2 != strlen(p))
                return send_text(
                    s, conn, 404, "not found: want /containerLogs/NAMESPACE/POD/CONTAINER\n");
        if (xp_check_dns1123_label(ns, &err) < 0 || xp_check_dns1123_subdomain(pod, &err) < 0 ||
            xp_check_dns1123_label(container, &err) < 0)
                return send_text(s, conn, 400, "bad path %s: %s\n", url, xp_error_message(&err));
        if (parse_options(conn, &o, &previous, &bad) < 0)
                return send_text(s, conn, 400, "%s: want %s\n", bad.option, bad.want);
        /* Only the API server signs, naming who asked: a follow is one stream of theirs. */
        door_user(conn, user);
        if (xp_http_door_admit(s->door, conn, user, o.follow, &refusal) < 0)
                return xp_http_door_send_refusal(s->door, conn, &refusal);
        xp_http_door_body_done(s->door, conn);
        return open_log(s, conn, ns, pod, container, previous, &o);
}

/*
 * Who may read: /metrics/resource only the server (its signature), /metrics whom the agent's
 * authorisation allows (a bearer token the server accepts for nodes/metrics), or anyone when it
 * has none (--metrics-anonymous). 0, or -1 with the refusal filled in.
 */
static int check_metrics_reader(struct xp_logserver *s,
                                struct MHD_Connection *conn,
                                bool resource,
                                const char *raw_uri,
                                struct xp_http_refusal *refusal)
{
        struct xp_error err = {0};
        int r;

        if (resource) {
                if (xp_logsign_verify(
                        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, XP_LOGSIGN_HEADER),
                        s->token_id,
                        s->key,
                        raw_uri,
                        (int64_t)time(NULL),
                        &err) >= 0)
                        return 0;
                xp_http_refuse(refusal, 401, "Unauthorized: %s\n", xp_error_message(&err));
                return -1;
        }
        if (!s->metrics_authorize)
                return 0;
        r = s->metrics_authorize(
            s->metrics_authorize_userdata,
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
            &err);
        if (r == 0)
                return 0;
        if (r == -EACCES)
                xp_http_refuse(refusal, 401, "Unauthorized: %s\n", xp_error_message(&err));
        else if (r == -EPERM)
                xp_http_refuse(refusal, 403, "Forbidden: %s\n", xp_error_message(&err));
        else
                xp_http_refuse(refusal, 503, "Service Unavailable: %s\n", xp_error_message(&err));
        return -1;
}

/* /metrics and /metrics/resource: the text already rendered, for whom may read it. */
static enum MHD_Result handle_metrics(struct xp_logserver *s,
                                      struct MHD_Connection *conn,
                                      const char *url,
                                      const char *raw_uri)
{
        bool resource = strcmp(url, "/metrics/resource") == 0;
        struct xp_http_refusal refusal;
        struct MHD_Response *response;
        const char *type = NULL;
        char *text = NULL;
        size_t len = 0;
        enum MHD_Result result;

        if (!resource && strcmp(url, "/metrics") != 0)
                return send_text(s, conn, 404, "not found: %s\n", url);
        if (check_metrics_reader(s, conn, resource, raw_uri, &refusal) < 0)
                return xp_http_door_send_refusal(s->door, conn, &refusal);
        if (xp_http_door_admit(s->door, conn, "metrics", false, &refusal) < 0)
                return xp_http_door_send_refusal(s->door, conn, &refusal);
        xp_http_door_body_done(s->door, conn);
        if (s->metrics(s->metrics_userdata,
                       resource,
                       MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept"),
                       &text,
                       &len,
                       &type) < 0)
                return send_text(s, conn, 500, "cannot render the metrics\n");
        response = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(text);
                return MHD_NO;
        }
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        result = MHD_queue_response(conn, 200, response);
        MHD_destroy_response(response);
        if (result == MHD_YES)
                xp_http_door_response_queued(s->door, conn);
        return result;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *conn,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size,
                                  void **req_cls)
{
        struct xp_logserver *s = cls;
        const char *raw_uri = *req_cls;
        struct xp_http_refusal refusal;

        (void)version;
        (void)upload_data;
        if (*upload_data_size > 0) {
                *upload_data_size = 0; /* bodies are ignored */
                return MHD_YES;
        }
        if (xp_http_door_check_request(s->door, conn, raw_uri, &refusal) < 0)
                return xp_http_door_send_refusal(s->door, conn, &refusal);
        if (s->streams.claims && s->streams.claims(url)) {
                if (strcmp(method, "GET") != 0)
                        return send_text(s, conn, 405, "method %s not allowed: only GET\n", method);
                return handle_stream(s, conn, url, raw_uri);
        }
        if (s->metrics && strncmp(url, "/metrics", 8) == 0 && strcmp(method, "GET") == 0)
                return handle_metrics(s, conn, url, raw_uri);
        if (strncmp(url, PREFIX, strlen(PREFIX)) != 0)
                return send_text(s, conn, 404, "not found: %s\n", url);
        if (strcmp(method, "GET") != 0)
                return send_text(s, conn, 405, "method %s not allowed: only GET\n", method);
        return handle_logs(s, conn, url, raw_uri);
}

/* The serving certificate and key, kept while the daemon runs. */
static int
copy_tls(struct xp_logserver *s, const struct xp_logserver_options *o, struct xp_error *err)
{
        if (!o->tls_cert != !o->tls_key)
                return xp_errorf(
                    err, -EINVAL, "log endpoint: HTTPS needs both a certificate and a key");
        if (!o->tls_cert)
                return 0;
        s->tls_cert = strdup(o->tls_cert);
        s->tls_key = strdup(o->tls_key);
        return s->tls_cert && s->tls_key ? 0 : -ENOMEM;
}

int xp_logserver_new(const struct xp_logserver_options *o,
                     struct xp_logserver **ret,
                     struct xp_error *err)
{
        _cleanup_(xp_logserver_freep) struct xp_logserver *s = NULL;
        _cleanup_close_ int fd = -1;
        const char *host = o->host ? o->host : "127.0.0.1";
        struct MHD_OptionItem door_options[XP_HTTP_DOOR_MHD_OPTIONS];
        bool ipv6 = false;
        int r;

        if (!o->log_dir || !o->token_id || !o->token_id[0] ||
            strlen(o->token_id) >= XP_LOGSIGN_ID_MAX)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "log endpoint: a log directory and the node token's id are needed");
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->log_dir = strdup(o->log_dir);
        if (!s->log_dir)
                return -ENOMEM;
        strcpy(s->token_id, o->token_id);
        if (o->streams)
                s->streams = *o->streams;
        s->metrics = o->metrics;
        s->metrics_userdata = o->metrics_userdata;
        s->metrics_authorize = o->metrics_authorize;
        s->metrics_authorize_userdata = o->metrics_authorize_userdata;
        memcpy(s->key, o->key, sizeof s->key);
        r = copy_tls(s, o, err);
        if (r < 0)
                return r;
        if (xp_sign_once_new(STREAMS_SIGNED_MAX, &s->streams_signed) < 0)
                return -ENOMEM;
        r = xp_http_listen(host, o->port, &ipv6, &s->port, err);
        if (r < 0)
                return xp_error_prefix(err, r, "log endpoint");
        fd = r;
        r = xp_http_door_new(&(struct xp_http_door_options){.listen_fd = TAKE_FD(fd),
                                                            .tls = s->tls_cert != NULL,
                                                            .limits = &limits,
                                                            .format_error = format_text},
                             &s->door,
                             err);
        if (r < 0)
                return xp_error_prefix(err, r, "log endpoint");
        xp_http_door_mhd_options(s->door, door_options);
        struct MHD_OptionItem tls_options[] = {
            {MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert},
            {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
            {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)XP_TLS_PRIORITY},
            {MHD_OPTION_END, 0, NULL},
        };
        s->daemon = MHD_start_daemon(xp_http_door_mhd_flags() | (ipv6 ? MHD_USE_IPv6 : 0) |
                                         (s->tls_cert ? MHD_USE_TLS : 0) |
                                         (s->streams.handle ? MHD_ALLOW_UPGRADE : 0),
                                     0,
                                     NULL,
                                     NULL,
                                     on_request,
                                     s,
                                     MHD_OPTION_ARRAY,
                                     door_options,
                                     MHD_OPTION_ARRAY,
                                     s->tls_cert ? tls_options : tls_options + 3,
                                     MHD_OPTION_URI_LOG_CALLBACK,
                                     uri_log,
                                     s,
                                     MHD_OPTION_NOTIFY_COMPLETED,
                                     on_completed,
                                     s,
                                     MHD_OPTION_END);
        if (!s->daemon)
                return xp_errorf(err,
                                 -EIO,
                                 "log endpoint: cannot start the HTTP server on %s port %u",
                                 host,
                                 s->port);
        r = xp_http_door_start(s->door, s->daemon, err);
        if (r < 0)
                return xp_error_prefix(err, r, "log endpoint");
        *ret = TAKE_PTR(s);
        return 0;
}

uint16_t xp_logserver_port(const struct xp_logserver *s)
{
        return s->port;
}

void xp_logserver_free(struct xp_logserver *s)
{
        if (!s)
                return;
        atomic_store(&s->stopping, true);
        xp_http_door_stop(s->door);
        if (s->daemon)
                MHD_stop_daemon(s->daemon);
        xp_http_door_free(s->door);
        xp_sign_once_free(s->streams_signed);
        free(s->log_dir);
        free(s->tls_cert);
        if (s->tls_key)
                explicit_bzero(s->tls_key, strlen(s->tls_key));
        free(s->tls_key);
        free(s);
}
