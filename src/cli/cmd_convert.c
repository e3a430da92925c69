/* SPDX-License-Identifier: Apache-2.0 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xpool/codec.h"

static const char usage[] =
    "Usage: xpool convert -f FILE [-f FILE...] [--strict] [-o json]\n\n"
    "Validates manifests and prints them as the API will store them: canonical quantities,\n"
    "apiVersion and kind first, unknown fields kept. One object prints as itself, several as\n"
    "a v1 List.\n\n"
    "  -f, --filename FILE  a manifest file, '-' for standard input (repeatable)\n"
    "      --strict         reject fields xpool does not know\n"
    "  -o, --output FORMAT  json (the default)\n";

static int encode(const struct xp_manifest_object *object, json_t **ret)
{
        if (object->kind == XP_OBJECT_POD)
                return xp_pod_to_json(object->pod, ret);
        return xp_node_to_json(object->node, ret);
}

int xp_cmd_convert(int argc, char **argv)
{
        struct xp_cli_manifest_args args;
        json_t *items = json_array();
        int r = xp_cli_parse_manifest_args(argc, argv, usage, true, &args);

        if (r != 0 || !items) {
                json_decref(items);
                return r < 0 ? 0 : r ? r : XP_EXIT_FAILURE;
        }
        if (args.output && strcmp(args.output, "json") != 0) {
                fprintf(stderr,
                        "xpool convert: unsupported output format '%s' (supported: json)\n",
                        args.output);
                r = XP_EXIT_USAGE;
        }
        for (size_t i = 0; i < args.n_files && r == 0; i++) {
                struct xp_manifest manifest;

                if (xp_cli_load_manifest(args.files[i], args.strict, &manifest) < 0) {
                        r = XP_EXIT_FAILURE;
                        break;
                }
                for (size_t j = 0; j < manifest.n && r == 0; j++) {
                        json_t *json;

                        if (encode(&manifest.objects[j], &json) < 0 ||
                            json_array_append_new(items, json) < 0)
                                r = XP_EXIT_FAILURE;
                }
                xp_manifest_done(&manifest);
        }
        if (r == 0) {
                json_t *out = json_array_size(items) == 1 ? json_incref(json_array_get(items, 0))
                                                          : json_pack("{s:s, s:s, s:O}",
                                                                      "apiVersion",
                                                                      "v1",
                                                                      "kind",
                                                                      "List",
                                                                      "items",
                                                                      items);

                if (!out || json_dumpf(out, stdout, JSON_INDENT(2)) < 0)
                        r = XP_EXIT_FAILURE;
                else
                        putchar('\n');
                json_decref(out);
        }
        json_decref(items);
        free(args.files);
        return r;
}
