/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "xpool/codec.h"
#include "xpool/macro.h"

static const char usage[] =
    "Usage: xpool convert -f FILE [-f FILE...] [--strict] [-o json|yaml]\n\n"
    "Validates manifests and prints them as the API will store them: canonical quantities,\n"
    "apiVersion and kind first, unknown fields kept. One object prints as itself, several as\n"
    "a v1 List (one YAML document, as kubectl prints them).\n\n"
    "  -f, --filename FILE  a manifest file, '-' for standard input (repeatable)\n"
    "      --strict         reject fields xpool does not know\n"
    "  -o, --output FORMAT  json (the default) or yaml\n";

static int print_json(const json_t *out)
{
        if (json_dumpf(out, stdout, JSON_INDENT(2)) < 0 || putchar('\n') == EOF)
                return -EIO;
        return 0;
}

static int print_yaml(const json_t *out)
{
        return xp_cli_print_yaml(stdout, out);
}

static const struct output_format {
        const char *name;
        int (*print)(const json_t *out);
} output_formats[] = {
    {.name = "json", .print = print_json},
    {.name = "yaml", .print = print_yaml},
};

static const struct output_format *find_format(const char *name)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(output_formats); i++)
                if (strcmp(output_formats[i].name, name) == 0)
                        return &output_formats[i];
        return NULL;
}

static int encode(const struct xp_manifest_object *object, json_t **ret)
{
        return object->type->to_json(object->object, ret);
}

int xp_cmd_convert(int argc, char **argv)
{
        const struct output_format *format = &output_formats[0];
        struct xp_cli_manifest_args args;
        json_t *items = json_array();
        int r = xp_cli_parse_manifest_args(argc, argv, usage, true, &args);

        if (r != 0 || !items) {
                json_decref(items);
                return r < 0 ? 0 : r ? r : XP_EXIT_FAILURE;
        }
        if (args.output) {
                format = find_format(args.output);
                if (!format) {
                        fprintf(
                            stderr,
                            "xpool convert: unsupported output format '%s' (supported: json, yaml)\n",
                            args.output);
                        r = XP_EXIT_USAGE;
                }
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
                int p = out ? format->print(out) : -ENOMEM;

                if (p < 0) {
                        fprintf(stderr,
                                "xpool convert: cannot print %s: %s\n",
                                format->name,
                                strerror(-p));
                        r = XP_EXIT_FAILURE;
                }
                json_decref(out);
        }
        json_decref(items);
        free(args.files);
        return r;
}
