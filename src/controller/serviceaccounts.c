/* SPDX-License-Identifier: Apache-2.0 */
/* The ServiceAccount `default` and the ConfigMap `kube-root-ca.crt` of every namespace
 * (xpool/serviceaccounts.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nsqueue.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/registry.h"
#include "xpool/serviceaccounts.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

struct xp_serviceaccounts {
        struct xp_registry *registry;
        char *ca_pem;
        struct xp_nsqueue *queue;
};

static void on_object(void *nsqueue, const json_t *object, uint64_t version)
{
        const char *name = xp_json_str_at(object, "metadata.name", "");

        if (xp_streq0(name, XP_SERVICEACCOUNT_DEFAULT) || xp_streq0(name, XP_ROOT_CA_CONFIGMAP))
                xp_nsqueue_object(nsqueue, object, version);
}

static const struct xp_informer_handler followed[] = {
    {.resource = "namespaces", .add = xp_nsqueue_namespace, .update = xp_nsqueue_namespace},
    {.resource = "serviceaccounts", .delete = on_object},
    {.resource = "configmaps", .update = on_object, .delete = on_object},
};

/* Creates want (taken) of kind in ns; one created meanwhile is fine. */
static int create(struct xp_registry *registry,
                  const struct xp_kind *kind,
                  const char *ns,
                  json_t *want,
                  struct xp_error *err)
{
        void *object = NULL;
        json_t *out = NULL;
        int r = want ? kind->from_json(want, NULL, 0, &object, err) : -ENOMEM;

        if (r >= 0)
                r = xp_registry_namespace_hold(registry, ns, err);
        if (r >= 0) {
                r = xp_registry_create(registry, kind, ns, object, NULL, false, &out, err);
                xp_registry_namespace_release(registry, ns);
        }
        if (object)
                kind->free(object);
        json_decref(out);
        json_decref(want);
        return r == -EEXIST ? 0 : r < 0 ? r : 0;
}

int xp_serviceaccount_default_ensure(struct xp_registry *registry,
                                     const char *ns,
                                     struct xp_error *err)
{
        /* the registry's cached lookup: every pod's admission asks, most often for nothing */
        if (xp_registry_serviceaccount_get(registry, ns, XP_SERVICEACCOUNT_DEFAULT, NULL, NULL) >=
            0)
                return 0;
        return create(registry,
                      &xp_kind_serviceaccount,
                      ns,
                      json_pack("{s:s, s:s, s:{s:s, s:s}}",
                                "apiVersion",
                                "v1",
                                "kind",
                                "ServiceAccount",
                                "metadata",
                                "name",
                                XP_SERVICEACCOUNT_DEFAULT,
                                "namespace",
                                ns),
                      err);
}

/* The registry's change: ca.crt set back to the server's. */
static int set_ca(json_t *configmap, void *userdata)
{
        const char *ca_pem = userdata;
        json_t *data = json_object_get(configmap, "data");

        if (xp_streq0(json_string_value(json_object_get(data, XP_ROOT_CA_KEY)), ca_pem))
                return 0;
        if (!json_is_object(data)) {
                data = json_object();
                if (!data || json_object_set_new(configmap, "data", data) < 0)
                        return -ENOMEM;
        }
        return json_object_set_new(data, XP_ROOT_CA_KEY, json_string(ca_pem)) < 0 ? -ENOMEM : 1;
}

static int root_ca_ensure(struct xp_serviceaccounts *c, const char *ns, struct xp_error *err)
{
        int r = xp_registry_change(
            c->registry, "configmaps", ns, XP_ROOT_CA_CONFIGMAP, set_ca, c->ca_pem, NULL, err);

        if (r != -ENOENT)
                return r < 0 ? r : 0;
        *err = (struct xp_error){0};
        return create(c->registry,
                      &xp_kind_configmap,
                      ns,
                      json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}",
                                "apiVersion",
                                "v1",
                                "kind",
                                "ConfigMap",
                                "metadata",
                                "name",
                                XP_ROOT_CA_CONFIGMAP,
                                "namespace",
                                ns,
                                "data",
                                XP_ROOT_CA_KEY,
                                c->ca_pem),
                      err);
}

static int sync_namespace(void *userdata, const char *ns, int64_t *recheck, struct xp_error *err)
{
        struct xp_serviceaccounts *c = userdata;
        json_t *namespace = NULL;
        bool live;
        int r;

        (void)recheck;
        r = xp_store_get(
            xp_registry_store(c->registry), "namespaces", "", ns, &namespace, NULL, err);
        if (r == -ENOENT) {
                *err = (struct xp_error){0};
                return 0;
        }
        if (r < 0)
                return r;
        live = !xp_json_at(namespace, "metadata.deletionTimestamp");
        json_decref(namespace);
        if (!live)
                return 0;
        r = xp_serviceaccount_default_ensure(c->registry, ns, err);
        if (r >= 0 && c->ca_pem)
                r = root_ca_ensure(c, ns, err);
        /* a namespace deleted meanwhile takes its objects with it */
        if (r == -ENOENT || r == -XP_REGISTRY_TERMINATING) {
                *err = (struct xp_error){0};
                r = 0;
        }
        return r;
}

static const struct xp_nsqueue_ops serviceaccounts_ops = {
    .name = "service accounts",
    .handlers = followed,
    .n_handlers = XP_ELEMENTSOF(followed),
    .sync = sync_namespace,
};

int xp_serviceaccounts_new(struct xp_registry *registry,
                           const char *ca_pem,
                           struct xp_serviceaccounts **ret,
                           struct xp_error *err)
{
        struct xp_serviceaccounts *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        c->registry = registry;
        if (ca_pem && !(c->ca_pem = strdup(ca_pem))) {
                free(c);
                return -ENOMEM;
        }
        r = xp_nsqueue_new(registry, &serviceaccounts_ops, c, &c->queue, err);
        if (r < 0) {
                xp_serviceaccounts_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_serviceaccounts_start(struct xp_registry *registry,
                             const char *ca_pem,
                             struct xp_serviceaccounts **ret,
                             struct xp_error *err)
{
        struct xp_serviceaccounts *c;
        int r = xp_serviceaccounts_new(registry, ca_pem, &c, err);

        if (r < 0)
                return r;
        r = xp_nsqueue_start(c->queue, err);
        if (r < 0) {
                xp_serviceaccounts_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_serviceaccounts_step(struct xp_serviceaccounts *c, struct xp_error *err)
{
        return xp_nsqueue_step(c->queue, err);
}

void xp_serviceaccounts_free(struct xp_serviceaccounts *c)
{
        if (!c)
                return;
        xp_nsqueue_free(c->queue);
        free(c->ca_pem);
        free(c);
}
