/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a server needs before it serves: its certificate (generated under DATA_DIR/pki, or the
 * operator's), and the admin kubeconfig, rewritten at every start with the URL the server is on
 * now, so that `KUBECONFIG=DATA_DIR/admin.kubeconfig kubectl ...` always works.
 *
 * The kubeconfig keeps its token across restarts: the tokens file holds only hashes, so the
 * token is read back from the kubeconfig written before. When that file is gone, a new admin
 * token is made (the old one stays valid until revoked: `xpool token list|revoke`).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "internal.h"
#include "kubeconfig.h"
#include "setup.h"
#include "tls.h"
#include "xpool/datadir.h"
#include "xpool/fileio.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/yaml.h"

#define KUBECONFIG_MAX (256 * 1024)

/* The names kube-apiserver's certificate carries for the `kubernetes` Service, beside its
 * ClusterIP: in-cluster clients may call the server by any of them. */
static const char *const service_names[] = {"kubernetes",
                                            "kubernetes.default",
                                            "kubernetes.default.svc",
                                            "kubernetes.default.svc.cluster.local"};

/* The `kubernetes` Service's ClusterIP: the first address of the primary range. */
static int service_address(const char *ranges, char buf[static 46], struct xp_error *err)
{
        struct service_ips *ips = NULL;
        int r = service_ips_new(ranges, &ips, err);

        if (r < 0)
                return r;
        service_ips_first(ips, buf);
        service_ips_free(ips);
        return 0;
}

int setup_tls(const struct xp_server_options *options,
              const char *listen_host,
              char **ret_cert,
              char **ret_key,
              char **ret_ca,
              struct xp_error *err)
{
        _cleanup_free_ char *dir = NULL, *cert_path = NULL, *key_path = NULL, *ca_path = NULL;
        _cleanup_free_ char *cert = NULL, *key = NULL, *ca = NULL;
        const char *hosts[XP_SERVER_SANS_MAX + 2 + 1 + XP_ELEMENTSOF(service_names)];
        char hostname[256], service_ip[46];
        size_t n = 0;
        int r;

        if (options->tls == XP_SERVER_TLS_FILES) {
                if (!options->tls_cert || !options->tls_key)
                        return xp_errorf(
                            err, -EINVAL, "TLS from files needs both a certificate and a key");
                r = tls_check_pair(options->tls_cert, options->tls_key, err);
                if (r < 0)
                        return r;
                r = tls_load_pem(options->tls_cert, &cert, err);
                if (r < 0)
                        return r;
                r = tls_load_pem(options->tls_key, &key, err);
                if (r < 0)
                        return r;
                *ret_cert = TAKE_PTR(cert);
                *ret_key = TAKE_PTR(key);
                *ret_ca = NULL; /* signed by a CA clients already trust */
                return 0;
        }

        if (options->n_tls_sans > XP_SERVER_SANS_MAX)
                return xp_errorf(err,
                                 -E2BIG,
                                 "%zu extra certificate names given, at most %d",
                                 options->n_tls_sans,
                                 XP_SERVER_SANS_MAX);
        /* tls_ensure() adds 127.0.0.1, ::1 and localhost itself. */
        if (strcmp(listen_host, "0.0.0.0") != 0 && strcmp(listen_host, "::") != 0)
                hosts[n++] = listen_host;
        if (gethostname(hostname, sizeof hostname) == 0 && hostname[0]) {
                hostname[sizeof hostname - 1] = '\0';
                hosts[n++] = hostname;
        }
        for (size_t i = 0; i < options->n_tls_sans; i++)
                hosts[n++] = options->tls_sans[i];
        /* pods reach the server at the Service's address (the agent forwards it:
         * docs/networking.md, "The API from pods"), and verify it with their service account's
         * ca.crt */
        r = service_address(options->service_cluster_ip_range, service_ip, err);
        if (r < 0)
                return r;
        hosts[n++] = service_ip;
        for (size_t i = 0; i < XP_ELEMENTSOF(service_names); i++)
                hosts[n++] = service_names[i];

        dir = xp_datadir_path(options->data_dir, XP_DATADIR_PKI);
        if (!dir)
                return -ENOMEM;
        r = tls_ensure(dir, hosts, n, err); /* makes dir (0700) when missing */
        if (r < 0)
                return r;
        if (asprintf(&cert_path, "%s/" TLS_SERVER_CERT, dir) < 0 ||
            asprintf(&key_path, "%s/" TLS_SERVER_KEY, dir) < 0 ||
            asprintf(&ca_path, "%s/" TLS_CA_CERT, dir) < 0)
                return -ENOMEM;
        r = tls_load_pem(cert_path, &cert, err);
        if (r < 0)
                return r;
        r = tls_load_pem(key_path, &key, err);
        if (r < 0)
                return r;
        r = tls_load_pem(ca_path, &ca, err);
        if (r < 0)
                return r;
        *ret_cert = TAKE_PTR(cert);
        *ret_key = TAKE_PTR(key);
        *ret_ca = TAKE_PTR(ca);
        return 0;
}

/* The token of the first user in an existing kubeconfig, or NULL. */
static char *kubeconfig_token(const char *path)
{
        struct xp_yaml_document *docs = NULL;
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        const char *token;
        char *copy = NULL;
        size_t size, n = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || xp_read_fd_all(fd, KUBECONFIG_MAX, &text, &size) < 0)
                return NULL;
        if (xp_yaml_load(text, size, path, &docs, &n, NULL) < 0 || n != 1)
                goto out;
        token = json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(docs[0].root, "users"), 0), "user"),
            "token"));
        if (token && token[0])
                copy = strdup(token);
out:
        xp_yaml_documents_free(docs, n);
        return copy;
}

int setup_kubeconfig(const char *data_dir,
                     const char *path,
                     const char *url,
                     const char *ca_pem,
                     char *new_admin_token,
                     struct xp_error *err)
{
        _cleanup_free_ char *token = new_admin_token, *id = NULL;
        int r;

        /* A token just made for a new data directory wins over any file left at path. */
        if (!token)
                token = kubeconfig_token(path);
        if (token) {
                struct auth *auth = NULL;
                struct auth_identity who;
                struct xp_error ignored = {0};
                _cleanup_free_ char *header = NULL, *unused = NULL;

                /* The token may have been revoked since: check it against the tokens file. */
                if (asprintf(&header, "Bearer %s", token) < 0)
                        return -ENOMEM;
                r = auth_open(data_dir, &auth, &unused, err);
                if (r < 0)
                        return r;
                r = auth_authenticate(auth, header, &who, &ignored);
                auth_free(auth);
                if (r < 0 || who.role != XP_TOKEN_ADMIN) {
                        free(token);
                        token = NULL;
                }
        }
        if (!token) {
                r = xp_token_create(data_dir, XP_TOKEN_ADMIN, "admin", &token, &id, err);
                if (r < 0)
                        return r;
        }
        r = kubeconfig_write(path, url, ca_pem, token, "admin", err);
        if (r == -ENOSPC || r == -EDQUOT || r == -EROFS) {
                /* A full disk must not keep the server from serving reads (docs/store.md). */
                xp_log(LOG_WARNING,
                       "xpool server: %s: it keeps what it held (the URL of an earlier start)",
                       xp_error_message(err));
                xp_error_clear(err);
                return 0;
        }
        return r;
}
