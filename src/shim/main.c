/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `xpool-shim __shim STATE_DIR`: the container shim alone. The agent starts one per container;
 * this executable loads only libc and jansson, where `xpool __shim` (the same code) also loads
 * every library of the server and the CLI, ten times the start cost of each container.
 */
#include <stdio.h>
#include <string.h>

#include "xpool/runtime.h"

int main(int argc, char **argv)
{
        /* the same arguments as `xpool __shim` and `xpool __exec`, so the agent starts either */
        if (argc >= 2 && strcmp(argv[1], "__exec") == 0)
                return xp_exec_main(argc - 1, argv + 1);
        if (argc != 3 || strcmp(argv[1], "__shim") != 0) {
                fprintf(stderr, "usage: xpool-shim __shim STATE_DIR (started by the node agent)\n");
                return 2;
        }
        return xp_shim_main(argc - 1, argv + 1);
}
