/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "xpool/apiresource.h"
#include "xpool/macro.h"

static const char usage[] =
    "Usage: xpool delete TYPE NAME... [-n NS]\n"
    "       xpool delete TYPE/NAME... [-n NS]\n"
    "       xpool delete -f FILE|DIR|- [-f ...] [-n NS]\n\n"
    "Deletes objects, named or as the manifests describe them. Prints pod \"NAME\" deleted for\n"
    "each; a missing object is an error, the others are still deleted.\n\n"
    "  -f, --filename FILE  the objects of a manifest (or a directory of them, or '-')\n"
    "      --ignore-not-found  a missing object is not an error\n" XP_CLIENT_USAGE;

struct target {
        const struct xp_api_resource *resource;
        const char *name;
        const char *namespace;
};

static int delete_one(struct xp_client *client, const struct target *t, bool ignore_not_found)
{
        json_auto_t *answer = NULL;
        struct xp_error err = {0};
        char path[2048], type[96];
        int r;

        if (xp_api_resource_path(t->resource, t->namespace, t->name, path, sizeof(path)) < 0) {
                fprintf(stderr, "error: the name %s is too long\n", t->name);
                return -ENAMETOOLONG;
        }
        r = xp_client_json(client, "DELETE", path, NULL, NULL, NULL, &answer, &err);
        if (r == -ENOENT && ignore_not_found)
                return 0;
        if (r < 0) {
                xp_client_report(&err);
                return r;
        }
        printf("%s \"%s\" deleted\n",
               xp_api_resource_type_name(t->resource, type, sizeof(type)),
               t->name);
        fflush(stdout);
        return 0;
}

struct delete_args {
        const char **files; /* borrowed from argv; room for all of it */
        size_t n_files;
        bool ignore_not_found;
};

static int delete_option(int c, const char *arg, void *userdata)
{
        struct delete_args *a = userdata;

        if (c == 'f')
                a->files[a->n_files++] = arg;
        else if (c == 'i')
                a->ignore_not_found = true;
        return 0;
}

/* The objects of the manifests: targets borrowed from *objects (which stays the caller's). 0, or
 * XP_EXIT_FAILURE after saying why. */
static int targets_of_manifests(const struct delete_args *a,
                                const struct xp_client *client,
                                json_t **objects,
                                struct target **ret,
                                size_t *ret_n)
{
        struct target *targets;
        json_t *object;
        size_t i, n = 0;

        if (xp_cli_load_objects(a->files, a->n_files, false, client, objects) < 0)
                return XP_EXIT_FAILURE;
        targets = calloc(json_array_size(*objects) + 1, sizeof(*targets));
        if (!targets)
                return XP_EXIT_FAILURE;
        *ret = targets;
        json_array_foreach(*objects, i, object)
        {
                const json_t *metadata = json_object_get(object, "metadata");
                struct target *t = &targets[n++];

                t->resource = xp_api_resource_by_kind(
                    json_string_value(json_object_get(object, "apiVersion")),
                    json_string_value(json_object_get(object, "kind")));
                t->name = json_string_value(json_object_get(metadata, "name"));
                t->namespace = json_string_value(json_object_get(metadata, "namespace"));
                if (!t->name) {
                        fprintf(
                            stderr,
                            "error: a %s in the manifests has no metadata.name: cannot tell which to delete\n",
                            t->resource->kind);
                        return XP_EXIT_FAILURE;
                }
        }
        *ret_n = n;
        return 0;
}

/* TYPE NAME... or TYPE/NAME... from argv[first]: targets borrowed from argv. 0, or an exit
 * status after saying why. */
static int targets_of_names(int argc,
                            char **argv,
                            int first,
                            const struct xp_client *client,
                            struct target **ret,
                            size_t *ret_n)
{
        bool slashed = strchr(argv[first], '/') != NULL;
        struct xp_error err = {0};
        struct target *targets;
        size_t n = 0;

        targets = calloc((size_t)argc, sizeof(*targets));
        if (!targets)
                return XP_EXIT_FAILURE;
        *ret = targets;
        for (int i = slashed ? first : first + 1; i < argc; i++) {
                char *slash = strchr(argv[i], '/');
                const struct xp_api_resource *resource;
                _cleanup_free_ char *type = NULL;

                if (slashed != (slash != NULL)) {
                        fprintf(stderr,
                                "xpool delete: give TYPE NAME... or TYPE/NAME..., not %s\n",
                                argv[i]);
                        return XP_EXIT_USAGE;
                }
                type = slashed ? strndup(argv[i], (size_t)(slash - argv[i])) : strdup(argv[first]);
                if (!type)
                        return XP_EXIT_FAILURE;
                resource = xp_api_resource_find(type, &err);
                if (!resource) {
                        fprintf(stderr, "error: %s\n", xp_error_message(&err));
                        return XP_EXIT_FAILURE;
                }
                targets[n++] = (struct target){
                    .resource = resource,
                    .name = slashed ? slash + 1 : argv[i],
                    .namespace = resource->namespaced ? xp_client_namespace(client) : NULL,
                };
        }
        *ret_n = n;
        return 0;
}

int xp_cmd_delete(int argc, char **argv)
{
        static const struct option options[] = {
            {"filename", required_argument, NULL, 'f'},
            {"ignore-not-found", no_argument, NULL, 'i'},
            {"help", no_argument, NULL, 'h'},
            XP_CLIENT_LONG_OPTIONS,
            {NULL, 0, NULL, 0},
        };
        _cleanup_(xp_client_freep) struct xp_client *client = NULL;
        _cleanup_free_ const char **files = calloc((size_t)argc, sizeof(char *));
        _cleanup_free_ struct target *targets = NULL;
        struct delete_args a = {.files = files};
        json_auto_t *objects = NULL;
        struct xp_client_options copts = {0};
        struct xp_error err = {0};
        size_t n = 0;
        int status;

        if (!files)
                return XP_EXIT_FAILURE;
        status = xp_client_getopt(argc, argv, "f:n:h", options, usage, &copts, delete_option, &a);
        if (status != 0)
                return status < 0 ? 0 : status;
        if (a.n_files > 0 && optind < argc) {
                fprintf(stderr, "xpool delete: give either -f FILE or TYPE NAME..., not both\n");
                return XP_EXIT_USAGE;
        }
        if (a.n_files == 0 && optind >= argc) {
                fprintf(stderr, "xpool delete: say what to delete: TYPE NAME... or -f FILE\n");
                fputs(usage, stderr);
                return XP_EXIT_USAGE;
        }
        if (a.n_files == 0 && optind + 1 >= argc && !strchr(argv[optind], '/')) {
                fprintf(stderr,
                        "xpool delete: name the %s to delete: xpool delete %s NAME\n",
                        argv[optind],
                        argv[optind]);
                return XP_EXIT_USAGE;
        }
        if (xp_client_new(&copts, &client, &err) < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        status = a.n_files > 0 ? targets_of_manifests(&a, client, &objects, &targets, &n)
                               : targets_of_names(argc, argv, optind, client, &targets, &n);
        if (status != 0)
                return status;
        for (size_t i = 0; i < n; i++) {
                int r = delete_one(client, &targets[i], a.ignore_not_found);

                if (r == -ECONNREFUSED)
                        return XP_EXIT_FAILURE;
                if (r < 0)
                        status = XP_EXIT_FAILURE;
        }
        return status;
}
