/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /apis/certificates.k8s.io/v1/certificatesigningrequests for signerName
 * kubernetes.io/kubelet-serving: an agent's request for its HTTPS serving certificate, approved
 * and signed at once when the rules of servingcert.h hold (the requester is the node the request
 * names, and asks only for its own name and addresses), and answered with status.certificate and
 * an Approved condition, as a CertificateSigningRequest reads once approved and signed. It is
 * answered, never stored: the agent asks again when it starts or renews (docs/agent.md, "HTTPS").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "auth.h"
#include "internal.h"
#include "servingcert.h"
#include "xpool/base64.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/token.h"

#define CSR_GROUP "certificates.k8s.io"
#define CSR_KIND  "CertificateSigningRequest"

static int refuse(struct reply *ret, unsigned code, const char *reason, const char *message)
{
        return reply_status_group(ret,
                                  code,
                                  reason,
                                  "",
                                  CSR_GROUP,
                                  "certificatesigningrequests",
                                  "certificatesigningrequests.certificates.k8s.io is %s: %s",
                                  code == 403 ? "forbidden" : "invalid",
                                  message);
}

/*
 * The address the request came from: the only address a node cannot choose. Its Node's
 * status.addresses are not trusted, the node writes them itself (it could list another node's
 * address, or the server's). The agent asks from the address it is reached at (serving.c).
 */
static size_t
node_addresses(const struct request *req, char buf[][INET6_ADDRSTRLEN], const char **ret)
{
        struct sockaddr_storage peer;
        socklen_t len = sizeof(peer);
        int fd = request_socket(req);
        const void *a;

        if (fd < 0 || getpeername(fd, (struct sockaddr *)&peer, &len) < 0)
                return 0;
        a = peer.ss_family == AF_INET ? (const void *)&((struct sockaddr_in *)&peer)->sin_addr
                                      : (const void *)&((struct sockaddr_in6 *)&peer)->sin6_addr;
        if (!inet_ntop(peer.ss_family, a, buf[0], INET6_ADDRSTRLEN))
                return 0;
        ret[0] = buf[0];
        return 1;
}

/* spec.request (base64 of the PEM request) when spec.signerName is kubelet-serving. */
static int request_pem(json_t *csr, char **ret_pem, size_t *ret_len, struct reply *ret)
{
        json_t *spec = json_object_get(csr, "spec");
        const char *signer = json_string_value(json_object_get(spec, "signerName"));
        const char *request = json_string_value(json_object_get(spec, "request"));

        if (!json_is_object(csr) ||
            !xp_streq0(json_string_value(json_object_get(csr, "kind")), CSR_KIND))
                return refuse(
                    ret, 400, "BadRequest", "the body is not a CertificateSigningRequest");
        if (!xp_streq0(signer, SERVINGCERT_SIGNER))
                return refuse(ret,
                              422,
                              "Invalid",
                              "spec.signerName: this server signs only " SERVINGCERT_SIGNER);
        if (!request || xp_base64_decode(request, strlen(request), ret_pem, ret_len) < 0)
                return refuse(ret, 422, "Invalid", "spec.request: not base64 of a PEM request");
        return 1;
}

static int answer(json_t *csr, const char *cert_pem, struct reply *ret)
{
        _cleanup_free_ char *b64 = NULL;
        json_t *status;

        if (xp_base64_encode(cert_pem, strlen(cert_pem), &b64) < 0)
                return -ENOMEM;
        status = json_pack("{s:s, s:[{s:s, s:s, s:s, s:s}]}",
                           "certificate",
                           b64,
                           "conditions",
                           "type",
                           "Approved",
                           "status",
                           "True",
                           "reason",
                           "AutoApproved",
                           "message",
                           "the node asked for its own name and addresses");
        if (!status || json_object_set_new(csr, "status", status) < 0)
                return -ENOMEM;
        return reply_json(ret, 201, json_incref(csr));
}

int handle_certificate_signing_request(const struct request *req,
                                       const struct route *route,
                                       struct reply *ret)
{
        char buf[1][INET6_ADDRSTRLEN], message[512];
        const char *addresses[1];
        _cleanup_free_ char *pem = NULL, *cert = NULL;
        struct xp_error err = {0};
        json_t *csr;
        size_t len = 0, n;
        int r;

        (void)route;
        if (!req->api->serving_signer)
                return refuse(ret, 403, "Forbidden", "the server runs --no-tls: it signs nothing");
        if (!req->who || req->who->service_account || req->who->role != XP_TOKEN_NODE)
                return refuse(ret,
                              403,
                              "Forbidden",
                              "only a node asks for a " SERVINGCERT_SIGNER
                              " certificate, for itself");
        csr = json_loadb(req->body, req->body_len, 0, NULL);
        r = request_pem(csr, &pem, &len, ret);
        if (r > 0) {
                n = node_addresses(req, buf, addresses);
                r = servingcert_sign(req->api->serving_signer,
                                     req->who->subject,
                                     addresses,
                                     n,
                                     pem,
                                     len,
                                     time(NULL),
                                     &cert,
                                     &err);
                if (r == -EPERM || r == -EINVAL) {
                        snprintf(message, sizeof(message), "%s", xp_error_message(&err));
                        r = refuse(ret,
                                   r == -EPERM ? 403 : 422,
                                   r == -EPERM ? "Forbidden" : "Invalid",
                                   message);
                } else if (r >= 0) {
                        r = answer(csr, cert, ret);
                }
        }
        json_decref(csr);
        return r;
}
