/* SPDX-License-Identifier: Apache-2.0 */
/* The discovery front end: runs the backends over one inventory, applies overrides, sorts. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend.h"
#include "catalog.h"
#include "xpool/codec.h"
#include "xpool/strutil.h"

/* nvml before pci: a GPU NVML knows gets its UUID as id and its NVLinks first. */
static const struct xp_device_backend *const backends[] = {
    &xp_cpu_backend,
    &xp_nvml_backend,
    &xp_pci_backend,
    &xp_sim_backend,
};

static const char *const backend_names[] = {"cpu", "nvml", "pci", "sim", NULL};

const char *const *xp_device_backend_names(void)
{
        return backend_names;
}

int xp_discovery_set_string(char **field, const char *value)
{
        char *copy = NULL;

        if (value && !(copy = strdup(value)))
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

struct xp_device *xp_discovery_add_device(struct xp_discovery *d)
{
        struct xp_node_inventory *inv = d->inventory;
        struct xp_device *grown =
            realloc(inv->devices.items, (inv->devices.n + 1) * sizeof(*grown));

        if (!grown)
                return NULL;
        inv->devices.items = grown;
        memset(&grown[inv->devices.n], 0, sizeof(*grown));
        return &grown[inv->devices.n++];
}

struct xp_device *xp_discovery_find_pci(struct xp_discovery *d, const char *pci_address)
{
        for (size_t i = 0; i < d->inventory->devices.n; i++) {
                struct xp_device *dev = &d->inventory->devices.items[i];

                if (dev->pci_address && strcasecmp(dev->pci_address, pci_address) == 0)
                        return dev;
        }
        return NULL;
}

struct xp_device *xp_discovery_find_id(struct xp_discovery *d, const char *id)
{
        for (size_t i = 0; i < d->inventory->devices.n; i++)
                if (xp_streq0(d->inventory->devices.items[i].id, id))
                        return &d->inventory->devices.items[i];
        return NULL;
}

const struct xp_device_link *
xp_device_link_find(const struct xp_node_inventory *inventory, const char *a, const char *b)
{
        for (size_t i = 0; i < inventory->links.n; i++) {
                const struct xp_device_link *l = &inventory->links.items[i];

                if ((xp_streq0(l->a, a) && xp_streq0(l->b, b)) ||
                    (xp_streq0(l->a, b) && xp_streq0(l->b, a)))
                        return l;
        }
        return NULL;
}

int xp_discovery_add_link(struct xp_discovery *d,
                          const char *a,
                          const char *b,
                          enum xp_link_level level,
                          int64_t nvlinks,
                          double bandwidth_gbps)
{
        struct xp_node_inventory *inv = d->inventory;
        struct xp_device_link *grown, *link;

        /* the index catches up with the links added since the last call */
        if (xp_link_index_update(&d->link_index, inv) < 0)
                return -ENOMEM;
        if (xp_link_index_find(&d->link_index, inv, a, b))
                return 0;
        /* grow geometrically: a node of n devices gets n^2/2 links (only this function adds
         * links; a list it did not allocate is taken as exactly full) */
        if (inv->links.items != d->links_array || inv->links.n >= d->links_capacity) {
                size_t capacity = inv->links.items == d->links_array ? d->links_capacity * 2 : 0;

                if (capacity < inv->links.n + 1)
                        capacity = inv->links.n + 1;
                if (capacity < 16)
                        capacity = 16;
                grown = realloc(inv->links.items, capacity * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                inv->links.items = grown;
                d->links_array = grown;
                d->links_capacity = capacity;
        }
        grown = inv->links.items;
        link = &grown[inv->links.n];
        *link = (struct xp_device_link){
            .a = strdup(a),
            .b = strdup(b),
            .level = level,
            .nvlinks = nvlinks,
            .bandwidth_gbps = bandwidth_gbps,
        };
        if (!link->a || !link->b) {
                free(link->a);
                free(link->b);
                return -ENOMEM;
        }
        inv->links.n++;
        return 1;
}

static bool override_matches(const struct xp_device_override *o, const struct xp_device *dev)
{
        if (!o->match || !*o->match)
                return false;
        if (dev->pci_id && strcasecmp(dev->pci_id, o->match) == 0)
                return true;
        return dev->model && strcasestr(dev->model, o->match);
}

static int apply_overrides(const struct xp_discovery_config *config, struct xp_node_inventory *inv)
{
        for (size_t i = 0; i < inv->devices.n; i++) {
                struct xp_device *dev = &inv->devices.items[i];

                for (size_t j = 0; j < config->n_overrides; j++) {
                        const struct xp_device_override *o = &config->overrides[j];

                        if (!override_matches(o, dev))
                                continue;
                        if (o->resource_name &&
                            xp_discovery_set_string(&dev->resource_name, o->resource_name) < 0)
                                return -ENOMEM;
                        if (o->fp16_tflops > 0)
                                dev->fp16_tflops = o->fp16_tflops;
                        if (o->fp32_tflops > 0)
                                dev->fp32_tflops = o->fp32_tflops;
                }
        }
        return 0;
}

static int compare_devices(const void *x, const void *y)
{
        const struct xp_device *a = x, *b = y;
        int c;

        if (a->kind != b->kind)
                return (int)a->kind - (int)b->kind;
        c = strcmp(a->vendor ? a->vendor : "", b->vendor ? b->vendor : "");
        if (c)
                return c;
        if (a->simulated != b->simulated)
                return (int)a->simulated - (int)b->simulated;
        if (a->index != b->index)
                return a->index < b->index ? -1 : 1;
        return strcmp(a->id ? a->id : "", b->id ? b->id : "");
}

static bool wanted(const struct xp_discovery_config *config, const char *name)
{
        if (!config->backends)
                return true;
        for (const char *const *b = config->backends; *b; b++)
                if (strcmp(*b, name) == 0)
                        return true;
        return false;
}

static int check_backend_names(const struct xp_discovery_config *config, struct xp_error *err)
{
        for (const char *const *b = config->backends; b && *b; b++) {
                bool known = false;
                char q[XP_QUOTE_MAX];

                for (const char *const *n = backend_names; *n; n++)
                        known = known || strcmp(*n, *b) == 0;
                if (!known)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "unknown discovery backend %s: the backends are cpu, nvml, pci and sim",
                            xp_quote(*b, q));
        }
        return 0;
}

int xp_device_discover(const struct xp_discovery_config *config,
                       struct xp_node_inventory **ret,
                       struct xp_error *err)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        const char *root = config->root ? config->root : "/";
        struct xp_discovery d = {.config = config, .root_fd = -1};
        int r;

        r = check_backend_names(config, err);
        if (r < 0)
                return r;
        inv = calloc(1, sizeof(*inv));
        if (!inv)
                return -ENOMEM;
        d.inventory = inv;
        d.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (d.root_fd < 0)
                return xp_errorf(
                    err, -errno, "cannot open the discovery root %s: %s", root, strerror(errno));

        for (size_t i = 0; i < XP_ELEMENTSOF(backends) && r >= 0; i++) {
                const struct xp_device_backend *b = backends[i];

                if (!wanted(config, b->name) || b->probe(&d) < 0)
                        continue;
                r = b->discover(&d, err);
                if (b->release)
                        b->release(&d);
                d.state = NULL;
        }
        close(d.root_fd);
        xp_link_index_done(&d.link_index);
        if (r < 0)
                return r;

        for (size_t i = 0; i < inv->devices.n; i++)
                xp_device_catalog_fill(&inv->devices.items[i]);
        r = apply_overrides(config, inv);
        if (r < 0)
                return r;
        if (inv->devices.n > 1)
                qsort(inv->devices.items,
                      inv->devices.n,
                      sizeof(*inv->devices.items),
                      compare_devices);

        /* what a backend found must be an inventory the API accepts */
        r = xp_node_inventory_validate(inv, err);
        if (r < 0)
                return xp_error_prefix(err, r, "discovery produced an invalid inventory");
        *ret = TAKE_PTR(inv);
        return 0;
}
