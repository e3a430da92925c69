/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "xpool/kubeconfig.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/yaml.h"

/* Answers larger than this are refused: a list of every object of a big cluster fits. */
#define MAX_ANSWER_BYTES (256u * 1024 * 1024)

struct xp_client {
        CURL *curl;
        char *server;     /* without a trailing '/' */
        char *token;      /* NULL when none */
        char *namespace;  /* the default namespace */
        char *cred_where; /* where the token came from, for messages; NULL when none */
        bool namespace_explicit;
        int ca_fd; /* memfd holding the kubeconfig's CA (libcurl's GnuTLS reads a path) */
        char curl_error[CURL_ERROR_SIZE];
};

/* Takes getopt code c with its argument into opts: true when it was a shared option. */
static bool client_option(int c, const char *arg, struct xp_client_options *opts)
{
        switch (c) {
        case XP_CLIENT_OPT_KUBECONFIG:
                opts->kubeconfig = arg;
                return true;
        case XP_CLIENT_OPT_CONTEXT:
                opts->context = arg;
                return true;
        case XP_CLIENT_OPT_SERVER:
                opts->server = arg;
                return true;
        case XP_CLIENT_OPT_TOKEN:
                opts->token = arg;
                return true;
        case 'n':
                opts->namespace = arg;
                return true;
        default:
                return false;
        }
}

struct client_getopt {
        struct xp_client_options *opts;
        xp_cli_option_fn *fn;
        void *userdata;
};

static int client_getopt_option(int c, const char *arg, void *userdata)
{
        struct client_getopt *g = userdata;

        if (client_option(c, arg, g->opts))
                return 0;
        /* without fn the table has no codes of the command's own: getopt cannot return one */
        return g->fn ? g->fn(c, arg, g->userdata) : XP_EXIT_USAGE;
}

int xp_client_getopt(int argc,
                     char **argv,
                     const char *shortopts,
                     const struct option *options,
                     const char *usage,
                     struct xp_client_options *opts,
                     xp_cli_option_fn *fn,
                     void *userdata)
{
        struct client_getopt g = {.opts = opts, .fn = fn, .userdata = userdata};

        return xp_cli_getopt(argc, argv, shortopts, options, usage, client_getopt_option, &g);
}

/* The kubeconfig to read (caller frees), or NULL when there is none and --server makes do. */
static int find_kubeconfig(const struct xp_client_options *opts, char **ret, struct xp_error *err)
{
        const char *env = getenv("KUBECONFIG"), *state = getenv("XDG_STATE_HOME");
        const char *home = getenv("HOME");
        char *path = NULL;

        if (opts->kubeconfig) {
                path = strdup(opts->kubeconfig);
                goto found;
        }
        if (env && *env) {
                size_t len = strcspn(env, ":");

                path = strndup(env, len);
                goto found;
        }
        if (state && state[0] == '/') {
                if (asprintf(&path, "%s/xpool/admin.kubeconfig", state) < 0)
                        return -ENOMEM;
        } else if (home && *home) {
                if (asprintf(&path, "%s/.local/state/xpool/admin.kubeconfig", home) < 0)
                        return -ENOMEM;
        }
        if (path && access(path, F_OK) == 0)
                goto found;
        free(path);
        path = NULL;
        if (home && *home) {
                if (asprintf(&path, "%s/.kube/config", home) < 0)
                        return -ENOMEM;
                if (access(path, F_OK) == 0)
                        goto found;
                free(path);
                path = NULL;
        }
        if (opts->server) {
                *ret = NULL;
                return 0;
        }
        return xp_errorf(err,
                         -ENOENT,
                         "no kubeconfig found (looked for $KUBECONFIG, the server's "
                         "admin.kubeconfig in its data directory and ~/.kube/config): start the "
                         "server with 'xpool server', or pass --kubeconfig FILE or --server URL");
found:
        if (!path)
                return -ENOMEM;
        *ret = path;
        return 0;
}

static int set_ca(struct xp_client *c, const struct xp_kubeconfig *config, struct xp_error *err)
{
        char path[64];

        if (config->insecure) {
                curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
                return 0;
        }
        if (config->ca_file) {
                curl_easy_setopt(c->curl, CURLOPT_CAINFO, config->ca_file);
                return 0;
        }
        if (!config->ca_data)
                return 0;
        /* libcurl's GnuTLS backend has no CAINFO_BLOB: hand it the PEM as a file of our own. */
        c->ca_fd = memfd_create("xpool-ca", MFD_CLOEXEC);
        if (c->ca_fd < 0)
                return xp_errorf(
                    err, -errno, "cannot hold the kubeconfig's CA: %s", strerror(errno));
        if (write(c->ca_fd, config->ca_data, config->ca_len) != (ssize_t)config->ca_len)
                return xp_errorf(err, -EIO, "cannot hold the kubeconfig's CA: short write");
        snprintf(path, sizeof(path), "/proc/self/fd/%d", c->ca_fd);
        curl_easy_setopt(c->curl, CURLOPT_CAINFO, path);
        return 0;
}

int xp_client_new(const struct xp_client_options *opts,
                  struct xp_client **ret,
                  struct xp_error *err)
{
        _cleanup_(xp_client_freep) struct xp_client *c = NULL;
        _cleanup_free_ char *path = NULL;
        struct xp_kubeconfig config = {0};
        const char *server, *namespace;
        int r;

        r = find_kubeconfig(opts, &path, err);
        if (r < 0)
                return r;
        if (path) {
                r = xp_kubeconfig_load(path, opts->context, &config, err);
                if (r < 0)
                        return r;
        }
        server = opts->server ? opts->server : config.server;
        if (!server || !*server) {
                xp_kubeconfig_done(&config);
                return xp_errorf(
                    err, -EINVAL, "--server needs a URL: http://HOST:PORT or https://HOST:PORT");
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                xp_kubeconfig_done(&config);
                return -ENOMEM;
        }
        c->ca_fd = -1;
        c->curl = curl_easy_init();
        namespace = opts->namespace    ? opts->namespace
                    : config.namespace ? config.namespace
                                       : "default";
        c->server =
            server ? strndup(server, strlen(server) - (server[strlen(server) - 1] == '/')) : NULL;
        c->namespace = strdup(namespace);
        c->namespace_explicit = opts->namespace != NULL;
        if (opts->token) {
                c->token = strdup(opts->token);
                c->cred_where = strdup("the token given with --token");
        } else if (config.token) {
                c->token = strdup(config.token);
                if (asprintf(&c->cred_where, "%s", path) < 0)
                        c->cred_where = NULL;
        }
        if (!c->curl || !c->server || !c->namespace || (c->token && !c->cred_where)) {
                xp_kubeconfig_done(&config);
                return -ENOMEM;
        }
        curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->curl_error);
        curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "xpool/" XPOOL_VERSION);
        r = set_ca(c, &config, err);
        xp_kubeconfig_done(&config);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

void xp_client_free(struct xp_client *client)
{
        if (!client)
                return;
        if (client->curl)
                curl_easy_cleanup(client->curl);
        if (client->ca_fd >= 0)
                close(client->ca_fd);
        free(client->server);
        free(client->token);
        free(client->namespace);
        free(client->cred_where);
        free(client);
}

const char *xp_client_namespace(const struct xp_client *client)
{
        return client->namespace;
}

bool xp_client_namespace_explicit(const struct xp_client *client)
{
        return client->namespace_explicit;
}

const char *xp_client_server(const struct xp_client *client)
{
        return client->server;
}

struct transfer {
        struct xp_client *client;
        char *buf; /* the whole answer, or an error answer while streaming */
        size_t len, cap;
        xp_client_data_fn fn; /* NULL: buffer everything */
        void *userdata;
        long code; /* the HTTP code once known while streaming */
        int fn_result;
};

static int buffer_append(struct transfer *t, const char *data, size_t len)
{
        if (len > MAX_ANSWER_BYTES - t->len)
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

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
        struct transfer *t = userdata;
        size_t len = size * nmemb;

        if (t->fn) {
                if (t->code == 0)
                        curl_easy_getinfo(t->client->curl, CURLINFO_RESPONSE_CODE, &t->code);
                if (t->code >= 200 && t->code < 300) {
                        t->fn_result = t->fn(data, len, t->userdata);
                        return t->fn_result < 0 ? 0 : len;
                }
        }
        return buffer_append(t, data, len) < 0 ? 0 : len;
}

/* The message for a transport failure: what was tried and what to do. */
static int transport_error(struct xp_client *c, CURLcode code, struct xp_error *err)
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
                                 "cannot trust the xpool server at %s: %s (is the kubeconfig's "
                                 "certificate-authority-data that server's CA?)",
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
        default:
                return -EIO;
        }
}

/* The message for a non-2xx answer, from its Status when it is one. */
static int
http_error(struct xp_client *c, long code, const char *body, size_t len, struct xp_error *err)
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

static int perform(struct xp_client *c,
                   const char *method,
                   const char *path,
                   const char *content_type,
                   const char *body,
                   const char *accept,
                   struct transfer *t,
                   struct xp_error *err)
{
        struct curl_slist *headers = NULL, *h;
        _cleanup_free_ char *url = NULL, *auth = NULL, *ctype = NULL, *acc = NULL;
        CURLcode code;
        int r = 0;

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
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
        if (body) {
                curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        }
        curl_easy_setopt(c->curl, CURLOPT_NOBODY, strcmp(method, "HEAD") == 0 ? 1L : 0L);
        curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, t);
        code = curl_easy_perform(c->curl);
        curl_slist_free_all(headers);
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
        if (t->fn_result < 0)
                return t->fn_result;
        if (code != CURLE_OK)
                return transport_error(c, code, err);
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &t->code);
        if (t->code < 200 || t->code >= 300)
                r = http_error(c, t->code, t->buf, t->len, err);
        return r < 0 ? r : (int)t->code;
}

int xp_client_json(struct xp_client *client,
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
        r = perform(client, method, path, content_type, text, accept, &t, err);
        if (r >= 0) {
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

int xp_client_stream(struct xp_client *client,
                     const char *path,
                     const char *accept,
                     xp_client_data_fn fn,
                     void *userdata,
                     struct xp_error *err)
{
        struct transfer t = {.client = client, .fn = fn, .userdata = userdata};
        int r;

        /* A stream lasts as long as the server keeps it open: no overall timeout. */
        curl_easy_setopt(client->curl, CURLOPT_TIMEOUT, 0L);
        r = perform(client, "GET", path, NULL, NULL, accept, &t, err);
        free(t.buf);
        return r < 0 ? r : 0;
}

void xp_client_report(const struct xp_error *err)
{
        const char *msg = xp_error_message(err);

        if (strncmp(msg, "Error from server", strlen("Error from server")) == 0)
                fprintf(stderr, "%s\n", msg);
        else
                fprintf(stderr, "error: %s\n", msg);
}

int xp_client_add_query(char *buf, size_t size, const char *key, const char *value)
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

int xp_cli_print_json(FILE *out, const json_t *value)
{
        if (json_dumpf(value, out, JSON_INDENT(4)) < 0 || fputc('\n', out) == EOF)
                return -EIO;
        return 0;
}

int xp_cli_print_yaml(FILE *out, const json_t *value)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = xp_yaml_dump(value, &text, &len);

        if (r < 0)
                return r;
        return fwrite(text, 1, len, out) == len ? 0 : -EIO;
}

json_t *xp_cli_list_new(const json_t *items)
{
        return json_pack("{s:s, s:O, s:s, s:{s:s}}",
                         "apiVersion",
                         "v1",
                         "items",
                         (json_t *)items,
                         "kind",
                         "List",
                         "metadata",
                         "resourceVersion",
                         "");
}
