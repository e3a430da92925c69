/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

struct manifest_getopt {
        struct xp_cli_manifest_args *args;
        const char *usage_text;
        bool allow_output;
};

static int manifest_option(int c, const char *arg, void *userdata)
{
        struct manifest_getopt *g = userdata;

        switch (c) {
        case 'f':
                g->args->files[g->args->n_files++] = arg;
                break;
        case 's':
                g->args->strict = true;
                break;
        case 'o':
                /* --output is in the table either way: refused where it means nothing */
                if (!g->allow_output) {
                        fputs(g->usage_text, stderr);
                        return XP_EXIT_USAGE;
                }
                g->args->output = arg;
                break;
        }
        return 0;
}

int xp_cli_parse_manifest_args(int argc,
                               char **argv,
                               const char *usage_text,
                               bool allow_output,
                               struct xp_cli_manifest_args *ret)
{
        static const struct option options[] = {
            {"filename", required_argument, NULL, 'f'},
            {"strict", no_argument, NULL, 's'},
            {"output", required_argument, NULL, 'o'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        struct xp_cli_manifest_args args = {0};
        struct manifest_getopt g = {
            .args = &args, .usage_text = usage_text, .allow_output = allow_output};
        int r;

        args.files = calloc((size_t)argc, sizeof(char *));
        if (!args.files)
                return XP_EXIT_FAILURE;
        r = xp_cli_getopt(
            argc, argv, allow_output ? "f:o:h" : "f:h", options, usage_text, manifest_option, &g);
        if (r != 0) {
                free(args.files);
                return r;
        }
        if (optind < argc) {
                fprintf(stderr,
                        "%s: unexpected argument '%s' (manifests are given with -f FILE)\n",
                        argv[0],
                        argv[optind]);
                goto usage;
        }
        if (args.n_files == 0) {
                fprintf(stderr,
                        "%s: no manifest given: use -f FILE (or -f - for standard input)\n",
                        argv[0]);
                goto usage;
        }
        *ret = args;
        return 0;
usage:
        fputs(usage_text, stderr);
        free(args.files);
        return XP_EXIT_USAGE;
}

int xp_cli_load_manifest(const char *file, bool strict, struct xp_manifest *ret)
{
        struct xp_error err = {0};
        int r = xp_manifest_load_file(file, strict ? XP_DECODE_STRICT : 0, ret, &err);

        if (r < 0)
                fprintf(stderr, "error: %s\n", xp_error_message(&err));
        return r;
}
