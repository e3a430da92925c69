/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's HTTPS serving certificate, as the kubelet's (serverTLSBootstrap): a private key made
 * here and never sent anywhere (DIR/agent-serving.key, ECDSA P-256, mode 0600), and a certificate
 * the server's kubelet-serving CA signs for the node's name and addresses (DIR/agent-serving.crt),
 * asked for with a certificates.k8s.io/v1 CertificateSigningRequest for signerName
 * kubernetes.io/kubelet-serving under the node's own credentials. docs/agent.md, "HTTPS".
 */

#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"

#define XP_AGENT_SERVING_CERT "agent-serving.crt"
#define XP_AGENT_SERVING_KEY  "agent-serving.key"
/* The cluster CA (--ca-file) under which the certificate was asked for: another one means
 * another cluster, whose kubelet-serving CA did not sign it. */
#define XP_AGENT_SERVING_CLUSTER_CA "agent-serving.cluster-ca.crt"
#define XP_AGENT_SERVING_RENEW_DAYS 30 /* a certificate closer to its end is asked for again */

struct xp_apiclient;

struct xp_agent_serving_options {
        const char *dir;       /* made (0700) when missing */
        const char *node_name; /* the DNS name asked for */
        const char *address;   /* the IP literal asked for: where the server reaches the agent */
        const char *ca_pem;    /* the cluster CA (PEM, ca_pem_len bytes): a certificate it signed,
                                * or asked for under another, is asked for again; NULL: no check */
        size_t ca_pem_len;
};

/*
 * The key (made when missing) and a certificate for it that names o->node_name and o->address,
 * comes from this cluster's kubelet-serving signer (asked for under o->ca_pem, not signed by
 * it) and has more than XP_AGENT_SERVING_RENEW_DAYS days left: the one on disk, else a new one
 * asked of the server through client. *ret_cert and *ret_key are PEM text (caller frees
 * the two; the key's bytes should be cleared). -errno with err: the server's refusal (-EPERM)
 * says which name is not the node's.
 */
/* Whether xp_agent_serving_ensure() would ask the server now: no usable certificate on disk. */
bool xp_agent_serving_due(const struct xp_agent_serving_options *o);

int xp_agent_serving_ensure(struct xp_apiclient *client,
                            const struct xp_agent_serving_options *o,
                            char **ret_cert,
                            char **ret_key,
                            struct xp_error *err);
