/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pci backend: every accelerator in sys/bus/pci/devices matched on vendor and device id
 * (pci_ids.c), its NUMA node, local CPUs, PCIe link and device nodes, and the PCIe level between
 * each pair of them from their ancestry in the sysfs path.
 *
 * sys/bus/pci/devices/<address> is a symbolic link into the device tree:
 *   ../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0
 * that is the host bridge (pci<domain>:<bus>), then every bridge from the root port down, then
 * the device itself. Two devices below one host bridge share a prefix of bridges; how long it is
 * and what is left below it give the levels of `nvidia-smi topo -m`:
 *   PIX   both hang at most one bridge below the deepest bridge they share (one PCIe switch: the
 *         two downstream ports of one switch, or one root port)
 *   PXB   they share a bridge but at least one is further below it (several switches)
 *   PHB   they share the host bridge only (different root ports)
 *   NODE  different host bridges, one NUMA node (both NUMA nodes equal, or both unknown)
 *   SYS   different host bridges on different NUMA nodes
 * A device whose entry is not such a link has no known ancestry: it counts as alone below its
 * own host bridge.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "pci_ids.h"
#include "xpool/log.h"
#include "xpool/strutil.h"

#define PCI_DEVICES     "sys/bus/pci/devices"
#define PCI_MAX_DEVICES 4096
#define PCI_MAX_DEPTH   32

struct pci_function {
        char *address;                /* "0000:03:00.0" */
        char *host_bridge;            /* "pci0000:00", NULL when the ancestry is unknown */
        char *bridges[PCI_MAX_DEPTH]; /* root port first, the device itself not included */
        size_t n_bridges;
        const struct xp_pci_id *id;
        uint16_t vendor, device;
        struct xp_opt_int64 numa;
        char *local_cpus;
        double link_gts;     /* current link speed per lane, GT/s; 0 when unknown */
        uint64_t link_width; /* lanes; 0 when unknown */
        char *mgmt_address;  /* a merged management function of the same slot (Alveo) */
        char *device_id;     /* the id of the inventory device it became (nvml's UUID or address) */
};

struct pci_scan {
        struct pci_function *items;
        size_t n;
};

static void pci_function_done(struct pci_function *f)
{
        free(f->address);
        free(f->host_bridge);
        for (size_t i = 0; i < f->n_bridges; i++)
                free(f->bridges[i]);
        free(f->local_cpus);
        free(f->mgmt_address);
        free(f->device_id);
}

static void pci_scan_done(struct pci_scan *s)
{
        for (size_t i = 0; i < s->n; i++)
                pci_function_done(&s->items[i]);
        free(s->items);
        *s = (struct pci_scan){0};
}

/* "dddd:bb:dd.f", lowercase hex as the kernel writes it. */
static bool is_pci_address(const char *s)
{
        static const char shape[] = "xxxx:xx:xx.x";

        if (strlen(s) != sizeof(shape) - 1)
                return false;
        for (size_t i = 0; shape[i]; i++)
                if (shape[i] == 'x' ? !isxdigit((unsigned char)s[i]) : s[i] != shape[i])
                        return false;
        return true;
}

/* The slot of an address: "0000:03:00.0" and "0000:03:00.1" are one card. */
static bool same_slot(const char *a, const char *b)
{
        return strncasecmp(a, b, strlen("0000:00:00")) == 0;
}

static int read_id(
    struct xp_discovery *d, const char *name, const char *file, uint16_t *ret, struct xp_error *err)
{
        _cleanup_free_ char *path = NULL;
        uint64_t v;
        int r;

        if (asprintf(&path, PCI_DEVICES "/%s/%s", name, file) < 0)
                return -ENOMEM;
        r = xp_root_read_u64(d, path, &v);
        if (r == -ENOMEM)
                return r;
        if (r == -EINVAL || (r >= 0 && v > 0xffff))
                return xp_errorf(
                    err, -EINVAL, "%s: expected a PCI %s id such as 0x10de", path, file);
        if (r < 0)
                return xp_errorf(err, r, "%s: %s", path, strerror(-r));
        *ret = (uint16_t)v;
        return 0;
}

/* Fills host_bridge and bridges from the link target; leaves them empty when it is no link. */
static int read_ancestry(struct xp_discovery *d, struct pci_function *f)
{
        _cleanup_free_ char *path = NULL, *target = NULL;
        char *save = NULL;
        bool below_host = false;
        int r;

        if (asprintf(&path, PCI_DEVICES "/%s", f->address) < 0)
                return -ENOMEM;
        r = xp_root_readlink(d, path, &target);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        for (char *c = strtok_r(target, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                if (!below_host) {
                        if (strncmp(c, "pci", 3) == 0 && strchr(c, ':')) {
                                f->host_bridge = strdup(c);
                                if (!f->host_bridge)
                                        return -ENOMEM;
                                below_host = true;
                        }
                        continue;
                }
                if (!is_pci_address(c) || strcasecmp(c, f->address) == 0)
                        continue;
                if (f->n_bridges == PCI_MAX_DEPTH)
                        return -E2BIG;
                f->bridges[f->n_bridges] = strdup(c);
                if (!f->bridges[f->n_bridges])
                        return -ENOMEM;
                f->n_bridges++;
        }
        return 0;
}

static int read_optional(struct xp_discovery *d, const char *address, const char *file, char **ret)
{
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, PCI_DEVICES "/%s/%s", address, file) < 0)
                return -ENOMEM;
        r = xp_root_read(d, path, ret);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                *ret = NULL;
        return 0;
}

static int bad_file(struct xp_error *err, const char *address, const char *file, const char *what)
{
        return xp_errorf(err, -EINVAL, PCI_DEVICES "/%s/%s: expected %s", address, file, what);
}

/* numa_node, local_cpulist, current_link_speed ("32.0 GT/s PCIe"), current_link_width. */
static int read_locality(struct xp_discovery *d, struct pci_function *f, struct xp_error *err)
{
        _cleanup_free_ char *numa = NULL, *cpus = NULL, *speed = NULL, *width = NULL;
        int r;

        r = read_optional(d, f->address, "numa_node", &numa);
        if (r >= 0)
                r = read_optional(d, f->address, "local_cpulist", &cpus);
        if (r >= 0)
                r = read_optional(d, f->address, "current_link_speed", &speed);
        if (r >= 0)
                r = read_optional(d, f->address, "current_link_width", &width);
        if (r < 0)
                return r;

        if (numa) {
                char *end;
                long v;

                errno = 0;
                v = strtol(numa, &end, 10);
                if (errno || end == numa || *end || v < -1 || v > INT32_MAX)
                        return bad_file(err, f->address, "numa_node", "a NUMA node number or -1");
                if (v >= 0)
                        f->numa = (struct xp_opt_int64){.set = true, .value = v};
        }
        if (cpus && *cpus) {
                struct xp_cpuset set;

                if (xp_cpuset_parse(cpus, &set) < 0)
                        return bad_file(
                            err, f->address, "local_cpulist", "a CPU list such as 0-3,8");
                r = xp_cpuset_format(&set, &f->local_cpus);
                if (r < 0)
                        return r;
        }
        /* "Unknown" (or an absent file) leaves the link unknown; a number must be one */
        if (speed && isdigit((unsigned char)speed[0])) {
                char *end;
                double v = strtod(speed, &end);

                if (!(v > 0 && v < 1024) || (*end && *end != ' ' && strncmp(end, "GT/s", 4)))
                        return bad_file(err,
                                        f->address,
                                        "current_link_speed",
                                        "a speed such as 32.0 GT/s PCIe");
                f->link_gts = v;
        }
        if (width && isdigit((unsigned char)width[0])) {
                char *end;
                unsigned long v;

                errno = 0;
                v = strtoul(width, &end, 10);
                if (errno || *end || v > 64)
                        return bad_file(err, f->address, "current_link_width", "a lane count");
                f->link_width = v;
        }
        return 0;
}

/*
 * Bandwidth of one direction of a PCIe link in GB/s: GT/s per lane x lanes x encoding / 8 bits,
 * the encoding 8b/10b up to 5 GT/s (PCIe 1 and 2), 128b/130b from 8 to 32 GT/s (PCIe 3 to 5), and
 * 242B/256B flits at 64 GT/s (PCIe 6). Rounded to 0.01: 32 GT/s x16 is 63.02 GB/s.
 */
static double link_bandwidth(const struct pci_function *f)
{
        double efficiency;

        if (f->link_gts <= 0 || f->link_width == 0)
                return 0;
        if (f->link_gts <= 5.0)
                efficiency = 8.0 / 10.0;
        else if (f->link_gts <= 32.0)
                efficiency = 128.0 / 130.0;
        else
                efficiency = 242.0 / 256.0;
        /* libxpool does not link libm: round half up by hand, the value is positive */
        return (double)(int64_t)(f->link_gts * (double)f->link_width * efficiency / 8.0 * 100.0 +
                                 0.5) /
               100.0;
}

static int format_link(const struct pci_function *f, char **ret)
{
        if (f->link_gts <= 0 || f->link_width == 0) {
                *ret = NULL;
                return 0;
        }
        if (asprintf(ret, "%gGT/s x%" PRIu64, f->link_gts, f->link_width) < 0)
                return -ENOMEM;
        return 0;
}

/* ---- device nodes ------------------------------------------------------------------------- */

struct node_list {
        char **items;
        size_t n;
};

static void node_list_done(struct node_list *l)
{
        xp_strv_free(l->items, l->n);
        *l = (struct node_list){0};
}

static int node_add(struct node_list *l, const char *fmt, ...) _printf_(2, 3);
static int node_add(struct node_list *l, const char *fmt, ...)
{
        char **grown = realloc(l->items, (l->n + 1) * sizeof(*grown));
        va_list ap;
        int r;

        if (!grown)
                return -ENOMEM;
        l->items = grown;
        va_start(ap, fmt);
        r = vasprintf(&l->items[l->n], fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        l->n++;
        return 0;
}

/*
 * The number of the first entry of <address>/<dir> named prefix<N> ("drm", "renderD" -> 128), or
 * -1 when there is none. Only -ENOMEM fails.
 */
static int class_number(
    struct xp_discovery *d, const char *address, const char *dir, const char *prefix, int64_t *ret)
{
        _cleanup_free_ char *path = NULL;
        char **names = NULL;
        size_t n = 0, len = strlen(prefix);
        int r;

        *ret = -1;
        if (asprintf(&path, PCI_DEVICES "/%s/%s", address, dir) < 0)
                return -ENOMEM;
        r = xp_root_list(d, path, &names, &n);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        for (size_t i = 0; i < n && *ret < 0; i++) {
                const char *num = names[i] + len;
                char *end;
                long v;

                if (strncmp(names[i], prefix, len) != 0 || !isdigit((unsigned char)*num))
                        continue;
                v = strtol(num, &end, 10);
                if (!*end && v >= 0 && v < INT32_MAX)
                        *ret = v;
        }
        xp_strv_free(names, n);
        return 0;
}

/* The name the device's driver link points to ("i915", "xe"), or NULL. */
static int driver_name(struct xp_discovery *d, const char *address, char **ret)
{
        _cleanup_free_ char *path = NULL, *target = NULL;
        const char *slash;
        int r;

        *ret = NULL;
        if (asprintf(&path, PCI_DEVICES "/%s/driver", address) < 0)
                return -ENOMEM;
        r = xp_root_readlink(d, path, &target);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        slash = strrchr(target, '/');
        *ret = strdup(slash ? slash + 1 : target);
        return *ret ? 0 : -ENOMEM;
}

/* The value after "key:" in the NVIDIA driver's information file, up to the end of its line. */
static char *info_value(const char *text, const char *key)
{
        const char *line = strstr(text, key), *end;

        if (!line)
                return NULL;
        line += strlen(key);
        while (*line == ' ' || *line == '\t')
                line++;
        end = line + strcspn(line, "\n");
        while (end > line && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        return strndup(line, (size_t)(end - line));
}

/*
 * What the NVIDIA driver says of the GPU at address
 * (proc/driver/nvidia/gpus/<address>/information): its minor number ("Device Minor:", -1 when
 * unknown) and UUID ("GPU UUID:", NULL when unknown), the id NVML gives the same GPU, so a GPU
 * keeps its id whether or not NVML is loaded.
 */
static int
nvidia_driver_info(struct xp_discovery *d, const char *address, int64_t *ret_minor, char **ret_uuid)
{
        _cleanup_free_ char *path = NULL, *text = NULL, *minor = NULL;
        char *uuid;
        int r;

        *ret_minor = -1;
        if (ret_uuid)
                *ret_uuid = NULL;
        if (asprintf(&path, "proc/driver/nvidia/gpus/%s/information", address) < 0)
                return -ENOMEM;
        r = xp_root_read(d, path, &text);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        minor = info_value(text, "Device Minor:");
        if (minor) {
                char *end;
                long v = strtol(minor, &end, 10);

                if (end != minor && !*end && v >= 0 && v < 256)
                        *ret_minor = v;
        }
        uuid = info_value(text, "GPU UUID:");
        if (uuid && (strncmp(uuid, "GPU-", 4) != 0 || strlen(uuid) > 80)) {
                free(uuid); /* not what the driver writes: keep the PCI address as id */
                uuid = NULL;
        }
        if (ret_uuid)
                *ret_uuid = uuid;
        else
                free(uuid);
        return 0;
}

struct node_ctx {
        struct xp_discovery *d;
        const struct pci_function *f;
        int64_t *index; /* the driver may tell better than the PCI order */
        struct node_list *nodes;
        const char **resource_name;
};

static int render_node(struct node_ctx *c, const char *address, bool card)
{
        int64_t n;
        int r;

        if (card) {
                r = class_number(c->d, address, "drm", "card", &n);
                if (r < 0)
                        return r;
                if (n >= 0 && (r = node_add(c->nodes, "/dev/dri/card%" PRId64, n)) < 0)
                        return r;
        }
        r = class_number(c->d, address, "drm", "renderD", &n);
        if (r < 0)
                return r;
        if (n >= 0)
                return node_add(c->nodes, "/dev/dri/renderD%" PRId64, n);
        return 0;
}

static int nodes_nvidia(struct node_ctx *c)
{
        int64_t minor;
        int r = nvidia_driver_info(c->d, c->f->address, &minor, NULL);

        if (r < 0)
                return r;
        if (minor >= 0)
                *c->index = minor;
        if ((r = node_add(c->nodes, "/dev/nvidia%" PRId64, *c->index)) < 0 ||
            (r = node_add(c->nodes, "/dev/nvidiactl")) < 0 ||
            (r = node_add(c->nodes, "/dev/nvidia-uvm")) < 0)
                return r;
        return node_add(c->nodes, "/dev/nvidia-uvm-tools");
}

/* ROCm's device plugin hands a container both the card and the render node, and /dev/kfd. */
static int nodes_kfd(struct node_ctx *c)
{
        int r = render_node(c, c->f->address, true);

        return r < 0 ? r : node_add(c->nodes, "/dev/kfd");
}

static int nodes_intel_gpu(struct node_ctx *c)
{
        _cleanup_free_ char *driver = NULL;
        int r = driver_name(c->d, c->f->address, &driver);

        if (r < 0)
                return r;
        if (xp_streq0(driver, "xe"))
                *c->resource_name = "gpu.intel.com/xe";
        return render_node(c, c->f->address, true);
}

static int nodes_mthreads(struct node_ctx *c)
{
        return render_node(c, c->f->address, true);
}

static int nodes_metax(struct node_ctx *c)
{
        int r = render_node(c, c->f->address, false);

        return r < 0 ? r : node_add(c->nodes, "/dev/mxcd");
}

static int nodes_ascend(struct node_ctx *c)
{
        int r;

        if ((r = node_add(c->nodes, "/dev/davinci%" PRId64, *c->index)) < 0 ||
            (r = node_add(c->nodes, "/dev/davinci_manager")) < 0 ||
            (r = node_add(c->nodes, "/dev/devmm_svm")) < 0)
                return r;
        return node_add(c->nodes, "/dev/hisi_hdc");
}

static int nodes_cambricon(struct node_ctx *c)
{
        int r = node_add(c->nodes, "/dev/cambricon_dev%" PRId64, *c->index);

        return r < 0 ? r : node_add(c->nodes, "/dev/cambricon_ctl");
}

/* accel/accel<N> below the device: the kernel's compute accelerator subsystem (/dev/accel/). */
static int accel_index(struct node_ctx *c)
{
        int64_t n;
        int r = class_number(c->d, c->f->address, "accel", "accel", &n);

        if (r < 0)
                return r;
        if (n >= 0)
                *c->index = n;
        return 0;
}

static int nodes_habana(struct node_ctx *c)
{
        int r = accel_index(c);

        if (r < 0 || (r = node_add(c->nodes, "/dev/accel/accel%" PRId64, *c->index)) < 0)
                return r;
        return node_add(c->nodes, "/dev/accel/accel_controlD%" PRId64, *c->index);
}

static int nodes_intel_npu(struct node_ctx *c)
{
        int r = accel_index(c);

        return r < 0 ? r : node_add(c->nodes, "/dev/accel/accel%" PRId64, *c->index);
}

static int nodes_tpu(struct node_ctx *c)
{
        return node_add(c->nodes, "/dev/accel%" PRId64, *c->index);
}

/* The user PF's render node, then the management PF's /dev/xclmgmt<instance>. */
static int nodes_xilinx(struct node_ctx *c)
{
        const char *mgmt = c->f->mgmt_address;
        _cleanup_free_ char *text = NULL;
        unsigned domain, bus, dev, fn;
        int r;

        if (!c->f->id->management) {
                r = render_node(c, c->f->address, false);
                if (r < 0)
                        return r;
        } else {
                mgmt = c->f->address;
        }
        if (!mgmt)
                return 0;
        /* xclmgmt writes its instance; else the number it derives from the address */
        r = read_optional(c->d, mgmt, "instance", &text);
        if (r < 0)
                return r;
        if (text && *text && strspn(text, "0123456789") == strlen(text))
                return node_add(c->nodes, "/dev/xclmgmt%s", text);
        if (sscanf(mgmt, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
                return 0;
        return node_add(
            c->nodes, "/dev/xclmgmt%u", (domain << 16) | (bus << 8) | (dev << 3) | (fn & 7));
}

static int nodes_intel_fpga(struct node_ctx *c)
{
        int r = node_add(c->nodes, "/dev/dfl-fme.%" PRId64, *c->index);

        return r < 0 ? r : node_add(c->nodes, "/dev/dfl-port.%" PRId64, *c->index);
}

static int nodes_enflame(struct node_ctx *c)
{
        return node_add(c->nodes, "/dev/gcu%" PRId64, *c->index);
}

static int nodes_iluvatar(struct node_ctx *c)
{
        return node_add(c->nodes, "/dev/iluvatar%" PRId64, *c->index);
}

struct family_ops {
        int (*nodes)(struct node_ctx *c);
        bool amdgpu_sysfs; /* mem_info_vram_total and friends below the device */
};

static const struct family_ops families[] = {
    [XP_PCI_NVIDIA] = {.nodes = nodes_nvidia},
    [XP_PCI_AMDGPU] = {.nodes = nodes_kfd, .amdgpu_sysfs = true},
    [XP_PCI_INTEL_GPU] = {.nodes = nodes_intel_gpu},
    [XP_PCI_HYGON_DCU] = {.nodes = nodes_kfd, .amdgpu_sysfs = true},
    [XP_PCI_ASCEND] = {.nodes = nodes_ascend},
    [XP_PCI_CAMBRICON] = {.nodes = nodes_cambricon},
    [XP_PCI_HABANA] = {.nodes = nodes_habana},
    [XP_PCI_TPU] = {.nodes = nodes_tpu},
    [XP_PCI_INTEL_NPU] = {.nodes = nodes_intel_npu},
    [XP_PCI_XILINX] = {.nodes = nodes_xilinx},
    [XP_PCI_INTEL_FPGA] = {.nodes = nodes_intel_fpga},
    [XP_PCI_ENFLAME] = {.nodes = nodes_enflame},
    [XP_PCI_ILUVATAR] = {.nodes = nodes_iluvatar},
    [XP_PCI_MTHREADS] = {.nodes = nodes_mthreads},
    [XP_PCI_METAX] = {.nodes = nodes_metax},
};

/* ---- the scan ----------------------------------------------------------------------------- */

static int
scan_one(struct xp_discovery *d, const char *name, struct pci_scan *scan, struct xp_error *err)
{
        struct pci_function f = {0};
        const struct xp_pci_id *id;
        struct pci_function *grown;
        int r;

        if (!is_pci_address(name))
                return 0;
        r = read_id(d, name, "vendor", &f.vendor, err);
        if (r >= 0)
                r = read_id(d, name, "device", &f.device, err);
        if (r == -ENOENT || r == -ENODEV) {
                /* a function that went away while we looked (hot unplug): not ours to fail on */
                xp_debug("pci", "%s: %s", name, xp_error_message(err));
                xp_error_clear(err);
                return 0;
        }
        if (r < 0)
                return r;
        id = xp_pci_id_lookup(f.vendor, f.device);
        if (!id)
                return 0;

        /* the other function of a multi-function card found already: one device */
        for (size_t i = 0; i < scan->n; i++) {
                struct pci_function *o = &scan->items[i];

                if (!same_slot(o->address, name) || o->id->family != id->family)
                        continue;
                if (id->management && !o->mgmt_address && !o->id->management)
                        return (o->mgmt_address = strdup(name)) ? 0 : -ENOMEM;
                if (o->id->management && !id->management) {
                        /* the user function leads: its address names the device */
                        free(o->mgmt_address);
                        o->mgmt_address = o->address;
                        o->address = strdup(name);
                        o->id = id;
                        o->device = f.device;
                        return o->address ? 0 : -ENOMEM;
                }
                return 0;
        }

        if (scan->n == PCI_MAX_DEVICES)
                return xp_errorf(
                    err, -E2BIG, PCI_DEVICES ": more than %d accelerators", PCI_MAX_DEVICES);
        f.id = id;
        f.address = strdup(name);
        if (!f.address)
                return -ENOMEM;
        r = read_ancestry(d, &f);
        if (r >= 0)
                r = read_locality(d, &f, err);
        if (r < 0) {
                pci_function_done(&f);
                if (r == -E2BIG)
                        return xp_errorf(err,
                                         r,
                                         PCI_DEVICES "/%s: PCI hierarchy deeper than %d",
                                         name,
                                         PCI_MAX_DEPTH);
                return r;
        }
        grown = realloc(scan->items, (scan->n + 1) * sizeof(*grown));
        if (!grown) {
                pci_function_done(&f);
                return -ENOMEM;
        }
        scan->items = grown;
        scan->items[scan->n++] = f;
        return 0;
}

static int fill_string(char **field, const char *value)
{
        return *field ? 0 : xp_discovery_set_string(field, value);
}

/* One number from an amdgpu sysfs file below the device: 0, or -ENOENT and friends, -ENOMEM. */
static int read_amdgpu_u64(struct xp_discovery *d,
                           const struct pci_function *f,
                           const char *file,
                           uint64_t *ret)
{
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, PCI_DEVICES "/%s/%s", f->address, file) < 0)
                return -ENOMEM;
        return xp_root_read_u64(d, path, ret);
}

/* amdgpu's memory size and, as live metrics, its busy percentage and memory in use. */
static int read_amdgpu(struct xp_discovery *d, const struct pci_function *f, struct xp_device *dev)
{
        uint64_t total, busy, used;
        bool have_busy, have_used;
        int r = read_amdgpu_u64(d, f, "mem_info_vram_total", &total);

        if (r == -ENOMEM)
                return r;
        if (r >= 0 && total <= INT64_MAX && dev->memory_bytes == 0)
                dev->memory_bytes = (int64_t)total;
        r = read_amdgpu_u64(d, f, "gpu_busy_percent", &busy);
        if (r == -ENOMEM)
                return r;
        have_busy = r >= 0 && busy <= 100;
        r = read_amdgpu_u64(d, f, "mem_info_vram_used", &used);
        if (r == -ENOMEM)
                return r;
        have_used = r >= 0 && used <= INT64_MAX;
        if ((!have_busy && !have_used) || dev->metrics)
                return 0;
        dev->metrics = calloc(1, sizeof(*dev->metrics));
        if (!dev->metrics)
                return -ENOMEM;
        if (have_busy)
                dev->metrics->utilization_percent = (double)busy;
        if (have_used)
                dev->metrics->memory_used_bytes = (int64_t)used;
        return 0;
}

/* A device an earlier backend found at this address (NVML may write an 8-digit domain). */
static struct xp_device *find_known(struct xp_discovery *d, const struct pci_function *f)
{
        const char *addresses[] = {f->address, f->mgmt_address};

        for (size_t i = 0; i < XP_ELEMENTSOF(addresses); i++) {
                char wide[32];
                struct xp_device *dev;

                if (!addresses[i])
                        continue;
                dev = xp_discovery_find_pci(d, addresses[i]);
                if (dev)
                        return dev;
                snprintf(wide, sizeof(wide), "0000%s", addresses[i]);
                dev = xp_discovery_find_pci(d, wide);
                if (dev)
                        return dev;
        }
        return NULL;
}

/* Adds the device, or fills in what nvml left missing on a device it found already. */
static int add_device(struct xp_discovery *d, struct pci_function *f, int64_t index)
{
        const struct family_ops *ops = &families[f->id->family];
        _cleanup_(node_list_done) struct node_list nodes = {0};
        _cleanup_free_ char *pci_id = NULL, *link = NULL, *uuid = NULL;
        const char *resource_name = f->id->resource_name;
        struct node_ctx c = {
            .d = d, .f = f, .index = &index, .nodes = &nodes, .resource_name = &resource_name};
        struct xp_device *dev;
        int r;

        r = ops->nodes(&c);
        if (r < 0)
                return r;
        if (asprintf(&pci_id, "%04x:%04x", f->vendor, f->device) < 0)
                return -ENOMEM;
        r = format_link(f, &link);
        if (r < 0)
                return r;

        if (f->id->family == XP_PCI_NVIDIA) {
                int64_t minor;

                r = nvidia_driver_info(d, f->address, &minor, &uuid);
                if (r < 0)
                        return r;
        }
        dev = find_known(d, f);
        if (!dev && uuid) /* NVML found it but could not say where it sits */
                dev = xp_discovery_find_id(d, uuid);
        if (!dev) {
                dev = xp_discovery_add_device(d);
                if (!dev)
                        return -ENOMEM;
                dev->kind = f->id->kind;
                dev->index = index;
                if (f->id->family == XP_PCI_NVIDIA && d->nvml_listed) {
                        /* on the bus and known to the driver, yet NVML cannot reach it */
                        dev->health = XP_DEVICE_UNHEALTHY;
                        r = xp_discovery_set_string(
                            &dev->health_reason,
                            "NVML does not report this GPU: it may have fallen off the bus or failed");
                        if (r < 0)
                                return r;
                }
                if ((r = xp_discovery_set_string(&dev->id, uuid ? uuid : f->address)) < 0 ||
                    (r = xp_discovery_set_string(&dev->pci_address, f->address)) < 0)
                        return r;
        }
        if (dev->kind == XP_DEVICE_KIND_UNSET)
                dev->kind = f->id->kind;
        if ((r = fill_string(&dev->vendor, f->id->vendor_name)) < 0 ||
            (r = fill_string(&dev->model, f->id->model)) < 0 ||
            (r = fill_string(&dev->resource_name, resource_name)) < 0 ||
            (r = fill_string(&dev->pci_address, f->address)) < 0 ||
            (r = fill_string(&dev->pci_id, pci_id)) < 0 ||
            (r = fill_string(&dev->pci_link, link)) < 0 ||
            (r = fill_string(&dev->local_cpus, f->local_cpus)) < 0)
                return r;
        if (!dev->numa_node.set)
                dev->numa_node = f->numa;
        if (dev->device_nodes.n == 0) {
                dev->device_nodes.items = TAKE_PTR(nodes.items);
                dev->device_nodes.n = nodes.n;
                nodes.n = 0;
        }
        if (ops->amdgpu_sysfs && (r = read_amdgpu(d, f, dev)) < 0)
                return r;
        return xp_discovery_set_string(&f->device_id, dev->id);
}

/* ---- topology ----------------------------------------------------------------------------- */

/* single_numa: the node has exactly one NUMA node, so crossing sockets is impossible */
static enum xp_link_level
pcie_level(const struct pci_function *a, const struct pci_function *b, bool single_numa)
{
        size_t common = 0, below_a, below_b;

        if (!a->host_bridge || !b->host_bridge || strcmp(a->host_bridge, b->host_bridge) != 0) {
                /* known NUMA nodes decide; with one unknown, a node with one NUMA node does */
                bool same_node = a->numa.set && b->numa.set
                                     ? a->numa.value == b->numa.value
                                     : single_numa || (!a->numa.set && !b->numa.set);

                return same_node ? XP_LINK_NODE : XP_LINK_SYS;
        }
        while (common < a->n_bridges && common < b->n_bridges &&
               strcasecmp(a->bridges[common], b->bridges[common]) == 0)
                common++;
        if (common == 0)
                return XP_LINK_PHB;
        below_a = a->n_bridges - common;
        below_b = b->n_bridges - common;
        return below_a <= 1 && below_b <= 1 ? XP_LINK_PIX : XP_LINK_PXB;
}

static int add_links(struct xp_discovery *d, const struct pci_scan *scan)
{
        for (size_t i = 0; i < scan->n; i++)
                for (size_t j = i + 1; j < scan->n; j++) {
                        const struct pci_function *a = &scan->items[i], *b = &scan->items[j];
                        double bw_a = link_bandwidth(a), bw_b = link_bandwidth(b);
                        int r =
                            xp_discovery_add_link(d,
                                                  a->device_id,
                                                  b->device_id,
                                                  pcie_level(a, b, d->inventory->numa_nodes.n == 1),
                                                  0,
                                                  bw_a < bw_b ? bw_a : bw_b);

                        if (r < 0)
                                return r;
                }
        return 0;
}

/* ---- the backend -------------------------------------------------------------------------- */

static int pci_probe(struct xp_discovery *d)
{
        return xp_root_exists(d, PCI_DEVICES) ? 0 : -ENODEV;
}

static int pci_discover(struct xp_discovery *d, struct xp_error *err)
{
        _cleanup_(pci_scan_done) struct pci_scan scan = {0};
        size_t counters[XP_ELEMENTSOF(families)] = {0};
        char **names = NULL;
        size_t n = 0;
        int r;

        r = xp_root_list(d, PCI_DEVICES, &names, &n);
        if (r < 0)
                return xp_errorf(err, r, PCI_DEVICES ": %s", strerror(-r));
        for (size_t i = 0; i < n && r >= 0; i++)
                r = scan_one(d, names[i], &scan, err);
        xp_strv_free(names, n);
        if (r < 0)
                return r;

        /* indexes per driver family in PCI address order, unless the driver tells (nodes_*) */
        for (size_t i = 0; i < scan.n; i++) {
                struct pci_function *f = &scan.items[i];

                r = add_device(d, f, (int64_t)counters[f->id->family]++);
                if (r < 0)
                        return r;
        }
        return add_links(d, &scan);
}

const struct xp_device_backend xp_pci_backend = {
    .name = "pci",
    .probe = pci_probe,
    .discover = pci_discover,
};
