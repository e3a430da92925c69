/* SPDX-License-Identifier: Apache-2.0 */
/* The conditions of an object's status by type (xpool/condition.h). */
#include <errno.h>

#include "xpool/condition.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

ssize_t xp_condition_index(const json_t *status, const char *type)
{
        const json_t *conditions = json_object_get(status, "conditions"), *c;
        size_t i;

        if (!type)
                return -1;
        json_array_foreach(conditions, i, c)
        {
                if (xp_streq0(json_string_value(json_object_get(c, "type")), type))
                        return (ssize_t)i;
        }
        return -1;
}

json_t *xp_condition_get(const json_t *status, const char *type)
{
        ssize_t i = xp_condition_index(status, type);

        return i < 0 ? NULL : json_array_get(json_object_get(status, "conditions"), (size_t)i);
}

static const char *const NODE_POD_CONDITIONS[] = {
    "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"};

bool xp_pod_condition_by_node(const char *type)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(NODE_POD_CONDITIONS); i++)
                if (xp_streq0(type, NODE_POD_CONDITIONS[i]))
                        return true;
        return false;
}

/* xpool's own condition of a pod whose device failed (src/agent/devhealth.c): the node writes
 * it beside its DisruptionTarget as it ends the pod, and no one else does. */
static bool by_node_beside_others(const char *type)
{
        return xp_streq0(type, "xpool.io/DeviceUnhealthy");
}

static bool phase_terminal(const json_t *status)
{
        const char *phase = json_string_value(json_object_get(status, "phase"));

        return xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed");
}

/*
 * The conditions a node's write ends with, as mergePodStatus merges them: the node's own as it
 * wrote them (xpool.io/DeviceUnhealthy too, where the write has it), then every other as stored
 * (a stale copy's value loses), but for the node's DisruptionTarget as it ends the pod (its
 * eviction: the stored phase not yet terminal, the written one terminal), which replaces or joins
 * the stored one.
 */
static json_t *merged_conditions(const json_t *status, const json_t *was)
{
        const json_t *written = xp_condition_get(status, "DisruptionTarget"), *c;
        bool ending = written && !phase_terminal(was) && phase_terminal(status);
        json_t *out = json_array();
        size_t i;
        int r = 0;

        if (!out)
                return NULL;
        json_array_foreach(json_object_get(status, "conditions"), i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));

                if (xp_pod_condition_by_node(type) || by_node_beside_others(type))
                        r |= json_array_append_new(out, json_deep_copy(c));
        }
        json_array_foreach(json_object_get(was, "conditions"), i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));

                if (!type || xp_pod_condition_by_node(type))
                        continue;
                if (ending && xp_streq0(type, "DisruptionTarget"))
                        continue;
                if (by_node_beside_others(type) && xp_condition_index(status, type) >= 0)
                        continue;
                r |= json_array_append_new(out, json_deep_copy(c));
        }
        if (ending)
                r |= json_array_append_new(out, json_deep_copy(written));
        if (r < 0) {
                json_decref(out);
                return NULL;
        }
        return out;
}

int xp_pod_status_keep_conditions(const json_t *status, const json_t *was, json_t **ret)
{
        const json_t *written;
        json_t *conditions, *out;

        if (!json_is_object(status))
                return 0;
        conditions = merged_conditions(status, was);
        if (!conditions)
                return -ENOMEM;
        written = json_object_get(status, "conditions");
        if (json_equal(conditions, written) || (!written && !json_array_size(conditions))) {
                json_decref(conditions);
                return 0;
        }
        out = json_copy((json_t *)status);
        if (!out) {
                json_decref(conditions);
                return -ENOMEM;
        }
        if (json_object_set_new(out, "conditions", conditions) < 0) { /* the list goes with it */
                json_decref(out);
                return -ENOMEM;
        }
        *ret = out;
        return 1;
}
