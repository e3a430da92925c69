/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Queue object's spec into the core's queue tree, admission before a placement, and the
 * Queues' status written back (allocated, guaranteed, borrowed, pending and the fair share, per
 * resource) when the figures change.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "queue_state.h"
#include "xpool/gang.h"
#include "xpool/log.h"
#include "xpool/quantity.h"
#include "xpool/registry.h"
#include "xpool/strmap.h"

static int quantity_milli(const json_t *v, int64_t *ret)
{
        struct xp_quantity q;

        if (json_is_integer(v)) {
                *ret = json_integer_value(v) * 1000;
                return 0;
        }
        if (!json_is_string(v) || xp_quantity_parse(json_string_value(v), &q, NULL) < 0)
                return -EINVAL;
        return xp_quantity_to_milli(&q, ret);
}

/* spec.resources: {NAME: {guaranteed, limit, weight}} into quotas. */
static int
quotas_of(const json_t *resources, struct xp_queue_quota *quotas, size_t *n, struct xp_error *err)
{
        const char *name;
        const json_t *r;

        json_object_foreach((json_t *)resources, name, r)
        {
                struct xp_queue_quota *k = &quotas[*n];
                const json_t *g = json_object_get(r, "guaranteed"),
                             *l = json_object_get(r, "limit");
                const json_t *w = json_object_get(r, "weight");

                if (*n == XP_QUEUE_RESOURCES_MAX)
                        return xp_errorf(
                            err, -EINVAL, "spec.resources: at most %d", XP_QUEUE_RESOURCES_MAX);
                *k = (struct xp_queue_quota){.resource = name, .limit = -1};
                if ((g && quantity_milli(g, &k->guaranteed) < 0) ||
                    (l && quantity_milli(l, &k->limit) < 0))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "spec.resources[%s]: guaranteed and limit are quantities",
                                         name);
                if (w && !json_is_number(w))
                        return xp_errorf(err, -EINVAL, "spec.resources[%s].weight: a number", name);
                k->weight = w ? json_number_value(w) : 0;
                (*n)++;
        }
        return 0;
}

void queue_ctl_queue(struct queue_ctl *ctl, const json_t *queue, bool deleted)
{
        const json_t *meta = json_object_get(queue, "metadata"),
                     *spec = json_object_get(queue, "spec");
        const char *name = json_string_value(json_object_get(meta, "name"));
        const json_t *reclaimable = json_object_get(spec, "reclaimable"),
                     *weight = json_object_get(spec, "weight");
        struct xp_queue_quota quotas[XP_QUEUE_RESOURCES_MAX];
        struct xp_queue_spec s = {.name = name, .reclaimable = !json_is_false(reclaimable)};
        struct xp_error err = {0};
        char *copy;
        int r;

        if (!name)
                return;
        ctl->dirty = true;
        if (deleted) {
                (void)xp_queues_remove(ctl->queues, name);
                free(xp_map_del(&ctl->defined, name));
                return;
        }
        s.parent = json_string_value(json_object_get(spec, "parent"));
        s.weight = json_is_number(weight) ? json_number_value(weight) : 0;
        r = quotas_of(json_object_get(spec, "resources"), quotas, &s.n_quotas, &err);
        s.quotas = quotas;
        if (r >= 0)
                r = xp_queues_set(ctl->queues, &s, &err);
        if (r < 0) {
                xp_log(LOG_WARNING,
                       "queues: Queue %s left as it was: %s",
                       name,
                       err.msg[0] ? err.msg : strerror(-r));
                return;
        }
        if (!xp_map_get(&ctl->defined, name) && (copy = strdup(name)) &&
            xp_map_put(&ctl->defined, copy, copy) < 0)
                free(copy);
}

int pod_queue(struct queue_ctl *ctl,
              const struct xp_pod *pod,
              const char **ret_queue,
              struct xp_queue_amount **ret,
              size_t *ret_n)
{
        const char *ns = pod->metadata.namespace ? pod->metadata.namespace : "default";
        const char *pg = xp_strmap_get(&pod->metadata.annotations, XP_GANG_VOLCANO_ANNOTATION);
        _cleanup_free_ char *key = NULL, *group = NULL;
        const struct qpod *p;
        const char *q;

        if (asprintf(&key, "%s/%s", ns, pod->metadata.name) < 0)
                return -ENOMEM;
        /* the informer's record has its queue (its PodGroup's too) and its request already */
        p = xp_map_get(&ctl->pods, key);
        if (p) {
                q = p->queue;
        } else {
                if (pg && pg[0] && asprintf(&group, "%s/%s", ns, pg) < 0)
                        return -ENOMEM;
                q = queue_of(ctl, ns, &pod->metadata.labels, group);
        }
        if (!q)
                return 0;
        *ret_queue = q;
        *ret = p ? p->amounts : NULL;
        *ret_n = p ? p->n : 0;
        return 1;
}

char *queue_ctl_why(struct queue_ctl *ctl, const struct xp_pod *pod)
{
        struct xp_queue_amount *a;
        const char *q;
        size_t n;

        if (pod_queue(ctl, pod, &q, &a, &n) <= 0)
                return NULL;
        xp_queues_compute(ctl->queues);
        return xp_queues_blocking(ctl->queues, q, a, n);
}

int queue_ctl_before(struct queue_ctl *ctl,
                     struct xp_sched *sched,
                     const struct xp_pod *pod,
                     char **ret_reason)
{
        struct xp_queue_amount *a;
        const char *q;
        size_t n;
        int r;

        queue_ctl_unhold(ctl, sched, pod);
        /* placed before, and its binding failed: pending again */
        queue_ctl_placed(ctl, pod->metadata.namespace, pod->metadata.name, false);
        r = pod_queue(ctl, pod, &q, &a, &n);
        if (r <= 0)
                return r < 0 ? r : 1;
        /* admission reads the limits only: the fair shares are computed for reclaim and status */
        r = xp_queues_admit(ctl->queues, q, a, n, ret_reason);
        return r < 0 ? r : r != XP_QUEUE_REFUSED;
}

/* ---- status ---------------------------------------------------------------------------------- */

static json_t *figures_json(struct queue_ctl *ctl, const char *name)
{
        static const char *const parts[] = {
            "allocated", "guaranteed", "borrowed", "pending", "deserved"};
        struct xp_queue_figures *f = NULL;
        json_t *status = json_object();
        size_t n = 0;

        if (!status || xp_queues_figures(ctl->queues, name, &f, &n) < 0) {
                json_decref(status);
                return NULL;
        }
        for (size_t p = 0; p < XP_ELEMENTSOF(parts); p++) {
                json_t *m = json_object();
                for (size_t i = 0; m && i < n; i++) {
                        int64_t v[] = {f[i].allocated,
                                       f[i].guaranteed,
                                       f[i].borrowed,
                                       f[i].pending,
                                       f[i].deserved};
                        struct xp_quantity q = xp_quantity_from_milli(v[p]);
                        char buf[XP_QUANTITY_STRING_MAX];
                        json_object_set_new(
                            m, f[i].resource, json_string(xp_quantity_format(&q, buf)));
                }
                json_object_set_new(status, parts[p], m ? m : json_object());
        }
        free(f);
        return status;
}

static int status_set(json_t *queue, void *userdata)
{
        json_t *status = userdata;

        if (json_equal(json_object_get(queue, "status"), status))
                return 0;
        return json_object_set(queue, "status", status) < 0 ? -ENOMEM : 1;
}

void queue_ctl_flush(struct queue_ctl *ctl)
{
        int64_t now = xp_clock_monotonic_ms(ctl->clock);

        if (!ctl->dirty || now - ctl->flushed_ms < STATUS_MS)
                return;
        ctl->dirty = false;
        ctl->flushed_ms = now;
        xp_queues_compute(ctl->queues);
        for (size_t i = 0; i < ctl->defined.cap; i++) {
                const char *name =
                    ctl->defined.keys && ctl->defined.keys[i] ? ctl->defined.values[i] : NULL;
                struct xp_error err = {0};
                json_t *status;
                int r;

                if (!name || !(status = figures_json(ctl, name)))
                        continue;
                r = xp_registry_change(
                    ctl->registry, QUEUE_KIND_RESOURCE, "", name, status_set, status, NULL, &err);
                if (r < 0 && r != -ENOENT)
                        xp_log(LOG_WARNING,
                               "queues: status of Queue %s not written: %s",
                               name,
                               err.msg[0] ? err.msg : strerror(-r));
                json_decref(status);
        }
}
