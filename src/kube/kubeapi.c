/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reaching the Kubernetes API from a cluster's node or pod (xpool/kubeapi.h): a kubeconfig, or the
 * service account the pod runs as. The token file is re-read when it changes, since the kubelet
 * rotates projected tokens (an hour by default) and an old one is refused once it expires.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/fileio.h"
#include "xpool/kubeapi.h"
#include "xpool/kubeconfig.h"
#include "xpool/strutil.h"

#define TOKEN_MAX (64 * 1024)

void xp_kube_api_done(struct xp_kube_api *api)
{
        if (!api)
                return;
        free(api->server);
        free(api->token);
        free(api->token_file);
        free(api->ca_file);
        free(api->ca_pem);
        free(api->where);
        free(api->namespace);
        *api = (struct xp_kube_api){0};
}

/* The first line of path, trimmed, into *ret (caller frees); its stat into *st. */
static int read_line(const char *path, char **ret, struct stat *st, struct xp_error *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char *text = NULL;
        size_t len = 0;
        int r;

        if (fd < 0 || fstat(fd, st) < 0)
                return xp_errorf(err, -errno, "reading %s: %s", path, strerror(errno));
        r = xp_read_fd_all(fd, TOKEN_MAX, &text, &len);
        if (r < 0)
                return xp_errorf(err, r, "reading %s: %s", path, strerror(-r));
        len = strcspn(text, "\r\n");
        while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
                len--;
        text[len] = '\0';
        *ret = text;
        return 0;
}

static int from_kubeconfig(const char *path, struct xp_kube_api *api, struct xp_error *err)
{
        struct xp_kubeconfig config = {0};
        int r = xp_kubeconfig_load(path, NULL, &config, err);

        if (r < 0)
                return r;
        api->server = TAKE_PTR(config.server);
        api->token = TAKE_PTR(config.token);
        api->ca_file = TAKE_PTR(config.ca_file);
        api->ca_pem = TAKE_PTR(config.ca_data);
        api->ca_pem_len = config.ca_len;
        api->insecure = config.insecure;
        api->namespace = TAKE_PTR(config.namespace);
        api->where = strdup(path);
        xp_kubeconfig_done(&config);
        return api->where ? 0 : -ENOMEM;
}

static int in_cluster(const char *dir, struct xp_kube_api *api, struct xp_error *err)
{
        const char *host = getenv("KUBERNETES_SERVICE_HOST"),
                   *port = getenv("KUBERNETES_SERVICE_PORT");
        _cleanup_free_ char *ns_file = NULL, *ca = NULL;
        struct stat st;
        int r;

        if (!host || !*host || !port || !*port)
                return xp_errorf(
                    err,
                    -ENOENT,
                    "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set, and no --kubeconfig (or $KUBECONFIG) was given");
        if (asprintf(&api->token_file, "%s/token", dir) < 0 ||
            asprintf(&ca, "%s/ca.crt", dir) < 0 || asprintf(&ns_file, "%s/namespace", dir) < 0) {
                api->token_file = NULL;
                return -ENOMEM;
        }
        /* an IPv6 address goes in brackets */
        if (asprintf(
                &api->server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port) <
            0) {
                api->server = NULL;
                return -ENOMEM;
        }
        r = read_line(api->token_file, &api->token, &st, err);
        if (r < 0)
                return xp_error_prefix(err, r, "the service account token");
        api->token_mtime = st.st_mtim;
        api->token_ino = st.st_ino;
        if (access(ca, R_OK) == 0)
                api->ca_file = TAKE_PTR(ca);
        if (read_line(ns_file, &api->namespace, &st, NULL) < 0)
                api->namespace = NULL;
        api->where = strdup(api->token_file);
        return api->where ? 0 : -ENOMEM;
}

int xp_kube_api_load(const char *kubeconfig,
                     const char *sa_dir,
                     struct xp_kube_api *ret,
                     struct xp_error *err)
{
        struct xp_kube_api api = {0};
        const char *env = getenv("KUBECONFIG");
        int r;

        if (!kubeconfig && env && *env)
                kubeconfig = env;
        r = kubeconfig ? from_kubeconfig(kubeconfig, &api, err)
                       : in_cluster(sa_dir ? sa_dir : XP_KUBE_SERVICEACCOUNT_DIR, &api, err);
        if (r < 0) {
                xp_kube_api_done(&api);
                return r;
        }
        *ret = api;
        return 0;
}

void xp_kube_api_client_options(const struct xp_kube_api *api,
                                long timeout_ms,
                                struct xp_apiclient_options *ret)
{
        *ret = (struct xp_apiclient_options){
            .server = api->server,
            .token = api->token,
            .ca_file = api->ca_file,
            .ca_pem = api->ca_pem,
            .ca_pem_len = api->ca_pem_len,
            .insecure = api->insecure,
            .cred_where = api->where,
            .timeout_ms = timeout_ms,
        };
}

int xp_kube_api_refresh(struct xp_kube_api *api, struct xp_error *err)
{
        struct stat st;
        char *token = NULL;
        int r;

        if (!api->token_file)
                return 0;
        if (stat(api->token_file, &st) < 0)
                return xp_errorf(err, -errno, "reading %s: %s", api->token_file, strerror(errno));
        /* the kubelet swaps the file through a symlink: the inode changes with the token */
        if (st.st_ino == api->token_ino && st.st_mtim.tv_sec == api->token_mtime.tv_sec &&
            st.st_mtim.tv_nsec == api->token_mtime.tv_nsec)
                return 0;
        r = read_line(api->token_file, &token, &st, err);
        if (r < 0)
                return r;
        api->token_mtime = st.st_mtim;
        api->token_ino = st.st_ino;
        if (xp_streq0(token, api->token)) {
                free(token);
                return 0;
        }
        free(api->token);
        api->token = token;
        return 1;
}

int xp_kube_api_client(struct xp_kube_api *api,
                       long timeout_ms,
                       pthread_mutex_t *lock,
                       const atomic_bool *stopping,
                       struct xp_apiclient **client,
                       struct xp_error *err)
{
        struct xp_apiclient_options o;
        struct xp_apiclient *fresh = NULL, *old;
        int r = xp_kube_api_refresh(api, err);

        if (r < 0)
                return r;
        if (r == 0 && *client)
                return 0;
        xp_kube_api_client_options(api, timeout_ms, &o);
        r = xp_apiclient_new(&o, &fresh, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(lock);
        old = *client;
        *client = fresh;
        if (atomic_load(stopping))
                xp_apiclient_cancel(fresh);
        pthread_mutex_unlock(lock);
        xp_apiclient_free(old);
        return 0;
}
