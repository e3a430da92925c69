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
#include "disruption_stale.h"
#include "nsqueue.h"
#include "xpool/disruption.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

struct xp_disruption {
        struct xp_registry *registry;
        struct xp_nsqueue *queue;
        struct xp_nsqueue *stale; /* pods' stale DisruptionTarget marks (disruption_stale.c) */
};

static const struct xp_informer_handler followed[] = {
    {.resource = "poddisruptionbudgets",
     .add = xp_nsqueue_anchor,
     .update = xp_nsqueue_anchor,
     .delete = xp_nsqueue_anchor_deleted},
    /* only a namespace with a budget has anything to compute */
    {.resource = "pods",
     .add = xp_nsqueue_dependent,
     .update = xp_nsqueue_dependent,
     .delete = xp_nsqueue_dependent},
    {.resource = "replicasets", .add = xp_nsqueue_dependent, .update = xp_nsqueue_dependent},
    {.resource = "deployments", .add = xp_nsqueue_dependent, .update = xp_nsqueue_dependent},
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

/* The namespace's budgets from its pods; *recheck: when a disrupted pod's entry expires. */
static int sync_namespace(void *userdata, const char *ns, int64_t *recheck, struct xp_error *err)
{
        struct xp_disruption *c = userdata;
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

static const struct xp_nsqueue_ops disruption_ops = {
    .name = "disruption",
    .handlers = followed,
    .n_handlers = XP_ELEMENTSOF(followed),
    .sync = sync_namespace,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
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
        r = xp_nsqueue_new(registry, &disruption_ops, c, &c->queue, err);
        if (r >= 0)
                r = disruption_stale_new(registry, &c->stale, err);
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
        struct xp_disruption *c = NULL;
        int r = xp_disruption_new(registry, &c, err);

        if (r >= 0)
                r = xp_nsqueue_start(c->queue, err);
        if (r >= 0)
                r = xp_nsqueue_start(c->stale, err);
        if (r < 0) {
                xp_disruption_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_disruption_step(struct xp_disruption *c, struct xp_error *err)
{
        int r = xp_nsqueue_step(c->queue, err);

        return r < 0 ? r : xp_nsqueue_step(c->stale, err);
}

void xp_disruption_free(struct xp_disruption *c)
{
        if (!c)
                return;
        xp_nsqueue_free(c->queue);
        xp_nsqueue_free(c->stale);
        free(c);
}
