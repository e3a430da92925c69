/* SPDX-License-Identifier: Apache-2.0 */
/* A level-triggered controller over namespaces (nsqueue.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"
#include "nsqueue.h"
#include "workqueue.h"
#include "xpool/doc.h"
#include "xpool/log.h"
#include "xpool/map.h"
#include "xpool/registry.h"

#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 10000
#define IDLE_MS      60000

struct xp_nsqueue {
        const struct xp_nsqueue_ops *ops;
        void *userdata;
        struct xp_controller_ops loop_ops;
        struct xp_informer *informer;
        struct xp_workqueue *namespaces;
        struct xp_controller *loop;
        struct xp_map anchors;  /* "namespace/name" of each anchor -> that key (owned) */
        struct xp_map anchored; /* namespace -> struct anchored: the namespaces holding one */
        bool unfiltered;        /* an anchor went uncounted (no memory): every object queues */
};

struct anchored {
        size_t n;
        char ns[];
};

void xp_nsqueue_object(void *nsqueue, const json_t *object, uint64_t version)
{
        struct xp_nsqueue *q = nsqueue;
        const char *ns = xp_json_str_at(object, "metadata.namespace", NULL);

        (void)version;
        if (ns)
                xp_workqueue_add(q->namespaces, ns);
}

static void anchored_add(struct xp_nsqueue *q, const char *ns, int delta)
{
        struct anchored *a = xp_map_get(&q->anchored, ns);
        size_t len = strlen(ns) + 1;

        if (delta < 0) {
                if (a && --a->n == 0) {
                        xp_map_del(&q->anchored, a->ns);
                        free(a);
                }
                return;
        }
        if (!a) {
                a = calloc(1, sizeof *a + len);
                if (a)
                        memcpy(a->ns, ns, len);
                if (!a || xp_map_put(&q->anchored, a->ns, a) < 0) {
                        free(a);
                        q->unfiltered = true;
                        return;
                }
        }
        a->n++;
}

/* Counts object as an anchor of its namespace, or no longer. */
static void anchor_set(struct xp_nsqueue *q, const json_t *object, bool anchor)
{
        const char *ns = xp_json_str_at(object, "metadata.namespace", NULL);
        const char *name = xp_json_str_at(object, "metadata.name", NULL);
        char *key = NULL, *counted;

        if (!ns || !name)
                return;
        if (asprintf(&key, "%s/%s", ns, name) < 0) {
                q->unfiltered = true;
                return;
        }
        counted = xp_map_get(&q->anchors, key);
        if (anchor && !counted) {
                if (xp_map_put(&q->anchors, key, key) < 0) {
                        free(key);
                        q->unfiltered = true;
                        return;
                }
                anchored_add(q, ns, 1);
                return;
        }
        if (!anchor && counted) {
                xp_map_del(&q->anchors, key);
                free(counted);
                anchored_add(q, ns, -1);
        }
        free(key);
}

/* Forgets every anchor (before a relist counts them again). */
static void anchors_clear(struct xp_nsqueue *q)
{
        for (size_t i = 0; i < q->anchors.cap; i++)
                free(q->anchors.values[i]);
        for (size_t i = 0; i < q->anchored.cap; i++)
                free(q->anchored.values[i]);
        xp_map_done(&q->anchors);
        xp_map_done(&q->anchored);
        q->unfiltered = false;
}

static void on_reset(void *userdata)
{
        anchors_clear(userdata);
}

void xp_nsqueue_anchor(void *nsqueue, const json_t *object, uint64_t version)
{
        struct xp_nsqueue *q = nsqueue;

        anchor_set(q, object, !q->ops->anchor || q->ops->anchor(object));
        xp_nsqueue_object(nsqueue, object, version);
}

void xp_nsqueue_anchor_deleted(void *nsqueue, const json_t *object, uint64_t version)
{
        anchor_set(nsqueue, object, false);
        xp_nsqueue_object(nsqueue, object, version);
}

void xp_nsqueue_dependent(void *nsqueue, const json_t *object, uint64_t version)
{
        struct xp_nsqueue *q = nsqueue;
        const char *ns;

        /* no namespace holds an anchor (most clusters have no budget, many no quota): nothing
         * of the object to read, its tree being cold by now */
        if (!q->unfiltered && q->anchored.n == 0)
                return;
        ns = json_string_value(json_object_get(json_object_get(object, "metadata"), "namespace"));
        if (ns && (q->unfiltered || xp_map_get(&q->anchored, ns)))
                xp_nsqueue_object(nsqueue, object, version);
}

void xp_nsqueue_namespace(void *nsqueue, const json_t *ns, uint64_t version)
{
        struct xp_nsqueue *q = nsqueue;
        const char *name = xp_json_str_at(ns, "metadata.name", NULL);

        (void)version;
        if (name)
                xp_workqueue_add(q->namespaces, name);
}

static int64_t nsqueue_work(void *userdata)
{
        struct xp_nsqueue *q = userdata;
        const char *ns;
        int64_t next;

        while (xp_workqueue_get(q->namespaces, &ns) > 0) {
                struct xp_error err = {0};
                int64_t recheck = 0;

                if (q->ops->sync(q->userdata, ns, &recheck, &err) < 0) {
                        xp_log(LOG_WARNING,
                               "%s: namespace %s: %s",
                               q->ops->name,
                               ns,
                               xp_error_message(&err));
                        xp_workqueue_add_rate_limited(q->namespaces, ns);
                } else {
                        xp_workqueue_forget(q->namespaces, ns);
                        if (recheck)
                                xp_workqueue_add_after(
                                    q->namespaces, ns, (recheck - time(NULL) + 1) * 1000);
                }
                xp_workqueue_done(q->namespaces, ns);
                if (q->loop && xp_controller_stopping(q->loop))
                        break;
        }
        next = xp_workqueue_next_ms(q->namespaces);
        return next >= 0 && next < IDLE_MS ? next : IDLE_MS;
}

int xp_nsqueue_new(struct xp_registry *registry,
                   const struct xp_nsqueue_ops *ops,
                   void *userdata,
                   struct xp_nsqueue **ret,
                   struct xp_error *err)
{
        struct xp_nsqueue *q = calloc(1, sizeof(*q));
        int r;

        if (!q)
                return -ENOMEM;
        q->ops = ops;
        q->userdata = userdata;
        q->loop_ops = (struct xp_controller_ops){.name = ops->name,
                                                 .work = nsqueue_work,
                                                 .retry_ms = RETRY_MIN_MS,
                                                 .settle_ms = ops->settle_ms};
        struct xp_workqueue_options queue = {.base_delay_ms = RETRY_MIN_MS,
                                             .max_delay_ms = RETRY_MAX_MS};
        struct xp_informer_options informer = {
            .store = xp_registry_store(registry),
            .handlers = ops->handlers,
            .n_handlers = ops->n_handlers,
            .reset = on_reset,
            .userdata = q,
        };
        r = xp_workqueue_new(&queue, &q->namespaces);
        if (r >= 0)
                r = xp_informer_new(&informer, &q->informer);
        if (r >= 0)
                r = xp_informer_list(q->informer, err);
        if (r < 0) {
                xp_nsqueue_free(q);
                return r;
        }
        *ret = q;
        return 0;
}

int xp_nsqueue_start(struct xp_nsqueue *q, struct xp_error *err)
{
        return xp_controller_start(&q->loop_ops, q->informer, q, &q->loop, err);
}

int xp_nsqueue_step(struct xp_nsqueue *q, struct xp_error *err)
{
        int r = xp_informer_sync(q->informer, err);

        if (r < 0)
                return r;
        nsqueue_work(q);
        return 0;
}

void xp_nsqueue_free(struct xp_nsqueue *q)
{
        if (!q)
                return;
        xp_controller_stop(q->loop);
        xp_informer_free(q->informer);
        xp_workqueue_free(q->namespaces);
        anchors_clear(q);
        free(q);
}
