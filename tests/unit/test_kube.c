/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure parts of the kube layer: the device plugin's resources, device lists and health
 * transitions, Allocate and GetPreferredAllocation for one container (src/kube/plugin_*.c), and
 * the CDI spec writer and checker (src/device/cdi*.c). The gRPC parts run against a fake kubelet
 * in tests/integration/22-device-plugin.sh.
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/plugin_internal.h"
#include "xpool/cdi.h"
#include "xpool/strutil.h"

/* ---- a small node: 4 NVIDIA GPUs in two NVLink pairs (NUMA 0, 1), 1 NPU, 1 odd device ----- */

static void add_device(struct xp_node_inventory *inv,
                       const char *id,
                       enum xp_device_kind kind,
                       const char *vendor,
                       const char *resource,
                       int64_t index,
                       int numa,
                       const char *const *nodes)
{
        struct xp_device *d = &inv->devices.items[inv->devices.n++];

        *d = (struct xp_device){.kind = kind, .index = index, .health = XP_DEVICE_HEALTHY};
        d->id = strdup(id);
        d->vendor = strdup(vendor);
        d->resource_name = resource ? strdup(resource) : NULL;
        if (numa >= 0)
                d->numa_node = (struct xp_opt_int64){.set = true, .value = numa};
        for (; nodes && *nodes; nodes++) {
                d->device_nodes.items =
                    realloc(d->device_nodes.items, (d->device_nodes.n + 1) * sizeof(char *));
                d->device_nodes.items[d->device_nodes.n++] = strdup(*nodes);
        }
}

static void
add_link(struct xp_node_inventory *inv, const char *a, const char *b, enum xp_link_level level)
{
        struct xp_device_link *l = &inv->links.items[inv->links.n++];

        *l = (struct xp_device_link){.level = level, .nvlinks = level == XP_LINK_NVLINK ? 6 : 0};
        l->a = strdup(a);
        l->b = strdup(b);
}

static struct xp_node_inventory *node(void)
{
        static const char *const ids[] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
        struct xp_node_inventory *inv = calloc(1, sizeof(*inv));

        inv->devices.items = calloc(8, sizeof(struct xp_device));
        inv->links.items = calloc(8, sizeof(struct xp_device_link));
        for (int i = 0; i < 4; i++) {
                char dev[32];

                snprintf(dev, sizeof(dev), "/dev/nvidia%d", i);
                add_device(inv,
                           ids[i],
                           XP_DEVICE_GPU,
                           "NVIDIA",
                           "nvidia.com/gpu",
                           i,
                           i / 2,
                           (const char *const[]){dev, "/dev/nvidiactl", NULL});
        }
        add_device(inv,
                   "ascend-0",
                   XP_DEVICE_NPU,
                   "Huawei",
                   "huawei.com/Ascend910",
                   0,
                   -1,
                   (const char *const[]){"/dev/davinci0", NULL});
        add_device(inv,
                   "odd/id",
                   XP_DEVICE_FPGA,
                   "Xilinx",
                   "xilinx.com/fpga",
                   0,
                   0,
                   (const char *const[]){"/dev/xclmgmt0", NULL});
        add_device(inv, "no-resource", XP_DEVICE_ACCELERATOR, "Acme", NULL, 0, 0, NULL);
        add_link(inv, "GPU-a", "GPU-b", XP_LINK_NVLINK);
        add_link(inv, "GPU-c", "GPU-d", XP_LINK_NVLINK);
        add_link(inv, "GPU-a", "GPU-c", XP_LINK_SYS);
        add_link(inv, "GPU-a", "GPU-d", XP_LINK_SYS);
        add_link(inv, "GPU-b", "GPU-c", XP_LINK_SYS);
        add_link(inv, "GPU-b", "GPU-d", XP_LINK_SYS);
        return inv;
}

static const struct kube_resource *
resource(const struct kube_resource *res, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(res[i].name, name) == 0)
                        return &res[i];
        fail_msg("no resource %s", name);
        return NULL;
}

static void resources_by_name(void **state)
{
        struct xp_node_inventory *inv = node();
        static const char *const only[] = {"nvidia.com/gpu", NULL};
        struct kube_resource *res;
        size_t n;

        (void)state;
        assert_int_equal(kube_resources_build(inv, NULL, NULL, &res, &n), 0);
        assert_int_equal(n, 3); /* the device without a resource name is nobody's */
        assert_string_equal(res[0].name, "huawei.com/Ascend910");
        assert_string_equal(res[1].name, "nvidia.com/gpu");
        assert_string_equal(res[2].name, "xilinx.com/fpga");
        assert_int_equal(res[1].n, 4);
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(res[1].slots[i], i);
        kube_resources_free(res, n);

        assert_int_equal(kube_resources_build(inv, only, NULL, &res, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(res[0].name, "nvidia.com/gpu");
        kube_resources_free(res, n);
        assert_int_equal(kube_resources_build(inv, NULL, only, &res, &n), 0);
        assert_int_equal(n, 2);
        assert_null(strstr(res[0].name, "nvidia") ? res[0].name : NULL);
        assert_null(strstr(res[1].name, "nvidia") ? res[1].name : NULL);
        kube_resources_free(res, n);
        xp_node_inventory_free(inv);
}

static void device_list(void **state)
{
        struct xp_node_inventory *inv = node();
        V1beta1__ListAndWatchResponse *list;
        struct kube_resource *res;
        size_t n;

        (void)state;
        inv->devices.items[1].health = XP_DEVICE_UNHEALTHY;
        inv->devices.items[2].health = XP_DEVICE_HEALTH_UNKNOWN;
        assert_int_equal(kube_resources_build(inv, NULL, NULL, &res, &n), 0);
        list = kube_list_build(inv, resource(res, n, "nvidia.com/gpu"));
        assert_non_null(list);
        assert_int_equal(list->n_devices, 4);
        assert_string_equal(list->devices[0]->id, "GPU-a");
        assert_string_equal(list->devices[0]->health, "Healthy");
        assert_string_equal(list->devices[1]->health, "Unhealthy");
        assert_string_equal(list->devices[2]->health, "Healthy"); /* unknown: no third word */
        assert_int_equal(list->devices[3]->topology->n_nodes, 1);
        assert_int_equal(list->devices[3]->topology->nodes[0]->id, 1);
        kube_list_free(list);
        /* no NUMA node known: no TopologyInfo at all */
        list = kube_list_build(inv, resource(res, n, "huawei.com/Ascend910"));
        assert_int_equal(list->n_devices, 1);
        assert_null(list->devices[0]->topology);
        kube_list_free(list);
        kube_resources_free(res, n);
        xp_node_inventory_free(inv);
}

static void health_transitions(void **state)
{
        struct xp_node_inventory *inv = node();
        struct kube_resource *res, *gpus;
        size_t n;

        (void)state;
        assert_int_equal(kube_resources_build(inv, NULL, NULL, &res, &n), 0);
        gpus = (struct kube_resource *)resource(res, n, "nvidia.com/gpu");
        assert_false(kube_resource_health_changed(inv, gpus));
        inv->devices.items[1].health = XP_DEVICE_UNHEALTHY;
        assert_true(kube_resource_health_changed(inv, gpus));
        assert_false(kube_resource_health_changed(inv, gpus)); /* streamed once */
        inv->devices.items[3].health = XP_DEVICE_HEALTH_UNKNOWN;
        assert_false(kube_resource_health_changed(inv, gpus)); /* the same word on the wire */
        inv->devices.items[1].health = XP_DEVICE_HEALTHY;
        assert_true(kube_resource_health_changed(inv, gpus));
        assert_false(kube_resource_health_changed(inv, gpus));
        assert_string_equal(kube_health_word(XP_DEVICE_UNHEALTHY), "Unhealthy");
        kube_resources_free(res, n);
        xp_node_inventory_free(inv);
}

static void socket_names(void **state)
{
        char *name;

        (void)state;
        assert_int_equal(kube_socket_name("nvidia.com/gpu", 0, &name), 0);
        assert_string_equal(name, "xpool-nvidia.com_gpu.sock");
        free(name);
        assert_int_equal(kube_socket_name("huawei.com/Ascend910", 3, &name), 0);
        assert_string_equal(name, "xpool-huawei.com_Ascend910.3.sock");
        free(name);
}

static const char *env_of(const V1beta1__ContainerAllocateResponse *c, const char *key)
{
        for (size_t i = 0; i < c->n_envs; i++)
                if (strcmp(c->envs[i]->key, key) == 0)
                        return c->envs[i]->value;
        return NULL;
}

/* A refused registration is due again when its back-off ends, and only then; an endpoint that
 * is registering, registered or not served is never due. */
static void registration_retry_due(void **state)
{
        struct kube_endpoint ep = {.server = (struct kube_server *)&ep, .reg = KUBE_REG_IDLE};

        (void)state;
        assert_false(kube_register_due(&ep, 1000)); /* never refused: the socket checks register */
        ep.reg_retry_at_ms = 1500;
        assert_false(kube_register_due(&ep, 1499));
        assert_true(kube_register_due(&ep, 1500));
        assert_true(kube_register_due(&ep, 9000));
        ep.reg = KUBE_REG_PENDING;
        assert_false(kube_register_due(&ep, 9000));
        ep.reg = KUBE_REG_DONE;
        assert_false(kube_register_due(&ep, 9000));
        ep.reg = KUBE_REG_IDLE;
        ep.server = NULL;
        assert_false(kube_register_due(&ep, 9000));
}

static void allocate(void **state)
{
        struct xp_node_inventory *inv = node();
        struct xp_kube_mount mount = {.resource = "nvidia.com/gpu",
                                      .host_path = "/opt/cuda",
                                      .container_path = "/usr/local/cuda",
                                      .read_only = true};
        struct kube_alloc_config config = {.mounts = &mount, .n_mounts = 1, .cdi = true};
        char *ids[] = {"GPU-d", "GPU-c"}, *bad[] = {"GPU-a", "GPU-x"},
             *twice[] = {"GPU-a", "GPU-a"};
        V1beta1__ContainerAllocateResponse *c = NULL;
        struct xp_error err = {0};
        struct kube_resource *res;
        size_t n;

        (void)state;
        assert_int_equal(kube_resources_build(inv, NULL, NULL, &res, &n), 0);
        assert_int_equal(
            kube_allocate(inv, resource(res, n, "nvidia.com/gpu"), &config, ids, 2, &c, &err), 0);
        assert_string_equal(env_of(c, "NVIDIA_VISIBLE_DEVICES"), "GPU-d,GPU-c");
        assert_string_equal(env_of(c, "CUDA_VISIBLE_DEVICES"), "GPU-d,GPU-c");
        assert_non_null(env_of(c, "XPOOL_DEVICES"));
        assert_int_equal(c->n_devices, 3); /* nvidia3, nvidiactl once, nvidia2 */
        assert_string_equal(c->devices[0]->host_path, "/dev/nvidia3");
        assert_string_equal(c->devices[1]->host_path, "/dev/nvidiactl");
        assert_string_equal(c->devices[2]->host_path, "/dev/nvidia2");
        assert_string_equal(c->devices[2]->permissions, "rw");
        assert_int_equal(c->n_cdi_devices, 2);
        assert_string_equal(c->cdi_devices[0]->name, "xpool.io/gpu=GPU-d");
        assert_string_equal(c->cdi_devices[1]->name, "xpool.io/gpu=GPU-c");
        assert_int_equal(c->n_mounts, 1);
        assert_string_equal(c->mounts[0]->container_path, "/usr/local/cuda");
        assert_true(c->mounts[0]->read_only);
        kube_allocate_free(c);
        c = NULL;

        assert_int_equal(
            kube_allocate(inv, resource(res, n, "nvidia.com/gpu"), &config, bad, 2, &c, &err),
            -EINVAL);
        assert_string_equal(err.msg,
                            "devices_ids[1]: GPU-x is no nvidia.com/gpu device of this node");
        assert_null(c);
        assert_int_equal(
            kube_allocate(inv, resource(res, n, "nvidia.com/gpu"), &config, twice, 2, &c, &err),
            -EINVAL);
        assert_string_equal(err.msg, "devices_ids[1]: GPU-a is listed twice");
        /* another resource's device is no device of this one */
        assert_int_equal(
            kube_allocate(inv, resource(res, n, "huawei.com/Ascend910"), &config, ids, 1, &c, &err),
            -EINVAL);

        /* without CDI and for a device without a CDI name: none named, no mount of another resource
         */
        config.cdi = false;
        assert_int_equal(
            kube_allocate(inv, resource(res, n, "nvidia.com/gpu"), &config, ids, 1, &c, &err), 0);
        assert_int_equal(c->n_cdi_devices, 0);
        kube_allocate_free(c);
        config.cdi = true;
        assert_int_equal(kube_allocate(inv,
                                       resource(res, n, "xilinx.com/fpga"),
                                       &config,
                                       (char *[]){"odd/id"},
                                       1,
                                       &c,
                                       &err),
                         0);
        assert_int_equal(c->n_cdi_devices, 0);
        assert_int_equal(c->n_devices, 1);
        kube_allocate_free(c);
        kube_resources_free(res, n);
        xp_node_inventory_free(inv);
}

static V1beta1__ContainerPreferredAllocationResponse *prefer(const struct xp_node_inventory *inv,
                                                             const struct kube_resource *res,
                                                             char **avail,
                                                             size_t n_avail,
                                                             char **must,
                                                             size_t n_must,
                                                             int size,
                                                             int want_r,
                                                             struct xp_error *err)
{
        V1beta1__ContainerPreferredAllocationRequest req =
            V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationResponse *resp = NULL;

        req.available_deviceids = avail;
        req.n_available_deviceids = n_avail;
        req.must_include_deviceids = must;
        req.n_must_include_deviceids = n_must;
        req.allocation_size = size;
        assert_int_equal(kube_prefer(inv, res, &req, &resp, err), want_r);
        return resp;
}

static void preferred(void **state)
{
        struct xp_node_inventory *inv = node();
        char *all[] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"}, *must_d[] = {"GPU-d"},
             *nope[] = {"GPU-x"};
        V1beta1__ContainerPreferredAllocationResponse *r;
        const struct kube_resource *gpus;
        struct xp_error err = {0};
        struct kube_resource *res;
        size_t n;

        (void)state;
        assert_int_equal(kube_resources_build(inv, NULL, NULL, &res, &n), 0);
        gpus = resource(res, n, "nvidia.com/gpu");
        r = prefer(inv, gpus, all, 4, NULL, 0, 2, 0, &err);
        assert_int_equal(r->n_deviceids, 2);
        assert_string_equal(r->deviceids[0], "GPU-a"); /* an NVLink pair, the lowest */
        assert_string_equal(r->deviceids[1], "GPU-b");
        kube_prefer_free(r);
        r = prefer(inv, gpus, all, 4, must_d, 1, 2, 0, &err);
        assert_string_equal(r->deviceids[0], "GPU-c"); /* GPU-d's partner */
        assert_string_equal(r->deviceids[1], "GPU-d");
        kube_prefer_free(r);
        /* GPU-a held: of the three left, the free pair, not the half-used one */
        r = prefer(inv, gpus, all + 1, 3, NULL, 0, 2, 0, &err);
        assert_string_equal(r->deviceids[0], "GPU-c");
        assert_string_equal(r->deviceids[1], "GPU-d");
        kube_prefer_free(r);
        /* all unhealthy: the core finds none, the kubelet still gets an answer */
        for (size_t i = 0; i < 4; i++)
                inv->devices.items[i].health = XP_DEVICE_UNHEALTHY;
        r = prefer(inv, gpus, all, 4, must_d, 1, 2, 0, &err);
        assert_int_equal(r->n_deviceids, 2);
        assert_string_equal(r->deviceids[0], "GPU-d");
        assert_string_equal(r->deviceids[1], "GPU-a");
        kube_prefer_free(r);

        assert_null(prefer(inv, gpus, all, 4, NULL, 0, 5, -EINVAL, &err));
        assert_string_equal(err.msg, "allocation_size 5 with 4 available devices");
        assert_null(prefer(inv, gpus, all, 4, NULL, 0, 0, -EINVAL, &err));
        assert_null(prefer(inv, gpus, nope, 1, NULL, 0, 1, -EINVAL, &err));
        assert_string_equal(err.msg, "nvidia.com/gpu device GPU-x: no such device on this node");
        assert_null(prefer(inv, gpus, all, 2, must_d, 1, 1, -EINVAL, &err));
        assert_string_equal(err.msg,
                            "nvidia.com/gpu device GPU-d must be included but is not available");
        kube_resources_free(res, n);
        xp_node_inventory_free(inv);
}

/* ---- CDI --------------------------------------------------------------------------------- */

static void cdi_names_and_specs(void **state)
{
        struct xp_node_inventory *inv = node();
        char name[XP_CDI_NAME_MAX + 64];
        struct xp_error err = {0};
        json_t *spec;

        (void)state;
        assert_int_equal(xp_cdi_device_name(&inv->devices.items[0], name, sizeof(name)), 0);
        assert_string_equal(name, "xpool.io/gpu=GPU-a");
        assert_int_equal(xp_cdi_device_name(&inv->devices.items[4], name, sizeof(name)), 0);
        assert_string_equal(name, "xpool.io/npu=ascend-0");
        /* an id CDI cannot name, a device without nodes: no name */
        assert_int_equal(xp_cdi_device_name(&inv->devices.items[5], name, sizeof(name)), -ENOENT);
        assert_int_equal(xp_cdi_device_name(&inv->devices.items[6], name, sizeof(name)), -ENOENT);
        assert_int_equal(xp_cdi_device_name(&inv->devices.items[0], name, 8), -ENAMETOOLONG);

        assert_int_equal(xp_cdi_spec_build(inv, "xpool.io/gpu", &spec), 0);
        assert_int_equal(xp_cdi_check(spec, &err), 0);
        assert_string_equal(json_string_value(json_object_get(spec, "cdiVersion")), XP_CDI_VERSION);
        assert_int_equal(json_array_size(json_object_get(spec, "devices")), 4);
        {
                json_t *third = json_array_get(json_object_get(spec, "devices"), 2);
                json_t *nodes =
                    json_object_get(json_object_get(third, "containerEdits"), "deviceNodes");

                assert_string_equal(json_string_value(json_object_get(third, "name")), "GPU-c");
                assert_int_equal(json_array_size(nodes), 2);
                assert_string_equal(
                    json_string_value(json_object_get(json_array_get(nodes, 0), "path")),
                    "/dev/nvidia2");
        }
        json_decref(spec);
        assert_int_equal(xp_cdi_spec_build(inv, "xpool.io/fpga", &spec), -ENOENT);
        xp_node_inventory_free(inv);
}

static void cdi_write(void **state)
{
        struct xp_node_inventory *inv = node();
        char dir[] = "/tmp/xpool-cdi-XXXXXX", path[128];
        struct xp_error err = {0};
        struct stat st;

        (void)state;
        assert_non_null(mkdtemp(dir));
        assert_int_equal(xp_cdi_write(inv, dir, &err), 0);
        snprintf(path, sizeof(path), "%s/xpool.io-gpu.json", dir);
        assert_int_equal(xp_cdi_check_file(path, &err), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0644);
        snprintf(path, sizeof(path), "%s/xpool.io-npu.json", dir);
        assert_int_equal(xp_cdi_check_file(path, &err), 0);
        /* the NPU leaves the node: its spec goes, the GPUs' stays */
        free(inv->devices.items[4].resource_name);
        inv->devices.items[4].resource_name = NULL;
        assert_int_equal(xp_cdi_write(inv, dir, &err), 0);
        assert_int_equal(stat(path, &st), -1);
        snprintf(path, sizeof(path), "%s/xpool.io-gpu.json", dir);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
        /* a directory that cannot be made */
        assert_int_equal(xp_cdi_write(inv, "/proc/xpool-no/cdi", &err), -ENOENT);
        assert_non_null(strstr(err.msg, "/proc/xpool-no/cdi"));
        xp_node_inventory_free(inv);
}

static void cdi_checker(void **state)
{
        static const struct {
                const char *spec;
                const char *error;
        } bad[] = {
            {"[]", "/: must be an object"},
            {"{\"kind\":\"a.com/b\",\"devices\":[]}", "/: cdiVersion is required"},
            {"{\"cdiVersion\":\"9.9.9\",\"kind\":\"a.com/b\",\"devices\":[]}",
             "/cdiVersion: '9.9.9' is not a CDI version"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"ab\",\"devices\":[]}",
             "/kind: 'ab' is not a kind vendor/class"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b.c\",\"devices\":[]}",
             "/kind: 'a.com/b.c' is not a kind"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[]}",
             "/devices: no devices"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\"}]}",
             "/devices/0: containerEdits is required"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x-\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
             "/devices/0/name: 'x-' is not a device name"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}]}",
             "/devices/0/containerEdits: no container edits"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"=1\"]}}]}",
             "/devices/0/containerEdits/env/0: '=1' is not NAME=value"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"dev/x\"}]}}]}",
             "/devices/0/containerEdits/deviceNodes/0/path: 'dev/x' is not an absolute path"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/x\",\"permissions\":\"rwx\"}]}}]}",
             "deviceNodes/0/permissions: 'rwx' is not cgroup device access"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/x\",\"uid\":-1}]}}]}",
             "deviceNodes/0/uid: must be between 0 and 4294967295"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"mounts\":[{\"hostPath\":\"/a\"}]}}]}",
             "/devices/0/containerEdits/mounts/0: containerPath is required"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"hooks\":[{\"hookName\":\"h\",\"path\":\"/h\",\"args\":[1]}]}}]}",
             "/devices/0/containerEdits/hooks/0/args/0: must be a string"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}},{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
             "/devices/1: the device name 'x' is used twice"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}],\"extra\":1}",
             "/extra: unknown member"},
            {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/b\",\"annotations\":{\"a\":1},\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
             "/annotations/a: must be a string"},
        };
        const char *good =
            "{\"cdiVersion\":\"0.6.0\",\"kind\":\"vendor.com/class_1\",\"annotations\":{\"a\":\"b\"},"
            "\"containerEdits\":{\"env\":[\"X=\"]},\"devices\":[{\"name\":\"0\",\"annotations\":{},"
            "\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/x\",\"type\":\"c\",\"major\":195,\"minor\":0,\"permissions\":\"rw\"}],"
            "\"mounts\":[{\"hostPath\":\"/a\",\"containerPath\":\"/b\",\"options\":[\"ro\"]}],"
            "\"hooks\":[{\"hookName\":\"createContainer\",\"path\":\"/bin/h\",\"timeout\":5}]}},"
            "{\"name\":\"GPU-1:2.3\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}";
        struct xp_error err = {0};
        json_t *spec;

        (void)state;
        spec = json_loads(good, 0, NULL);
        assert_non_null(spec);
        if (xp_cdi_check(spec, &err) < 0)
                fail_msg("a good spec refused: %s", err.msg);
        json_decref(spec);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                spec = json_loads(bad[i].spec, 0, NULL);
                assert_non_null(spec);
                assert_int_equal(xp_cdi_check(spec, &err), -EINVAL);
                if (!strstr(err.msg, bad[i].error))
                        fail_msg("spec %zu: '%s' does not say '%s'", i, err.msg, bad[i].error);
                json_decref(spec);
        }
        assert_int_equal(xp_cdi_check_file("/nonexistent/spec.json", &err), -EINVAL);
        assert_non_null(strstr(err.msg, "/nonexistent/spec.json"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(resources_by_name),
            cmocka_unit_test(device_list),
            cmocka_unit_test(health_transitions),
            cmocka_unit_test(socket_names),
            cmocka_unit_test(registration_retry_due),
            cmocka_unit_test(allocate),
            cmocka_unit_test(preferred),
            cmocka_unit_test(cdi_names_and_specs),
            cmocka_unit_test(cdi_write),
            cmocka_unit_test(cdi_checker),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
