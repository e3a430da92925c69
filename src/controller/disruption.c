/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The disruption controller (xpool/disruption.h): each PodDisruptionBudget's status kept from
 * the pods it selects and their controllers' scale, written through the status as
 * kube-controller-manager does; the arithmetic is disruption_calc.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"
#include "informer.h"
#include "workqueue.h"
#include "xpool/disruption.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 10000
#define IDLE_MS      60000

struct xp_disruption {
        struct xp_registry *registry;
        struct xp_informer *informer;
        struct xp_workqueue *namespaces;
        struct xp_controller *loop;
};

static void queue_namespace(void *userdata, const json_t *object, uint64_t version)
{
        struct xp_disruption *c = userdata;
        const char *ns = xp_json_str_at(object, "metadata.namespace", NULL);

        (void)version;
        if (ns)
                xp_workqueue_add(c->namespaces, ns);
}

static const struct xp_informer_handler followed[] = {
    {.resource = "poddisruptionbudgets", .add = queue_namespace, .update = queue_namespace},
    {.resource = "pods",
     .add = queue_namespace,
     .update = queue_namespace,
     .delete = queue_namespace},
    {.resource = "replicasets", .add = queue_namespace, .update = queue_namespace},
    {.resource = "deployments", .add = queue_namespace, .update = queue_namespace},
};

/* ---- the controllers' scale (Kubernetes' getExpectedScale) ----------------------------------- */

static const json_t *controller_ref(const json_t *object)
{
        size_t i;
        json_t *ref;

        json_array_foreach(xp_json_at(object, "metadata.ownerReferences"), i, ref)
        {
                if (json_is_true(json_object_get(ref, "controller")))
                        return ref;
        }
        return NULL;
}

/* The object ref names, NULL when it is gone or another object of that name (uid). New. */
static json_t *get_ref(struct xp_store *store, const char *ns, const json_t *ref)
{
        const struct xp_kind *kind = xp_kind_by_api_version(xp_json_str_at(ref, "apiVersion", ""),
                                                            xp_json_str_at(ref, "kind", ""));
        json_t *object = NULL;
        uint64_t version;
        struct xp_error err = {0};

        if (!kind ||
            xp_store_get(
                store, kind->plural, ns, xp_json_str_at(ref, "name", ""), &object, &version, &err) <
                0)
                return NULL;
        if (!xp_streq0(xp_json_str_at(object, "metadata.uid", ""),
                       xp_json_str_at(ref, "uid", ""))) {
                json_decref(object);
                return NULL;
        }
        return object;
}

/* A controller's scale: its spec.replicas (1 when unset) by its kind's scale paths. 1 found,
 * 0 not a kind with a scale. */
static int scale_of(const json_t *object, int64_t *ret)
{
        const struct xp_kind *kind = xp_kind_by_api_version(
            xp_json_str_at(object, "apiVersion", ""), xp_json_str_at(object, "kind", ""));

        if (!kind || !kind->scale)
                return 0;
        *ret = xp_json_int_at(object, kind->scale->spec_replicas, 1);
        return 1;
}

/*
 * The pod's controller, up to the Deployment of a ReplicaSet: *ret its scale, *ret_uid its uid
 * (borrowed from *ret_owner, caller decrefs). 1 found, 0 unmanaged (no controller), -ENOENT
 * when the controller is not there or has no scale.
 */
static int
pod_controller(struct xp_store *store, const json_t *pod, json_t **ret_owner, int64_t *ret)
{
        const char *ns = xp_json_str_at(pod, "metadata.namespace", "");
        const json_t *ref = controller_ref(pod), *up;
        json_t *owner, *top;

        if (!ref)
                return 0;
        owner = get_ref(store, ns, ref);
        if (!owner)
                return -ENOENT;
        up = controller_ref(owner);
        if (xp_streq0(xp_json_str_at(owner, "kind", ""), "ReplicaSet") && up &&
            xp_streq0(xp_json_str_at(up, "kind", ""), "Deployment")) {
                top = get_ref(store, ns, up);
                json_decref(owner);
                if (!top)
                        return -ENOENT;
                owner = top;
        }
        *ret_owner = owner;
        if (!scale_of(owner, ret))
                return -ENOENT;
        return 1;
}

/* The sum of the scales of the pods' controllers, each counted once. -ENOENT with err when a
 * pod's controller cannot be found. */
static int
expected_scale(struct xp_store *store, const json_t *pods, int64_t *ret, struct xp_error *err)
{
        json_t *seen = json_object();
        size_t i;
        json_t *pod;
        int r = seen ? 0 : -ENOMEM;

        *ret = 0;
        json_array_foreach(pods, i, pod)
        {
                json_t *owner = NULL;
                int64_t scale = 0;
                const char *uid;

                if (r < 0)
                        break;
                r = pod_controller(store, pod, &owner, &scale);
                if (r == -ENOENT)
                        r = xp_errorf(err,
                                      -ENOENT,
                                      "found no controllers for pod \"%s\"",
                                      xp_json_str_at(pod, "metadata.name", ""));
                uid = xp_json_str_at(owner, "metadata.uid", "");
                if (r > 0 && !json_object_get(seen, uid)) {
                        *ret += scale;
                        r = json_object_set_new(seen, uid, json_true()) < 0 ? -ENOMEM : 0;
                }
                json_decref(owner);
        }
        json_decref(seen);
        return r < 0 ? r : 0;
}

/* ---- one budget ----------------------------------------------------------------------------- */

struct budget_update {
        const json_t *pods; /* the namespace's */
        struct xp_store *store;
        int64_t now;
        int64_t recheck; /* out: when a disrupted pod's entry expires */
};

/* The registry's change: the budget's status from its pods, as read with it. */
static int update_budget(json_t *pdb, void *userdata)
{
        struct budget_update *u = userdata;
        struct xp_disruption_counts counts;
        struct xp_error err = {0};
        json_t *selected = json_array(), *disrupted = NULL;
        int64_t scale = 0;
        size_t i;
        json_t *pod;
        int r = selected ? 0 : -ENOMEM;

        json_array_foreach(u->pods, i, pod)
        {
                if (r >= 0 && xp_disruption_selects(pdb, pod))
                        r = json_array_append(selected, pod) < 0 ? -ENOMEM : 0;
        }
        if (r >= 0 && xp_disruption_needs_scale(pdb))
                r = expected_scale(u->store, selected, &scale, &err);
        if (r == -ENOENT)
                r = xp_disruption_set_failed(pdb, xp_error_message(&err), u->now);
        else if (r >= 0)
                r = xp_disruption_count(
                    pdb, selected, scale, u->now, &disrupted, &u->recheck, &counts);
        if (r >= 0 && disrupted)
                r = xp_disruption_set_status(pdb, &counts, disrupted, u->now);
        json_decref(disrupted);
        json_decref(selected);
        return r;
}

static int
sync_namespace(struct xp_disruption *c, const char *ns, int64_t *recheck, struct xp_error *err)
{
        struct xp_store *store = xp_registry_store(c->registry);
        json_t *pdbs = NULL, *pods = NULL, *pdb;
        uint64_t version;
        size_t i;
        int r;

        r = xp_store_list(store, "poddisruptionbudgets", ns, &pdbs, &version, err);
        if (r >= 0 && json_array_size(pdbs) > 0)
                r = xp_store_list(store, "pods", ns, &pods, &version, err);
        json_array_foreach(pdbs, i, pdb)
        {
                struct budget_update u = {.pods = pods, .store = store, .now = time(NULL)};

                if (r < 0)
                        break;
                r = xp_registry_change(c->registry,
                                       "poddisruptionbudgets",
                                       ns,
                                       xp_json_str_at(pdb, "metadata.name", ""),
                                       update_budget,
                                       &u,
                                       NULL,
                                       err);
                if (r == -ENOENT) /* deleted meanwhile */
                        r = 0;
                if (u.recheck && (*recheck == 0 || u.recheck < *recheck))
                        *recheck = u.recheck;
        }
        json_decref(pdbs);
        json_decref(pods);
        return r;
}

static int64_t disruption_work(void *userdata)
{
        struct xp_disruption *c = userdata;
        const char *ns;
        int64_t next;

        while (xp_workqueue_get(c->namespaces, &ns) > 0) {
                struct xp_error err = {0};
                int64_t recheck = 0;

                if (sync_namespace(c, ns, &recheck, &err) < 0) {
                        xp_log(LOG_WARNING,
                               "disruption: namespace %s: %s",
                               ns,
                               xp_error_message(&err));
                        xp_workqueue_add_rate_limited(c->namespaces, ns);
                } else {
                        xp_workqueue_forget(c->namespaces, ns);
                        /* a disrupted pod that was not deleted counts again once its entry expires
                         */
                        if (recheck)
                                xp_workqueue_add_after(
                                    c->namespaces, ns, (recheck - time(NULL) + 1) * 1000);
                }
                xp_workqueue_done(c->namespaces, ns);
                if (c->loop && xp_controller_stopping(c->loop))
                        break;
        }
        next = xp_workqueue_next_ms(c->namespaces);
        return next >= 0 && next < IDLE_MS ? next : IDLE_MS;
}

static const struct xp_controller_ops disruption_ops = {
    .name = "disruption",
    .work = disruption_work,
    .retry_ms = RETRY_MIN_MS,
};

int xp_disruption_new(struct xp_registry *registry,
                      struct xp_disruption **ret,
                      struct xp_error *err)
{
        struct xp_disruption *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        c->registry = registry;
        struct xp_workqueue_options queue = {.base_delay_ms = RETRY_MIN_MS,
                                             .max_delay_ms = RETRY_MAX_MS};
        struct xp_informer_options informer = {
            .store = xp_registry_store(registry),
            .handlers = followed,
            .n_handlers = XP_ELEMENTSOF(followed),
            .userdata = c,
        };
        r = xp_workqueue_new(&queue, &c->namespaces);
        if (r >= 0)
                r = xp_informer_new(&informer, &c->informer);
        if (r >= 0)
                r = xp_informer_list(c->informer, err);
        if (r < 0) {
                xp_disruption_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_disruption_start(struct xp_registry *registry,
                        struct xp_disruption **ret,
                        struct xp_error *err)
{
        struct xp_disruption *c;
        int r = xp_disruption_new(registry, &c, err);

        if (r < 0)
                return r;
        r = xp_controller_start(&disruption_ops, c->informer, c, &c->loop, err);
        if (r < 0) {
                xp_disruption_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_disruption_step(struct xp_disruption *c, struct xp_error *err)
{
        int r = xp_informer_sync(c->informer, err);

        if (r < 0)
                return r;
        disruption_work(c);
        return 0;
}

void xp_disruption_free(struct xp_disruption *c)
{
        if (!c)
                return;
        xp_controller_stop(c->loop);
        xp_informer_free(c->informer);
        xp_workqueue_free(c->namespaces);
        free(c);
}
