/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `xpool-agent agent [OPTIONS]`: the node agent alone, which `xpool agent` runs. Linked with
 * only what the agent uses, it leaves out SQLite, gRPC, the server and the CLI's other commands,
 * whose pages would count in the agent's resident size on every node (docs/agent.md, "The
 * agent's executable"; bench/bench_pods.c measures it).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "xpool/log.h"

int main(int argc, char **argv)
{
        /* the same arguments as `xpool agent`, which runs this executable */
        if (argc < 2 || strcmp(argv[1], "agent") != 0) {
                fprintf(stderr, "usage: xpool-agent agent [OPTIONS] (see xpool agent --help)\n");
                return XP_EXIT_USAGE;
        }
        xp_log_init();
        return xp_cmd_agent(argc - 1, argv + 1);
}
