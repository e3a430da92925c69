/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's side of an OCI container's start: the pod's files, a fresh bundle with its
 * config.json, and what the shim needs to mount the root file system and drive the runtime;
 * and, once a shim is gone, what is left of its container (the runtime's state, the bundle).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci_internal.h"
#include "runtime_internal.h"
#include "xpool/contain.h"

extern char **environ;

/* ---- removing a tree ------------------------------------------------------------------------ */

static int rm_at(int dfd, const char *name, dev_t dev)
{
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        struct dirent *e;
        DIR *d;
        int r = 0;

        if (fd < 0)
                return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        /* never into another file system: a mount left there is not ours to empty */
        if (fstat(fd, &st) < 0 || st.st_dev != dev) {
                close(fd);
                return -EBUSY;
        }
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                        int q = rm_at(dirfd(d), e->d_name, dev);

                        if (q < 0 && r == 0)
                                r = q;
                }
        closedir(d);
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

int oci_rm_rf(const char *dir)
{
        struct stat st;

        if (lstat(dir, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        return rm_at(AT_FDCWD, dir, st.st_dev);
}

/* ---- the runtime's own commands ------------------------------------------------------------- */

/* Runs RUNTIME --root ROOT delete --force ID and waits (its output to /dev/null). */
static void runtime_delete(const char *runtime, const char *root, const char *id)
{
        char *argv[] = {(char *)runtime,
                        (char *)"--root",
                        (char *)root,
                        (char *)"delete",
                        (char *)"--force",
                        (char *)id,
                        NULL};
        posix_spawn_file_actions_t fa;
        int status;
        pid_t pid;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        if (posix_spawn(&pid, runtime, &fa, NULL, argv, environ) == 0)
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
        posix_spawn_file_actions_destroy(&fa);
}

void oci_cleanup(const char *dir, const json_t *spec)
{
        json_t *oci = json_object_get(spec, OCI_SPEC_KEY);
        const char *runtime = json_string_value(json_object_get(oci, "runtime"));
        const char *root = json_string_value(json_object_get(oci, "root"));
        const char *id = json_string_value(json_object_get(oci, "id"));
        char path[PATH_MAX];

        if (!oci)
                return; /* not an OCI container's, or no spec written */
        /* only when the runtime still knows it: its shim deletes it after a normal exit */
        if (runtime && root && id && snprintf(path, sizeof(path), "%s/%s", root, id) > 0 &&
            access(path, F_OK) == 0)
                runtime_delete(runtime, root, id);
        snprintf(path, sizeof(path), "%s/" OCI_BUNDLE, dir);
        (void)oci_rm_rf(path);
}

/* ---- the root file system ------------------------------------------------------------------- */

/*
 * The overlay's lowerdir, top layer first: the layers' paths relative to the directory they all
 * lie below (*ret_dir: the image store's layers), so that a deep image stays within the page that
 * mount options fit in (the shim mounts from that directory).
 */
static int lowerdir(char *const *layers, char **ret, char **ret_dir, struct xp_error *err)
{
        size_t n = 0, len = 0, dlen;
        char *out;

        while (layers && layers[n])
                n++;
        if (n == 0)
                return xp_errorf(err, -EINVAL, "the image has no layers");
        /* the longest directory every layer lies below */
        dlen = (size_t)(strrchr(layers[0], '/') - layers[0]);
        for (size_t i = 0; i < n; i++) {
                if (layers[i][0] != '/' || strpbrk(layers[i], ":,") || strstr(layers[i], "/../"))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "layer %s: not an absolute path without ':' or ','",
                                         layers[i]);
                while (dlen > 0 &&
                       (strncmp(layers[i], layers[0], dlen) != 0 || layers[i][dlen] != '/'))
                        dlen = (size_t)((char *)memrchr(layers[0], '/', dlen) - layers[0]);
        }
        /* measured once dlen is final: a later layer may shorten it */
        for (size_t i = 0; i < n; i++)
                len += strlen(layers[i]) - dlen;
        out = calloc(1, len + n + 1);
        if (!out || !(*ret_dir = dlen ? strndup(layers[0], dlen) : strdup("/"))) {
                free(out);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        for (size_t i = n; i-- > 0;) {
                if (i != n - 1)
                        strcat(out, ":");
                strcat(out, layers[i] + dlen + 1);
        }
        *ret = out;
        return 0;
}

/* A fresh bundle: the directories the overlay needs, nothing of an earlier attempt. */
static int fresh_bundle(const char *dir, char bundle[static PATH_MAX], struct xp_error *err)
{
        static const char *const dirs[] = {"rootfs", "upper", "work"};
        char path[PATH_MAX + 16];
        int r;

        snprintf(bundle, PATH_MAX, "%s/" OCI_BUNDLE, dir);
        if (strpbrk(bundle, ":,"))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "the state directory %s holds ':' or ',', which an overlay mount cannot take",
                    dir);
        r = oci_rm_rf(bundle);
        if (r < 0)
                return xp_errorf(err, r, "removing the old bundle %s: %s", bundle, strerror(-r));
        if (mkdir(bundle, 0700) < 0)
                return xp_errorf(err, -errno, "creating %s: %m", bundle);
        for (size_t i = 0; i < XP_ELEMENTSOF(dirs); i++) {
                snprintf(path, sizeof(path), "%s/%s", bundle, dirs[i]);
                if (mkdir(path, 0755) < 0)
                        return xp_errorf(err, -errno, "creating %s: %m", path);
        }
        return 0;
}

/* ---- a privileged container's devices ------------------------------------------------------- */

static const char *const skipped_dev[] = {"pts", "shm", "mqueue", "hugepages", "fd", "core", NULL};

/* Every device node of the node's /dev (and one level below), as CDI device nodes. */
static int host_devices(json_t *nodes, const char *dir, int depth)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        int r = 0;

        if (!d)
                return 0;
        while (r >= 0 && (e = readdir(d))) {
                char path[PATH_MAX];
                bool skip = e->d_name[0] == '.';
                struct stat st;

                for (size_t i = 0; !skip && depth == 0 && skipped_dev[i]; i++)
                        skip = strcmp(e->d_name, skipped_dev[i]) == 0;
                if (skip ||
                    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
                    lstat(path, &st) < 0)
                        continue;
                if (S_ISDIR(st.st_mode) && depth == 0)
                        r = host_devices(nodes, path, 1);
                else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
                        r = json_array_append_new(nodes,
                                                  json_pack("{s:s, s:s, s:I, s:I, s:I}",
                                                            "path",
                                                            path,
                                                            "type",
                                                            S_ISCHR(st.st_mode) ? "c" : "b",
                                                            "major",
                                                            (json_int_t)major(st.st_rdev),
                                                            "minor",
                                                            (json_int_t)minor(st.st_rdev),
                                                            "fileMode",
                                                            (json_int_t)(st.st_mode & 07777)));
        }
        closedir(d);
        return r < 0 ? -ENOMEM : 0;
}

/* The container's devices: its CDI devices' edits, and every node of the node's for a privileged
 * one, as Kubernetes gives them. */
static int device_edits(const struct oci_runtime_view *v,
                        const struct xp_container_launch *l,
                        const struct xp_contain *contain,
                        json_t **ret,
                        struct xp_error *err)
{
        int r = oci_cdi_edits(v->cdi_dir, l->oci->cdi_devices, ret, err);

        if (r < 0)
                return xp_error_prefix(err, r, "devices");
        if (contain->privileged &&
            host_devices(json_object_get(*ret, "deviceNodes"), "/dev", 0) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        return 0;
}

/* ---- the spec for the shim ------------------------------------------------------------------ */

static json_t *user_json(const struct xp_container_user *u)
{
        json_t *sup = json_array();

        for (size_t i = 0; sup && i < u->n_supplemental; i++)
                json_array_append_new(sup, json_integer(u->supplemental[i]));
        return json_pack("{s:b, s:I, s:b, s:I, s:s?, s:o}",
                         "uid_set",
                         u->uid_set,
                         "uid",
                         (json_int_t)u->uid,
                         "gid_set",
                         u->gid_set,
                         "gid",
                         (json_int_t)u->gid,
                         "image_user",
                         u->image_user && *u->image_user ? u->image_user : NULL,
                         "supplemental",
                         sup);
}

/*
 * The mounts the shim's own mount namespace drops (its copy of the node's would keep them
 * alive): every pod's IPC namespace and memory emptyDirs and the runtime's detach paths (the
 * pods' network namespaces), other agents' pins on this machine (XP_RUNTIME_RUN_DIR) too, but
 * this container's pod's own, which its runtime uses by path.
 */
static json_t *detach_json(const struct oci_runtime_view *v,
                           const char *pod_dir,
                           const char *ipc,
                           const struct xp_contain *contain)
{
        _cleanup_free_ char *pods = NULL;
        json_t *o;

        if (asprintf(&pods, "%s/" OCI_PODS_DIR, v->state_dir) < 0)
                return NULL;
        o = json_pack("{s:[s, s, s], s:[s, s]}",
                      "below",
                      pods,
                      v->ipc_dir,
                      XP_RUNTIME_RUN_DIR,
                      "keep",
                      pod_dir,
                      ipc);
        for (size_t i = 0; o && v->detach && v->detach[i]; i++)
                json_array_append_new(json_object_get(o, "below"), json_string(v->detach[i]));
        if (o && contain->netns)
                json_array_append_new(json_object_get(o, "keep"), json_string(contain->netns));
        return o;
}

static json_t *shim_spec(const struct oci_runtime_view *v,
                         const struct xp_container_launch *l,
                         const struct xp_contain *contain,
                         const char *pod_dir,
                         const char *ipc,
                         const char *bundle,
                         struct xp_error *err)
{
        _cleanup_free_ char *lower = NULL, *layers_dir = NULL, *root = NULL, *id = NULL;
        json_t *o;

        if (lowerdir(l->oci->layers, &lower, &layers_dir, err) < 0)
                return NULL;
        if (asprintf(&root, "%s/" OCI_RUNTIME_DIR "/%s", v->state_dir, l->oci->runtime_class) < 0 ||
            asprintf(&id, "%s_%s_%u", l->pod_uid, l->container, l->attempt) < 0) {
                xp_errorf(err, -ENOMEM, "out of memory");
                return NULL;
        }
        o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:b, s:o, s:[]}",
                      "runtime",
                      l->oci->runtime_path,
                      "class",
                      l->oci->runtime_class,
                      "root",
                      root,
                      "id",
                      id,
                      "bundle",
                      bundle,
                      "layers_dir",
                      layers_dir,
                      "lowerdir",
                      lower,
                      "user",
                      user_json(&l->oci->user),
                      "read_only_root",
                      contain->read_only_root,
                      "detach",
                      detach_json(v, pod_dir, ipc, contain),
                      "volume_sources");
        if (!o)
                xp_errorf(err, -ENOMEM, "out of memory");
        return o;
}

/* ---- the start ------------------------------------------------------------------------------ */

static int check_node(const struct oci_runtime_view *v,
                      const struct xp_container_oci *oci,
                      struct xp_error *err)
{
        if (!v->overlay)
                return xp_errorf(err,
                                 -EOPNOTSUPP,
                                 "this node's kernel has no overlayfs (not in /proc/filesystems, "
                                 "modprobe overlay): containers cannot get a root file system "
                                 "from their image");
        if (!oci->runtime_path || access(oci->runtime_path, X_OK) < 0)
                return xp_errorf(err,
                                 -ENOENT,
                                 "runtime class %s: the OCI runtime %s is not installed here",
                                 oci->runtime_class ? oci->runtime_class : "?",
                                 oci->runtime_path ? oci->runtime_path : "(none)");
        return 0;
}

/* The AppArmor profile: none for a privileged container or where asked (unconfined), the one
 * named (Localhost: loaded on the node), else xpool's default where AppArmor is enabled. */
static const char *apparmor_profile(const struct oci_runtime_view *v,
                                    const struct xp_container_oci *oci,
                                    const struct xp_contain *contain)
{
        if (contain->privileged || (oci->apparmor && strcmp(oci->apparmor, "unconfined") == 0))
                return NULL;
        if (oci->apparmor)
                return oci->apparmor;
        return v->apparmor ? OCI_APPARMOR_PROFILE : NULL;
}

/*
 * The capabilities the node's root holds, as containerd and runc give a privileged container:
 * those the running kernel knows (PR_CAPBSET_READ refuses the others) in our bounding set, which
 * is what the OCI runtime, root, is permitted after its exec.
 */
static uint64_t node_capabilities(void)
{
        uint64_t set = 0;

        for (int c = 0; c <= XP_CAP_LAST; c++)
                if (prctl(PR_CAPBSET_READ, (unsigned long)c, 0, 0, 0) == 1)
                        set |= XP_CAP_BIT(c);
        return set;
}

/* config.json in the bundle, from what was resolved. */
static int write_config(const struct oci_runtime_view *v,
                        const struct xp_container_launch *l,
                        const struct xp_contain *contain,
                        struct oci_config_in *in,
                        const char *bundle,
                        struct xp_error *err)
{
        _cleanup_free_ char *text = NULL, *cgpath = NULL;
        json_t *config = NULL;
        int r;

        if (v->cgroups && xp_cgroup_container_path(
                              v->cgroup_parent, l->pod_uid, l->container, &cgpath, err) >= 0) {
                char *abs = NULL;

                if (asprintf(&abs, "/%s", cgpath) < 0)
                        return -ENOMEM;
                free(cgpath);
                cgpath = abs;
        }
        in->launch = l;
        in->contain = contain;
        in->cgroups_path = cgpath;
        in->hide = v->hide;
        in->cgroup2 = v->cgroup2;
        in->node_caps = node_capabilities();
        in->apparmor = apparmor_profile(v, l->oci, contain);
        r = oci_config_build(in, &config, err);
        if (r < 0)
                return r;
        text = json_dumps(config, JSON_COMPACT);
        json_decref(config);
        if (!text)
                return xp_errorf(err, -ENOMEM, "out of memory");
        return runtime_write_json(bundle, "config.json", text, false, err);
}

int oci_start_prepare(const struct oci_runtime_view *v,
                      const struct xp_container_launch *l,
                      const struct xp_contain *contain,
                      const char *dir,
                      json_t **ret_oci,
                      struct xp_cgroup_limits *limits_out,
                      struct xp_cgroup_device **ret_devices,
                      struct xp_error *err)
{
        const struct xp_container_oci *oci = l->oci;
        struct oci_config_in in = {0};
        _cleanup_free_ char *pod_dir = NULL, *ipc = NULL;
        char bundle[PATH_MAX], **sources = NULL;
        json_t *edits = NULL;
        int r;

        *ret_devices = NULL;
        r = check_node(v, oci, err);
        if (r >= 0) {
                /* the pod's containers start at once: one makes its IPC namespace */
                pthread_mutex_lock(v->pods_lock);
                r = oci_pod_prepare(v->state_dir, v->ipc_dir, l, &pod_dir, &ipc, err);
                pthread_mutex_unlock(v->pods_lock);
        }
        if (r >= 0)
                r = fresh_bundle(dir, bundle, err);
        if (r >= 0)
                r = device_edits(v, l, contain, &edits, err);
        if (r >= 0 && l->limits)
                r = oci_cdi_allow(l->limits, edits, limits_out, ret_devices, err);
        if (r >= 0)
                r = oci_mount_sources(pod_dir, oci->mounts, oci->n_mounts, &sources, err);
        in.pod_dir = pod_dir;
        in.ipc_path = ipc;
        in.mount_sources = sources;
        in.cdi = edits;
        in.limits = l->limits ? limits_out : NULL;
        if (r >= 0)
                r = write_config(v, l, contain, &in, bundle, err);
        if (r >= 0 && !(*ret_oci = shim_spec(v, l, contain, pod_dir, ipc, bundle, err)))
                r = err && err->code ? err->code : -ENOMEM;
        /* the volumes' checked real paths, which the shim binds from what it opens without
         * following a link (oci_shim_pin.c) */
        for (size_t i = 0; r >= 0 && i < oci->n_mounts; i++)
                if (json_array_append_new(json_object_get(*ret_oci, "volume_sources"),
                                          json_string(sources[i])) < 0)
                        r = xp_errorf(err, -ENOMEM, "out of memory");
        oci_sources_free(sources, oci->n_mounts);
        json_decref(edits);
        if (r < 0) {
                free(*ret_devices);
                *ret_devices = NULL;
        }
        return r;
}
