/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sim backend: simulated devices and links from a node description file (YAML or JSON), for
 * demos and tests. The file has the shape of a Node's status.xpool (docs/manifests.md) and is
 * decoded by the same codec, so its errors say file:line:column and field, with conveniences
 * for people (docs/devices.md):
 *
 *   devices[].count: N           N devices from one entry, ids "<id or sim-<kind>>-<i>", index
 *                                index+i (i = 0..N-1)
 *   devices[].numaNode: [0, 1]   one NUMA node per expanded device (needs count)
 *   devices[].deviceNodes        "{index}" in a path is the expanded device's index
 *   links[].devices: [ids...]    one link of that level for every pair among the devices
 *
 * Before decoding, the conveniences are checked and rewritten in place (count removed, numaNode
 * lists reduced to their first member, a missing id filled in, link device lists replaced by
 * their first pair) so that every member keeps its JSON pointer and thus its source position;
 * each further expanded device is appended to the devices list as a stub that only makes link
 * ends known to the decoder's checks. After decoding, the entries are expanded in C.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "xpool/array.h"
#include "xpool/codec.h"
#include "xpool/fileio.h"
#include "xpool/path.h"
#include "xpool/strutil.h"
#include "xpool/yaml.h"

#define SIM_FILE_MAX   (4 * 1024 * 1024)
#define SIM_COUNT_MAX  1024 /* devices from one entry */
#define SIM_DEVICE_MAX 4096 /* devices from one description */
#define SIM_ID_MAX     256

/* Resource name of the stubs; never seen outside this file. */
#define SIM_STUB_RESOURCE "xpool.io/sim-stub"

struct sim_source {
        const char *name; /* "nodes/dgx.yaml" */
        const struct xp_source_map *map;
        struct xp_error *err;
};

/* One device entry of the description, before expansion. */
struct sim_entry {
        bool valid;            /* an object that phase one looked at */
        size_t count;          /* devices it expands to (1 without count) */
        bool has_count;        /* count was written */
        bool has_id;           /* id was written */
        json_t *numa_list;     /* owned reference to the numaNode list, or NULL */
        size_t first_expanded; /* index of its first id in sim_plan.ids */
};

struct sim_plan {
        struct sim_entry *entries; /* one per devices[] member */
        size_t n_entries;
        char **ids;    /* every expanded id, entry by entry */
        size_t *owner; /* ids[i] comes from entries[owner[i]] */
        size_t n_ids;
        json_t **link_devices; /* per links[] member: an owned devices list, or NULL */
        size_t n_links;
};

static void sim_plan_done(struct sim_plan *plan)
{
        for (size_t i = 0; i < plan->n_entries; i++)
                json_decref(plan->entries[i].numa_list);
        free(plan->entries);
        xp_strv_free(plan->ids, plan->n_ids);
        free(plan->owner);
        for (size_t i = 0; i < plan->n_links; i++)
                json_decref(plan->link_devices[i]);
        free(plan->link_devices);
        *plan = (struct sim_plan){0};
}

/* ---- errors at a place in the file ----------------------------------------------------------- */

static void sim_path(struct xp_path *path, const char *list, size_t index, const char *field)
{
        *path = (struct xp_path){0};
        xp_path_push_field(path, list);
        xp_path_push_index(path, index);
        if (field)
                xp_path_push_field(path, field);
}

/* `name:line:column: path: message`, the position of the deepest recorded ancestor of path. */
static int
fail_at(const struct sim_source *src, const struct xp_path *path, int code, const char *fmt, ...)
    _printf_(4, 5);

static int
fail_at(const struct sim_source *src, const struct xp_path *path, int code, const char *fmt, ...)
{
        struct xp_path at = *path;
        char message[XP_ERROR_MSG_MAX];
        char text[XP_PATH_TEXT_MAX];
        char where[64] = "";
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        xp_path_format(path, text, sizeof(text));
        for (;;) {
                char pointer[XP_PATH_TEXT_MAX];
                struct xp_source_entry entry;

                xp_path_pointer(&at, pointer, sizeof(pointer));
                if (src->map && at.depth <= XP_PATH_MAX_DEPTH &&
                    xp_source_map_lookup(src->map, pointer, &entry) == 0 && entry.value.line > 0) {
                        snprintf(
                            where, sizeof(where), ":%u:%u", entry.value.line, entry.value.column);
                        break;
                }
                if (at.depth == 0)
                        break;
                xp_path_pop(&at);
        }
        return xp_errorf(
            src->err, code, "%s%s: %s%s%s", src->name, where, text, text[0] ? ": " : "", message);
}

/* ---- reading the file ----------------------------------------------------------------------- */

static int read_description(const char *path, char **ret, size_t *ret_size, struct xp_error *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        struct stat st;
        int r;

        if (strcmp(path, "-") == 0)
                fd = dup(STDIN_FILENO);
        else
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return xp_errorf(
                    err, -errno, "cannot open the node description %s: %s", path, strerror(errno));
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
                return xp_errorf(err,
                                 -EISDIR,
                                 "the node description %s is a directory: give a YAML or JSON file",
                                 path);
        r = xp_read_fd_all(fd, SIM_FILE_MAX, &buf, &size);
        if (r == -E2BIG)
                return xp_errorf(err,
                                 r,
                                 "the node description %s is too large (more than %d bytes)",
                                 path,
                                 SIM_FILE_MAX);
        if (r < 0)
                return xp_errorf(
                    err, r, "cannot read the node description %s: %s", path, strerror(-r));
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/* ---- phase one: the conveniences, checked and rewritten in place ----------------------------- */

static bool json_is_natural(const json_t *v, json_int_t max)
{
        return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= max;
}

static int plan_add_id(struct sim_plan *plan, size_t owner, const char *id)
{
        char **ids = realloc(plan->ids, (plan->n_ids + 1) * sizeof(*ids));
        size_t *owners;

        if (!ids)
                return -ENOMEM;
        plan->ids = ids;
        owners = realloc(plan->owner, (plan->n_ids + 1) * sizeof(*owners));
        if (!owners)
                return -ENOMEM;
        plan->owner = owners;
        ids[plan->n_ids] = strdup(id);
        if (!ids[plan->n_ids])
                return -ENOMEM;
        owners[plan->n_ids++] = owner;
        return 0;
}

/* numaNode as a list: one node per device of a count entry. */
static int plan_numa_list(
    const struct sim_source *src, struct sim_entry *e, size_t j, json_t *entry, json_t *numa)
{
        struct xp_path path;

        sim_path(&path, "devices", j, "numaNode");
        if (!e->has_count)
                return fail_at(src,
                               &path,
                               -EINVAL,
                               "a list of NUMA nodes needs count: N, with one node per device");
        if (json_array_size(numa) != e->count)
                return fail_at(src,
                               &path,
                               -EINVAL,
                               "%zu NUMA nodes listed for count: %zu: give one per device",
                               json_array_size(numa),
                               e->count);
        for (size_t i = 0; i < e->count; i++) {
                if (!json_is_natural(json_array_get(numa, i), INT32_MAX)) {
                        xp_path_push_index(&path, i);
                        return fail_at(
                            src, &path, -EINVAL, "expected a NUMA node number (0, 1, ...)");
                }
        }
        e->numa_list = json_incref(numa);
        if (json_object_set(entry, "numaNode", json_array_get(numa, 0)) < 0)
                return -ENOMEM;
        return 0;
}

static int plan_entry(const struct sim_source *src, struct sim_plan *plan, size_t j, json_t *entry)
{
        struct sim_entry *e = &plan->entries[j];
        json_t *count = json_object_get(entry, "count");
        json_t *numa = json_object_get(entry, "numaNode");
        json_t *id = json_object_get(entry, "id");
        json_t *kind = json_object_get(entry, "kind");
        json_t *index = json_object_get(entry, "index");
        const char *kind_name = json_is_string(kind) ? json_string_value(kind) : "device";
        struct xp_path path;
        int r;

        e->valid = true;
        e->count = 1;
        e->first_expanded = plan->n_ids;
        if (count) {
                if (!json_is_natural(count, SIM_COUNT_MAX) || json_integer_value(count) < 1) {
                        sim_path(&path, "devices", j, "count");
                        return fail_at(src,
                                       &path,
                                       -EINVAL,
                                       "expected a whole number of devices from 1 to %d",
                                       SIM_COUNT_MAX);
                }
                e->count = (size_t)json_integer_value(count);
                e->has_count = true;
                json_object_del(entry, "count");
        }
        if (json_is_array(numa)) {
                r = plan_numa_list(src, e, j, entry, numa);
                if (r < 0)
                        return r;
        }
        if (e->count > 1 && json_object_get(entry, "pciAddress")) {
                sim_path(&path, "devices", j, "pciAddress");
                return fail_at(
                    src,
                    &path,
                    -EINVAL,
                    "a PCI address names one device: drop it or count, or list the devices one by one");
        }
        if (plan->n_ids + e->count > SIM_DEVICE_MAX) {
                sim_path(&path, "devices", j, e->has_count ? "count" : NULL);
                return fail_at(src,
                               &path,
                               -E2BIG,
                               "too many simulated devices (at most %d in one description)",
                               SIM_DEVICE_MAX);
        }
        e->has_id = json_is_string(id);
        if (id && !e->has_id)
                return 0; /* the decoder reports the type */
        for (size_t i = 0; i < e->count; i++) {
                char buf[SIM_ID_MAX + 32];
                json_int_t base = json_is_natural(index, INT32_MAX) ? json_integer_value(index) : 0;

                if (e->has_id && strlen(json_string_value(id)) > SIM_ID_MAX) {
                        sim_path(&path, "devices", j, "id");
                        return fail_at(
                            src, &path, -EINVAL, "too long (at most %d bytes)", SIM_ID_MAX);
                }
                if (e->has_count)
                        snprintf(buf,
                                 sizeof(buf),
                                 "%s%s-%zu",
                                 e->has_id ? "" : "sim-",
                                 e->has_id ? json_string_value(id) : kind_name,
                                 i);
                else if (e->has_id)
                        snprintf(buf, sizeof(buf), "%s", json_string_value(id));
                else
                        snprintf(
                            buf, sizeof(buf), "sim-%.64s-%" JSON_INTEGER_FORMAT, kind_name, base);
                r = plan_add_id(plan, j, buf);
                if (r < 0)
                        return r;
        }
        /* the entry decodes as its first device */
        if (json_object_set_new(entry, "id", json_string(plan->ids[e->first_expanded])) < 0)
                return -ENOMEM;
        return 0;
}

static int check_unique_ids(const struct sim_source *src, const struct sim_plan *plan)
{
        size_t dup;
        int r = xp_first_duplicate((const char *const *)plan->ids, plan->n_ids, &dup);
        size_t j, other = 0;
        struct xp_path path;
        char q[XP_QUOTE_MAX];

        if (r <= 0)
                return r;
        j = plan->owner[dup];
        for (size_t i = 0; i < dup; i++)
                if (strcmp(plan->ids[i], plan->ids[dup]) == 0) {
                        other = plan->owner[i];
                        break;
                }
        sim_path(&path, "devices", j, plan->entries[j].has_id ? "id" : NULL);
        if (other == j)
                return fail_at(src,
                               &path,
                               -EINVAL,
                               "device id %s is made twice by this entry: give it an id",
                               xp_quote(plan->ids[dup], q));
        return fail_at(
            src,
            &path,
            -EINVAL,
            "duplicate device id %s (devices[%zu] has it too): device ids must be unique; give the entries distinct ids or indexes",
            xp_quote(plan->ids[dup], q),
            other);
}

static int plan_link(const struct sim_source *src,
                     struct sim_plan *plan,
                     const char *const *sorted_ids,
                     size_t k,
                     json_t *link)
{
        json_t *devices = json_object_get(link, "devices");
        struct xp_path path;
        char q[XP_QUOTE_MAX];

        if (!devices)
                return 0;
        sim_path(&path, "links", k, "devices");
        if (json_object_get(link, "a") || json_object_get(link, "b"))
                return fail_at(src,
                               &path,
                               -EINVAL,
                               "give either devices (every pair among them) or a and b, not both");
        if (!json_is_array(devices) || json_array_size(devices) < 2)
                return fail_at(
                    src,
                    &path,
                    -EINVAL,
                    "expected a list of at least two device ids (every pair among them is linked)");
        for (size_t m = 0; m < json_array_size(devices); m++) {
                json_t *id = json_array_get(devices, m);

                xp_path_push_index(&path, m);
                if (!json_is_string(id))
                        return fail_at(src, &path, -EINVAL, "expected a device id (a string)");
                if (plan->n_ids == 0 ||
                    !xp_sorted_contains(sorted_ids, plan->n_ids, json_string_value(id)))
                        return fail_at(
                            src,
                            &path,
                            -EINVAL,
                            "unknown device %s: a link must join devices listed in devices (an entry with count: N and id X makes X-0 ... X-<N-1>)",
                            xp_quote(json_string_value(id), q));
                for (size_t o = 0; o < m; o++)
                        if (json_equal(json_array_get(devices, o), id))
                                return fail_at(src,
                                               &path,
                                               -EINVAL,
                                               "device %s is listed twice",
                                               xp_quote(json_string_value(id), q));
                xp_path_pop(&path);
        }
        plan->link_devices[k] = json_incref(devices);
        if (json_object_set(link, "a", json_array_get(devices, 0)) < 0 ||
            json_object_set(link, "b", json_array_get(devices, 1)) < 0 ||
            json_object_del(link, "devices") < 0)
                return -ENOMEM;
        return 0;
}

/* Adds a stub for every expanded device but each entry's first, so link ends decode. */
static int add_stubs(json_t *devices, const struct sim_plan *plan)
{
        for (size_t i = 0; i < plan->n_ids; i++) {
                json_t *stub;

                if (plan->entries[plan->owner[i]].first_expanded == i)
                        continue;
                stub = json_pack("{s:s, s:s, s:s}",
                                 "id",
                                 plan->ids[i],
                                 "kind",
                                 "accelerator",
                                 "resourceName",
                                 SIM_STUB_RESOURCE);
                if (!stub || json_array_append_new(devices, stub) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int plan_description(const struct sim_source *src, json_t *root, struct sim_plan *plan)
{
        json_t *devices = json_object_get(root, "devices");
        json_t *links = json_object_get(root, "links");
        _cleanup_free_ const char **sorted = NULL;
        int r;

        /* the figures over time are the device sampler's (xpool/devsample.h) */
        json_object_del(root, "metricsScript");
        if (json_is_array(devices) && json_array_size(devices) > 0) {
                plan->entries = calloc(json_array_size(devices), sizeof(*plan->entries));
                if (!plan->entries)
                        return -ENOMEM;
                plan->n_entries = json_array_size(devices);
                for (size_t j = 0; j < plan->n_entries; j++) {
                        json_t *entry = json_array_get(devices, j);

                        if (!json_is_object(entry))
                                continue; /* the decoder reports the type */
                        r = plan_entry(src, plan, j, entry);
                        if (r < 0)
                                return r;
                }
                r = check_unique_ids(src, plan);
                if (r < 0)
                        return r;
        }
        if (json_is_array(links) && json_array_size(links) > 0) {
                if (plan->n_ids > 0) {
                        sorted = xp_sorted_copy((const char *const *)plan->ids, plan->n_ids);
                        if (!sorted)
                                return -ENOMEM;
                }
                plan->link_devices = calloc(json_array_size(links), sizeof(*plan->link_devices));
                if (!plan->link_devices)
                        return -ENOMEM;
                plan->n_links = json_array_size(links);
                for (size_t k = 0; k < plan->n_links; k++) {
                        json_t *link = json_array_get(links, k);

                        if (!json_is_object(link))
                                continue;
                        r = plan_link(src, plan, sorted, k, link);
                        if (r < 0)
                                return r;
                }
        }
        return json_is_array(devices) ? add_stubs(devices, plan) : 0;
}

/* ---- phase two: the decoded entries, expanded into the inventory -------------------------------
 */

static int copy_string(char **dst, const char *src)
{
        if (!src)
                return 0;
        *dst = strdup(src);
        return *dst ? 0 : -ENOMEM;
}

/* Copies src's description into the zeroed dst. On -ENOMEM dst holds what was copied. */
static int copy_device(const struct xp_device *src, struct xp_device *dst)
{
        if (copy_string(&dst->vendor, src->vendor) < 0 ||
            copy_string(&dst->model, src->model) < 0 ||
            copy_string(&dst->resource_name, src->resource_name) < 0 ||
            copy_string(&dst->local_cpus, src->local_cpus) < 0 ||
            copy_string(&dst->pci_address, src->pci_address) < 0 ||
            copy_string(&dst->pci_id, src->pci_id) < 0 ||
            copy_string(&dst->pci_link, src->pci_link) < 0 ||
            copy_string(&dst->compute_capability, src->compute_capability) < 0 ||
            copy_string(&dst->health_reason, src->health_reason) < 0)
                return -ENOMEM;
        if (src->device_nodes.n > 0) {
                dst->device_nodes.items = calloc(src->device_nodes.n, sizeof(char *));
                if (!dst->device_nodes.items)
                        return -ENOMEM;
                for (size_t i = 0; i < src->device_nodes.n; i++) {
                        if (copy_string(&dst->device_nodes.items[i], src->device_nodes.items[i]) <
                            0)
                                return -ENOMEM;
                        dst->device_nodes.n++;
                }
        }
        if (src->metrics) {
                dst->metrics = calloc(1, sizeof(*dst->metrics));
                if (!dst->metrics)
                        return -ENOMEM;
                *dst->metrics = *src->metrics;
                dst->metrics->extra = NULL;
                if (src->metrics->extra &&
                    !(dst->metrics->extra = json_deep_copy(src->metrics->extra)))
                        return -ENOMEM;
        }
        if (src->extra && !(dst->extra = json_deep_copy(src->extra)))
                return -ENOMEM;
        dst->kind = src->kind;
        dst->index = src->index;
        dst->memory_bytes = src->memory_bytes;
        dst->compute_units = src->compute_units;
        dst->fp16_tflops = src->fp16_tflops;
        dst->fp32_tflops = src->fp32_tflops;
        dst->numa_node = src->numa_node;
        dst->mig_enabled = src->mig_enabled;
        dst->health = src->health ? src->health : XP_DEVICE_HEALTHY;
        dst->simulated = true;
        return 0;
}

static const char *describe(const struct xp_device *dev, char *buf, size_t size)
{
        snprintf(buf,
                 size,
                 "%s%s%s%s",
                 dev->model ? dev->model : xp_device_kind_to_string(dev->kind),
                 dev->pci_address && !xp_streq0(dev->pci_address, dev->id) ? " at " : "",
                 dev->pci_address && !xp_streq0(dev->pci_address, dev->id) ? dev->pci_address : "",
                 dev->simulated ? ", simulated" : "");
        return buf;
}

/* "{index}" in a device node's path is the device's index: one entry with count: N gives each
 * device its own node (/dev/npu{index}: /dev/npu0, /dev/npu1, ...). */
static int index_nodes(struct xp_device *dev)
{
        for (size_t k = 0; k < dev->device_nodes.n; k++) {
                char *at = strstr(dev->device_nodes.items[k], "{index}"), *path;

                if (!at)
                        continue;
                if (asprintf(&path,
                             "%.*s%" PRId64 "%s",
                             (int)(at - dev->device_nodes.items[k]),
                             dev->device_nodes.items[k],
                             dev->index,
                             at + 7) < 0)
                        return -ENOMEM;
                free(dev->device_nodes.items[k]);
                dev->device_nodes.items[k] = path;
        }
        return 0;
}

static int add_devices(const struct sim_source *src,
                       struct xp_discovery *d,
                       const struct sim_plan *plan,
                       const struct xp_node_inventory *desc)
{
        for (size_t j = 0; j < plan->n_entries; j++) {
                const struct sim_entry *e = &plan->entries[j];
                const struct xp_device *from = &desc->devices.items[j];

                for (size_t i = 0; i < e->count; i++) {
                        const char *id = plan->ids[e->first_expanded + i];
                        const struct xp_device *clash = xp_discovery_find_id(d, id);
                        struct xp_device *dev;
                        struct xp_path path;
                        char q[XP_QUOTE_MAX], what[256];
                        int r;

                        if (!clash && from->pci_address)
                                clash = xp_discovery_find_pci(d, from->pci_address);
                        if (clash) {
                                bool same_id = xp_streq0(clash->id, id);

                                sim_path(&path,
                                         "devices",
                                         j,
                                         !same_id    ? "pciAddress"
                                         : e->has_id ? "id"
                                                     : NULL);
                                return fail_at(
                                    src,
                                    &path,
                                    -EEXIST,
                                    "simulated device %s clashes with the device %s (%s) already in the inventory: give the simulated device another %s",
                                    xp_quote(id, q),
                                    clash->id,
                                    describe(clash, what, sizeof(what)),
                                    same_id ? "id" : "PCI address");
                        }
                        if (from->index > INT64_MAX - (int64_t)i) {
                                sim_path(&path, "devices", j, "index");
                                return fail_at(src, &path, -ERANGE, "index too large for count");
                        }
                        dev = xp_discovery_add_device(d);
                        if (!dev)
                                return -ENOMEM;
                        r = copy_device(from, dev);
                        if (r >= 0)
                                r = copy_string(&dev->id, id);
                        if (r < 0)
                                return r;
                        dev->index = from->index + (int64_t)i;
                        r = index_nodes(dev);
                        if (r < 0)
                                return r;
                        if (e->numa_list)
                                dev->numa_node = (struct xp_opt_int64){
                                    .set = true,
                                    .value = json_integer_value(json_array_get(e->numa_list, i)),
                                };
                }
        }
        return 0;
}

static int
add_links(struct xp_discovery *d, const struct sim_plan *plan, const struct xp_node_inventory *desc)
{
        for (size_t k = 0; k < desc->links.n; k++) {
                const struct xp_device_link *l = &desc->links.items[k];
                json_t *devices = k < plan->n_links ? plan->link_devices[k] : NULL;
                int r;

                if (!devices) {
                        r = xp_discovery_add_link(
                            d, l->a, l->b, l->level, l->nvlinks, l->bandwidth_gbps);
                        if (r < 0)
                                return r;
                        continue;
                }
                for (size_t x = 0; x < json_array_size(devices); x++)
                        for (size_t y = x + 1; y < json_array_size(devices); y++) {
                                r = xp_discovery_add_link(
                                    d,
                                    json_string_value(json_array_get(devices, x)),
                                    json_string_value(json_array_get(devices, y)),
                                    l->level,
                                    l->nvlinks,
                                    l->bandwidth_gbps);
                                if (r < 0)
                                        return r;
                        }
        }
        return 0;
}

/*
 * Pairs with a simulated device that nothing linked (the description, or for real devices
 * another backend): NODE, or SYS when both NUMA nodes are known and differ. A description says
 * better with links.
 */
static int add_default_links(struct xp_discovery *d, size_t first)
{
        struct xp_node_inventory *inv = d->inventory;

        for (size_t y = first; y < inv->devices.n; y++)
                for (size_t x = 0; x < y; x++) {
                        const struct xp_device *a = &inv->devices.items[x];
                        const struct xp_device *b = &inv->devices.items[y];
                        bool apart = a->numa_node.set && b->numa_node.set &&
                                     a->numa_node.value != b->numa_node.value;
                        int r = xp_discovery_add_link(
                            d, a->id, b->id, apart ? XP_LINK_SYS : XP_LINK_NODE, 0, 0);

                        if (r < 0)
                                return r;
                }
        return 0;
}

/* What the description says about the node itself counts where discovery found nothing. */
static int add_node_part(struct xp_discovery *d, struct xp_node_inventory *desc, size_t first)
{
        struct xp_node_inventory *inv = d->inventory;

        if (!inv->cpu && desc->cpu)
                inv->cpu = TAKE_PTR(desc->cpu);
        if (inv->memory_bytes == 0)
                inv->memory_bytes = desc->memory_bytes;
        if (inv->numa_nodes.n == 0 && desc->numa_nodes.n > 0) {
                inv->numa_nodes.items = TAKE_PTR(desc->numa_nodes.items);
                inv->numa_nodes.n = desc->numa_nodes.n;
                desc->numa_nodes.n = 0;
        }
        for (size_t i = first; i < inv->devices.n; i++) {
                struct xp_device *dev = &inv->devices.items[i];

                if (dev->local_cpus || !dev->numa_node.set)
                        continue;
                for (size_t n = 0; n < inv->numa_nodes.n; n++) {
                        if (inv->numa_nodes.items[n].id != dev->numa_node.value ||
                            !inv->numa_nodes.items[n].cpus)
                                continue;
                        if (copy_string(&dev->local_cpus, inv->numa_nodes.items[n].cpus) < 0)
                                return -ENOMEM;
                        break;
                }
        }
        return 0;
}

static int load_description(struct xp_discovery *d, const char *file, struct xp_error *err)
{
        _cleanup_free_ char *data = NULL;
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *desc = NULL;
        _cleanup_(sim_plan_done) struct sim_plan plan = {0};
        struct xp_yaml_document *docs = NULL;
        const char *name = strcmp(file, "-") == 0 ? "<stdin>" : file;
        struct sim_source src = {.name = name, .err = err};
        size_t size = 0, n_docs = 0, first = d->inventory->devices.n;
        json_t *root = NULL;
        int r;

        r = read_description(file, &data, &size, err);
        if (r < 0)
                return r;
        r = xp_yaml_load(data, size, name, &docs, &n_docs, err);
        if (r < 0)
                return r;
        if (n_docs != 1) {
                r = xp_errorf(
                    err,
                    -EINVAL,
                    "%s: %s: a node description is one YAML or JSON document with devices and links",
                    name,
                    n_docs ? "more than one document" : "empty");
                goto out;
        }
        src.map = docs[0].map;
        if (!json_is_object(docs[0].root)) {
                r = xp_errorf(
                    err,
                    -EINVAL,
                    "%s:%u:%u: a node description is a mapping with devices (and links, cpu, numaNodes, memoryBytes)",
                    name,
                    docs[0].start.line,
                    docs[0].start.column);
                goto out;
        }
        root = json_deep_copy(docs[0].root); /* aliases share values: rewrite a copy */
        if (!root) {
                r = -ENOMEM;
                goto out;
        }
        r = plan_description(&src, root, &plan);
        if (r >= 0) {
                struct xp_decode_source source = {.name = name, .map = docs[0].map};

                r = xp_node_inventory_from_json(root, &source, XP_DECODE_STRICT, &desc, err);
        }
        if (r >= 0)
                r = add_devices(&src, d, &plan, desc);
        if (r >= 0)
                r = add_links(d, &plan, desc);
        if (r >= 0)
                r = add_node_part(d, desc, first);
        if (r >= 0)
                r = add_default_links(d, first);
out:
        json_decref(root);
        xp_yaml_documents_free(docs, n_docs);
        return r;
}

static int sim_probe(struct xp_discovery *d)
{
        return d->config->node_description ? 0 : -ENODEV;
}

static int sim_discover(struct xp_discovery *d, struct xp_error *err)
{
        return load_description(d, d->config->node_description, err);
}

const struct xp_device_backend xp_sim_backend = {
    .name = "sim",
    .probe = sim_probe,
    .discover = sim_discover,
};
