/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroup front end: mode detection, group paths, and the file helpers both backends use. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "xpool/cpuset.h"
#include "xpool/fileio.h"

#define MOUNTINFO_MAX (1024 * 1024)

static const char *const mode_names[] = {
    [XP_CGROUP_NONE] = "none",
    [XP_CGROUP_V1] = "v1",
    [XP_CGROUP_V2] = "v2",
};

const char *xp_cgroup_mode_to_string(enum xp_cgroup_mode mode)
{
        if ((unsigned)mode >= XP_ELEMENTSOF(mode_names))
                return NULL;
        return mode_names[mode];
}

static const char *const controller_names[CGROUP_CONTROLLER_MAX] = {
    [CGROUP_CPU] = "cpu",
    [CGROUP_CPUSET] = "cpuset",
    [CGROUP_MEMORY] = "memory",
    [CGROUP_PIDS] = "pids",
    [CGROUP_DEVICES] = "devices",
    [CGROUP_CPUACCT] = "cpuacct",
};

const char *cgroup_controller_name(enum cgroup_controller c)
{
        return (unsigned)c < CGROUP_CONTROLLER_MAX ? controller_names[c] : NULL;
}

static int controller_from_name(const char *name, size_t len)
{
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                if (strlen(controller_names[c]) == len &&
                    memcmp(controller_names[c], name, len) == 0)
                        return c;
        return -1;
}

bool cgroup_v1_shared(const struct xp_cgroup_root *root, enum cgroup_controller c)
{
        for (int o = 0; o < (int)c; o++)
                if (root->v1_mounts[o] && root->v1_mounts[c] &&
                    strcmp(root->v1_mounts[o], root->v1_mounts[c]) == 0)
                        return true;
        return false;
}

/* ---- files below the root -------------------------------------------------------------------- */

static int join(const char *dir, const char *file, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s%s%s", dir, *dir && *file ? "/" : "", file);

        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int cgroup_write(struct xp_cgroup_root *root,
                 const char *dir,
                 const char *file,
                 const char *value,
                 struct xp_error *err)
{
        char path[PATH_MAX];
        _cleanup_close_ int fd = -1;
        size_t len = strlen(value);
        ssize_t n;
        int r;

        r = join(dir, file, path, sizeof(path));
        if (r < 0)
                return xp_errorf(err, r, "cgroup file %s/%s: path too long", dir, file);
        fd = openat(root->fd, path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "writing '%s' to /%s: %s", value, path, strerror(-r));
        }
        /* cgroupfs takes one value per write() (O_TRUNC as the shell's '>' does, which keeps a
         * fake tree's regular files exact); a short write means it took part of it */
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                r = -errno;
                return xp_errorf(err, r, "writing '%s' to /%s: %s", value, path, strerror(-r));
        }
        if ((size_t)n != len)
                return xp_errorf(
                    err, -EIO, "writing '%s' to /%s: short write of %zd bytes", value, path, n);
        return 0;
}

int cgroup_read(struct xp_cgroup_root *root,
                const char *dir,
                const char *file,
                char **ret,
                struct xp_error *err)
{
        char path[PATH_MAX];
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        char *nul;
        int r;

        r = join(dir, file, path, sizeof(path));
        if (r < 0)
                return xp_errorf(err, r, "cgroup file %s/%s: path too long", dir, file);
        fd = openat(root->fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "reading /%s: %s", path, strerror(-r));
        }
        r = xp_read_fd_all(fd, CGROUP_FILE_MAX, &text, &size);
        if (r < 0)
                return xp_errorf(err, r, "reading /%s: %s", path, strerror(-r));
        nul = realloc(text, size + 1);
        if (!nul)
                return xp_errorf(err, -ENOMEM, "reading /%s: out of memory", path);
        text = nul;
        text[size] = '\0';
        *ret = TAKE_PTR(text);
        return 0;
}

int cgroup_mkdir_p(struct xp_cgroup_root *root,
                   const char *base,
                   const char *path,
                   struct xp_error *err)
{
        char full[PATH_MAX];
        int r;

        r = join(base, path, full, sizeof(full));
        if (r < 0)
                return xp_errorf(err, r, "cgroup %s/%s: path too long", base, path);
        r = xp_mkdir_p_at(root->fd, full, 0755, NULL);
        if (r < 0)
                return xp_errorf(err, r, "creating cgroup /%s: %s", full, strerror(-r));
        return 0;
}

int cgroup_rmdir(struct xp_cgroup_root *root,
                 const char *base,
                 const char *path,
                 struct xp_error *err)
{
        char full[PATH_MAX];
        int r;

        r = join(base, path, full, sizeof(full));
        if (r < 0)
                return xp_errorf(err, r, "cgroup %s/%s: path too long", base, path);
        if (unlinkat(root->fd, full, AT_REMOVEDIR) < 0 && errno != ENOENT) {
                r = -errno;
                return xp_errorf(err, r, "removing cgroup /%s: %s", full, strerror(-r));
        }
        return 0;
}

int cgroup_keyed_u64(const char *text, const char *key, uint64_t *ret)
{
        size_t klen = strlen(key);

        for (const char *line = text, *next; *line; line = next) {
                const char *v;
                char *end;
                uint64_t value;

                next = strchrnul(line, '\n');
                if (*next)
                        next++;
                if (strncmp(line, key, klen) != 0 || line[klen] != ' ')
                        continue;
                v = line + klen + 1;
                if (*v < '0' || *v > '9')
                        return -EINVAL;
                errno = 0;
                value = strtoull(v, &end, 10);
                if (errno || (*end && *end != '\n'))
                        return -EINVAL;
                *ret = value;
                return 0;
        }
        return -ENODATA;
}

/* A CPU (or memory node) list the kernel will take, and not an empty one. */
static bool cpulist_ok(const char *s)
{
        struct xp_cpuset set;

        return *s && strchr(s, '\n') == NULL && xp_cpuset_parse(s, &set) == 0;
}

int cgroup_check_limits(const struct xp_cgroup_limits *l, struct xp_error *err)
{
        if (l->cpu_period_us && (l->cpu_period_us < 1000 || l->cpu_period_us > 1000000))
                return xp_errorf(err,
                                 -EINVAL,
                                 "cpu_period_us: %" PRIu64 " is outside 1000..1000000",
                                 l->cpu_period_us);
        if (l->cpu_millis > UINT64_C(1) << 32)
                return xp_errorf(
                    err, -EINVAL, "cpu_millis: %" PRIu64 " is too large", l->cpu_millis);
        if (l->memory_bytes > INT64_MAX)
                return xp_errorf(
                    err, -EINVAL, "memory_bytes: %" PRIu64 " is too large", l->memory_bytes);
        if (l->pids_max > INT64_MAX)
                return xp_errorf(err, -EINVAL, "pids_max: %" PRIu64 " is too large", l->pids_max);
        if (l->cpuset_cpus && !cpulist_ok(l->cpuset_cpus))
                return xp_errorf(
                    err, -EINVAL, "cpuset_cpus: '%s' is not a CPU list", l->cpuset_cpus);
        if (l->cpuset_mems && !cpulist_ok(l->cpuset_mems))
                return xp_errorf(
                    err, -EINVAL, "cpuset_mems: '%s' is not a node list", l->cpuset_mems);
        if (l->n_devices > XP_CGROUP_DEVICES_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "devices: %zu rules, at most %d",
                                 l->n_devices,
                                 XP_CGROUP_DEVICES_MAX);
        if (l->n_devices && !l->devices)
                return xp_errorf(err, -EINVAL, "devices: %zu rules but no array", l->n_devices);
        if (l->n_devices && !l->restrict_devices)
                return xp_errorf(err, -EINVAL, "devices: rules given without restrict_devices");
        for (size_t i = 0; i < l->n_devices; i++) {
                const struct xp_cgroup_device *d = &l->devices[i];
                size_t alen = strnlen(d->access, sizeof(d->access));

                if (d->type != 'c' && d->type != 'b')
                        return xp_errorf(err,
                                         -EINVAL,
                                         "devices[%zu].type: '%c' is not 'c' or 'b'",
                                         i,
                                         d->type ? d->type : '?');
                if (alen == 0 || alen == sizeof(d->access) || strspn(d->access, "rwm") != alen)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "devices[%zu].access: not a non-empty subset of \"rwm\"",
                                         i);
        }
        return 0;
}

uint64_t cgroup_cpu_quota(uint64_t cpu_millis, uint64_t period_us)
{
        uint64_t quota = (cpu_millis * period_us + 999) / 1000;

        return quota < 1000 ? 1000 : quota; /* the kernel's minimum quota is 1ms */
}

/* ---- detection ------------------------------------------------------------------------------- */

/* Decodes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
        char *out = s;

        for (; *s; s++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
                    s[3] >= '0' && s[3] <= '7') {
                        *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 3;
                } else {
                        *out++ = *s;
                }
        }
        *out = '\0';
}

/* Records the mount point of a hierarchy xpool sets nothing in. */
static int v1_other(struct xp_cgroup_root *root, const char *mount_point, struct xp_error *err)
{
        const char *mp = mount_point;

        if (root->n_v1_others >= XP_ELEMENTSOF(root->v1_others))
                return 0;
        while (*mp == '/')
                mp++;
        if (!*mp)
                return 0; /* a tree mounted at the root is no place for pods' groups */
        root->v1_others[root->n_v1_others] = strdup(mp);
        if (!root->v1_others[root->n_v1_others])
                return xp_errorf(err, -ENOMEM, "proc/self/mountinfo: out of memory");
        root->n_v1_others++;
        return 0;
}

/* One mountinfo line: records the mount point of each cgroup v1 controller it carries. */
static int
parse_mountinfo_line(struct xp_cgroup_root *root, char *line, unsigned lineno, struct xp_error *err)
{
        char *fields[6] = {0}, *sep, *save = NULL, *tok, *fstype, *opts;
        bool any = false;
        size_t n = 0;

        sep = strstr(line, " - ");
        if (!sep)
                return xp_errorf(
                    err, -EINVAL, "proc/self/mountinfo:%u: no ' - ' separator", lineno);
        *sep = '\0';
        for (tok = strtok_r(line, " ", &save); tok && n < XP_ELEMENTSOF(fields);
             tok = strtok_r(NULL, " ", &save))
                fields[n++] = tok;
        if (n < 5)
                return xp_errorf(
                    err, -EINVAL, "proc/self/mountinfo:%u: %zu fields before ' - '", lineno, n);
        save = NULL;
        fstype = strtok_r(sep + 3, " ", &save);
        if (fstype && strcmp(fstype, "cgroup2") == 0) {
                unescape(fields[4]);
                return v1_other(root, fields[4], err); /* a hybrid's unified hierarchy */
        }
        if (!fstype || strcmp(fstype, "cgroup") != 0)
                return 0;
        (void)strtok_r(NULL, " ", &save); /* the source */
        opts = strtok_r(NULL, " \n", &save);
        if (!opts)
                return xp_errorf(
                    err, -EINVAL, "proc/self/mountinfo:%u: cgroup mount without options", lineno);
        unescape(fields[4]);
        for (char *o = opts; *o;) {
                size_t len = strcspn(o, ",");
                int c = controller_from_name(o, len);

                if (c >= 0 && !root->v1_mounts[c]) {
                        const char *mp = fields[4];

                        while (*mp == '/')
                                mp++;
                        /* "." for a hierarchy mounted at the root keeps paths relative */
                        root->v1_mounts[c] = strdup(*mp ? mp : ".");
                        if (!root->v1_mounts[c])
                                return xp_errorf(
                                    err, -ENOMEM, "proc/self/mountinfo: out of memory");
                        if (strcmp(fields[3], "/") == 0)
                                root->v1_whole |= 1u << c;
                }
                any = any || c >= 0;
                o += len + (o[len] == ',');
        }
        return any ? 0 : v1_other(root, fields[4], err);
}

static int detect_v1(struct xp_cgroup_root *root, struct xp_error *err)
{
        _cleanup_close_ int fd = openat(root->fd, "proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        char *line;
        int r;

        if (fd < 0) {
                r = -errno;
                if (r == -ENOENT)
                        return 0; /* no procfs in the tree: no v1 hierarchies either */
                return xp_errorf(err, r, "reading proc/self/mountinfo: %s", strerror(-r));
        }
        r = xp_read_fd_all(fd, MOUNTINFO_MAX, &text, &size);
        if (r < 0)
                return xp_errorf(err, r, "reading proc/self/mountinfo: %s", strerror(-r));
        line = realloc(text, size + 1);
        if (!line)
                return xp_errorf(err, -ENOMEM, "reading proc/self/mountinfo: out of memory");
        text = line;
        text[size] = '\0';
        return cgroup_parse_mountinfo(root, text, err);
}

int cgroup_parse_mountinfo(struct xp_cgroup_root *root, char *text, struct xp_error *err)
{
        unsigned lineno = 0;
        char *line, *next;
        int r;

        for (line = text; *line; line = next) {
                next = strchrnul(line, '\n');
                if (*next)
                        *next++ = '\0';
                lineno++;
                if (!*line)
                        continue;
                r = parse_mountinfo_line(root, line, lineno, err);
                if (r < 0)
                        return r;
        }
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                if (root->v1_mounts[c])
                        root->mode = XP_CGROUP_V1;
        return 0;
}

/* v2 when the unified hierarchy's root lists controllers (a hybrid's empty one does not count). */
static int detect_v2(struct xp_cgroup_root *root, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        int r;

        r = cgroup_read(root, CGROUP_V2_DIR, "cgroup.controllers", &text, NULL);
        if (r == -ENOENT || r == -ENOTDIR)
                return 0;
        if (r < 0)
                return xp_errorf(
                    err, r, "reading /" CGROUP_V2_DIR "/cgroup.controllers: %s", strerror(-r));
        for (char *p = text; *p;) {
                size_t len;
                int c;

                p += strspn(p, " \t\n");
                len = strcspn(p, " \t\n");
                if (!len)
                        break;
                c = controller_from_name(p, len);
                if (c >= 0)
                        root->v2_controllers |= 1u << c;
                root->mode = XP_CGROUP_V2;
                p += len;
        }
        return 0;
}

void xp_cgroup_root_free(struct xp_cgroup_root *root)
{
        if (!root)
                return;
        if (root->fd >= 0)
                close(root->fd);
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                free(root->v1_mounts[c]);
        for (size_t i = 0; i < root->n_v1_others; i++)
                free(root->v1_others[i]);
        free(root);
}

/* A root of no mode yet, its directory open. */
static int root_new(const char *path, struct xp_cgroup_root **ret, struct xp_error *err)
{
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = calloc(1, sizeof(*root));
        int r;

        if (!root)
                return xp_errorf(err, -ENOMEM, "cgroup root %s: out of memory", path);
        root->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root->fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "opening cgroup root %s: %s", path, strerror(-r));
        }
        *ret = TAKE_PTR(root);
        return 0;
}

int xp_cgroup_root_open(const char *path, struct xp_cgroup_root **ret, struct xp_error *err)
{
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        int r;

        r = root_new(path, &root, err);
        if (r < 0)
                return r;
        r = detect_v2(root, err);
        if (r < 0)
                return xp_error_prefix(err, r, "cgroup root %s", path);
        if (root->mode == XP_CGROUP_NONE) {
                r = detect_v1(root, err);
                if (r < 0)
                        return xp_error_prefix(err, r, "cgroup root %s", path);
        }
        *ret = TAKE_PTR(root);
        return 0;
}

/*
 * The agent found the hierarchies once; each shim takes them from its spec rather than parse
 * /proc/self/mountinfo again, which costs the kernel a line per mount of the machine (hundreds
 * where pods' namespaces and volumes are mounted) at every container start.
 */
int cgroup_root_open_v1(const char *path,
                        const char *const mounts[CGROUP_CONTROLLER_MAX],
                        struct xp_cgroup_root **ret,
                        struct xp_error *err)
{
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        int r;

        r = root_new(path, &root, err);
        if (r < 0)
                return r;
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++) {
                if (!mounts[c])
                        continue;
                if (mounts[c][0] == '/' || strstr(mounts[c], ".."))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "cgroup root %s: %s hierarchy '%s' is not below it",
                                         path,
                                         controller_names[c],
                                         mounts[c]);
                root->v1_mounts[c] = strdup(mounts[c]);
                if (!root->v1_mounts[c])
                        return xp_errorf(err, -ENOMEM, "cgroup root %s: out of memory", path);
                root->mode = XP_CGROUP_V1;
        }
        *ret = TAKE_PTR(root);
        return 0;
}

const char *cgroup_v1_mount(const struct xp_cgroup_root *root, enum cgroup_controller c)
{
        return root->mode == XP_CGROUP_V1 && (unsigned)c < CGROUP_CONTROLLER_MAX
                   ? root->v1_mounts[c]
                   : NULL;
}

size_t cgroup_v1_others(const struct xp_cgroup_root *root, char *const **ret)
{
        *ret = root->v1_others;
        return root->mode == XP_CGROUP_V1 ? root->n_v1_others : 0;
}

int cgroup_root_add_v1_other(struct xp_cgroup_root *root,
                             const char *mount_point,
                             struct xp_error *err)
{
        if (strstr(mount_point, ".."))
                return xp_errorf(
                    err, -EINVAL, "cgroup hierarchy '%s' is not below the root", mount_point);
        return v1_other(root, mount_point, err);
}

enum xp_cgroup_mode xp_cgroup_root_mode(const struct xp_cgroup_root *root)
{
        return root->mode;
}

int xp_cgroup_device_filter_check(const struct xp_cgroup_root *root, struct xp_error *err)
{
        switch (root->mode) {
        case XP_CGROUP_V1:
                if (root->v1_mounts[CGROUP_DEVICES])
                        return 0;
                return xp_errorf(err, -EOPNOTSUPP, "cgroup v1 without the devices controller");
        case XP_CGROUP_V2:
                return cgroup_bpf_probe(err);
        default:
                return xp_errorf(err, -EOPNOTSUPP, "no cgroups");
        }
}

/* ---- groups ---------------------------------------------------------------------------------- */

static bool component_ok(const char *s, size_t len)
{
        if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
                return false;
        for (size_t i = 0; i < len; i++)
                if (s[i] == '/' || s[i] == '\n' || s[i] == '\0')
                        return false;
        return true;
}

int xp_cgroup_container_path(const char *parent,
                             const char *pod_uid,
                             const char *container,
                             char **ret,
                             struct xp_error *err)
{
        char *path;

        if (!parent)
                parent = XP_CGROUP_PARENT_LEGACY;
        if (!component_ok(pod_uid, strlen(pod_uid)))
                return xp_errorf(
                    err, -EINVAL, "cgroup path: pod uid '%s' is not a path component", pod_uid);
        if (!component_ok(container, strlen(container)))
                return xp_errorf(
                    err, -EINVAL, "cgroup path: container '%s' is not a path component", container);
        if (asprintf(&path, "%s/%s/%s", parent, pod_uid, container) < 0)
                return xp_errorf(err, -ENOMEM, "cgroup path: out of memory");
        if (strlen(path) > XP_CGROUP_PATH_MAX) {
                xp_errorf(
                    err, -EINVAL, "cgroup path: %s is longer than %d", path, XP_CGROUP_PATH_MAX);
                free(path);
                return -EINVAL;
        }
        *ret = path;
        return 0;
}

static int check_path(const char *path, struct xp_error *err)
{
        size_t total = strlen(path);

        if (total == 0 || total > XP_CGROUP_PATH_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "cgroup path '%s': length %zu is outside 1..%d",
                                 path,
                                 total,
                                 XP_CGROUP_PATH_MAX);
        for (const char *p = path;;) {
                size_t len = strcspn(p, "/");

                if (!component_ok(p, len))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "cgroup path '%s': component at offset %zu is empty, '.', '..' or holds a newline",
                            path,
                            (size_t)(p - path));
                if (!p[len])
                        return 0;
                p += len + 1;
        }
}

void xp_cgroup_free(struct xp_cgroup *cg)
{
        if (!cg)
                return;
        free(cg->path);
        free(cg);
}

int xp_cgroup_open(struct xp_cgroup_root *root,
                   const char *path,
                   struct xp_cgroup **ret,
                   struct xp_error *err)
{
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        int r;

        if (root->mode == XP_CGROUP_NONE)
                return xp_errorf(err, -EOPNOTSUPP, "cgroup %s: this machine has no cgroups", path);
        r = check_path(path, err);
        if (r < 0)
                return r;
        cg = calloc(1, sizeof(*cg));
        if (!cg || !(cg->path = strdup(path)))
                return xp_errorf(err, -ENOMEM, "cgroup %s: out of memory", path);
        cg->root = root;
        cg->backend = root->mode == XP_CGROUP_V2 ? &cgroup_v2_backend : &cgroup_v1_backend;
        *ret = TAKE_PTR(cg);
        return 0;
}

int xp_cgroup_create(struct xp_cgroup_root *root,
                     const char *path,
                     struct xp_cgroup **ret,
                     struct xp_error *err)
{
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        int r;

        if (root->mode == XP_CGROUP_NONE)
                return xp_errorf(err, -EOPNOTSUPP, "cgroup %s: this machine has no cgroups", path);
        r = check_path(path, err);
        if (r < 0)
                return r;
        cg = calloc(1, sizeof(*cg));
        if (!cg || !(cg->path = strdup(path)))
                return xp_errorf(err, -ENOMEM, "cgroup %s: out of memory", path);
        cg->root = root;
        cg->backend = root->mode == XP_CGROUP_V2 ? &cgroup_v2_backend : &cgroup_v1_backend;
        /* a pod's group removed by its last container's shim as a new container's is made: made
         * again (a few times: each race needs a container ending right then) */
        r = cg->backend->create(cg, err);
        for (int i = 0; i < 3 && r == -ENOENT; i++)
                r = cg->backend->create(cg, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(cg);
        return 0;
}

const char *xp_cgroup_path(const struct xp_cgroup *cg)
{
        return cg->path;
}

int xp_cgroup_apply(struct xp_cgroup *cg,
                    const struct xp_cgroup_limits *limits,
                    struct xp_error *err)
{
        int r = cgroup_check_limits(limits, err);

        if (r < 0)
                return xp_error_prefix(err, r, "cgroup %s", cg->path);
        return cg->backend->apply(cg, limits, err);
}

int xp_cgroup_add_pid(struct xp_cgroup *cg, pid_t pid, struct xp_error *err)
{
        if (pid <= 0)
                return xp_errorf(
                    err, -EINVAL, "cgroup %s: pid %d is not a process", cg->path, (int)pid);
        return cg->backend->add_pid(cg, pid, err);
}

int xp_cgroup_oom_kills(struct xp_cgroup *cg, uint64_t *ret, struct xp_error *err)
{
        return cg->backend->oom_kills(cg, ret, err);
}

int xp_cgroup_remove(struct xp_cgroup *cg, struct xp_error *err)
{
        return cg->backend->remove(cg, err);
}

/* The hierarchy every group of ours is made in: v2's tree, or the first v1 controller mounted
 * apart that xp_cgroup_create() never leaves out (cpuset is made on demand, cpuacct may fail). */
static const char *always_made_in(const struct xp_cgroup_root *root)
{
        if (root->mode == XP_CGROUP_V2)
                return CGROUP_V2_DIR;
        for (int c = 0; root->mode == XP_CGROUP_V1 && c < CGROUP_CONTROLLER_MAX; c++)
                if (root->v1_mounts[c] && c != CGROUP_CPUSET && c != CGROUP_CPUACCT &&
                    !cgroup_v1_shared(root, c))
                        return root->v1_mounts[c];
        return NULL;
}

bool xp_cgroup_exists(struct xp_cgroup_root *root, const char *path)
{
        const char *base = always_made_in(root);
        char full[PATH_MAX];

        if (!base) /* no hierarchy to ask: the removal decides */
                return root->mode != XP_CGROUP_NONE;
        if (check_path(path, NULL) < 0 || join(base, path, full, sizeof(full)) < 0)
                return false;
        /* in doubt (not ENOENT), it exists: the caller's removal then decides */
        return faccessat(root->fd, full, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

/* The directory of the group in one hierarchy, relative to the root. */
static int procs_dir(struct xp_cgroup *cg, char *buf, size_t size, struct xp_error *err)
{
        static const enum cgroup_controller order[] = {
            CGROUP_PIDS, CGROUP_MEMORY, CGROUP_CPU, CGROUP_CPUSET, CGROUP_DEVICES};
        const char *base = NULL;
        int n;

        if (cg->root->mode == XP_CGROUP_V2)
                base = CGROUP_V2_DIR;
        for (size_t i = 0; !base && i < XP_ELEMENTSOF(order); i++)
                base = cg->root->v1_mounts[order[i]];
        if (!base)
                return xp_errorf(err, -EOPNOTSUPP, "cgroup %s: no hierarchy", cg->path);
        n = snprintf(buf, size, "%s/%s", base, cg->path);
        if (n < 0 || (size_t)n >= size)
                return xp_errorf(err, -ENAMETOOLONG, "cgroup %s: path too long", cg->path);
        return 0;
}

int xp_cgroup_pids(struct xp_cgroup *cg, pid_t **ret, size_t *ret_n, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        char dir[PATH_MAX];
        size_t n = 0, cap = 0;
        int r;

        r = procs_dir(cg, dir, sizeof(dir), err);
        if (r < 0)
                return r;
        r = cgroup_read(cg->root, dir, "cgroup.procs", &text, err);
        if (r == -ENOENT || r == -ENODEV) {
                /* removed, or being removed (its processes are gone) */
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (r < 0)
                return r;
        for (char *p = text, *end; *p; p = end) {
                long v;

                p += strspn(p, "\n");
                if (!*p)
                        break;
                errno = 0;
                v = strtol(p, &end, 10);
                if (errno || end == p || v <= 0 || v > INT_MAX || (*end && *end != '\n'))
                        return xp_errorf(err, -EINVAL, "/%s/cgroup.procs: not a pid list", dir);
                if (n == cap) {
                        pid_t *grown;

                        cap = cap ? cap * 2 : 16;
                        grown = reallocarray(pids, cap, sizeof(*pids));
                        if (!grown)
                                return xp_errorf(
                                    err, -ENOMEM, "/%s/cgroup.procs: out of memory", dir);
                        pids = grown;
                }
                pids[n++] = (pid_t)v;
        }
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

static bool pid_in(const pid_t *pids, size_t n, pid_t pid)
{
        for (size_t i = 0; i < n; i++)
                if (pids[i] == pid)
                        return true;
        return false;
}

/*
 * v2's cgroup.kill (Linux 5.14): SIGKILL to every process of the group at once, forks racing it
 * included. How many there were before, or 0 where the file is missing.
 */
static int v2_kill_all(struct xp_cgroup *cg, struct xp_error *err)
{
        _cleanup_free_ pid_t *pids = NULL;
        char dir[PATH_MAX];
        size_t n = 0;
        int r;

        r = procs_dir(cg, dir, sizeof(dir), err);
        if (r >= 0)
                r = xp_cgroup_pids(cg, &pids, &n, err);
        if (r < 0)
                return r;
        if (n == 0)
                return 0;
        r = cgroup_write(cg->root, dir, "cgroup.kill", "1", NULL);
        if (r == -ENOENT)
                return 0; /* before Linux 5.14: the loop of xp_cgroup_kill() alone */
        if (r < 0)
                return xp_errorf(err, r, "cgroup %s: cgroup.kill: %s", cg->path, strerror(-r));
        return (int)n;
}

int xp_cgroup_kill(struct xp_cgroup *cg, int sig, struct xp_error *err)
{
        _cleanup_free_ pid_t *done = NULL;
        size_t n_done = 0;
        int killed = 0, r;

        if (sig == SIGKILL && cg->root->mode == XP_CGROUP_V2) {
                killed = v2_kill_all(cg, err);
                if (killed < 0)
                        return killed;
        }

        /* a bounded number of passes: a fork bomb faster than us is stopped by pids.max */
        for (int pass = 0; pass < 100; pass++) {
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;
                bool news = false;

                r = xp_cgroup_pids(cg, &pids, &n, err);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++) {
                        pid_t *grown;

                        if (pid_in(done, n_done, pids[i]))
                                continue;
                        grown = reallocarray(done, n_done + 1, sizeof(*done));
                        if (!grown)
                                return xp_errorf(
                                    err, -ENOMEM, "cgroup %s: out of memory", cg->path);
                        done = grown;
                        done[n_done++] = pids[i];
                        news = true;
                        if (kill(pids[i], sig) < 0 && errno != ESRCH) {
                                r = -errno;
                                return xp_errorf(err,
                                                 r,
                                                 "cgroup %s: signal %d to pid %d: %s",
                                                 cg->path,
                                                 sig,
                                                 (int)pids[i],
                                                 strerror(-r));
                        }
                }
                if (!news)
                        break;
        }
        return (int)n_done > killed ? (int)n_done : killed;
}
