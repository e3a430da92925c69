/* SPDX-License-Identifier: Apache-2.0 */
/* The one pod operand of `xpool logs` and `xpool why` (cli.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char *xp_cli_pod_arg(int argc, char **argv, const char *cmd, const char *usage)
{
        const char *pod;

        if (optind + 1 != argc) {
                if (optind >= argc)
                        fprintf(stderr, "xpool %s: name the pod: xpool %s POD\n", cmd, cmd);
                else
                        fprintf(stderr, "xpool %s: one pod at a time\n", cmd);
                fputs(usage, stderr);
                return NULL;
        }
        pod = argv[optind];
        /* kubectl takes pod/NAME too */
        if (strncmp(pod, "pod/", 4) == 0 || strncmp(pod, "pods/", 5) == 0 ||
            strncmp(pod, "po/", 3) == 0)
                pod = strchr(pod, '/') + 1;
        return pod;
}
