/* SPDX-License-Identifier: Apache-2.0 */
/*
 * From a pod spec to a process launch: the parts of the kubelet and a container runtime that
 * still apply when there are no images (command and args expanded, env with the downward API,
 * user) plus the isolation xpool gives (cgroup limits, only the allocated devices).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "launch_internal.h"
#include "xpool/devenv.h"
#include "xpool/device.h"
#include "xpool/placement.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"

static const char *or_empty(const char *s)
{
        return s ? s : "";
}

bool xp_launch_requests_devices(const struct xp_container *c, const char **which)
{
        const struct xp_resource_list *lists[] = {&c->resources.limits, &c->resources.requests};

        for (size_t l = 0; l < XP_ELEMENTSOF(lists); l++)
                for (size_t i = 0; i < lists[l]->n; i++) {
                        const char *name = lists[l]->items[i].name;

                        if (xp_resource_name_is_extended(name) &&
                            !xp_quantity_is_zero(&lists[l]->items[i].quantity)) {
                                *which = name;
                                return true;
                        }
                }
        return false;
}

/* Fixed by the kernel's device list (Documentation/admin-guide/devices.txt). */
static const struct xp_cgroup_device default_devices[] = {
    {.type = 'c', .major = 1, .minor = 3, .access = "rwm"},                      /* null */
    {.type = 'c', .major = 1, .minor = 5, .access = "rwm"},                      /* zero */
    {.type = 'c', .major = 1, .minor = 7, .access = "rwm"},                      /* full */
    {.type = 'c', .major = 1, .minor = 8, .access = "rwm"},                      /* random */
    {.type = 'c', .major = 1, .minor = 9, .access = "rwm"},                      /* urandom */
    {.type = 'c', .major = 5, .minor = 0, .access = "rwm"},                      /* tty */
    {.type = 'c', .major = 5, .minor = 1, .access = "rwm"},                      /* console */
    {.type = 'c', .major = 5, .minor = 2, .access = "rwm"},                      /* ptmx */
    {.type = 'c', .major = 136, .minor = XP_CGROUP_DEVICE_ANY, .access = "rwm"}, /* pts */
};

struct path_list {
        const char *items[XP_CGROUP_DEVICES_MAX];
        size_t n;
};

static int path_add(struct path_list *l, const char *path, struct xp_error *err)
{
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->items[i], path) == 0)
                        return 0;
        if (l->n >= XP_ELEMENTSOF(l->items))
                return xp_errorf(err, -E2BIG, "more than %d device nodes", XP_CGROUP_DEVICES_MAX);
        l->items[l->n++] = path;
        return 0;
}

static int build_devices(const struct xp_placement *pl,
                         const struct xp_node *node,
                         xp_launch_dev_lookup_fn lookup,
                         void *userdata,
                         struct xp_launch *l,
                         struct xp_error *err)
{
        const struct xp_node_inventory *inv = node ? node->status.xpool : NULL;
        struct path_list *paths = calloc(1, sizeof(*paths));
        size_t n = XP_ELEMENTSOF(default_devices);
        int r = 0;

        if (!paths)
                return -ENOMEM;
        for (size_t i = 0; pl && i < pl->devices.n; i++) {
                const struct xp_device *dev = NULL;

                for (size_t d = 0; inv && d < inv->devices.n && !dev; d++)
                        if (xp_streq0(inv->devices.items[d].id, pl->devices.items[i].id))
                                dev = &inv->devices.items[d];
                if (!dev) {
                        r = xp_errorf(
                            err,
                            -EINVAL,
                            "annotation %s: device \"%s\" is not in the inventory of node %s",
                            XP_PLACEMENT_ANNOTATION,
                            or_empty(pl->devices.items[i].id),
                            node ? or_empty(node->metadata.name) : "(none)");
                        goto out;
                }
                for (size_t k = 0; k < dev->device_nodes.n; k++)
                        if ((r = path_add(paths, dev->device_nodes.items[k], err)) < 0)
                                goto out;
                for (const char *const *c = xp_device_control_nodes(dev); c && *c; c++)
                        if ((r = path_add(paths, *c, err)) < 0)
                                goto out;
        }
        l->devices = calloc(n + paths->n, sizeof(*l->devices));
        if (!l->devices) {
                r = -ENOMEM;
                goto out;
        }
        memcpy(l->devices, default_devices, sizeof(default_devices));
        for (size_t i = 0; i < paths->n; i++) {
                struct xp_cgroup_device d = {0};
                bool dup = false;

                if (!lookup) {
                        r = xp_errorf(err, -EINVAL, "device node %s: no lookup", paths->items[i]);
                        goto out;
                }
                r = lookup(paths->items[i], &d, userdata);
                if (r == -ENOENT)
                        continue; /* not on this machine: stays denied */
                if (r < 0) {
                        r = xp_errorf(err, r, "device node %s: %s", paths->items[i], strerror(-r));
                        goto out;
                }
                strcpy(d.access, "rwm");
                for (size_t k = 0; k < n && !dup; k++)
                        dup = l->devices[k].type == d.type && l->devices[k].major == d.major &&
                              l->devices[k].minor == d.minor;
                if (!dup)
                        l->devices[n++] = d;
        }
        l->n_devices = n;
        r = 0;
out:
        free(paths);
        return r;
}

static int build_argv(const struct xp_container *c,
                      const char *cpath,
                      const struct env_list *env,
                      struct xp_launch *l,
                      struct xp_error *err)
{
        size_t n = c->command.n + c->args.n, k = 0;

        if (n == 0)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s: container %s has no command: runtime class process runs processes of the node, not images (image \"%s\" is not pulled; give command or args, or run the pod under an OCI runtime class)",
                    cpath,
                    or_empty(c->name),
                    or_empty(c->image));
        if (n > XP_LAUNCH_ARGS_MAX)
                return xp_errorf(
                    err, -E2BIG, "%s: more than %d arguments", cpath, XP_LAUNCH_ARGS_MAX);
        l->argv = calloc(n + 1, sizeof(char *));
        if (!l->argv)
                return -ENOMEM;
        for (size_t i = 0; i < c->command.n; i++)
                if (!(l->argv[k++] = launch_expand(or_empty(c->command.items[i]), env)))
                        return -ENOMEM;
        for (size_t i = 0; i < c->args.n; i++)
                if (!(l->argv[k++] = launch_expand(or_empty(c->args.items[i]), env)))
                        return -ENOMEM;
        if (!*l->argv[0])
                return xp_errorf(err, -EINVAL, "%s: the program to run is empty", cpath);
        return 0;
}

static int build_limits(const struct xp_container *c,
                        const char *cpath,
                        const struct xp_placement *pl,
                        uint64_t pids_max,
                        struct xp_launch *l,
                        struct xp_error *err)
{
        const struct xp_quantity *cpu = xp_resource_list_get(&c->resources.limits, XP_RESOURCE_CPU);
        const struct xp_quantity *mem =
            xp_resource_list_get(&c->resources.limits, XP_RESOURCE_MEMORY);
        int64_t v;

        if (cpu) {
                if (xp_quantity_to_milli(cpu, &v) < 0 || v < 0)
                        return xp_errorf(
                            err, -EINVAL, "%s.resources.limits.cpu: out of range", cpath);
                l->limits.cpu_millis = (uint64_t)v;
        }
        if (mem) {
                if (xp_quantity_to_int_ceil(mem, &v) < 0 || v < 0)
                        return xp_errorf(
                            err, -EINVAL, "%s.resources.limits.memory: out of range", cpath);
                l->limits.memory_bytes = (uint64_t)v;
        }
        l->limits.pids_max = pids_max;
        if (pl && pl->cpus && *pl->cpus) {
                l->cpuset = strdup(pl->cpus);
                if (!l->cpuset)
                        return -ENOMEM;
                l->limits.cpuset_cpus = l->cpuset;
        }
        /* a privileged container opens every device node, as in Kubernetes */
        l->limits.restrict_devices = !l->contain.privileged;
        l->limits.devices = l->contain.privileged ? NULL : l->devices;
        l->limits.n_devices = l->contain.privileged ? 0 : l->n_devices;
        return 0;
}

void xp_launch_free(struct xp_launch *l)
{
        if (!l)
                return;
        xp_devenv_free(l->argv);
        xp_devenv_free(l->env);
        free(l->devices);
        free(l->cpuset);
        /* a configMap, secret or projected volume's directory is the launch's own */
        for (struct xp_container_mount *m = l->mounts; m && m->volume; m++)
                if (m->kind == XP_VOLUME_FILES)
                        free((char *)m->source);
        free(l->mounts);
        xp_devenv_free(l->cdi_devices);
        free(l->supplemental);
        free(l->hostname);
        free(l->host_domain);
        free(l->image_id);
        free(l->image_ref);
        free(l);
}

/* The spec of the container (or init container) named container, and its field path. */
static const struct xp_container *
spec_container(const struct xp_pod *pod, const char *container, bool init, char cpath[static 96])
{
        const struct xp_container *items =
            init ? pod->spec.init_containers.items : pod->spec.containers.items;
        size_t n = init ? pod->spec.init_containers.n : pod->spec.containers.n;

        for (size_t i = 0; i < n; i++)
                if (xp_streq0(items[i].name, container)) {
                        snprintf(
                            cpath, 96, "spec.%s[%zu]", init ? "initContainers" : "containers", i);
                        return &items[i];
                }
        return NULL;
}

bool xp_launch_pinned(const struct xp_pod *pod)
{
        const char *ann = xp_strmap_get(&pod->metadata.annotations, XP_PLACEMENT_ANNOTATION);
        struct xp_placement pl = {.numa_node = -1};
        bool pinned;

        if (!ann || xp_placement_from_json(ann, &pl, NULL) < 0)
                return false;
        pinned = pl.cpus && *pl.cpus;
        xp_placement_done(&pl);
        return pinned;
}

/* The placement annotation, when the pod has one (*have), and whether c needs it. */
static int placement(const struct xp_pod *pod,
                     const struct xp_container *c,
                     const char *cpath,
                     struct xp_placement *pl,
                     bool *have,
                     bool *devices,
                     struct xp_error *err)
{
        const char *ann = xp_strmap_get(&pod->metadata.annotations, XP_PLACEMENT_ANNOTATION);
        const char *which = NULL;
        int r;

        *devices = xp_launch_requests_devices(c, &which);
        if (*devices && !ann)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "pod %s/%s: annotation %s is missing, yet %s requests %s (the scheduler writes it when it binds the pod)",
                    or_empty(pod->metadata.namespace),
                    or_empty(pod->metadata.name),
                    XP_PLACEMENT_ANNOTATION,
                    cpath,
                    which);
        if (!ann)
                return 0;
        r = xp_placement_from_json(ann, pl, err);
        if (r < 0)
                return xp_error_prefix(err,
                                       r,
                                       "pod %s/%s",
                                       or_empty(pod->metadata.namespace),
                                       or_empty(pod->metadata.name));
        *have = true;
        return 0;
}

/* The parts of a launch that depend on what the container runs: a process of the node (argv,
 * env; the devices' nodes looked up), or an image under an OCI runtime (launch_oci.c; the
 * devices injected from CDI specs, the cgroup allowing exactly those). */
static int build_what(const struct xp_pod *pod,
                      const struct xp_container *c,
                      const char *cpath,
                      const struct xp_node *node,
                      const struct xp_placement *devices,
                      xp_launch_dev_lookup_fn lookup,
                      void *userdata,
                      const struct xp_launch_policy *policy,
                      const struct xp_launch_image *image,
                      struct env_list *env,
                      struct xp_launch *l,
                      struct xp_error *err)
{
        int r;

        if (image) {
                r = launch_oci(pod, c, cpath, node, devices, policy, image, env, l, err);
                return r < 0 ? r : build_devices(NULL, node, lookup, userdata, l, err);
        }
        r = build_argv(c, cpath, env, l, err);
        if (r >= 0)
                r = launch_env_array(env, &l->env);
        if (r >= 0)
                r = build_devices(devices, node, lookup, userdata, l, err);
        if (r >= 0)
                r = launch_process_volumes(pod, c, cpath, policy, l, err);
        if (r >= 0)
                l->launch.working_dir = c->working_dir;
        return r;
}

static int build(const struct xp_pod *pod,
                 const char *container,
                 bool init,
                 unsigned attempt,
                 const struct xp_node *node,
                 xp_launch_dev_lookup_fn lookup,
                 void *userdata,
                 uint64_t pids_max,
                 const struct xp_launch_policy *policy,
                 const struct xp_launch_image *image,
                 struct xp_launch **ret,
                 struct xp_error *err)
{
        _cleanup_(xp_launch_freep) struct xp_launch *l = NULL;
        _cleanup_(launch_env_done) struct env_list env = {0};
        struct xp_placement pl = {.numa_node = -1};
        const struct xp_container *c;
        bool devices = false, have_pl = false;
        char cpath[96] = "";
        int r;

        c = spec_container(pod, container, init, cpath);
        if (!c)
                return xp_errorf(err,
                                 -ENOENT,
                                 "pod %s/%s has no %scontainer %s",
                                 or_empty(pod->metadata.namespace),
                                 or_empty(pod->metadata.name),
                                 init ? "init " : "",
                                 container);
        r = placement(pod, c, cpath, &pl, &have_pl, &devices, err);
        if (r < 0)
                return r;
        l = calloc(1, sizeof(*l));
        r = l ? 0 : -ENOMEM;
        /* an image's user is the image's, resolved in its root file system (launch_oci.c) */
        if (r >= 0 && !image)
                r = xp_launch_user(pod, c, cpath, policy, l, err);
        if (r >= 0)
                r = xp_launch_contain(pod, c, cpath, policy, l, err);
        if (r >= 0)
                r = launch_env_build(pod,
                                     c,
                                     cpath,
                                     node,
                                     devices ? &pl : NULL,
                                     l,
                                     image != NULL,
                                     policy ? policy->api_host : NULL,
                                     policy ? policy->api_port : 0,
                                     &env,
                                     err);
        if (r >= 0)
                r = build_what(pod,
                               c,
                               cpath,
                               node,
                               devices ? &pl : NULL,
                               lookup,
                               userdata,
                               policy,
                               image,
                               &env,
                               l,
                               err);
        if (r >= 0)
                r = build_limits(c, cpath, have_pl ? &pl : NULL, pids_max, l, err);
        xp_placement_done(&pl);
        if (r == -ENOMEM)
                return xp_errorf(err,
                                 r,
                                 "pod %s/%s: out of memory",
                                 or_empty(pod->metadata.namespace),
                                 or_empty(pod->metadata.name));
        if (r == -E2BIG && err && !err->code)
                return xp_errorf(
                    err, r, "%s.env: more than %d variables", cpath, XP_LAUNCH_ENV_MAX);
        if (r < 0)
                return r;
        l->launch.pod_uid = pod->metadata.uid;
        l->launch.pod_namespace = pod->metadata.namespace;
        l->launch.pod_name = pod->metadata.name;
        l->launch.container = c->name;
        l->launch.attempt = attempt;
        l->launch.argv = l->argv;
        l->launch.env = l->env;
        l->launch.limits = &l->limits;
        /* stdin and stdinOnce (kubectl run -i) are not modelled: kept in the container's extra */
        l->launch.stdin = json_is_true(json_object_get(c->extra, "stdin"));
        l->launch.stdin_once = json_is_true(json_object_get(c->extra, "stdinOnce"));
        l->launch.tty = json_is_true(json_object_get(c->extra, "tty"));
        *ret = TAKE_PTR(l);
        return 0;
}

int xp_launch_build(const struct xp_pod *pod,
                    const char *container,
                    bool init,
                    unsigned attempt,
                    const struct xp_node *node,
                    xp_launch_dev_lookup_fn lookup,
                    void *userdata,
                    uint64_t pids_max,
                    const struct xp_launch_policy *policy,
                    struct xp_launch **ret,
                    struct xp_error *err)
{
        return build(pod,
                     container,
                     init,
                     attempt,
                     node,
                     lookup,
                     userdata,
                     pids_max,
                     policy,
                     NULL,
                     ret,
                     err);
}

/* The OCI runtime injects the devices from CDI: no device node of the node is looked up. */
static int no_lookup(const char *path, struct xp_cgroup_device *ret, void *userdata)
{
        (void)path;
        (void)ret;
        (void)userdata;
        return -ENOENT;
}

int xp_launch_build_image(const struct xp_pod *pod,
                          const char *container,
                          bool init,
                          unsigned attempt,
                          const struct xp_node *node,
                          uint64_t pids_max,
                          const struct xp_launch_policy *policy,
                          const struct xp_launch_image *image,
                          struct xp_launch **ret,
                          struct xp_error *err)
{
        return build(pod,
                     container,
                     init,
                     attempt,
                     node,
                     no_lookup,
                     NULL,
                     pids_max,
                     policy,
                     image,
                     ret,
                     err);
}
