/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The server's start-up: certificate and admin kubeconfig (setup.c). */

#include "xpool/error.h"
#include "xpool/server.h"

/*
 * The serving certificate and key as PEM text, and the CA's certificate clients should trust
 * (NULL when the operator's files are used: signed by a CA clients already trust). Generates
 * them under DATA_DIR/pki for XP_SERVER_TLS_GENERATE, valid for listen_host, this machine's
 * name, loopback, options->tls_sans, and the `kubernetes` Service's ClusterIP (the first address
 * of options->service_cluster_ip_range) and names, at which pods reach the server (the agent
 * forwards it). Caller frees the three.
 */
int setup_tls(const struct xp_server_options *options,
              const char *listen_host,
              char **ret_cert,
              char **ret_key,
              char **ret_ca,
              struct xp_error *err);

struct servingcert_signer;
struct agent_tls;

/*
 * The signer of the agents' serving certificates and the checker of their certificates, both over
 * the CA in DATA_DIR/pki (made there when the operator's files serve the API; setup_agents.c).
 * Caller frees both. -errno with err.
 */
int setup_agent_tls(const struct xp_server_options *options,
                    struct servingcert_signer **ret_signer,
                    struct agent_tls **ret_agent_tls,
                    struct xp_error *err);

/*
 * Writes the admin kubeconfig at path for url (and ca_pem, may be NULL). new_admin_token (taken;
 * may be NULL) is the token auth_open() made for a new data directory; otherwise the token of
 * the kubeconfig already at path is kept while it is still a valid admin token, else a new one
 * is made.
 */
int setup_kubeconfig(const char *data_dir,
                     const char *path,
                     const char *url,
                     const char *ca_pem,
                     char *new_admin_token,
                     struct xp_error *err);
