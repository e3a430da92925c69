/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "xpool/quantity.h"

static const char usage[] =
    "Usage: xpool validate -f FILE [-f FILE...] [--strict]\n\n"
    "Checks Pod, Node, Namespace, Event and Lease manifests (YAML or JSON, multi-document) with the rules the API\n"
    "server applies, and prints what each object asks for. Errors name the file, line,\n"
    "column and field. Exits 1 when any file is invalid.\n\n"
    "  -f, --filename FILE  a manifest file, '-' for standard input (repeatable)\n"
    "      --strict         reject fields xpool does not know (typos such as 'limts')\n";

static void print_resources(const char *label, const struct xp_resource_list *list)
{
        if (list->n == 0)
                return;
        printf(" %s ", label);
        for (size_t i = 0; i < list->n; i++) {
                char text[XP_QUANTITY_STRING_MAX];

                printf("%s%s=%s",
                       i ? "," : "",
                       list->items[i].name,
                       xp_quantity_format(&list->items[i].quantity, text));
        }
}

static void print_pod(const struct xp_pod *pod)
{
        printf("  Pod %s/%s:",
               pod->metadata.namespace ? pod->metadata.namespace : "default",
               pod->metadata.name ? pod->metadata.name : pod->metadata.generate_name);
        for (size_t i = 0; i < pod->spec.containers.n; i++) {
                const struct xp_container *c = &pod->spec.containers.items[i];

                printf("%s container %s", i ? ";" : "", c->name);
                print_resources("limits", &c->resources.limits);
                print_resources("requests", &c->resources.requests);
        }
        printf("\n");
}

static void print_node(const struct xp_node *node)
{
        size_t devices = node->status.xpool ? node->status.xpool->devices.n : 0;

        printf("  Node %s:", node->metadata.name);
        print_resources("allocatable", &node->status.allocatable);
        printf(" devices=%zu\n", devices);
}

/* Kinds without resources to show: the name, and the namespace where the kind has one. */
static void print_other(const struct xp_manifest_object *object)
{
        const struct xp_object_meta *meta = object->type->meta(object->object);
        const char *name = meta->name ? meta->name : meta->generate_name;

        if (object->type->namespaced)
                printf("  %s %s/%s\n",
                       object->type->kind,
                       meta->namespace ? meta->namespace : "default",
                       name);
        else
                printf("  %s %s\n", object->type->kind, name);
}

int xp_cmd_validate(int argc, char **argv)
{
        struct xp_cli_manifest_args args;
        int failed = 0;
        int r = xp_cli_parse_manifest_args(argc, argv, usage, false, &args);

        if (r != 0)
                return r < 0 ? 0 : r;
        for (size_t i = 0; i < args.n_files; i++) {
                struct xp_manifest manifest;

                if (xp_cli_load_manifest(args.files[i], args.strict, &manifest) < 0) {
                        failed++;
                        continue;
                }
                printf("%s: %zu object%s valid\n",
                       args.files[i],
                       manifest.n,
                       manifest.n == 1 ? "" : "s");
                for (size_t j = 0; j < manifest.n; j++) {
                        if (manifest.objects[j].kind == XP_OBJECT_POD)
                                print_pod(manifest.objects[j].pod);
                        else if (manifest.objects[j].kind == XP_OBJECT_NODE)
                                print_node(manifest.objects[j].node);
                        else
                                print_other(&manifest.objects[j]);
                }
                xp_manifest_done(&manifest);
        }
        free(args.files);
        return failed ? XP_EXIT_FAILURE : 0;
}
