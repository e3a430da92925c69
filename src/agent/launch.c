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

#include "agent/launch.h"
#include "xpool/devenv.h"
#include "xpool/quantity.h"
#include "xpool/sched.h"
#include "xpool/strutil.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct env_entry {
        char *name;
        char *value;
};

struct env_list {
        struct env_entry *items;
        size_t n;
};

static void env_list_done(struct env_list *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].value);
        }
        free(l->items);
        *l = (struct env_list){0};
}

static const char *env_get(const struct env_list *l, const char *name, size_t len)
{
        for (size_t i = 0; i < l->n; i++)
                if (strlen(l->items[i].name) == len && memcmp(l->items[i].name, name, len) == 0)
                        return l->items[i].value;
        return NULL;
}

/* Sets name (a later definition replaces an earlier one in place); takes value. */
static int env_set(struct env_list *l, const char *name, char *value)
{
        struct env_entry *grown;
        char *n;

        if (!value)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->items[i].name, name) == 0) {
                        free(l->items[i].value);
                        l->items[i].value = value;
                        return 0;
                }
        if (l->n >= XP_LAUNCH_ENV_MAX) {
                free(value);
                return -E2BIG;
        }
        n = strdup(name);
        grown = n ? realloc(l->items, (l->n + 1) * sizeof(*grown)) : NULL;
        if (!grown) {
                free(n);
                free(value);
                return -ENOMEM;
        }
        l->items = grown;
        grown[l->n++] = (struct env_entry){.name = n, .value = value};
        return 0;
}

/*
 * Kubernetes' $(VAR) expansion: $(NAME) of a defined variable is its value, of an unknown one
 * stays as written; $$ is a literal $; a $( without ) stays as written.
 */
static char *expand(const char *s, const struct env_list *vars)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        if (!f)
                return NULL;
        for (const char *p = s; *p;) {
                const char *close, *value;

                if (p[0] == '$' && p[1] == '$') {
                        fputc('$', f);
                        p += 2;
                } else if (p[0] == '$' && p[1] == '(' && (close = strchr(p + 2, ')'))) {
                        value = env_get(vars, p + 2, (size_t)(close - p - 2));
                        if (value)
                                fputs(value, f);
                        else
                                fwrite(p, 1, (size_t)(close - p + 1), f);
                        p = close + 1;
                } else {
                        fputc(*p++, f);
                }
        }
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

static const char *or_empty(const char *s)
{
        return s ? s : "";
}

static const char *host_ip(const struct xp_pod *pod, const struct xp_node *node)
{
        if (node)
                for (size_t i = 0; i < node->status.addresses.n; i++)
                        if (xp_streq0(node->status.addresses.items[i].type, "InternalIP"))
                                return node->status.addresses.items[i].address;
        return pod->status.host_ip;
}

/* metadata.labels['key'] -> key, or NULL when path is not of that form. */
static char *subscript(const char *path, const char *prefix)
{
        size_t n = strlen(prefix), len = strlen(path);

        if (strncmp(path, prefix, n) != 0 || strncmp(path + n, "['", 2) != 0 || len < n + 4 ||
            strcmp(path + len - 2, "']") != 0)
                return NULL;
        return strndup(path + n + 2, len - n - 4);
}

static int field_ref(const struct xp_pod *pod,
                     const struct xp_node *node,
                     const json_t *ref,
                     const char *where,
                     char **ret,
                     struct xp_error *err)
{
        const char *path = json_string_value(json_object_get(ref, "fieldPath"));
        _cleanup_free_ char *key = NULL;
        const char *v;

        if (!path)
                return xp_errorf(err, -EINVAL, "%s.fieldRef.fieldPath: missing", where);
        if (strcmp(path, "metadata.name") == 0)
                v = pod->metadata.name;
        else if (strcmp(path, "metadata.namespace") == 0)
                v = pod->metadata.namespace;
        else if (strcmp(path, "metadata.uid") == 0)
                v = pod->metadata.uid;
        else if (strcmp(path, "spec.nodeName") == 0)
                v = pod->spec.node_name;
        else if (strcmp(path, "status.hostIP") == 0 || strcmp(path, "status.podIP") == 0)
                v = host_ip(pod, node); /* processes share the node's network */
        else if ((key = subscript(path, "metadata.labels")))
                v = xp_strmap_get(&pod->metadata.labels, key);
        else if ((key = subscript(path, "metadata.annotations")))
                v = xp_strmap_get(&pod->metadata.annotations, key);
        else
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s.fieldRef.fieldPath: \"%s\" is not supported (metadata.name, metadata.namespace, metadata.uid, metadata.labels['KEY'], metadata.annotations['KEY'], spec.nodeName, status.hostIP, status.podIP)",
                    where,
                    path);
        *ret = strdup(or_empty(v));
        return *ret ? 0 : -ENOMEM;
}

static const struct xp_container *find_container(const struct xp_pod *pod, const char *name)
{
        for (size_t i = 0; i < pod->spec.containers.n; i++)
                if (xp_streq0(pod->spec.containers.items[i].name, name))
                        return &pod->spec.containers.items[i];
        for (size_t i = 0; i < pod->spec.init_containers.n; i++)
                if (xp_streq0(pod->spec.init_containers.items[i].name, name))
                        return &pod->spec.init_containers.items[i];
        return NULL;
}

/* limits.cpu and the like as the kubelet computes them: ceil(value / divisor), a missing limit
 * is the node's allocatable, a missing request the limit (as API defaulting makes it). */
static int resource_field_ref(const struct xp_pod *pod,
                              const struct xp_container *self,
                              const struct xp_node *node,
                              const json_t *ref,
                              const char *where,
                              char **ret,
                              struct xp_error *err)
{
        const char *res = json_string_value(json_object_get(ref, "resource"));
        const char *cname = json_string_value(json_object_get(ref, "containerName"));
        const char *div_text = json_string_value(json_object_get(ref, "divisor"));
        const struct xp_container *c = self;
        const struct xp_quantity *q = NULL;
        struct xp_quantity div = xp_quantity_from_int(1);
        int64_t qm = 0, dm;
        bool limits;
        const char *name;

        if (!res)
                return xp_errorf(err, -EINVAL, "%s.resourceFieldRef.resource: missing", where);
        if (strncmp(res, "limits.", 7) == 0)
                limits = true;
        else if (strncmp(res, "requests.", 9) == 0)
                limits = false;
        else
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s.resourceFieldRef.resource: \"%s\" is not supported (limits.cpu, limits.memory, limits.ephemeral-storage, requests.*)",
                    where,
                    res);
        name = res + (limits ? 7 : 9);
        if (strcmp(name, XP_RESOURCE_CPU) != 0 && strcmp(name, XP_RESOURCE_MEMORY) != 0 &&
            strcmp(name, XP_RESOURCE_EPHEMERAL_STORAGE) != 0)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s.resourceFieldRef.resource: \"%s\" is not supported (limits.cpu, limits.memory, limits.ephemeral-storage, requests.*)",
                    where,
                    res);
        if (cname && *cname && !(c = find_container(pod, cname)))
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s.resourceFieldRef.containerName: no container \"%s\"",
                                 where,
                                 cname);
        if (div_text && xp_quantity_parse(div_text, &div, NULL) < 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s.resourceFieldRef.divisor: \"%s\" is not a quantity",
                                 where,
                                 div_text);
        if (!limits)
                q = xp_resource_list_get(&c->resources.requests, name);
        if (!q)
                q = xp_resource_list_get(&c->resources.limits, name);
        if (!q && limits && node)
                q = xp_resource_list_get(&node->status.allocatable, name);
        if ((q && xp_quantity_to_milli(q, &qm) < 0) || xp_quantity_to_milli(&div, &dm) < 0 ||
            dm <= 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s.resourceFieldRef: %s or its divisor is out of range",
                                 where,
                                 res);
        return asprintf(ret, "%" PRId64, qm / dm + (qm % dm > 0)) < 0 ? -ENOMEM : 0;
}

static int add_spec_env(const struct xp_pod *pod,
                        const struct xp_container *c,
                        const char *cpath,
                        const struct xp_node *node,
                        struct env_list *env,
                        struct xp_error *err)
{
        for (size_t i = 0; i < c->env.n; i++) {
                const struct xp_env_var *e = &c->env.items[i];
                const json_t *from = json_object_get(e->extra, "valueFrom");
                char where[128];
                char *value = NULL;
                int r;

                snprintf(where, sizeof(where), "%s.env[%zu].valueFrom", cpath, i);
                if (!e->name || !*e->name)
                        return xp_errorf(err, -EINVAL, "%s.env[%zu].name: missing", cpath, i);
                if (from && json_object_get(from, "fieldRef"))
                        r = field_ref(
                            pod, node, json_object_get(from, "fieldRef"), where, &value, err);
                else if (from && json_object_get(from, "resourceFieldRef"))
                        r = resource_field_ref(pod,
                                               c,
                                               node,
                                               json_object_get(from, "resourceFieldRef"),
                                               where,
                                               &value,
                                               err);
                else if (from) {
                        const char *kind = json_object_iter_key(json_object_iter((json_t *)from));
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "%s.%s: not supported: xpool has no Secrets or ConfigMaps yet (fieldRef and resourceFieldRef are)",
                            where,
                            kind ? kind : "?");
                } else {
                        value = expand(or_empty(e->value), env);
                        r = value ? 0 : -ENOMEM;
                }
                if (r < 0)
                        return r;
                r = env_set(env, e->name, value);
                if (r == -E2BIG)
                        return xp_errorf(
                            err, r, "%s.env: more than %d variables", cpath, XP_LAUNCH_ENV_MAX);
                if (r < 0)
                        return r;
        }
        return 0;
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

/* The shared control nodes a vendor's user-space stack opens besides the per-device ones. */
static const struct vendor_nodes {
        const char *vendor; /* status.xpool.devices[].vendor, compared ignoring case */
        const char *nodes[4];
} vendor_nodes[] = {
    {.vendor = "NVIDIA",
     .nodes =
         {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}},
    {.vendor = "AMD", .nodes = {"/dev/kfd"}},
    {.vendor = "Huawei", .nodes = {"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}},
    {.vendor = "Cambricon", .nodes = {"/dev/cambricon_ctl"}},
    {.vendor = "MetaX", .nodes = {"/dev/mxcd"}},
};

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
                for (size_t v = 0; v < XP_ELEMENTSOF(vendor_nodes); v++) {
                        if (!dev->vendor || strcasecmp(dev->vendor, vendor_nodes[v].vendor) != 0)
                                continue;
                        /* AMD's /dev/kfd is the GPU compute interface, not the FPGAs' */
                        if (strcasecmp(dev->vendor, "AMD") == 0 && dev->kind != XP_DEVICE_GPU)
                                continue;
                        for (size_t k = 0; k < 4 && vendor_nodes[v].nodes[k]; k++)
                                if ((r = path_add(paths, vendor_nodes[v].nodes[k], err)) < 0)
                                        goto out;
                }
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
                    "%s: container %s has no command: xpool runs processes, not images (image \"%s\" is not pulled; give command or args)",
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
                if (!(l->argv[k++] = expand(or_empty(c->command.items[i]), env)))
                        return -ENOMEM;
        for (size_t i = 0; i < c->args.n; i++)
                if (!(l->argv[k++] = expand(or_empty(c->args.items[i]), env)))
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

static int env_to_array(const struct env_list *env, char ***ret)
{
        char **a = calloc(env->n + 1, sizeof(char *));

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < env->n; i++)
                if (asprintf(&a[i], "%s=%s", env->items[i].name, env->items[i].value) < 0) {
                        a[i] = NULL;
                        xp_devenv_free(a);
                        return -ENOMEM;
                }
        *ret = a;
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

/* The container's environment: xpool's defaults, the devices' variables, then the spec's. */
static int build_env(const struct xp_pod *pod,
                     const struct xp_container *c,
                     const char *cpath,
                     const struct xp_node *node,
                     const struct xp_placement *devices,
                     const struct xp_launch *l,
                     struct env_list *env,
                     struct xp_error *err)
{
        _cleanup_(xp_devenv_freep) char **devenv = NULL;
        int r;

        /* defaults first: the spec's env overrides them */
        if ((r = env_set(env, "PATH", strdup(DEFAULT_PATH))) < 0 ||
            (r = env_set(env,
                         "HOME",
                         strdup(l->launch.set_user && l->launch.uid != 0 ? "/" : "/root"))) < 0 ||
            (r = env_set(env, "XPOOL_POD_NAME", strdup(or_empty(pod->metadata.name)))) < 0 ||
            (r = env_set(env, "XPOOL_POD_NAMESPACE", strdup(or_empty(pod->metadata.namespace)))) <
                0 ||
            (r = env_set(env, "XPOOL_POD_UID", strdup(or_empty(pod->metadata.uid)))) < 0 ||
            (r = env_set(env, "XPOOL_NODE_NAME", strdup(or_empty(pod->spec.node_name)))) < 0)
                return r;
        if (devices) {
                r = xp_devenv_build(devices, node, &devenv, err);
                if (r < 0)
                        return xp_error_prefix(err, r, "annotation %s", XP_PLACEMENT_ANNOTATION);
                for (char **e = devenv; *e; e++) {
                        char *eq = strchr(*e, '=');

                        if (!eq)
                                continue;
                        *eq = 0;
                        r = env_set(env, *e, strdup(eq + 1));
                        *eq = '=';
                        if (r < 0)
                                return r;
                }
        }
        return add_spec_env(pod, c, cpath, node, env, err);
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
        _cleanup_(xp_launch_freep) struct xp_launch *l = NULL;
        _cleanup_(env_list_done) struct env_list env = {0};
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
        if (r >= 0)
                r = xp_launch_user(pod, c, cpath, policy, l, err);
        if (r >= 0)
                r = xp_launch_contain(pod, c, cpath, policy, l, err);
        if (r >= 0)
                r = build_env(pod, c, cpath, node, devices ? &pl : NULL, l, &env, err);
        if (r >= 0)
                r = build_argv(c, cpath, &env, l, err);
        if (r >= 0)
                r = env_to_array(&env, &l->env);
        if (r >= 0)
                r = build_devices(devices ? &pl : NULL, node, lookup, userdata, l, err);
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
        l->launch.working_dir = c->working_dir;
        l->launch.limits = &l->limits;
        /* stdin and stdinOnce (kubectl run -i) are not modelled: kept in the container's extra */
        l->launch.stdin = json_is_true(json_object_get(c->extra, "stdin"));
        l->launch.stdin_once = json_is_true(json_object_get(c->extra, "stdinOnce"));
        *ret = TAKE_PTR(l);
        return 0;
}
