/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pool's counts (poolstats.h): every pod and node event takes back what the object's last
 * version added to the totals and adds the new version's, so the totals are always exact and a
 * reading copies them. What each object added is remembered per pod and per node.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"
#include "informer.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/map.h"
#include "xpool/poolstats.h"
#include "xpool/quantity.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/timeutil.h"

#define AMOUNTS_MAX 16 /* resources one object counts in */

const char *const xp_poolstats_phase_names[XP_POOLSTATS_PHASES] = {
    "Pending", "Running", "Succeeded", "Failed", "Unknown"};

struct amount {
        int resource; /* index into the totals */
        double value;
};

struct pod_entry {
        char *key; /* namespace/name */
        int phase, reason;
        bool pending, holds; /* holds: bound and not over, so its requests count */
        double created;
        struct amount amounts[AMOUNTS_MAX];
        size_t n_amounts;
};

struct node_entry {
        char *name;
        bool ready;
        struct amount amounts[AMOUNTS_MAX];
        size_t n_amounts;
};

struct xp_poolstats {
        pthread_mutex_t lock;            /* guards the totals and the maps */
        struct xp_poolstats_view totals; /* wait_until_bound unused: hist holds it */
        struct xp_histogram wait_until_bound;
        struct xp_map pods, nodes;
        struct xp_informer *informer;
        struct xp_controller *loop;
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int resource_index(struct xp_poolstats *st, const char *name)
{
        struct xp_poolstats_view *t = &st->totals;

        for (size_t i = 0; i < t->n_resources; i++)
                if (strcmp(t->resources[i].name, name) == 0)
                        return (int)i;
        if (t->n_resources == XP_POOLSTATS_RESOURCES_MAX ||
            strlen(name) >= sizeof(t->resources[0].name))
                return -1;
        snprintf(t->resources[t->n_resources].name, sizeof(t->resources[0].name), "%s", name);
        return (int)t->n_resources++;
}

static int reason_index(struct xp_poolstats *st, const char *reason)
{
        struct xp_poolstats_view *t = &st->totals;

        for (size_t i = 0; i < t->n_reasons; i++)
                if (strcmp(t->reasons[i].reason, reason) == 0)
                        return (int)i;
        if (t->n_reasons == XP_POOLSTATS_REASONS_MAX)
                return (int)t->n_reasons - 1; /* the last takes the rest */
        snprintf(t->reasons[t->n_reasons].reason, sizeof(t->reasons[0].reason), "%s", reason);
        return (int)t->n_reasons++;
}

/* Adds a quantity to amounts (one entry per resource). */
static void
amount_add(struct xp_poolstats *st, struct amount *a, size_t *n, const char *name, const char *text)
{
        struct xp_quantity q;
        int64_t milli = 0;
        int r = resource_index(st, name);

        if (r < 0 || !text || xp_quantity_parse(text, &q, NULL) < 0 ||
            xp_quantity_to_milli(&q, &milli) < 0)
                return;
        for (size_t i = 0; i < *n; i++)
                if (a[i].resource == r) {
                        a[i].value += (double)milli / 1000.0;
                        return;
                }
        if (*n < AMOUNTS_MAX)
                a[(*n)++] = (struct amount){r, (double)milli / 1000.0};
}

static void amounts_apply(
    struct xp_poolstats *st, const struct amount *a, size_t n, bool requested, double sign)
{
        for (size_t i = 0; i < n; i++) {
                struct xp_poolstats_resource *res = &st->totals.resources[a[i].resource];

                if (requested)
                        res->requested += sign * a[i].value;
                else
                        res->allocatable += sign * a[i].value;
        }
}

static void pod_apply(struct xp_poolstats *st, const struct pod_entry *e, int sign)
{
        struct xp_poolstats_view *t = &st->totals;

        t->phases[e->phase] += (uint64_t)(int64_t)sign;
        if (e->pending) {
                t->pending += (uint64_t)(int64_t)sign;
                t->pending_wait_seconds -= sign * e->created; /* + n * now at reading time */
                t->reasons[e->reason].pods += (uint64_t)(int64_t)sign;
        }
        if (e->holds)
                amounts_apply(st, e->amounts, e->n_amounts, true, sign);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
        return json_string_value(json_object_get(json_object_get(o, a), b));
}

static int phase_index(const char *phase)
{
        for (int i = 0; i < XP_POOLSTATS_PHASES; i++)
                if (phase && strcmp(phase, xp_poolstats_phase_names[i]) == 0)
                        return i;
        return phase ? XP_POOLSTATS_PHASES - 1 : 0; /* no phase yet: Pending */
}

static const char *scheduled_reason(const json_t *pod)
{
        json_t *conditions = json_object_get(json_object_get(pod, "status"), "conditions"), *c;
        size_t i;

        json_array_foreach(conditions, i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *reason = json_string_value(json_object_get(c, "reason"));

                if (type && strcmp(type, "PodScheduled") == 0 && reason)
                        return reason;
        }
        return "Waiting";
}

/* Each container's requests (limits where a resource has no request: extended resources). */
static void pod_requests(struct xp_poolstats *st, const json_t *pod, struct pod_entry *e)
{
        json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers"), *c;
        size_t i;

        json_array_foreach(containers, i, c)
        {
                json_t *res = json_object_get(c, "resources");
                json_t *requests = json_object_get(res, "requests"),
                       *limits = json_object_get(res, "limits"), *v;
                const char *name;

                json_object_foreach(requests, name, v)
                    amount_add(st, e->amounts, &e->n_amounts, name, json_string_value(v));
                json_object_foreach(limits, name, v) if (!json_object_get(requests, name))
                    amount_add(st, e->amounts, &e->n_amounts, name, json_string_value(v));
        }
}

static void pod_read(struct xp_poolstats *st, const json_t *pod, struct pod_entry *e)
{
        const char *node = str_at(pod, "spec", "nodeName");
        const char *created = str_at(pod, "metadata", "creationTimestamp");
        int64_t t = 0;
        bool bound = node && node[0], over;

        e->phase = phase_index(str_at(pod, "status", "phase"));
        over = e->phase == 2 || e->phase == 3;
        e->pending = !bound && !over;
        e->holds = bound && !over;
        e->created = created && xp_time_parse_rfc3339(created, &t) >= 0 ? (double)t : now_s();
        if (e->pending)
                e->reason = reason_index(st, scheduled_reason(pod));
        if (e->holds)
                pod_requests(st, pod, e);
}

/* A new pod's entry: its own key and record, put in the map. */
static void pod_add(struct xp_poolstats *st, const json_t *pod, const char *key)
{
        struct pod_entry *e = calloc(1, sizeof(*e));

        if (!e || !(e->key = strdup(key))) {
                free(e);
                return;
        }
        pod_read(st, pod, e);
        if (xp_map_put(&st->pods, e->key, e) < 0) {
                free(e->key);
                free(e);
                return;
        }
        pod_apply(st, e, 1);
}

static void on_pod(void *userdata, const json_t *pod, uint64_t version)
{
        struct xp_poolstats *st = userdata;
        const char *ns = str_at(pod, "metadata", "namespace"),
                   *name = str_at(pod, "metadata", "name");
        char key[2 * XP_STORE_KEY_MAX + 2];
        struct pod_entry *old, fresh;

        (void)version;
        if (!ns || !name || snprintf(key, sizeof key, "%s/%s", ns, name) >= (int)sizeof key)
                return; /* longer than the store takes: never written */
        pthread_mutex_lock(&st->lock);
        old = xp_map_get(&st->pods, key);
        if (!old) {
                pod_add(st, pod, key);
                pthread_mutex_unlock(&st->lock);
                return;
        }
        /* a pod's later writes (most of its events) update its entry where it is */
        fresh = (struct pod_entry){.key = old->key};
        pod_read(st, pod, &fresh);
        pod_apply(st, old, -1);
        if (old->pending && fresh.holds)
                xp_histogram_observe(&st->wait_until_bound, now_s() - old->created);
        *old = fresh;
        pod_apply(st, old, 1);
        pthread_mutex_unlock(&st->lock);
}

static void on_pod_deleted(void *userdata, const json_t *pod, uint64_t version)
{
        struct xp_poolstats *st = userdata;
        const char *ns = str_at(pod, "metadata", "namespace"),
                   *name = str_at(pod, "metadata", "name");
        _cleanup_free_ char *key = NULL;
        struct pod_entry *old;

        (void)version;
        if (!ns || !name || asprintf(&key, "%s/%s", ns, name) < 0)
                return;
        pthread_mutex_lock(&st->lock);
        old = xp_map_del(&st->pods, key);
        if (old)
                pod_apply(st, old, -1);
        pthread_mutex_unlock(&st->lock);
        if (old) {
                free(old->key);
                free(old);
        }
}

static bool node_ready(const json_t *node)
{
        json_t *conditions = json_object_get(json_object_get(node, "status"), "conditions"), *c;
        size_t i;

        json_array_foreach(conditions, i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *status = json_string_value(json_object_get(c, "status"));

                if (type && status && strcmp(type, "Ready") == 0)
                        return strcmp(status, "True") == 0;
        }
        return false;
}

/* The device kind of each device resource the node reports (status.xpool.devices). */
static void note_kinds(struct xp_poolstats *st, const json_t *node)
{
        json_t *devices =
            json_object_get(json_object_get(json_object_get(node, "status"), "xpool"), "devices");
        json_t *d;
        size_t i;

        json_array_foreach(devices, i, d)
        {
                const char *resource = json_string_value(json_object_get(d, "resourceName"));
                const char *kind = json_string_value(json_object_get(d, "kind"));
                int r = resource && kind ? resource_index(st, resource) : -1;

                if (r >= 0)
                        snprintf(st->totals.resources[r].kind,
                                 sizeof(st->totals.resources[r].kind),
                                 "%s",
                                 kind);
        }
}

static void node_forget(struct xp_poolstats *st, const char *name)
{
        struct node_entry *old = xp_map_del(&st->nodes, name);

        if (!old)
                return;
        amounts_apply(st, old->amounts, old->n_amounts, false, -1);
        st->totals.nodes--;
        st->totals.nodes_ready -= old->ready;
        free(old->name);
        free(old);
}

static void on_node(void *userdata, const json_t *node, uint64_t version)
{
        struct xp_poolstats *st = userdata;
        const char *name = str_at(node, "metadata", "name"), *key;
        json_t *allocatable = json_object_get(json_object_get(node, "status"), "allocatable"), *v;
        struct node_entry *e = calloc(1, sizeof(*e));

        (void)version;
        if (!e || !name || !(e->name = strdup(name))) {
                free(e);
                return;
        }
        pthread_mutex_lock(&st->lock);
        node_forget(st, name);
        json_object_foreach(allocatable, key, v) if (strcmp(key, "pods") != 0)
            amount_add(st, e->amounts, &e->n_amounts, key, json_string_value(v));
        note_kinds(st, node);
        e->ready = node_ready(node);
        if (xp_map_put(&st->nodes, e->name, e) < 0) {
                free(e->name);
                free(e);
        } else {
                amounts_apply(st, e->amounts, e->n_amounts, false, 1);
                st->totals.nodes++;
                st->totals.nodes_ready += e->ready;
        }
        pthread_mutex_unlock(&st->lock);
}

static void on_node_deleted(void *userdata, const json_t *node, uint64_t version)
{
        struct xp_poolstats *st = userdata;
        const char *name = str_at(node, "metadata", "name");

        (void)version;
        if (!name)
                return;
        pthread_mutex_lock(&st->lock);
        node_forget(st, name);
        pthread_mutex_unlock(&st->lock);
}

static void maps_clear(struct xp_poolstats *st)
{
        /* deleted slots hold NULL values */
        for (size_t i = 0; i < st->pods.cap; i++) {
                struct pod_entry *e = st->pods.values[i];

                if (e) {
                        free(e->key);
                        free(e);
                }
        }
        for (size_t i = 0; i < st->nodes.cap; i++) {
                struct node_entry *e = st->nodes.values[i];

                if (e) {
                        free(e->name);
                        free(e);
                }
        }
        xp_map_done(&st->pods);
        xp_map_done(&st->nodes);
}

/* A relist delivers everything again: start from nothing (the resource names stay). */
static void on_reset(void *userdata)
{
        struct xp_poolstats *st = userdata;

        pthread_mutex_lock(&st->lock);
        maps_clear(st);
        memset(st->totals.phases, 0, sizeof(st->totals.phases));
        st->totals.pending = st->totals.nodes = st->totals.nodes_ready = 0;
        st->totals.pending_wait_seconds = 0;
        for (size_t i = 0; i < st->totals.n_reasons; i++)
                st->totals.reasons[i].pods = 0;
        for (size_t i = 0; i < st->totals.n_resources; i++)
                st->totals.resources[i].allocatable = st->totals.resources[i].requested = 0;
        pthread_mutex_unlock(&st->lock);
}

static const struct xp_informer_handler followed[] = {
    {.resource = "nodes", .add = on_node, .update = on_node, .delete = on_node_deleted},
    {.resource = "pods", .add = on_pod, .update = on_pod, .delete = on_pod_deleted},
};

static int64_t poolstats_work(void *userdata)
{
        (void)userdata;
        return 1000; /* nothing to do but follow: the loop syncs the informer before this */
}

static const struct xp_controller_ops poolstats_ops = {
    .name = "pool statistics",
    .work = poolstats_work,
    .retry_ms = 1000,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
};

void xp_poolstats_free(struct xp_poolstats *st)
{
        if (!st)
                return;
        xp_controller_stop(st->loop);
        xp_informer_free(st->informer);
        maps_clear(st);
        xp_histogram_done(&st->wait_until_bound);
        pthread_mutex_destroy(&st->lock);
        free(st);
}

int xp_poolstats_new(struct xp_registry *registry, struct xp_poolstats **ret, struct xp_error *err)
{
        struct xp_poolstats *st = calloc(1, sizeof(*st));
        int r;

        if (!st)
                return -ENOMEM;
        pthread_mutex_init(&st->lock, NULL);
        xp_histogram_init(
            &st->wait_until_bound, xp_histogram_latency_bounds, xp_histogram_latency_n);
        struct xp_informer_options informer = {
            .store = xp_registry_store(registry),
            .handlers = followed,
            .n_handlers = XP_ELEMENTSOF(followed),
            .reset = on_reset,
            .userdata = st,
        };
        r = xp_informer_new(&informer, &st->informer);
        if (r >= 0)
                r = xp_informer_list(st->informer, err);
        if (r < 0) {
                xp_poolstats_free(st);
                return r;
        }
        *ret = st;
        return 0;
}

int xp_poolstats_start(struct xp_registry *registry,
                       struct xp_poolstats **ret,
                       struct xp_error *err)
{
        struct xp_poolstats *st;
        int r = xp_poolstats_new(registry, &st, err);

        if (r < 0)
                return r;
        r = xp_controller_start(&poolstats_ops, st->informer, st, &st->loop, err);
        if (r < 0) {
                xp_poolstats_free(st);
                return r;
        }
        *ret = st;
        return 0;
}

int xp_poolstats_step(struct xp_poolstats *st, struct xp_error *err)
{
        int r = xp_informer_sync(st->informer, err);

        return r < 0 ? r : 0;
}

void xp_poolstats_read(struct xp_poolstats *st, struct xp_poolstats_view *ret)
{
        pthread_mutex_lock(&st->lock);
        *ret = st->totals;
        pthread_mutex_unlock(&st->lock);
        ret->pending_wait_seconds += (double)ret->pending * now_s();
        xp_histogram_read(&st->wait_until_bound, &ret->wait_until_bound);
}
