/* SPDX-License-Identifier: Apache-2.0 */
#include <jansson.h>
#include <stdio.h>
#include <yaml.h>

#include "cli.h"

int xp_cmd_version(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        printf("xpool %s (jansson %s, libyaml %s)\n",
               XPOOL_VERSION,
               JANSSON_VERSION,
               yaml_get_version_string());
        return 0;
}
