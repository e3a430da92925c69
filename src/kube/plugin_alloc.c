/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocate and GetPreferredAllocation for one container (plugin_internal.h). The environment is
 * the process runtime's own table (xp_devenv_build over a placement of exactly the chosen
 * devices) and the preference is the scheduler core's device selection: nothing is decided here
 * twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"
#include "xpool/array.h"
#include "xpool/cdi.h"
#include "xpool/devenv.h"
#include "xpool/sched.h"
#include "xpool/strutil.h"

static int
find_slot(const struct xp_node_inventory *inv, const struct kube_resource *res, const char *id)
{
        for (size_t i = 0; i < res->n; i++)
                if (xp_streq0(inv->devices.items[res->slots[i]].id, id))
                        return (int)i;
        return -1;
}

void kube_allocate_free(V1beta1__ContainerAllocateResponse *resp)
{
        if (resp)
                protobuf_c_message_free_unpacked(&resp->base, NULL);
}

/* Appends a message to a repeated field (void ** array, size_t count); on -ENOMEM the caller
 * still owns it. */
static int append(void ***items, size_t *n, void *item)
{
        void **grown = realloc(*items, (*n + 1) * sizeof(*grown));

        if (!grown)
                return -ENOMEM;
        grown[(*n)++] = item;
        *items = grown;
        return 0;
}

static int give_up(ProtobufCMessage *item)
{
        protobuf_c_message_free_unpacked(item, NULL);
        return -ENOMEM;
}

static int add_env(V1beta1__ContainerAllocateResponse *resp, char *const *env)
{
        for (; env && *env; env++) {
                V1beta1__ContainerAllocateResponse__EnvsEntry *e = malloc(sizeof(*e));
                const char *eq = strchr(*env, '=');

                if (!e)
                        return -ENOMEM;
                v1beta1__container_allocate_response__envs_entry__init(e);
                e->key = strndup(*env, (size_t)(eq - *env));
                e->value = strdup(eq + 1);
                if (!e->key || !e->value || append((void ***)&resp->envs, &resp->n_envs, e) < 0)
                        return give_up(&e->base);
        }
        return 0;
}

static int add_node(V1beta1__ContainerAllocateResponse *resp, const char *path)
{
        V1beta1__DeviceSpec *spec;

        for (size_t i = 0; i < resp->n_devices; i++)
                if (strcmp(resp->devices[i]->host_path, path) == 0)
                        return 0; /* /dev/nvidiactl and the like: once */
        spec = malloc(sizeof(*spec));
        if (!spec)
                return -ENOMEM;
        v1beta1__device_spec__init(spec);
        spec->container_path = strdup(path);
        spec->host_path = strdup(path);
        spec->permissions = strdup("rw");
        if (!spec->container_path || !spec->host_path || !spec->permissions ||
            append((void ***)&resp->devices, &resp->n_devices, spec) < 0)
                return give_up(&spec->base);
        return 0;
}

static int add_mounts(V1beta1__ContainerAllocateResponse *resp,
                      const char *resource,
                      const struct kube_alloc_config *config)
{
        for (size_t i = 0; i < config->n_mounts; i++) {
                const struct xp_kube_mount *m = &config->mounts[i];
                V1beta1__Mount *mount;

                if (!xp_streq0(m->resource, resource))
                        continue;
                mount = malloc(sizeof(*mount));
                if (!mount)
                        return -ENOMEM;
                v1beta1__mount__init(mount);
                mount->host_path = strdup(m->host_path);
                mount->container_path = strdup(m->container_path);
                mount->read_only = m->read_only;
                if (!mount->host_path || !mount->container_path ||
                    append((void ***)&resp->mounts, &resp->n_mounts, mount) < 0)
                        return give_up(&mount->base);
        }
        return 0;
}

static int add_cdi(V1beta1__ContainerAllocateResponse *resp, const struct xp_device *d)
{
        char name[XP_CDI_NAME_MAX + 64];
        V1beta1__CDIDevice *cdi;

        if (xp_cdi_device_name(d, name, sizeof(name)) < 0)
                return 0; /* nothing a runtime could inject */
        cdi = malloc(sizeof(*cdi));
        if (!cdi)
                return -ENOMEM;
        v1beta1__cdidevice__init(cdi);
        cdi->name = strdup(name);
        if (!cdi->name || append((void ***)&resp->cdi_devices, &resp->n_cdi_devices, cdi) < 0)
                return give_up(&cdi->base);
        return 0;
}

/* The placement of exactly these devices, for the environment table. */
static int placement_of(const struct xp_node_inventory *inv,
                        const struct kube_resource *res,
                        char *const *ids,
                        size_t n_ids,
                        struct xp_placement *p,
                        struct xp_error *err)
{
        p->devices.items = calloc(n_ids ? n_ids : 1, sizeof(*p->devices.items));
        if (!p->devices.items)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n_ids; i++) {
                int k = find_slot(inv, res, ids[i]);
                const struct xp_device *d;

                if (k < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "devices_ids[%zu]: %s is no %s device of this node",
                                         i,
                                         ids[i],
                                         res->name);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(ids[j], ids[i]) == 0)
                                return xp_errorf(err,
                                                 -EINVAL,
                                                 "devices_ids[%zu]: %s is listed twice",
                                                 i,
                                                 ids[i]);
                d = &inv->devices.items[res->slots[k]];
                p->devices.items[i] = (struct xp_placement_device){
                    .resource = res->name, .id = d->id, .index = d->index, .milli = 1000};
                p->devices.n++;
        }
        return 0;
}

int kube_allocate(const struct xp_node_inventory *inv,
                  const struct kube_resource *res,
                  const struct kube_alloc_config *config,
                  char *const *ids,
                  size_t n_ids,
                  V1beta1__ContainerAllocateResponse **ret,
                  struct xp_error *err)
{
        /* borrowed strings only: freed by hand below, not by xp_placement_done() */
        struct xp_placement placement = {.numa_node = -1};
        struct xp_node node = {.status.xpool = (struct xp_node_inventory *)inv};
        V1beta1__ContainerAllocateResponse *resp = NULL;
        char **env = NULL;
        int r;

        r = placement_of(inv, res, ids, n_ids, &placement, err);
        if (r >= 0)
                r = xp_devenv_build(&placement, &node, &env, err);
        if (r < 0)
                goto out;
        resp = malloc(sizeof(*resp));
        if (!resp) {
                r = -ENOMEM;
                goto out;
        }
        v1beta1__container_allocate_response__init(resp);
        r = add_env(resp, env);
        for (size_t i = 0; r >= 0 && i < n_ids; i++) {
                const struct xp_device *d =
                    &inv->devices.items[res->slots[find_slot(inv, res, ids[i])]];

                for (size_t k = 0; r >= 0 && k < d->device_nodes.n; k++)
                        r = add_node(resp, d->device_nodes.items[k]);
                if (r >= 0 && config->cdi)
                        r = add_cdi(resp, d);
        }
        if (r >= 0)
                r = add_mounts(resp, res->name, config);
        if (r < 0) {
                xp_errorf(err, r, "out of memory");
                goto out;
        }
        *ret = TAKE_PTR(resp);
out:
        kube_allocate_free(resp);
        xp_devenv_free(env);
        free(placement.devices.items);
        return r;
}

void kube_prefer_free(V1beta1__ContainerPreferredAllocationResponse *resp)
{
        if (resp)
                protobuf_c_message_free_unpacked(&resp->base, NULL);
}

/* Without a set from the core: the must-include devices, then available ones in order. */
static size_t
fallback(const V1beta1__ContainerPreferredAllocationRequest *req, size_t size, const char **out)
{
        size_t n = 0;

        for (size_t i = 0; i < req->n_must_include_deviceids && n < size; i++)
                out[n++] = req->must_include_deviceids[i];
        for (size_t i = 0; i < req->n_available_deviceids && n < size; i++) {
                bool taken = false;

                for (size_t j = 0; j < n && !taken; j++)
                        taken = strcmp(out[j], req->available_deviceids[i]) == 0;
                if (!taken)
                        out[n++] = req->available_deviceids[i];
        }
        return n;
}

/* The kubelet lists each device once; a list that does not is refused, not guessed at. */
static int duplicates(const V1beta1__ContainerPreferredAllocationRequest *req, struct xp_error *err)
{
        size_t at;
        int r;

        r = xp_first_duplicate(
            (const char *const *)req->available_deviceids, req->n_available_deviceids, &at);
        if (r > 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "available_deviceIDs[%zu]: %s is listed twice",
                                 at,
                                 req->available_deviceids[at]);
        if (r == 0)
                r = xp_first_duplicate((const char *const *)req->must_include_deviceids,
                                       req->n_must_include_deviceids,
                                       &at);
        if (r > 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "must_include_deviceIDs[%zu]: %s is listed twice",
                                 at,
                                 req->must_include_deviceids[at]);
        return r < 0 ? xp_errorf(err, r, "out of memory") : 0;
}

int kube_prefer(const struct xp_node_inventory *inv,
                const struct kube_resource *res,
                const V1beta1__ContainerPreferredAllocationRequest *req,
                V1beta1__ContainerPreferredAllocationResponse **ret,
                struct xp_error *err)
{
        struct xp_device_preference pref = {
            .resource = res->name,
            .available = (const char *const *)req->available_deviceids,
            .n_available = req->n_available_deviceids,
            .must_include = (const char *const *)req->must_include_deviceids,
            .n_must_include = req->n_must_include_deviceids,
            .size = req->allocation_size > 0 ? (size_t)req->allocation_size : 0,
        };
        V1beta1__ContainerPreferredAllocationResponse *resp;
        size_t *chosen;
        const char **ids;
        size_t n = 0;
        int r;

        r = duplicates(req, err);
        if (r < 0)
                return r;
        if (req->allocation_size <= 0 || (size_t)req->allocation_size > req->n_available_deviceids)
                return xp_errorf(err,
                                 -EINVAL,
                                 "allocation_size %d with %zu available devices",
                                 req->allocation_size,
                                 req->n_available_deviceids);
        chosen = calloc(pref.size, sizeof(*chosen));
        ids = calloc(pref.size, sizeof(*ids));
        resp = malloc(sizeof(*resp));
        if (!chosen || !ids || !resp) {
                r = xp_errorf(err, -ENOMEM, "out of memory");
                goto out;
        }
        v1beta1__container_preferred_allocation_response__init(resp);
        r = xp_sched_prefer_devices(inv, &pref, chosen, err);
        if (r < 0)
                goto out;
        if (r == 1)
                for (n = 0; n < pref.size; n++)
                        ids[n] = inv->devices.items[chosen[n]].id;
        else
                n = fallback(req, pref.size, ids);
        resp->deviceids = calloc(n ? n : 1, sizeof(char *));
        r = resp->deviceids ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                resp->deviceids[i] = strdup(ids[i]);
                if (!resp->deviceids[i])
                        r = -ENOMEM;
                else
                        resp->n_deviceids++;
        }
        if (r < 0) {
                xp_errorf(err, r, "out of memory");
                goto out;
        }
        *ret = TAKE_PTR(resp);
out:
        kube_prefer_free(resp);
        free(chosen);
        free(ids);
        return r < 0 ? r : 0;
}
