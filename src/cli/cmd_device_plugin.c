/* SPDX-License-Identifier: Apache-2.0 */
/* xpool device-plugin: the kubelet's device plugin for every device kind (docs/kubernetes.md). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "xpool/duration.h"
#include "xpool/kubeplugin.h"
#include "xpool/log.h"
#include "xpool/macro.h"

#define LIST_MAX   64
#define MOUNTS_MAX 32

static const char usage[] =
    "Usage: xpool device-plugin [OPTIONS]\n\n"
    "Serves this node's devices to the kubelet (Kubernetes device plugin API v1beta1): one\n"
    "endpoint per resource name found (nvidia.com/gpu, huawei.com/Ascend910, amd.com/gpu, ...),\n"
    "each registered with the kubelet, with health, NUMA nodes, topology-aware preferred\n"
    "allocations and CDI device names; CDI spec files for the devices. Re-registers by itself\n"
    "when the kubelet restarts. Stops on SIGINT or SIGTERM. See docs/kubernetes.md.\n\n"
    "  -d, --plugin-dir DIR         the kubelet's device plugin directory, where kubelet.sock is\n"
    "                               (default /var/lib/kubelet/device-plugins)\n"
    "      --cdi-dir DIR            where the CDI spec files go (default /var/run/cdi)\n"
    "      --no-cdi                 write no CDI spec and name no CDI device in Allocate\n"
    "      --resources LIST         serve only these resource names, comma-separated\n"
    "      --skip-resources LIST    never serve these (another plugin's, e.g. nvidia.com/gpu)\n"
    "      --mount RESOURCE=HOST:CONTAINER[:ro]\n"
    "                               give every container of RESOURCE this host path (repeatable)\n"
    "      --health-interval DURATION\n"
    "                               how often an Unhealthy GPU is asked whether the driver has\n"
    "                               recovered it (default 5s)\n"
    "  -r, --root DIR               read sys/, proc/ and dev/ below DIR instead of /\n"
    "  -n, --node-description FILE  simulated devices from a node description (xpool devices)\n"
    "  -b, --backends LIST          discovery backends to run: cpu,nvml,pci,sim\n"
    "      --nvml-library PATH      the NVML library (default $XPOOL_NVML_LIBRARY, else\n"
    "                               libnvidia-ml.so.1)\n\n"
    "Exits 1 when the node has no device to serve or a socket cannot be served, 2 on bad usage.\n";

enum {
        OPT_CDI_DIR = 0x100,
        OPT_NO_CDI,
        OPT_RESOURCES,
        OPT_SKIP,
        OPT_MOUNT,
        OPT_HEALTH,
        OPT_NVML,
};

static const struct option options[] = {
    {"help", no_argument, NULL, 'h'},
    {"plugin-dir", required_argument, NULL, 'd'},
    {"cdi-dir", required_argument, NULL, OPT_CDI_DIR},
    {"no-cdi", no_argument, NULL, OPT_NO_CDI},
    {"resources", required_argument, NULL, OPT_RESOURCES},
    {"skip-resources", required_argument, NULL, OPT_SKIP},
    {"mount", required_argument, NULL, OPT_MOUNT},
    {"health-interval", required_argument, NULL, OPT_HEALTH},
    {"root", required_argument, NULL, 'r'},
    {"node-description", required_argument, NULL, 'n'},
    {"backends", required_argument, NULL, 'b'},
    {"nvml-library", required_argument, NULL, OPT_NVML},
    {NULL, 0, NULL, 0},
};

struct plugin_args {
        struct xp_kube_plugin_options o;
        struct xp_discovery_config discovery;
        const char *resources[LIST_MAX + 1], *skip[LIST_MAX + 1], *backends[LIST_MAX + 1];
        struct xp_kube_mount mounts[MOUNTS_MAX];
        char *texts[LIST_MAX]; /* owned copies the lists point into */
        size_t n_texts;
};

/* Splits a comma-separated list into list (NULL-terminated). */
static int split(struct plugin_args *a, const char *option, const char *arg, const char **list)
{
        char *text, *save = NULL, *tok;
        size_t n = 0;

        if (a->n_texts == LIST_MAX || !(text = strdup(arg)))
                return XP_EXIT_FAILURE;
        a->texts[a->n_texts++] = text;
        for (tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (n == LIST_MAX) {
                        fprintf(stderr,
                                "xpool device-plugin: --%s: more than %d names\n",
                                option,
                                LIST_MAX);
                        return XP_EXIT_USAGE;
                }
                list[n++] = tok;
        }
        list[n] = NULL;
        return 0;
}

/* RESOURCE=HOST:CONTAINER[:ro] */
static int parse_mount(struct plugin_args *a, const char *arg)
{
        char *text, *eq, *colon, *ro;
        struct xp_kube_mount *m;

        if (a->o.n_mounts == MOUNTS_MAX || a->n_texts == LIST_MAX || !(text = strdup(arg)))
                return XP_EXIT_FAILURE;
        a->texts[a->n_texts++] = text;
        eq = strchr(text, '=');
        colon = eq ? strchr(eq + 1, ':') : NULL;
        if (!eq || eq == text || !colon || eq[1] != '/' || colon[1] != '/') {
                fprintf(
                    stderr,
                    "xpool device-plugin: --mount '%s': expected RESOURCE=/HOST:/CONTAINER[:ro]\n",
                    arg);
                return XP_EXIT_USAGE;
        }
        *eq = *colon = '\0';
        ro = strchr(colon + 1, ':');
        if (ro && strcmp(ro, ":ro") != 0) {
                fprintf(
                    stderr,
                    "xpool device-plugin: --mount '%s': only ':ro' may follow the container path\n",
                    arg);
                return XP_EXIT_USAGE;
        }
        if (ro)
                *ro = '\0';
        m = &a->mounts[a->o.n_mounts++];
        *m = (struct xp_kube_mount){.resource = text,
                                    .host_path = eq + 1,
                                    .container_path = colon + 1,
                                    .read_only = ro != NULL};
        return 0;
}

static int plugin_option(int c, const char *arg, void *userdata)
{
        struct plugin_args *a = userdata;

        switch (c) {
        case 'd':
                a->o.plugin_dir = arg;
                return 0;
        case OPT_CDI_DIR:
                a->o.cdi_dir = arg;
                return 0;
        case OPT_NO_CDI:
                a->o.cdi_dir = "";
                return 0;
        case OPT_RESOURCES:
                a->o.resources = a->resources;
                return split(a, "resources", arg, a->resources);
        case OPT_SKIP:
                a->o.skip_resources = a->skip;
                return split(a, "skip-resources", arg, a->skip);
        case OPT_MOUNT:
                return parse_mount(a, arg);
        case OPT_HEALTH:
                return xp_cli_parse_duration("device-plugin",
                                             "health-interval",
                                             arg,
                                             XP_DURATION_DAY_MS,
                                             &a->o.health_interval_ms);
        case 'r':
                a->discovery.root = arg;
                return 0;
        case 'n':
                a->discovery.node_description = arg;
                return 0;
        case 'b':
                a->discovery.backends = a->backends;
                return split(a, "backends", arg, a->backends);
        case OPT_NVML:
                a->discovery.nvml_library = arg;
                return 0;
        default:
                return XP_EXIT_USAGE;
        }
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
        stop = sig;
}

static int serve(struct plugin_args *a)
{
        _cleanup_(xp_kube_plugin_freep) struct xp_kube_plugin *plugin = NULL;
        struct sigaction sa = {.sa_handler = on_signal};
        struct xp_error err = {0};
        const char *const *names;
        size_t n;
        int r;

        r = xp_kube_plugin_new(&a->o, &plugin, &err);
        if (r < 0) {
                fprintf(stderr, "xpool device-plugin: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        n = xp_kube_plugin_resources(plugin, &names);
        for (size_t i = 0; i < n; i++)
                xp_log(LOG_INFO, "xpool device-plugin: serving %s", names[i]);
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        xp_kube_plugin_run(plugin, &stop);
        xp_log(LOG_INFO, "xpool device-plugin: %s, stopping", strsignal(stop));
        return 0;
}

int xp_device_plugin_main(int argc, char **argv)
{
        struct plugin_args a = {0};
        int r;

        a.o.discovery = &a.discovery;
        a.o.mounts = a.mounts;
        r = xp_cli_getopt(argc, argv, "hd:r:n:b:", options, usage, plugin_option, &a);
        if (r == 0 && optind < argc) {
                fprintf(stderr, "xpool device-plugin: unexpected argument '%s'\n", argv[optind]);
                r = XP_EXIT_USAGE;
        }
        if (r == 0)
                r = serve(&a);
        for (size_t i = 0; i < a.n_texts; i++)
                free(a.texts[i]);
        return r < 0 ? 0 : r;
}

/* The lean xpool-device-plugin beside our own executable (src/plugin/main.c), else this one. */
int xp_cmd_device_plugin(int argc, char **argv)
{
        char **args;

        if (getenv("XPOOL_DEVICE_PLUGIN_IN_PROCESS"))
                return xp_device_plugin_main(argc, argv);
        /* the lean executable, with our arguments behind its path */
        args = calloc((size_t)argc + 2, sizeof(char *));
        if (!args)
                return XP_EXIT_FAILURE;
        for (int i = 0; i < argc; i++)
                args[i + 1] = argv[i];
        xp_cli_exec_beside("xpool-device-plugin", args);
        free(args);
        fprintf(stderr, "xpool device-plugin: serving from this process\n");
        return xp_device_plugin_main(argc, argv);
}
