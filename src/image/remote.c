/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A client of one registry endpoint for one repository (the OCI distribution API v2, over
 * libcurl): GETs of manifests and blobs, answering 401 challenges with a bearer token (fetched
 * from the challenge's realm with the credentials, when there are some) or basic
 * authentication, trying each candidate credential in turn. Every transfer is bounded: a
 * connect timeout, a stall timeout (no byte for that long), and a size limit for what is held
 * in memory.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libs.h"
#include "remote.h"

#define TOKEN_MAX      (1024 * 1024)
#define ERROR_BODY_MAX (64 * 1024)

struct xp_image_remote {
        CURL *curl;
        struct xp_image_remote_opts o;
        char *base, *host; /* copies of o's */
        char *token;       /* bearer token for the repository */
        size_t cred;       /* the candidate credential in use */
        bool basic;        /* the endpoint asked for basic authentication */
        bool authed;       /* an authorization was tried */
        char curl_error[CURL_ERROR_SIZE];
};

/* One response. */
struct response {
        long status;
        char *content_type, *digest, *challenge;
        char *body;
        size_t size, max;
        int sink_fd; /* >= 0: a 200's body goes here */
        int sink_error;
        uint64_t streamed;
        const atomic_bool *cancel;
};

static void response_done(struct response *r)
{
        free(r->content_type);
        free(r->digest);
        free(r->challenge);
        free(r->body);
        *r = (struct response){.sink_fd = -1};
}

static size_t on_header(char *buf, size_t size, size_t n, void *userdata)
{
        struct response *r = userdata;
        size_t len = size * n, vlen;
        char **slot = NULL;
        const char *v;

        if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
                /* a new response (after a redirect): forget the last one's headers */
                free(r->content_type);
                free(r->digest);
                free(r->challenge);
                r->content_type = r->digest = r->challenge = NULL;
                return len;
        }
        if (len > 13 && strncasecmp(buf, "content-type:", 13) == 0)
                slot = &r->content_type, v = buf + 13;
        else if (len > 22 && strncasecmp(buf, "docker-content-digest:", 22) == 0)
                slot = &r->digest, v = buf + 22;
        else if (len > 17 && strncasecmp(buf, "www-authenticate:", 17) == 0)
                slot = &r->challenge, v = buf + 17;
        else
                return len;
        while (v < buf + len && (*v == ' ' || *v == '\t'))
                v++;
        vlen = (size_t)(buf + len - v);
        while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
                vlen--;
        /* a content type's parameters (charset) are not part of the media type */
        if (slot == &r->content_type && memchr(v, ';', vlen))
                vlen = (size_t)((const char *)memchr(v, ';', vlen) - v);
        free(*slot);
        *slot = strndup(v, vlen);
        return *slot ? len : 0;
}

static size_t on_body(char *buf, size_t size, size_t n, void *userdata)
{
        struct response *r = userdata;
        size_t len = size * n;
        char *grown;

        if (r->sink_fd >= 0 && r->status == 200) {
                for (size_t off = 0; off < len;) {
                        ssize_t w = send(r->sink_fd, buf + off, len - off, MSG_NOSIGNAL);

                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0) {
                                r->sink_error = -errno;
                                return 0;
                        }
                        off += (size_t)w;
                }
                r->streamed += len;
                return len;
        }
        if (r->size + len > (r->status == 200 ? r->max : ERROR_BODY_MAX)) {
                r->sink_error = -EFBIG;
                return 0;
        }
        grown = realloc(r->body, r->size + len + 1);
        if (!grown)
                return 0;
        r->body = grown;
        memcpy(r->body + r->size, buf, len);
        r->size += len;
        r->body[r->size] = '\0';
        return len;
}

static int on_progress(void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
        struct response *r = userdata;

        (void)dt, (void)dn, (void)ut, (void)un;
        return r->cancel && atomic_load(r->cancel) ? 1 : 0;
}

/* The status callback needs the code before the body arrives. */
static size_t on_body_status(char *buf, size_t size, size_t n, void *userdata);

static int curl_failed(struct xp_image_remote *reg,
                       CURLcode c,
                       struct response *r,
                       const char *url,
                       struct xp_error *err)
{
        const char *msg = reg->curl_error[0] ? reg->curl_error : image_libs.curl_easy_strerror(c);

        switch (c) {
        case CURLE_ABORTED_BY_CALLBACK:
                return xp_errorf(err, -ECANCELED, "GET %s: cancelled", url);
        case CURLE_WRITE_ERROR:
                if (r->sink_error == -EFBIG)
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "GET %s: the answer is larger than %zu bytes",
                                         url,
                                         r->max);
                return xp_errorf(err,
                                 r->sink_error ? r->sink_error : -EIO,
                                 "GET %s: the transfer was cut off: %s",
                                 url,
                                 strerror(r->sink_error ? -r->sink_error : EIO));
        case CURLE_OPERATION_TIMEDOUT:
                return xp_errorf(
                    err, -ETIMEDOUT, "GET %s: the registry did not answer in time (%s)", url, msg);
        case CURLE_COULDNT_CONNECT:
                return xp_errorf(err, -ECONNREFUSED, "GET %s: cannot connect: %s", url, msg);
        case CURLE_COULDNT_RESOLVE_HOST:
                return xp_errorf(
                    err, -EHOSTUNREACH, "GET %s: cannot resolve the host: %s", url, msg);
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
                return xp_errorf(
                    err,
                    -EPROTO,
                    "GET %s: TLS: %s (a registry's CA goes in the registries file: configs.HOST.tls.ca_file; "
                    "one that speaks plain HTTP: configs.HOST.plain_http: true)",
                    url,
                    msg);
        default:
                return xp_errorf(err, -EIO, "GET %s: %s", url, msg);
        }
}

static void apply_tls(struct xp_image_remote *reg, CURL *curl)
{
        const struct xp_regconf_host *h = xp_regconf_find(reg->o.conf, reg->o.host);

        image_libs.curl_easy_setopt(curl, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
        if (!h)
                return;
        if (h->ca_file)
                image_libs.curl_easy_setopt(curl, CURLOPT_CAINFO, h->ca_file);
        if (h->cert_file)
                image_libs.curl_easy_setopt(curl, CURLOPT_SSLCERT, h->cert_file);
        if (h->key_file)
                image_libs.curl_easy_setopt(curl, CURLOPT_SSLKEY, h->key_file);
        if (h->insecure_skip_verify) {
                image_libs.curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
                image_libs.curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
        }
}

/* One GET of url (with cred as basic authentication when not NULL): 0 with r->status set, or
 * -errno. */
static int get_once(struct xp_image_remote *reg,
                    const char *url,
                    struct curl_slist *headers,
                    const struct xp_image_cred *cred,
                    struct response *r,
                    struct xp_error *err)
{
        CURL *c = reg->curl;
        int64_t stall_s = (reg->o.conf ? reg->o.conf->stall_ms : XP_REGCONF_STALL_MS) / 1000;
        int64_t connect_ms = reg->o.conf ? reg->o.conf->connect_ms : XP_REGCONF_CONNECT_MS;
        CURLcode cc;

        image_libs.curl_easy_reset(c);
        reg->curl_error[0] = '\0';
        image_libs.curl_easy_setopt(c, CURLOPT_URL, url);
        image_libs.curl_easy_setopt(c, CURLOPT_ERRORBUFFER, reg->curl_error);
        image_libs.curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        image_libs.curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        image_libs.curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        image_libs.curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        image_libs.curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
        image_libs.curl_easy_setopt(c, CURLOPT_USERAGENT, "xpool/" XPOOL_VERSION);
        image_libs.curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
        image_libs.curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        image_libs.curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)(stall_s > 0 ? stall_s : 1));
        /* what is held in memory has a whole-transfer bound too: a trickle cannot hold a pull */
        if (r->sink_fd < 0)
                image_libs.curl_easy_setopt(
                    c,
                    CURLOPT_TIMEOUT_MS,
                    (long)(connect_ms + 4 * (stall_s > 0 ? stall_s : 1) * 1000));
        image_libs.curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        image_libs.curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        image_libs.curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
        image_libs.curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body_status);
        image_libs.curl_easy_setopt(c, CURLOPT_WRITEDATA, (void *)c);
        image_libs.curl_easy_setopt(c, CURLOPT_PRIVATE, r);
        image_libs.curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        image_libs.curl_easy_setopt(c, CURLOPT_XFERINFODATA, r);
        image_libs.curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        image_libs.curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, NULL);
        apply_tls(reg, c);
        if (cred) {
                image_libs.curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
                image_libs.curl_easy_setopt(c, CURLOPT_USERNAME, cred->username);
                image_libs.curl_easy_setopt(c, CURLOPT_PASSWORD, cred->password);
        }
        cc = image_libs.curl_easy_perform(c);
        image_libs.curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        if (cc != CURLE_OK)
                return curl_failed(reg, cc, r, url, err);
        return 0;
}

static size_t on_body_status(char *buf, size_t size, size_t n, void *userdata)
{
        CURL *c = userdata;
        struct response *r = NULL;

        image_libs.curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&r);
        image_libs.curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        return on_body(buf, size, n, r);
}

/* The registry's own words from an error body ({"errors": [{"code", "message"}]}). */
static void registry_words(const struct response *r, char *buf, size_t size)
{
        json_auto_t *root = r->body ? json_loadb(r->body, r->size, 0, NULL) : NULL;
        const json_t *e = json_array_get(json_object_get(root, "errors"), 0);
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));

        buf[0] = '\0';
        if (code || msg)
                snprintf(buf,
                         size,
                         ": %s%s%s",
                         msg ? msg : "",
                         msg && code ? " " : "",
                         code ? code : "");
        for (char *p = buf; *p; p++)
                if ((unsigned char)*p < ' ')
                        *p = ' ';
}

static int status_error(struct xp_image_remote *reg,
                        const struct response *r,
                        const char *url,
                        struct xp_error *err)
{
        char words[256];

        registry_words(r, words, sizeof(words));
        if (r->status == 401 || r->status == 403)
                return xp_errorf(
                    err,
                    -EACCES,
                    "GET %s: the registry refused access (%ld%s)%s",
                    url,
                    r->status,
                    words,
                    reg->o.n_creds == 0
                        ? "; no credentials for it: give an imagePullSecret or add them to the node's credentials file"
                        : "; the credentials were refused");
        if (r->status == 404)
                return xp_errorf(err, -ENOENT, "GET %s: not found (404%s)", url, words);
        if (r->status == 429)
                return xp_errorf(err, -EAGAIN, "GET %s: too many requests (429%s)", url, words);
        return xp_errorf(err, -EIO, "GET %s: the registry answered %ld%s", url, r->status, words);
}

/* A bearer token from the challenge's realm for the repository, with the credential in use. */
static int
fetch_token(struct xp_image_remote *reg, const struct xp_image_challenge *ch, struct xp_error *err)
{
        const struct xp_image_cred *cred =
            reg->cred < reg->o.n_creds ? &reg->o.creds[reg->cred] : NULL;
        _cleanup_free_ char *url = NULL, *scope = NULL, *service = NULL;
        struct response r = {.sink_fd = -1, .max = TOKEN_MAX, .cancel = reg->o.cancel};
        json_auto_t *root = NULL;
        const char *token;
        char def_scope[600];
        int rc;

        if (!ch->realm ||
            (strncmp(ch->realm, "https://", 8) != 0 && strncmp(ch->realm, "http://", 7) != 0))
                return xp_errorf(
                    err, -EACCES, "the registry's bearer challenge has no http(s) realm");
        if (cred && strncmp(ch->realm, "http://", 7) == 0 &&
            strncmp(reg->o.base, "https://", 8) == 0)
                return xp_errorf(
                    err,
                    -EACCES,
                    "the registry asks for credentials to be sent to %s over plain http: refused",
                    ch->realm);
        snprintf(def_scope, sizeof(def_scope), "repository:%s:pull", reg->o.repo);
        scope = image_libs.curl_easy_escape(reg->curl, ch->scope ? ch->scope : def_scope, 0);
        service = ch->service ? image_libs.curl_easy_escape(reg->curl, ch->service, 0) : NULL;
        if (!scope || (ch->service && !service) ||
            asprintf(&url,
                     "%s%sscope=%s%s%s",
                     ch->realm,
                     strchr(ch->realm, '?') ? "&" : "?",
                     scope,
                     service ? "&service=" : "",
                     service ? service : "") < 0)
                return -ENOMEM;
        rc = get_once(reg, url, NULL, cred, &r, err);
        if (rc >= 0 && r.status != 200)
                rc = status_error(reg, &r, url, err);
        if (rc >= 0) {
                root = json_loadb(r.body ? r.body : "", r.size, 0, NULL);
                token = json_string_value(json_object_get(root, "token"));
                if (!token)
                        token = json_string_value(json_object_get(root, "access_token"));
                if (!token || !*token)
                        rc = xp_errorf(err, -EACCES, "GET %s: the answer holds no token", url);
                else {
                        free(reg->token);
                        reg->token = strdup(token);
                        rc = reg->token ? 0 : -ENOMEM;
                }
        }
        response_done(&r);
        return rc;
}

/* Answers a 401: a token for a Bearer challenge, basic authentication for a Basic one. 1 to
 * try again, 0 to give up (the 401 stands), -errno. */
static int
answer_challenge(struct xp_image_remote *reg, const struct response *r, struct xp_error *err)
{
        struct xp_image_challenge ch = {0};
        int rc;

        if (reg->authed) {
                /* what we sent was refused: the next candidate credential, if there is one */
                if (reg->cred + 1 >= reg->o.n_creds)
                        return 0;
                reg->cred++;
        }
        reg->authed = true;
        if (!r->challenge || xp_image_challenge_parse(r->challenge, &ch) < 0)
                return 0;
        if (strcasecmp(ch.scheme, "Bearer") == 0) {
                for (;;) {
                        rc = fetch_token(reg, &ch, err);
                        if (rc != -EACCES || reg->cred + 1 >= reg->o.n_creds)
                                break;
                        reg->cred++;
                }
                rc = rc < 0 ? rc : 1;
        } else if (strcasecmp(ch.scheme, "Basic") == 0) {
                reg->basic = true;
                rc = reg->o.n_creds > 0 ? 1 : 0;
        } else {
                rc = 0;
        }
        xp_image_challenge_done(&ch);
        return rc;
}

/* GET url with the authorization this endpoint asked for: 0 with r->status, or -errno. */
static int request(struct xp_image_remote *reg,
                   const char *url,
                   const char *accept,
                   struct response *r,
                   struct xp_error *err)
{
        for (size_t attempt = 0; attempt < reg->o.n_creds + 2; attempt++) {
                struct curl_slist *headers = NULL, *h;
                char line[8192];
                int rc;

                r->status = 0;
                free(r->body);
                r->body = NULL;
                r->size = 0;
                if (accept) {
                        snprintf(line, sizeof(line), "Accept: %s", accept);
                        headers = image_libs.curl_slist_append(headers, line);
                }
                if (reg->token && strlen(reg->token) < sizeof(line) - 32) {
                        snprintf(line, sizeof(line), "Authorization: Bearer %s", reg->token);
                        h = image_libs.curl_slist_append(headers, line);
                        explicit_bzero(line, sizeof(line));
                        headers = h ? h : headers;
                }
                rc = get_once(reg,
                              url,
                              headers,
                              reg->basic && reg->cred < reg->o.n_creds ? &reg->o.creds[reg->cred]
                                                                       : NULL,
                              r,
                              err);
                image_libs.curl_slist_free_all(headers);
                if (rc < 0 || r->status != 401)
                        return rc;
                rc = answer_challenge(reg, r, err);
                if (rc <= 0)
                        return rc;
        }
        return 0;
}

int xp_image_remote_new(const struct xp_image_remote_opts *o,
                        struct xp_image_remote **ret,
                        struct xp_error *err)
{
        struct xp_image_remote *reg;
        int r = image_curl_load(err);

        if (r < 0)
                return r;
        reg = calloc(1, sizeof(*reg));
        if (!reg)
                return -ENOMEM;
        reg->o = *o;
        reg->base = strdup(o->base);
        reg->host = strdup(o->host);
        reg->o.base = reg->base;
        reg->o.host = reg->host;
        reg->curl = image_libs.curl_easy_init();
        if (!reg->curl || !reg->base || !reg->host) {
                xp_image_remote_free(reg);
                return xp_errorf(err, -ENOMEM, "cannot start an HTTP client");
        }
        *ret = reg;
        return 0;
}

void xp_image_remote_free(struct xp_image_remote *reg)
{
        if (!reg)
                return;
        if (reg->curl)
                image_libs.curl_easy_cleanup(reg->curl);
        free(reg->base);
        free(reg->host);
        if (reg->token)
                explicit_bzero(reg->token, strlen(reg->token));
        free(reg->token);
        free(reg);
}

void xp_image_remote_blob_done(struct xp_image_remote_blob *b)
{
        free(b->data);
        free(b->content_type);
        free(b->digest);
        *b = (struct xp_image_remote_blob){0};
}

static int url_of(const struct xp_image_remote *reg, const char *kind, const char *ref, char **ret)
{
        return asprintf(ret, "%s/v2/%s/%s/%s", reg->o.base, reg->o.repo, kind, ref) < 0 ? -ENOMEM
                                                                                        : 0;
}

int xp_image_remote_fetch(struct xp_image_remote *reg,
                          const char *kind,
                          const char *ref,
                          const char *accept,
                          size_t max,
                          struct xp_image_remote_blob *ret,
                          struct xp_error *err)
{
        struct response r = {.sink_fd = -1, .max = max, .cancel = reg->o.cancel};
        _cleanup_free_ char *url = NULL;
        int rc;

        if (url_of(reg, kind, ref, &url) < 0)
                return -ENOMEM;
        rc = request(reg, url, accept, &r, err);
        if (rc >= 0 && r.status != 200)
                rc = status_error(reg, &r, url, err);
        if (rc >= 0) {
                *ret = (struct xp_image_remote_blob){.data = TAKE_PTR(r.body),
                                                     .size = r.size,
                                                     .content_type = TAKE_PTR(r.content_type),
                                                     .digest = TAKE_PTR(r.digest)};
                if (!ret->data && !(ret->data = strdup("")))
                        rc = -ENOMEM;
        }
        response_done(&r);
        return rc;
}

int xp_image_remote_stream(struct xp_image_remote *reg,
                           const char *digest,
                           int fd,
                           uint64_t *ret_bytes,
                           struct xp_error *err)
{
        struct response r = {.sink_fd = fd, .max = 0, .cancel = reg->o.cancel};
        _cleanup_free_ char *url = NULL;
        int rc;

        if (url_of(reg, "blobs", digest, &url) < 0)
                return -ENOMEM;
        rc = request(reg, url, NULL, &r, err);
        if (rc >= 0 && r.status != 200)
                rc = status_error(reg, &r, url, err);
        if (ret_bytes)
                *ret_bytes = r.streamed;
        response_done(&r);
        return rc;
}
