/* SPDX-License-Identifier: Apache-2.0 */
/* The pod network options `xpool agent` and `xpool up` share (docs/networking.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "xpool/agent.h"

int xp_cli_podnet_option(const char *cmd, int c, const char *arg, struct xp_agent_options *o)
{
        switch (c) {
        case XP_CLI_OPT_POD_NETWORK:
                if (strcmp(arg, "cni") != 0 && strcmp(arg, "host") != 0) {
                        fprintf(stderr,
                                "%s: --pod-network is cni (a network of its own for each pod) or "
                                "host (every pod on the node's network), not '%s'\n",
                                cmd,
                                arg);
                        return XP_EXIT_USAGE;
                }
                o->host_network_only = strcmp(arg, "host") == 0;
                break;
        case XP_CLI_OPT_CNI_CONF_DIR:
                o->cni_conf_dir = arg;
                break;
        case XP_CLI_OPT_CNI_BIN_DIR:
                o->cni_bin_dirs = arg;
                break;
        case XP_CLI_OPT_NETNS_DIR:
        case XP_CLI_OPT_IPC_DIR:
                if (arg[0] != '/') {
                        fprintf(stderr,
                                "%s: --%s-dir '%s': an absolute path is expected\n",
                                cmd,
                                c == XP_CLI_OPT_IPC_DIR ? "ipc" : "netns",
                                arg);
                        return XP_EXIT_USAGE;
                }
                *(c == XP_CLI_OPT_IPC_DIR ? &o->ipc_dir : &o->netns_dir) = arg;
                break;
        case XP_CLI_OPT_POD_CIDR:
                o->pod_cidr = arg;
                break;
        case XP_CLI_OPT_API_SERVICE_ADDRESS:
                o->api_service_address = arg; /* checked by the agent */
                break;
        }
        return 0;
}
