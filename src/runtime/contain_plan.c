/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The containment settings in a container's spec.json: written by the runtime
 * (contain_spec_json), turned by the shim into the plan its child applies (contain_plan_prepare):
 * capability sets cut to what the kernel knows, the seccomp filter compiled, the node's secret
 * paths resolved. Everything that allocates or reads files happens here, before the fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contain_internal.h"
#include "xpool/strutil.h"

static const char *const set_names[] = {
    "bounding", "effective", "permitted", "inheritable", "ambient"};

static uint64_t *set_of(struct xp_caps *caps, size_t i)
{
        uint64_t *sets[] = {&caps->bounding,
                            &caps->effective,
                            &caps->permitted,
                            &caps->inheritable,
                            &caps->ambient};

        return sets[i];
}

json_t *contain_strings_json(const char *const *v)
{
        json_t *a = json_array();

        for (size_t i = 0; a && v && v[i]; i++)
                if (json_array_append_new(a, json_string(v[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

json_t *contain_spec_json(const struct xp_contain *c,
                          bool namespaces,
                          bool cgroup2,
                          const char *const *hide,
                          const char *const *detach,
                          bool filter_fd)
{
        struct xp_caps caps = c->caps;
        json_t *o, *sets = json_object(), *paths = contain_strings_json(hide);
        json_t *detached = contain_strings_json(detach);

        for (size_t i = 0; sets && i < XP_ELEMENTSOF(set_names); i++)
                if (json_object_set_new(
                        sets, set_names[i], json_integer((json_int_t)*set_of(&caps, i))) < 0)
                        goto fail;
        if (!sets || !paths || !detached)
                goto fail;
        o = json_pack("{s:b, s:o, s:b, s:b, s:b, s:b, s:b, s:o, s:o, s:s?, s:b}",
                      "privileged",
                      c->privileged,
                      "caps",
                      sets,
                      "no_new_privs",
                      c->no_new_privs,
                      "read_only_root",
                      c->read_only_root,
                      "seccomp",
                      c->seccomp,
                      "namespaces",
                      namespaces,
                      "cgroup2",
                      cgroup2,
                      "hide",
                      paths,
                      "detach",
                      detached,
                      "netns",
                      c->netns,
                      "filter_fd",
                      filter_fd);
        return o;
fail:
        json_decref(sets);
        json_decref(paths);
        json_decref(detached);
        return NULL;
}

static int last_cap(void)
{
        char buf[16] = "";
        int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        int v;

        if (fd >= 0)
                close(fd);
        if (n <= 0 || sscanf(buf, "%d", &v) != 1 || v < 0)
                return XP_CAP_LAST;
        return v < XP_CAP_LAST ? v : XP_CAP_LAST;
}

/* The shim's own permitted set: what it can give (all of it, where it is not root in full). */
static uint64_t own_permitted(void)
{
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {{0}};

        if (syscall(SYS_capget, &hdr, data) < 0)
                return 0;
        return (uint64_t)data[0].permitted | (uint64_t)data[1].permitted << 32;
}

/* The capabilities this process can give: the kernel's (cap_last_cap) that it holds. */
static uint64_t contain_known_caps(void)
{
        return (XP_CAP_BIT(last_cap() + 1) - 1) & own_permitted();
}

/* Sealed: nobody, the runtime included, can change the filter once shims may read it. */
#define FILTER_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

int contain_filter_memfd(uint64_t effective, int *ret_fd, struct xp_error *err)
{
        _cleanup_free_ unsigned char *prog = NULL;
        _cleanup_close_ int fd = -1;
        size_t len = 0, bytes, done = 0;
        ssize_t n = 0;
        int r;

        r = xp_seccomp_build(effective & contain_known_caps(), (void **)&prog, &len, err);
        if (r < 0)
                return r;
        bytes = len * sizeof(struct sock_filter);
        fd = memfd_create("xpool-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        while (fd >= 0 && done < bytes && (n = write(fd, prog + done, bytes - done)) > 0)
                done += (size_t)n;
        if (fd < 0 || done < bytes || fcntl(fd, F_ADD_SEALS, FILTER_SEALS) < 0)
                return xp_errorf(err,
                                 fd < 0 || n < 0 ? -errno : -EIO,
                                 "seccomp: the filter's memfd: %s",
                                 fd < 0 || n < 0 ? strerror(errno) : "short write");
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The filter the runtime compiled, on CONTAIN_FILTER_FD (closed here): a sealed memfd of whole
 * instructions. Anything else there is refused, not guessed at. */
static int filter_from_fd(struct contain_plan *p, struct xp_error *err)
{
        _cleanup_close_ int fd = CONTAIN_FILTER_FD;
        unsigned char *prog;
        struct stat st;
        size_t bytes;

        if (fstat(fd, &st) < 0 || (fcntl(fd, F_GET_SEALS) & FILTER_SEALS) != FILTER_SEALS)
                return xp_errorf(
                    err, -EINVAL, "spec: contain.filter_fd, but fd %d is no sealed filter", fd);
        bytes = (size_t)st.st_size;
        if (bytes == 0 || bytes % sizeof(struct sock_filter) != 0 ||
            bytes / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return xp_errorf(err, -EINVAL, "spec: the seccomp filter has a bad length");
        prog = malloc(bytes);
        if (!prog)
                return xp_errorf(err, -ENOMEM, "spec: out of memory");
        if (pread(fd, prog, bytes, 0) != (ssize_t)bytes) {
                free(prog);
                return xp_errorf(
                    err, -EIO, "spec: reading the seccomp filter: %s", strerror(errno));
        }
        p->filter = prog;
        p->filter_len = bytes / sizeof(struct sock_filter);
        return 0;
}

static int order_hide(struct contain_plan *p, struct xp_error *err);

/* The secret paths as they are now: symbolic links resolved, missing ones left out. */
static int resolve_hide(struct contain_plan *p, const json_t *list, struct xp_error *err)
{
        size_t n = json_array_size(list), room = n + 1;
        int r;

        /* and room for the node's private paths, added once the binds are known */
        for (size_t i = 0; xp_contain_node_private[i]; i++)
                room++;
        p->hide = calloc(room, sizeof(*p->hide));
        p->hide_dir = calloc(room, sizeof(*p->hide_dir));
        if (!p->hide || !p->hide_dir)
                return xp_errorf(err, -ENOMEM, "hiding paths: out of memory");
        for (size_t i = 0; i < n; i++) {
                const char *path = json_string_value(json_array_get(list, i));
                char *real;

                if (!path)
                        return xp_errorf(
                            err, -EINVAL, "spec: contain.hide[%zu] is not a string", i);
                real = realpath(path, NULL);
                if (!real && (errno == ENOENT || errno == ENOTDIR))
                        continue; /* nothing there to hide (yet) */
                if (!real) {
                        r = -errno;
                        return xp_errorf(err, r, "hiding %s: %s", path, strerror(-r));
                }
                if (strcmp(real, "/") == 0) {
                        free(real);
                        return xp_errorf(err, -EINVAL, "hiding %s: it is the root directory", path);
                }
                p->hide[p->n_hide_all++] = real;
        }
        return order_hide(p, err);
}

/* p->hide ordered for mounting, each kept one's type known. */
static int order_hide(struct contain_plan *p, struct xp_error *err)
{
        int r = xp_contain_hide_order(p->hide, p->n_hide_all, &p->n_hide, err);

        if (r < 0)
                return r;
        for (size_t i = 0; i < p->n_hide; i++) {
                struct stat st;

                if (stat(p->hide[i], &st) < 0) {
                        r = -errno;
                        return xp_errorf(err, r, "hiding %s: %s", p->hide[i], strerror(-r));
                }
                p->hide_dir[i] = S_ISDIR(st.st_mode);
        }
        return 0;
}

static bool overlaps(const char *a, const char *b)
{
        size_t n = strlen(a), m = strlen(b), k = n < m ? n : m;

        return strncmp(a, b, k) == 0 && (a[k] == '\0' || a[k] == '/') &&
               (b[k] == '\0' || b[k] == '/');
}

/* The node's private paths (xp_contain_node_private) that exist, hidden with the secrets, but
 * for one a volume or share lies at, below or above: a log shipper's hostPath /var/log is seen
 * at its mount point, an admin's share of /home as shared. */
static int add_private(struct contain_plan *p, struct xp_error *err)
{
        for (size_t i = 0; xp_contain_node_private[i]; i++) {
                char *real = realpath(xp_contain_node_private[i], NULL);
                bool used = false;

                for (size_t k = 0; real && k < p->n_binds && !used; k++)
                        used = overlaps(real, p->binds[k].destination) ||
                               (p->binds[k].shared && overlaps(real, p->binds[k].source));
                if (!real || used || strcmp(real, "/") == 0) {
                        free(real);
                        continue;
                }
                p->hide[p->n_hide_all++] = real;
        }
        return order_hide(p, err);
}

/* A namespace of type to join (the pod's network or IPC one), what: its name in messages:
 * opened now, joined by the child (setns needs no path then). */
static int
open_namespace(const char *path, int type, const char *what, int *ret_fd, struct xp_error *err)
{
        int fd, r;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "the pod's %s namespace %s: %s", what, path, strerror(-r));
        }
        *ret_fd = fd;
        if (ioctl(fd, NS_GET_NSTYPE) != type)
                return xp_errorf(err,
                                 -EINVAL,
                                 "the pod's %s namespace %s: not a %s namespace",
                                 what,
                                 path,
                                 what);
        return 0;
}

/* The mount points the container's mount namespace drops. */
static int read_detach(struct contain_plan *p, const json_t *list, struct xp_error *err)
{
        size_t n = json_array_size(list);

        p->detach = calloc(n + 1, sizeof(*p->detach));
        if (!p->detach)
                return xp_errorf(err, -ENOMEM, "spec: out of memory");
        for (size_t i = 0; i < n; i++) {
                const char *path = json_string_value(json_array_get(list, i));

                if (!path || path[0] != '/')
                        return xp_errorf(
                            err, -EINVAL, "spec: contain.detach[%zu] is not an absolute path", i);
                if (!(p->detach[i] = strdup(path)))
                        return xp_errorf(err, -ENOMEM, "spec: out of memory");
        }
        return 0;
}

bool contain_spec_filter_fd(const json_t *spec, uint64_t *ret_effective)
{
        const json_t *c = json_object_get(spec, CONTAIN_SPEC_KEY);

        *ret_effective =
            (uint64_t)json_integer_value(json_object_get(json_object_get(c, "caps"), "effective"));
        return json_is_true(json_object_get(c, "seccomp")) &&
               json_is_true(json_object_get(c, "filter_fd"));
}

/* Its own /tmp's options, made now: the child may not call snprintf. */
static void tmp_size_options(struct contain_plan *p, const json_t *size)
{
        json_int_t bytes = json_integer_value(size);

        if (bytes > 0)
                snprintf(
                    p->tmp_options, sizeof p->tmp_options, "mode=1777,size=%lld", (long long)bytes);
        else
                snprintf(p->tmp_options,
                         sizeof p->tmp_options,
                         "mode=1777,size=%s",
                         CONTAIN_TMP_DEFAULT);
}

int contain_plan_prepare(struct contain_plan *p, const json_t *spec, struct xp_error *err)
{
        const json_t *c = json_object_get(spec, CONTAIN_SPEC_KEY);
        const json_t *sets = json_object_get(c, "caps");
        uint64_t known;
        int r;

        *p = CONTAIN_PLAN_NONE;
        if (!json_is_object(c) || !json_is_object(sets))
                return xp_errorf(err, -EINVAL, "spec: no \"" CONTAIN_SPEC_KEY "\" settings");
        p->namespaces = json_is_true(json_object_get(c, "namespaces"));
        p->privileged = json_is_true(json_object_get(c, "privileged"));
        p->read_only_root = json_is_true(json_object_get(c, "read_only_root"));
        p->no_new_privs = json_is_true(json_object_get(c, "no_new_privs"));
        p->cgroup2 = json_is_true(json_object_get(c, "cgroup2"));
        tmp_size_options(p, json_object_get(c, "tmp_size"));
        p->last_cap = last_cap();
        /* the kernel's capabilities that the shim holds: a privileged container gets those */
        known = contain_known_caps();
        for (size_t i = 0; i < XP_ELEMENTSOF(set_names); i++)
                *set_of(&p->caps, i) =
                    (uint64_t)json_integer_value(json_object_get(sets, set_names[i])) & known;
        /* a shim that is not root has no capability to give or take */
        p->set_caps = geteuid() == 0;
        if (json_is_true(json_object_get(c, "seccomp"))) {
                r = json_is_true(json_object_get(c, "filter_fd"))
                        ? filter_from_fd(p, err)
                        : xp_seccomp_build(p->caps.effective, &p->filter, &p->filter_len, err);
                if (r < 0)
                        return r;
        }
        if (json_is_string(json_object_get(c, "ipc"))) {
                r = open_namespace(json_string_value(json_object_get(c, "ipc")),
                                   CLONE_NEWIPC,
                                   "IPC",
                                   &p->ipc_fd,
                                   err);
                if (r < 0)
                        return r;
        }
        if (json_is_string(json_object_get(c, "netns"))) {
                if (!(p->netns = strdup(json_string_value(json_object_get(c, "netns")))))
                        return xp_errorf(err, -ENOMEM, "spec: out of memory");
                r = open_namespace(p->netns, CLONE_NEWNET, "network", &p->netns_fd, err);
                if (r < 0)
                        return r;
                /* /sys then shows the pod's interfaces, not the node's */
                p->sysfs = !p->privileged;
        }
        if (!p->namespaces)
                return contain_plan_binds(
                    p, json_object_get(c, "binds"), json_object_get(c, "share"), err);
        r = read_detach(p, json_object_get(c, "detach"), err);
        if (r >= 0)
                r = resolve_hide(p, json_object_get(c, "hide"), err);
        if (r >= 0)
                r = contain_plan_binds(
                    p, json_object_get(c, "binds"), json_object_get(c, "share"), err);
        if (r >= 0 && !p->privileged)
                r = add_private(p, err);
        if (r >= 0)
                r = contain_plan_share_read_only(p, err);
        p->own_root = r >= 0 && contain_needs_own_root(p);
        if (r >= 0)
                r = contain_plan_own_dirs(p);
        return r;
}

void contain_plan_done(struct contain_plan *p)
{
        for (size_t i = 0; i < p->n_hide_all; i++)
                free(p->hide[i]);
        free(p->hide);
        free(p->hide_dir);
        free(p->filter);
        for (size_t i = 0; p->detach && p->detach[i]; i++)
                free(p->detach[i]);
        free(p->detach);
        contain_binds_free(p);
        contain_share_read_only_free(p);
        contain_own_dirs_free(p);
        /* a plan never prepared has no fd to close: its holder starts it at CONTAIN_PLAN_NONE */
        if (p->netns_fd >= 0)
                close(p->netns_fd);
        if (p->ipc_fd >= 0)
                close(p->ipc_fd);
        free(p->netns);
        *p = CONTAIN_PLAN_NONE;
}
