/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod deletion plans and the rewrites of lost nodes and their pods (lifecycle.h). Pure JSON:
 * pod.c and the node lifecycle controller (src/controller/nodelife.c) do the reading and writing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/condition.h"
#include "xpool/lifecycle.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

static const char *member_string(const json_t *object, const char *part, const char *key)
{
        return json_string_value(json_object_get(json_object_get(object, part), key));
}

int64_t xp_lifecycle_grace_seconds(const json_t *pod, bool has_option, int64_t option)
{
        const json_t *spec_grace =
            json_object_get(json_object_get(pod, "spec"), "terminationGracePeriodSeconds");

        if (has_option)
                return option < 0 ? 1 : option;
        if (json_is_integer(spec_grace) && json_integer_value(spec_grace) >= 0)
                return json_integer_value(spec_grace);
        return XP_LIFECYCLE_DEFAULT_GRACE_S;
}

bool xp_lifecycle_pod_active(const json_t *pod)
{
        const char *node = member_string(pod, "spec", "nodeName");
        const char *phase = member_string(pod, "status", "phase");

        return node && node[0] && !xp_streq0(phase, "Succeeded") && !xp_streq0(phase, "Failed");
}

enum xp_lifecycle_delete
xp_lifecycle_delete_plan(const json_t *pod, int64_t grace, int64_t now_s, int64_t *ret_deadline)
{
        const char *marked = member_string(pod, "metadata", "deletionTimestamp");
        int64_t deadline = now_s + grace, current;

        if (grace <= 0 || !xp_lifecycle_pod_active(pod))
                return XP_LIFECYCLE_DELETE_REMOVE;
        /* a later DELETE may shorten the grace, never lengthen it */
        if (marked && xp_time_parse_rfc3339(marked, &current) >= 0 && current <= deadline)
                return XP_LIFECYCLE_DELETE_KEEP;
        *ret_deadline = deadline;
        return XP_LIFECYCLE_DELETE_MARK;
}

int xp_lifecycle_mark_deleted(json_t *pod, int64_t deadline, int64_t grace)
{
        json_t *meta = json_object_get(pod, "metadata");
        char when[XP_RFC3339_MAX];
        json_t *timestamp, *seconds;
        int r;

        if (!json_is_object(meta))
                return -EINVAL;
        r = xp_time_format_rfc3339(deadline, when);
        if (r < 0)
                return r;
        timestamp = json_string(when);
        seconds = json_integer(grace);
        if (!timestamp || !seconds) {
                json_decref(timestamp);
                json_decref(seconds);
                return -ENOMEM;
        }
        if (json_object_set_new(meta, "deletionTimestamp", timestamp) < 0) {
                json_decref(seconds);
                return -ENOMEM;
        }
        if (json_object_set_new(meta, "deletionGracePeriodSeconds", seconds) < 0) {
                json_object_del(meta, "deletionTimestamp");
                return -ENOMEM;
        }
        return 0;
}

/* A toleration that covers the unreachable NoExecute taint (an empty key with Exists: all). */
static bool tolerates_unreachable(const json_t *toleration)
{
        const char *key = json_string_value(json_object_get(toleration, "key"));
        const char *op = json_string_value(json_object_get(toleration, "operator"));
        const char *value = json_string_value(json_object_get(toleration, "value"));
        const char *effect = json_string_value(json_object_get(toleration, "effect"));
        bool exists = xp_streq0(op, "Exists");

        if (key && key[0] ? strcmp(key, XP_LIFECYCLE_UNREACHABLE_TAINT) != 0 : !exists)
                return false;
        if (effect && effect[0] && strcmp(effect, "NoExecute") != 0)
                return false;
        return exists || !value || !value[0];
}

int64_t xp_lifecycle_eviction_ms(const json_t *pod, int64_t default_ms)
{
        const json_t *tolerations = json_object_get(json_object_get(pod, "spec"), "tolerations");
        const json_t *t;
        int64_t best = default_ms;
        bool found = false;
        size_t i;

        /* several matching tolerations: the longest wins, as in Kubernetes' taint manager */
        json_array_foreach(tolerations, i, t)
        {
                const json_t *seconds = json_object_get(t, "tolerationSeconds");
                int64_t ms;

                if (!tolerates_unreachable(t))
                        continue;
                if (!json_is_integer(seconds))
                        return -1;
                ms = json_integer_value(seconds) <= 0 ? 0 : json_integer_value(seconds) * 1000;
                if (!found || ms > best)
                        best = ms;
                found = true;
        }
        return best;
}

static json_t *object_member(json_t *parent, const char *key)
{
        json_t *child = json_object_get(parent, key);

        if (json_is_object(child))
                return child;
        child = json_object();
        if (!child || json_object_set_new(parent, key, child) < 0)
                return NULL;
        return child;
}

static json_t *array_member(json_t *parent, const char *key)
{
        json_t *child = json_object_get(parent, key);

        if (json_is_array(child))
                return child;
        child = json_array();
        if (!child || json_object_set_new(parent, key, child) < 0)
                return NULL;
        return child;
}

static json_t *find_condition(const json_t *object, const char *type)
{
        return xp_condition_get(json_object_get(object, "status"), type);
}

/*
 * Sets condition type to status/reason/message; lastTransitionTime becomes now when status
 * changes, other members (lastHeartbeatTime, lastProbeTime) stay. 1 changed, 0, -ENOMEM.
 */
static int set_condition(json_t *object,
                         const char *type,
                         const char *status,
                         const char *reason,
                         const char *message,
                         const char *now)
{
        json_t *old = find_condition(object, type), *conditions, *c;
        const char *transition = now;

        if (old && xp_streq0(json_string_value(json_object_get(old, "status")), status) &&
            xp_streq0(json_string_value(json_object_get(old, "reason")), reason) &&
            xp_streq0(json_string_value(json_object_get(old, "message")), message))
                return 0;
        if (old && xp_streq0(json_string_value(json_object_get(old, "status")), status) &&
            json_string_value(json_object_get(old, "lastTransitionTime")))
                transition = json_string_value(json_object_get(old, "lastTransitionTime"));
        c = old ? json_deep_copy(old) : json_object();
        if (!c)
                return -ENOMEM;
        if (json_object_set_new(c, "type", json_string(type)) < 0 ||
            json_object_set_new(c, "status", json_string(status)) < 0 ||
            json_object_set_new(c, "reason", json_string(reason)) < 0 ||
            json_object_set_new(c, "message", json_string(message)) < 0 ||
            json_object_set_new(c, "lastTransitionTime", json_string(transition)) < 0) {
                json_decref(c);
                return -ENOMEM;
        }
        if (old) {
                ssize_t index = xp_condition_index(json_object_get(object, "status"), type);

                conditions = json_object_get(json_object_get(object, "status"), "conditions");
                return json_array_set_new(conditions, (size_t)index, c) < 0 ? -ENOMEM : 1;
        }
        conditions = array_member(object_member(object, "status"), "conditions");
        if (!conditions || json_array_append_new(conditions, c) < 0)
                return -ENOMEM;
        return 1;
}

bool xp_lifecycle_node_ready(const json_t *node)
{
        const json_t *c = find_condition(node, "Ready");

        return c && xp_streq0(json_string_value(json_object_get(c, "status")), "True");
}

const char *xp_lifecycle_node_heartbeat(const json_t *node)
{
        return json_string_value(
            json_object_get(find_condition(node, "Ready"), "lastHeartbeatTime"));
}

static bool is_unreachable_taint(const json_t *taint)
{
        return xp_streq0(json_string_value(json_object_get(taint, "key")),
                         XP_LIFECYCLE_UNREACHABLE_TAINT) &&
               xp_streq0(json_string_value(json_object_get(taint, "effect")), "NoExecute");
}

bool xp_lifecycle_node_tainted(const json_t *node)
{
        const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints"), *t;
        size_t i;

        json_array_foreach(taints, i, t) if (is_unreachable_taint(t)) return true;
        return false;
}

bool xp_lifecycle_node_disk_pressure(const json_t *node)
{
        const json_t *c = find_condition(node, "DiskPressure");

        return c && xp_streq0(json_string_value(json_object_get(c, "status")), "True");
}

static bool is_disk_taint(const json_t *taint)
{
        return xp_streq0(json_string_value(json_object_get(taint, "key")),
                         XP_LIFECYCLE_DISK_PRESSURE_TAINT) &&
               xp_streq0(json_string_value(json_object_get(taint, "effect")), "NoSchedule");
}

bool xp_lifecycle_node_disk_tainted(const json_t *node)
{
        const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints"), *t;
        size_t i;

        json_array_foreach(taints, i, t) if (is_disk_taint(t)) return true;
        return false;
}

int xp_lifecycle_node_sync_disk_taint(json_t *node)
{
        bool want = xp_lifecycle_node_disk_pressure(node);
        json_t *spec, *taints, *kept, *t;
        size_t i;

        if (want == xp_lifecycle_node_disk_tainted(node))
                return 0;
        spec = object_member(node, "spec");
        taints = json_object_get(spec, "taints");
        kept = json_array();
        if (!spec || !kept)
                goto fail;
        json_array_foreach(taints, i, t) if (!is_disk_taint(t) &&
                                             json_array_append(kept, t) < 0) goto fail;
        if (want && json_array_append_new(kept,
                                          json_pack("{s:s, s:s}",
                                                    "key",
                                                    XP_LIFECYCLE_DISK_PRESSURE_TAINT,
                                                    "effect",
                                                    "NoSchedule")) < 0)
                goto fail;
        if (json_array_size(kept) == 0) {
                json_decref(kept);
                json_object_del(spec, "taints");
                return 1;
        }
        return json_object_set_new(spec, "taints", kept) < 0 ? -ENOMEM : 1;
fail:
        json_decref(kept);
        return -ENOMEM;
}

int xp_lifecycle_node_mark_lost(json_t *node, const char *now)
{
        json_t *copy = json_deep_copy(node), *taints, *taint;
        int r, changed;

        if (!copy)
                return -ENOMEM;
        /* worked on a copy: the node stays as it was when a step fails */
        r = set_condition(
            copy, "Ready", "Unknown", "NodeStatusUnknown", XP_LIFECYCLE_NODE_LOST_MESSAGE, now);
        changed = r > 0;
        if (r >= 0 && !xp_lifecycle_node_tainted(copy)) {
                taints = array_member(object_member(copy, "spec"), "taints");
                taint = json_pack("{s:s, s:s, s:s}",
                                  "key",
                                  XP_LIFECYCLE_UNREACHABLE_TAINT,
                                  "effect",
                                  "NoExecute",
                                  "timeAdded",
                                  now);
                r = taints && taint && json_array_append_new(taints, taint) >= 0 ? 1 : -ENOMEM;
                if (r < 0 && !taints)
                        json_decref(taint);
                changed = 1;
        }
        if (r < 0 || !changed) {
                json_decref(copy);
                return r < 0 ? r : 0;
        }
        r = json_object_update(node, copy) < 0 ? -ENOMEM : 1;
        json_decref(copy);
        return r;
}

int xp_lifecycle_node_mark_back(json_t *node)
{
        json_t *spec = json_object_get(node, "spec");
        json_t *taints = json_object_get(spec, "taints"), *kept, *t;
        size_t i;

        if (!xp_lifecycle_node_ready(node) || !xp_lifecycle_node_tainted(node))
                return 0;
        kept = json_array();
        if (!kept)
                return -ENOMEM;
        json_array_foreach(taints, i, t) if (!is_unreachable_taint(t) &&
                                             json_array_append(kept, t) < 0)
        {
                json_decref(kept);
                return -ENOMEM;
        }
        if (json_array_size(kept) == 0) {
                json_decref(kept);
                json_object_del(spec, "taints");
                return 1;
        }
        return json_object_set_new(spec, "taints", kept) < 0 ? -ENOMEM : 1;
}

int xp_lifecycle_pod_mark_not_ready(json_t *pod, const char *now)
{
        json_t *copy = json_deep_copy(pod);
        int r;

        if (!copy)
                return -ENOMEM;
        r = set_condition(
            copy, "Ready", "False", "NodeLost", "the pod's node stopped renewing its lease", now);
        if (r > 0 && json_object_update(pod, copy) < 0)
                r = -ENOMEM;
        json_decref(copy);
        return r;
}

int xp_lifecycle_pod_mark_lost(json_t *pod, const char *node, const char *since, const char *now)
{
        const char *name = member_string(pod, "metadata", "name");
        char message[1024];
        json_t *copy, *status;
        int r;

        if (xp_streq0(member_string(pod, "status", "phase"), "Failed"))
                return 0;
        snprintf(message,
                 sizeof message,
                 "Node %s which was running pod %s is unresponsive since %s",
                 node,
                 name ? name : "",
                 since);
        copy = json_deep_copy(pod);
        if (!copy)
                return -ENOMEM;
        status = object_member(copy, "status");
        r = status && json_object_set_new(status, "phase", json_string("Failed")) >= 0 &&
                    json_object_set_new(status, "reason", json_string("NodeLost")) >= 0 &&
                    json_object_set_new(status, "message", json_string(message)) >= 0
                ? 0
                : -ENOMEM;
        if (r >= 0)
                r = set_condition(copy, "Ready", "False", "NodeLost", message, now);
        if (r >= 0)
                r = json_object_update(pod, copy) < 0 ? -ENOMEM : 1;
        json_decref(copy);
        return r;
}

int xp_lifecycle_pod_mark_disrupted(json_t *pod,
                                    const char *reason,
                                    const char *message,
                                    const char *now)
{
        return set_condition(pod, "DisruptionTarget", "True", reason, message, now);
}

int xp_lifecycle_pod_clear_disrupted(json_t *pod, const char *now)
{
        json_t *c = find_condition(pod, "DisruptionTarget");

        if (!c || !xp_streq0(json_string_value(json_object_get(c, "status")), "True"))
                return 0;
        /* as UpdatePodCondition with a condition of type and status only: the rest goes */
        (void)json_object_del(c, "reason");
        (void)json_object_del(c, "message");
        return json_object_set_new(c, "status", json_string("False")) < 0 ||
                       json_object_set_new(c, "lastTransitionTime", json_string(now)) < 0
                   ? -ENOMEM
                   : 1;
}
