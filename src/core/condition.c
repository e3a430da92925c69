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

/* *out (made on the first call): status with a list of conditions of its own, c appended. */
static int keep(const json_t *status, const json_t *c, json_t **out)
{
        json_t *conditions = json_object_get(status, "conditions");

        if (!*out) {
                *out = json_copy((json_t *)status);
                conditions = json_is_array(conditions) ? json_copy(conditions) : json_array();
                if (!*out || !conditions || json_object_set_new(*out, "conditions", conditions) < 0)
                        return -ENOMEM;
        }
        conditions = json_object_get(*out, "conditions");
        return json_array_append_new(conditions, json_deep_copy(c)) < 0 ? -ENOMEM : 0;
}

int xp_pod_status_keep_conditions(const json_t *status, const json_t *was, json_t **ret)
{
        json_t *out = NULL;
        const json_t *c;
        size_t i;

        if (!json_is_object(status))
                return 0;
        json_array_foreach(json_object_get(was, "conditions"), i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));

                if (!type || xp_pod_condition_by_node(type) ||
                    xp_condition_index(status, type) >= 0)
                        continue;
                if (keep(status, c, &out) < 0) {
                        json_decref(out);
                        return -ENOMEM;
                }
        }
        if (!out)
                return 0;
        *ret = out;
        return 1;
}
