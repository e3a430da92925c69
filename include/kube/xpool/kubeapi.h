/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * How a component running in (or beside) a Kubernetes cluster reaches its API server, as
 * client-go's rest.InClusterConfig() and clientcmd do: a kubeconfig when one is named, else the
 * pod's service account (token and ca.crt in /var/run/secrets/kubernetes.io/serviceaccount, the
 * server at https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT). The token of a projected
 * service account is rotated by the kubelet: xp_kube_api_refresh() notices a new one.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "xpool/client.h"
#include "xpool/error.h"

#define XP_KUBE_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct xp_kube_api {
        char *server;     /* "https://10.96.0.1:443" */
        char *token;      /* NULL: none */
        char *token_file; /* the service account's, re-read by xp_kube_api_refresh(); or NULL */
        char *ca_file;    /* NULL: none */
        char *ca_pem;     /* a kubeconfig's certificate-authority-data; NULL: none */
        size_t ca_pem_len;
        bool insecure;
        char *where;     /* where the credentials came from, for messages */
        char *namespace; /* the service account's or the kubeconfig context's; NULL */
        struct timespec token_mtime;
        ino_t token_ino;
};

/*
 * Fills *ret from kubeconfig (a path; NULL: $KUBECONFIG when set) or else from the service
 * account directory sa_dir (NULL: XP_KUBE_SERVICEACCOUNT_DIR) and the KUBERNETES_SERVICE_HOST
 * and KUBERNETES_SERVICE_PORT variables. -ENOENT with err saying what was looked for when
 * neither is there, -EINVAL for a bad file, -errno. Free with xp_kube_api_done().
 */
int xp_kube_api_load(const char *kubeconfig,
                     const char *sa_dir,
                     struct xp_kube_api *ret,
                     struct xp_error *err);
void xp_kube_api_done(struct xp_kube_api *api);

/* The client options for api (borrowed from it until it changes). */
void xp_kube_api_client_options(const struct xp_kube_api *api,
                                long timeout_ms,
                                struct xp_apiclient_options *ret);

/* Re-reads the token file when it changed on disk: 1 when the token changed (make new clients),
 * 0 when not or when there is no file, -errno with err (the old token is kept). */
int xp_kube_api_refresh(struct xp_kube_api *api, struct xp_error *err);

/*
 * Keeps *client current for a thread that another thread may have to stop: a new client when
 * there is none or the token changed (xp_kube_api_refresh()), swapped in under lock, so whoever
 * stops the thread may cancel *client under the same lock; one made after stopping was set is
 * cancelled at once. 0, or -errno with err (the old client stays).
 */
int xp_kube_api_client(struct xp_kube_api *api,
                       long timeout_ms,
                       pthread_mutex_t *lock,
                       const atomic_bool *stopping,
                       struct xp_apiclient **client,
                       struct xp_error *err);
