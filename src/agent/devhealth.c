/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods on devices that turned unhealthy (devhealth.h). Level-triggered: every sample, each pod
 * the agent's watch shows on an Unhealthy device and not yet Failed on the server gets the
 * failed status again (the status writer keeps one write per pod), so a write that a later one
 * of the pod sync replaced before it landed is made again; the Event goes once per pod.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "devhealth.h"
#include "xpool/codec.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/placement.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define REASON            "DeviceUnhealthy"
#define DISRUPTION_TARGET "DisruptionTarget"
#define DEVICE_CONDITION  "xpool.io/DeviceUnhealthy"

struct xp_agent_devhealth {
        pthread_mutex_t lock;                /* guards what follows */
        struct xp_node_inventory *inventory; /* health as last seen */
        uint64_t generation, published;      /* of the health; the one the Node says */
        bool enabled;                        /* pods are failed (the writers exist) */
        json_t *failed; /* uids of the pods failed here (their Event is written) */
};

int xp_agent_devhealth_new(const struct xp_node_inventory *inventory,
                           struct xp_agent_devhealth **ret)
{
        struct xp_agent_devhealth *h = calloc(1, sizeof(*h));
        json_t *json = NULL;
        int r;

        if (!h)
                return -ENOMEM;
        r = xp_node_inventory_to_json(inventory, &json);
        if (r >= 0)
                r = xp_node_inventory_from_json(json, NULL, XP_DECODE_TRUSTED, &h->inventory, NULL);
        json_decref(json);
        h->failed = json_object();
        if (r < 0 || !h->failed) {
                xp_node_inventory_free(h->inventory);
                json_decref(h->failed);
                free(h);
                return r < 0 ? r : -ENOMEM;
        }
        pthread_mutex_init(&h->lock, NULL);
        *ret = h;
        return 0;
}

void xp_agent_devhealth_free(struct xp_agent_devhealth *h)
{
        if (!h)
                return;
        pthread_mutex_destroy(&h->lock);
        xp_node_inventory_free(h->inventory);
        json_decref(h->failed);
        free(h);
}

void xp_agent_devhealth_enable(struct xp_agent_devhealth *h, bool on)
{
        if (!h)
                return;
        pthread_mutex_lock(&h->lock);
        h->enabled = on;
        pthread_mutex_unlock(&h->lock);
}

bool xp_agent_devhealth_changed(struct xp_agent_devhealth *h)
{
        bool changed;

        if (!h)
                return false;
        pthread_mutex_lock(&h->lock);
        changed = h->generation != h->published;
        pthread_mutex_unlock(&h->lock);
        return changed;
}

/* Records the sample's health in the copy: true when a device is Unhealthy. Under the lock. */
static bool record(struct xp_agent_devhealth *h, const struct xp_agent_device_health *s, size_t n)
{
        bool any = false;

        for (size_t i = 0; i < n && i < h->inventory->devices.n; i++) {
                struct xp_device *d = &h->inventory->devices.items[i];
                char *reason;

                any = any || s[i].health == XP_DEVICE_UNHEALTHY;
                if (d->health == s[i].health &&
                    strcmp(d->health_reason ? d->health_reason : "", s[i].reason) == 0)
                        continue;
                reason = s[i].reason[0] ? strdup(s[i].reason) : NULL;
                if (s[i].reason[0] && !reason)
                        continue;
                if (d->health != s[i].health)
                        xp_log(s[i].health == XP_DEVICE_UNHEALTHY ? LOG_WARNING : LOG_INFO,
                               "agent: device %s is %s%s%s",
                               d->id,
                               xp_device_health_to_string(s[i].health),
                               reason ? ": " : "",
                               reason ? reason : "");
                free(d->health_reason);
                d->health_reason = reason;
                d->health = s[i].health;
                h->generation++;
        }
        return any;
}

/* The first device of the pod's placement that is Unhealthy now, or NULL. Under the lock. */
static const struct xp_device *broken_device(struct xp_agent_devhealth *h, json_t *pod)
{
        const char *text = json_string_value(
            json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                            XP_PLACEMENT_ANNOTATION));
        _cleanup_(xp_placement_done) struct xp_placement placement = {0};

        if (!text || xp_placement_from_json(text, &placement, NULL) < 0)
                return NULL;
        for (size_t k = 0; k < placement.devices.n; k++)
                for (size_t i = 0; i < h->inventory->devices.n; i++) {
                        const struct xp_device *d = &h->inventory->devices.items[i];

                        if (d->health == XP_DEVICE_UNHEALTHY &&
                            xp_streq0(d->id, placement.devices.items[k].id))
                                return d;
                }
        return NULL;
}

static json_t *condition(const char *type, const char *message, const char *now)
{
        return json_pack("{s:s, s:s, s:s, s:s, s:s}",
                         "type",
                         type,
                         "status",
                         "True",
                         "reason",
                         REASON,
                         "message",
                         message,
                         "lastTransitionTime",
                         now);
}

/* The pod's status as the server has it, failed for message: NULL on -ENOMEM. */
static json_t *failed_status(json_t *pod, const char *message)
{
        json_t *old = json_object_get(pod, "status");
        json_t *status = old ? json_deep_copy(old) : json_object();
        json_t *conds = json_array(), *c;
        char now[XP_RFC3339_MAX];
        size_t i;

        xp_time_format_rfc3339(xp_agent_now_ns() / 1000000000, now);
        json_array_foreach(json_object_get(old, "conditions"), i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));

                if (!xp_streq0(type, DISRUPTION_TARGET) && !xp_streq0(type, DEVICE_CONDITION) &&
                    json_array_append(conds, c) < 0)
                        goto fail;
        }
        if (!status || !conds ||
            json_array_append_new(conds, condition(DISRUPTION_TARGET, message, now)) < 0 ||
            json_array_append_new(conds, condition(DEVICE_CONDITION, message, now)) < 0 ||
            json_object_set_new(status, "conditions", conds) < 0 ||
            json_object_set_new(status, "phase", json_string("Failed")) < 0 ||
            json_object_set_new(status, "reason", json_string(REASON)) < 0 ||
            json_object_set_new(status, "message", json_string(message)) < 0) {
                json_decref(status);
                return NULL;
        }
        return status;
fail:
        json_decref(conds);
        json_decref(status);
        return NULL;
}

/* Fails one pod on device d: its status and, the first time, an Event. Both locks held. */
static void fail_pod(struct xp_agent *agent,
                     struct xp_agent_devhealth *h,
                     json_t *pod,
                     const struct xp_device *d)
{
        json_t *meta = json_object_get(pod, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *uid = json_string_value(json_object_get(meta, "uid"));
        char message[512];
        json_t *status;

        if (!ns || !name || !uid)
                return;
        snprintf(message,
                 sizeof(message),
                 "Pod was failed: device %s (%s) is unhealthy%s%s",
                 d->id,
                 d->resource_name ? d->resource_name : "",
                 d->health_reason ? ": " : "",
                 d->health_reason ? d->health_reason : "");
        status = failed_status(pod, message);
        if (!status || xp_agent_status_put(agent->status, ns, name, uid, status) < 0) {
                xp_log(LOG_ERR, "agent: failing pod %s/%s: out of memory", ns, name);
                return;
        }
        if (json_object_get(h->failed, uid))
                return;
        xp_log(LOG_WARNING, "agent: pod %s/%s: %s", ns, name, message);
        (void)xp_agent_event(agent->events, ns, name, uid, "Warning", REASON, message);
        (void)json_object_set_new(h->failed, uid, json_true());
}

/* Whether the pod is over or going on the server: nothing to fail. */
static bool over(json_t *pod)
{
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

        return xp_streq0(phase, "Failed") || xp_streq0(phase, "Succeeded") ||
               json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
}

void xp_agent_devhealth_update(void *userdata, const struct xp_agent_device_health *s, size_t n)
{
        struct xp_agent *agent = userdata;
        struct xp_agent_devhealth *h = agent->devhealth;
        const char *uid;
        json_t *pod;
        void *tmp;

        pthread_mutex_lock(&h->lock);
        /* once the Node says the device is unhealthy: its replacements go elsewhere */
        if (!record(h, s, n) || !h->enabled || h->generation != h->published) {
                pthread_mutex_unlock(&h->lock);
                return;
        }
        pthread_mutex_lock(&agent->pods.lock);
        json_object_foreach(agent->pods.pods, uid, pod)
        {
                const struct xp_device *d =
                    json_is_object(pod) && !over(pod) ? broken_device(h, pod) : NULL;

                if (d)
                        fail_pod(agent, h, pod, d);
        }
        /* the pods gone from the server need no memory of their Event */
        json_object_foreach_safe(h->failed, tmp, uid, pod)
        {
                if (!json_object_get(agent->pods.pods, uid))
                        json_object_del(h->failed, uid);
        }
        pthread_mutex_unlock(&agent->pods.lock);
        pthread_mutex_unlock(&h->lock);
}

/* allocatable: each device resource's count of devices not Unhealthy. Under the lock. */
static int add_allocatable(struct xp_agent_devhealth *h, json_t *status)
{
        json_t *alloc = json_object();
        char buf[32];

        if (!alloc || json_object_set_new(status, "allocatable", alloc) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < h->inventory->devices.n; i++) {
                const struct xp_device *d = &h->inventory->devices.items[i];
                json_t *have;
                long long n;

                if (!d->resource_name || !*d->resource_name)
                        continue;
                have = json_object_get(alloc, d->resource_name);
                n = have ? strtoll(json_string_value(have), NULL, 10) : 0;
                snprintf(buf, sizeof(buf), "%lld", n + (d->health != XP_DEVICE_UNHEALTHY));
                if (json_object_set_new(alloc, d->resource_name, json_string(buf)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int xp_agent_devhealth_node_status(struct xp_agent_devhealth *h,
                                   json_t *status,
                                   uint64_t *ret_generation)
{
        json_t *inv = NULL;
        int r = 0;

        if (!h)
                return 0;
        pthread_mutex_lock(&h->lock);
        *ret_generation = h->generation;
        if (h->generation != h->published) {
                r = add_allocatable(h, status);
                if (r >= 0)
                        r = xp_node_inventory_to_json(h->inventory, &inv);
                if (r >= 0)
                        r = json_object_set_new(status, "xpool", inv) < 0 ? -ENOMEM : 1;
        }
        pthread_mutex_unlock(&h->lock);
        return r;
}

void xp_agent_devhealth_published(struct xp_agent_devhealth *h, uint64_t generation)
{
        if (!h)
                return;
        pthread_mutex_lock(&h->lock);
        if (generation > h->published)
                h->published = generation;
        pthread_mutex_unlock(&h->lock);
}
