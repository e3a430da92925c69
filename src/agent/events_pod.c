/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container lifecycle Events the kubelet records, in its words (Kubernetes 1.32), from what
 * the reconcile loop sees: Created and Started when a start came back, Failed (a Warning) instead
 * of Started when the container did not start, Killing when a container
 * is stopped, BackOff while one waits in CrashLoopBackOff, and two of xpool's own: OOMKilled
 * when a container's last exit was the OOM killer's, DevicesAllocated naming the devices a
 * container got. Pulled, Pulling and the image errors come from pull.c. Aggregation and the rate
 * limit are events.c's.
 */
#include <stdio.h>
#include <string.h>

#include "agent_internal.h"
#include "launch.h"
#include "xpool/strutil.h"

static void created_event(struct xp_agent_events *events,
                          const char *ns,
                          const char *pod,
                          const char *uid,
                          const char *container)
{
        char msg[512];

        snprintf(msg, sizeof(msg), "Created container %s", container);
        (void)xp_agent_event(events, ns, pod, uid, "Normal", "Created", msg);
}

void xp_agent_events_start_failed(struct xp_agent_events *events,
                                  const char *ns,
                                  const char *pod,
                                  const char *uid,
                                  const char *container,
                                  bool created,
                                  const char *message)
{
        char msg[1024];

        if (created)
                created_event(events, ns, pod, uid, container);
        snprintf(msg, sizeof(msg), "Error: %s", message && *message ? message : "the start failed");
        (void)xp_agent_event(events, ns, pod, uid, "Warning", "Failed", msg);
}

void xp_agent_events_started(struct xp_agent_events *events,
                             const char *ns,
                             const char *pod,
                             const char *uid,
                             const char *container,
                             unsigned attempt,
                             const struct xp_launch *launch)
{
        char msg[1024];
        size_t len = 0;

        created_event(events, ns, pod, uid, container);
        snprintf(msg, sizeof(msg), "Started container %s", container);
        (void)xp_agent_event(events, ns, pod, uid, "Normal", "Started", msg);
        if (attempt > 0 || !launch)
                return;
        /* the device ids, as the container's environment names them to its programs */
        for (size_t i = 0; launch->env && launch->env[i]; i++) {
                const char *eq = strchr(launch->env[i], '=');

                if (!eq || (size_t)(eq - launch->env[i]) < 16 ||
                    strncmp(eq - 16, "_VISIBLE_DEVICES", 16) != 0 || !eq[1] ||
                    strcmp(eq + 1, "void") == 0 || strcmp(eq + 1, "none") == 0)
                        continue;
                if (len == 0)
                        len = (size_t)snprintf(
                            msg, sizeof(msg), "Container %s got devices", container);
                if (len < sizeof(msg))
                        len +=
                            (size_t)snprintf(msg + len, sizeof(msg) - len, " %s", launch->env[i]);
        }
        if (len > 0)
                (void)xp_agent_event(events, ns, pod, uid, "Normal", "DevicesAllocated", msg);
}

void xp_agent_events_killing(struct xp_agent_events *events,
                             const char *ns,
                             const char *pod,
                             const char *uid,
                             const char *container)
{
        char msg[256];

        snprintf(msg, sizeof(msg), "Stopping container %s", container);
        (void)xp_agent_event_once(events, ns, pod, uid, "Normal", "Killing", msg, true);
}

static const char *reason_of(const json_t *state, const char *which)
{
        return json_string_value(json_object_get(json_object_get(state, which), "reason"));
}

void xp_agent_events_status(struct xp_agent_events *events,
                            const char *ns,
                            const char *pod,
                            const char *uid,
                            const json_t *status)
{
        static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
        char msg[512];

        for (size_t l = 0; events && l < 2; l++) {
                const json_t *cs;
                size_t i;

                json_array_foreach(json_object_get(status, lists[l]), i, cs)
                {
                        const char *name = json_string_value(json_object_get(cs, "name"));
                        const json_t *state = json_object_get(cs, "state");
                        const json_t *last = json_object_get(cs, "lastState");
                        const char *r = reason_of(state, "waiting"), *finished;

                        if (!name)
                                continue;
                        if (r && strcmp(r, "CrashLoopBackOff") == 0) {
                                snprintf(msg,
                                         sizeof(msg),
                                         "Back-off restarting failed container %s in pod %s_%s(%s)",
                                         name,
                                         pod,
                                         ns,
                                         uid);
                                (void)xp_agent_event(
                                    events, ns, pod, uid, "Warning", "BackOff", msg);
                        }
                        if (!xp_streq0(reason_of(state, "terminated"), "OOMKilled"))
                                state = xp_streq0(reason_of(last, "terminated"), "OOMKilled")
                                            ? last
                                            : NULL;
                        if (!state)
                                continue;
                        /* once per exit: its time tells them apart */
                        finished = json_string_value(
                            json_object_get(json_object_get(state, "terminated"), "finishedAt"));
                        snprintf(
                            msg,
                            sizeof(msg),
                            "Container %s was killed by the OOM killer at %s: its memory use reached its limit",
                            name,
                            finished ? finished : "an unknown time");
                        (void)xp_agent_event_once(
                            events, ns, pod, uid, "Warning", "OOMKilled", msg, true);
                }
        }
}
