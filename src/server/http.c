/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP layer: libmicrohttpd with a thread per connection, request bodies gathered up to
 * XP_SERVER_BODY_MAX, dispatch through the routes table (routes.c), and every answer a JSON
 * document (Kubernetes Status objects for errors), a text body, or a stream (watches, logs).
 *
 * Why a thread per connection: handlers block, on the store (a create waits for its group
 * commit's fsync) and in streams (a watch waits for the next write). With a thread per
 * connection, N clients creating at once are N writers in the store's next group commit, and a
 * watch blocks only itself. Connections are bounded (CONNECTION_LIMIT), so are the threads.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "http.h"
#include "internal.h"
#include "server.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

#define CONNECTION_LIMIT 1024
#define STREAM_BLOCK     (32 * 1024)

struct http {
        struct MHD_Daemon *daemon;
        struct api *api;
        struct auth *auth;
};

/* Per-request state across libmicrohttpd's calls: the body as it arrives. */
struct pending {
        char *body;
        size_t len;
        size_t cap;
        bool too_large;
};

/* ---- replies ------------------------------------------------------------------------------- */

static enum MHD_Result
send_text(struct MHD_Connection *conn, unsigned code, char *text, const char *content_type)
{
        struct MHD_Response *response;
        enum MHD_Result r;

        response = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(text);
                return MHD_NO;
        }
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
        r = MHD_queue_response(conn, code, response);
        MHD_destroy_response(response);
        return r;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct stream *stream = cls;
        ssize_t n;

        (void)pos;
        n = stream->read(stream->state, buf, max);
        if (n == 0)
                return MHD_CONTENT_READER_END_OF_STREAM;
        if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        return n;
}

static void stream_free(void *cls)
{
        struct stream *stream = cls;

        if (stream->free)
                stream->free(stream->state);
        free(stream);
}

/* Chunked transfer of a stream; takes the stream's state in every case. */
static enum MHD_Result send_stream(struct MHD_Connection *conn, struct reply *reply)
{
        struct stream *stream = malloc(sizeof *stream);
        struct MHD_Response *response;
        enum MHD_Result r;

        if (!stream) {
                if (reply->stream.free)
                        reply->stream.free(reply->stream.state);
                return MHD_NO;
        }
        *stream = reply->stream;
        reply->stream = (struct stream){0};
        response = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, stream, stream_free);
        if (!response) {
                stream_free(stream);
                return MHD_NO;
        }
        MHD_add_response_header(response,
                                MHD_HTTP_HEADER_CONTENT_TYPE,
                                reply->content_type ? reply->content_type : "application/json");
        MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
        r = MHD_queue_response(conn, reply->code, response);
        MHD_destroy_response(response);
        return r;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct reply *reply)
{
        char *text = NULL, *line;
        size_t len;

        if (reply->stream.read) {
                json_decref(reply->body);
                reply->body = NULL;
                free(reply->text);
                reply->text = NULL;
                return send_stream(conn, reply);
        }
        if (reply->text) {
                json_decref(reply->body);
                reply->body = NULL;
                return send_text(conn,
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
                enum MHD_Result r;

                if (!response)
                        return MHD_NO;
                MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                r = MHD_queue_response(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, response);
                MHD_destroy_response(response);
                return r;
        }
        /* One line per document, as the Kubernetes API server writes them. */
        len = strlen(text);
        line = realloc(text, len + 2);
        if (line) {
                line[len] = '\n';
                line[len + 1] = '\0';
                text = line;
        }
        return send_text(conn, reply->code, text, "application/json");
}

/* ---- routing ------------------------------------------------------------------------------- */

static enum http_method method_from_string(const char *method)
{
        static const struct {
                const char *name;
                enum http_method method;
        } methods[] = {
            {"GET", HTTP_GET},
            {"POST", HTTP_POST},
            {"PUT", HTTP_PUT},
            {"PATCH", HTTP_PATCH},
            {"DELETE", HTTP_DELETE},
        };

        for (size_t i = 0; i < XP_ELEMENTSOF(methods); i++)
                if (strcmp(method, methods[i].name) == 0)
                        return methods[i].method;
        return HTTP_OTHER;
}

/* What a pattern's {placeholders} captured: one path segment each. */
struct captures {
        char group[XP_STORE_KEY_MAX + 1];
        char resource[XP_STORE_KEY_MAX + 1];
        char namespace[XP_STORE_KEY_MAX + 1];
        char name[XP_STORE_KEY_MAX + 1];
        bool has_group, has_resource, has_namespace, has_name;
};

/*
 * Matches path against a pattern segment by segment; each {placeholder} captures one non-empty
 * segment of at most XP_STORE_KEY_MAX bytes.
 */
static bool route_match(const char *pattern, const char *path, struct captures *ret)
{
        *ret = (struct captures){0};
        while (*pattern && *path) {
                size_t plen = strcspn(pattern, "/"), len = strcspn(path, "/");

                if (pattern[0] == '{') {
                        char *dst;

                        if (len == 0 || len > XP_STORE_KEY_MAX)
                                return false;
                        if (strncmp(pattern, "{namespace}", plen) == 0) {
                                dst = ret->namespace;
                                ret->has_namespace = true;
                        } else if (strncmp(pattern, "{group}", plen) == 0) {
                                dst = ret->group;
                                ret->has_group = true;
                        } else if (strncmp(pattern, "{resource}", plen) == 0) {
                                dst = ret->resource;
                                ret->has_resource = true;
                        } else {
                                dst = ret->name;
                                ret->has_name = true;
                        }
                        memcpy(dst, path, len);
                        dst[len] = '\0';
                } else if (plen != len || strncmp(pattern, path, len) != 0) {
                        return false;
                }
                pattern += plen;
                path += len;
                if (*pattern != *path)
                        return false;
                if (*pattern == '/') {
                        pattern++;
                        path++;
                }
        }
        return !*pattern && !*path;
}

/* The kind a resource route is about, or NULL when {resource} names none it serves. */
static const struct xp_kind *route_kind(const struct route *route, const struct captures *c)
{
        const struct xp_kind *kind;

        if (!route->flags)
                return NULL;
        kind = xp_kind_by_resource(c->has_group ? c->group : "",
                                   route->flags & ROUTE_PODS ? "pods" : c->resource);
        if (!kind)
                return NULL;
        if (!(route->flags & (kind->namespaced ? ROUTE_NAMESPACED : ROUTE_CLUSTER)))
                return NULL;
        if ((route->flags & ROUTE_STATUS) && !kind_has_status(kind))
                return NULL;
        return kind;
}

const char *request_query(const struct request *req, const char *key)
{
        return MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, key);
}

const char *request_header(const struct request *req, const char *name)
{
        return MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, name);
}

int request_socket(const struct request *req)
{
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(req->connection, MHD_CONNECTION_INFO_CONNECTION_FD);

        return info ? info->connect_fd : -1;
}

static enum auth_verb auth_verb_of(enum http_method m, const struct request *req)
{
        switch (m) {
        case HTTP_GET:
                if (req->name)
                        return AUTH_GET;
                return request_is_watch(req) ? AUTH_WATCH : AUTH_LIST;
        case HTTP_POST:
                return AUTH_CREATE;
        case HTTP_PUT:
                return AUTH_UPDATE;
        case HTTP_PATCH:
                return AUTH_PATCH;
        case HTTP_DELETE:
        default:
                return AUTH_DELETE;
        }
}

/* The name a create gives its object, which a node's rules look at (its own Node, Lease). */
static char *created_name(const struct request *req)
{
        json_t *body = json_loadb(req->body, req->body_len, 0, NULL);
        const char *name =
            json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));
        char *copy = name ? strdup(name) : NULL;

        json_decref(body);
        return copy;
}

/* Whether the pod of the request is bound to the node (a node token's writes to its pods). */
/* 1: the pod is bound to the node; 0: it is not; -ENOENT: there is no such pod. */
static int pod_on_node(const struct request *req, const char *node)
{
        json_t *pod;
        uint64_t version;
        const char *bound;
        int r;

        r = xp_store_get(req->api->store, "pods", req->namespace, req->name, &pod, &version, NULL);
        if (r < 0)
                return r == -ENOENT ? r : 0;
        bound = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        r = bound && strcmp(bound, node) == 0;
        json_decref(pod);
        return r;
}

/* The paths anyone may read, as Kubernetes lets anyone see the server is there. */
static bool path_is_public(const char *method, const char *path)
{
        static const char *const public_paths[] = {"/version", "/healthz", "/livez", "/readyz"};

        if (strcmp(method, "GET") != 0)
                return false;
        for (size_t i = 0; i < XP_ELEMENTSOF(public_paths); i++)
                if (strcmp(path, public_paths[i]) == 0)
                        return true;
        return false;
}

/*
 * Authorises an authenticated request for a route: 1 when it may go on, else 0 with ret filled
 * (403 Forbidden; 404 for a node acting on a pod that does not exist), as Kubernetes answers.
 */
static int authorize(const struct route *route,
                     const struct request *req,
                     const struct auth_identity *who,
                     struct reply *ret)
{
        _cleanup_free_ char *name = NULL;
        enum auth_decision decision;
        char reason[1024], user[AUTH_SUBJECT_MAX + 32];

        if (req->method == HTTP_POST && !route->subresource && who->role == AUTH_ROLE_NODE)
                name = created_name(req);

        struct auth_request areq = {
            .verb = auth_verb_of(req->method, req),
            .group = req->group,
            .resource = route->kind ? route->kind->plural : NULL,
            .subresource = route->subresource,
            .namespace = req->namespace,
            .name = req->name ? req->name : name,
            .path = req->path,
        };
        decision = auth_authorize(who, &areq, reason, sizeof reason);
        if (decision == AUTH_ALLOW_IF_POD_ON_NODE) {
                int on = pod_on_node(req, who->subject);

                /* a node may read every pod, so a missing one is NotFound (as the kubelet gets
                 * from Kubernetes for the status of a pod deleted meanwhile), not Forbidden */
                if (on == -ENOENT)
                        return reply_status(ret,
                                            404,
                                            "NotFound",
                                            req->name,
                                            "pods",
                                            "pods \"%s\" not found",
                                            req->name ? req->name : "");
                if (on > 0)
                        decision = AUTH_ALLOW;
        }
        if (decision == AUTH_ALLOW)
                return 1;
        if (decision == AUTH_ALLOW_IF_POD_ON_NODE) {
                auth_user_name(who, user, sizeof user);
                snprintf(
                    reason,
                    sizeof reason,
                    "pods \"%s\" is forbidden: User \"%s\" may only access pods bound to node \"%s\"",
                    req->name ? req->name : "",
                    user,
                    who->subject);
        }
        return reply_status(ret,
                            403,
                            "Forbidden",
                            req->name,
                            route->kind ? route->kind->plural : NULL,
                            "%s",
                            reason);
}

static int dispatch(struct http *server,
                    struct MHD_Connection *conn,
                    const char *method,
                    const char *path,
                    struct pending *pending,
                    struct reply *ret)
{
        struct captures c;
        struct auth_identity who;
        bool path_known = false, authenticated = false;
        enum http_method m = method_from_string(method);

        /* Who is asking comes first, as in Kubernetes: without a valid token even a path that
         * does not exist is 401, so the server's layout is not shown to strangers. */
        if (server->auth && !path_is_public(method, path)) {
                struct xp_error err = {0};
                struct request probe = {.connection = conn};
                int r = auth_authenticate(
                    server->auth, request_header(&probe, "Authorization"), &who, &err);

                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return reply_status(ret,
                                            401,
                                            "Unauthorized",
                                            NULL,
                                            NULL,
                                            "Unauthorized: %s",
                                            xp_error_message(&err));
                authenticated = true;
        }

        for (size_t i = 0; i < api_routes_n; i++) {
                struct route route = api_routes[i];

                if (!route_match(route.pattern, path, &c))
                        continue;
                if (route.flags) {
                        route.kind = route_kind(&route, &c);
                        if (!route.kind)
                                continue;
                }
                path_known = true;
                if (route.method != m)
                        continue;

                struct request req = {
                    .method = m,
                    .path = path,
                    .body = pending->body ? pending->body : "",
                    .body_len = pending->len,
                    .api = server->api,
                    .group = c.has_group ? c.group : "",
                    .namespace = c.has_namespace ? c.namespace : NULL,
                    .name = c.has_name ? c.name : NULL,
                    .connection = conn,
                };
                if (authenticated) {
                        int r = authorize(&route, &req, &who, ret);

                        if (r <= 0)
                                return r;
                        req.who = &who;
                }
                return route.handler(&req, &route, ret);
        }
        if (path_known)
                return reply_status(
                    ret,
                    405,
                    "MethodNotAllowed",
                    NULL,
                    NULL,
                    "the server does not allow this method on the requested resource: %s %s",
                    method,
                    path);
        return reply_status(ret,
                            404,
                            "NotFound",
                            NULL,
                            NULL,
                            "the server could not find the requested resource: %s %s",
                            method,
                            path);
}

/* ---- libmicrohttpd callbacks ---------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *conn,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size,
                                  void **con_cls)
{
        struct http *server = cls;
        struct pending *pending = *con_cls;
        struct reply reply = {0};
        int r;

        (void)version;
        if (!pending) {
                const char *length;

                pending = calloc(1, sizeof *pending);
                if (!pending)
                        return MHD_NO;
                *con_cls = pending;
                /* A declared body over the limit is refused before it is read. */
                length = MHD_lookup_connection_value(
                    conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (length && strtoull(length, NULL, 10) > XP_SERVER_BODY_MAX) {
                        pending->too_large = true;
                        goto answer;
                }
                return MHD_YES;
        }
        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;

                *upload_data_size = 0;
                if (pending->too_large)
                        return MHD_YES;
                if (pending->len + n > XP_SERVER_BODY_MAX) {
                        pending->too_large = true;
                        free(pending->body);
                        pending->body = NULL;
                        pending->len = pending->cap = 0;
                        return MHD_YES;
                }
                if (pending->len + n + 1 > pending->cap) {
                        size_t cap = pending->cap ? pending->cap : 4096;
                        char *body;

                        while (cap < pending->len + n + 1)
                                cap *= 2;
                        body = realloc(pending->body, cap);
                        if (!body)
                                return MHD_NO;
                        pending->body = body;
                        pending->cap = cap;
                }
                memcpy(pending->body + pending->len, upload_data, n);
                pending->len += n;
                pending->body[pending->len] = '\0';
                return MHD_YES;
        }

answer:
        if (pending->too_large)
                r = reply_status(&reply,
                                 413,
                                 "RequestEntityTooLarge",
                                 NULL,
                                 NULL,
                                 "the request body is larger than the limit of %d bytes",
                                 XP_SERVER_BODY_MAX);
        else
                r = dispatch(server, conn, method, url, pending, &reply);
        if (r < 0 && !reply.body)
                r = reply_status(
                    &reply, 500, "InternalError", NULL, NULL, "internal error: %s", strerror(-r));
        xp_debug("server", "%s %s -> %u", method, url, reply.code);
        return send_reply(conn, &reply);
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct pending *pending = *con_cls;

        (void)cls;
        (void)conn;
        (void)toe;
        if (pending) {
                free(pending->body);
                free(pending);
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
        struct MHD_OptionItem tls_options[] = {
            {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->tls_cert},
            {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key},
            {MHD_OPTION_END, 0, NULL},
        };
        struct http *http = calloc(1, sizeof *http);

        if (!http)
                return -ENOMEM;
        http->api = api;
        http->auth = auth;
        http->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
                                            MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                                            (o->ipv6 ? MHD_USE_IPv6 : 0) | (tls ? MHD_USE_TLS : 0),
                                        0,
                                        NULL,
                                        NULL,
                                        on_request,
                                        http,
                                        MHD_OPTION_LISTEN_SOCKET,
                                        (MHD_socket)o->listen_fd,
                                        MHD_OPTION_CONNECTION_TIMEOUT,
                                        (unsigned)60,
                                        MHD_OPTION_CONNECTION_LIMIT,
                                        (unsigned)CONNECTION_LIMIT,
                                        MHD_OPTION_NOTIFY_COMPLETED,
                                        on_completed,
                                        NULL,
                                        MHD_OPTION_ARRAY,
                                        tls ? tls_options : tls_options + 2,
                                        MHD_OPTION_END);
        if (!http->daemon) {
                free(http);
                return xp_errorf(err, -EIO, "libmicrohttpd did not start");
        }
        *ret = http;
        return 0;
}

void http_stop(struct http *http)
{
        if (!http)
                return;
        MHD_stop_daemon(http->daemon);
        free(http);
}
