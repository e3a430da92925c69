/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool apply: creates what is missing and patches what differs, as kubectl apply does without
 * server-side apply: the manifest as last applied rides along in an annotation, and a three-way
 * JSON merge patch (last applied, the new manifest, the live object) removes what the user
 * dropped from the manifest, sets what changed, and leaves alone what others set.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "client.h"
#include "xpool/apiresource.h"
#include "xpool/codec.h"
#include "xpool/macro.h"
#include "xpool/patch.h"
#include "xpool/strutil.h"

static const char usage[] =
    "Usage: xpool apply -f FILE|DIR|- [-f ...] [-n NS]\n\n"
    "Creates the objects of the manifests, or brings existing ones to what the manifests say:\n"
    "fields removed from a manifest since the last apply are removed from the object, fields\n"
    "others set (status, the node a pod runs on) stay. Prints pod/NAME created, configured or\n"
    "unchanged for each object.\n\n"
    "  -f, --filename FILE  a manifest file, a directory of them (*.yaml, *.yml, *.json) or '-'\n"
    "                       for standard input (repeatable)\n"
    "      --strict         reject fields xpool does not know\n" XP_CLIENT_USAGE;

static int encode(const struct xp_manifest_object *object, json_t **ret)
{
        return object->type->to_json(object->object, ret);
}

static bool is_manifest_name(const char *name)
{
        const char *dot = strrchr(name, '.');

        return name[0] != '.' && dot &&
               (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 || strcmp(dot, ".json") == 0);
}

static int load_file(const char *file, bool strict, json_t *items)
{
        struct xp_manifest manifest;
        int r = xp_cli_load_manifest(file, strict, &manifest);

        if (r < 0)
                return r;
        for (size_t i = 0; i < manifest.n && r >= 0; i++) {
                json_t *json;

                r = encode(&manifest.objects[i], &json);
                if (r >= 0)
                        r = json_array_append_new(items, json) < 0 ? -ENOMEM : 0;
        }
        xp_manifest_done(&manifest);
        if (r < 0)
                fprintf(stderr, "error: %s: %s\n", file, strerror(-r));
        return r;
}

/* A directory's manifests in name order, as kubectl reads them (not recursively). */
static int load_dir(const char *dir, bool strict, json_t *items)
{
        struct dirent **entries = NULL;
        int n = scandir(dir, &entries, NULL, alphasort), r = 0;

        if (n < 0) {
                fprintf(stderr, "error: cannot read the directory %s: %s\n", dir, strerror(errno));
                return -errno;
        }
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;

                if (r >= 0 && is_manifest_name(entries[i]->d_name)) {
                        if (asprintf(&path, "%s/%s", dir, entries[i]->d_name) < 0)
                                r = -ENOMEM;
                        else
                                r = load_file(path, strict, items);
                }
                free(entries[i]);
        }
        free(entries);
        return r;
}

int xp_cli_load_objects(const char *const *files,
                        size_t n_files,
                        bool strict,
                        const struct xp_client *client,
                        json_t **ret)
{
        json_auto_t *items = json_array();
        size_t i;
        json_t *item;

        if (!items)
                return -ENOMEM;
        for (size_t f = 0; f < n_files; f++) {
                struct stat st;
                int r;

                if (strcmp(files[f], "-") != 0 && stat(files[f], &st) == 0 && S_ISDIR(st.st_mode))
                        r = load_dir(files[f], strict, items);
                else
                        r = load_file(files[f], strict, items);
                if (r < 0)
                        return r;
        }
        /* Namespaced objects land in -n's namespace, else the kubeconfig's, unless they name one.
         */
        json_array_foreach(items, i, item)
        {
                const char *api_version = json_string_value(json_object_get(item, "apiVersion"));
                const char *kind = json_string_value(json_object_get(item, "kind"));
                const struct xp_api_resource *resource = xp_api_resource_by_kind(api_version, kind);
                json_t *metadata = json_object_get(item, "metadata");
                const char *ns = json_string_value(json_object_get(metadata, "namespace"));
                const char *want = xp_client_namespace(client);

                if (!resource || !json_is_object(metadata)) {
                        fprintf(stderr, "error: xpool has no API for %s %s\n", api_version, kind);
                        return -EOPNOTSUPP;
                }
                if (!resource->namespaced)
                        continue;
                if (ns && strcmp(ns, want) != 0 && xp_client_namespace_explicit(client)) {
                        fprintf(
                            stderr,
                            "error: the namespace from the provided object \"%s\" does not match the namespace \"%s\". You must pass '--namespace=%s' to perform this operation.\n",
                            ns,
                            want,
                            ns);
                        return -EINVAL;
                }
                if (!ns && json_object_set_new(metadata, "namespace", json_string(want)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(items);
        return 0;
}

/* The annotation kubectl keeps the last applied manifest in. */
#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

/* modified: the manifest with the annotation holding itself (without the annotation). */
static int with_last_applied(const json_t *object, json_t **ret)
{
        json_auto_t *copy = json_deep_copy(object), *modified = NULL;
        _cleanup_free_ char *text = NULL;
        json_t *annotations;

        if (!copy)
                return -ENOMEM;
        annotations = json_object_get(json_object_get(copy, "metadata"), "annotations");
        json_object_del(annotations, LAST_APPLIED);
        if (json_is_object(annotations) && json_object_size(annotations) == 0)
                json_object_del(json_object_get(copy, "metadata"), "annotations");
        /* Sorted keys: the text kubectl writes, so either tool reads the other's. */
        text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
        modified = json_deep_copy(object);
        if (!text || !modified)
                return -ENOMEM;
        annotations = json_object_get(json_object_get(modified, "metadata"), "annotations");
        if (!json_is_object(annotations)) {
                annotations = json_object();
                if (json_object_set_new(
                        json_object_get(modified, "metadata"), "annotations", annotations) < 0)
                        return -ENOMEM;
        }
        if (json_object_set_new(annotations, LAST_APPLIED, json_string(text)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(modified);
        return 0;
}

/* Whether the object the server answered has the version it had before the patch. */
static bool same_version(const json_t *before, const json_t *after)
{
        const char *a = json_string_value(
            json_object_get(json_object_get(before, "metadata"), "resourceVersion"));
        const char *b = json_string_value(
            json_object_get(json_object_get(after, "metadata"), "resourceVersion"));

        return a && b && strcmp(a, b) == 0;
}

/* How the patch merges. A pod's admission adds to its containers what no manifest says (the
 * token's volumeMounts): a strategic merge of the containers by name keeps it, as kubectl apply's
 * does, where a merge patch would replace them whole and be refused (a pod's mounts may not
 * change). Other kinds keep the merge patch, which also removes list items the user dropped. */
static const char *patch_type(const struct xp_api_resource *resource)
{
        return strcmp(resource->kind, "Pod") == 0 && !resource->group[0]
                   ? "application/strategic-merge-patch+json"
                   : "application/merge-patch+json";
}

static int apply_one(struct xp_client *client, const json_t *object)
{
        const struct xp_api_resource *resource =
            xp_api_resource_by_kind(json_string_value(json_object_get(object, "apiVersion")),
                                    json_string_value(json_object_get(object, "kind")));
        const json_t *metadata = json_object_get(object, "metadata");
        const char *name = json_string_value(json_object_get(metadata, "name"));
        const char *ns = json_string_value(json_object_get(metadata, "namespace"));
        json_auto_t *modified = NULL, *current = NULL, *answer = NULL, *last = NULL, *patch = NULL;
        struct xp_error err = {0};
        char path[2048], type[96];
        const char *last_text;
        int r;

        xp_api_resource_type_name(resource, type, sizeof(type));
        if (!name) {
                fprintf(
                    stderr, "error: a %s without metadata.name cannot be applied: name it\n", type);
                return -EINVAL;
        }
        r = with_last_applied(object, &modified);
        if (r < 0)
                return r;
        if (xp_api_resource_path(resource, ns, name, path, sizeof(path)) < 0)
                return -ENAMETOOLONG;
        r = xp_client_json(client, "GET", path, NULL, NULL, NULL, &current, &err);
        if (r == -ENOENT) {
                xp_api_resource_path(resource, ns, NULL, path, sizeof(path));
                r = xp_client_json(client, "POST", path, NULL, modified, NULL, &answer, &err);
                if (r < 0)
                        goto fail;
                printf("%s/%s created\n", type, name);
                return 0;
        }
        if (r < 0)
                goto fail;
        last_text = json_string_value(json_object_get(
            json_object_get(json_object_get(current, "metadata"), "annotations"), LAST_APPLIED));
        /* An object created otherwise has no last-applied: nothing the user dropped to remove. */
        if (last_text)
                last = json_loads(last_text, 0, NULL);
        r = xp_patch_merge_three_way(last, modified, current, &patch);
        if (r < 0) {
                fprintf(stderr,
                        "error: cannot compute the patch for %s/%s: %s\n",
                        type,
                        name,
                        strerror(-r));
                return r;
        }
        if (json_object_size(patch) == 0) {
                printf("%s/%s unchanged\n", type, name);
                return 0;
        }
        r = xp_client_json(client, "PATCH", path, patch_type(resource), patch, NULL, &answer, &err);
        if (r < 0)
                goto fail;
        /* A merge patch replaces lists whole, so a manifest's containers differ from the stored
         * ones by the server's defaults alone; the server writes nothing then, as the strategic
         * merge kubectl computes would have found. */
        printf(
            "%s/%s %s\n", type, name, same_version(current, answer) ? "unchanged" : "configured");
        return 0;
fail:
        xp_client_report(&err);
        return r;
}

struct apply_args {
        const char **files; /* borrowed from argv; room for all of it */
        size_t n_files;
        bool strict;
};

static int apply_option(int c, const char *arg, void *userdata)
{
        struct apply_args *a = userdata;

        if (c == 'f')
                a->files[a->n_files++] = arg;
        else if (c == 's')
                a->strict = true;
        return 0;
}

int xp_cmd_apply(int argc, char **argv)
{
        static const struct option options[] = {
            {"filename", required_argument, NULL, 'f'},
            {"strict", no_argument, NULL, 's'},
            {"help", no_argument, NULL, 'h'},
            XP_CLIENT_LONG_OPTIONS,
            {NULL, 0, NULL, 0},
        };
        _cleanup_(xp_client_freep) struct xp_client *client = NULL;
        _cleanup_free_ const char **files = calloc((size_t)argc, sizeof(char *));
        struct apply_args a = {.files = files};
        json_auto_t *objects = NULL;
        struct xp_client_options copts = {0};
        struct xp_error err = {0};
        size_t i;
        json_t *object;
        int status;

        if (!files)
                return XP_EXIT_FAILURE;
        status = xp_client_getopt(argc, argv, "f:n:h", options, usage, &copts, apply_option, &a);
        if (status != 0)
                return status < 0 ? 0 : status;
        if (optind < argc || a.n_files == 0) {
                fprintf(
                    stderr,
                    optind < argc
                        ? "xpool apply: unexpected argument '%s' (manifests are given with -f FILE)\n"
                        : "xpool apply: no manifest given: use -f FILE (or -f - for standard input)\n%s",
                    optind < argc ? argv[optind] : "");
                fputs(usage, stderr);
                return XP_EXIT_USAGE;
        }
        if (xp_client_new(&copts, &client, &err) < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        /* Every manifest is read and checked before anything is sent: a typo changes nothing. */
        if (xp_cli_load_objects(a.files, a.n_files, a.strict, client, &objects) < 0)
                return XP_EXIT_FAILURE;
        json_array_foreach(objects, i, object)
        {
                int r = apply_one(client, object);

                if (r == -ECONNREFUSED)
                        return XP_EXIT_FAILURE;
                if (r < 0)
                        status = XP_EXIT_FAILURE;
        }
        return status;
}
