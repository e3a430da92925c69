/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The server's certificates, made with GnuTLS (which libmicrohttpd serves TLS with): a private
 * CA that clients trust (its ca.crt goes into kubeconfigs and agents' --ca-file) and a serving
 * certificate it signs. docs/security.md is the user's view.
 *
 * Files in DIR: ca.crt, ca.key (ECDSA P-256, valid 10 years, CA:TRUE), server.crt, server.key
 * (ECDSA P-256, valid 1 year, serverAuth, signed by the CA). Keys are PKCS#8 PEM, mode 0600;
 * certificates mode 0644. Every file is replaced atomically.
 */

#include <stddef.h>

#include "xpool/error.h"
#include "xpool/tls_priority.h"

#define TLS_CA_CERT     "ca.crt"
#define TLS_CA_KEY      "ca.key"
#define TLS_SERVER_CERT "server.crt"
#define TLS_SERVER_KEY  "server.key"
/* The kubelet-serving CA: it signs the agents' serving certificates alone (servingcert.h), so an
 * agent's certificate never passes for the API server's, nor the server's for an agent's, as
 * Kubernetes keeps kubernetes.io/kubelet-serving apart from the API server's CA. Who talks to
 * agents trusts it (the server, Prometheus); clients of the API do not. */
#define TLS_KUBELET_CA_CERT "kubelet-ca.crt"
#define TLS_KUBELET_CA_KEY  "kubelet-ca.key"
#define TLS_CA_NAME         "xpool CA"
#define TLS_KUBELET_CA_NAME "xpool kubelet-serving CA"

/* What the server negotiates (xpool/tls_priority.h). */
#define TLS_PRIORITY XP_TLS_PRIORITY

#define TLS_PEM_MAX     (64 * 1024) /* larger PEM files are refused */
#define TLS_HOSTS_MAX   64
#define TLS_RENEW_DAYS  30 /* a serving certificate closer to its end is replaced */
#define TLS_CA_DAYS     3650
#define TLS_SERVER_DAYS 365

/*
 * Makes DIR (mode 0700, one level) when missing, and
 * - the CA, when neither ca.crt nor ca.key exists (one without the other is an error: clients
 *   trust the old CA, so it is never replaced silently; an existing pair must parse and match);
 * - server.crt and server.key, when either is missing, does not parse, does not match, is not
 *   signed by the CA, expires within TLS_RENEW_DAYS days, or lacks one of the hosts.
 * hosts (n_hosts at most TLS_HOSTS_MAX) are the names and addresses clients use: IPv4 and IPv6
 * literals become IP SANs (a bracketed "[::1]" too), anything else a DNS SAN (letters, digits,
 * '-', '.', a leading "*."); 127.0.0.1, ::1 and localhost are always included. 0, or -errno with
 * err naming the file (-EINVAL for a bad host or a damaged CA).
 */
int tls_ensure(const char *dir, const char *const *hosts, size_t n_hosts, struct xp_error *err);

/*
 * The CA part of tls_ensure() alone, for a server serving a certificate from files, whose own
 * CA still signs the agents' serving certificates (servingcert.h).
 */
int tls_ensure_ca(const char *dir, struct xp_error *err);

/*
 * The kubelet-serving CA (kubelet-ca.crt, kubelet-ca.key in DIR, made as the CA is: when neither
 * exists, one without the other an error), at every server start: a data directory made before
 * it gets one at its next start, and the agents' certificates signed by the cluster CA are asked
 * for again (docs/security.md, "TLS"). 0 or -errno with err naming the file.
 */
int tls_ensure_kubelet_ca(const char *dir, struct xp_error *err);

/*
 * Reads a PEM file of at most TLS_PEM_MAX bytes into *ret (NUL-terminated, caller frees), as
 * MHD_OPTION_HTTPS_MEM_CERT/KEY and kubeconfig_write() take it. -EINVAL when it holds no PEM
 * block, -E2BIG when too large, -errno else; err names the file.
 */
int tls_load_pem(const char *path, char **ret, struct xp_error *err);

/*
 * Checks that cert_path holds a certificate and key_path a private key that parse and belong
 * together: 0, or -EINVAL (-errno when unreadable) with err naming the file at fault.
 */
int tls_check_pair(const char *cert_path, const char *key_path, struct xp_error *err);
