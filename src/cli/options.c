/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"

int xp_cli_getopt(int argc,
                  char **argv,
                  const char *shortopts,
                  const struct option *options,
                  const char *usage,
                  xp_cli_option_fn *fn,
                  void *userdata)
{
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, shortopts, options, NULL)) != -1) {
                int r;

                if (c == 'h') {
                        fputs(usage, stdout);
                        return -1;
                }
                /* getopt_long already said what is wrong with the option */
                if (c == '?' || !fn) {
                        fputs(usage, stderr);
                        return XP_EXIT_USAGE;
                }
                r = fn(c, optarg, userdata);
                if (r != 0)
                        return r;
        }
        return 0;
}
