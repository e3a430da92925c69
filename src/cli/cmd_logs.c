/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "xpool/apiresource.h"
#include "xpool/macro.h"
#include "xpool/podlog.h"

static const char usage[] =
    "Usage: xpool logs POD [-c CONTAINER] [-f] [--tail N] [-n NS]\n\n"
    "Prints the output of a pod's container, as the node agent keeps it.\n\n"
    "  -c, --container NAME  which container (needed when the pod has several)\n"
    "  -f, --follow          keep printing as the container writes\n"
    "      --tail N          only the last N lines\n" XP_CLIENT_USAGE;

static int on_data(const char *data, size_t len, void *userdata)
{
        (void)userdata;
        if (fwrite(data, 1, len, stdout) != len)
                return -EIO;
        /* Followers read it as it comes, not when a buffer fills. */
        fflush(stdout);
        return 0;
}

/* A container that has not started has no log: say which and why, as the kubelet does. */
static bool explain_waiting(const json_t *object, const char *pod, struct xp_error *err)
{
        const json_t *statuses =
            json_object_get(json_object_get(object, "status"), "containerStatuses");
        const json_t *status;
        size_t i;

        json_array_foreach(statuses, i, status)
        {
                const json_t *waiting =
                    json_object_get(json_object_get(status, "state"), "waiting");
                const char *reason = json_string_value(json_object_get(waiting, "reason"));
                const char *message = json_string_value(json_object_get(waiting, "message"));
                const char *name = json_string_value(json_object_get(status, "name"));

                if (!waiting)
                        continue;
                xp_errorf(
                    err,
                    -ENOENT,
                    "pod \"%s\" has no logs yet: its container \"%s\" is waiting to start: %s%s%s%s",
                    pod,
                    name ? name : "?",
                    reason ? reason : "no reason given",
                    message ? " (" : "",
                    message ? message : "",
                    message ? ")" : "");
                return true;
        }
        return false;
}

/*
 * A 404 on the log is either no such pod or a pod no node agent serves logs for (yet): tell
 * them apart, since only the first is the user's mistake.
 */
static void explain_missing(struct xp_client *client, const char *pod, struct xp_error *err)
{
        json_auto_t *object = NULL;
        struct xp_error get_err = {0};
        char path[2048], reason[XP_ERROR_MSG_MAX];
        const char *node;

        if (xp_api_resource_path(xp_api_resource_find("pods", NULL),
                                 xp_client_namespace(client),
                                 pod,
                                 path,
                                 sizeof(path)) < 0 ||
            xp_client_json(client, "GET", path, NULL, NULL, NULL, &object, &get_err) < 0) {
                if (get_err.code == -ENOENT)
                        *err = get_err;
                return;
        }
        node = json_string_value(json_object_get(json_object_get(object, "spec"), "nodeName"));
        if (!node) {
                xp_errorf(
                    err, -ENOENT, "pod \"%s\" has no logs yet: it is not scheduled to a node", pod);
                return;
        }
        if (explain_waiting(object, pod, err))
                return;
        /* the node's answer, copied first: it is what err holds, and becomes part of it */
        snprintf(reason, sizeof(reason), "%s", xp_error_message(err));
        xp_errorf(err, -ENOENT, "pod \"%s\" has no logs on node %s: %s", pod, node, reason);
}

struct logs_args {
        const char *container; /* borrowed from argv */
        struct xp_pod_log_options log;
};

static int logs_option(int c, const char *arg, void *userdata)
{
        struct logs_args *a = userdata;

        switch (c) {
        case 'c':
                a->container = arg;
                break;
        case 'f':
                a->log.follow = true;
                break;
        case 't': {
                char *end;
                long n;

                errno = 0;
                n = strtol(arg, &end, 10);
                if (errno || end == arg || *end || n < -1) {
                        fprintf(
                            stderr, "xpool logs: --tail takes a number of lines, not '%s'\n", arg);
                        return XP_EXIT_USAGE;
                }
                /* kubectl's -1 means everything: the same as not asking. */
                a->log.tail_lines = n;
                break;
        }
        }
        return 0;
}

int xp_cmd_logs(int argc, char **argv)
{
        static const struct option options[] = {
            {"container", required_argument, NULL, 'c'},
            {"follow", no_argument, NULL, 'f'},
            {"tail", required_argument, NULL, 't'},
            {"help", no_argument, NULL, 'h'},
            XP_CLIENT_LONG_OPTIONS,
            {NULL, 0, NULL, 0},
        };
        _cleanup_(xp_client_freep) struct xp_client *client = NULL;
        struct xp_client_options copts = {0};
        struct xp_error err = {0};
        struct logs_args a = {.log = XP_POD_LOG_OPTIONS_INIT};
        _cleanup_free_ char *query = NULL;
        const char *pod;
        char path[2048];
        int r;

        r = xp_client_getopt(argc, argv, "c:fn:h", options, usage, &copts, logs_option, &a);
        if (r != 0)
                return r < 0 ? 0 : r;
        pod = xp_cli_pod_arg(argc, argv, "logs", usage);
        if (!pod)
                return XP_EXIT_USAGE;
        if (xp_client_new(&copts, &client, &err) < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        r = xp_api_resource_path(xp_api_resource_find("pods", NULL),
                                 xp_client_namespace(client),
                                 pod,
                                 path,
                                 sizeof(path));
        if (r >= 0 && strlen(path) + 4 < sizeof(path))
                strcat(path, "/log");
        else
                r = -ENAMETOOLONG;
        if (r >= 0 && a.container)
                r = xp_client_add_query(path, sizeof(path), "container", a.container);
        if (r >= 0)
                r = xp_pod_log_options_query(&a.log, (int64_t)time(NULL), &query);
        if (r >= 0 && query[0]) {
                size_t len = strlen(path);

                if (len + 1 + strlen(query) < sizeof(path))
                        snprintf(path + len,
                                 sizeof(path) - len,
                                 "%c%s",
                                 strchr(path, '?') ? '&' : '?',
                                 query);
                else
                        r = -ENAMETOOLONG;
        }
        if (r < 0) {
                fprintf(stderr, "error: the pod or container name is too long\n");
                return XP_EXIT_FAILURE;
        }
        r = xp_client_stream(client, path, "text/plain, */*", on_data, NULL, &err);
        if (r == -ENOENT)
                explain_missing(client, pod, &err);
        if (r < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        return 0;
}
