/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history feed (history_feed.h). It keeps, per node, what it offers and which device kind
 * serves each resource, and per active pod its node and what it asks for: JSON objects used as
 * maps, so that the whole state is a few small documents and a recording is one pass over them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "controller.h"
#include "informer.h"
#include "xpool/history.h"
#include "xpool/history_feed.h"
#include "xpool/lifecycle.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/quantity.h"
#include "xpool/timeutil.h"

#define TICK_MS 500 /* the longest sleep of the loop */
/* Changes are recorded at most this often within a step: each recording tallies every node and
 * pod, and once per write that was most of the server's CPU under a burst of bindings. */
#define RECORD_MIN_MS 1000
/* ... and at most RECORD_SHARE times as long as the last recording took, so that recording stays
 * within 2% of a core however large the cluster (at 5,000 nodes one took about 50 ms, and once a
 * second it was 15% of the server's CPU while bindings streamed in). */
#define RECORD_SHARE 50

struct xp_history_feed {
        struct xp_history *history;
        const struct xp_clock *clock;
        struct xp_informer *informer;
        struct xp_controller *loop; /* NULL when a test steps it */
        json_t *nodes; /* name -> {"offer": {resource: amount}, "kinds": {resource: kind}} */
        json_t *pods;  /* namespace/name -> {"node": name, "asks": {resource: amount}} */
        bool dirty;    /* changed since the last recording */
        int64_t last_step;
        int64_t recorded_ms;   /* the last recording, on the clock's monotonic time */
        int64_t record_gap_ms; /* the shortest gap to the next recording within a step */
};

/* A quantity in its base units (cores, bytes, devices); false when it does not read. */
static bool amount(const json_t *value, double *ret)
{
        struct xp_quantity q;
        int64_t milli;

        if (json_is_number(value)) {
                *ret = json_number_value(value);
                return true;
        }
        if (!json_is_string(value) || xp_quantity_parse(json_string_value(value), &q, NULL) < 0 ||
            xp_quantity_to_milli(&q, &milli) < 0)
                return false;
        *ret = (double)milli / 1000.0;
        return true;
}

/* Adds each amount of from into the map to (resource -> number). */
static void add_amounts(json_t *to, const json_t *from, bool only_new)
{
        const char *resource;
        json_t *value;
        double v;

        json_object_foreach((json_t *)from, resource, value)
        {
                json_t *have = json_object_get(to, resource);

                if ((only_new && have) || !amount(value, &v))
                        continue;
                json_object_set_new(to, resource, json_real(json_number_value(have) + v));
        }
}

/* What a pod asks for: requests, or limits where a container has no request for it. */
static json_t *pod_asks(const json_t *pod)
{
        json_t *asks = json_object(), *container;
        size_t i;

        json_array_foreach(
            json_object_get(json_object_get(pod, "spec"), "containers"), i, container)
        {
                json_t *resources = json_object_get(container, "resources");
                json_t *mine = json_object();

                add_amounts(mine, json_object_get(resources, "requests"), false);
                add_amounts(mine, json_object_get(resources, "limits"), true);
                add_amounts(asks, mine, false);
                json_decref(mine);
        }
        json_object_set_new(asks, "pods", json_real(1));
        return asks;
}

static void pod_key(const json_t *pod, char *buf, size_t size)
{
        const json_t *meta = json_object_get(pod, "metadata");

        snprintf(buf,
                 size,
                 "%s/%s",
                 json_string_value(json_object_get(meta, "namespace")) ?: "",
                 json_string_value(json_object_get(meta, "name")) ?: "");
}

static void on_pod(void *userdata, const json_t *pod, uint64_t version)
{
        struct xp_history_feed *feed = userdata;
        char key[1024];

        (void)version;
        pod_key(pod, key, sizeof key);
        if (!xp_lifecycle_pod_active(pod)) {
                if (json_object_del(feed->pods, key) == 0)
                        feed->dirty = true;
                return;
        }
        json_object_set_new(feed->pods,
                            key,
                            json_pack("{s:O,s:o}",
                                      "node",
                                      json_object_get(json_object_get(pod, "spec"), "nodeName"),
                                      "asks",
                                      pod_asks(pod)));
        feed->dirty = true;
}

static void on_pod_deleted(void *userdata, const json_t *pod, uint64_t version)
{
        struct xp_history_feed *feed = userdata;
        char key[1024];

        (void)version;
        pod_key(pod, key, sizeof key);
        json_object_del(feed->pods, key);
        feed->dirty = true;
}

/* The node's devices: the kind serving each resource, and their published utilisation. */
static json_t *node_devices(struct xp_history_feed *feed, const char *node, const json_t *xpool)
{
        json_t *kinds = json_object(), *device;
        int64_t now = xp_clock_wall_s(feed->clock);
        size_t i;

        json_array_foreach(json_object_get(xpool, "devices"), i, device)
        {
                const char *resource = json_string_value(json_object_get(device, "resourceName"));
                const char *kind = json_string_value(json_object_get(device, "kind"));
                const char *id = json_string_value(json_object_get(device, "id"));
                json_t *util =
                    json_object_get(json_object_get(device, "metrics"), "utilizationPercent");

                if (resource && kind)
                        json_object_set_new(kinds, resource, json_string(kind));
                if (id && json_is_number(util))
                        (void)xp_history_record_usage(
                            feed->history, now, node, id, kind, json_number_value(util));
        }
        return kinds;
}

static void on_node(void *userdata, const json_t *node, uint64_t version)
{
        struct xp_history_feed *feed = userdata;
        const char *name =
            json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
        const json_t *status = json_object_get(node, "status");
        json_t *offer = json_object();

        (void)version;
        if (!name) {
                json_decref(offer);
                return;
        }
        add_amounts(offer, json_object_get(status, "allocatable"), false);
        json_object_set_new(feed->nodes,
                            name,
                            json_pack("{s:o,s:o}",
                                      "offer",
                                      offer,
                                      "kinds",
                                      node_devices(feed, name, json_object_get(status, "xpool"))));
        feed->dirty = true;
}

static void on_node_deleted(void *userdata, const json_t *node, uint64_t version)
{
        struct xp_history_feed *feed = userdata;
        const char *name =
            json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));

        (void)version;
        if (name)
                json_object_del(feed->nodes, name);
        feed->dirty = true;
}

static void on_reset(void *userdata)
{
        struct xp_history_feed *feed = userdata;

        json_object_clear(feed->nodes);
        json_object_clear(feed->pods);
        feed->dirty = true;
}

static const struct xp_informer_handler followed[] = {
    {.resource = "nodes", .add = on_node, .update = on_node, .delete = on_node_deleted},
    {.resource = "pods", .add = on_pod, .update = on_pod, .delete = on_pod_deleted},
};

/* ---- recording ------------------------------------------------------------------------------ */

/* The figures of one recording: one entry per (node, resource), found through an index. */
struct tally {
        struct xp_history_alloc *items;
        size_t n, cap;
        json_t *index; /* "node\nresource" -> position */
};

static int tally_add(struct tally *t,
                     const char *node,
                     const char *resource,
                     const char *kind,
                     double allocated,
                     double capacity)
{
        char key[1024];
        json_t *at;
        struct xp_history_alloc *item;

        snprintf(key, sizeof key, "%s\n%s", node, resource);
        at = json_object_get(t->index, key);
        if (at) {
                item = &t->items[json_integer_value(at)];
        } else {
                if (t->n == t->cap) {
                        size_t cap = t->cap ? t->cap * 2 : 32;
                        struct xp_history_alloc *items = realloc(t->items, cap * sizeof *items);

                        if (!items)
                                return -ENOMEM;
                        t->items = items;
                        t->cap = cap;
                }
                if (json_object_set_new(t->index, key, json_integer((json_int_t)t->n)) < 0)
                        return -ENOMEM;
                item = &t->items[t->n++];
                *item = (struct xp_history_alloc){.resource = resource, .kind = "", .node = node};
        }
        if (kind && !item->kind[0])
                item->kind = kind;
        item->allocated += allocated;
        item->capacity += capacity;
        return 0;
}

/* Adds amounts (resource -> number) on node and in total, as allocated or as capacity. */
static int tally_amounts(
    struct tally *t, const char *node, const json_t *amounts, const json_t *kinds, bool allocated)
{
        const char *resource;
        json_t *value;
        int r = 0;

        json_object_foreach((json_t *)amounts, resource, value)
        {
                const char *kind = json_string_value(json_object_get(kinds, resource));
                double v = json_number_value(value);
                double a = allocated ? v : 0, c = allocated ? 0 : v;

                if (r >= 0 && node[0])
                        r = tally_add(t, node, resource, kind, a, c);
                if (r >= 0)
                        r = tally_add(t, "", resource, kind, a, c);
        }
        return r;
}

static int record(struct xp_history_feed *feed, int64_t now)
{
        struct tally t = {.index = json_object()};
        const char *key;
        json_t *value;
        int r = t.index ? 0 : -ENOMEM;

        json_object_foreach(feed->nodes, key, value) if (r >= 0) r = tally_amounts(
            &t, key, json_object_get(value, "offer"), json_object_get(value, "kinds"), false);
        json_object_foreach(feed->pods, key, value)
        {
                const char *node = json_string_value(json_object_get(value, "node")) ?: "";
                json_t *kinds = json_object_get(json_object_get(feed->nodes, node), "kinds");

                if (r >= 0)
                        r = tally_amounts(&t, node, json_object_get(value, "asks"), kinds, true);
        }
        if (r >= 0)
                r = xp_history_record_alloc(feed->history, now, t.items, t.n);
        free(t.items);
        json_decref(t.index);
        return r;
}

static int64_t feed_work(void *userdata)
{
        struct xp_history_feed *feed = userdata;
        int64_t now = xp_clock_wall_s(feed->clock), step = now / XP_HISTORY_STEP_S;
        int64_t mono = xp_clock_monotonic_ms(feed->clock);
        int r;

        if (step != feed->last_step ||
            (feed->dirty && mono - feed->recorded_ms >= feed->record_gap_ms)) {
                int64_t took = xp_monotonic_ns();

                r = record(feed, now);
                took = (xp_monotonic_ns() - took) / 1000000;
                feed->record_gap_ms =
                    took * RECORD_SHARE > RECORD_MIN_MS ? took * RECORD_SHARE : RECORD_MIN_MS;
                if (r < 0 && r != -ENOSPC)
                        xp_log(LOG_WARNING, "history: not recorded: %s", strerror(-r));
                feed->dirty = false;
                feed->last_step = step;
                feed->recorded_ms = mono;
        }
        /* short sleeps: the loop notices that the server stops only between them */
        int64_t ms = ((step + 1) * XP_HISTORY_STEP_S - now) * 1000;

        if (feed->dirty && feed->record_gap_ms - (mono - feed->recorded_ms) < ms)
                ms = feed->record_gap_ms - (mono - feed->recorded_ms);
        return ms < TICK_MS ? ms : TICK_MS;
}

static const struct xp_controller_ops feed_ops = {
    .name = "history",
    .work = feed_work,
    .retry_ms = 1000,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
};

/* ---- lifecycle ------------------------------------------------------------------------------ */

int xp_history_feed_new(struct xp_store *store,
                        struct xp_history *history,
                        const struct xp_clock *clock,
                        struct xp_history_feed **ret,
                        struct xp_error *err)
{
        struct xp_history_feed *feed = calloc(1, sizeof *feed);
        int r;

        if (!feed)
                return -ENOMEM;
        feed->history = history;
        feed->clock = clock;
        feed->record_gap_ms = RECORD_MIN_MS;
        feed->last_step = -1;
        feed->nodes = json_object();
        feed->pods = json_object();
        r = feed->nodes && feed->pods ? 0 : -ENOMEM;
        if (r >= 0)
                r = xp_informer_new(
                    &(struct xp_informer_options){.store = store,
                                                  .handlers = followed,
                                                  .n_handlers = XP_ELEMENTSOF(followed),
                                                  .reset = on_reset,
                                                  .userdata = feed},
                    &feed->informer);
        if (r >= 0)
                r = xp_informer_list(feed->informer, err);
        if (r < 0) {
                xp_history_feed_free(feed);
                return r;
        }
        (void)feed_work(feed);
        *ret = feed;
        return 0;
}

int xp_history_feed_start(struct xp_store *store,
                          struct xp_history *history,
                          struct xp_history_feed **ret,
                          struct xp_error *err)
{
        struct xp_history_feed *feed;
        int r;

        r = xp_history_feed_new(store, history, NULL, &feed, err);
        if (r < 0)
                return r;
        r = xp_controller_start(&feed_ops, feed->informer, feed, &feed->loop, err);
        if (r < 0) {
                xp_history_feed_free(feed);
                return r;
        }
        *ret = feed;
        return 0;
}

int xp_history_feed_step(struct xp_history_feed *feed, struct xp_error *err)
{
        int r = xp_informer_sync(feed->informer, err);

        if (r < 0)
                return r;
        (void)feed_work(feed);
        return 0;
}

void xp_history_feed_free(struct xp_history_feed *feed)
{
        if (!feed)
                return;
        xp_controller_stop(feed->loop);
        xp_informer_free(feed->informer);
        json_decref(feed->nodes);
        json_decref(feed->pods);
        free(feed);
}
