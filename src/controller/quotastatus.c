/* SPDX-License-Identifier: Apache-2.0 */
/* ResourceQuota status (xpool/quotastatus.h): status.hard and status.used kept current. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"
#include "nsqueue.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/quantity.h"
#include "xpool/quotastatus.h"
#include "xpool/registry.h"
#include "xpool/resource.h"
#include "xpool/store.h"

struct xp_quotastatus {
        struct xp_registry *registry;
        struct xp_nsqueue *queue;
};

#define COUNTED(plural)                                                                            \
        {                                                                                          \
                .resource = plural, .add = xp_nsqueue_dependent, .update = xp_nsqueue_dependent,   \
                .delete = xp_nsqueue_dependent                                                     \
        }

/* Quotas' own kind and pods, and the kinds object counts name most: their changes show at once
 * (in a namespace with a quota: the others have nothing to count); the counts of any other kind
 * are looked at again every RECOUNT_SECONDS. */
static const struct xp_informer_handler followed[] = {
    {.resource = "resourcequotas",
     .add = xp_nsqueue_anchor,
     .update = xp_nsqueue_anchor,
     .delete = xp_nsqueue_anchor_deleted},
    COUNTED("pods"),
    COUNTED("configmaps"),
    COUNTED("secrets"),
    COUNTED("services"),
    COUNTED("replicasets"),
    COUNTED("deployments"),
    COUNTED("daemonsets"),
    COUNTED("jobs"),
    COUNTED("cronjobs"),
};

#define RECOUNT_SECONDS 30

/* status = {hard: spec.hard, used: usage of each hard resource}; 1 changed, 0 as it was. */
static int set_status(json_t *quota, void *userdata)
{
        const struct xp_resource_list *usage = userdata;
        const json_t *hard = xp_json_object_at(quota, "spec.hard");
        json_t *used = json_object(), *status;
        const char *key;
        json_t *value;

        if (!used)
                return -ENOMEM;
        json_object_foreach((json_t *)hard, key, value)
        {
                const struct xp_quantity *q = xp_resource_list_get(usage, key);
                char text[XP_QUANTITY_STRING_MAX];

                (void)value;
                if (json_object_set_new(
                        used, key, json_string(q ? xp_quantity_format(q, text) : "0")) < 0) {
                        json_decref(used);
                        return -ENOMEM;
                }
        }
        status = json_pack("{s:O?, s:o}", "hard", hard ? hard : NULL, "used", used);
        if (!status)
                return -ENOMEM;
        if (json_equal(status, json_object_get(quota, "status"))) {
                json_decref(status);
                return 0;
        }
        return json_object_set_new(quota, "status", status) < 0 ? -ENOMEM : 1;
}

#define KINDS_MAX 32 /* kinds one quota counts objects of */

/* The kinds quota's object counts name, each once; *recount: one no handler follows. */
static size_t counted_kinds(const json_t *quota, const struct xp_kind **kinds, bool *recount)
{
        const char *name;
        json_t *value;
        size_t n = 0;

        json_object_foreach((json_t *)xp_json_object_at(quota, "spec.hard"), name, value)
        {
                const struct xp_kind *kind = xp_registry_quota_counted_kind(name);
                bool seen = false, followed_kind = false;

                (void)value;
                if (!kind || kind == &xp_kind_pod)
                        continue;
                for (size_t i = 0; i < n; i++)
                        seen |= kinds[i] == kind;
                for (size_t i = 0; i < XP_ELEMENTSOF(followed); i++)
                        followed_kind |= strcmp(followed[i].resource, kind->plural) == 0;
                *recount |= !followed_kind;
                if (!seen && n < KINDS_MAX)
                        kinds[n++] = kind;
        }
        return n;
}

/* usage += what the objects of every kind quota's object counts name count for. */
static int count_objects(struct xp_store *store,
                         const char *ns,
                         const json_t *quota,
                         struct xp_resource_list *usage,
                         bool *recount,
                         struct xp_error *err)
{
        const struct xp_kind *kinds[KINDS_MAX];
        size_t n = counted_kinds(quota, kinds, recount);
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++) {
                json_t *objects = NULL;
                uint64_t version;

                r = xp_store_list(store, kinds[i]->plural, ns, &objects, &version, err);
                if (r >= 0)
                        r = xp_registry_object_usage(kinds[i], quota, objects, usage);
                json_decref(objects);
        }
        return r;
}

/* The status of quota, whose pods' usage is pods_usage: the objects it counts added. */
static int write_status(struct xp_quotastatus *c,
                        const char *ns,
                        const json_t *quota,
                        struct xp_resource_list *pods_usage,
                        bool *recount,
                        struct xp_error *err)
{
        struct xp_store *store = xp_registry_store(c->registry);
        int r = count_objects(store, ns, quota, pods_usage, recount, err);

        if (r >= 0)
                r = xp_registry_change(c->registry,
                                       "resourcequotas",
                                       ns,
                                       xp_json_str_at(quota, "metadata.name", ""),
                                       set_status,
                                       pods_usage,
                                       NULL,
                                       err);
        return r == -ENOENT ? 0 : r; /* deleted meanwhile */
}

static int sync_namespace(void *userdata, const char *ns, int64_t *recheck, struct xp_error *err)
{
        struct xp_quotastatus *c = userdata;
        struct xp_resource_list *usage = NULL;
        json_t *quotas = NULL;
        uint64_t version;
        bool recount = false;
        size_t n = 0;
        int r;

        r = xp_store_list(
            xp_registry_store(c->registry), "resourcequotas", ns, &quotas, &version, err);
        n = r >= 0 ? json_array_size(quotas) : 0;
        if (n > 0) {
                usage = calloc(n, sizeof(*usage));
                r = usage ? 0 : -ENOMEM;
        }
        /* the pods' usage is admission's running totals (quota_ledger.c), not a count of its
         * own: what status shows is what the next create is checked against */
        if (r >= 0 && n > 0)
                r = xp_registry_quota_ledger_usage(c->registry, ns, quotas, usage, err);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = write_status(c, ns, json_array_get(quotas, i), &usage[i], &recount, err);
        if (recount)
                *recheck = time(NULL) + RECOUNT_SECONDS;
        for (size_t i = 0; usage && i < n; i++)
                xp_resource_list_done(&usage[i]);
        free(usage);
        json_decref(quotas);
        return r;
}

static const struct xp_nsqueue_ops quotastatus_ops = {
    .name = "quota status",
    .handlers = followed,
    .n_handlers = XP_ELEMENTSOF(followed),
    .sync = sync_namespace,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
};

int xp_quotastatus_new(struct xp_registry *registry,
                       struct xp_quotastatus **ret,
                       struct xp_error *err)
{
        struct xp_quotastatus *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        c->registry = registry;
        r = xp_nsqueue_new(registry, &quotastatus_ops, c, &c->queue, err);
        if (r < 0) {
                free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_quotastatus_start(struct xp_registry *registry,
                         struct xp_quotastatus **ret,
                         struct xp_error *err)
{
        struct xp_quotastatus *c = NULL;
        int r = xp_quotastatus_new(registry, &c, err);

        if (r >= 0)
                r = xp_nsqueue_start(c->queue, err);
        if (r < 0) {
                xp_quotastatus_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_quotastatus_step(struct xp_quotastatus *c, struct xp_error *err)
{
        return xp_nsqueue_step(c->queue, err);
}

void xp_quotastatus_free(struct xp_quotastatus *c)
{
        if (!c)
                return;
        xp_nsqueue_free(c->queue);
        free(c);
}
