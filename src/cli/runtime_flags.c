/* SPDX-License-Identifier: Apache-2.0 */
/* The container flags `xpool agent` and `xpool up` share (docs/containers.md), and those of
 * their pods' local ephemeral storage (docs/agent.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime_flags.h"
#include "xpool/duration.h"

static int add_share(struct xp_cli_runtime_flags *f, const char *path, const char *cmd)
{
        if (f->n_shares >= XP_CLI_HOST_PATHS_MAX || path[0] != '/' || strcmp(path, "/") == 0) {
                fprintf(stderr,
                        "%s: --share '%s': expected an absolute path below / (at most %d)\n",
                        cmd,
                        path,
                        XP_CLI_HOST_PATHS_MAX);
                return -1;
        }
        f->shares[f->n_shares++] = path;
        f->o->share_paths = f->shares;
        return 0;
}

int xp_cli_runtime_env(const char *cmd, struct xp_cli_runtime_flags *f)
{
        const char *env = getenv("XPOOL_SHARE");
        char *save = NULL;

        if (!env || !*env)
                return 0;
        if (strlen(env) >= sizeof f->shares_env) {
                fprintf(stderr, "%s: XPOOL_SHARE: too long\n", cmd);
                return XP_EXIT_USAGE;
        }
        strcpy(f->shares_env, env);
        for (char *p = strtok_r(f->shares_env, ":", &save); p; p = strtok_r(NULL, ":", &save))
                if (add_share(f, p, cmd) < 0)
                        return XP_EXIT_USAGE;
        return 0;
}

/* A percent from 0 to 100 (the agent checks how the two thresholds compare). 0 is kept as 0,
 * the agent's default: 0 % used as a threshold would collect on every pass. */
static int percent(const char *flag, const char *arg, const char *cmd, int *ret)
{
        char *end;
        long v = strtol(arg, &end, 10);

        if (!*arg || *end || v < 1 || v > 100) {
                fprintf(
                    stderr, "%s: --%s '%s': expected a percent from 1 to 100\n", cmd, flag, arg);
                return -XP_EXIT_USAGE;
        }
        *ret = (int)v;
        return 1;
}

/* 0s is allowed (no minimum age): kept as -1, where 0 is the agent's default of 2m. */
static int image_ttl(const char *arg, const char *cmd, int64_t *ret)
{
        struct xp_error err = {0};

        if (xp_duration_parse(arg, 0, XP_DURATION_DAY_MS, ret, &err) < 0) {
                fprintf(
                    stderr, "%s: --minimum-image-ttl-duration: %s\n", cmd, xp_error_message(&err));
                return -XP_EXIT_USAGE;
        }
        if (*ret == 0)
                *ret = -1;
        return 1;
}

int xp_cli_runtime_option(int c, const char *arg, const char *cmd, struct xp_cli_runtime_flags *f)
{
        switch (c) {
        case XP_OPT_DEFAULT_RUNTIME:
                f->o->default_runtime = arg;
                return 1;
        case XP_OPT_RUNTIME_CLASS:
                if (f->n_classes >= XP_CLI_RUNTIME_CLASSES_MAX || !strchr(arg, '=')) {
                        fprintf(stderr,
                                "%s: --runtime-class '%s': expected NAME=PATH (at most %d)\n",
                                cmd,
                                arg,
                                XP_CLI_RUNTIME_CLASSES_MAX);
                        return -XP_EXIT_USAGE;
                }
                f->classes[f->n_classes++] = arg;
                f->o->runtime_classes = f->classes;
                return 1;
        case XP_OPT_CDI_DIR:
                f->o->cdi_dir = arg;
                return 1;
        case XP_OPT_ALLOW_HOST_PATH:
                if (f->n_host_paths >= XP_CLI_HOST_PATHS_MAX || arg[0] != '/') {
                        fprintf(
                            stderr,
                            "%s: --allow-host-path '%s': expected an absolute path (at most %d)\n",
                            cmd,
                            arg,
                            XP_CLI_HOST_PATHS_MAX);
                        return -XP_EXIT_USAGE;
                }
                f->host_paths[f->n_host_paths++] = arg;
                f->o->allowed_host_paths = f->host_paths;
                return 1;
        case XP_OPT_HOUSEKEEPING_INTERVAL:
                return xp_cli_parse_duration(strncmp(cmd, "xpool ", 6) == 0 ? cmd + 6 : cmd,
                                             "housekeeping-interval",
                                             arg,
                                             XP_DURATION_DAY_MS,
                                             &f->o->housekeeping_interval_ms) == 0
                           ? 1
                           : -XP_EXIT_USAGE;
        case XP_OPT_SHARE:
                return add_share(f, arg, cmd) < 0 ? -XP_EXIT_USAGE : 1;
        case XP_OPT_EVICTION_HARD:
                f->o->eviction_hard = arg; /* checked by the agent, with what is wrong */
                return 1;
        case XP_OPT_IMAGE_GC_HIGH:
        case XP_OPT_IMAGE_GC_LOW:
                return percent(c == XP_OPT_IMAGE_GC_HIGH ? "image-gc-high-threshold"
                                                         : "image-gc-low-threshold",
                               arg,
                               cmd,
                               c == XP_OPT_IMAGE_GC_HIGH ? &f->o->image_gc_high_threshold
                                                         : &f->o->image_gc_low_threshold);
        case XP_OPT_MINIMUM_IMAGE_TTL:
                return image_ttl(arg, cmd, &f->o->minimum_image_ttl_ms);
        }
        return 0;
}
