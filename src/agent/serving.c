/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The endpoint's HTTPS (agent_internal.h): the certificate names the address the server dials,
 * which is the one the endpoint listens on (--listen HOST, as `xpool up` puts it on 127.0.0.1)
 * or else the Node's InternalIP, and the node's name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"
#include "servingcert.h"
#include "xpool/datadir.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"

#define CA_MAX (64 * 1024)

static bool wildcard(const char *host)
{
        return !host || !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ||
               strcmp(host, "[::]") == 0;
}

/* What servingcert.h needs of this agent; *ret_dir and *ret_ca (caller frees) back it. */
static int serving_options(struct xp_agent *a,
                           struct xp_agent_serving_options *o,
                           char **ret_dir,
                           char **ret_ca,
                           struct xp_error *err)
{
        size_t ca_len = 0;

        *o = (struct xp_agent_serving_options){
            .node_name = a->node_name,
            .address = wildcard(a->listen_host) ? a->advertise_address : a->listen_host,
            .ca_pem = a->ca_pem,
            .ca_pem_len = a->ca_pem_len,
        };
        if (!o->address)
                return xp_errorf(err, -EINVAL, "the agent's address is not known yet");
        if (!o->ca_pem && a->ca_file) {
                _cleanup_close_ int fd = open(a->ca_file, O_RDONLY | O_CLOEXEC);

                if (fd >= 0 && xp_read_fd_all(fd, CA_MAX, ret_ca, &ca_len) >= 0) {
                        o->ca_pem = *ret_ca;
                        o->ca_pem_len = ca_len;
                }
        }
        *ret_dir = xp_datadir_path(a->data_dir, XP_DATADIR_PKI);
        o->dir = *ret_dir;
        return o->dir ? 0 : -ENOMEM;
}

int xp_agent_serving_tls(struct xp_agent *a,
                         struct xp_apiclient *client,
                         char **ret_cert,
                         char **ret_key,
                         struct xp_error *err)
{
        _cleanup_free_ char *dir = NULL, *ca = NULL;
        struct xp_agent_serving_options o;
        int r;

        *ret_cert = *ret_key = NULL;
        if (!a->serve_tls)
                return 0;
        r = serving_options(a, &o, &dir, &ca, err);
        return r < 0 ? r : xp_agent_serving_ensure(client, &o, ret_cert, ret_key, err);
}

int xp_agent_serving_renew(struct xp_agent *a, struct xp_apiclient *client, struct xp_error *err)
{
        _cleanup_free_ char *dir = NULL, *ca = NULL, *cert = NULL, *key = NULL;
        struct xp_agent_serving_options o;
        int r;

        if (!a->serve_tls)
                return 0;
        r = serving_options(a, &o, &dir, &ca, err);
        if (r < 0 || (a->logserver && !xp_agent_serving_due(&o)))
                return r;
        /* the new certificate first: the endpoint keeps serving the old one if the server
         * cannot sign now */
        r = xp_agent_serving_ensure(client, &o, &cert, &key, err);
        if (key)
                explicit_bzero(key, strlen(key));
        if (r >= 0)
                r = xp_agent_logserver_restart(a, client, err);
        return r;
}
