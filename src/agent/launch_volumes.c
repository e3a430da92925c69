/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's volumeMounts against its pod's volumes, as the kubelet reads them: emptyDir
 * (on disk, or medium Memory on a tmpfs of sizeLimit) and hostPath, which the node admin must
 * allow (xpool agent --allow-host-path PREFIX) since it reaches the node's own files. Other kinds
 * are refused with what xpool serves; configMap, secret, projected and downwardAPI volumes are
 * the directory the agent wrote their files into (podconfig_mount.c), mounted read-only. Process
 * pods have them all too (launch_process_volumes), bound in the container's mount namespace
 * (contain_bind.c). Pure: the runtime makes and checks the paths.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_internal.h"
#include "podconfig.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"

/* The kinds of volume Kubernetes has that xpool does not serve (yet), for the message. */
static const char *const other_kinds[] = {
    "persistentVolumeClaim",
    "nfs",
    "csi",
    "ephemeral",
    "iscsi",
    "image",
    "gitRepo",
    NULL,
};

static const char *str(const json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

/* An absolute path without "." or ".." components, "//" or a trailing '/'. */
static bool normal_path(const char *p)
{
        size_t n = p ? strlen(p) : 0;

        return n >= 1 && p[0] == '/' && (n == 1 || p[n - 1] != '/') && !strstr(p, "//") &&
               !strstr(p, "/./") && !strstr(p, "/../") &&
               strcmp(p + n - (n >= 2 ? 2 : n), "/.") != 0 &&
               !(n >= 3 && strcmp(p + n - 3, "/..") == 0);
}

static bool under(const char *path, const char *parent)
{
        size_t n = strlen(parent);

        if (strcmp(parent, "/") == 0)
                return true;
        return strncmp(path, parent, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static const json_t *find_volume(const struct xp_pod *pod, const char *name)
{
        json_t *v;
        size_t i;

        json_array_foreach(json_object_get(pod->spec.extra, "volumes"), i, v)
        {
                if (xp_streq0(str(v, "name"), name))
                        return v;
        }
        return NULL;
}

static int host_path(const json_t *hp,
                     const char *vpath,
                     const struct xp_launch_policy *policy,
                     struct xp_container_mount *m,
                     struct xp_error *err)
{
        const char *allowed = NULL;

        m->kind = XP_VOLUME_HOST_PATH;
        m->source = str(hp, "path");
        m->host_type = str(hp, "type");
        if (!normal_path(m->source))
                return xp_errorf(err,
                                 -EPERM,
                                 "%s.hostPath.path: \"%s\" is not an absolute, normalized path",
                                 vpath,
                                 m->source ? m->source : "");
        for (size_t i = 0;
             policy && policy->allowed_host_paths && policy->allowed_host_paths[i] && !allowed;
             i++)
                if (under(m->source, policy->allowed_host_paths[i]))
                        allowed = policy->allowed_host_paths[i];
        if (!allowed)
                return xp_errorf(
                    err,
                    -EPERM,
                    "%s: hostPath %s is not allowed on node %s: the node's admin allows hostPath volumes below the paths given to xpool agent --allow-host-path",
                    vpath,
                    m->source,
                    policy && policy->node_name ? policy->node_name : "");
        m->allowed = allowed;
        return 0;
}

static int
empty_dir(const json_t *ed, const char *vpath, struct xp_container_mount *m, struct xp_error *err)
{
        const char *medium = str(ed, "medium"), *size = str(ed, "sizeLimit");
        struct xp_quantity q;
        int64_t bytes;

        m->kind = XP_VOLUME_EMPTY_DIR;
        if (medium && strcmp(medium, "Memory") == 0)
                m->kind = XP_VOLUME_EMPTY_DIR_MEMORY;
        else if (medium && *medium)
                return xp_errorf(err,
                                 -EPERM,
                                 "%s.emptyDir.medium: \"%s\" is not supported (\"\" or Memory)",
                                 vpath,
                                 medium);
        if (size && m->kind == XP_VOLUME_EMPTY_DIR_MEMORY) {
                if (xp_quantity_parse(size, &q, NULL) < 0 ||
                    xp_quantity_to_int_ceil(&q, &bytes) < 0 || bytes < 0)
                        return xp_errorf(err,
                                         -EPERM,
                                         "%s.emptyDir.sizeLimit: \"%s\" is not a size",
                                         vpath,
                                         size);
                m->size_bytes = (uint64_t)bytes;
        }
        return 0;
}

/* Whether vol is one the agent writes as files (podconfig_volumes.c). */
static bool files_volume(const json_t *vol)
{
        return json_object_get(vol, "configMap") || json_object_get(vol, "secret") ||
               json_object_get(vol, "projected") || json_object_get(vol, "downwardAPI");
}

/* A configMap, secret, projected or downwardAPI volume: the directory of its files. */
static int files(const char *uid,
                 const char *vpath,
                 const struct xp_launch_policy *policy,
                 struct xp_container_mount *m,
                 struct xp_error *err)
{
        m->kind = XP_VOLUME_FILES;
        if (!policy || !policy->data_dir || !uid)
                return xp_errorf(
                    err, -EPERM, "%s: the agent has no directory for its files", vpath);
        char *path;

        /* freed with the launch (xp_launch_free) */
        if (asprintf(&path, "%s/volumes/%s/%s", policy->data_dir, uid, m->volume) < 0)
                return -ENOMEM;
        m->source = path;
        return 0;
}

/* What volume vol is on the node, into m. */
static int volume(const char *uid,
                  const json_t *vol,
                  const char *vpath,
                  const struct xp_launch_policy *policy,
                  struct xp_container_mount *m,
                  struct xp_error *err)
{
        m->volume = str(vol, "name");
        if (!m->volume || !*m->volume || strchr(m->volume, '/') || strcmp(m->volume, ".") == 0 ||
            strcmp(m->volume, "..") == 0)
                return xp_errorf(err,
                                 -EPERM,
                                 "%s.name: \"%s\" is not a volume name",
                                 vpath,
                                 m->volume ? m->volume : "");
        if (json_object_get(vol, "hostPath"))
                return host_path(json_object_get(vol, "hostPath"), vpath, policy, m, err);
        if (json_object_get(vol, "emptyDir"))
                return empty_dir(json_object_get(vol, "emptyDir"), vpath, m, err);
        if (files_volume(vol))
                return files(uid, vpath, policy, m, err);
        for (size_t i = 0; other_kinds[i]; i++)
                if (json_object_get(vol, other_kinds[i]))
                        return xp_errorf(
                            err,
                            -EPERM,
                            "volume %s: %s volumes are not supported by xpool yet (emptyDir, hostPath, configMap, secret, projected and downwardAPI are)",
                            m->volume,
                            other_kinds[i]);
        return xp_errorf(
            err,
            -EPERM,
            "volume %s: of a kind xpool does not know (emptyDir, hostPath, configMap, secret, projected and downwardAPI are supported)",
            m->volume);
}

/* readOnly, subPath, mountPropagation of one volumeMount into m. */
static int mount_options(const json_t *vm,
                         const char *mpath,
                         bool privileged,
                         struct xp_container_mount *m,
                         struct xp_error *err)
{
        const char *prop = str(vm, "mountPropagation");

        m->destination = str(vm, "mountPath");
        if (!normal_path(m->destination))
                return xp_errorf(err,
                                 -EPERM,
                                 "%s.mountPath: \"%s\" is not an absolute, normalized path",
                                 mpath,
                                 m->destination ? m->destination : "");
        /* the kubelet mounts these read-only whatever readOnly says */
        m->read_only = json_is_true(json_object_get(vm, "readOnly")) || m->kind == XP_VOLUME_FILES;
        m->sub_path = str(vm, "subPath");
        if (json_object_get(vm, "subPathExpr"))
                return xp_errorf(
                    err, -EPERM, "%s.subPathExpr: not supported by xpool (subPath is)", mpath);
        if (!prop || strcmp(prop, "None") == 0)
                m->propagation = NULL;
        else if (strcmp(prop, "HostToContainer") == 0)
                m->propagation = "rslave";
        else if (strcmp(prop, "Bidirectional") == 0 && privileged)
                m->propagation = "rshared";
        else
                return xp_errorf(err,
                                 -EPERM,
                                 "%s.mountPropagation: \"%s\" %s",
                                 mpath,
                                 prop,
                                 strcmp(prop, "Bidirectional") == 0
                                     ? "is only allowed for a privileged container"
                                     : "is none of None, HostToContainer, Bidirectional");
        return 0;
}

/* The mount of volume mount vm (at mpath in the container spec) from the pod's volume vol. */
static int mount_of(const struct xp_pod *pod,
                    const json_t *vm,
                    const json_t *vol,
                    const char *mpath,
                    bool privileged,
                    const struct xp_launch_policy *policy,
                    struct xp_container_mount *m,
                    struct xp_error *err)
{
        char vpath[160];
        int r;

        snprintf(vpath, sizeof(vpath), "volume %s", str(vm, "name"));
        r = volume(pod->metadata.uid, vol, vpath, policy, m, err);
        return r < 0 ? r : mount_options(vm, mpath, privileged, m, err);
}

/* A subPath below the volume: relative, without ".." components. */
static bool sub_path_ok(const char *p)
{
        size_t n = p ? strlen(p) : 0;

        return !p || (n > 0 && p[0] != '/' && strcmp(p, "..") != 0 && strncmp(p, "../", 3) != 0 &&
                      !strstr(p, "/../") && !(n >= 3 && strcmp(p + n - 3, "/..") == 0));
}

/* The container's volumeMounts into l->mounts; a process container's subPaths checked here (its
 * runtime binds what it is given). */
static int mounts_of(const struct xp_pod *pod,
                     const struct xp_container *c,
                     const char *cpath,
                     bool process,
                     const struct xp_launch_policy *policy,
                     struct xp_launch *l,
                     struct xp_error *err)
{
        json_t *mounts = json_object_get(c->extra, "volumeMounts"), *vm;
        size_t i, n = 0;
        int r;

        l->mounts = calloc(json_array_size(mounts) + 1, sizeof(*l->mounts));
        if (!l->mounts)
                return -ENOMEM;
        json_array_foreach(mounts, i, vm)
        {
                char mpath[128];
                const json_t *vol = find_volume(pod, str(vm, "name"));
                struct xp_container_mount *m = &l->mounts[n];

                snprintf(mpath, sizeof(mpath), "%s.volumeMounts[%zu]", cpath, i);
                if (!vol)
                        return xp_errorf(err,
                                         -EPERM,
                                         "%s.name: the pod has no volume \"%s\"",
                                         mpath,
                                         str(vm, "name") ? str(vm, "name") : "");
                /* not written either (podconfig_mount.c) */
                if (xp_podconfig_sa_volume_skipped(policy ? policy->isolation : 0, vol, vm))
                        continue;
                n++;
                r = mount_of(
                    pod, vm, vol, mpath, !process && l->contain.privileged, policy, m, err);
                if (r >= 0 && process && !sub_path_ok(m->sub_path))
                        r = xp_errorf(err,
                                      -EPERM,
                                      "%s.subPath: \"%s\" is not a relative path inside the volume",
                                      mpath,
                                      m->sub_path);
                if (r < 0)
                        return r;
        }
        return (int)n;
}

int launch_volumes(const struct xp_pod *pod,
                   const struct xp_container *c,
                   const char *cpath,
                   const struct xp_launch_policy *policy,
                   struct xp_launch *l,
                   struct xp_error *err)
{
        int n = mounts_of(pod, c, cpath, false, policy, l, err);

        if (n < 0)
                return n;
        l->oci.mounts = l->mounts;
        l->oci.n_mounts = (size_t)n;
        return 0;
}

int launch_process_volumes(const struct xp_pod *pod,
                           const struct xp_container *c,
                           const char *cpath,
                           const struct xp_launch_policy *policy,
                           struct xp_launch *l,
                           struct xp_error *err)
{
        int n = mounts_of(pod, c, cpath, true, policy, l, err);

        if (n < 0)
                return n;
        l->launch.mounts = l->mounts;
        l->launch.n_mounts = (size_t)n;
        return 0;
}
