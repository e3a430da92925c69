/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HorizontalPodAutoscaler controller's loop (xpool/autoscaler.h): an informer over the
 * autoscalers queues each one when it is new or its spec changed, and each sync queues it again
 * one sync period later, as kube-controller-manager's resync does. Status writes (ours) do not
 * queue it: they would turn the period into a busy loop.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "controller.h"
#include "hpa_ctl.h"
#include "informer.h"
#include "workqueue.h"
#include "xpool/doc.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/registry.h"

#define RETRY_MIN_MS 500
#define RETRY_MAX_MS 30000

static void key_of(const json_t *hpa, char *buf, size_t size)
{
        snprintf(buf,
                 size,
                 "%s/%s",
                 xp_json_str_at(hpa, "metadata.namespace", ""),
                 xp_json_str_at(hpa, "metadata.name", ""));
}

static void on_add(void *userdata, const json_t *hpa, uint64_t version)
{
        struct xp_autoscaler *c = userdata;
        char key[512];

        (void)version;
        key_of(hpa, key, sizeof(key));
        xp_workqueue_add(c->queue, key);
}

/* A spec change is synced at once; a status write is not news. */
static void on_update(void *userdata, const json_t *hpa, uint64_t version)
{
        struct xp_autoscaler *c = userdata;
        struct hpa_state *s;
        char key[512];

        (void)version;
        key_of(hpa, key, sizeof(key));
        s = xp_map_get(&c->states, key);
        if (!s || s->generation != xp_json_int_at(hpa, "metadata.generation", 0))
                xp_workqueue_add(c->queue, key);
}

static void on_delete(void *userdata, const json_t *hpa, uint64_t version)
{
        struct xp_autoscaler *c = userdata;
        char key[512];

        (void)version;
        key_of(hpa, key, sizeof(key));
        hpa_state_drop(c, key);
}

static const struct xp_informer_handler followed[] = {
    {.resource = "horizontalpodautoscalers",
     .add = on_add,
     .update = on_update,
     .delete = on_delete},
};

struct hpa_state *hpa_state_of(struct xp_autoscaler *c, const char *key)
{
        struct hpa_state *s = xp_map_get(&c->states, key);

        if (s)
                return s;
        s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->key = strdup(key);
        if (!s->key || xp_map_put(&c->states, s->key, s) < 0) {
                free(s->key);
                free(s);
                return NULL;
        }
        return s;
}

static void state_free(struct hpa_state *s)
{
        xp_hpa_history_done(&s->history);
        free(s->key);
        free(s);
}

void hpa_state_drop(struct xp_autoscaler *c, const char *key)
{
        struct hpa_state *s = xp_map_del(&c->states, key);

        if (s)
                state_free(s);
}

void hpa_event(struct xp_autoscaler *c,
               const json_t *hpa,
               const char *type,
               const char *reason,
               const char *fmt,
               ...)
{
        char message[1024];
        struct xp_error err = {0};
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        struct xp_registry_event event = {
            .kind = "HorizontalPodAutoscaler",
            .namespace = xp_json_str_at(hpa, "metadata.namespace", ""),
            .name = xp_json_str_at(hpa, "metadata.name", ""),
            .uid = xp_json_str_at(hpa, "metadata.uid", NULL),
            .component = "horizontal-pod-autoscaler",
            .type = type,
            .reason = reason,
            .message = message,
        };
        if (xp_registry_event_record(c->registry, &event, &err) < 0)
                xp_log(LOG_DEBUG, "autoscaler: event %s not recorded: %s", reason, err.msg);
}

static int64_t autoscaler_work(void *userdata)
{
        struct xp_autoscaler *c = userdata;
        const char *key;

        while (xp_workqueue_get(c->queue, &key) > 0) {
                int r = hpa_sync(c, key);

                if (r < 0) {
                        xp_log(LOG_DEBUG, "autoscaler: %s: %s, retried", key, strerror(-r));
                        xp_workqueue_add_rate_limited(c->queue, key);
                } else {
                        xp_workqueue_forget(c->queue, key);
                        if (r > 0) /* it still exists: its next period */
                                xp_workqueue_add_after(c->queue, key, c->sync_ms);
                }
                xp_workqueue_done(c->queue, key);
                if (c->loop && xp_controller_stopping(c->loop))
                        break;
        }
        int64_t next = xp_workqueue_next_ms(c->queue);
        return next >= 0 && next < c->sync_ms ? next : c->sync_ms;
}

static const struct xp_controller_ops autoscaler_ops = {
    .name = "horizontal pod autoscaler",
    .work = autoscaler_work,
    .retry_ms = RETRY_MIN_MS,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
};

int xp_autoscaler_new(struct xp_registry *registry,
                      const struct xp_autoscaler_options *options,
                      struct xp_autoscaler **ret,
                      struct xp_error *err)
{
        struct xp_autoscaler *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        c->registry = registry;
        c->clock = options ? options->clock : NULL;
        c->metrics = options ? options->metrics : NULL;
        c->sync_ms = options && options->sync_ms > 0 ? options->sync_ms : XP_HPA_SYNC_S * 1000;
        c->tolerance = options && options->tolerance > 0 ? options->tolerance : XP_HPA_TOLERANCE;
        c->downscale_window_s = options && options->downscale_window_s >= 0
                                    ? options->downscale_window_s
                                    : XP_HPA_DOWNSCALE_WINDOW_S;
        struct xp_workqueue_options queue = {
            .clock = c->clock, .base_delay_ms = RETRY_MIN_MS, .max_delay_ms = RETRY_MAX_MS};
        struct xp_informer_options informer = {
            .store = xp_registry_store(registry),
            .handlers = followed,
            .n_handlers = XP_ELEMENTSOF(followed),
            .userdata = c,
        };
        r = xp_workqueue_new(&queue, &c->queue);
        if (r >= 0)
                r = xp_informer_new(&informer, &c->informer);
        if (r >= 0)
                r = xp_informer_list(c->informer, err);
        if (r < 0) {
                xp_autoscaler_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_autoscaler_start(struct xp_registry *registry,
                        const struct xp_autoscaler_options *options,
                        struct xp_autoscaler **ret,
                        struct xp_error *err)
{
        struct xp_autoscaler *c;
        int r = xp_autoscaler_new(registry, options, &c, err);

        if (r < 0)
                return r;
        r = xp_controller_start(&autoscaler_ops, c->informer, c, &c->loop, err);
        if (r < 0) {
                xp_autoscaler_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_autoscaler_step(struct xp_autoscaler *c, struct xp_error *err)
{
        int r = xp_informer_sync(c->informer, err);

        if (r < 0)
                return r;
        autoscaler_work(c);
        return 0;
}

void xp_autoscaler_free(struct xp_autoscaler *c)
{
        if (!c)
                return;
        xp_controller_stop(c->loop);
        xp_informer_free(c->informer);
        xp_workqueue_free(c->queue);
        for (size_t i = 0; i < c->states.cap; i++)
                if (c->states.values && c->states.values[i])
                        state_free(c->states.values[i]);
        xp_map_done(&c->states);
        free(c);
}
