/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a ReplicaSet reads of its pods, and the order in which it deletes them: Kubernetes'
 * ActivePodsWithRanks, so that scaling down removes the pods that cost least to lose.
 */
#include <stdlib.h>
#include <string.h>

#include "replicaset.h"
#include "xpool/timeutil.h"

static enum xp_rs_phase phase_of(const char *phase)
{
        static const struct {
                const char *name;
                enum xp_rs_phase phase;
        } phases[] = {
            {"Running", XP_RS_PHASE_RUNNING},
            {"Succeeded", XP_RS_PHASE_SUCCEEDED},
            {"Failed", XP_RS_PHASE_FAILED},
            {"Unknown", XP_RS_PHASE_UNKNOWN},
        };

        for (size_t i = 0; phase && i < sizeof(phases) / sizeof(phases[0]); i++)
                if (strcmp(phase, phases[i].name) == 0)
                        return phases[i].phase;
        return XP_RS_PHASE_PENDING;
}

static int64_t time_of(const json_t *value)
{
        int64_t t = 0;

        if (!json_is_string(value) || xp_time_parse_rfc3339(json_string_value(value), &t) < 0)
                return 0;
        return t;
}

static void read_status(const json_t *status, struct xp_rs_pod *pod)
{
        const json_t *conditions = json_object_get(status, "conditions");
        const json_t *statuses = json_object_get(status, "containerStatuses");
        size_t i;
        json_t *c;

        json_array_foreach(conditions, i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *value = json_string_value(json_object_get(c, "status"));

                if (type && value && strcmp(type, "Ready") == 0) {
                        pod->ready = strcmp(value, "True") == 0;
                        pod->ready_since_s = time_of(json_object_get(c, "lastTransitionTime"));
                }
        }
        json_array_foreach(statuses, i, c)
        {
                json_int_t r = json_integer_value(json_object_get(c, "restartCount"));

                if (r > pod->restarts)
                        pod->restarts = r > INT32_MAX ? INT32_MAX : (int32_t)r;
        }
}

void xp_rs_pod_read(const json_t *object, struct xp_rs_pod *pod)
{
        const json_t *meta = json_object_get(object, "metadata");
        const json_t *status = json_object_get(object, "status");
        const char *node =
            json_string_value(json_object_get(json_object_get(object, "spec"), "nodeName"));

        *pod = (struct xp_rs_pod){
            .object = object,
            .name = json_string_value(json_object_get(meta, "name")),
            .assigned = node && *node,
            .phase = phase_of(json_string_value(json_object_get(status, "phase"))),
            .terminating = json_object_get(meta, "deletionTimestamp") != NULL,
            .created_s = time_of(json_object_get(meta, "creationTimestamp")),
        };
        read_status(status, pod);
}

bool xp_rs_pod_active(const struct xp_rs_pod *pod)
{
        return pod->phase != XP_RS_PHASE_SUCCEEDED && pod->phase != XP_RS_PHASE_FAILED &&
               !pod->terminating;
}

bool xp_rs_pod_available(const struct xp_rs_pod *pod, int32_t min_ready_s, int64_t now_s)
{
        if (!pod->ready)
                return false;
        if (min_ready_s <= 0)
                return true;
        return pod->ready_since_s != 0 && pod->ready_since_s + min_ready_s <= now_s;
}

static int compare_bool(bool a, bool b)
{
        return (a > b) - (a < b);
}

/* A time of 0 (unknown) sorts before every known one, as Kubernetes' empty timestamps do. */
static int newer_first(int64_t a, int64_t b)
{
        if (a == b)
                return 0;
        if (a == 0 || b == 0)
                return a == 0 ? -1 : 1;
        return a > b ? -1 : 1;
}

int xp_rs_pod_delete_order(const struct xp_rs_pod *a, const struct xp_rs_pod *b)
{
        int r;

        if ((r = compare_bool(a->assigned, b->assigned)))
                return r;
        /* Pending (0) < Unknown (1) < Running (2): the enum's order */
        if (a->phase != b->phase)
                return a->phase < b->phase ? -1 : 1;
        if ((r = compare_bool(a->ready, b->ready)))
                return r;
        if (a->ready && (r = newer_first(a->ready_since_s, b->ready_since_s)))
                return r;
        if (a->restarts != b->restarts)
                return a->restarts > b->restarts ? -1 : 1;
        if ((r = newer_first(a->created_s, b->created_s)))
                return r;
        return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

static int compare_pods(const void *a, const void *b)
{
        return xp_rs_pod_delete_order(a, b);
}

void xp_rs_pods_sort_for_deletion(struct xp_rs_pod *pods, size_t n)
{
        if (n > 1)
                if (n > 1) /* an empty array may be NULL, which qsort may not take */
                        qsort(pods, n, sizeof(*pods), compare_pods);
}
