/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An autoscaler's status as Kubernetes' horizontal controller writes it: observedGeneration,
 * lastScaleTime, currentReplicas, desiredReplicas, currentMetrics and the conditions AbleToScale,
 * ScalingActive and ScalingLimited (a condition keeps its lastTransitionTime while its status
 * stays the same).
 */
#include <errno.h>
#include <string.h>

#include "clock.h"
#include "hpa_ctl.h"
#include "xpool/doc.h"
#include "xpool/registry.h"
#include "xpool/timeutil.h"

struct change {
        const struct hpa_outcome *o;
        char now[XP_RFC3339_MAX];
};

static const json_t *old_condition(const json_t *hpa, const char *type)
{
        const json_t *c;
        size_t i;

        json_array_foreach(xp_json_at(hpa, "status.conditions"),
                           i,
                           c) if (strcmp(xp_json_str_at(c, "type", ""), type) == 0) return c;
        return NULL;
}

static int add_condition(json_t *list,
                         const json_t *hpa,
                         const char *type,
                         const struct xp_hpa_condition *c,
                         const char *now)
{
        const json_t *old = old_condition(hpa, type);
        const char *status = c->status ? "True" : "False";
        const char *since = now;

        if (!c->set) {
                /* not decided this time: what it said before stands */
                return old ? json_array_append(list, (json_t *)old) : 0;
        }
        if (old && strcmp(xp_json_str_at(old, "status", ""), status) == 0)
                since = xp_json_str_at(old, "lastTransitionTime", now);
        return json_array_append_new(list,
                                     json_pack("{s:s, s:s, s:s, s:s, s:s}",
                                               "type",
                                               type,
                                               "status",
                                               status,
                                               "lastTransitionTime",
                                               since,
                                               "reason",
                                               c->reason,
                                               "message",
                                               c->message));
}

static int set_status(json_t *hpa, void *userdata)
{
        const struct change *ch = userdata;
        const struct hpa_outcome *o = ch->o;
        const json_t *last = xp_json_at(hpa, "status.lastScaleTime");
        json_t *conditions = json_array();
        json_t *status;
        int r = conditions ? 0 : -1;

        if (r == 0)
                r = add_condition(conditions, hpa, "AbleToScale", &o->able, ch->now);
        if (r == 0)
                r = add_condition(conditions, hpa, "ScalingActive", &o->active, ch->now);
        if (r == 0)
                r = add_condition(conditions, hpa, "ScalingLimited", &o->limited, ch->now);
        if (r < 0) {
                json_decref(conditions);
                return -ENOMEM;
        }
        status = json_pack("{s:I, s:i, s:i, s:o}",
                           "observedGeneration",
                           (json_int_t)o->generation,
                           "currentReplicas",
                           o->current,
                           "desiredReplicas",
                           o->desired,
                           "conditions",
                           conditions);
        if (!status)
                return -ENOMEM;
        if (o->rescaled)
                r = json_object_set_new(status, "lastScaleTime", json_string(ch->now));
        else if (last)
                r = json_object_set(status, "lastScaleTime", (json_t *)last);
        if (r == 0 && o->metrics && json_array_size(o->metrics) > 0)
                r = json_object_set(status, "currentMetrics", o->metrics);
        if (r < 0) {
                json_decref(status);
                return -ENOMEM;
        }
        if (json_equal(status, json_object_get(hpa, "status"))) {
                json_decref(status);
                return 0;
        }
        return json_object_set_new(hpa, "status", status) < 0 ? -ENOMEM : 1;
}

int hpa_write_status(struct xp_autoscaler *c, const json_t *hpa, const struct hpa_outcome *o)
{
        struct change ch = {.o = o};
        struct xp_error err = {0};
        int r;

        xp_time_format_rfc3339(xp_clock_wall_s(c->clock), ch.now);
        r = xp_registry_change(c->registry,
                               "horizontalpodautoscalers",
                               xp_json_str_at(hpa, "metadata.namespace", ""),
                               xp_json_str_at(hpa, "metadata.name", ""),
                               set_status,
                               &ch,
                               NULL,
                               &err);
        return r == -ENOENT ? 0 : r;
}
