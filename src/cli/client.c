/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "xpool/client.h"
#include "xpool/datadir.h"
#include "xpool/kubeconfig.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/yaml.h"

struct xp_client {
        struct xp_apiclient *api;
        char *namespace; /* the default namespace */
        bool namespace_explicit;
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
        const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
        _cleanup_free_ char *dir = NULL;
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
        if (xp_datadir_default(&dir, NULL) >= 0) {
                path = xp_datadir_path(dir, XP_DATADIR_KUBECONFIG);
                if (!path)
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

int xp_client_new(const struct xp_client_options *opts,
                  struct xp_client **ret,
                  struct xp_error *err)
{
        _cleanup_(xp_client_freep) struct xp_client *c = NULL;
        _cleanup_free_ char *path = NULL;
        struct xp_kubeconfig config = {0};
        struct xp_apiclient_options api = {0};
        const char *namespace;
        int r;

        r = find_kubeconfig(opts, &path, err);
        if (r < 0)
                return r;
        if (path) {
                r = xp_kubeconfig_load(path, opts->context, &config, err);
                if (r < 0)
                        return r;
        }
        api.server = opts->server ? opts->server : config.server;
        if (!api.server || !*api.server) {
                xp_kubeconfig_done(&config);
                return xp_errorf(
                    err, -EINVAL, "--server needs a URL: http://HOST:PORT or https://HOST:PORT");
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                xp_kubeconfig_done(&config);
                return -ENOMEM;
        }
        namespace = opts->namespace    ? opts->namespace
                    : config.namespace ? config.namespace
                                       : "default";
        c->namespace = strdup(namespace);
        c->namespace_explicit = opts->namespace != NULL;
        if (opts->token) {
                api.token = opts->token;
                api.cred_where = "the token given with --token";
        } else if (config.token) {
                api.token = config.token;
                api.cred_where = path;
        }
        api.insecure = config.insecure;
        api.ca_file = config.ca_file;
        api.ca_pem = config.ca_data;
        api.ca_pem_len = config.ca_len;
        r = c->namespace ? xp_apiclient_new(&api, &c->api, err) : -ENOMEM;
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
        xp_apiclient_free(client->api);
        free(client->namespace);
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

int xp_client_json(struct xp_client *client,
                   const char *method,
                   const char *path,
                   const char *content_type,
                   const json_t *body,
                   const char *accept,
                   json_t **ret,
                   struct xp_error *err)
{
        return xp_apiclient_json(client->api, method, path, content_type, body, accept, ret, err);
}

int xp_client_get_text(
    struct xp_client *client, const char *path, char **ret, size_t *ret_len, struct xp_error *err)
{
        return xp_apiclient_get_text(client->api, path, ret, ret_len, err);
}

int xp_client_stream(struct xp_client *client,
                     const char *path,
                     const char *accept,
                     xp_client_data_fn fn,
                     void *userdata,
                     struct xp_error *err)
{
        return xp_apiclient_stream(client->api, path, accept, fn, userdata, err);
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
        return xp_apiclient_add_query(buf, size, key, value);
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
