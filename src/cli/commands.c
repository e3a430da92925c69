/* SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>
#include <stdio.h>

#include "cli.h"

/*
 * Every command. Those with an executable run there (dispatch.c): their libraries (SQLite,
 * libmicrohttpd, gRPC, libarchive, libseccomp) stay out of the `xpool` front, so that a `get` or
 * a `run` loads only what talks to the server. Their functions are in xp_cli_full_commands.
 */
#define FULL  "xpool-full"
#define AGENT "xpool-agent"
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
    {"agent",
     "run this machine as a node: register it, run its pods, serve their logs",
     .exe = AGENT},
    {"device-plugin",
     "serve this node's devices to the kubelet (Kubernetes device plugin API)",
     .exe = "xpool-device-plugin"},
    {"up", "run a one-node xpool here: the API server and a node agent", .exe = FULL},
    {"server", "serve the Kubernetes-shaped API over the durable store", .exe = FULL},
    {"token", "create, list and revoke the API server's bearer tokens", .exe = FULL},
    {"store", "check the server's store for damage, or recover a damaged one", .exe = FULL},
    {"extender",
     "serve kube-scheduler's extender protocol from xpool's scheduling core",
     .exe = FULL},
    {"inventory",
     "publish this node's device labels and inventory annotation to a Kubernetes cluster",
     .exe = FULL},
    {"image", "the node's images: list, pull, import, inspect, rm, prune", .exe = FULL},
    {"sim",
     "replay a GPU trace through the scheduling core under each policy (--nodes, --pods)",
     xp_cmd_sim},
    {"version", "print the version", xp_cmd_version},
    {"help", "show this help", xp_cmd_help},
    /* hidden: the per-container shim the node agent starts (include/runtime/xpool/runtime.h) */
    {"__shim", NULL, .exe = "xpool-shim"},
    /* hidden: a command run in a container for `kubectl exec` (xp_runtime_exec()) */
    {"__exec", NULL, .exe = "xpool-shim"},
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
