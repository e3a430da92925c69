/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher's thread (xpool/kubeinventory.h): read the devices and the allocation every
 * poll, and when what the Node should carry changed, merge-patch it, at most once per
 * min_interval_ms. Every watcher of Nodes (kube-scheduler, the extender, every kubelet's
 * informers...) receives each patch, so a flapping device must not become a flood: changes that
 * come faster than the interval are coalesced into the next patch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_internal.h"
#include "xpool/kubeapi.h"
#include "xpool/kubeinventory.h"
#include "xpool/log.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define RETRY_FIRST_MS     1000
#define RETRY_MAX_MS       30000
#define REQUEST_TIMEOUT_MS 15000

struct xp_kube_inventory {
        struct xp_kube_inventory_options o;
        char *node_name, *kubeconfig, *sa_dir, *description;
        char **leave;
        size_t n_leave;
        char **own;
        bool checked; /* the Node was read once for other plugins' resources */
        struct xp_kube_api api;
        struct xp_apiclient *client;
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        atomic_bool stopping;
        bool poked;
        struct xp_kube_inventory_stats stats; /* under lock */
        /* the thread's own */
        json_t *labels;      /* desired */
        char *annotation;    /* desired */
        json_t *sent_labels; /* last patched */
        char *sent_annotation;
        int64_t last_patch_ms, last_read_ms, retry_at_ms, retry_ms;
        bool node_missing_said;
};

int64_t xp_kube_publish_wait_ms(
    int64_t now_ms, bool changed, int64_t last_patch_ms, int64_t min_interval_ms, int64_t resync_ms)
{
        int64_t due;

        if (last_patch_ms < 0)
                return 0;
        due = last_patch_ms + (changed ? min_interval_ms : resync_ms);
        return due <= now_ms ? 0 : due - now_ms;
}

/* The devices and allocation now, into the desired labels and annotation. */
static int read_desired(struct xp_kube_inventory *inv, struct xp_error *err)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *devices = NULL;
        struct xp_kube_allocation alloc = {0};
        json_t *labels = NULL;
        char *text = NULL;
        int r;

        r = xp_device_discover(&inv->o.discovery, &devices, err);
        if (r < 0)
                return xp_error_prefix(err, r, "discovering devices");
        if (inv->o.alloc.list) {
                r = inv->o.alloc.list(inv->o.alloc.userdata, &alloc, err);
                if (r < 0) {
                        xp_kube_allocation_done(&alloc);
                        return xp_error_prefix(err,
                                               r,
                                               "reading allocation from %s",
                                               inv->o.alloc.name ? inv->o.alloc.name
                                                                 : "its source");
                }
        }
        r = xp_kube_inventory_encode(devices, &alloc, inv->o.max_bytes, &text, err);
        xp_kube_allocation_done(&alloc);
        if (r < 0)
                return r;
        r = xp_kube_inventory_labels(
            devices, (const char *const *)inv->leave, inv->n_leave, &labels);
        if (r < 0) {
                free(text);
                return r;
        }
        json_decref(inv->labels);
        free(inv->annotation);
        inv->labels = labels;
        inv->annotation = text;
        return 0;
}

static bool changed(const struct xp_kube_inventory *inv)
{
        return !inv->sent_annotation || strcmp(inv->sent_annotation, inv->annotation) != 0 ||
               !json_equal(inv->sent_labels, inv->labels);
}

static int ensure_client(struct xp_kube_inventory *inv, struct xp_error *err)
{
        return xp_kube_api_client(
            &inv->api, REQUEST_TIMEOUT_MS, &inv->lock, &inv->stopping, &inv->client, err);
}

/* The resources left to others and those this process's device plugin advertises. */
static int own_or_left(const struct xp_kube_inventory *inv, const char ***ret)
{
        const char **all = calloc(inv->n_leave + inv->o.n_own + 1, sizeof(*all));

        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < inv->n_leave; i++)
                all[i] = inv->leave[i];
        for (size_t i = 0; i < inv->o.n_own; i++)
                all[inv->n_leave + i] = inv->own[i];
        *ret = all;
        return 0;
}

/*
 * The first time the Node is read: resources another device plugin advertises there are left to
 * it from then on (no labels; the plugin must not register them), loudly.
 */
static int leave_conflicts(struct xp_kube_inventory *inv, const json_t *node, struct xp_error *err)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *devices = NULL;
        json_auto_t *conflicts = NULL;
        const char **mine = NULL;
        const json_t *v;
        size_t i;
        int r;

        if (inv->checked || inv->o.device_plugin)
                return 0;
        r = xp_device_discover(&inv->o.discovery, &devices, err);
        if (r >= 0)
                r = own_or_left(inv, &mine);
        if (r >= 0)
                r = xp_kube_inventory_conflicts(
                    node, devices, mine, inv->n_leave + inv->o.n_own, &conflicts);
        free(mine);
        if (r < 0)
                return r;
        inv->checked = true;
        json_array_foreach(conflicts, i, v)
        {
                char **m = realloc(inv->leave, (inv->n_leave + 2) * sizeof(*m));
                if (!m)
                        return -ENOMEM;
                inv->leave = m;
                if (!(m[inv->n_leave] = strdup(json_string_value(v))))
                        return -ENOMEM;
                m[++inv->n_leave] = NULL;
                xp_log(
                    LOG_ERR,
                    "inventory: %s is advertised on node %s by another device plugin: xpool leaves it to that plugin (say so with --skip-resources %s here and to xpool device-plugin, or remove the other plugin)",
                    json_string_value(v),
                    inv->node_name,
                    json_string_value(v));
                pthread_mutex_lock(&inv->lock);
                inv->stats.conflicts++;
                pthread_mutex_unlock(&inv->lock);
        }
        return json_array_size(conflicts) > 0 ? read_desired(inv, err) : 0;
}

/* Reads the Node and sends what it lacks. 1 when a patch was sent, 0 when none was needed. */
static int publish(struct xp_kube_inventory *inv, struct xp_error *err)
{
        json_auto_t *node = NULL, *patch = NULL, *annotations = NULL;
        char path[512];
        int r;

        r = ensure_client(inv, err);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "/api/v1/nodes/%s", inv->node_name);
        r = xp_apiclient_json(inv->client, "GET", path, NULL, NULL, NULL, &node, err);
        if (r >= 0)
                r = leave_conflicts(inv, node, err);
        if (r < 0)
                return r;
        annotations = json_pack("{s:s}", XP_INVENTORY_ANNOTATION, inv->annotation);
        if (!annotations)
                return -ENOMEM;
        r = xp_kube_inventory_patch(node, inv->labels, annotations, &patch);
        if (r < 0 || !patch)
                return r;
        r = xp_apiclient_json(
            inv->client, "PATCH", path, "application/merge-patch+json", patch, NULL, NULL, err);
        return r < 0 ? r : 1;
}

static void record(struct xp_kube_inventory *inv, int r, const struct xp_error *err)
{
        int64_t now = xp_monotonic_ms();

        pthread_mutex_lock(&inv->lock);
        if (r > 0)
                inv->stats.patches++;
        if (r < 0)
                inv->stats.failures++;
        inv->stats.last_bytes = inv->annotation ? strlen(inv->annotation) : 0;
        pthread_mutex_unlock(&inv->lock);
        if (r < 0) {
                if (r == -ENOENT && !inv->node_missing_said)
                        xp_log(LOG_INFO,
                               "inventory: Node %s is not registered yet; waiting for its kubelet",
                               inv->node_name);
                else if (r != -ENOENT)
                        xp_log(LOG_WARNING,
                               "inventory: publishing to Node %s failed, retrying in %lld ms: %s",
                               inv->node_name,
                               (long long)inv->retry_ms,
                               xp_error_message(err));
                inv->node_missing_said = inv->node_missing_said || r == -ENOENT;
                inv->retry_at_ms = now + inv->retry_ms;
                inv->retry_ms = inv->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : inv->retry_ms * 2;
                return;
        }
        inv->retry_ms = RETRY_FIRST_MS;
        inv->retry_at_ms = 0;
        inv->last_patch_ms = now;
        json_decref(inv->sent_labels);
        inv->sent_labels = json_incref(inv->labels);
        free(inv->sent_annotation);
        inv->sent_annotation = strdup(inv->annotation);
        if (r > 0)
                xp_log(LOG_DEBUG,
                       "inventory: Node %s patched (%zu bytes of inventory)",
                       inv->node_name,
                       strlen(inv->annotation));
}

/* Waits ms, or until poked or stopped; true when poked. */
static bool nap(struct xp_kube_inventory *inv, int64_t ms)
{
        bool poked;
        struct timespec until;

        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += ms / 1000;
        until.tv_nsec += (ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&inv->lock);
        while (!inv->poked && !atomic_load(&inv->stopping) &&
               pthread_cond_timedwait(&inv->wake, &inv->lock, &until) == 0)
                ;
        poked = inv->poked;
        inv->poked = false;
        pthread_mutex_unlock(&inv->lock);
        return poked;
}

/* One turn of the loop; returns how long to wait before the next. */
static int64_t turn(struct xp_kube_inventory *inv, bool poked)
{
        struct xp_error err = {0};
        int64_t now = xp_monotonic_ms(), wait, next_read;
        int r;

        if (!inv->annotation || now - inv->last_read_ms >= inv->o.poll_ms || poked) {
                r = read_desired(inv, &err);
                inv->last_read_ms = now;
                if (r < 0) {
                        xp_log(LOG_WARNING, "inventory: %s", xp_error_message(&err));
                        return inv->o.poll_ms;
                }
        }
        next_read = inv->last_read_ms + inv->o.poll_ms - now;
        if (inv->retry_at_ms > now)
                return inv->retry_at_ms - now < next_read ? inv->retry_at_ms - now : next_read;
        wait = xp_kube_publish_wait_ms(
            now, changed(inv), inv->last_patch_ms, inv->o.min_interval_ms, inv->o.resync_ms);
        if (wait > 0)
                return wait < next_read ? wait : next_read;
        xp_error_clear(&err);
        r = publish(inv, &err);
        record(inv, r, &err);
        return next_read > 0 ? next_read : 1;
}

static void *publisher_main(void *userdata)
{
        struct xp_kube_inventory *inv = userdata;
        bool poked = false;

        while (!atomic_load(&inv->stopping)) {
                int64_t wait = turn(inv, poked);
                poked = nap(inv, wait < 1 ? 1 : wait);
        }
        return NULL;
}

static int copy_options(struct xp_kube_inventory *inv, const struct xp_kube_inventory_options *o)
{
        inv->o = *o;
        inv->node_name = strdup(o->node_name);
        inv->kubeconfig = xp_strdup0(o->kubeconfig);
        inv->sa_dir = xp_strdup0(o->serviceaccount_dir);
        inv->description = xp_strdup0(o->discovery.node_description);
        inv->leave = calloc(o->n_leave + 1, sizeof(*inv->leave));
        if (!inv->node_name || (o->kubeconfig && !inv->kubeconfig) ||
            (o->serviceaccount_dir && !inv->sa_dir) ||
            (o->discovery.node_description && !inv->description) || !inv->leave)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_leave; i++)
                if (!(inv->leave[inv->n_leave++] = strdup(o->leave[i])))
                        return -ENOMEM;
        inv->own = calloc(o->n_own + 1, sizeof(*inv->own));
        if (!inv->own)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_own; i++)
                if (!(inv->own[i] = strdup(o->own[i])))
                        return -ENOMEM;
        inv->o.discovery.node_description = inv->description;
        inv->o.min_interval_ms = o->min_interval_ms > 0 ? o->min_interval_ms : 10000;
        inv->o.poll_ms = o->poll_ms > 0 ? o->poll_ms : 5000;
        inv->o.resync_ms = o->resync_ms > 0 ? o->resync_ms : 600000;
        return 0;
}

void xp_kube_inventory_free(struct xp_kube_inventory *inv)
{
        if (!inv)
                return;
        if (inv->started) {
                pthread_mutex_lock(&inv->lock);
                atomic_store(&inv->stopping, true);
                pthread_cond_signal(&inv->wake);
                if (inv->client)
                        xp_apiclient_cancel(inv->client);
                pthread_mutex_unlock(&inv->lock);
                pthread_join(inv->thread, NULL);
        }
        pthread_mutex_destroy(&inv->lock);
        pthread_cond_destroy(&inv->wake);
        xp_apiclient_free(inv->client);
        xp_kube_api_done(&inv->api);
        for (size_t i = 0; inv->leave && i < inv->n_leave; i++)
                free(inv->leave[i]);
        free(inv->leave);
        for (size_t i = 0; inv->own && i < inv->o.n_own; i++)
                free(inv->own[i]);
        free(inv->own);
        free(inv->node_name);
        free(inv->kubeconfig);
        free(inv->sa_dir);
        free(inv->description);
        json_decref(inv->labels);
        json_decref(inv->sent_labels);
        free(inv->annotation);
        free(inv->sent_annotation);
        free(inv);
}

int xp_kube_inventory_new(const struct xp_kube_inventory_options *options,
                          struct xp_kube_inventory **ret,
                          struct xp_error *err)
{
        _cleanup_(xp_kube_inventory_freep) struct xp_kube_inventory *inv = calloc(1, sizeof(*inv));
        pthread_condattr_t attr;
        int r;

        if (!inv)
                return -ENOMEM;
        pthread_mutex_init(&inv->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&inv->wake, &attr);
        pthread_condattr_destroy(&attr);
        inv->last_patch_ms = -1;
        inv->retry_ms = RETRY_FIRST_MS;
        if (!options->node_name || !*options->node_name)
                return xp_errorf(err, -EINVAL, "the inventory needs the Node's name");
        r = copy_options(inv, options);
        if (r < 0)
                return xp_errorf(err, r, "out of memory");
        r = xp_kube_api_load(inv->kubeconfig, inv->sa_dir, &inv->api, err);
        if (r < 0)
                return r;
        r = -pthread_create(&inv->thread, NULL, publisher_main, inv);
        if (r < 0)
                return xp_errorf(err, r, "starting the inventory publisher: %s", strerror(-r));
        inv->started = true;
        *ret = TAKE_PTR(inv);
        return 0;
}

void xp_kube_inventory_poke(struct xp_kube_inventory *inv)
{
        pthread_mutex_lock(&inv->lock);
        inv->poked = true;
        pthread_cond_signal(&inv->wake);
        pthread_mutex_unlock(&inv->lock);
}

void xp_kube_inventory_stats(struct xp_kube_inventory *inv, struct xp_kube_inventory_stats *ret)
{
        pthread_mutex_lock(&inv->lock);
        *ret = inv->stats;
        pthread_mutex_unlock(&inv->lock);
}
