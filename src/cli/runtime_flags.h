/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The container flags of `xpool agent` and `xpool up` (runtime_flags.c): apart from cli.h, which
 * the device plugin's executable also compiles, so that only what fills an agent's options sees
 * the agent's header.
 */

#include <getopt.h>
#include <stddef.h>

#include "xpool/agent.h"

#define XP_CLI_RUNTIME_CLASSES_MAX 32
#define XP_CLI_HOST_PATHS_MAX      64

enum {
        XP_OPT_DEFAULT_RUNTIME = 0x500,
        XP_OPT_RUNTIME_CLASS,
        XP_OPT_CDI_DIR,
        XP_OPT_ALLOW_HOST_PATH,
        XP_OPT_HOUSEKEEPING_INTERVAL,
        XP_OPT_EVICTION_HARD,
        XP_OPT_SHARE,
        XP_OPT_IMAGE_GC_HIGH,
        XP_OPT_IMAGE_GC_LOW,
        XP_OPT_MINIMUM_IMAGE_TTL,
};

#define XP_CLI_RUNTIME_OPTIONS                                                                     \
        {"default-runtime", required_argument, NULL, XP_OPT_DEFAULT_RUNTIME},                      \
            {"runtime-class", required_argument, NULL, XP_OPT_RUNTIME_CLASS},                      \
            {"cdi-dir", required_argument, NULL, XP_OPT_CDI_DIR},                                  \
            {"housekeeping-interval", required_argument, NULL, XP_OPT_HOUSEKEEPING_INTERVAL},      \
            {"eviction-hard", required_argument, NULL, XP_OPT_EVICTION_HARD},                      \
            {"share", required_argument, NULL, XP_OPT_SHARE},                                      \
            {"image-gc-high-threshold", required_argument, NULL, XP_OPT_IMAGE_GC_HIGH},            \
            {"image-gc-low-threshold", required_argument, NULL, XP_OPT_IMAGE_GC_LOW},              \
            {"minimum-image-ttl-duration", required_argument, NULL, XP_OPT_MINIMUM_IMAGE_TTL},     \
        {                                                                                          \
                "allow-host-path", required_argument, NULL, XP_OPT_ALLOW_HOST_PATH                 \
        }

#define XP_CLI_RUNTIME_USAGE                                                                         \
        "      --default-runtime NAME   the runtime class of pods that name none (default crun;\n"   \
        "                           process: as processes of the node; docs/containers.md)\n"        \
        "      --runtime-class NAME=PATH  an OCI runtime for runtimeClassName NAME (repeatable;\n"   \
        "                           built in: process, crun, runc)\n"                                \
        "      --cdi-dir DIR        the node's CDI specs, written at start (default /var/run/cdi;\n" \
        "                           DATA/cdi with simulated devices)\n"                              \
        "      --allow-host-path PATH  hostPath volumes may come from below PATH (repeatable;\n"     \
        "                           none by default)\n"                                              \
        "      --share PATH         a path of the node process containers see and may write as\n"    \
        "                           the node has it (repeatable; also XPOOL_SHARE=PATH:PATH);\n"     \
        "                           the rest of the node is read-only to them (docs/security.md)\n"  \
        "      --housekeeping-interval DURATION  how often pods' local ephemeral storage is\n"       \
        "                           measured against their limits (default 10s; docs/agent.md)\n"    \
        "      --eviction-hard nodefs.available<N%|SIZE  below this free space on the data\n"        \
        "                           directory's file system the node has DiskPressure and\n"         \
        "                           evicts pods (default nodefs.available<10%)\n"                    \
        "      --image-gc-high-threshold N  at N% of the image file system used, unused images\n"    \
        "                           are deleted (default 85; 100: never; docs/images.md)\n"          \
        "      --image-gc-low-threshold N  ... down to N% used (default 80)\n"                       \
        "      --minimum-image-ttl-duration DURATION  images pulled more recently stay\n"            \
        "                           (default 2m)\n"

/* What the flags fill; the arrays are what the options point to (NULL-terminated). */
struct xp_cli_runtime_flags {
        struct xp_agent_options *o;
        const char *classes[XP_CLI_RUNTIME_CLASSES_MAX + 1];
        size_t n_classes;
        const char *host_paths[XP_CLI_HOST_PATHS_MAX + 1];
        size_t n_host_paths;
        const char *shares[XP_CLI_HOST_PATHS_MAX + 1];
        size_t n_shares;
        char shares_env[4096]; /* XPOOL_SHARE's copy, which shares point into */
};

/* One of the container flags: 1 when c is one (taken), 0 when it is not, -XP_EXIT_USAGE after
 * saying what is wrong. cmd names the command in messages. */
int xp_cli_runtime_option(int c, const char *arg, const char *cmd, struct xp_cli_runtime_flags *f);
/* After the flags: the paths of XPOOL_SHARE (separated by ':') added to --share's. 0, or
 * XP_EXIT_USAGE after saying what is wrong. */
int xp_cli_runtime_env(const char *cmd, struct xp_cli_runtime_flags *f);
