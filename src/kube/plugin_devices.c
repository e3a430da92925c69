/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device plugin's view of the inventory (plugin_internal.h): resources, health words, the
 * ListAndWatch list and socket names. Messages are built with malloc() throughout, so one
 * protobuf_c_message_free_unpacked() frees each.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"
#include "xpool/strutil.h"

static bool listed(const char *const *names, const char *name)
{
        for (; names && *names; names++)
                if (strcmp(*names, name) == 0)
                        return true;
        return false;
}

void kube_resources_free(struct kube_resource *res, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(res[i].name);
                free(res[i].slots);
                free(res[i].sent);
        }
        free(res);
}

static int compare_resources(const void *a, const void *b)
{
        return strcmp(((const struct kube_resource *)a)->name,
                      ((const struct kube_resource *)b)->name);
}

static int add_slot(struct kube_resource *r, size_t slot, enum xp_device_health health)
{
        size_t *slots = realloc(r->slots, (r->n + 1) * sizeof(*slots));
        enum xp_device_health *sent;

        if (!slots)
                return -ENOMEM;
        r->slots = slots;
        sent = realloc(r->sent, (r->n + 1) * sizeof(*sent));
        if (!sent)
                return -ENOMEM;
        r->sent = sent;
        slots[r->n] = slot;
        sent[r->n] = health;
        r->n++;
        return 0;
}

int kube_resources_build(const struct xp_node_inventory *inv,
                         const char *const *only,
                         const char *const *skip,
                         struct kube_resource **ret,
                         size_t *ret_n)
{
        struct kube_resource *res = NULL;
        size_t n = 0;

        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];
                struct kube_resource *r = NULL;

                if (!d->id || !d->resource_name || (only && !listed(only, d->resource_name)) ||
                    listed(skip, d->resource_name))
                        continue;
                for (size_t k = 0; k < n && !r; k++)
                        if (strcmp(res[k].name, d->resource_name) == 0)
                                r = &res[k];
                if (!r) {
                        struct kube_resource *grown = realloc(res, (n + 1) * sizeof(*res));

                        if (!grown)
                                goto oom;
                        res = grown;
                        r = &res[n++];
                        *r = (struct kube_resource){.name = strdup(d->resource_name)};
                        if (!r->name)
                                goto oom;
                }
                if (add_slot(r, i, d->health) < 0)
                        goto oom;
        }
        if (n > 1)
                qsort(res, n, sizeof(*res), compare_resources);
        *ret = res;
        *ret_n = n;
        return 0;
oom:
        kube_resources_free(res, n);
        return -ENOMEM;
}

const char *kube_health_word(enum xp_device_health health)
{
        return health == XP_DEVICE_UNHEALTHY ? "Unhealthy" : "Healthy";
}

bool kube_resource_health_changed(const struct xp_node_inventory *inv, struct kube_resource *res)
{
        bool changed = false;

        for (size_t i = 0; i < res->n; i++) {
                enum xp_device_health h = inv->devices.items[res->slots[i]].health;

                /* Unknown and Healthy are one word on the wire: no new list for that */
                if (strcmp(kube_health_word(h), kube_health_word(res->sent[i])) != 0)
                        changed = true;
                res->sent[i] = h;
        }
        return changed;
}

void kube_list_free(V1beta1__ListAndWatchResponse *list)
{
        if (list)
                protobuf_c_message_free_unpacked(&list->base, NULL);
}

static V1beta1__Device *device_build(const struct xp_device *d)
{
        V1beta1__Device *dev = malloc(sizeof(*dev));

        if (!dev)
                return NULL;
        v1beta1__device__init(dev);
        dev->id = strdup(d->id);
        dev->health = strdup(kube_health_word(d->health));
        if (!dev->id || !dev->health)
                goto fail;
        /* no NUMA node known: no TopologyInfo, which the kubelet reads as "any" */
        if (d->numa_node.set && d->numa_node.value >= 0) {
                dev->topology = malloc(sizeof(*dev->topology));
                if (!dev->topology)
                        goto fail;
                v1beta1__topology_info__init(dev->topology);
                dev->topology->nodes = calloc(1, sizeof(*dev->topology->nodes));
                if (!dev->topology->nodes)
                        goto fail;
                dev->topology->nodes[0] = malloc(sizeof(V1beta1__NUMANode));
                if (!dev->topology->nodes[0])
                        goto fail;
                v1beta1__numanode__init(dev->topology->nodes[0]);
                dev->topology->nodes[0]->id = d->numa_node.value;
                dev->topology->n_nodes = 1;
        }
        return dev;
fail:
        protobuf_c_message_free_unpacked(&dev->base, NULL);
        return NULL;
}

V1beta1__ListAndWatchResponse *kube_list_build(const struct xp_node_inventory *inv,
                                               const struct kube_resource *res)
{
        V1beta1__ListAndWatchResponse *list = malloc(sizeof(*list));

        if (!list)
                return NULL;
        v1beta1__list_and_watch_response__init(list);
        if (res->n > 0 && !(list->devices = calloc(res->n, sizeof(*list->devices)))) {
                kube_list_free(list);
                return NULL;
        }
        for (size_t i = 0; i < res->n; i++) {
                list->devices[i] = device_build(&inv->devices.items[res->slots[i]]);
                if (!list->devices[i]) {
                        kube_list_free(list);
                        return NULL;
                }
                list->n_devices++;
        }
        return list;
}

int kube_socket_name(const char *resource, unsigned generation, char **ret)
{
        char *name, *p;
        int n;

        if (generation == 0)
                n = asprintf(&name, "xpool-%s.sock", resource);
        else
                n = asprintf(&name, "xpool-%s.%u.sock", resource, generation);
        if (n < 0)
                return -ENOMEM;
        /* a resource name has one '/', which a file name cannot */
        for (p = name; *p; p++)
                if (*p == '/')
                        *p = '_';
        *ret = name;
        return 0;
}
