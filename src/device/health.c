/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health watch (device.h): NVML stays loaded with one event set registered for Xid critical
 * errors on every NVIDIA GPU of the inventory, drained without waiting at each poll, so an Xid
 * between two polls is never lost (a fresh event set per discovery would only see events that
 * happen while it exists). Recovery is the driver's word: NVML's GPU recovery action field.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_api.h"
#include "xpool/device.h"
#include "xpool/log.h"
#include "xpool/strutil.h"

/* Events drained in one poll, so a flood cannot keep the caller busy. */
#define HEALTH_EVENTS_MAX 1024

struct watched_gpu {
        char *id;
        struct nvml_device *handle;
        bool xid_unhealthy; /* made Unhealthy by an Xid: the driver may bring it back */
        int64_t since_ms;   /* when, for the first recheck */
        int64_t last_check_ms;
};

struct xp_device_health_watch {
        struct nvml_api api; /* api.dl NULL: nothing watched */
        struct nvml_event_set *set;
        struct watched_gpu *gpus;
        size_t n;
        int64_t recheck_ms;
};

void xp_device_health_watch_free(struct xp_device_health_watch *w)
{
        if (!w)
                return;
        if (w->set)
                w->api.event_set_free(w->set);
        for (size_t i = 0; i < w->n; i++)
                free(w->gpus[i].id);
        free(w->gpus);
        xp_nvml_api_close(&w->api);
        free(w);
}

static bool is_nvml_gpu(const struct xp_device *d)
{
        return d->id && !d->simulated && xp_streq0(d->resource_name, "nvidia.com/gpu") &&
               strncmp(d->id, "GPU-", 4) == 0;
}

static int watch_gpus(struct xp_device_health_watch *w, const struct xp_node_inventory *inv)
{
        w->gpus = calloc(inv->devices.n ? inv->devices.n : 1, sizeof(*w->gpus));
        if (!w->gpus)
                return -ENOMEM;
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];
                struct nvml_device *h = NULL;
                enum nvml_return nr;

                if (!is_nvml_gpu(d))
                        continue;
                nr = w->api.get_handle_by_uuid(d->id, &h);
                if (nr != NVML_SUCCESS || !h) {
                        xp_debug(
                            "nvml", "GPU %s: no handle: %s", d->id, xp_nvml_strerror(&w->api, nr));
                        continue;
                }
                nr = w->api.register_events(h, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, w->set);
                if (nr != NVML_SUCCESS && nr != NVML_ERROR_NOT_SUPPORTED)
                        xp_debug("nvml",
                                 "GPU %s: cannot watch Xid events: %s",
                                 d->id,
                                 xp_nvml_strerror(&w->api, nr));
                w->gpus[w->n] = (struct watched_gpu){.handle = h, .since_ms = 0};
                w->gpus[w->n].id = strdup(d->id);
                if (!w->gpus[w->n].id)
                        return -ENOMEM;
                /* an Xid that discovery saw counts as one the driver may clear */
                w->gpus[w->n].xid_unhealthy = d->health == XP_DEVICE_UNHEALTHY &&
                                              d->health_reason &&
                                              strncmp(d->health_reason, "Xid ", 4) == 0;
                w->n++;
        }
        return 0;
}

int xp_device_health_watch_new(const struct xp_discovery_config *config,
                               const struct xp_node_inventory *inventory,
                               int64_t recheck_ms,
                               struct xp_device_health_watch **ret,
                               struct xp_error *err)
{
        _cleanup_(xp_device_health_watch_freep) struct xp_device_health_watch *w = NULL;
        bool any = false;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return xp_errorf(err, -ENOMEM, "out of memory");
        w->recheck_ms = recheck_ms > 0 ? recheck_ms : 5000;
        for (size_t i = 0; i < inventory->devices.n; i++)
                any = any || is_nvml_gpu(&inventory->devices.items[i]);
        if (any &&
            xp_nvml_api_open(xp_nvml_library(config ? config->nvml_library : NULL), &w->api) == 0) {
                if (!w->api.get_handle_by_uuid || !w->api.event_set_create ||
                    !w->api.register_events || !w->api.event_set_wait || !w->api.event_set_free ||
                    w->api.event_set_create(&w->set) != NVML_SUCCESS) {
                        xp_debug("nvml",
                                 "this NVML cannot watch Xid events: health is discovery's");
                        w->set = NULL;
                        xp_nvml_api_close(&w->api);
                } else {
                        r = watch_gpus(w, inventory);
                        if (r < 0)
                                return xp_errorf(err, r, "out of memory");
                }
        }
        *ret = TAKE_PTR(w);
        return 0;
}

static struct xp_device *find_device(struct xp_node_inventory *inv, const char *id)
{
        for (size_t i = 0; i < inv->devices.n; i++)
                if (xp_streq0(inv->devices.items[i].id, id))
                        return &inv->devices.items[i];
        return NULL;
}

static int set_health(struct xp_device *d, enum xp_device_health health, const char *reason)
{
        char *copy = NULL;

        if (reason && !(copy = strdup(reason)))
                return -ENOMEM;
        free(d->health_reason);
        d->health_reason = copy;
        d->health = health;
        return 0;
}

static int
drain_events(struct xp_device_health_watch *w, struct xp_node_inventory *inv, int64_t now_ms)
{
        int changed = 0;

        for (unsigned k = 0; k < HEALTH_EVENTS_MAX; k++) {
                struct nvml_event_data event = {0};
                char reason[128];

                if (w->api.event_set_wait(w->set, &event, 0) != NVML_SUCCESS)
                        break; /* TIMEOUT: none pending */
                if (!(event.event_type & NVML_EVENT_TYPE_XID_CRITICAL_ERROR) ||
                    !xp_nvml_xid_is_critical(event.event_data))
                        continue;
                for (size_t i = 0; i < w->n; i++) {
                        struct watched_gpu *g = &w->gpus[i];
                        struct xp_device *d;

                        if (g->handle != event.device || !(d = find_device(inv, g->id)))
                                continue;
                        g->xid_unhealthy = true;
                        g->since_ms = g->last_check_ms = now_ms;
                        if (d->health == XP_DEVICE_UNHEALTHY)
                                continue;
                        xp_nvml_xid_reason(event.event_data, reason);
                        if (set_health(d, XP_DEVICE_UNHEALTHY, reason) < 0)
                                return -ENOMEM;
                        changed++;
                }
        }
        return changed;
}

/* The driver's recovery action for a GPU, or -1 when it cannot say. */
static int recovery_action(struct xp_device_health_watch *w, struct nvml_device *h)
{
        struct nvml_field_value v = {.field_id = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION};

        if (!w->api.get_field_values || w->api.get_field_values(h, 1, &v) != NVML_SUCCESS ||
            v.nvml_return != NVML_SUCCESS)
                return -1;
        return (int)v.value.ui_val;
}

static int recheck(struct xp_device_health_watch *w, struct xp_node_inventory *inv, int64_t now_ms)
{
        int changed = 0;

        for (size_t i = 0; i < w->n; i++) {
                struct watched_gpu *g = &w->gpus[i];
                struct xp_device *d = find_device(inv, g->id);

                if (!g->xid_unhealthy || !d || now_ms - g->last_check_ms < w->recheck_ms)
                        continue;
                g->last_check_ms = now_ms;
                if (recovery_action(w, g->handle) != NVML_GPU_RECOVERY_ACTION_NONE)
                        continue;
                g->xid_unhealthy = false;
                if (d->health != XP_DEVICE_UNHEALTHY)
                        continue;
                if (set_health(d, XP_DEVICE_HEALTHY, NULL) < 0)
                        return -ENOMEM;
                changed++;
        }
        return changed;
}

int xp_device_health_poll(struct xp_device_health_watch *w,
                          struct xp_node_inventory *inventory,
                          int64_t now_ms)
{
        int a, b;

        if (!w || !w->set)
                return 0;
        a = drain_events(w, inventory, now_ms);
        if (a < 0)
                return a;
        b = recheck(w, inventory, now_ms);
        if (b < 0)
                return b;
        return a + b;
}
