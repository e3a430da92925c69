/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "xpool/devenv.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

/*
 * One vendor's runtimes. A resource belongs to the first family with a matching pattern ("x*"
 * matches by prefix); a resource no pattern matches belongs to the family whose vendor and kind
 * the node reports for the device (an operator may rename resources, the vendor stays).
 */
struct family {
        const char *patterns[3];
        const char *vendor; /* status.xpool.devices[].vendor, compared ignoring case */
        enum xp_device_kind kind;
        const char *vars[3]; /* each set to the same device list */
        /* ids of the form GPU-.../MIG-... name the devices instead of indices: the runtimes
         * accept both, and a UUID means the same device whatever the enumeration order */
        bool uuids;
        bool ascending; /* the runtime reads only an ascending list */
        bool nvidia;    /* CUDA_DEVICE_ORDER with indices; MPS thread percentage for shares */
};

static const struct family families[] = {
    {
        .patterns = {"nvidia.com/gpu", "nvidia.com/mig-*"},
        .vendor = "NVIDIA",
        .kind = XP_DEVICE_GPU,
        .vars = {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"},
        .uuids = true,
        .nvidia = true,
    },
    {
        /* HIP_VISIBLE_DEVICES is not set: HIP numbers what ROCr already filtered, so host
         * indices there would pick the wrong devices */
        .patterns = {"amd.com/gpu"},
        .vendor = "AMD",
        .kind = XP_DEVICE_GPU,
        .vars = {"ROCR_VISIBLE_DEVICES"},
        .uuids = true,
    },
    {
        /* RT: CANN's runtime in the process; the other: Ascend's container runtime hook */
        .patterns = {"huawei.com/Ascend*"},
        .vendor = "Huawei",
        .kind = XP_DEVICE_NPU,
        .vars = {"ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"},
        .ascending = true,
    },
    {
        .patterns = {"cambricon.com/mlu*"},
        .vendor = "Cambricon",
        .kind = XP_DEVICE_NPU,
        .vars = {"MLU_VISIBLE_DEVICES"},
    },
    {
        .patterns = {"gpu.intel.com/i915", "gpu.intel.com/xe"},
        .vendor = "Intel",
        .kind = XP_DEVICE_GPU,
        .vars = {"ZE_AFFINITY_MASK"},
    },
    {
        .patterns = {"habana.ai/gaudi*"},
        .vendor = "Habana",
        .kind = XP_DEVICE_ACCELERATOR,
        .vars = {"HABANA_VISIBLE_DEVICES"},
    },
};

/* The environment being built: "NAME=value" strings, NULL-terminated once done. */
struct env {
        char **items;
        size_t n;
        size_t allocated;
};

static void env_done(struct env *env)
{
        for (size_t i = 0; i < env->n; i++)
                free(env->items[i]);
        free(env->items);
        *env = (struct env){0};
}

static int env_add(struct env *env, const char *name, const char *value)
{
        char *entry;

        if (env->n + 2 > env->allocated) {
                size_t allocated = env->allocated ? env->allocated * 2 : 8;
                char **items = realloc(env->items, allocated * sizeof(*items));

                if (!items)
                        return -ENOMEM;
                env->items = items;
                env->allocated = allocated;
        }
        if (asprintf(&entry, "%s=%s", name, value) < 0)
                return -ENOMEM;
        env->items[env->n++] = entry;
        env->items[env->n] = NULL;
        return 0;
}

static bool pattern_match(const char *pattern, const char *s)
{
        size_t len = strlen(pattern);

        if (len > 0 && pattern[len - 1] == '*')
                return strncmp(pattern, s, len - 1) == 0;
        return strcmp(pattern, s) == 0;
}

static const struct xp_device *node_device(const struct xp_node *node, const char *id)
{
        const struct xp_node_inventory *inventory = node ? node->status.xpool : NULL;

        if (!inventory)
                return NULL;
        for (size_t i = 0; i < inventory->devices.n; i++)
                if (xp_streq0(inventory->devices.items[i].id, id))
                        return &inventory->devices.items[i];
        return NULL;
}

static const struct family *family_of(const struct xp_placement_device *pd,
                                      const struct xp_device *device)
{
        for (size_t f = 0; f < XP_ELEMENTSOF(families); f++)
                for (size_t p = 0; p < XP_ELEMENTSOF(families[f].patterns); p++)
                        if (families[f].patterns[p] &&
                            pattern_match(families[f].patterns[p], pd->resource))
                                return &families[f];
        if (!device || !device->vendor)
                return NULL;
        for (size_t f = 0; f < XP_ELEMENTSOF(families); f++)
                if (strcasecmp(families[f].vendor, device->vendor) == 0 &&
                    families[f].kind == device->kind)
                        return &families[f];
        return NULL;
}

static bool id_valid(const char *id)
{
        if (!*id)
                return false;
        for (const unsigned char *p = (const unsigned char *)id; *p; p++)
                if (*p <= ' ' || *p == 0x7f || *p == ',' || *p == '=')
                        return false;
        return true;
}

static int check_placement(const struct xp_placement *placement, struct xp_error *err)
{
        if (!placement)
                return xp_errorf(err, -EINVAL, "placement: missing");
        if (placement->devices.n > XP_DEVENV_DEVICES_MAX)
                return xp_errorf(err,
                                 -E2BIG,
                                 "placement.devices: %zu devices, at most %d",
                                 placement->devices.n,
                                 XP_DEVENV_DEVICES_MAX);
        for (size_t i = 0; i < placement->devices.n; i++) {
                const struct xp_placement_device *d = &placement->devices.items[i];

                if (!d->resource || !*d->resource)
                        return xp_errorf(
                            err, -EINVAL, "placement.devices[%zu].resource: missing", i);
                if (!d->id || !id_valid(d->id))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "placement.devices[%zu].id: %s",
                                         i,
                                         d->id ? "contains a comma, '=', space or control character"
                                               : "missing");
                if (d->index < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "placement.devices[%zu].index: %" PRId64 " is negative",
                                         i,
                                         d->index);
                if (d->milli < 1 || d->milli > 1000)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "placement.devices[%zu].milli: %" PRId64
                                         " is outside 1..1000",
                                         i,
                                         d->milli);
                /* placements are small: quadratic is cheaper than a map here */
                for (size_t j = 0; j < i; j++)
                        if (strcmp(placement->devices.items[j].resource, d->resource) == 0 &&
                            strcmp(placement->devices.items[j].id, d->id) == 0)
                                return xp_errorf(err,
                                                 -EINVAL,
                                                 "placement.devices[%zu]: %s %s is also "
                                                 "placement.devices[%zu]",
                                                 i,
                                                 d->resource,
                                                 d->id,
                                                 j);
        }
        return 0;
}

/* Closes a memory stream; a write that failed on it, or the close, is out of memory. */
static int close_stream(FILE *f)
{
        bool failed = ferror(f);

        return fclose(f) != 0 || failed ? -ENOMEM : 0;
}

static bool is_uuid(const char *id)
{
        return strncmp(id, "GPU-", 4) == 0 || strncmp(id, "MIG-", 4) == 0;
}

static int cmp_int64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

/* The variables of one family, for the devices of the placement that belong to it. */
static int add_family(struct env *env,
                      const struct family *family,
                      const struct xp_placement *placement,
                      const struct family *const *device_family)
{
        _cleanup_free_ int64_t *indices = NULL;
        _cleanup_free_ char *list = NULL;
        size_t n = 0, len = 0;
        bool uuids = family->uuids, shared = true;
        int64_t min_milli = 1000;
        FILE *f;
        int r;

        for (size_t i = 0; i < placement->devices.n; i++)
                if (device_family[i] == family) {
                        const struct xp_placement_device *d = &placement->devices.items[i];

                        n++;
                        uuids = uuids && is_uuid(d->id);
                        shared = shared && d->milli < 1000;
                        if (d->milli < min_milli)
                                min_milli = d->milli;
                }
        if (n == 0)
                return 0;

        indices = calloc(n, sizeof(*indices));
        f = open_memstream(&list, &len);
        if (!indices || !f) {
                if (f)
                        fclose(f);
                return -ENOMEM;
        }
        n = 0;
        for (size_t i = 0; i < placement->devices.n; i++)
                if (device_family[i] == family) {
                        if (uuids)
                                fprintf(f, "%s%s", n ? "," : "", placement->devices.items[i].id);
                        indices[n++] = placement->devices.items[i].index;
                }
        if (!uuids) {
                if (family->ascending)
                        qsort(indices, n, sizeof(*indices), cmp_int64);
                for (size_t i = 0; i < n; i++)
                        fprintf(f, "%s%" PRId64, i ? "," : "", indices[i]);
        }
        if (close_stream(f) < 0)
                return -ENOMEM;

        for (size_t v = 0; v < XP_ELEMENTSOF(family->vars) && family->vars[v]; v++) {
                r = env_add(env, family->vars[v], list);
                if (r < 0)
                        return r;
        }
        if (family->nvidia && !uuids) {
                /* CUDA numbers fastest first by default; the index is NVML's, in bus order */
                r = env_add(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
                if (r < 0)
                        return r;
        }
        if (family->nvidia && shared) {
                char percent[24];

                /* floor, so the limit never exceeds the share; MPS reads it only when an MPS
                 * daemon serves the devices */
                snprintf(
                    percent, sizeof(percent), "%" PRId64, min_milli >= 10 ? min_milli / 10 : 1);
                r = env_add(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", percent);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int set_string(json_t *object, const char *key, const char *value)
{
        if (!value)
                return 0;
        return json_object_set_new(object, key, json_string(value)) < 0 ? -ENOMEM : 0;
}

static int add_neutral(struct env *env,
                       const struct xp_placement *placement,
                       const struct xp_device *const *devices)
{
        _cleanup_free_ char *visible = NULL, *shares = NULL, *json = NULL;
        size_t visible_len = 0, shares_len = 0;
        bool any_share = false;
        json_t *array = json_array();
        FILE *fv = open_memstream(&visible, &visible_len);
        FILE *fs = open_memstream(&shares, &shares_len);
        int r = -ENOMEM;

        if (!array || !fv || !fs)
                goto finish;
        for (size_t i = 0; i < placement->devices.n; i++) {
                const struct xp_placement_device *d = &placement->devices.items[i];
                const struct xp_device *device = devices[i];
                json_t *o = json_object();

                if (!o || json_array_append_new(array, o) < 0)
                        goto finish;
                if (set_string(o, "resource", d->resource) < 0 || set_string(o, "id", d->id) < 0 ||
                    json_object_set_new(o, "index", json_integer(d->index)) < 0 ||
                    json_object_set_new(o, "milli", json_integer(d->milli)) < 0)
                        goto finish;
                if (device && (set_string(o, "kind", xp_device_kind_to_string(device->kind)) < 0 ||
                               set_string(o, "vendor", device->vendor) < 0 ||
                               set_string(o, "model", device->model) < 0))
                        goto finish;
                fprintf(fv, "%s%s", i ? "," : "", d->id);
                if (d->milli < 1000) {
                        fprintf(fs, "%s%s=%" PRId64, any_share ? "," : "", d->id, d->milli);
                        any_share = true;
                }
        }
        json = json_dumps(array, JSON_COMPACT);
        if (!json)
                goto finish;
        r = close_stream(fv);
        fv = NULL;
        if (close_stream(fs) < 0)
                r = -ENOMEM;
        fs = NULL;
        if (r < 0)
                goto finish;

        r = env_add(env, "XPOOL_VISIBLE_DEVICES", visible);
        if (r >= 0)
                r = env_add(env, "XPOOL_DEVICES", json);
        if (r >= 0 && any_share)
                r = env_add(env, "XPOOL_DEVICE_SHARE", shares);
finish:
        if (fv)
                fclose(fv);
        if (fs)
                fclose(fs);
        json_decref(array);
        return r;
}

static int cmp_entry(const void *a, const void *b)
{
        const char *x = *(const char *const *)a, *y = *(const char *const *)b;
        size_t nx = strcspn(x, "="), ny = strcspn(y, "=");
        int c = strncmp(x, y, nx < ny ? nx : ny);

        return c ? c : (nx > ny) - (nx < ny);
}

int xp_devenv_build(const struct xp_placement *placement,
                    const struct xp_node *node,
                    char ***ret,
                    struct xp_error *err)
{
        _cleanup_free_ const struct xp_device **devices = NULL;
        _cleanup_free_ const struct family **device_family = NULL;
        struct env env = {0};
        size_t n;
        int r;

        r = check_placement(placement, err);
        if (r < 0)
                return r;
        n = placement->devices.n;

        devices = calloc(n + 1, sizeof(*devices));
        device_family = calloc(n + 1, sizeof(*device_family));
        if (!devices || !device_family)
                return xp_errorf(err, -ENOMEM, "device environment: out of memory");
        for (size_t i = 0; i < n; i++) {
                devices[i] = node_device(node, placement->devices.items[i].id);
                device_family[i] = family_of(&placement->devices.items[i], devices[i]);
        }

        for (size_t f = 0; f < XP_ELEMENTSOF(families) && r >= 0; f++)
                r = add_family(&env, &families[f], placement, device_family);
        if (r >= 0)
                r = add_neutral(&env, placement, devices);
        if (r < 0) {
                env_done(&env);
                return xp_errorf(err, r, "device environment: out of memory");
        }
        qsort(env.items, env.n, sizeof(*env.items), cmp_entry);
        *ret = env.items;
        return 0;
}

void xp_devenv_free(char **env)
{
        if (!env)
                return;
        for (char **p = env; *p; p++)
                free(*p);
        free(env);
}
