/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's ConfigMap and Secret step before a container starts (podconfig.h): the objects
 * its env names are read from the server (a node token reads only what its pods name: the node
 * authorizer's rule), and the start goes on with the values, or waits with the kubelet's
 * CreateContainerConfigError until they are there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "podconfig.h"
#include "podsync.h"
#include "pull.h"
#include "xpool/log.h"
#include "xpool/macro.h"

#define RETRY_NS (1000LL * 1000 * 1000) /* a held start is looked at again after this */

int xp_agent_config_get(const char *resource,
                        const char *ns,
                        const char *name,
                        json_t **ret,
                        void *userdata,
                        struct xp_error *err)
{
        char path[1024];
        int r;

        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/%s/%s", ns, resource, name);
        r = xp_apiclient_json(userdata, "GET", path, NULL, NULL, NULL, ret, err);
        return r < 0 ? r : 0;
}

/* Whether the container's env names a ConfigMap or Secret (else nothing is read). */
static bool names_config(const json_t *pod, const char *container, bool init)
{
        const json_t *list = json_object_get(json_object_get(pod, "spec"),
                                             init ? "initContainers" : "containers"),
                     *c, *e;
        size_t i, j;

        json_array_foreach(list, i, c)
        {
                if (!json_is_string(json_object_get(c, "name")) ||
                    strcmp(json_string_value(json_object_get(c, "name")), container) != 0)
                        continue;
                if (json_array_size(json_object_get(c, "envFrom")) > 0)
                        return true;
                json_array_foreach(json_object_get(c, "env"), j, e)
                {
                        const json_t *from = json_object_get(e, "valueFrom");

                        if (json_object_get(from, "configMapKeyRef") ||
                            json_object_get(from, "secretKeyRef"))
                                return true;
                }
        }
        return false;
}

/* Each line of invalid as an InvalidEnvironmentVariableNames Warning on the pod. */
static void
invalid_events(struct xp_agent *agent, const struct xp_agent_pull_pod *pod, char *invalid)
{
        char *save = NULL;

        for (char *line = strtok_r(invalid, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                (void)xp_agent_event(agent->events,
                                     pod->namespace,
                                     pod->name,
                                     pod->uid,
                                     "Warning",
                                     "InvalidEnvironmentVariableNames",
                                     line);
}

int xp_agent_podconfig_hold(struct xp_agent *agent,
                            const struct xp_agent_pull_pod *pod,
                            const char *container,
                            bool init,
                            struct xp_podsync_memory *m,
                            const struct xp_podconfig_hold *h)
{
        (void)xp_agent_event(
            agent->events, pod->namespace, pod->name, pod->uid, "Warning", h->event, h->text);
        return xp_podsync_hold(
            m, container, init, h->reason, h->message, xp_agent_now_ns() + RETRY_NS);
}

int xp_agent_config_gate(struct xp_agent *agent,
                         const struct xp_agent_pull_pod *pod,
                         const char *container,
                         bool init,
                         struct xp_podsync_memory *m,
                         json_t **ret_pod)
{
        struct xp_apiclient *client = NULL;
        _cleanup_free_ char *wait = NULL, *invalid = NULL;
        struct xp_error err = {0};
        int r;

        *ret_pod = NULL;
        if (!names_config(pod->json, container, init))
                return 1;
        r = xp_agent_config_client_take(agent, &client, &err);
        struct xp_podconfig_reader reader = {
            .get = xp_agent_config_get, .userdata = client, .ns = pod->namespace};

        if (r >= 0)
                r = xp_podconfig_env(
                    pod->json, container, init, &reader, ret_pod, &wait, &invalid, &err);
        json_decref(reader.seen);
        xp_agent_config_client_give(agent, client);
        if (r == -ENOMEM)
                return r;
        if (invalid)
                invalid_events(agent, pod, invalid);
        if (r > 0)
                return 1;
        /* the server unreachable or refusing: the kubelet's start fails the same way */
        const char *why = r == 0 ? wait : xp_error_message(&err);
        char text[1024];

        snprintf(text, sizeof(text), "Error: %s", why);
        r = xp_agent_podconfig_hold(
            agent,
            pod,
            container,
            init,
            m,
            &(struct xp_podconfig_hold){
                .reason = XP_PODCONFIG_REASON, .message = why, .event = "Failed", .text = text});
        return r < 0 ? r : 0;
}
