/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The server's HTTPS to agents (logs, exec/attach/port-forward, /metrics/resource), as
 * kube-apiserver reaches kubelets: the agent's serving certificate must chain to the
 * kubelet-serving CA (kubelet-ca.crt, tls.h; the signer is servingcert.h) and name both the
 * address dialled (an IP SAN) and the node (a DNS SAN), so one node's certificate does not pass
 * for another's. Nothing skips the check. docs/agent.md, "HTTPS".
 *
 * The callers speak HTTP over a plain socket (logproxy.c, api_stream.c, usage_fetch.c): the TLS
 * connection is handed to them as one end of a socket pair, a thread of its own carrying the
 * bytes both ways until either side closes (as libmicrohttpd does for upgraded TLS connections).
 * The caller's end closing (or closing for writing) ends the connection (a close_notify, then the
 * TCP connection closed), as closing a plain socket did; the agent's end is passed on as end of
 * file, the caller still able to send meanwhile.
 */

#include "xpool/error.h"

struct agent_tls;

/* The CA as PEM text (kubelet-ca.crt). -EINVAL with err when it does not parse, -ENOMEM. */
int agent_tls_new(const char *ca_pem, struct agent_tls **ret, struct xp_error *err);
void agent_tls_free(struct agent_tls *t);

/*
 * Runs the TLS handshake over fd (connected to node's agent at host, an IP literal; taken in
 * every case) within timeout_ms and checks the agent's certificate: the plain side, a
 * non-blocking socket the caller closes, or -errno with err (-EPERM: the certificate is not
 * node's, not for host, or not signed by the CA; -ETIMEDOUT; -ECONNRESET and the like).
 */
int agent_tls_wrap(const struct agent_tls *t,
                   const char *node,
                   const char *host,
                   int fd,
                   int timeout_ms,
                   struct xp_error *err);
