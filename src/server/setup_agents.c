/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's side of the agents' HTTPS (setup.h): the kubelet-serving CA under DATA_DIR/pki
 * (tls.h, kubelet-ca.crt, made beside the cluster CA) signs the agents' serving certificates
 * (servingcert.h) and is what their certificates are checked against (agent_tls.h); the cluster
 * CA, which signs the API server's certificate, has no say over agents. A server serving the
 * operator's certificate (--tls-cert) keeps both CAs too: the agents' certificates are the
 * cluster's own business, as with kubelet-serving.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent_tls.h"
#include "servingcert.h"
#include "setup.h"
#include "tls.h"
#include "xpool/datadir.h"
#include "xpool/macro.h"

int setup_agent_tls(const struct xp_server_options *options,
                    struct servingcert_signer **ret_signer,
                    struct agent_tls **ret_agent_tls,
                    struct xp_error *err)
{
        _cleanup_free_ char *dir = xp_datadir_path(options->data_dir, XP_DATADIR_PKI);
        _cleanup_free_ char *ca_path = NULL, *ca = NULL;
        int r;

        if (!dir || asprintf(&ca_path, "%s/" TLS_KUBELET_CA_CERT, dir) < 0)
                return -ENOMEM;
        /* setup_tls() made it already, unless the operator's files serve the API */
        r = options->tls == XP_SERVER_TLS_FILES ? tls_ensure_ca(dir, err) : 0;
        if (r >= 0)
                r = tls_ensure_kubelet_ca(dir, err);
        if (r >= 0)
                r = tls_load_pem(ca_path, &ca, err);
        if (r >= 0)
                r = servingcert_signer_new(dir, ret_signer, err);
        if (r >= 0)
                r = agent_tls_new(ca, ret_agent_tls, err);
        if (r < 0)
                return xp_error_prefix(err, r, "the agents' certificates");
        return 0;
}
