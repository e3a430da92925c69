/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `xpool why POD`: why a pod is pending, as the server's scheduler said it: its PodScheduled
 * condition (kube-scheduler's one line) and the explanation the newest FailedScheduling Event
 * carries after it (the node classes and what would unblock the pod; docs/scheduler.md, "Why
 * pending"). Both come from the server, so kubectl describe shows the same.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "xpool/apiresource.h"
#include "xpool/macro.h"

static const char usage[] =
    "Usage: xpool why POD [-n NS]\n\n"
    "Says why a pod is not running yet: what the scheduler found on each class of nodes\n"
    "(devices, topology, taints, affinity, its gang or queue) and what would unblock it.\n" XP_CLIENT_USAGE;

#define SEPARATOR " | " /* between the lines of the Event's message */

static const char *get_str(const json_t *o, const char *a, const char *b)
{
        return json_string_value(json_object_get(b ? json_object_get(o, a) : o, b ? b : a));
}

/* The PodScheduled condition's message when it is False, else NULL. */
static const char *unschedulable_message(const json_t *pod)
{
        const json_t *c;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
        {
                if (!json_is_string(json_object_get(c, "type")) ||
                    strcmp(get_str(c, "type", NULL), "PodScheduled") != 0)
                        continue;
                if (strcmp(get_str(c, "status", NULL) ? get_str(c, "status", NULL) : "", "False"))
                        return NULL;
                return get_str(c, "message", NULL);
        }
        return NULL;
}

/* Whether Event e is a FailedScheduling of the pod (uid) from xpool's scheduler. */
static bool failed_scheduling_of(const json_t *e, const char *name, const char *uid)
{
        return get_str(e, "reason", NULL) &&
               strcmp(get_str(e, "reason", NULL), "FailedScheduling") == 0 &&
               get_str(e, "involvedObject", "name") &&
               strcmp(get_str(e, "involvedObject", "name"), name) == 0 &&
               !(uid && get_str(e, "involvedObject", "uid") &&
                 strcmp(get_str(e, "involvedObject", "uid"), uid)) &&
               get_str(e, "message", NULL);
}

/*
 * The newest FailedScheduling Event of the pod (uid) that explains message (the condition's),
 * else the newest of any, or NULL. Events of one second list in no set order: a gang's member
 * told "incomplete" and then "over its queue's limit" in the same second must print the
 * explanation of the second.
 */
static const char *
newest_explanation(const json_t *events, const char *name, const char *uid, const char *message)
{
        const char *best = NULL, *best_time = "";
        bool best_matches = false;
        size_t len = strlen(message);
        const json_t *e;
        size_t i;

        json_array_foreach(json_object_get(events, "items"), i, e)
        {
                const char *t = get_str(e, "lastTimestamp", NULL), *text;
                bool matches;

                if (!failed_scheduling_of(e, name, uid))
                        continue;
                text = get_str(e, "message", NULL);
                matches =
                    strncmp(text, message, len) == 0 &&
                    (text[len] == '\0' || strncmp(text + len, SEPARATOR, strlen(SEPARATOR)) == 0);
                if (best && best_matches && !matches)
                        continue;
                if (!best || (matches && !best_matches) || (t && strcmp(t, best_time) >= 0)) {
                        best = text;
                        best_time = t ? t : "";
                        best_matches = matches;
                }
        }
        return best;
}

/* The explanation's lines, indented, after the one kube-scheduler's message takes. */
static void print_explanation(const char *message)
{
        const char *p = strstr(message, SEPARATOR);

        while (p) {
                const char *line = p + strlen(SEPARATOR), *next = strstr(line, SEPARATOR);
                int len = next ? (int)(next - line) : (int)strlen(line);
                printf("  %.*s\n", len, line);
                p = next;
        }
}

static int get(struct xp_client *client,
               const char *resource,
               const char *name,
               json_t **ret,
               struct xp_error *err)
{
        char path[2048];

        if (xp_api_resource_path(xp_api_resource_find(resource, NULL),
                                 xp_client_namespace(client),
                                 name,
                                 path,
                                 sizeof(path)) < 0)
                return xp_errorf(err, -ENAMETOOLONG, "the pod's name is too long");
        return xp_client_json(client, "GET", path, NULL, NULL, NULL, ret, err);
}

static int why(struct xp_client *client, const char *name, struct xp_error *err)
{
        json_auto_t *pod = NULL, *events = NULL;
        const char *ns = xp_client_namespace(client), *node, *message, *explanation;
        int r;

        r = get(client, "pods", name, &pod, err);
        if (r < 0)
                return r;
        node = get_str(pod, "spec", "nodeName");
        if (node && node[0]) {
                printf("pod %s/%s is scheduled: on node %s\n", ns, name, node);
                return 0;
        }
        message = unschedulable_message(pod);
        if (!message) {
                printf("pod %s/%s is pending: the scheduler has not tried it yet\n", ns, name);
                return 0;
        }
        printf("pod %s/%s is pending: %s\n", ns, name, message);
        r = get(client, "events", NULL, &events, err);
        if (r < 0)
                return r;
        explanation = newest_explanation(events, name, get_str(pod, "metadata", "uid"), message);
        if (explanation && strstr(explanation, SEPARATOR))
                print_explanation(explanation);
        return 0;
}

int xp_cmd_why(int argc, char **argv)
{
        static const struct option options[] = {
            {"help", no_argument, NULL, 'h'},
            XP_CLIENT_LONG_OPTIONS,
            {NULL, 0, NULL, 0},
        };
        _cleanup_(xp_client_freep) struct xp_client *client = NULL;
        struct xp_client_options copts = {0};
        struct xp_error err = {0};
        const char *pod;
        int r;

        r = xp_client_getopt(argc, argv, "n:h", options, usage, &copts, NULL, NULL);
        if (r != 0)
                return r < 0 ? 0 : r;
        pod = xp_cli_pod_arg(argc, argv, "why", usage);
        if (!pod)
                return XP_EXIT_USAGE;
        r = xp_client_new(&copts, &client, &err);
        if (r >= 0)
                r = why(client, pod, &err);
        if (r < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        return 0;
}
