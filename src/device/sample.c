/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device sampler's front end (xpool/devsample.h): each device's figures from the source that
 * has them (NVML, the device's sysfs and hwmon files, the node description), its health from
 * the health watch (NVIDIA: Xid events) or the inventory. Huawei's DCMI adds Ascend NPUs'
 * utilisation, temperature and power to what sysfs gives, Cambricon's CNDev MLUs' utilisation,
 * memory, temperature, power and health.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "sample_internal.h"
#include "xpool/codec.h"
#include "xpool/fileio.h"

struct xp_device_sampler {
        const struct xp_node_inventory *inventory; /* borrowed */
        struct xp_node_inventory *health;          /* a copy the health watch updates */
        struct xp_device_health_watch *watch;
        struct nvml_sampler nvml;
        struct dcmi_sampler dcmi;
        struct cndev_sampler cndev;
        struct xp_sim_script *script;
        struct xp_discovery root; /* for reading below the configured root */
        int64_t start_ms;         /* of the script: the first sample */
};

void xp_device_samples_done(struct xp_device_samples *samples)
{
        for (size_t i = 0; i < samples->n; i++)
                free(samples->items[i].processes);
        free(samples->items);
        *samples = (struct xp_device_samples){0};
}

void xp_device_sampler_free(struct xp_device_sampler *s)
{
        if (!s)
                return;
        xp_device_health_watch_free(s->watch);
        nvml_sampler_close(&s->nvml);
        dcmi_sampler_close(&s->dcmi);
        cndev_sampler_close(&s->cndev);
        xp_node_inventory_free(s->health);
        xp_sim_script_free(s->script);
        if (s->root.root_fd >= 0)
                close(s->root.root_fd);
        free(s);
}

static int load_script(struct xp_device_sampler *s, const char *file, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        size_t len = 0;
        int r;

        if (!file || strcmp(file, "-") == 0)
                return 0; /* standard input was read by discovery */
        fd = open(file, O_RDONLY | O_CLOEXEC);
        r = fd < 0 ? -errno : xp_read_fd_all(fd, 16 << 20, &text, &len);
        if (r < 0)
                return xp_errorf(err, r, "cannot read %s: %s", file, strerror(-r));
        return xp_sim_script_parse(text, len, file, &s->script, err);
}

static int copy_inventory(const struct xp_node_inventory *inventory, struct xp_node_inventory **ret)
{
        json_t *json = NULL;
        int r;

        r = xp_node_inventory_to_json(inventory, &json);
        if (r >= 0)
                r = xp_node_inventory_from_json(json, NULL, XP_DECODE_TRUSTED, ret, NULL);
        json_decref(json);
        return r;
}

int xp_device_sampler_new(const struct xp_discovery_config *config,
                          const struct xp_node_inventory *inventory,
                          struct xp_device_sampler **ret,
                          struct xp_error *err)
{
        _cleanup_(xp_device_sampler_freep) struct xp_device_sampler *s = NULL;
        const char *root = config && config->root ? config->root : "/";
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return xp_errorf(err, -ENOMEM, "out of memory");
        s->inventory = inventory;
        s->root.config = config;
        s->root.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = load_script(s, config ? config->node_description : NULL, err);
        if (r < 0)
                return r;
        r = copy_inventory(inventory, &s->health);
        if (r < 0)
                return xp_errorf(err, r, "cannot copy the inventory: %s", strerror(-r));
        r = xp_device_health_watch_new(config, inventory, 0, &s->watch, err);
        if (r < 0)
                return r;
        r = nvml_sampler_open(config, inventory, &s->nvml);
        if (r >= 0)
                r = dcmi_sampler_open(config, inventory, &s->dcmi);
        if (r >= 0)
                r = cndev_sampler_open(config, inventory, &s->cndev);
        if (r < 0)
                return xp_errorf(err, r, "out of memory");
        s->start_ms = -1;
        *ret = TAKE_PTR(s);
        return 0;
}

/* amdgpu's busy percentage and VRAM, and any device's first hwmon temperature and power. */
static void read_sysfs(struct xp_device_sampler *s, const char *pci, struct xp_device_sample *ret)
{
        char path[256];
        char **hwmon = NULL;
        size_t n_hwmon = 0;
        uint64_t v;

        if (s->root.root_fd < 0)
                return;
        snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/gpu_busy_percent", pci);
        if (xp_root_read_u64(&s->root, path, &v) >= 0) {
                ret->has |= XP_SAMPLE_UTIL;
                ret->utilization_percent = (double)v;
        }
        snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/mem_info_vram_used", pci);
        if (xp_root_read_u64(&s->root, path, &v) >= 0) {
                ret->has |= XP_SAMPLE_MEM_USED;
                ret->memory_used_bytes = (int64_t)v;
        }
        snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/hwmon", pci);
        if (xp_root_list(&s->root, path, &hwmon, &n_hwmon) < 0 || n_hwmon == 0)
                return;
        snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/hwmon/%s/temp1_input", pci, hwmon[0]);
        if (xp_root_read_u64(&s->root, path, &v) >= 0) {
                ret->has |= XP_SAMPLE_TEMP;
                ret->temperature_celsius = (double)v / 1000.0; /* millidegrees */
        }
        snprintf(
            path, sizeof(path), "sys/bus/pci/devices/%s/hwmon/%s/power1_average", pci, hwmon[0]);
        if (xp_root_read_u64(&s->root, path, &v) < 0)
                snprintf(path,
                         sizeof(path),
                         "sys/bus/pci/devices/%s/hwmon/%s/power1_input",
                         pci,
                         hwmon[0]);
        if (xp_root_read_u64(&s->root, path, &v) >= 0) {
                ret->has |= XP_SAMPLE_POWER;
                ret->power_watts = (double)v / 1e6; /* microwatts */
        }
        xp_strv_free(hwmon, n_hwmon);
}

static void fixed_metrics(const struct xp_device *d, struct xp_device_sample *ret)
{
        if (!d->metrics)
                return;
        ret->has |= XP_SAMPLE_UTIL | XP_SAMPLE_MEM_USED | XP_SAMPLE_TEMP | XP_SAMPLE_POWER;
        ret->utilization_percent = d->metrics->utilization_percent;
        ret->memory_used_bytes = d->metrics->memory_used_bytes;
        ret->temperature_celsius = d->metrics->temperature_celsius;
        ret->power_watts = d->metrics->power_watts;
}

static void
sample_one(struct xp_device_sampler *s, size_t i, int64_t now_ms, struct xp_device_sample *ret)
{
        const struct xp_device *d = &s->inventory->devices.items[i];
        const struct xp_device *h = i < s->health->devices.n ? &s->health->devices.items[i] : d;
        unsigned long long xid;

        if (d->simulated) {
                if (!xp_sim_script_eval(s->script, d->id, now_ms - s->start_ms, ret))
                        fixed_metrics(d, ret);
        } else if (!nvml_sampler_read(&s->nvml, i, ret)) {
                if (d->pci_address)
                        read_sysfs(s, d->pci_address, ret);
                dcmi_sampler_read(&s->dcmi, i, ret);
                cndev_sampler_read(&s->cndev, i, ret);
                if (!ret->has)
                        fixed_metrics(d, ret);
        }
        if (!(ret->has & XP_SAMPLE_MEM_TOTAL) && d->memory_bytes > 0) {
                ret->has |= XP_SAMPLE_MEM_TOTAL;
                ret->memory_total_bytes = d->memory_bytes;
        }
        ret->health = h->health;
        snprintf(ret->health_reason,
                 sizeof(ret->health_reason),
                 "%s",
                 h->health_reason ? h->health_reason : "");
        if (!d->simulated)
                cndev_sampler_health(&s->cndev, i, ret);
        if (s->nvml.api.dl && i < s->nvml.n && s->nvml.handles[i]) {
                ret->has |= XP_SAMPLE_XID;
                if (sscanf(ret->health_reason, "Xid %llu", &xid) == 1)
                        ret->last_xid = xid;
        }
}

int xp_device_sampler_read(struct xp_device_sampler *s,
                           int64_t now_ms,
                           struct xp_device_samples *ret)
{
        struct xp_device_samples out = {0};

        if (s->start_ms < 0)
                s->start_ms = now_ms;
        if (s->watch)
                xp_device_health_poll(s->watch, s->health, now_ms);
        out.n = s->inventory->devices.n;
        out.items = calloc(out.n ? out.n : 1, sizeof(*out.items));
        if (!out.items)
                return -ENOMEM;
        for (size_t i = 0; i < out.n; i++)
                sample_one(s, i, now_ms, &out.items[i]);
        out.taken_ms = now_ms;
        *ret = out;
        return 0;
}
