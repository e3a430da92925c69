/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xpool/client.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

/* Answers larger than this are refused: a list of every object of a big cluster fits. */
#define MAX_ANSWER_BYTES (256u * 1024 * 1024)
/* A watch event longer than this is refused (a Node with its inventory is far smaller). */
#define MAX_LINE_BYTES (64u * 1024 * 1024)

struct xp_apiclient {
        CURL *curl;
        char *server;     /* without a trailing '/' */
        char *token;      /* NULL when none */
        char *cred_where; /* where the token came from, for messages; NULL when none */
        long timeout_ms;
        int ca_fd; /* memfd holding a PEM CA (libcurl's GnuTLS reads a path) */
        atomic_bool cancelled;
        char curl_error[CURL_ERROR_SIZE];
};

static int
set_ca(struct xp_apiclient *c, const struct xp_apiclient_options *o, struct xp_error *err)
{
        char path[64];

        if (o->insecure) {
                curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
                return 0;
        }
        if (o->ca_file) {
                if (access(o->ca_file, R_OK) < 0)
                        return xp_errorf(err,
                                         -errno,
                                         "cannot read the CA file %s: %s",
                                         o->ca_file,
                                         strerror(errno));
                curl_easy_setopt(c->curl, CURLOPT_CAINFO, o->ca_file);
                /* that CA alone: not also the system's directory of CAs, which libcurl would read
                 * whole (every certificate in /etc/ssl/certs: most of a CLI call's CPU) */
                curl_easy_setopt(c->curl, CURLOPT_CAPATH, NULL);
                return 0;
        }
        if (!o->ca_pem)
                return 0;
        /* libcurl's GnuTLS backend has no CAINFO_BLOB: hand it the PEM as a file of our own. */
        c->ca_fd = memfd_create("xpool-ca", MFD_CLOEXEC);
        if (c->ca_fd < 0)
                return xp_errorf(err, -errno, "cannot hold the CA: %s", strerror(errno));
        if (write(c->ca_fd, o->ca_pem, o->ca_pem_len) != (ssize_t)o->ca_pem_len)
                return xp_errorf(err, -EIO, "cannot hold the CA: short write");
        snprintf(path, sizeof(path), "/proc/self/fd/%d", c->ca_fd);
        curl_easy_setopt(c->curl, CURLOPT_CAINFO, path);
        curl_easy_setopt(c->curl, CURLOPT_CAPATH, NULL); /* as above */
        return 0;
}

static int on_progress(
    void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
        struct xp_apiclient *c = userdata;

        (void)dltotal;
        (void)dlnow;
        (void)ultotal;
        (void)ulnow;
        return atomic_load(&c->cancelled) ? 1 : 0;
}

int xp_apiclient_new(const struct xp_apiclient_options *options,
                     struct xp_apiclient **ret,
                     struct xp_error *err)
{
        _cleanup_(xp_apiclient_freep) struct xp_apiclient *c = NULL;
        const char *server = options->server;
        size_t len;
        int r;

        if (!server || !*server)
                return xp_errorf(
                    err, -EINVAL, "the server needs a URL: http://HOST:PORT or https://HOST:PORT");
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->ca_fd = -1;
        c->timeout_ms = options->timeout_ms;
        len = strlen(server);
        c->server = strndup(server, len - (server[len - 1] == '/'));
        c->curl = curl_easy_init();
        if (options->token) {
                c->token = strdup(options->token);
                c->cred_where = strdup(options->cred_where ? options->cred_where : "the token");
        }
        if (!c->curl || !c->server || (options->token && (!c->token || !c->cred_where)))
                return -ENOMEM;
        curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->curl_error);
        curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "xpool/" XPOOL_VERSION);
        curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
        /* as the server: nothing older than TLS 1.2 (RFC 8996) */
        curl_easy_setopt(c->curl, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
        curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
        curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
        r = set_ca(c, options, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

void xp_apiclient_free(struct xp_apiclient *client)
{
        if (!client)
                return;
        if (client->curl)
                curl_easy_cleanup(client->curl);
        if (client->ca_fd >= 0)
                close(client->ca_fd);
        free(client->server);
        free(client->token);
        free(client->cred_where);
        free(client);
}

int xp_apiclient_local_address(struct xp_apiclient *client, char **ret)
{
        char *ip = NULL, *copy;

        if (curl_easy_getinfo(client->curl, CURLINFO_LOCAL_IP, &ip) != CURLE_OK || !ip || !*ip)
                return -ENOTCONN;
        copy = strdup(ip);
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

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
        struct transfer *t = userdata;
        size_t len = size * nmemb;

        if (t->fn) {
                if (t->code == 0)
                        curl_easy_getinfo(t->client->curl, CURLINFO_RESPONSE_CODE, &t->code);
                if (t->code >= 200 && t->code < 300) {
                        if (!t->lines)
                                t->fn_result = t->fn(data, len, t->userdata);
                        else if ((t->fn_result = buffer_append(t, data, len, MAX_LINE_BYTES)) >= 0)
                                t->fn_result = split_lines(t);
                        return t->fn_result < 0 ? 0 : len;
                }
        }
        return buffer_append(t, data, len, MAX_ANSWER_BYTES) < 0 ? 0 : len;
}

/* The message for a transport failure: what was tried and what to do. */
static int transport_error(struct xp_apiclient *c, CURLcode code, struct xp_error *err)
{
        switch (code) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
                return xp_errorf(
                    err,
                    -ECONNREFUSED,
                    "cannot reach the xpool server at %s: is it running? (xpool server or xpool up)",
                    c->server);
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
                return xp_errorf(err,
                                 -EPROTO,
                                 "cannot trust the xpool server at %s: %s (is the "
                                 "certificate-authority given that server's CA?)",
                                 c->server,
                                 c->curl_error[0] ? c->curl_error : curl_easy_strerror(code));
        case CURLE_OPERATION_TIMEDOUT:
                return xp_errorf(
                    err, -ETIMEDOUT, "the xpool server at %s did not answer in time", c->server);
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_URL_MALFORMAT:
                return xp_errorf(err,
                                 -EINVAL,
                                 "bad server URL %s: give http://HOST:PORT or https://HOST:PORT",
                                 c->server);
        case CURLE_ABORTED_BY_CALLBACK:
                return xp_errorf(err,
                                 -ECANCELED,
                                 "the request to the xpool server at %s was cancelled",
                                 c->server);
        default:
                return xp_errorf(err,
                                 -EIO,
                                 "talking to the xpool server at %s failed: %s",
                                 c->server,
                                 c->curl_error[0] ? c->curl_error : curl_easy_strerror(code));
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
        struct curl_slist *headers = NULL, *h;
        _cleanup_free_ char *url = NULL, *auth = NULL, *ctype = NULL, *acc = NULL;
        CURLcode code;
        int r = 0;

        if (atomic_load(&c->cancelled))
                return transport_error(c, CURLE_ABORTED_BY_CALLBACK, err);
        if (asprintf(&url, "%s%s", c->server, path) < 0 ||
            asprintf(&acc, "Accept: %s", accept ? accept : "application/json") < 0 ||
            asprintf(&ctype, "Content-Type: %s", content_type ? content_type : "application/json") <
                0)
                return -ENOMEM;
        if (c->token && asprintf(&auth, "Authorization: Bearer %s", c->token) < 0)
                return -ENOMEM;
        h = curl_slist_append(headers, acc);
        if (h && body)
                h = curl_slist_append(headers = h, ctype);
        if (h && auth)
                h = curl_slist_append(headers = h, auth);
        if (!h) {
                curl_slist_free_all(headers);
                return -ENOMEM;
        }
        headers = h;
        c->curl_error[0] = '\0';
        curl_easy_setopt(c->curl, CURLOPT_URL, url);
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
                curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        }
        curl_easy_setopt(c->curl, CURLOPT_NOBODY, strcmp(method, "HEAD") == 0 ? 1L : 0L);
        curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, t);
        code = curl_easy_perform(c->curl);
        curl_slist_free_all(headers);
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
        if (t->fn_result < 0)
                return t->fn_result;
        if (code != CURLE_OK)
                return transport_error(c, code, err);
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &t->code);
        if (t->code < 200 || t->code >= 300)
                r = http_error(c, t->code, t->buf, t->len, err);
        return r < 0 ? r : (int)t->code;
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

int xp_apiclient_add_query(char *buf, size_t size, const char *key, const char *value)
{
        size_t pos = strlen(buf);
        _cleanup_free_ char *escaped = curl_easy_escape(NULL, value, 0);
        int n;

        if (!escaped)
                return -ENOMEM;
        n = snprintf(buf + pos, size - pos, "%c%s=%s", strchr(buf, '?') ? '&' : '?', key, escaped);
        if (n < 0 || (size_t)n >= size - pos) {
                buf[pos] = '\0';
                return -ENAMETOOLONG;
        }
        return 0;
}
