/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logserver_tool LOG_DIR TOKEN [HOST [CERT KEY]]: runs the agent's log endpoint
 * (src/agent/logserver.c) on LOG_DIR for the node token TOKEN on a free port, over HTTPS with the
 * PEM files CERT and KEY when given, prints the port on a line of its own, and serves until
 * SIGTERM or SIGINT. For tests/integration/13-logs.sh.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/tls.h"

#include "agent/logserver.h"
#include "xpool/logsign.h"

int main(int argc, char **argv)
{
        struct xp_logserver_options o = {0};
        struct xp_logserver *s = NULL;
        struct xp_error err = {0};
        char id[XP_LOGSIGN_ID_MAX];
        sigset_t set;
        int sig, r;

        char *cert = NULL, *key = NULL;

        if (argc != 3 && argc != 4 && argc != 6) {
                fprintf(stderr, "usage: %s LOG_DIR TOKEN [HOST [CERT KEY]]\n", argv[0]);
                return 2;
        }
        if (argc == 6 &&
            (tls_load_pem(argv[4], &cert, &err) < 0 || tls_load_pem(argv[5], &key, &err) < 0)) {
                fprintf(stderr, "logserver_tool: %s\n", err.msg);
                return 1;
        }
        o.tls_cert = cert;
        o.tls_key = key;
        r = xp_logsign_key_from_token(argv[2], id, o.key, &err);
        if (r < 0) {
                fprintf(stderr, "logserver_tool: %s\n", err.msg);
                return 1;
        }
        o.log_dir = argv[1];
        o.token_id = id;
        o.host = argc >= 4 ? argv[3] : "127.0.0.1";
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        r = xp_logserver_new(&o, &s, &err);
        if (r < 0) {
                fprintf(stderr, "logserver_tool: %s\n", err.msg);
                return 1;
        }
        printf("%u\n", xp_logserver_port(s));
        fflush(stdout);
        sigwait(&set, &sig);
        xp_logserver_free(s);
        free(cert);
        free(key);
        return 0;
}
