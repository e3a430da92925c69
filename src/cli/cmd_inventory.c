/* SPDX-License-Identifier: Apache-2.0 */
/* xpool inventory: publish this node's device labels and inventory annotation to a Kubernetes
 * cluster, until SIGINT or SIGTERM (docs/kubernetes.md). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kubeapi_flags.h"
#include "xpool/agent.h"
#include "xpool/duration.h"
#include "xpool/kubeinventory.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/podresources.h"

#define LEAVE_MAX 64

static const char usage[] =
    "Usage: xpool inventory [OPTIONS]\n\n"
    "Publishes this node's devices to its Node in a Kubernetes cluster: labels in the style of\n"
    "NVIDIA's GPU feature discovery for every device resource (nvidia.com/gpu.product, ...,\n"
    "amd.com/gpu.count, ...) and xpool.io/<kind>.*, and the device inventory with its topology and\n"
    "allocation in the xpool.io/inventory annotation that `xpool extender` reads. Only its own\n"
    "labels and annotations are patched. Runs until SIGINT or SIGTERM. See docs/kubernetes.md.\n\n"
    "      --node-name NAME       the Node (default $NODE_NAME, else the host name)\n"
    "      --skip-resources LIST  resources another device plugin advertises (nvidia.com/gpu with\n"
    "                             NVIDIA's plugin), comma-separated: no labels for them; give\n"
    "                             `xpool device-plugin` the same list\n"
    "      --no-device-plugin     xpool device-plugin does not run on this node: a resource the\n"
    "                             Node already has is another plugin's, and left to it\n"
    "      --pod-resources SOCKET the kubelet's pod-resources API, for which pod holds which\n"
    "                             device (default " XP_PODRES_SOCKET " when it\n"
    "                             exists; \"\" for none)\n"
    "      --node-description FILE  simulated devices (YAML or JSON, as xpool devices reads)\n"
    "      --interval DURATION    at most one patch per this (default 10s)\n"
    "      --poll DURATION        how often devices are read again (default 5s)\n"
    "      --resync DURATION      patch again even when nothing changed (default 10m)\n" XP_CLI_KUBEAPI_USAGE;

struct inventory_args {
        struct xp_kube_inventory_options *o;
        const char *leave[LEAVE_MAX];
        char *skip; /* the --skip-resources text the list points into */
        const char *pod_resources;
        struct xp_cli_kubeapi api;
};

/* Splits a comma-separated list of resource names into a->leave. */
static int split_skip(struct inventory_args *a, const char *arg)
{
        char *save = NULL, *tok;

        free(a->skip);
        a->skip = strdup(arg);
        if (!a->skip)
                return XP_EXIT_FAILURE;
        a->o->n_leave = 0;
        for (tok = strtok_r(a->skip, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (a->o->n_leave == LEAVE_MAX) {
                        fprintf(stderr,
                                "xpool inventory: --skip-resources: at most %d names\n",
                                LEAVE_MAX);
                        return XP_EXIT_USAGE;
                }
                a->leave[a->o->n_leave++] = tok;
        }
        return 0;
}

static int podres_list(void *userdata, struct xp_kube_allocation *ret, struct xp_error *err)
{
        struct xp_podres_list list = {0};
        int r = xp_podres_list(userdata, &list, err);

        if (r >= 0)
                r = xp_kube_allocation_from_podres(&list, ret);
        xp_podres_list_done(&list);
        return r;
}

static void free_podres(void *client)
{
        xp_podres_client_free(client);
}

/* The allocation source on the pod-resources socket, when there is one. */
static int pod_resources(struct inventory_args *a, void **ret_client)
{
        const char *path = a->pod_resources ? a->pod_resources : XP_PODRES_SOCKET;
        struct xp_podres_client *client = NULL;
        struct xp_error err = {0};

        *ret_client = NULL;
        if (!*path || (!a->pod_resources && access(path, F_OK) < 0))
                return 0;
        if (xp_podres_client_new(path, 0, &client, &err) < 0) {
                fprintf(stderr,
                        "xpool inventory: --pod-resources %s: %s\n",
                        path,
                        xp_error_message(&err));
                return XP_EXIT_USAGE;
        }
        a->o->alloc = (struct xp_kube_allocation_source){
            .name = path, .list = podres_list, .userdata = client};
        *ret_client = client;
        return 0;
}

static int inventory_option(int c, const char *arg, void *userdata)
{
        struct inventory_args *a = userdata;

        if (xp_cli_kubeapi_option(c, arg, &a->api))
                return 0;
        switch (c) {
        case 'n':
                a->o->node_name = arg;
                break;
        case 'L':
                return split_skip(a, arg);
        case 'r':
                a->pod_resources = arg;
                break;
        case 'N':
                a->o->device_plugin = false;
                break;
        case 'D':
                a->o->discovery.node_description = arg;
                break;
        case 'i':
                return xp_cli_parse_duration(
                    "inventory", "interval", arg, XP_DURATION_DAY_MS, &a->o->min_interval_ms);
        case 'P':
                return xp_cli_parse_duration(
                    "inventory", "poll", arg, XP_DURATION_DAY_MS, &a->o->poll_ms);
        case 'R':
                return xp_cli_parse_duration(
                    "inventory", "resync", arg, XP_DURATION_DAY_MS, &a->o->resync_ms);
        }
        return 0;
}

int xp_cmd_inventory(int argc, char **argv)
{
        static const struct option options[] = {
            {"node-name", required_argument, NULL, 'n'},
            {"skip-resources", required_argument, NULL, 'L'},
            {"pod-resources", required_argument, NULL, 'r'},
            {"no-device-plugin", no_argument, NULL, 'N'},
            {"node-description", required_argument, NULL, 'D'},
            {"interval", required_argument, NULL, 'i'},
            {"poll", required_argument, NULL, 'P'},
            {"resync", required_argument, NULL, 'R'},
            XP_CLI_KUBEAPI_OPTIONS,
            {"help", no_argument, NULL, 'h'},
            {},
        };
        struct xp_kube_inventory_options o = {.device_plugin = true};
        struct inventory_args a = {.o = &o};
        struct xp_kube_inventory *inv = NULL;
        _cleanup_free_ char *skip = NULL;
        void *podres = NULL;
        struct xp_error err = {0};
        char host[256];
        sigset_t mask;
        int r, sig;

        r = xp_cli_getopt(argc, argv, "h", options, usage, inventory_option, &a);
        skip = a.skip;
        if (r != 0)
                return r < 0 ? 0 : r;
        o.kubeconfig = a.api.kubeconfig;
        o.serviceaccount_dir = a.api.serviceaccount_dir;
        if (optind < argc) {
                fprintf(
                    stderr, "xpool inventory: unexpected argument '%s'\n\n%s", argv[optind], usage);
                return XP_EXIT_USAGE;
        }
        o.leave = a.leave;
        r = pod_resources(&a, &podres);
        if (r != 0)
                return r;
        if (!o.node_name)
                o.node_name = getenv("NODE_NAME");
        if (!o.node_name || !*o.node_name) {
                if (gethostname(host, sizeof(host)) < 0) {
                        fprintf(stderr, "xpool inventory: no --node-name and no host name\n");
                        return XP_EXIT_USAGE;
                }
                host[sizeof(host) - 1] = '\0';
                o.node_name = host;
        }
        xp_cli_block_stop_signals(&mask);

        r = xp_kube_inventory_new(&o, &inv, &err);
        if (r < 0) {
                fprintf(stderr, "xpool inventory: %s\n", xp_error_message(&err));
                free_podres(podres);
                return XP_EXIT_FAILURE;
        }
        xp_log(LOG_INFO, "xpool inventory: publishing the devices of node %s", o.node_name);
        sig = xp_cli_wait_stop(&mask);
        xp_log(LOG_INFO, "xpool inventory: %s, stopping", strsignal(sig));
        xp_kube_inventory_free(inv);
        free_podres(podres);
        return 0;
}
