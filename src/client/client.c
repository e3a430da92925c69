/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http1.h"
#include "xpool/client.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

/* Answers larger than this are refused: a list of every object of a big cluster fits. */
#define MAX_ANSWER_BYTES (256u * 1024 * 1024)
/* A watch event longer than this is refused (a Node with its inventory is far smaller). */
#define MAX_LINE_BYTES (64u * 1024 * 1024)

struct xp_apiclient {
        struct http1_conn conn; /* one kept-alive connection (http1.h) */
        char *server;           /* without a trailing '/' */
        char *token;            /* NULL when none */
        char *cred_where;       /* where the token came from, for messages; NULL when none */
        long timeout_ms;
        atomic_bool cancelled;
};

int xp_apiclient_new(const struct xp_apiclient_options *options,
                     struct xp_apiclient **ret,
                     struct xp_error *err)
{
        _cleanup_(xp_apiclient_freep) struct xp_apiclient *c = NULL;
        const struct xp_apiclient_options *o = options;
        const char *server = o->server;
        size_t len;

        if (!server || !*server)
                return xp_errorf(
                    err, -EINVAL, "the server needs a URL: http://HOST:PORT or https://HOST:PORT");
        if (!o->insecure && o->ca_file && access(o->ca_file, R_OK) < 0)
                return xp_errorf(
                    err, -errno, "cannot read the CA file %s: %s", o->ca_file, strerror(errno));
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->conn.fd = -1;
        c->timeout_ms = o->timeout_ms;
        len = strlen(server);
        c->server = strndup(server, len - (server[len - 1] == '/'));
        if (o->token) {
                c->token = strdup(o->token);
                c->cred_where = strdup(o->cred_where ? o->cred_where : "the token");
        }
        if (!c->server || (o->token && (!c->token || !c->cred_where)))
                return -ENOMEM;
        /* the kubeconfig's CA alone when it gives one: the system's trust store is not read */
        if (http1_init(&c->conn,
                       c->server,
                       o->insecure ? NULL : o->ca_file,
                       o->insecure ? NULL : o->ca_pem,
                       o->ca_pem_len,
                       o->insecure,
                       &c->cancelled) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

void xp_apiclient_free(struct xp_apiclient *client)
{
        if (!client)
                return;
        http1_done(&client->conn);
        free(client->server);
        free(client->token);
        free(client->cred_where);
        free(client);
}

int xp_apiclient_local_address(struct xp_apiclient *client, char **ret)
{
        char *copy;

        if (!client->conn.local_ip[0])
                return -ENOTCONN;
        copy = strdup(client->conn.local_ip);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

void xp_apiclient_cancel(struct xp_apiclient *client)
{
        atomic_store(&client->cancelled, true);
}

struct transfer {
        struct xp_apiclient *client;
        char *buf; /* the whole answer, an error answer while streaming, or a partial line */
        size_t len, cap;
        xp_apiclient_data_fn fn; /* NULL: buffer everything */
        void *userdata;
        bool lines; /* hand fn whole lines */
        long code;  /* the HTTP code once known while streaming */
        int fn_result;
};

static int buffer_append(struct transfer *t, const char *data, size_t len, size_t max)
{
        if (len > max - t->len)
                return -E2BIG;
        if (t->len + len + 1 > t->cap) {
                size_t cap = t->cap ? t->cap : 4096;
                char *buf;

                while (cap < t->len + len + 1)
                        cap *= 2;
                buf = realloc(t->buf, cap);
                if (!buf)
                        return -ENOMEM;
                t->buf = buf;
                t->cap = cap;
        }
        memcpy(t->buf + t->len, data, len);
        t->len += len;
        t->buf[t->len] = '\0';
        return 0;
}

/* Hands every complete line in t->buf to fn and keeps the rest. */
static int split_lines(struct transfer *t)
{
        size_t start = 0;
        char *nl;
        int r;

        while (start < t->len && (nl = memchr(t->buf + start, '\n', t->len - start))) {
                size_t n = (size_t)(nl - (t->buf + start));

                *nl = '\0';
                r = n > 0 ? t->fn(t->buf + start, n, t->userdata) : 0;
                start += n + 1;
                if (r < 0)
                        return r;
        }
        memmove(t->buf, t->buf + start, t->len - start);
        t->len -= start;
        if (t->buf)
                t->buf[t->len] = '\0';
        return 0;
}

static int on_data(long code, const char *data, size_t len, void *userdata)
{
        struct transfer *t = userdata;

        t->code = code;
        if (!data)
                return 0;
        if (t->fn && t->code >= 200 && t->code < 300) {
                if (!t->lines)
                        t->fn_result = t->fn(data, len, t->userdata);
                else if ((t->fn_result = buffer_append(t, data, len, MAX_LINE_BYTES)) >= 0)
                        t->fn_result = split_lines(t);
                return t->fn_result;
        }
        return buffer_append(t, data, len, MAX_ANSWER_BYTES);
}

/* The message for a transport failure: what was tried and what to do. */
static int transport_error(struct xp_apiclient *c, struct xp_error *err)
{
        switch (c->conn.failure) {
        case HTTP1_UNREACHABLE:
                return xp_errorf(
                    err,
                    -ECONNREFUSED,
                    "cannot reach the xpool server at %s: is it running? (xpool server or xpool up)",
                    c->server);
        case HTTP1_UNTRUSTED:
                return xp_errorf(err,
                                 -EPROTO,
                                 "cannot trust the xpool server at %s: %s (is the "
                                 "certificate-authority given that server's CA?)",
                                 c->server,
                                 c->conn.detail);
        case HTTP1_TIMEOUT:
                return xp_errorf(
                    err, -ETIMEDOUT, "the xpool server at %s did not answer in time", c->server);
        case HTTP1_BAD_URL:
                return xp_errorf(err,
                                 -EINVAL,
                                 "bad server URL %s: give http://HOST:PORT or https://HOST:PORT",
                                 c->server);
        case HTTP1_CANCELLED:
                return xp_errorf(err,
                                 -ECANCELED,
                                 "the request to the xpool server at %s was cancelled",
                                 c->server);
        default:
                return xp_errorf(err,
                                 -EIO,
                                 "talking to the xpool server at %s failed: %s",
                                 c->server,
                                 c->conn.detail);
        }
}

static int code_to_errno(long code)
{
        switch (code) {
        case 400:
        case 422:
                return -EINVAL;
        case 401:
                return -EACCES;
        case 403:
                return -EPERM;
        case 404:
                return -ENOENT;
        case 409:
                return -EEXIST;
        case 410:
                return -ESTALE;
        default:
                return -EIO;
        }
}

/* The message for a non-2xx answer, from its Status when it is one. */
static int
http_error(struct xp_apiclient *c, long code, const char *body, size_t len, struct xp_error *err)
{
        json_auto_t *status = body ? json_loadb(body, len, 0, NULL) : NULL;
        const char *message = json_string_value(json_object_get(status, "message"));
        const char *reason = json_string_value(json_object_get(status, "reason"));
        char q[XP_QUOTE_MAX];
        int r = code_to_errno(code);

        if (code == 401) {
                if (!c->cred_where)
                        return xp_errorf(err,
                                         r,
                                         "the server at %s wants credentials and none were given: "
                                         "use the kubeconfig 'xpool server' writes (--kubeconfig "
                                         "FILE) or --token TOKEN",
                                         c->server);
                return xp_errorf(err,
                                 r,
                                 "the server rejected the credentials in %s: %s",
                                 c->cred_where,
                                 message ? message : "Unauthorized");
        }
        if (message && reason && *reason)
                return xp_errorf(err, r, "Error from server (%s): %s", reason, message);
        if (message)
                return xp_errorf(err, r, "Error from server: %s", message);
        return xp_errorf(err,
                         r,
                         "Error from server: HTTP %ld: %s",
                         code,
                         body ? xp_quote_mem(body, len, q) : "(no body)");
}

static int perform(struct xp_apiclient *c,
                   const char *method,
                   const char *path,
                   const char *content_type,
                   const char *body,
                   const char *accept,
                   long timeout_ms,
                   struct transfer *t,
                   struct xp_error *err)
{
        _cleanup_free_ char *headers = NULL;
        int r;

        if (atomic_load(&c->cancelled)) {
                c->conn.failure = HTTP1_CANCELLED;
                return transport_error(c, err);
        }
        if (asprintf(&headers,
                     "User-Agent: xpool/" XPOOL_VERSION "\r\nAccept: %s\r\n%s%s%s%s%s%s",
                     accept ? accept : "application/json",
                     body ? "Content-Type: " : "",
                     body ? (content_type ? content_type : "application/json") : "",
                     body ? "\r\n" : "",
                     c->token ? "Authorization: Bearer " : "",
                     c->token ? c->token : "",
                     c->token ? "\r\n" : "") < 0)
                return -ENOMEM;
        r = http1_request(
            &c->conn, method, path, headers, body, body ? strlen(body) : 0, timeout_ms, on_data, t);
        if (t->fn_result < 0)
                return t->fn_result;
        if (r == -EIO)
                return transport_error(c, err);
        if (r < 0)
                return r;
        if (t->code < 200 || t->code >= 300)
                return http_error(c, t->code, t->buf, t->len, err);
        return (int)t->code;
}

int xp_apiclient_json(struct xp_apiclient *client,
                      const char *method,
                      const char *path,
                      const char *content_type,
                      const json_t *body,
                      const char *accept,
                      json_t **ret,
                      struct xp_error *err)
{
        struct transfer t = {.client = client};
        _cleanup_free_ char *text = NULL;
        json_error_t jerr;
        json_t *answer;
        int r;

        if (body) {
                text = json_dumps(body, JSON_COMPACT);
                if (!text)
                        return -ENOMEM;
        }
        r = perform(client, method, path, content_type, text, accept, client->timeout_ms, &t, err);
        if (r >= 0 && ret) {
                answer = t.buf ? json_loadb(t.buf, t.len, 0, &jerr) : json_object();
                if (!answer)
                        r = xp_errorf(err,
                                      -EBADMSG,
                                      "the server at %s answered %s %s with something that is not "
                                      "JSON: %d:%d: %s",
                                      client->server,
                                      method,
                                      path,
                                      jerr.line,
                                      jerr.column,
                                      jerr.text);
                else
                        *ret = answer;
        }
        free(t.buf);
        return r;
}

int xp_apiclient_get_text(struct xp_apiclient *client,
                          const char *path,
                          char **ret,
                          size_t *ret_len,
                          struct xp_error *err)
{
        struct transfer t = {.client = client};
        int r = perform(client, "GET", path, NULL, NULL, NULL, client->timeout_ms, &t, err);

        if (r >= 0 && !t.buf && (t.buf = strdup("")) == NULL)
                r = -ENOMEM;
        if (r < 0) {
                free(t.buf);
                return r;
        }
        *ret = t.buf;
        *ret_len = t.len;
        return r;
}

int xp_apiclient_stream(struct xp_apiclient *client,
                        const char *path,
                        const char *accept,
                        xp_apiclient_data_fn fn,
                        void *userdata,
                        struct xp_error *err)
{
        struct transfer t = {.client = client, .fn = fn, .userdata = userdata};
        int r;

        /* A stream lasts as long as the server keeps it open: no overall timeout. */
        r = perform(client, "GET", path, NULL, NULL, accept, 0, &t, err);
        free(t.buf);
        return r < 0 ? r : 0;
}

int xp_apiclient_stream_lines(struct xp_apiclient *client,
                              const char *path,
                              const char *accept,
                              xp_apiclient_data_fn fn,
                              void *userdata,
                              struct xp_error *err)
{
        struct transfer t = {.client = client, .fn = fn, .userdata = userdata, .lines = true};
        int r;

        r = perform(client, "GET", path, NULL, NULL, accept, 0, &t, err);
        if (r >= 0 && t.len > 0)
                r = fn(t.buf, t.len, userdata);
        free(t.buf);
        return r < 0 ? r : 0;
}

/* Percent-encodes s into buf (3 * strlen(s) + 1 bytes): all but RFC 3986's unreserved. */
static void escape(const char *s, char *buf)
{
        static const char hex[] = "0123456789ABCDEF";

        for (; *s; s++) {
                unsigned char ch = (unsigned char)*s;

                if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~')
                        *buf++ = (char)ch;
                else {
                        *buf++ = '%';
                        *buf++ = hex[ch >> 4];
                        *buf++ = hex[ch & 15];
                }
        }
        *buf = '\0';
}

int xp_apiclient_add_query(char *buf, size_t size, const char *key, const char *value)
{
        size_t pos = strlen(buf);
        _cleanup_free_ char *escaped = malloc(3 * strlen(value) + 1);
        int n;

        if (!escaped)
                return -ENOMEM;
        escape(value, escaped);
        n = snprintf(buf + pos, size - pos, "%c%s=%s", strchr(buf, '?') ? '&' : '?', key, escaped);
        if (n < 0 || (size_t)n >= size - pos) {
                buf[pos] = '\0';
                return -ENAMETOOLONG;
        }
        return 0;
}
