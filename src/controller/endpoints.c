/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The endpoints controller (xpool/endpoints.h): each namespace's Endpoints and EndpointSlices
 * set to what its Services with a selector and its pods make (endpoints_calc.c). Level-
 * triggered and idempotent: a sync writes only what differs, so its own writes, which queue the
 * namespace again, end in a sync that writes nothing. What it wrote for a Service that is gone
 * (its managed-by labels say so) it deletes; Endpoints of Services without a selector are the
 * user's and never touched: they are mirrored into EndpointSlices (endpoints_mirror.c), as
 * kube-controller-manager's endpointslicemirroring controller does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "nsqueue.h"
#include "xpool/doc.h"
#include "xpool/endpoints.h"
#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

struct xp_endpoints {
        struct xp_registry *registry;
        struct xp_nsqueue *queue;
};

static const struct xp_informer_handler followed[] = {
    {.resource = "services",
     .add = xp_nsqueue_anchor,
     .update = xp_nsqueue_anchor,
     .delete = xp_nsqueue_anchor_deleted},
    /* pods matter only to a namespace's Services with a selector (the anchors) */
    {.resource = "pods",
     .add = xp_nsqueue_dependent,
     .update = xp_nsqueue_dependent,
     .delete = xp_nsqueue_dependent},
    {.resource = "endpoints",
     .add = xp_nsqueue_object,
     .update = xp_nsqueue_object,
     .delete = xp_nsqueue_object},
    {.resource = "endpointslices", .update = xp_nsqueue_object, .delete = xp_nsqueue_object},
};

/* ---- writes --------------------------------------------------------------------------------- */

/* The registry's change: the members the controller owns set as want's. */
static int set_owned(json_t *stored, void *userdata)
{
        static const char *const owned[] = {"subsets", "endpoints", "ports", "addressType"};
        const json_t *want = userdata;
        json_t *meta = json_object_get(stored, "metadata");
        const json_t *labels = xp_json_at(want, "metadata.labels");
        int changed = 0;

        if (!json_equal(json_object_get(meta, "labels"), labels)) {
                if (json_object_set(meta, "labels", (json_t *)labels) < 0)
                        return -ENOMEM;
                changed = 1;
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(owned); i++) {
                json_t *w = json_object_get(want, owned[i]);

                if (json_equal(json_object_get(stored, owned[i]), w) ||
                    (!w && !json_object_get(stored, owned[i])))
                        continue;
                if (w ? json_object_set(stored, owned[i], w) < 0
                      : json_object_del(stored, owned[i]) < 0)
                        return -ENOMEM;
                changed = 1;
        }
        return changed;
}

/* Creates want (borrowed) of kind, or sets the stored one of its name like it. */
static int
ensure(struct xp_registry *registry, const struct xp_kind *kind, json_t *want, struct xp_error *err)
{
        const char *ns = xp_json_str_at(want, "metadata.namespace", "");
        const char *name = xp_json_str_at(want, "metadata.name", "");
        json_t *copy = json_deep_copy(want), *out = NULL;
        void *object = NULL;
        int r;

        r = xp_registry_change(registry, kind->plural, ns, name, set_owned, want, NULL, err);
        if (r != -ENOENT) {
                json_decref(copy);
                return r < 0 ? r : 0;
        }
        *err = (struct xp_error){0};
        r = copy ? kind->from_json(copy, NULL, 0, &object, err) : -ENOMEM;
        if (r >= 0)
                r = xp_registry_namespace_hold(registry, ns, err);
        if (r >= 0) {
                r = xp_registry_create(registry, kind, ns, object, NULL, false, &out, err);
                xp_registry_namespace_release(registry, ns);
        }
        if (object)
                kind->free(object);
        json_decref(out);
        json_decref(copy);
        /* a namespace being deleted takes its objects with it; -EEXIST: a race, the next sync */
        return r == -EEXIST ? 0 : r < 0 ? r : 0;
}

/* Deleted as a user's DELETE is: finalizers hold it marked until an update takes them away. */
static int remove_object(struct xp_registry *registry,
                         const char *resource,
                         const json_t *object,
                         struct xp_error *err)
{
        int r = xp_registry_delete(registry,
                                   resource,
                                   xp_json_str_at(object, "metadata.namespace", ""),
                                   xp_json_str_at(object, "metadata.name", ""),
                                   0,
                                   NULL,
                                   err);

        return r == -ENOENT ? 0 : r;
}

/* ---- one namespace -------------------------------------------------------------------------- */

struct ns_state {
        struct xp_endpoints *c;
        json_t *services, *pods, *endpoints, *slices;
        json_t *wanted; /* the names of the slices this sync wrote (Services' and mirrored) */
};

/* The object of objects (Services, Endpoints) named name, or NULL. */
static const json_t *object_named(const json_t *objects, const char *name)
{
        size_t i;
        json_t *o;

        json_array_foreach(objects, i, o)
        {
                if (xp_streq0(xp_json_str_at(o, "metadata.name", ""), name))
                        return o;
        }
        return NULL;
}

static bool has_selector(const json_t *service)
{
        return json_object_size(xp_json_object_at(service, "spec.selector")) > 0;
}

/* The slices (taken) written, and their names wanted. */
static int ensure_slices(struct ns_state *st, json_t *slices, struct xp_error *err)
{
        json_t *slice;
        size_t i;
        int r = slices ? 0 : -ENOMEM;

        json_array_foreach(slices, i, slice)
        {
                if (r >= 0)
                        r = ensure(st->c->registry, &xp_kind_endpointslice, slice, err);
                if (r >= 0)
                        r = json_object_set_new(st->wanted,
                                                xp_json_str_at(slice, "metadata.name", ""),
                                                json_true()) < 0
                                ? -ENOMEM
                                : 0;
        }
        json_decref(slices);
        return r;
}

/* The Service's Endpoints and slices written. */
static int sync_service(struct ns_state *st, const json_t *service, struct xp_error *err)
{
        json_t *endpoints = xp_endpoints_compute(service, st->pods);
        int r = endpoints ? ensure(st->c->registry, &xp_kind_endpoints, endpoints, err) : -ENOMEM;

        json_decref(endpoints);
        return r < 0 ? r : ensure_slices(st, xp_endpointslices_compute(service, st->pods), err);
}

/* The user's Endpoints of a Service without a selector mirrored into slices. */
static int mirror_service(struct ns_state *st, const json_t *service, struct xp_error *err)
{
        const json_t *endpoints =
            object_named(st->endpoints, xp_json_str_at(service, "metadata.name", ""));

        if (!endpoints || !xp_endpoints_mirrored(endpoints))
                return 0;
        return ensure_slices(st, xp_endpointslices_mirror(endpoints), err);
}

/* A label's value, "" when unset (label keys have dots: no xp_json_str_at() path). */
static const char *label(const json_t *object, const char *key)
{
        const char *value =
            json_string_value(json_object_get(xp_json_object_at(object, "metadata.labels"), key));

        return value ? value : "";
}

/* What the controller wrote and no Service with a selector wants any more. */
static int remove_stale(struct ns_state *st, struct xp_error *err)
{
        struct xp_registry *registry = st->c->registry;
        size_t i;
        json_t *o;
        int r = 0;

        json_array_foreach(st->endpoints, i, o)
        {
                const char *by = label(o, XP_ENDPOINTS_MANAGED_BY_LABEL);

                if (r >= 0 && xp_streq0(by, XP_ENDPOINTS_MANAGED_BY) &&
                    !object_named(st->services, xp_json_str_at(o, "metadata.name", "")))
                        r = remove_object(registry, "endpoints", o, err);
        }
        json_array_foreach(st->slices, i, o)
        {
                const char *by = label(o, XP_ENDPOINTSLICE_MANAGED_LABEL);
                const char *of = label(o, XP_ENDPOINTSLICE_SERVICE_LABEL);
                const json_t *service = object_named(st->services, of);
                bool wanted = json_object_get(st->wanted, xp_json_str_at(o, "metadata.name", ""));

                if (r >= 0 && xp_streq0(by, XP_ENDPOINTSLICE_MIRRORED_BY) && !wanted)
                        r = remove_object(registry, "endpointslices", o, err);
                if (r < 0 || !xp_streq0(by, XP_ENDPOINTSLICE_MANAGED_BY))
                        continue;
                /* a Service without a selector keeps what it had, as Kubernetes leaves it */
                if (!service || (has_selector(service) && !wanted))
                        r = remove_object(registry, "endpointslices", o, err);
        }
        return r;
}

static int sync_namespace(void *userdata, const char *ns, int64_t *recheck, struct xp_error *err)
{
        struct ns_state st = {.c = userdata, .wanted = json_object()};
        struct xp_store *store = xp_registry_store(st.c->registry);
        uint64_t version;
        bool any = false;
        size_t i;
        json_t *s;
        int r = st.wanted ? 0 : -ENOMEM;

        (void)recheck;
        if (r >= 0)
                r = xp_store_list(store, "services", ns, &st.services, &version, err);
        json_array_foreach(st.services, i, s) any |= has_selector(s);
        /* only namespaces with selecting Services pay for listing their pods */
        if (r >= 0 && any)
                r = xp_store_list(store, "pods", ns, &st.pods, &version, err);
        if (r >= 0)
                r = xp_store_list(store, "endpoints", ns, &st.endpoints, &version, err);
        json_array_foreach(st.services, i, s)
        {
                if (r < 0 || xp_json_at(s, "metadata.deletionTimestamp"))
                        continue;
                r = has_selector(s) ? sync_service(&st, s, err) : mirror_service(&st, s, err);
        }
        if (r >= 0)
                r = xp_store_list(store, "endpointslices", ns, &st.slices, &version, err);
        if (r >= 0)
                r = remove_stale(&st, err);
        json_decref(st.services);
        json_decref(st.pods);
        json_decref(st.endpoints);
        json_decref(st.slices);
        json_decref(st.wanted);
        return r;
}

static const struct xp_nsqueue_ops endpoints_ops = {
    .name = "endpoints",
    .handlers = followed,
    .n_handlers = XP_ELEMENTSOF(followed),
    .sync = sync_namespace,
    .anchor = has_selector,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
};

int xp_endpoints_new(struct xp_registry *registry, struct xp_endpoints **ret, struct xp_error *err)
{
        struct xp_endpoints *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        c->registry = registry;
        r = xp_nsqueue_new(registry, &endpoints_ops, c, &c->queue, err);
        if (r < 0) {
                free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_endpoints_start(struct xp_registry *registry,
                       struct xp_endpoints **ret,
                       struct xp_error *err)
{
        struct xp_endpoints *c = NULL;
        int r = xp_endpoints_new(registry, &c, err);

        if (r >= 0)
                r = xp_nsqueue_start(c->queue, err);
        if (r < 0) {
                xp_endpoints_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_endpoints_step(struct xp_endpoints *c, struct xp_error *err)
{
        return xp_nsqueue_step(c->queue, err);
}

void xp_endpoints_free(struct xp_endpoints *c)
{
        if (!c)
                return;
        xp_nsqueue_free(c->queue);
        free(c);
}
