/* SPDX-License-Identifier: Apache-2.0 */
/* ResourceQuota status (xpool/quotastatus.h): status.hard and status.used kept current. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "informer.h"
#include "workqueue.h"
#include "xpool/doc.h"
#include "xpool/log.h"
#include "xpool/quantity.h"
#include "xpool/quotastatus.h"
#include "xpool/registry.h"
#include "xpool/resource.h"
#include "xpool/store.h"

#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 10000
#define IDLE_MS      60000

struct xp_quotastatus {
        struct xp_registry *registry;
        struct xp_informer *informer;
        struct xp_workqueue *namespaces;
        struct xp_controller *loop;
};

static void queue_namespace(void *userdata, const json_t *object, uint64_t version)
{
        struct xp_quotastatus *c = userdata;
        const char *ns = xp_json_str_at(object, "metadata.namespace", NULL);

        (void)version;
        if (ns)
                xp_workqueue_add(c->namespaces, ns);
}

static const struct xp_informer_handler followed[] = {
    {.resource = "resourcequotas", .add = queue_namespace, .update = queue_namespace},
    {.resource = "pods",
     .add = queue_namespace,
     .update = queue_namespace,
     .delete = queue_namespace},
};

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

static int sync_namespace(struct xp_quotastatus *c, const char *ns, struct xp_error *err)
{
        struct xp_store *store = xp_registry_store(c->registry);
        struct xp_resource_list usage = {0};
        json_t *quotas = NULL, *pods = NULL, *quota;
        uint64_t version;
        size_t i;
        int r;

        r = xp_store_list(store, "resourcequotas", ns, &quotas, &version, err);
        if (r >= 0 && json_array_size(quotas) > 0)
                r = xp_store_list(store, "pods", ns, &pods, &version, err);
        if (r >= 0)
                r = xp_registry_namespace_usage(pods, &usage);
        json_array_foreach(quotas, i, quota)
        {
                if (r >= 0)
                        r = xp_registry_change(c->registry,
                                               "resourcequotas",
                                               ns,
                                               xp_json_str_at(quota, "metadata.name", ""),
                                               set_status,
                                               &usage,
                                               NULL,
                                               err);
                if (r == -ENOENT) /* deleted meanwhile */
                        r = 0;
        }
        xp_resource_list_done(&usage);
        json_decref(quotas);
        json_decref(pods);
        return r;
}

static int64_t quotastatus_work(void *userdata)
{
        struct xp_quotastatus *c = userdata;
        const char *ns;

        while (xp_workqueue_get(c->namespaces, &ns) > 0) {
                struct xp_error err = {0};

                if (sync_namespace(c, ns, &err) < 0) {
                        xp_log(LOG_WARNING,
                               "quota status: namespace %s: %s",
                               ns,
                               xp_error_message(&err));
                        xp_workqueue_add_rate_limited(c->namespaces, ns);
                } else {
                        xp_workqueue_forget(c->namespaces, ns);
                }
                xp_workqueue_done(c->namespaces, ns);
                if (c->loop && xp_controller_stopping(c->loop))
                        break;
        }
        {
                int64_t next = xp_workqueue_next_ms(c->namespaces);

                return next >= 0 && next < IDLE_MS ? next : IDLE_MS;
        }
}

static const struct xp_controller_ops quotastatus_ops = {
    .name = "quota status",
    .work = quotastatus_work,
    .retry_ms = RETRY_MIN_MS,
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
                xp_quotastatus_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_quotastatus_start(struct xp_registry *registry,
                         struct xp_quotastatus **ret,
                         struct xp_error *err)
{
        struct xp_quotastatus *c;
        int r = xp_quotastatus_new(registry, &c, err);

        if (r < 0)
                return r;
        r = xp_controller_start(&quotastatus_ops, c->informer, c, &c->loop, err);
        if (r < 0) {
                xp_quotastatus_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_quotastatus_step(struct xp_quotastatus *c, struct xp_error *err)
{
        int r = xp_informer_sync(c->informer, err);

        if (r < 0)
                return r;
        quotastatus_work(c);
        return 0;
}

void xp_quotastatus_free(struct xp_quotastatus *c)
{
        if (!c)
                return;
        xp_controller_stop(c->loop);
        xp_informer_free(c->informer);
        xp_workqueue_free(c->namespaces);
        free(c);
}
