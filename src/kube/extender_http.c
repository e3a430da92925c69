/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The extender's HTTP(S) endpoint on libmicrohttpd: POST bodies gathered up to the bound (a
 * Content-Length beyond it is refused before a byte is read), handed to the extender with the
 * verb (the path's last segment: urlPrefix may carry any path before it), and GET /healthz and
 * /readyz for the kubelet's probes. With a client CA, a POST without a certificate that CA
 * signed is refused: kube-scheduler's extender tlsConfig presents one (certFile/keyFile).
 */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube_internal.h"
#include "xpool/fileio.h"
#include "xpool/http_door.h"
#include "xpool/log.h"

#define CONNECTIONS_MAX 256
#define PEM_MAX         (256 * 1024)

struct ext_http {
        struct MHD_Daemon *daemon;
        ext_http_fn *fn;
        void *userdata;
        size_t body_max;
        uint16_t port;
        bool verify_client;
        char *cert, *key, *ca;
};

struct conn {
        char *body;
        size_t len;
        size_t cap;
        bool too_large;
};

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *resp)
{
        enum MHD_Result r;

        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        r = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body)
{
        return queue(
            c,
            status,
            MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY));
}

/* An answer the extender built (malloc'd): handed to MHD as it is, not copied (a prioritize
 * answer over 5,000 nodes is 200 KiB). */
static enum MHD_Result reply_taken(struct MHD_Connection *c, unsigned status, char *body)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);

        if (!resp)
                free(body);
        return queue(c, status, resp);
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *message)
{
        /* kube-scheduler shows only the status code: the reason is for the operator's log */
        xp_log(LOG_WARNING, "extender: refused a request (HTTP %u): %s", status, message);
        json_auto_t *o = json_pack("{s:s}", "Error", message);
        _cleanup_free_ char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

        return reply(c, status, text ? text : "{\"Error\":\"out of memory\"}");
}

/* With a client CA: the peer presented a certificate that verifies against it. */
static bool client_verified(struct MHD_Connection *c)
{
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        unsigned list_size = 0, status = 0;

        if (!info || !info->tls_session)
                return false;
        if (!gnutls_certificate_get_peers(info->tls_session, &list_size) || list_size == 0)
                return false;
        return gnutls_certificate_verify_peers2(info->tls_session, &status) == 0 && status == 0;
}

static bool gather(struct conn *cn, const char *data, size_t size, size_t max)
{
        if (cn->too_large || cn->len + size > max) {
                cn->too_large = true;
                return true;
        }
        if (cn->len + size + 1 > cn->cap) {
                size_t cap = (cn->len + size + 1) * 2;
                char *m = realloc(cn->body, cap > max + 1 ? max + 1 : cap);
                if (!m)
                        return false;
                cn->body = m;
                cn->cap = cap > max + 1 ? max + 1 : cap;
        }
        memcpy(cn->body + cn->len, data, size);
        cn->len += size;
        cn->body[cn->len] = '\0';
        return true;
}

static enum MHD_Result dispatch(struct ext_http *h,
                                struct MHD_Connection *c,
                                const char *method,
                                const char *url,
                                struct conn *cn)
{
        const char *verb = strrchr(url, '/');
        _cleanup_free_ char *body = NULL;
        int status;

        verb = verb ? verb + 1 : url;
        if (strcmp(method, "GET") == 0 &&
            (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0 ||
             strcmp(url, "/livez") == 0)) {
                status = h->fn(h->userdata, url + 1, NULL, 0, &body);
                return reply(c, (unsigned)status, body ? body : "{}");
        }
        if (strcmp(method, "POST") != 0)
                return reply_error(
                    c,
                    MHD_HTTP_METHOD_NOT_ALLOWED,
                    "the extender answers POST filter, prioritize and bind, and GET /healthz and /readyz");
        if (cn->too_large) {
                char msg[128];
                snprintf(
                    msg, sizeof(msg), "the request body is larger than %zu bytes", h->body_max);
                return reply_error(c, MHD_HTTP_CONTENT_TOO_LARGE, msg);
        }
        status = h->fn(h->userdata, verb, cn->body ? cn->body : "", cn->len, &body);
        if (!body)
                return reply(c, (unsigned)status, "{\"Error\":\"out of memory\"}");
        return reply_taken(c, (unsigned)status, TAKE_PTR(body));
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *c,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size,
                                  void **con_cls)
{
        struct ext_http *h = cls;
        struct conn *cn = *con_cls;

        (void)version;
        if (!cn) {
                const char *length =
                    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                /* the probes' GETs carry no certificate and say nothing about the cluster */
                if (h->verify_client && strcmp(method, "GET") != 0 && !client_verified(c))
                        return reply_error(
                            c,
                            MHD_HTTP_UNAUTHORIZED,
                            "a client certificate signed by the extender's client CA is required");
                cn = calloc(1, sizeof(*cn));
                if (!cn)
                        return MHD_NO;
                *con_cls = cn;
                cn->too_large = length && strtoull(length, NULL, 10) > h->body_max;
                /* the whole body at once, when its length is said: no growing copies */
                if (length && !cn->too_large && strtoull(length, NULL, 10) > 0) {
                        cn->cap = strtoull(length, NULL, 10) + 1;
                        cn->body = malloc(cn->cap);
                        if (!cn->body)
                                cn->cap = 0;
                }
                return MHD_YES;
        }
        if (*upload_data_size) {
                if (!gather(cn, upload_data, *upload_data_size, h->body_max))
                        return MHD_NO;
                *upload_data_size = 0;
                return MHD_YES;
        }
        return dispatch(h, c, method, url, cn);
}

static void on_completed(void *cls,
                         struct MHD_Connection *c,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct conn *cn = *con_cls;

        (void)cls;
        (void)c;
        (void)toe;
        if (cn) {
                free(cn->body);
                free(cn);
        }
        *con_cls = NULL;
}

static int load_pem(const char *path, char **ret, struct xp_error *err)
{
        _cleanup_close_ int fd = -1;
        size_t len = 0;
        int r;

        *ret = NULL;
        if (!path)
                return 0;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        r = fd < 0 ? -errno : xp_read_fd_all(fd, PEM_MAX, ret, &len);
        if (r < 0)
                return xp_errorf(err, r, "reading %s: %s", path, strerror(-r));
        if (!strstr(*ret, "-----BEGIN "))
                return xp_errorf(err, -EINVAL, "%s: no PEM block in it", path);
        return 0;
}

int ext_http_start(const struct ext_http_options *o, struct ext_http **ret, struct xp_error *err)
{
        struct ext_http *h = calloc(1, sizeof(*h));
        bool ipv6 = false, tls = o->cert_file || o->key_file;
        _cleanup_close_ int fd = -1;
        int r;

        if (!h)
                return -ENOMEM;
        h->fn = o->fn;
        h->userdata = o->userdata;
        h->body_max = o->body_max;
        h->verify_client = o->client_ca_file != NULL;
        r = 0;
        if (tls && (!o->cert_file || !o->key_file))
                r = xp_errorf(
                    err,
                    -EINVAL,
                    "HTTPS needs both a certificate and its key (--tls-cert-file and --tls-key-file)");
        if (r >= 0 && h->verify_client && !tls)
                r = xp_errorf(err,
                              -EINVAL,
                              "--client-ca-file needs HTTPS (--tls-cert-file and --tls-key-file)");
        if (r >= 0)
                r = load_pem(o->cert_file, &h->cert, err);
        if (r >= 0)
                r = load_pem(o->key_file, &h->key, err);
        if (r >= 0)
                r = load_pem(o->client_ca_file, &h->ca, err);
        if (r >= 0) {
                r = xp_http_listen(o->host, o->port, &ipv6, &h->port, err);
                if (r < 0)
                        xp_error_prefix(err, r, "--listen");
                fd = r;
        }
        if (r < 0) {
                ext_http_stop(h);
                return r;
        }
        {
                struct MHD_OptionItem tls_options[] = {
                    {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, h->cert},
                    {MHD_OPTION_HTTPS_MEM_KEY, 0, h->key},
                    {h->ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, h->ca},
                    {MHD_OPTION_END, 0, NULL},
                };
                h->daemon = MHD_start_daemon(
                    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                        (ipv6 ? MHD_USE_IPv6 : 0) | (tls ? MHD_USE_TLS : 0),
                    0,
                    NULL,
                    NULL,
                    on_request,
                    h,
                    MHD_OPTION_LISTEN_SOCKET,
                    fd,
                    MHD_OPTION_CONNECTION_TIMEOUT,
                    (unsigned)60,
                    MHD_OPTION_CONNECTION_LIMIT,
                    (unsigned)CONNECTIONS_MAX,
                    MHD_OPTION_NOTIFY_COMPLETED,
                    on_completed,
                    NULL,
                    MHD_OPTION_ARRAY,
                    tls_options,
                    MHD_OPTION_END);
        }
        if (!h->daemon) {
                r = xp_errorf(err,
                              -EIO,
                              "cannot serve on %s port %u (a bad certificate or key?)",
                              o->host,
                              o->port);
                ext_http_stop(h);
                return r;
        }
        fd = -1; /* the daemon's now: it closes it as it stops */
        *ret = h;
        return 0;
}

uint16_t ext_http_port(const struct ext_http *h)
{
        return h ? h->port : 0;
}

void ext_http_stop(struct ext_http *h)
{
        if (!h)
                return;
        if (h->daemon)
                MHD_stop_daemon(h->daemon);
        free(h->cert);
        if (h->key)
                explicit_bzero(h->key, strlen(h->key));
        free(h->key);
        free(h->ca);
        free(h);
}
