/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod garbage collector (xpool/podgc.h). Its view: the terminated pods (key and creation
 * time) and the nodes' names, kept by the informer's callbacks, so that a round costs nothing
 * while the terminated pods are within the threshold. Orphans and unscheduled terminating pods
 * are looked for in a list of the pods from the store, only when a node went, a pod names a
 * node not known, or a pod without a node is being deleted, and again at a missing node's end
 * of quarantine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "controller.h"
#include "informer.h"
#include "podgc.h"
#include "xpool/doc.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/map.h"
#include "xpool/podgc.h"
#include "xpool/registry.h"
#include "xpool/store.h"

#define IDLE_MS  60000 /* the sleep when nothing is due: writes of pods and nodes wake it */
#define RETRY_MS 2000

struct missing_node {
        char *name;
        int64_t since_ms; /* when the collector first found pods bound to it and it absent */
        uint64_t scan;    /* the last scan that found pods bound to it */
};

struct xp_podgc {
        struct xp_registry *registry;
        const struct xp_clock *clock;
        int64_t threshold;
        struct xp_informer *informer;
        struct xp_controller *loop;
        struct xp_map done;    /* "ns/name" -> struct podgc_done */
        struct xp_map nodes;   /* name -> its own copy of the name */
        struct xp_map missing; /* name -> struct missing_node */
        bool scan;             /* look for orphans and unscheduled terminating pods */
        int64_t scan_at_ms;    /* and again then (a quarantine's end); 0: none */
        uint64_t scans;        /* scans made, to forget nodes no pod names any more */
};

/* ---- the view ------------------------------------------------------------------------------- */

static char *pod_key(const json_t *pod)
{
        char *key = NULL;

        if (asprintf(&key,
                     "%s/%s",
                     xp_json_str_at(pod, "metadata.namespace", ""),
                     xp_json_str_at(pod, "metadata.name", "")) < 0)
                return NULL;
        return key;
}

static void done_forget(struct xp_podgc *c, const char *key)
{
        struct podgc_done *d = xp_map_del(&c->done, key);

        if (d) {
                free(d->key);
                free(d->created);
                free(d);
        }
}

static void done_remember(struct xp_podgc *c, char *key, const json_t *pod)
{
        struct podgc_done *d;

        if (xp_map_get(&c->done, key)) {
                free(key);
                return;
        }
        d = calloc(1, sizeof(*d));
        if (d) {
                d->key = key;
                d->created = strdup(xp_json_str_at(pod, "metadata.creationTimestamp", ""));
        }
        if (!d || !d->created || xp_map_put(&c->done, d->key, d) < 0) {
                /* counted at the next relist; the collection is late, never wrong */
                xp_log(LOG_WARNING, "pod garbage collector: out of memory");
                free(key);
                if (d)
                        free(d->created);
                free(d);
        }
}

static bool node_known(void *userdata, const char *node)
{
        const struct xp_podgc *c = userdata;

        return xp_map_get(&c->nodes, node) != NULL;
}

static void on_pod(void *userdata, const json_t *pod, uint64_t version)
{
        struct xp_podgc *c = userdata;
        bool terminated = podgc_terminated(pod);
        char *key;

        (void)version;
        /* a scan already due looks at this pod too: no need to judge it */
        if (!c->scan && podgc_judge(pod, node_known, c) != PODGC_KEEP)
                c->scan = true;
        /* most events are of pods that are not done, and none is remembered: no key to make */
        if (!terminated && c->done.n == 0)
                return;
        key = pod_key(pod);
        if (!key)
                return;
        if (terminated)
                done_remember(c, key, pod);
        else {
                done_forget(c, key);
                free(key);
        }
}

static void on_pod_deleted(void *userdata, const json_t *pod, uint64_t version)
{
        struct xp_podgc *c = userdata;
        _cleanup_free_ char *key = pod_key(pod);

        (void)version;
        if (key)
                done_forget(c, key);
}

static void on_node(void *userdata, const json_t *node, uint64_t version)
{
        struct xp_podgc *c = userdata;
        const char *name = xp_json_str_at(node, "metadata.name", "");
        struct missing_node *m = xp_map_del(&c->missing, name);
        char *copy;

        (void)version;
        if (m) {
                free(m->name);
                free(m);
        }
        if (xp_map_get(&c->nodes, name))
                return;
        copy = strdup(name);
        if (!copy || xp_map_put(&c->nodes, copy, copy) < 0) {
                free(copy);
                xp_log(LOG_WARNING, "pod garbage collector: out of memory");
        }
}

static void on_node_deleted(void *userdata, const json_t *node, uint64_t version)
{
        struct xp_podgc *c = userdata;

        (void)version;
        free(xp_map_del(&c->nodes, xp_json_str_at(node, "metadata.name", "")));
        c->scan = true;
}

/* Nodes first: a pod read after them judges its node against what exists. */
static const struct xp_informer_handler podgc_followed[] = {
    {.resource = "nodes", .add = on_node, .update = on_node, .delete = on_node_deleted},
    {.resource = "pods", .add = on_pod, .update = on_pod, .delete = on_pod_deleted},
};

static void free_values(struct xp_map *m, void (*free_value)(void *))
{
        for (size_t i = 0; i < m->cap; i++)
                if (m->values[i])
                        free_value(m->values[i]);
        xp_map_done(m);
}

static void done_free(void *value)
{
        struct podgc_done *d = value;

        free(d->key);
        free(d->created);
        free(d);
}

static void missing_free(void *value)
{
        struct missing_node *m = value;

        free(m->name);
        free(m);
}

static void view_clear(void *userdata)
{
        struct xp_podgc *c = userdata;

        free_values(&c->done, done_free);
        free_values(&c->nodes, free);
        /* the quarantines started stay: a relist does not make a node less missing */
        c->scan = true;
}

/* ---- the work ------------------------------------------------------------------------------- */

/* Deletes the pod at once (grace 0), as the collector of Kubernetes does: -ENOENT (gone
 * meanwhile) is no failure. */
static int force_delete(struct xp_podgc *c, const char *ns, const char *name, const char *why)
{
        static const struct xp_registry_delete_options now = {.has_grace = true,
                                                              .grace_seconds = 0};
        struct xp_error err = {0};
        json_t *last = NULL;
        bool removed = false;
        int r = xp_registry_pod_delete(c->registry, ns, name, &now, &last, &removed, &err);

        json_decref(last);

        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                xp_log(LOG_WARNING,
                       "pod garbage collector: cannot delete pod %s/%s (%s): %s",
                       ns,
                       name,
                       why,
                       xp_error_message(&err));
                return r;
        }
        /* A finalizer holds the pod: it is only marked, and every wake-up marks it again, so
         * saying so at info level would repeat the line until the finalizer goes. */
        if (removed)
                xp_log(LOG_INFO, "pod garbage collector: deleted pod %s/%s: %s", ns, name, why);
        else
                xp_log(LOG_DEBUG,
                       "pod garbage collector: pod %s/%s marked for deletion, held by its "
                       "finalizers: %s",
                       ns,
                       name,
                       why);
        return 0;
}

static int delete_by_key(struct xp_podgc *c, const char *key, const char *why)
{
        const char *slash = strchr(key, '/');
        _cleanup_free_ char *ns = slash ? strndup(key, (size_t)(slash - key)) : NULL;

        return ns ? force_delete(c, ns, slash + 1, why) : -ENOMEM;
}

/* The oldest terminated pods past the threshold. */
static int collect_terminated(struct xp_podgc *c)
{
        struct podgc_done *done;
        size_t n = 0, k;
        char why[96];
        int r = 0;

        if (c->threshold <= 0 || c->done.n <= (uint64_t)c->threshold)
                return 0;
        done = calloc(c->done.n, sizeof(*done));
        if (!done)
                return -ENOMEM;
        for (size_t i = 0; i < c->done.cap; i++)
                if (c->done.values[i])
                        done[n++] = *(struct podgc_done *)c->done.values[i];
        k = podgc_select_oldest(done, n, c->threshold);
        snprintf(why,
                 sizeof(why),
                 "%zu terminated pods, over the threshold of %lld",
                 n,
                 (long long)c->threshold);
        for (size_t i = 0; i < k && !xp_controller_stopping(c->loop); i++)
                if (delete_by_key(c, done[i].key, why) < 0)
                        r = -EAGAIN;
        free(done); /* the entries stay the view's: its delete events free them */
        return r;
}

/* Whether pod's missing node has been missing for the quarantine; starts one if not yet. */
static bool quarantine_over(struct xp_podgc *c, const char *node, int64_t now)
{
        struct missing_node *m = xp_map_get(&c->missing, node);

        if (!m) {
                m = calloc(1, sizeof(*m));
                if (!m || !(m->name = strdup(node)) || xp_map_put(&c->missing, m->name, m) < 0) {
                        if (m)
                                free(m->name);
                        free(m);
                        return false;
                }
                m->since_ms = now;
        }
        m->scan = c->scans;
        if (now - m->since_ms >= XP_PODGC_QUARANTINE_MS)
                return true;
        if (c->scan_at_ms == 0 || m->since_ms + XP_PODGC_QUARANTINE_MS < c->scan_at_ms)
                c->scan_at_ms = m->since_ms + XP_PODGC_QUARANTINE_MS;
        return false;
}

/* The missing nodes the last scan found no pod bound to: their quarantine ends with them. */
static void forget_unnamed(struct xp_podgc *c)
{
        for (size_t i = 0; i < c->missing.cap; i++) {
                struct missing_node *m = c->missing.values[i];

                if (m && m->scan != c->scans) {
                        xp_map_del(&c->missing, m->name);
                        missing_free(m);
                }
        }
}

/* Orphans past their node's quarantine and terminating pods without a node, from the store. */
static int collect_strays(struct xp_podgc *c, int64_t now)
{
        json_t *pods = NULL, *pod;
        struct xp_error err = {0};
        uint64_t version;
        size_t i;
        int r = xp_store_list(xp_registry_store(c->registry), "pods", NULL, &pods, &version, &err);

        if (r < 0) {
                xp_log(LOG_WARNING, "pod garbage collector: %s", xp_error_message(&err));
                return r;
        }
        c->scan_at_ms = 0;
        c->scans++;
        json_array_foreach(pods, i, pod)
        {
                enum podgc_verdict v = podgc_judge(pod, node_known, c);
                const char *ns = xp_json_str_at(pod, "metadata.namespace", "");
                const char *name = xp_json_str_at(pod, "metadata.name", "");

                if (v == PODGC_UNSCHEDULED_TERMINATING &&
                    force_delete(c, ns, name, "terminating and bound to no node") < 0)
                        r = -EAGAIN;
                if (v == PODGC_ORPHAN &&
                    quarantine_over(c, xp_json_str_at(pod, "spec.nodeName", ""), now) &&
                    force_delete(c, ns, name, "its node does not exist") < 0)
                        r = -EAGAIN;
        }
        json_decref(pods);
        forget_unnamed(c);
        return r;
}

static int64_t podgc_work(void *userdata)
{
        struct xp_podgc *c = userdata;
        int64_t now = xp_clock_monotonic_ms(c->clock);
        bool failed = collect_terminated(c) < 0;

        if (c->scan || (c->scan_at_ms && now >= c->scan_at_ms)) {
                c->scan = false;
                if (collect_strays(c, now) < 0) {
                        c->scan = true;
                        failed = true;
                }
        }
        if (failed)
                return RETRY_MS;
        if (c->scan_at_ms)
                return c->scan_at_ms > now ? c->scan_at_ms - now : 0;
        return IDLE_MS;
}

static const struct xp_controller_ops podgc_ops = {
    .name = "pod garbage collector",
    .work = podgc_work,
    .retry_ms = RETRY_MS,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
};

/* ---- lifecycle ------------------------------------------------------------------------------ */

int xp_podgc_new(struct xp_registry *registry,
                 const struct xp_podgc_options *options,
                 struct xp_podgc **ret,
                 struct xp_error *err)
{
        struct xp_podgc *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        c->registry = registry;
        c->clock = options->clock;
        c->threshold = options->threshold;
        c->scan = true;
        struct xp_informer_options informer = {
            .store = xp_registry_store(registry),
            .handlers = podgc_followed,
            .n_handlers = XP_ELEMENTSOF(podgc_followed),
            .reset = view_clear,
            .userdata = c,
        };
        r = xp_informer_new(&informer, &c->informer);
        if (r >= 0)
                r = xp_informer_list(c->informer, err);
        if (r < 0) {
                xp_podgc_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_podgc_start(struct xp_registry *registry,
                   const struct xp_podgc_options *options,
                   struct xp_podgc **ret,
                   struct xp_error *err)
{
        struct xp_podgc *c = NULL;
        int r = xp_podgc_new(registry, options, &c, err);

        if (r >= 0)
                r = xp_controller_start(&podgc_ops, c->informer, c, &c->loop, err);
        if (r < 0) {
                xp_podgc_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_podgc_step(struct xp_podgc *c, struct xp_error *err)
{
        int r = xp_informer_sync(c->informer, err);

        if (r >= 0)
                podgc_work(c);
        return r < 0 ? r : 0;
}

void xp_podgc_free(struct xp_podgc *c)
{
        if (!c)
                return;
        xp_controller_stop(c->loop);
        xp_informer_free(c->informer);
        view_clear(c);
        free_values(&c->missing, missing_free);
        free(c);
}
