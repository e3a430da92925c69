/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xpool/duration.h"

int xp_cli_getopt(int argc,
                  char **argv,
                  const char *shortopts,
                  const struct option *options,
                  const char *usage,
                  xp_cli_option_fn *fn,
                  void *userdata)
{
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, shortopts, options, NULL)) != -1) {
                int r;

                if (c == 'h') {
                        fputs(usage, stdout);
                        return -1;
                }
                /* getopt_long already said what is wrong with the option */
                if (c == '?' || !fn) {
                        fputs(usage, stderr);
                        return XP_EXIT_USAGE;
                }
                r = fn(c, optarg, userdata);
                if (r != 0)
                        return r;
        }
        return 0;
}

int xp_cli_parse_listen(char *text, bool host_optional, const char **ret_host, uint16_t *ret_port)
{
        char *colon, *host = text, *end;
        unsigned long port;

        if (text[0] == '[') {
                char *close = strchr(text, ']');

                if (!close || close[1] != ':')
                        return -EINVAL;
                *close = '\0';
                host = text + 1;
                colon = close + 1;
        } else {
                colon = strrchr(text, ':');
                if (!colon)
                        return -EINVAL;
                *colon = '\0';
        }
        errno = 0;
        port = strtoul(colon + 1, &end, 10);
        if (errno != 0 || end == colon + 1 || *end != '\0' || port > 65535 ||
            (!host[0] && (!host_optional || host != text)))
                return -EINVAL;
        *ret_host = host[0] ? host : NULL;
        *ret_port = (uint16_t)port;
        return 0;
}

int xp_cli_parse_duration(
    const char *cmd, const char *flag, const char *arg, int64_t max_ms, int64_t *ret)
{
        struct xp_error err = {0};

        if (xp_duration_parse(arg, 1, max_ms, ret, &err) < 0) {
                fprintf(stderr, "xpool %s: --%s: %s\n", cmd, flag, xp_error_message(&err));
                return XP_EXIT_USAGE;
        }
        return 0;
}

/* As kube-controller-manager's flag: a count, 0 turning the collection of terminated pods off. */
int xp_cli_parse_pod_gc_threshold(const char *cmd, const char *arg, int64_t *ret)
{
        char *end;
        unsigned long long n;

        errno = 0;
        n = strtoull(arg, &end, 10);
        if (errno || *end || arg[0] < '0' || arg[0] > '9' || n > INT32_MAX) {
                fprintf(stderr,
                        "%s: --terminated-pod-gc-threshold '%s': expected a number of pods from 0 "
                        "(no collection) to %d\n",
                        cmd,
                        arg,
                        INT32_MAX);
                return XP_EXIT_USAGE;
        }
        *ret = n == 0 ? -1 : (int64_t)n;
        return 0;
}
