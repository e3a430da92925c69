/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP layer: libmicrohttpd with a thread per connection behind the front door
 * (include/http/xpool/http_door.h), request bodies gathered up to XP_SERVER_BODY_MAX, dispatch
 * through the routes table (routes.c), and every answer a JSON document (Kubernetes Status objects
 * for errors), a text body, or a stream (watches, logs).
 *
 * Why a thread per connection: handlers block, on the store (a create waits for its group
 * commit's fsync) and in streams (a watch waits for the next write). With a thread per
 * connection, N clients creating at once are N writers in the store's next group commit, and a
 * watch blocks only itself. What made threads per connection fragile, idle and slow connections
 * each holding a thread, the door keeps out: a connection reaches the daemon only once its first
 * request has arrived, and the daemon's connections are limited (per user once authenticated).
 *
 * A request is admitted once its head is in, before its body is read: the raw target and the
 * headers are checked (include/http/xpool/http.h), the token authenticated (401), the user's
 * connections and streams counted (429), the declared size checked (413). Then the body, then the
 * route.
 */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "http.h"
#include "internal.h"
#include "metrics.h"
#include "satoken.h"
#include "stream_hub.h"
#include "tls.h"
#include "xpool/duration.h"
#include "xpool/http.h"
#include "xpool/http_door.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/server.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define STREAM_BLOCK (32 * 1024)

struct http {
        struct MHD_Daemon *daemon;
        struct xp_http_door *door;
        struct api *api;
        struct auth *auth;
        struct stream_hub *hub; /* writes the streams that have a pump (watches) */
        bool tls;
};

/*
 * One request across libmicrohttpd's calls, from its URI log callback to its completion: the
 * raw target, the query, who asked, and the body as it arrives. Handlers see it as the opaque
 * request->connection.
 */
struct exchange {
        struct http *http;
        struct MHD_Connection *conn;
        char *raw_target; /* as it arrived, percent-encodings and all */
        struct xp_http_query query;
        int64_t start_ns;        /* for the latency /metrics reports */
        const char *metric_verb; /* kube-apiserver's verb label, set by dispatch() */
        const char *metric_resource, *metric_subresource;
        bool watching;              /* counted among the watchers until it completes */
        bool admitted;              /* the head was checked and the caller let in */
        bool authenticated;         /* who holds the caller */
        bool close;                 /* answer with "Connection: close" */
        bool http11;                /* HTTP/1.1: a stream goes out in chunks */
        const char *const *headers; /* the reply's own headers (struct reply) */
        struct auth_identity who;
        char *body;
        size_t len;
        size_t cap;
        bool too_large;
};

/* ---- replies ------------------------------------------------------------------------------- */

static enum MHD_Result queue(struct exchange *x, unsigned code, struct MHD_Response *response)
{
        enum MHD_Result r;

        MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
        for (size_t i = 0; x->headers && x->headers[i] && x->headers[i + 1]; i += 2)
                MHD_add_response_header(response, x->headers[i], x->headers[i + 1]);
        if (x->close)
                MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
        r = MHD_queue_response(x->conn, code, response);
        MHD_destroy_response(response);
        if (r == MHD_YES)
                xp_http_door_response_queued(x->http->door, x->conn);
        return r;
}

static enum MHD_Result
send_text(struct exchange *x, unsigned code, char *text, const char *content_type)
{
        struct MHD_Response *response;

        response = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(text);
                return MHD_NO;
        }
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        return queue(x, code, response);
}

/* A stream as the daemon holds it: the handler's, and the connection it goes out on. */
struct served {
        struct stream stream;
        struct http *http;
        struct MHD_Connection *conn;
};

/*
 * The stream hub takes the connection for the whole stream: the daemon calls for the body once
 * the head went out, and the call returns when the stream ends. 0 when the stream ended, -1 when
 * the connection is to be dropped, 1 when the hub cannot take it (read() serves it).
 */
static int hub_serve(struct served *s)
{
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(s->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *tls =
            s->http->tls ? MHD_get_connection_info(s->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION)
                         : NULL;
        const union MHD_ConnectionInfo *timeout =
            MHD_get_connection_info(s->conn, MHD_CONNECTION_INFO_CONNECTION_TIMEOUT);
        int r;

        if (!fd || (s->http->tls && !tls))
                return 1;
        /* The daemon sees no activity while the hub writes: its timeout would close a watch
         * longer than it (before the stream's last chunk) as soon as the hub gives it back.
         * Setting it again also counts as activity. */
        MHD_set_connection_option(s->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
        r = stream_hub_serve(s->http->hub,
                             fd->connect_fd,
                             tls ? tls->tls_session : NULL,
                             s->stream.pump,
                             s->stream.state);
        if (timeout)
                MHD_set_connection_option(
                    s->conn, MHD_CONNECTION_OPTION_TIMEOUT, timeout->connection_timeout);
        return r == 0 || r == -ESHUTDOWN ? 0 : -1;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct served *s = cls;
        struct stream *stream = &s->stream;
        ssize_t n;

        (void)pos;
        if (stream->pump) {
                int r = hub_serve(s);

                stream->pump = NULL; /* once: what is left, if anything, read() serves */
                if (r == 0)
                        return MHD_CONTENT_READER_END_OF_STREAM;
                if (r < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        n = stream->read(stream->state, buf, max);
        if (n == 0)
                return MHD_CONTENT_READER_END_OF_STREAM;
        if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        return n;
}

static void stream_free(void *cls)
{
        struct served *s = cls;

        if (s->stream.free)
                s->stream.free(s->stream.state);
        free(s);
}

/* Chunked transfer of a stream; takes the stream's state in every case. */
static enum MHD_Result send_stream(struct exchange *x, struct reply *reply)
{
        struct served *s = malloc(sizeof *s);
        struct MHD_Response *response;

        if (!s) {
                if (reply->stream.free)
                        reply->stream.free(reply->stream.state);
                return MHD_NO;
        }
        *s = (struct served){.stream = reply->stream, .http = x->http, .conn = x->conn};
        /* the hub writes chunks: an HTTP/1.0 client's stream is raw bytes to the close */
        if (!x->http11)
                s->stream.pump = NULL;
        reply->stream = (struct stream){0};
        response = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, s, stream_free);
        if (!response) {
                stream_free(s);
                return MHD_NO;
        }
        MHD_add_response_header(response,
                                MHD_HTTP_HEADER_CONTENT_TYPE,
                                reply->content_type ? reply->content_type : "application/json");
        return queue(x, reply->code, response);
}

/* An upgraded connection: the handler's run() on a thread of its own (api_stream.c). */
struct upgraded {
        struct upgrade up;
        struct MHD_UpgradeResponseHandle *urh;
        int fd;
        char *early;
        size_t early_len;
};

static void *upgraded_thread(void *arg)
{
        struct upgraded *u = arg;

        u->up.run(u->up.state, u->fd, u->early, u->early_len);
        u->up.free(u->up.state);
        free(u->early);
        /* last: the daemon's stop waits for it */
        MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
        free(u);
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
        struct upgraded *u = cls;
        pthread_attr_t attr;
        pthread_t thread;
        int r = 0;

        (void)conn;
        (void)req_cls;
        u->urh = urh;
        u->fd = sock;
        if (extra_in_size > 0) {
                u->early = malloc(extra_in_size);
                r = u->early ? 0 : ENOMEM;
                if (u->early)
                        memcpy(u->early, extra_in, extra_in_size);
                u->early_len = extra_in_size;
        }
        if (r == 0) {
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = pthread_create(&thread, &attr, upgraded_thread, u);
                pthread_attr_destroy(&attr);
        }
        if (r != 0) {
                u->up.free(u->up.state);
                free(u->early);
                MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
                free(u);
        }
}

/* The 101 of an upgrade: the connection goes to reply->upgrade.run() once it went out. */
static enum MHD_Result send_upgrade(struct exchange *x, struct reply *reply)
{
        struct upgraded *u = calloc(1, sizeof *u);
        struct MHD_Response *response = u ? MHD_create_response_for_upgrade(on_upgrade, u) : NULL;
        enum MHD_Result r;

        if (!response) {
                reply->upgrade.free(reply->upgrade.state);
                free(u);
                return MHD_NO;
        }
        u->up = reply->upgrade;
        reply->upgrade = (struct upgrade){0};
        for (size_t i = 0; u->up.headers && u->up.headers[i]; i += 2)
                MHD_add_response_header(response, u->up.headers[i], u->up.headers[i + 1]);
        xp_http_door_upgraded(x->http->door, x->conn);
        r = MHD_queue_response(x->conn, MHD_HTTP_SWITCHING_PROTOCOLS, response);
        MHD_destroy_response(response);
        if (r != MHD_YES) {
                /* never upgraded: the callback will not run */
                u->up.free(u->up.state);
                free(u);
        }
        return r;
}

static enum MHD_Result send_reply(struct exchange *x, struct reply *reply)
{
        char *text = NULL, *line;
        size_t len;

        x->headers = reply->headers;
        if (reply->upgrade.run) {
                json_decref(reply->body);
                reply->body = NULL;
                return send_upgrade(x, reply);
        }

        if (reply->stream.read) {
                json_decref(reply->body);
                reply->body = NULL;
                free(reply->text);
                reply->text = NULL;
                return send_stream(x, reply);
        }
        if (reply->text) {
                json_decref(reply->body);
                reply->body = NULL;
                return send_text(x,
                                 reply->code,
                                 TAKE_PTR(reply->text),
                                 reply->content_type ? reply->content_type : "text/plain");
        }
        if (reply->body)
                text = json_dumps(reply->body, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(reply->body);
        reply->body = NULL;
        if (!text) {
                /* Out of memory building the answer: a fixed Status that needs no allocation. */
                static const char oom[] =
                    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                    "\"Failure\",\"message\":\"out of memory\",\"reason\":\"InternalError\","
                    "\"code\":500}\n";
                struct MHD_Response *response = MHD_create_response_from_buffer(
                    sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);

                if (!response)
                        return MHD_NO;
                MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                return queue(x, MHD_HTTP_INTERNAL_SERVER_ERROR, response);
        }
        /* One line per document, as the Kubernetes API server writes them. */
        len = strlen(text);
        line = realloc(text, len + 2);
        if (line) {
                line[len] = '\n';
                line[len + 1] = '\0';
                text = line;
        }
        return send_text(x, reply->code, text, "application/json");
}

/*
 * The Status of an error the front door answers (head refused, 429, libmicrohttpd's own
 * errors): retryAfterSeconds with 429, as Kubernetes' priority and fairness sends it.
 */
static int format_status(
    unsigned code, const char *reason, const char *message, char **ret_body, const char **ret_type)
{
        struct reply reply = {0};
        char *text;
        int r;

        r = reply_status(&reply, code, reason, NULL, NULL, "%s", message);
        if (r < 0)
                return r;
        if (code == 429)
                json_object_set_new(
                    json_object_get(reply.body, "details"), "retryAfterSeconds", json_integer(1));
        text = json_dumps(reply.body, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(reply.body);
        if (!text || asprintf(ret_body, "%s\n", text) < 0) {
                free(text);
                return -ENOMEM;
        }
        free(text);
        *ret_type = "application/json";
        return 0;
}

/* ---- what handlers read of the request ------------------------------------------------------ */

const char *request_query(const struct request *req, const char *key)
{
        const struct exchange *x = req->connection;

        return xp_http_query_get(&x->query, key);
}

const char *request_header(const struct request *req, const char *name)
{
        const struct exchange *x = req->connection;

        return MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, name);
}

const char *request_raw_target(const struct request *req)
{
        const struct exchange *x = req->connection;

        return x->raw_target ? x->raw_target : "";
}

int request_socket(const struct request *req)
{
        const struct exchange *x = req->connection;
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(x->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

        return info ? info->connect_fd : -1;
}

bool request_is_watch(const struct request *req)
{
        return query_flag(request_query(req, "watch"));
}

/* ---- routing ------------------------------------------------------------------------------- */

/* kube-apiserver's verb label: GET and LIST and WATCH apart. */
static const char *metric_verb(enum http_method m, const struct request *req)
{
        switch (m) {
        case HTTP_GET:
                return req->name ? "GET" : request_is_watch(req) ? "WATCH" : "LIST";
        case HTTP_POST:
                return "POST";
        case HTTP_PUT:
                return "PUT";
        case HTTP_PATCH:
                return "PATCH";
        case HTTP_DELETE:
                return "DELETE";
        default:
                return "OTHER";
        }
}

/* Counts the answered request for /metrics; a watch among the watchers until it completes. */
static void count_request(struct exchange *x, const struct reply *reply)
{
        struct srv_metrics *m = x->http->api->metrics;

        if (!m)
                return;
        srv_metrics_request(m,
                            x->metric_verb ? x->metric_verb : "OTHER",
                            x->metric_resource ? x->metric_resource : "",
                            x->metric_subresource ? x->metric_subresource : "",
                            reply->code,
                            (double)(xp_monotonic_ns() - x->start_ns) / 1e9);
        if (reply->stream.read && x->metric_verb && strcmp(x->metric_verb, "WATCH") == 0) {
                x->watching = true;
                srv_metrics_watchers(m, 1);
        }
}

static int dispatch(struct exchange *x, const char *method, const char *path, struct reply *ret)
{
        struct http_captures c;
        struct route route;
        enum http_method m = http_method_from_string(method);
        int r;

        r = http_route_lookup(m, path, &route, &c);
        if (r == 0)
                return reply_status(
                    ret,
                    405,
                    "MethodNotAllowed",
                    NULL,
                    NULL,
                    "the server does not allow this method on the requested resource: %s %s",
                    method,
                    path);
        if (r < 0)
                return reply_status(ret,
                                    404,
                                    "NotFound",
                                    NULL,
                                    NULL,
                                    "the server could not find the requested resource: %s %s",
                                    method,
                                    path);

        struct prefetched prefetched = {0};
        struct request req = {
            .method = m,
            .path = path,
            .body = x->body ? x->body : "",
            .body_len = x->len,
            .api = x->http->api,
            .group = c.has_group ? c.group : "",
            .version = c.has_version ? c.version : "v1",
            .namespace = c.has_namespace ? c.namespace : NULL,
            .name = c.has_name ? c.name : NULL,
            .subresource = route.subresource,
            .connection = x,
            .prefetched = &prefetched,
        };
        x->metric_verb = route.kind ? metric_verb(m, &req) : "GET"; /* a path, not a resource */
        x->metric_resource = route.kind ? xp_kind_url_plural(route.kind) : "";
        x->metric_subresource = route.subresource ? route.subresource : "";
        if (x->authenticated) {
                r = http_authorize(&route, &req, &x->who, ret);
                if (r <= 0) {
                        json_decref(prefetched.pod);
                        return r;
                }
                req.who = &x->who;
        }
        r = route.handler(&req, &route, ret);
        json_decref(prefetched.pod); /* when the handler did not take it */
        return r;
}

/* ---- admission: once the head is in, before the body ------------------------------------------
 */

static bool ends_with(const char *s, size_t len, const char *suffix)
{
        size_t n = strlen(suffix);

        return len >= n && strcmp(s + len - n, suffix) == 0;
}

/* A watch, or a log that follows: a request that holds its connection as long as it lasts. */
static bool is_stream(const struct exchange *x, const char *method, const char *path)
{
        const char *watch = xp_http_query_get(&x->query, "watch");
        const char *follow = xp_http_query_get(&x->query, "follow");
        size_t len = strlen(path);

        /* exec, attach, port-forward: upgraded, as long as they last (api_stream.c) */
        if (strncmp(path, "/api/v1/namespaces/", 19) == 0 && strstr(path, "/pods/") &&
            (ends_with(path, len, "/exec") || ends_with(path, len, "/attach") ||
             ends_with(path, len, "/portforward")))
                return true;
        if (strcmp(method, "GET") != 0)
                return false;
        if (watch && (strcmp(watch, "true") == 0 || strcmp(watch, "1") == 0))
                return true;
        return ends_with(path, len, "/log") && follow &&
               (strcmp(follow, "true") == 0 || strcmp(follow, "1") == 0);
}

/*
 * Who is asking comes first, as in Kubernetes: without a valid token even a path that does not
 * exist is 401, so the server's layout is not shown to strangers. 1 when the request may go on,
 * 0 with ret filled, -ENOMEM.
 */
static int authenticate(struct exchange *x, const char *method, const char *path, struct reply *ret)
{
        struct xp_error err = {0};
        const char *authorization, *token;
        size_t len;
        int r;

        if (!x->http->auth || http_path_is_public(method, path))
                return 1;
        authorization = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, "Authorization");
        if (x->http->api->satoken && satoken_in_header(authorization, &token, &len))
                r = satoken_authenticate(x->http->api->satoken,
                                         x->http->api->store,
                                         token,
                                         len,
                                         time(NULL),
                                         &x->who,
                                         &err);
        else
                r = auth_authenticate(x->http->auth, authorization, &x->who, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                x->close = true;
                return reply_status(ret,
                                    401,
                                    "Unauthorized",
                                    NULL,
                                    NULL,
                                    "Unauthorized: %s",
                                    xp_error_message(&err));
        }
        x->authenticated = true;
        return 1;
}

/*
 * kubectl --as/--as-group/--as-uid ask to act as someone else. xpool serves no impersonation, and
 * answering as the token's own user instead would say yes where that someone would be refused
 * (kubectl auth can-i --as=system:serviceaccount:...): such a request is refused, 1 when it may
 * go on, 0 with ret filled.
 */
static int refuse_impersonation(struct exchange *x, struct reply *ret)
{
        static const char *const headers[] = {
            "Impersonate-User", "Impersonate-Group", "Impersonate-Uid"};

        for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
                const char *value =
                    MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, headers[i]);

                if (value)
                        return reply_status(ret,
                                            403,
                                            "Forbidden",
                                            NULL,
                                            NULL,
                                            "impersonation is not served: %s \"%s\" asks to act as "
                                            "someone else, and xpool answers only as the caller's "
                                            "own token (use that user's token: kubectl --token)",
                                            headers[i],
                                            value);
        }
        return 1;
}

/* The head's checks, the caller and its limits, the declared size: MHD_YES to read the body. */
static enum MHD_Result admit(struct exchange *x, const char *method, const char *path)
{
        struct xp_http_refusal refusal;
        struct reply reply = {0};
        const char *q = x->raw_target ? strchr(x->raw_target, '?') : NULL;
        const char *length;
        char user[XP_TOKEN_SUBJECT_MAX + 32];
        int r;

        x->admitted = true;
        if (xp_http_door_check_request(x->http->door, x->conn, x->raw_target, &refusal) < 0)
                return xp_http_door_send_refusal(x->http->door, x->conn, &refusal);
        if (q && xp_http_query_parse(q + 1, strlen(q + 1), &x->query) < 0)
                return MHD_NO;
        r = authenticate(x, method, path, &reply);
        if (r > 0)
                r = refuse_impersonation(x, &reply);
        if (r < 0)
                return MHD_NO;
        if (r == 0)
                return send_reply(x, &reply);
        /* A public path's caller stays unauthenticated, and so among the first to go when
         * unauthenticated connections are too many. */
        if (x->authenticated)
                auth_user_name(&x->who, user, sizeof user);
        else
                snprintf(user, sizeof user, "%s", x->http->auth ? "" : "anonymous");
        if (user[0] && xp_http_door_admit(
                           x->http->door, x->conn, user, is_stream(x, method, path), &refusal) < 0)
                return xp_http_door_send_refusal(x->http->door, x->conn, &refusal);
        /* A declared body over the limit is refused before it is read. */
        length =
            MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length && strtoull(length, NULL, 10) > XP_SERVER_BODY_MAX) {
                x->too_large = true;
                x->close = true;
                return MHD_YES;
        }
        return MHD_YES;
}

/* ---- libmicrohttpd callbacks ---------------------------------------------------------------- */

/* A request begins: its target as it arrived, before libmicrohttpd decodes it. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
        struct http *http = cls;
        struct exchange *x = calloc(1, sizeof *x);

        xp_http_door_request_begin(http->door, conn);
        if (!x)
                return NULL;
        x->http = http;
        x->conn = conn;
        x->raw_target = uri ? strdup(uri) : NULL;
        x->start_ns = xp_monotonic_ns();
        return x;
}

/* Appends a piece of the body; false when out of memory. */
static bool body_append(struct exchange *x, const char *data, size_t n)
{
        if (x->too_large)
                return true;
        if (x->len + n > XP_SERVER_BODY_MAX) {
                x->too_large = true;
                free(x->body);
                x->body = NULL;
                x->len = x->cap = 0;
                return true;
        }
        if (x->len + n + 1 > x->cap) {
                size_t cap = x->cap ? x->cap : 4096;
                char *body;

                while (cap < x->len + n + 1)
                        cap *= 2;
                body = realloc(x->body, cap);
                if (!body)
                        return false;
                x->body = body;
                x->cap = cap;
        }
        memcpy(x->body + x->len, data, n);
        x->len += n;
        x->body[x->len] = '\0';
        return true;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *conn,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size,
                                  void **con_cls)
{
        struct exchange *x = *con_cls;
        struct reply reply = {0};
        int r;

        (void)cls;
        if (!x)
                return MHD_NO; /* out of memory when the request began */
        x->http11 = strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
        if (!x->admitted) {
                enum MHD_Result admitted = admit(x, method, url);

                /* A declared body over the limit is answered before it is read. */
                if (admitted == MHD_YES && x->too_large)
                        goto answer;
                return admitted;
        }
        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;

                *upload_data_size = 0;
                return body_append(x, upload_data, n) ? MHD_YES : MHD_NO;
        }

answer:
        xp_http_door_body_done(x->http->door, conn);
        if (x->too_large) {
                x->close = true;
                r = reply_status(&reply,
                                 413,
                                 "RequestEntityTooLarge",
                                 NULL,
                                 NULL,
                                 "the request body is larger than the limit of %d bytes",
                                 XP_SERVER_BODY_MAX);
        } else {
                r = dispatch(x, method, url, &reply);
        }
        if (r < 0 && !reply.body)
                r = reply_status(
                    &reply, 500, "InternalError", NULL, NULL, "internal error: %s", strerror(-r));
        xp_debug("server", "%s %s -> %u", method, url, reply.code);
        count_request(x, &reply);
        return send_reply(x, &reply);
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct http *http = cls;
        struct exchange *x = *con_cls;

        (void)toe;
        xp_http_door_request_end(http->door, conn);
        if (x && x->watching)
                srv_metrics_watchers(http->api->metrics, -1);
        if (x) {
                xp_http_query_done(&x->query);
                free(x->raw_target);
                free(x->body);
                free(x);
                *con_cls = NULL;
        }
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

int http_start(struct api *api,
               struct auth *auth,
               const struct http_options *o,
               struct http **ret,
               struct xp_error *err)
{
        bool tls = o->tls_cert && o->tls_key;
        struct MHD_OptionItem door_options[XP_HTTP_DOOR_MHD_OPTIONS];
        struct MHD_OptionItem tls_options[] = {
            {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->tls_cert},
            {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key},
            {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITY},
            {MHD_OPTION_END, 0, NULL},
        };
        struct http *http = calloc(1, sizeof *http);
        struct xp_http_door_limits limits = xp_http_door_server_limits;
        int r;

        if (!http) {
                close(o->listen_fd);
                return -ENOMEM;
        }
        if (o->idle_timeout_ms > 0) /* a day at most, as the CLI takes: no wrap of the unsigned */
                limits.idle_timeout_ms =
                    (unsigned)(o->idle_timeout_ms < XP_DURATION_DAY_MS ? o->idle_timeout_ms
                                                                       : XP_DURATION_DAY_MS);
        http->api = api;
        http->auth = auth;
        http->tls = tls;
        r = stream_hub_new(api->store, &api->stopping, o->watch_stall_ms, &http->hub);
        if (r < 0) {
                close(o->listen_fd);
                free(http);
                return xp_errorf(err, r, "the stream hub did not start: %s", strerror(-r));
        }
        r = xp_http_door_new(&(struct xp_http_door_options){.listen_fd = o->listen_fd,
                                                            .tls = tls,
                                                            .limits = &limits,
                                                            .format_error = format_status},
                             &http->door,
                             err);
        if (r < 0) {
                stream_hub_stop(http->hub);
                stream_hub_free(http->hub);
                free(http);
                return r;
        }
        xp_http_door_mhd_options(http->door, door_options);
        http->daemon = MHD_start_daemon(xp_http_door_mhd_flags() | (o->ipv6 ? MHD_USE_IPv6 : 0) |
                                            (tls ? MHD_USE_TLS : 0) | MHD_ALLOW_UPGRADE,
                                        0,
                                        NULL,
                                        NULL,
                                        on_request,
                                        http,
                                        MHD_OPTION_ARRAY,
                                        door_options,
                                        MHD_OPTION_URI_LOG_CALLBACK,
                                        on_uri,
                                        http,
                                        MHD_OPTION_NOTIFY_COMPLETED,
                                        on_completed,
                                        http,
                                        MHD_OPTION_ARRAY,
                                        tls ? tls_options : tls_options + 3,
                                        MHD_OPTION_END);
        if (!http->daemon) {
                r = xp_errorf(err, -EIO, "libmicrohttpd did not start");
                goto fail;
        }
        r = xp_http_door_start(http->door, http->daemon, err);
        if (r < 0)
                goto fail;
        *ret = http;
        return 0;
fail:
        http_stop(http);
        return r;
}

void http_stop(struct http *http)
{
        if (!http)
                return;
        /* The door first: nothing new reaches the daemon while it stops. */
        xp_http_door_stop(http->door);
        /* then the streams: their connections' threads return to the daemon, which joins them */
        stream_hub_stop(http->hub);
        if (http->daemon)
                MHD_stop_daemon(http->daemon);
        stream_hub_free(http->hub);
        xp_http_door_free(http->door);
        free(http);
}
