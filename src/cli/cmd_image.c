/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool image list|pull|import|inspect|rm|prune: the node's image store, worked on directly
 * (as crictl and ctr do), in the agent's data directory (docs/images.md).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "xpool/datadir.h"
#include "xpool/image.h"
#include "xpool/macro.h"

#include <jansson.h>

static const char usage[] =
    "Usage: xpool image list [-q] [--no-trunc] [OPTIONS]\n"
    "       xpool image pull [--platform OS/ARCH] [--untrusted] [-q] [OPTIONS] IMAGE...\n"
    "       xpool image import [--name REPOSITORY] [--platform OS/ARCH] [--untrusted] [OPTIONS] FILE...\n"
    "       xpool image inspect [OPTIONS] IMAGE\n"
    "       xpool image rm [OPTIONS] IMAGE...\n"
    "       xpool image prune [--all] [OPTIONS]\n\n"
    "The node's image store (DIR/images), the one the agent pulls into. See docs/images.md.\n\n"
    "  list      the images: repository, tag, image ID, size (-q: IDs only)\n"
    "  pull      pull from a registry (docker.io when the name has none); mirrors, plain HTTP,\n"
    "            CAs and credentials as the registries and credentials files say\n"
    "  import    load an OCI layout tarball or a docker-archive tarball (docker save, skopeo)\n"
    "  inspect   the image as JSON: ID, names, config (entrypoint, cmd, env, ...), layers\n"
    "  rm        remove images (by name, NAME@DIGEST or ID); an image in use is refused\n"
    "  prune     remove what no image uses; --all: also every image that is not in use\n\n"
    "  -d, --data-dir DIR        the agent's data directory (default $XDG_STATE_HOME/xpool/agent,\n"
    "                            else /var/lib/xpool/agent as root, else ~/.local/state/xpool/agent)\n"
    "      --registries FILE     registry settings (default " XP_IMAGE_REGISTRIES_DEFAULT ")\n"
    "      --auth-file FILE      credentials, Docker's config.json format (default " XP_IMAGE_AUTH_DEFAULT
    ")\n"
    "      --platform OS/ARCH    what to take from a multi-platform image (default this node's)\n"
    "      --untrusted           drop setuid/setgid bits and file capabilities, refuse device nodes\n"
    "      --name REPOSITORY     import: the repository for images the tarball names by tag only\n"
    "  -q, --quiet               list, pull: print image IDs only\n"
    "      --no-trunc            list: full image IDs\n"
    "  -a, --all                 prune: also the images not in use\n";

struct image_args {
        const char *data_dir, *registries, *auth_file, *platform, *name;
        bool untrusted, quiet, no_trunc, all;
};

enum {
        OPT_REGISTRIES = 0x300,
        OPT_AUTH,
        OPT_PLATFORM,
        OPT_UNTRUSTED,
        OPT_NAME,
        OPT_NO_TRUNC
};

static int image_option(int c, const char *arg, void *userdata)
{
        struct image_args *a = userdata;

        switch (c) {
        case 'd':
                a->data_dir = arg;
                break;
        case OPT_REGISTRIES:
                a->registries = arg;
                break;
        case OPT_AUTH:
                a->auth_file = arg;
                break;
        case OPT_PLATFORM:
                a->platform = arg;
                break;
        case OPT_UNTRUSTED:
                a->untrusted = true;
                break;
        case OPT_NAME:
                a->name = arg;
                break;
        case 'q':
                a->quiet = true;
                break;
        case OPT_NO_TRUNC:
                a->no_trunc = true;
                break;
        case 'a':
                a->all = true;
                break;
        }
        return 0;
}

/* Sizes as docker and crictl print them: decimal units, three significant digits. */
static void human_size(uint64_t bytes, char *buf, size_t size)
{
        static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
        double v = (double)bytes;
        size_t u = 0;

        while (v >= 1000 && u + 1 < XP_ELEMENTSOF(units))
                v /= 1000, u++;
        snprintf(buf, size, u == 0 ? "%.0f%s" : "%.3g%s", v, units[u]);
}

/* NAME:TAG split for the table; repo@digest names are not rows of their own. */
static void print_row(const struct xp_image *img, const char *name, bool no_trunc)
{
        char size[32], repo[512] = "<none>", tag[160] = "<none>";

        if (name) {
                const char *colon = strrchr(name, ':');

                snprintf(repo,
                         sizeof(repo),
                         "%.*s",
                         (int)(colon ? colon - name : (long)strlen(name)),
                         name);
                snprintf(tag, sizeof(tag), "%s", colon ? colon + 1 : "");
        }
        human_size(img->size, size, sizeof(size));
        printf("%-48s %-16s %-*.*s %s\n",
               repo,
               tag,
               no_trunc ? 71 : 13,
               no_trunc ? 71 : 12,
               img->id + 7,
               size);
}

static int cmd_list(struct xp_image_store *s, const struct image_args *a)
{
        struct xp_image **images = NULL;
        struct xp_error err = {0};
        size_t n = 0;

        if (xp_image_list(s, &images, &n, &err) < 0) {
                fprintf(stderr, "xpool image list: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        if (!a->quiet)
                printf("%-48s %-16s %-*s %s\n",
                       "IMAGE",
                       "TAG",
                       a->no_trunc ? 71 : 13,
                       "IMAGE ID",
                       "SIZE");
        for (size_t i = 0; i < n; i++) {
                bool tagged = false;

                if (a->quiet) {
                        /* as the table's column: 12 hex digits, the whole ID with --no-trunc */
                        printf("%.*s\n",
                               a->no_trunc ? (int)strlen(images[i]->id) : 12,
                               a->no_trunc ? images[i]->id : images[i]->id + 7);
                        continue;
                }
                for (char **name = images[i]->names; *name; name++)
                        if (!strchr(*name, '@')) {
                                print_row(images[i], *name, a->no_trunc);
                                tagged = true;
                        }
                if (!tagged)
                        print_row(images[i], NULL, a->no_trunc);
        }
        xp_image_list_free(images, n);
        return 0;
}

static void on_progress(const struct xp_image_progress *p, void *userdata)
{
        const struct image_args *a = userdata;
        char size[32];

        if (a->quiet || strcmp(p->what, "layer") != 0 || p->done == 0)
                return;
        human_size(p->total, size, sizeof(size));
        fprintf(
            stderr, "  layer %.19s  %s%s\n", p->digest, size, p->shared ? " (already here)" : "");
}

static int cmd_pull(struct xp_image_store *s, struct image_args *a, char **refs, int n)
{
        struct xp_image_pull_options o = {.platform = a->platform,
                                          .untrusted = a->untrusted,
                                          .progress = on_progress,
                                          .userdata = a};

        for (int i = 0; i < n; i++) {
                _cleanup_(xp_image_freep) struct xp_image *img = NULL;
                struct xp_error err = {0};
                struct timespec t0, t1;
                char size[32];

                clock_gettime(CLOCK_MONOTONIC, &t0);
                if (!a->quiet)
                        fprintf(stderr, "pulling %s\n", refs[i]);
                if (xp_image_pull(s, refs[i], &o, &img, &err) < 0) {
                        fprintf(stderr, "xpool image pull: %s\n", xp_error_message(&err));
                        return XP_EXIT_FAILURE;
                }
                clock_gettime(CLOCK_MONOTONIC, &t1);
                human_size(img->size, size, sizeof(size));
                if (a->quiet)
                        printf("%s\n", img->id);
                else
                        printf("%s: %s, %zu layers, %s, in %.2fs\n",
                               img->names[0] ? img->names[0] : refs[i],
                               img->id,
                               img->n_layers,
                               size,
                               (double)(t1.tv_sec - t0.tv_sec) +
                                   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        }
        return 0;
}

static int cmd_import(struct xp_image_store *s, const struct image_args *a, char **files, int n)
{
        struct xp_image_import_options o = {
            .platform = a->platform, .untrusted = a->untrusted, .name = a->name};

        for (int i = 0; i < n; i++) {
                struct xp_image **images = NULL;
                struct xp_error err = {0};
                size_t count = 0;

                if (xp_image_import(s, files[i], &o, &images, &count, &err) < 0) {
                        fprintf(stderr, "xpool image import: %s\n", xp_error_message(&err));
                        return XP_EXIT_FAILURE;
                }
                for (size_t k = 0; k < count; k++)
                        printf("%s: %s\n",
                               images[k]->names[0] ? images[k]->names[0] : "<none>",
                               images[k]->id);
                xp_image_list_free(images, count);
        }
        return 0;
}

static json_t *strv_json(char *const *v)
{
        json_t *arr = v ? json_array() : json_null();

        for (char *const *p = v; arr && p && *p; p++)
                json_array_append_new(arr, json_string(*p));
        return arr;
}

static json_t *image_json(const struct xp_image *img)
{
        const struct xp_image_config *c = &img->config;
        json_t *layers = json_array(), *diff_ids = json_array();

        for (size_t i = 0; layers && diff_ids && i < img->n_layers; i++) {
                json_array_append_new(layers, json_string(img->layers[i]));
                json_array_append_new(diff_ids, json_string(img->diff_ids[i]));
        }
        return json_pack(
            "{s:s, s:s, s:o, s:I, s:I, s:b, s:{s:o, s:o, s:o, s:s?, s:s?, s:o, s:o, s:o, s:s?, s:s?, s:s?, s:s?}, s:o, s:o}",
            "id",
            img->id,
            "digest",
            img->digest,
            "names",
            strv_json(img->names),
            "size",
            (json_int_t)img->size,
            "pulled",
            (json_int_t)img->pulled_s,
            "untrusted",
            img->untrusted,
            "config",
            "entrypoint",
            strv_json(c->entrypoint),
            "cmd",
            strv_json(c->cmd),
            "env",
            strv_json(c->env),
            "workingDir",
            c->working_dir,
            "user",
            c->user,
            "exposedPorts",
            strv_json(c->exposed_ports),
            "volumes",
            strv_json(c->volumes),
            "labels",
            strv_json(c->labels),
            "stopSignal",
            c->stop_signal,
            "os",
            c->os,
            "architecture",
            c->architecture,
            "variant",
            c->variant,
            "layers",
            layers,
            "diffIDs",
            diff_ids);
}

static int cmd_inspect(struct xp_image_store *s, char **refs, int n)
{
        for (int i = 0; i < n; i++) {
                _cleanup_(xp_image_freep) struct xp_image *img = NULL;
                struct xp_error err = {0};
                json_t *j;
                char *text;

                if (xp_image_get(s, refs[i], &img, &err) < 0) {
                        fprintf(stderr, "xpool image inspect: %s\n", xp_error_message(&err));
                        return XP_EXIT_FAILURE;
                }
                j = image_json(img);
                text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
                json_decref(j);
                if (!text)
                        return XP_EXIT_FAILURE;
                printf("%s\n", text);
                free(text);
        }
        return 0;
}

static int cmd_rm(struct xp_image_store *s, char **refs, int n)
{
        int status = 0;

        for (int i = 0; i < n; i++) {
                struct xp_error err = {0};

                if (xp_image_remove(s, refs[i], &err) < 0) {
                        fprintf(stderr, "xpool image rm: %s\n", xp_error_message(&err));
                        status = XP_EXIT_FAILURE;
                        continue;
                }
                printf("Deleted: %s\n", refs[i]);
        }
        return status;
}

static int cmd_prune(struct xp_image_store *s, const struct image_args *a)
{
        struct xp_image_prune_result res = {0};
        struct xp_error err = {0};
        char size[32];

        if (xp_image_prune(s, a->all, &res, &err) < 0) {
                fprintf(stderr, "xpool image prune: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        human_size(res.bytes, size, sizeof(size));
        printf("removed %zu images, %zu layers, %zu blobs: %s\n",
               res.images,
               res.layers,
               res.blobs,
               size);
        return 0;
}

static const struct option image_options[] = {
    {"data-dir", required_argument, NULL, 'd'},
    {"registries", required_argument, NULL, OPT_REGISTRIES},
    {"auth-file", required_argument, NULL, OPT_AUTH},
    {"platform", required_argument, NULL, OPT_PLATFORM},
    {"untrusted", no_argument, NULL, OPT_UNTRUSTED},
    {"name", required_argument, NULL, OPT_NAME},
    {"quiet", no_argument, NULL, 'q'},
    {"no-trunc", no_argument, NULL, OPT_NO_TRUNC},
    {"all", no_argument, NULL, 'a'},
    {"help", no_argument, NULL, 'h'},
    {},
};

/* Which verbs need operands. */
static const struct {
        const char *verb;
        int min, max; /* operands */
} verbs[] = {
    {"list", 0, 0},
    {"ls", 0, 0},
    {"pull", 1, 64},
    {"import", 1, 64},
    {"inspect", 1, 64},
    {"rm", 1, 256},
    {"prune", 0, 0},
};

static int run(struct xp_image_store *s, struct image_args *a, const char *verb, char **ops, int n)
{
        if (strcmp(verb, "list") == 0 || strcmp(verb, "ls") == 0)
                return cmd_list(s, a);
        if (strcmp(verb, "pull") == 0)
                return cmd_pull(s, a, ops, n);
        if (strcmp(verb, "import") == 0)
                return cmd_import(s, a, ops, n);
        if (strcmp(verb, "inspect") == 0)
                return cmd_inspect(s, ops, n);
        if (strcmp(verb, "rm") == 0)
                return cmd_rm(s, ops, n);
        return cmd_prune(s, a);
}

int xp_cmd_image(int argc, char **argv)
{
        _cleanup_(xp_image_store_freep) struct xp_image_store *s = NULL;
        _cleanup_free_ char *agent_dir = NULL, *dir = NULL;
        struct image_args a = {0};
        struct xp_error err = {0};
        const char *verb;
        bool fresh;
        int r, n;
        size_t v;

        r = xp_cli_getopt(argc, argv, "d:qah", image_options, usage, image_option, &a);
        if (r != 0)
                return r < 0 ? 0 : r;
        verb = optind < argc ? argv[optind] : "";
        n = argc - optind - 1;
        for (v = 0; v < XP_ELEMENTSOF(verbs) && strcmp(verbs[v].verb, verb) != 0; v++)
                ;
        if (v == XP_ELEMENTSOF(verbs) || n < verbs[v].min || n > verbs[v].max) {
                fprintf(stderr,
                        "xpool image: %s\n\n%s",
                        v == XP_ELEMENTSOF(verbs) ? "say list, pull, import, inspect, rm or prune"
                                                  : "wrong number of operands",
                        usage);
                return XP_EXIT_USAGE;
        }
        if (a.data_dir)
                agent_dir = strdup(a.data_dir);
        else if (xp_datadir_agent_default(&agent_dir, &err) < 0) {
                fprintf(stderr, "xpool image: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        dir = agent_dir ? xp_datadir_path(agent_dir, XP_DATADIR_IMAGES) : NULL;
        if (!dir)
                return XP_EXIT_FAILURE;
        /* an image put in a store no agent reads is lost to the user: say where it went */
        fresh = !a.data_dir && access(dir, F_OK) < 0 &&
                (strcmp(verb, "import") == 0 || strcmp(verb, "pull") == 0);
        r = xp_image_store_open(dir,
                                &(struct xp_image_store_config){.registries_file = a.registries,
                                                                .auth_file = a.auth_file,
                                                                .platform = a.platform},
                                &s,
                                &err);
        if (r < 0) {
                fprintf(stderr, "xpool image: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        r = run(s, &a, verb, argv + optind + 1, n);
        if (fresh)
                fprintf(
                    stderr,
                    "xpool image: made a new image store in %s (no --data-dir given: an agent started with another --data-dir does not see it)\n",
                    dir);
        return r;
}
