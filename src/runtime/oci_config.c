/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.json for the OCI runtime (runtime-spec 1.0.2), built from the container's launch as the
 * agent made it (argv, env and working directory with the image's config applied), the
 * containment model (include/xpool/contain.h: the same capabilities, no_new_privs, seccomp rules,
 * masked and read-only paths as the process runtime), the pod's own files and volumes, and the
 * CDI edits of its devices. Pure: what needs the file system was resolved before.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "oci_internal.h"
#include "xpool/contain.h"
#include "xpool/strutil.h"

#define MOUNT_SAFE "nosuid", "noexec", "nodev"

static json_t *strings(char *const *v)
{
        json_t *a = json_array();

        for (size_t i = 0; a && v && v[i]; i++)
                if (json_array_append_new(a, json_string(v[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

/* The names of the capabilities in set ("CAP_CHOWN", ...). */
static json_t *cap_names(uint64_t set)
{
        json_t *a = json_array();

        for (int c = 0; a && c <= XP_CAP_LAST; c++)
                if ((set & XP_CAP_BIT(c)) &&
                    json_array_append_new(a, json_string(xp_cap_name(c))) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

/* env, with each CDI NAME=value replacing the container's own NAME (as CDI applies edits). */
static json_t *process_env(const struct oci_config_in *in)
{
        json_t *env = strings(in->launch->env), *e, *cdi = json_object_get(in->cdi, "env");
        size_t i;

        json_array_foreach(cdi, i, e)
        {
                const char *kv = json_string_value(e);
                size_t len = strcspn(kv, "=") + 1, j;
                json_t *have;
                bool set = false;

                json_array_foreach(env, j, have)
                {
                        if (strncmp(json_string_value(have), kv, len) == 0) {
                                json_array_set(env, j, e);
                                set = true;
                        }
                }
                if (!set && json_array_append(env, e) < 0) {
                        json_decref(env);
                        return NULL;
                }
        }
        /* a terminal's TERM, as containerd sets it, unless the container has its own */
        json_array_foreach(env, i, e)
        {
                if (strncmp(json_string_value(e), "TERM=", 5) == 0)
                        return env;
        }
        if (in->launch->tty && json_array_append_new(env, json_string("TERM=xterm")) < 0) {
                json_decref(env);
                return NULL;
        }
        return env;
}

static json_t *process(const struct oci_config_in *in)
{
        const struct xp_caps *asked = &in->contain->caps;
        /* the runtime can give no capability the node's root lacks: capset(2) refuses the lot */
        const struct xp_caps cut = {.bounding = asked->bounding & in->node_caps,
                                    .effective = asked->effective & in->node_caps,
                                    .permitted = asked->permitted & in->node_caps,
                                    .inheritable = asked->inheritable & in->node_caps,
                                    .ambient = asked->ambient & in->node_caps};
        const struct xp_caps *caps = &cut;
        const struct xp_container_launch *l = in->launch;
        json_t *p =
            json_pack("{s:b, s:{s:i, s:i}, s:o, s:o, s:s, s:{s:o, s:o, s:o, s:o, s:o}, s:b}",
                      "terminal",
                      l->tty,
                      "user",
                      "uid",
                      0,
                      "gid",
                      0,
                      "args",
                      strings(l->argv),
                      "env",
                      process_env(in),
                      "cwd",
                      l->working_dir && *l->working_dir ? l->working_dir : "/",
                      "capabilities",
                      "bounding",
                      cap_names(caps->bounding),
                      "effective",
                      cap_names(caps->effective),
                      "permitted",
                      cap_names(caps->permitted),
                      "inheritable",
                      cap_names(caps->inheritable),
                      "ambient",
                      cap_names(caps->ambient),
                      "noNewPrivileges",
                      in->contain->no_new_privs);

        if (p && in->apparmor &&
            json_object_set_new(p, "apparmorProfile", json_string(in->apparmor)) < 0) {
                json_decref(p);
                return NULL;
        }
        return p;
}

/* ---- mounts --------------------------------------------------------------------------------- */

static int
add_mount(json_t *mounts, const char *dest, const char *type, const char *source, json_t *options)
{
        json_t *m = json_pack("{s:s, s:s, s:s, s:o}",
                              "destination",
                              dest,
                              "type",
                              type,
                              "source",
                              source,
                              "options",
                              options ? options : json_array());

        return m && json_array_append_new(mounts, m) == 0 ? 0 : -ENOMEM;
}

/* What every container has: its /proc, /dev, /sys and cgroups, as runc's and crun's defaults. */
static int kernel_mounts(const struct oci_config_in *in, json_t *mounts)
{
        bool priv = in->contain->privileged;
        int r = 0;

        r |= add_mount(mounts, "/proc", "proc", "proc", json_pack("[s, s, s]", MOUNT_SAFE));
        r |= add_mount(
            mounts,
            "/dev",
            "tmpfs",
            "tmpfs",
            json_pack("[s, s, s, s]", "nosuid", "strictatime", "mode=755", "size=65536k"));
        r |= add_mount(mounts,
                       "/dev/pts",
                       "devpts",
                       "devpts",
                       json_pack("[s, s, s, s, s, s]",
                                 "nosuid",
                                 "noexec",
                                 "newinstance",
                                 "ptmxmode=0666",
                                 "mode=0620",
                                 "gid=5"));
        r |= add_mount(mounts,
                       "/dev/shm",
                       "tmpfs",
                       "shm",
                       json_pack("[s, s, s, s, s]", MOUNT_SAFE, "mode=1777", "size=65536k"));
        r |= add_mount(
            mounts, "/dev/mqueue", "mqueue", "mqueue", json_pack("[s, s, s]", MOUNT_SAFE));
        r |= add_mount(mounts,
                       "/sys",
                       "sysfs",
                       "sysfs",
                       json_pack("[s, s, s, s]", MOUNT_SAFE, priv ? "rw" : "ro"));
        /* its own group only, through its cgroup namespace; read-only unless privileged */
        r |= add_mount(mounts,
                       "/sys/fs/cgroup",
                       "cgroup",
                       "cgroup",
                       json_pack("[s, s, s, s, s]", MOUNT_SAFE, "relatime", priv ? "rw" : "ro"));
        return r ? -ENOMEM : 0;
}

/* /etc/hosts, /etc/hostname and /etc/resolv.conf: the pod's, as the kubelet mounts them. */
static int pod_files(const struct oci_config_in *in, json_t *mounts)
{
        static const char *const files[] = {"hosts", "hostname", "resolv.conf"};
        char src[4096], dest[64];

        for (size_t i = 0; in->pod_dir && i < XP_ELEMENTSOF(files); i++) {
                snprintf(src, sizeof(src), "%s/%s", in->pod_dir, files[i]);
                snprintf(dest, sizeof(dest), "/etc/%s", files[i]);
                if (add_mount(mounts,
                              dest,
                              "bind",
                              src,
                              json_pack("[s, s, s]",
                                        "rbind",
                                        "rprivate",
                                        in->contain->read_only_root ? "ro" : "rw")) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Whether path is parent or below it. */
static bool under(const char *path, const char *parent)
{
        size_t n = strlen(parent);

        return strncmp(path, parent, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The node's secrets below a volume's source stay hidden below its destination: masked. */
static int mask_secrets(const struct oci_config_in *in,
                        const char *source,
                        const char *dest,
                        json_t *masked,
                        struct xp_error *err)
{
        char buf[4096];

        for (size_t i = 0; in->hide && in->hide[i]; i++) {
                if (under(source, in->hide[i]))
                        return xp_errorf(err,
                                         -EPERM,
                                         "volume source %s: it is one of the node's secrets "
                                         "(%s), which no container may see",
                                         source,
                                         in->hide[i]);
                if (!under(in->hide[i], source))
                        continue;
                snprintf(buf,
                         sizeof(buf),
                         "%s%s",
                         strcmp(dest, "/") ? dest : "",
                         in->hide[i] + strlen(source));
                if (json_array_append_new(masked, json_string(buf)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Whether the kernel has mount_setattr(2) (5.12+), which the runtimes' "rro" needs. */
static bool kernel_has_recursive_read_only(void)
{
#ifdef SYS_mount_setattr
        return syscall(SYS_mount_setattr, -1, "", 0, NULL, (size_t)0) == 0 || errno != ENOSYS;
#else
        return false;
#endif
}

/*
 * A volume's bind options. runc and crun remount only the top of an rbind read-only, so a
 * readOnly volume with a mount inside it (a data disk, a tmpfs) would show that one writable:
 * "rro" (runc 1.1+, crun 1.4+) makes the whole tree read-only; without it the bind is not
 * recursive, its submounts unseen rather than writable.
 */
static json_t *volume_bind_options(bool read_only, const char *propagation)
{
        if (!read_only)
                return json_pack("[s, s, s]", "rbind", propagation, "rw");
        if (kernel_has_recursive_read_only())
                return json_pack("[s, s, s, s]", "rbind", propagation, "ro", "rro");
        return json_pack("[s, s, s]", "bind", propagation, "ro");
}

static int
volume_mounts(const struct oci_config_in *in, json_t *mounts, json_t *masked, struct xp_error *err)
{
        const struct xp_container_oci *oci = in->launch->oci;
        int r;

        for (size_t i = 0; i < oci->n_mounts; i++) {
                const struct xp_container_mount *m = &oci->mounts[i];
                const char *prop = m->propagation ? m->propagation : "rprivate";

                /* an emptyDir is the pod's own directory (below the hidden state directory) */
                r = m->kind == XP_VOLUME_HOST_PATH
                        ? mask_secrets(in, in->mount_sources[i], m->destination, masked, err)
                        : 0;
                if (r < 0)
                        return r;
                r = add_mount(mounts,
                              m->destination,
                              "bind",
                              in->mount_sources[i],
                              volume_bind_options(m->read_only, prop));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* CDI's mounts: {hostPath, containerPath, options, type} as OCI mounts. */
static int
cdi_mounts(const struct oci_config_in *in, json_t *mounts, json_t *masked, struct xp_error *err)
{
        json_t *m;
        size_t i;
        int r;

        json_array_foreach(json_object_get(in->cdi, "mounts"), i, m)
        {
                const char *host = json_string_value(json_object_get(m, "hostPath"));
                const char *dest = json_string_value(json_object_get(m, "containerPath"));
                const char *type = json_string_value(json_object_get(m, "type"));
                json_t *options = json_object_get(m, "options");

                r = mask_secrets(in, host, dest, masked, err);
                if (r < 0)
                        return r;
                r = add_mount(mounts,
                              dest,
                              type ? type : "bind",
                              host,
                              options ? json_deep_copy(options)
                                      : json_pack("[s, s]", "rbind", "rprivate"));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- linux ---------------------------------------------------------------------------------- */

static int add_namespace(json_t *ns, const char *type, const char *path)
{
        json_t *o = path ? json_pack("{s:s, s:s}", "type", type, "path", path)
                         : json_pack("{s:s}", "type", type);

        return o && json_array_append_new(ns, o) == 0 ? 0 : -ENOMEM;
}

static json_t *namespaces(const struct oci_config_in *in)
{
        json_t *ns = json_array();
        int r = ns ? 0 : -ENOMEM;

        r |= add_namespace(ns, "pid", NULL);
        r |= add_namespace(ns, "mount", NULL);
        /* every container of the pod shares its IPC namespace, as a pod's sandbox holds it */
        r |= add_namespace(ns, "ipc", in->ipc_path);
        r |= add_namespace(ns, "uts", NULL);
        r |= add_namespace(ns, "cgroup", NULL);
        /* the pod's network, by path; without one (hostNetwork) the node's */
        if (in->contain->netns)
                r |= add_namespace(ns, "network", in->contain->netns);
        if (r) {
                json_decref(ns);
                return NULL;
        }
        return ns;
}

static json_t *device_rule(const struct xp_cgroup_device *d)
{
        char type[2] = {d->type, '\0'};
        json_t *o = json_pack("{s:b, s:s, s:s}", "allow", 1, "type", type, "access", d->access);

        if (o && d->major != XP_CGROUP_DEVICE_ANY)
                json_object_set_new(o, "major", json_integer(d->major));
        if (o && d->minor != XP_CGROUP_DEVICE_ANY)
                json_object_set_new(o, "minor", json_integer(d->minor));
        return o;
}

/* linux.resources: the limits the shim applies to the group, so that a runtime which writes
 * them itself writes the same (one model: include/xpool/cgroup.h's). */
static json_t *resources(const struct xp_cgroup_limits *l)
{
        json_t *res = json_object(), *devices = json_array();
        int r = res && devices ? 0 : -1;

        if (!l->restrict_devices)
                r |= json_array_append_new(devices,
                                           json_pack("{s:b, s:s}", "allow", 1, "access", "rwm"));
        else
                r |= json_array_append_new(devices,
                                           json_pack("{s:b, s:s}", "allow", 0, "access", "rwm"));
        for (size_t i = 0; l->restrict_devices && i < l->n_devices; i++)
                r |= json_array_append_new(devices, device_rule(&l->devices[i]));
        r |= json_object_set_new(res, "devices", devices);
        devices = NULL;
        if (l->memory_bytes)
                r |= json_object_set_new(
                    res, "memory", json_pack("{s:I}", "limit", (json_int_t)l->memory_bytes));
        if (l->pids_max)
                r |= json_object_set_new(
                    res, "pids", json_pack("{s:I}", "limit", (json_int_t)l->pids_max));
        if (l->cpu_millis || l->cpuset_cpus || l->cpuset_mems) {
                uint64_t period = l->cpu_period_us ? l->cpu_period_us : 100000;
                json_t *cpu = json_object();

                if (cpu && l->cpu_millis) {
                        json_object_set_new(cpu, "period", json_integer((json_int_t)period));
                        json_object_set_new(
                            cpu,
                            "quota",
                            json_integer((json_int_t)(l->cpu_millis * period / 1000)));
                }
                if (cpu && l->cpuset_cpus)
                        json_object_set_new(cpu, "cpus", json_string(l->cpuset_cpus));
                if (cpu && l->cpuset_mems)
                        json_object_set_new(cpu, "mems", json_string(l->cpuset_mems));
                r |= json_object_set_new(res, "cpu", cpu);
        }
        json_decref(devices);
        if (r) {
                json_decref(res);
                return NULL;
        }
        return res;
}

/* CDI's device nodes as linux.devices (type, major and minor filled by oci_cdi_edits()). */
static json_t *devices(const struct oci_config_in *in)
{
        json_t *out = json_array(), *n;
        size_t i;

        json_array_foreach(json_object_get(in->cdi, "deviceNodes"), i, n)
        {
                json_t *d = json_pack("{s:O, s:O, s:O, s:O}",
                                      "path",
                                      json_object_get(n, "path"),
                                      "type",
                                      json_object_get(n, "type"),
                                      "major",
                                      json_object_get(n, "major"),
                                      "minor",
                                      json_object_get(n, "minor"));
                static const char *const optional[] = {"fileMode", "uid", "gid"};

                for (size_t k = 0; d && k < XP_ELEMENTSOF(optional); k++)
                        if (json_object_get(n, optional[k]))
                                json_object_set(d, optional[k], json_object_get(n, optional[k]));
                if (!d || json_array_append_new(out, d) < 0) {
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

static json_t *path_list(const char *const *paths)
{
        json_t *a = json_array();

        for (size_t i = 0; a && paths[i]; i++)
                if (json_array_append_new(a, json_string(paths[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static json_t *linux_section(const struct oci_config_in *in, json_t *masked)
{
        bool priv = in->contain->privileged;
        json_t *lx = json_pack("{s:o, s:o, s:o, s:o}",
                               "namespaces",
                               namespaces(in),
                               "devices",
                               devices(in),
                               "maskedPaths",
                               masked,
                               "readonlyPaths",
                               priv ? json_array() : path_list(xp_contain_readonly_paths));
        int r = lx ? 0 : -1;

        /* a pod of its own network pings and binds low ports without privilege, as Docker and
         * containerd 2 set up a pod's network namespace (enable_unprivileged_icmp/_ports): the
         * capabilities a non-root process lacks are then not needed for ping or port 80 */
        if (r == 0 && in->contain->netns)
                r |= json_object_set_new(lx,
                                         "sysctl",
                                         json_pack("{s:s, s:s}",
                                                   "net.ipv4.ping_group_range",
                                                   "0 2147483647",
                                                   "net.ipv4.ip_unprivileged_port_start",
                                                   "0"));
        if (r == 0 && in->cgroups_path)
                r |= json_object_set_new(lx, "cgroupsPath", json_string(in->cgroups_path));
        if (r == 0 && in->limits)
                r |= json_object_set_new(lx, "resources", resources(in->limits));
        if (r == 0 && in->contain->seccomp && !priv)
                r |= json_object_set_new(
                    lx, "seccomp", oci_seccomp_json(in->contain->caps.effective));
        if (r) {
                json_decref(lx);
                return NULL;
        }
        return lx;
}

/* ---- hooks ---------------------------------------------------------------------------------- */

/* CDI's hooks by hookName ("prestart", "createRuntime", ...) into OCI's hooks object. */
static json_t *hooks(const struct oci_config_in *in)
{
        json_t *out = json_object(), *h;
        size_t i;

        json_array_foreach(json_object_get(in->cdi, "hooks"), i, h)
        {
                const char *name = json_string_value(json_object_get(h, "hookName"));
                json_t *list = json_object_get(out, name), *hook;

                if (!list && (json_object_set_new(out, name, json_array()) < 0 ||
                              !(list = json_object_get(out, name))))
                        goto fail;
                hook = json_pack("{s:O}", "path", json_object_get(h, "path"));
                if (hook && json_object_get(h, "args"))
                        json_object_set(hook, "args", json_object_get(h, "args"));
                if (hook && json_object_get(h, "env"))
                        json_object_set(hook, "env", json_object_get(h, "env"));
                if (hook && json_object_get(h, "timeout"))
                        json_object_set(hook, "timeout", json_object_get(h, "timeout"));
                if (!hook || json_array_append_new(list, hook) < 0)
                        goto fail;
        }
        return out;
fail:
        json_decref(out);
        return NULL;
}

int oci_config_build(const struct oci_config_in *in, json_t **ret, struct xp_error *err)
{
        const struct xp_container_oci *oci = in->launch->oci;
        json_t *mounts = json_array(), *masked = NULL, *o = NULL, *hk = NULL;
        int r;

        masked = in->contain->privileged ? json_array() : path_list(xp_contain_masked_paths);
        r = mounts && masked ? kernel_mounts(in, mounts) : -ENOMEM;
        if (r >= 0)
                r = pod_files(in, mounts);
        if (r >= 0)
                r = volume_mounts(in, mounts, masked, err);
        if (r >= 0)
                r = cdi_mounts(in, mounts, masked, err);
        if (r >= 0)
                hk = hooks(in);
        if (r >= 0 && hk)
                o = json_pack("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:o, s:o}",
                              "ociVersion",
                              "1.0.2",
                              "process",
                              process(in),
                              "root",
                              "path",
                              "rootfs",
                              "readonly",
                              in->contain->read_only_root,
                              "hostname",
                              oci->hostname ? oci->hostname : "",
                              "mounts",
                              TAKE_PTR(mounts),
                              "hooks",
                              TAKE_PTR(hk),
                              "linux",
                              linux_section(in, TAKE_PTR(masked)));
        json_decref(mounts);
        json_decref(masked);
        json_decref(hk);
        if (r < 0)
                return r == -ENOMEM ? xp_errorf(err, r, "config.json: out of memory") : r;
        if (!o)
                return xp_errorf(err, -ENOMEM, "config.json: out of memory");
        *ret = o;
        return 0;
}
