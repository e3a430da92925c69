/* SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "xpool/runtime.h"

const struct xp_cli_command xp_cli_commands[] = {
    {"validate", "check manifests the way the API server will (-f FILE...)", xp_cmd_validate},
    {"convert", "print manifests as normalized JSON (-f FILE...)", xp_cmd_convert},
    {"devices", "show this node's CPUs, memory, accelerators and their topology", xp_cmd_devices},
    {"apply", "create or update objects from manifests (-f FILE|DIR|-)", xp_cmd_apply},
    {"get", "list objects or show some: tables, -o wide|json|yaml|name, -w", xp_cmd_get},
    {"describe", "show a pod or node in detail, with its events", xp_cmd_describe},
    {"delete", "delete objects by name or by manifest (-f FILE)", xp_cmd_delete},
    {"run", "run a command as a pod with devices, in the foreground (-- COMMAND)", xp_cmd_run},
    {"logs", "print a pod's container logs (-f to follow)", xp_cmd_logs},
    {"top", "show what nodes, pods and devices use: CPU, memory, allocated and used", xp_cmd_top},
    {"why", "say why a pod is pending and what would unblock it", xp_cmd_why},
    {"agent",
     "run this machine as a node: register it, run its pods, serve their logs",
     xp_cmd_agent},
    {"device-plugin",
     "serve this node's devices to the kubelet (Kubernetes device plugin API)",
     xp_cmd_device_plugin},
    {"up", "run a one-node xpool here: the API server and a node agent", xp_cmd_up},
    {"server", "serve the Kubernetes-shaped API over the durable store", xp_cmd_server},
    {"token", "create, list and revoke the API server's bearer tokens", xp_cmd_token},
    {"store", "check the server's store for damage, or recover a damaged one", xp_cmd_store},
    {"extender",
     "serve kube-scheduler's extender protocol from xpool's scheduling core",
     xp_cmd_extender},
    {"inventory",
     "publish this node's device labels and inventory annotation to a Kubernetes cluster",
     xp_cmd_inventory},
    {"image", "the node's images: list, pull, import, inspect, rm, prune", xp_cmd_image},
    {"sim",
     "replay a GPU trace through the scheduling core under each policy (--nodes, --pods)",
     xp_cmd_sim},
    {"version", "print the version", xp_cmd_version},
    {"help", "show this help", xp_cmd_help},
    /* hidden: the per-container shim the node agent starts (include/runtime/xpool/runtime.h) */
    {"__shim", NULL, xp_shim_main},
    /* hidden: a command run in a container for `kubectl exec` (xp_runtime_exec()) */
    {"__exec", NULL, xp_exec_main},
    {NULL, NULL, NULL},
};

int xp_cmd_help(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        printf("xpool: one pool of heterogeneous compute (CPU, GPU, NPU, FPGA, ...)\n\n"
               "Usage: xpool COMMAND [OPTIONS]\n\nCommands:\n");
        for (const struct xp_cli_command *c = xp_cli_commands; c->name; c++)
                if (c->summary) /* hidden commands have none */
                        printf("  %-13s %s\n", c->name, c->summary);
        printf("\nRun 'xpool COMMAND --help' for a command's options.\n");
        return 0;
}
