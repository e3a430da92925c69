/* SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>

#include "cli.h"

const struct xp_cli_command xp_cli_commands[] = {
    {"validate", "check manifests the way the API server will (-f FILE...)", xp_cmd_validate},
    {"convert", "print manifests as normalized JSON (-f FILE...)", xp_cmd_convert},
    {"devices", "show this node's CPUs, memory, accelerators and their topology", xp_cmd_devices},
    {"server", "serve the Kubernetes-shaped API over the durable store", xp_cmd_server},
    {"token", "create, list and revoke the API server's bearer tokens", xp_cmd_token},
    {"version", "print the version", xp_cmd_version},
    {"help", "show this help", xp_cmd_help},
    {NULL, NULL, NULL},
};
