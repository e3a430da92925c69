/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a pod has beyond its containers, as a pod sandbox holds it (STATE/.pods/<uid>): its IPC
 * namespace, which every container of the pod joins; the hosts, hostname and resolv.conf files
 * they all see; its emptyDir volumes, which outlive a container's restart and go with the pod.
 * And the node paths volumes are mounted from, checked: a hostPath must stay below the prefix
 * the agent allowed it by once symbolic links are followed, a subPath below its volume.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci_internal.h"
#include "runtime_internal.h"
#include "xpool/fileio.h"

static int pod_dir_of(const char *state_dir, const char *uid, char **ret)
{
        return asprintf(ret, "%s/" OCI_PODS_DIR "/%s", state_dir, uid) < 0 ? -ENOMEM : 0;
}

/* Sanitizers keep per-thread state that a child sharing our memory would share: their builds
 * fork here (as the shim's children do, shim_child.c). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IPC_CHILD_FORKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define IPC_CHILD_FORKS 1
#endif
#endif

/* In the new namespace: binds it on the path arg, and ends. */
static int bind_own_ipc(void *path)
{
        _exit(mount("/proc/self/ns/ipc", path, NULL, MS_BIND, NULL) < 0 ? 1 : 0);
}

/*
 * A new IPC namespace kept by a bind mount of it on path: a process cloned into it binds its
 * /proc/self/ns/ipc there and exits (system calls only: the agent has threads). It shares our
 * memory and stops us until it ended (vfork's contract), on a small stack of ours: no copy of
 * the agent's page tables and no copy-on-write faults after it, per pod.
 */
static int make_ipc_namespace(const char *path, struct xp_error *err)
{
        int fd, status = 0;
        pid_t pid;

        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return xp_errorf(err, -errno, "the pod's IPC namespace %s: %m", path);
        close(fd);
#ifdef IPC_CHILD_FORKS
        pid = (pid_t)syscall(SYS_clone, CLONE_NEWIPC | SIGCHLD, NULL, NULL, NULL, NULL);
        if (pid == 0)
                bind_own_ipc((void *)path);
#else
        {
                _Alignas(16) char stack[16 * 1024];

                pid = clone(bind_own_ipc,
                            stack + sizeof(stack),
                            CLONE_VM | CLONE_VFORK | CLONE_NEWIPC | SIGCHLD,
                            (void *)path);
        }
#endif
        if (pid < 0)
                return xp_errorf(err, -errno, "the pod's IPC namespace: clone: %m");
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                unlink(path);
                return xp_errorf(
                    err, -EPERM, "the pod's IPC namespace: binding it to %s failed", path);
        }
        return 0;
}

/* Whether path (a file or a directory) is a mount point: its device differs from its
 * directory's. */
static bool mounted(const char *path)
{
        char parent[PATH_MAX];
        struct stat a, b;
        char *slash;

        snprintf(parent, sizeof(parent), "%s", path);
        slash = strrchr(parent, '/');
        if (!slash || slash == parent)
                return false;
        *slash = '\0';
        return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/*
 * Written once per pod and never fsync'd: they are derived from the pod, and the fsyncs (six per
 * pod) were the largest part of a container's start beyond the runtime's own. What a crash can
 * leave of them is nothing or an empty file (the rename is atomic, the data may not have
 * reached the disk), and both are written again here (an empty resolv.conf, from a node without
 * one, is simply written again each time).
 */
static int
write_if_missing(const char *dir, const char *name, const char *text, struct xp_error *err)
{
        char path[PATH_MAX];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
                return 0;
        return runtime_write_json(dir, name, text, false, err);
}

/* hosts, hostname and resolv.conf, as the kubelet writes them for a pod. */
static int pod_files(const char *dir, const struct xp_container_oci *oci, struct xp_error *err)
{
        _cleanup_free_ char *hosts = NULL, *hostname = NULL, *resolv = NULL, *data = NULL;
        _cleanup_free_ char *names = NULL;
        const char *name = oci->hostname ? oci->hostname : "";
        _cleanup_close_ int fd = open("/etc/resolv.conf", O_RDONLY | O_CLOEXEC);
        size_t size = 0;
        int r;

        /* with a subdomain, "FQDN\tname" as the kubelet's managedHostsFileContent */
        if (oci->host_domain && asprintf(&names, "%s.%s\t%s", name, oci->host_domain, name) < 0)
                names = NULL; /* asprintf leaves it undefined */
        else if (!oci->host_domain)
                names = strdup(name);
        if (!names)
                return xp_errorf(err, -ENOMEM, "out of memory");
        if (asprintf(&hosts,
                     "# Kubernetes-managed hosts file (xpool).\n"
                     "127.0.0.1\tlocalhost\n"
                     "::1\tlocalhost ip6-localhost ip6-loopback\n"
                     "fe00::0\tip6-localnet\n"
                     "fe00::0\tip6-mcastprefix\n"
                     "fe00::1\tip6-allnodes\n"
                     "fe00::2\tip6-allrouters\n"
                     "%s\t%s\n",
                     oci->pod_ip && *oci->pod_ip ? oci->pod_ip : "127.0.1.1",
                     names) < 0 ||
            asprintf(&hostname, "%s\n", name) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        /* the node's resolver, as dnsPolicy Default gives it (there is no cluster DNS) */
        if (fd >= 0 && xp_read_fd_all(fd, 64 * 1024, &data, &size) >= 0 && data)
                resolv = strndup(data, size);
        else
                resolv = strdup("");
        if (!resolv)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r = write_if_missing(dir, "hosts", hosts, err);
        if (r >= 0)
                r = write_if_missing(dir, "hostname", hostname, err);
        if (r >= 0)
                r = write_if_missing(dir, "resolv.conf", resolv, err);
        return r;
}

/* Its emptyDir volumes: directories open to every user, as the kubelet makes them (0777). */
static int empty_dirs(const char *dir,
                      const struct xp_container_mount *mounts,
                      size_t n_mounts,
                      struct xp_error *err)
{
        char path[PATH_MAX], opts[64];

        for (size_t i = 0; i < n_mounts; i++) {
                const struct xp_container_mount *m = &mounts[i];

                if (m->kind == XP_VOLUME_HOST_PATH || m->kind == XP_VOLUME_FILES)
                        continue;
                snprintf(path, sizeof(path), "%s/volumes/%s", dir, m->volume);
                if (mkdir(path, 0777) < 0 && errno != EEXIST)
                        return xp_errorf(err, -errno, "emptyDir %s: %s: %m", m->volume, path);
                (void)chmod(path, 0777);
                if (m->kind != XP_VOLUME_EMPTY_DIR_MEMORY || mounted(path))
                        continue;
                if (m->size_bytes)
                        snprintf(opts,
                                 sizeof(opts),
                                 "mode=0777,size=%llu",
                                 (unsigned long long)m->size_bytes);
                else
                        snprintf(opts, sizeof(opts), "mode=0777");
                if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                        return xp_errorf(err,
                                         -errno,
                                         "emptyDir %s (medium Memory): tmpfs on %s: %m",
                                         m->volume,
                                         path);
        }
        return 0;
}

int oci_pod_volumes(const char *state_dir,
                    const char *uid,
                    const struct xp_container_mount *mounts,
                    size_t n_mounts,
                    char **ret_dir,
                    struct xp_error *err)
{
        _cleanup_free_ char *dir = NULL, *volumes = NULL;
        int r;

        if (pod_dir_of(state_dir, uid, &dir) < 0 || asprintf(&volumes, "%s/volumes", dir) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r = xp_mkdir_p(volumes, 0755, err);
        if (r >= 0)
                r = empty_dirs(dir, mounts, n_mounts, err);
        if (r < 0)
                return r;
        *ret_dir = TAKE_PTR(dir);
        return 0;
}

int oci_pod_ipc(const char *ipc_dir, const char *uid, char **ret_ipc, struct xp_error *err)
{
        _cleanup_free_ char *ipc = NULL;
        int r;

        /* a pod started before its agent had its own ipc_dir keeps the one it has */
        if (asprintf(&ipc, XP_RUNTIME_IPC_DIR "/%s", uid) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        if (!mounted(ipc)) {
                free(ipc);
                if (asprintf(&ipc, "%s/%s", ipc_dir, uid) < 0)
                        return xp_errorf(err, -ENOMEM, "out of memory");
        }
        r = xp_mkdir_p(ipc_dir, 0755, err);
        if (r >= 0 && !mounted(ipc))
                r = make_ipc_namespace(ipc, err);
        if (r < 0)
                return r;
        *ret_ipc = TAKE_PTR(ipc);
        return 0;
}

int oci_pod_prepare(const char *state_dir,
                    const char *ipc_dir,
                    const struct xp_container_launch *l,
                    char **ret_dir,
                    char **ret_ipc,
                    struct xp_error *err)
{
        _cleanup_free_ char *dir = NULL, *ipc = NULL;
        int r;

        r = oci_pod_volumes(state_dir, l->pod_uid, l->oci->mounts, l->oci->n_mounts, &dir, err);
        if (r >= 0)
                r = oci_pod_ipc(ipc_dir, l->pod_uid, &ipc, err);
        if (r < 0)
                return r;
        r = pod_files(dir, l->oci, err);
        if (r < 0)
                return r;
        *ret_dir = TAKE_PTR(dir);
        *ret_ipc = TAKE_PTR(ipc);
        return 0;
}

/* ---- volume sources ------------------------------------------------------------------------- */

static bool under(const char *path, const char *parent)
{
        size_t n = strlen(parent);

        if (strcmp(parent, "/") == 0)
                return true;
        return strncmp(path, parent, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* What a hostPath's type asks for, checked (and made, for the *OrCreate ones). */
static int host_type(const struct xp_container_mount *m, struct xp_error *err)
{
        const char *t = m->host_type ? m->host_type : "";
        struct stat st;
        int have = stat(m->source, &st) == 0, fd;

        if (!*t)
                return 0;
        if (strcmp(t, "DirectoryOrCreate") == 0 && !have)
                return xp_mkdir_p(m->source, 0755, err);
        if (strcmp(t, "FileOrCreate") == 0 && !have) {
                fd = open(m->source, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
                if (fd < 0)
                        return xp_errorf(err, -errno, "hostPath %s: creating it: %m", m->source);
                close(fd);
                return 0;
        }
        if ((strcmp(t, "Directory") == 0 || strcmp(t, "DirectoryOrCreate") == 0) &&
            !(have && S_ISDIR(st.st_mode)))
                return xp_errorf(
                    err, -ENOTDIR, "hostPath type check failed: %s is not a directory", m->source);
        if ((strcmp(t, "File") == 0 || strcmp(t, "FileOrCreate") == 0) &&
            !(have && S_ISREG(st.st_mode)))
                return xp_errorf(
                    err, -EINVAL, "hostPath type check failed: %s is not a file", m->source);
        if (strcmp(t, "Socket") == 0 && !(have && S_ISSOCK(st.st_mode)))
                return xp_errorf(
                    err, -EINVAL, "hostPath type check failed: %s is not a socket file", m->source);
        if (strcmp(t, "CharDevice") == 0 && !(have && S_ISCHR(st.st_mode)))
                return xp_errorf(err,
                                 -EINVAL,
                                 "hostPath type check failed: %s is not a character device",
                                 m->source);
        if (strcmp(t, "BlockDevice") == 0 && !(have && S_ISBLK(st.st_mode)))
                return xp_errorf(err,
                                 -EINVAL,
                                 "hostPath type check failed: %s is not a block device",
                                 m->source);
        return 0;
}

/*
 * sub's missing directories made below base, each found with openat2(RESOLVE_BENEATH) from base
 * and made in its parent found that way: a symbolic link the pod left in its volume (a -> /etc)
 * cannot make the agent create directories elsewhere on the node (a subPath a/x). -EXDEV: a
 * link leads out.
 */
static int make_beneath(const char *base, const char *sub)
{
        struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
        _cleanup_close_ int parent = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
        int base_fd = parent >= 0 ? dup(parent) : -1, fd, r = 0;
        char prefix[PATH_MAX];

        if (base_fd < 0)
                return -errno;
        for (const char *p = sub; r >= 0 && *p;) {
                size_t n = strcspn(p, "/"), len = (size_t)(p - sub) + n;
                char name[NAME_MAX + 1];

                if (len >= sizeof prefix || n > NAME_MAX) {
                        r = -ENAMETOOLONG;
                        break;
                }
                memcpy(prefix, sub, len);
                prefix[len] = '\0';
                memcpy(name, p, n);
                name[n] = '\0';
                p += n + (p[n] == '/');
                if (n == 0)
                        continue;
                fd = (int)syscall(SYS_openat2, base_fd, prefix, &how, sizeof how);
                if (fd < 0 && errno == ENOENT && mkdirat(parent, name, 0755) == 0)
                        fd = (int)syscall(SYS_openat2, base_fd, prefix, &how, sizeof how);
                if (fd < 0) {
                        r = -errno;
                        break;
                }
                close(parent);
                parent = fd;
        }
        close(base_fd);
        return r;
}

/* base/sub made when missing, and still below base once its links are followed. */
static int
sub_path(const char *base, const struct xp_container_mount *m, char **ret, struct xp_error *err)
{
        _cleanup_free_ char *joined = NULL, *real = NULL;
        int r;

        if (!m->sub_path || !*m->sub_path) {
                *ret = strdup(base);
                return *ret ? 0 : -ENOMEM;
        }
        if (m->sub_path[0] == '/' || strcmp(m->sub_path, "..") == 0 ||
            strncmp(m->sub_path, "../", 3) == 0 || strstr(m->sub_path, "/../") ||
            (strlen(m->sub_path) >= 3 && strcmp(m->sub_path + strlen(m->sub_path) - 3, "/..") == 0))
                return xp_errorf(err,
                                 -EINVAL,
                                 "subPath \"%s\": must be a relative path without '..'",
                                 m->sub_path);
        if (asprintf(&joined, "%s/%s", base, m->sub_path) < 0)
                return -ENOMEM;
        if (access(joined, F_OK) < 0 && (r = make_beneath(base, m->sub_path)) < 0)
                return xp_errorf(err,
                                 r == -EXDEV ? -EPERM : r,
                                 "subPath \"%s\" of volume %s: %s",
                                 m->sub_path,
                                 m->volume,
                                 r == -EXDEV ? "leaves the volume" : strerror(-r));
        real = realpath(joined, NULL);
        if (!real || !under(real, base))
                return xp_errorf(err,
                                 -EPERM,
                                 "subPath \"%s\" of volume %s leaves the volume",
                                 m->sub_path,
                                 m->volume);
        *ret = TAKE_PTR(real);
        return 0;
}

int oci_mount_source(const char *pod_dir,
                     const struct xp_container_mount *m,
                     char **ret,
                     struct xp_error *err)
{
        _cleanup_free_ char *base = NULL, *allowed = NULL;
        int r;

        if (m->kind == XP_VOLUME_FILES) {
                if (!(base = strdup(m->source)))
                        return -ENOMEM;
                return sub_path(base, m, ret, err);
        }
        if (m->kind != XP_VOLUME_HOST_PATH) {
                if (asprintf(&base, "%s/volumes/%s", pod_dir, m->volume) < 0)
                        return -ENOMEM;
                return sub_path(base, m, ret, err);
        }
        r = host_type(m, err);
        if (r < 0)
                return r;
        base = realpath(m->source, NULL);
        if (!base)
                return xp_errorf(err, -errno, "hostPath %s: %m", m->source);
        allowed = realpath(m->allowed ? m->allowed : "/", NULL);
        if (!allowed || !under(base, allowed))
                return xp_errorf(err,
                                 -EPERM,
                                 "hostPath %s resolves to %s, outside %s that the node allows",
                                 m->source,
                                 base,
                                 m->allowed ? m->allowed : "/");
        return sub_path(base, m, ret, err);
}

int oci_mount_sources(const char *pod_dir,
                      const struct xp_container_mount *mounts,
                      size_t n_mounts,
                      char ***ret,
                      struct xp_error *err)
{
        char **sources = calloc(n_mounts + 1, sizeof(*sources));
        int r = sources ? 0 : xp_errorf(err, -ENOMEM, "out of memory");

        for (size_t i = 0; r >= 0 && i < n_mounts; i++) {
                r = oci_mount_source(pod_dir, &mounts[i], &sources[i], err);
                if (r < 0)
                        r = xp_error_prefix(err, r, "volume %s", mounts[i].volume);
        }
        if (r < 0) {
                oci_sources_free(sources, n_mounts);
                return r;
        }
        *ret = sources;
        return 0;
}

void oci_sources_free(char **sources, size_t n)
{
        for (size_t i = 0; sources && i < n; i++)
                free(sources[i]);
        free(sources);
}

/* ---- removal -------------------------------------------------------------------------------- */

void oci_pod_ipc_release(const char *ipc_dir, const char *uid)
{
        char path[PATH_MAX];

        /* and the pin of a pod started when its agent's pins were all in XP_RUNTIME_IPC_DIR (a
         * pod's uid is its own: no other agent's pod has it) */
        for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof(path), "%s/%s", i == 0 ? ipc_dir : XP_RUNTIME_IPC_DIR, uid);
                if (mounted(path))
                        (void)umount2(path, MNT_DETACH);
                (void)unlink(path);
        }
}

int oci_pod_remove(const char *state_dir,
                   const char *ipc_dir,
                   const char *uid,
                   struct xp_error *err)
{
        _cleanup_free_ char *dir = NULL;
        char path[PATH_MAX];
        DIR *d;
        struct dirent *e;
        int r;

        if (pod_dir_of(state_dir, uid, &dir) < 0)
                return -ENOMEM;
        oci_pod_ipc_release(ipc_dir, uid);
        if (access(dir, F_OK) < 0)
                return 0;
        snprintf(path, sizeof(path), "%s/volumes", dir);
        d = opendir(path);
        while (d && (e = readdir(d))) {
                char vol[PATH_MAX];

                if (e->d_name[0] == '.')
                        continue;
                snprintf(vol, sizeof(vol), "%s/%s", path, e->d_name);
                if (mounted(vol))
                        (void)umount2(vol, MNT_DETACH);
        }
        if (d)
                closedir(d);
        r = oci_rm_rf(dir);
        if (r < 0)
                return xp_errorf(err, r, "removing %s: %s", dir, strerror(-r));
        return 0;
}
