/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The kubernetes.io/kubelet-serving signer: the agents' HTTPS serving certificates, signed by the
 * kubelet-serving CA (tls.h, DATA/pki/kubelet-ca.crt and kubelet-ca.key, apart from the cluster
 * CA that signs the API server's) for the node that asks, as kube-controller-manager's signer
 * does once an approver (kubelet-csr-approver and the like) has checked the request. The approval
 * rules are those approvers': the request comes from the node itself, its subject is
 * CN=system:node:NODE, O=system:nodes, and every name it asks for is the node's: DNS names only the
 * node's name, IP addresses only the node's addresses. docs/agent.md, "HTTPS".
 */

#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

#define SERVINGCERT_SIGNER "kubernetes.io/kubelet-serving"
#define SERVINGCERT_DAYS   365

struct servingcert_signer;

/* Loads DIR/kubelet-ca.crt and DIR/kubelet-ca.key. -errno with err naming the file. */
int servingcert_signer_new(const char *dir, struct servingcert_signer **ret, struct xp_error *err);
void servingcert_signer_free(struct servingcert_signer *s);

/*
 * Checks the PEM certificate request csr_pem (a PKCS#10 "CERTIFICATE REQUEST") from node NODE
 * against the rules above, addresses being the IP literals that are the node's (the API handler
 * passes only the address the request came from: a node writes its own status.addresses), and
 * signs it: a certificate valid from
 * an hour before now for SERVINGCERT_DAYS days (no longer than the CA), serverAuth, with exactly
 * the names asked. *ret_pem (caller frees). -EPERM when a rule refuses (err says which name or
 * field), -EINVAL when the request does not parse or its signature is wrong, -ENOMEM.
 */
int servingcert_sign(const struct servingcert_signer *s,
                     const char *node,
                     const char *const *addresses,
                     size_t n_addresses,
                     const char *csr_pem,
                     size_t csr_len,
                     int64_t now,
                     char **ret_pem,
                     struct xp_error *err);
