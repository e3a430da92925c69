/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container that runs from its image under an OCI runtime (docs/containers.md), as the kubelet
 * and containerd make one: its runtime class, its command from the image's Entrypoint and Cmd
 * and the container's command and args (Kubernetes' table), the image's env under the
 * container's, the image's working directory and user unless the pod sets them, its volumes, its
 * devices as CDI names, its AppArmor profile. Pure: the image is what the store gave.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_internal.h"
#include "xpool/cdi.h"
#include "xpool/devenv.h"
#include "xpool/names.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"

static const char *or_empty(const char *s)
{
        return s ? s : "";
}

/* ---- runtime classes ------------------------------------------------------------------------ */

bool xp_launch_runs_images(const struct xp_runtime_class *cls)
{
        return cls && cls->path;
}

int xp_launch_runtime_class(const struct xp_pod *pod,
                            const struct xp_launch_policy *policy,
                            const struct xp_runtime_class **ret,
                            struct xp_error *err)
{
        static const struct xp_runtime_class process = {.name = XP_RUNTIME_CLASS_PROCESS};
        const char *name = json_string_value(json_object_get(pod->spec.extra, "runtimeClassName"));
        char known[512] = "";
        size_t len = 0;

        if (!policy || policy->n_runtime_classes == 0) {
                *ret = &process;
                return 0;
        }
        if (!name || !*name)
                name = policy->default_runtime ? policy->default_runtime : XP_RUNTIME_CLASS_PROCESS;
        for (size_t i = 0; i < policy->n_runtime_classes; i++) {
                if (strcmp(policy->runtime_classes[i].name, name) == 0) {
                        *ret = &policy->runtime_classes[i];
                        return 0;
                }
                len += (size_t)snprintf(known + len,
                                        len < sizeof(known) ? sizeof(known) - len : 0,
                                        "%s%s",
                                        i ? ", " : "",
                                        policy->runtime_classes[i].name);
                len = len < sizeof(known) ? len : sizeof(known) - 1;
        }
        return xp_errorf(
            err,
            -ENOENT,
            "runtimeClassName \"%s\": node %s has no such runtime class (its classes: %s; "
            "xpool agent --runtime-class NAME=PATH adds one)",
            name,
            or_empty(policy->node_name),
            known);
}

/* ---- command and environment ---------------------------------------------------------------- */

static size_t count(char *const *v)
{
        size_t n = 0;

        while (v && v[n])
                n++;
        return n;
}

/*
 * Kubernetes' table: neither command nor args: Entrypoint + Cmd; args only: Entrypoint + args;
 * command (with or without args): command + args, the image's Cmd never. The container's own
 * words are $(VAR)-expanded over its env as the kubelet expands them; the image's are not.
 */
static int build_argv(const struct xp_container *c,
                      const char *cpath,
                      const struct xp_image_config *cfg,
                      const struct env_list *env,
                      struct xp_launch *l,
                      struct xp_error *err)
{
        char *const *first = c->command.n ? NULL : cfg->entrypoint;
        char *const *then = c->command.n || c->args.n ? NULL : cfg->cmd;
        size_t n = count(first) + count(then) + c->command.n + c->args.n, k = 0;

        if (n == 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: no command specified: the image \"%s\" has neither "
                                 "Entrypoint nor Cmd, and the container gives no command",
                                 cpath,
                                 or_empty(c->image));
        if (n > XP_LAUNCH_ARGS_MAX)
                return xp_errorf(
                    err, -E2BIG, "%s: more than %d arguments", cpath, XP_LAUNCH_ARGS_MAX);
        l->argv = calloc(n + 1, sizeof(char *));
        if (!l->argv)
                return -ENOMEM;
        for (size_t i = 0; first && first[i]; i++)
                if (!(l->argv[k++] = strdup(first[i])))
                        return -ENOMEM;
        for (size_t i = 0; i < c->command.n; i++)
                if (!(l->argv[k++] = launch_expand(or_empty(c->command.items[i]), env)))
                        return -ENOMEM;
        for (size_t i = 0; i < c->args.n; i++)
                if (!(l->argv[k++] = launch_expand(or_empty(c->args.items[i]), env)))
                        return -ENOMEM;
        for (size_t i = 0; then && then[i]; i++)
                if (!(l->argv[k++] = strdup(then[i])))
                        return -ENOMEM;
        if (!*l->argv[0])
                return xp_errorf(err, -EINVAL, "%s: the program to run is empty", cpath);
        return 0;
}

/* HOSTNAME, the image's env, then the pod's side (xpool's, the devices', the spec's) over it,
 * and PATH where neither has one (as containerd adds it). */
static int build_env(const struct xp_image_config *cfg,
                     const char *hostname,
                     const struct env_list *pod_env,
                     struct xp_launch *l)
{
        _cleanup_(launch_env_done) struct env_list env = {0};
        int r;

        r = launch_env_set(&env, "HOSTNAME", strdup(hostname));
        for (size_t i = 0; r >= 0 && cfg->env && cfg->env[i]; i++) {
                const char *eq = strchr(cfg->env[i], '=');
                _cleanup_free_ char *name =
                    eq ? strndup(cfg->env[i], (size_t)(eq - cfg->env[i])) : NULL;

                if (!eq || eq == cfg->env[i])
                        continue; /* not NAME=value: left out, as runtimes do */
                r = name ? launch_env_set(&env, name, strdup(eq + 1)) : -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < pod_env->n; i++)
                r = launch_env_set(&env, pod_env->items[i].name, strdup(pod_env->items[i].value));
        if (r >= 0 && !launch_env_get(&env, "PATH", 4))
                r = launch_env_set(&env, "PATH", strdup(LAUNCH_DEFAULT_PATH));
        return r < 0 ? r : launch_env_array(&env, &l->env);
}

/* ---- the user ------------------------------------------------------------------------------- */

/* The kubelet's format.Pod(): name_namespace(uid). */
static void pod_ref(const struct xp_pod *pod, char buf[static 320])
{
        snprintf(buf,
                 320,
                 "%s_%s(%s)",
                 or_empty(pod->metadata.name),
                 or_empty(pod->metadata.namespace),
                 or_empty(pod->metadata.uid));
}

/* The kubelet's verifyRunAsNonRoot() for the image's user (no runAsUser). */
static int image_non_root(const struct xp_pod *pod,
                          const struct xp_container *c,
                          const char *user,
                          struct xp_error *err)
{
        char ref[320], uid[32];
        size_t len = strcspn(user ? user : "", ":");

        pod_ref(pod, ref);
        snprintf(uid,
                 sizeof(uid),
                 "%.*s",
                 (int)(len < sizeof(uid) ? len : sizeof(uid) - 1),
                 or_empty(user));
        if (!*uid || strspn(uid, "0") == strlen(uid))
                return xp_errorf(
                    err,
                    -EPERM,
                    "container has runAsNonRoot and image will run as root (pod: \"%s\", container: %s)",
                    ref,
                    or_empty(c->name));
        if (strspn(uid, "0123456789") != strlen(uid))
                return xp_errorf(
                    err,
                    -EPERM,
                    "container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: \"%s\", container: %s)",
                    uid,
                    ref,
                    or_empty(c->name));
        return 0;
}

static int build_user(const struct xp_pod *pod,
                      const struct xp_container *c,
                      const char *cpath,
                      const struct xp_image_config *cfg,
                      struct xp_launch *l,
                      struct xp_error *err)
{
        const struct xp_security_context *sc = c->security_context,
                                         *psc = pod->spec.security_context;
        struct xp_opt_int64 user = psc ? psc->run_as_user : (struct xp_opt_int64){0};
        struct xp_opt_int64 group = psc ? psc->run_as_group : (struct xp_opt_int64){0};
        struct xp_opt_bool non_root = psc ? psc->run_as_non_root : (struct xp_opt_bool){0};
        struct xp_container_user *u = &l->oci.user;
        json_t *sup = psc ? json_object_get(psc->extra, "supplementalGroups") : NULL, *g;
        size_t i;
        char ref[320];

        if (sc && sc->run_as_user.set)
                user = sc->run_as_user;
        if (sc && sc->run_as_group.set)
                group = sc->run_as_group;
        if (sc && sc->run_as_non_root.set)
                non_root = sc->run_as_non_root;
        if ((user.set && (user.value < 0 || user.value > UINT32_MAX - 1)) ||
            (group.set && (group.value < 0 || group.value > UINT32_MAX - 1)))
                return xp_errorf(
                    err, -EINVAL, "%s.securityContext: user or group id out of range", cpath);
        pod_ref(pod, ref);
        if (non_root.set && non_root.value && user.set && user.value == 0)
                return xp_errorf(
                    err,
                    -EPERM,
                    "container's runAsUser breaks non-root policy (pod: \"%s\", container: %s)",
                    ref,
                    or_empty(c->name));
        if (non_root.set && non_root.value && !user.set &&
            image_non_root(pod, c, cfg->user, err) < 0)
                return -EPERM;
        *u = (struct xp_container_user){.uid_set = user.set,
                                        .uid = (uid_t)user.value,
                                        .gid_set = group.set,
                                        .gid = (gid_t)group.value};
        u->image_user = user.set ? NULL : cfg->user;
        l->supplemental = calloc(json_array_size(sup) + 1, sizeof(*l->supplemental));
        if (!l->supplemental)
                return -ENOMEM;
        json_array_foreach(sup, i, g)
        {
                if (!json_is_integer(g) || json_integer_value(g) < 0 ||
                    json_integer_value(g) > UINT32_MAX - 1)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "spec.securityContext.supplementalGroups[%zu]: not a group id",
                            i);
                l->supplemental[u->n_supplemental++] = (gid_t)json_integer_value(g);
        }
        u->supplemental = l->supplemental;
        return 0;
}

/* ---- devices and AppArmor ------------------------------------------------------------------- */

/* The CDI names of the placement's devices (a device without device nodes has none: nothing to
 * inject, its variables alone tell the container about it). */
static int
cdi_devices(const struct xp_placement *pl, const struct xp_node *node, struct xp_launch *l)
{
        const struct xp_node_inventory *inv = node ? node->status.xpool : NULL;
        size_t k = 0;

        l->cdi_devices = calloc((pl ? pl->devices.n : 0) + 1, sizeof(char *));
        if (!l->cdi_devices)
                return -ENOMEM;
        for (size_t i = 0; pl && i < pl->devices.n; i++) {
                char name[XP_CDI_NAME_MAX + 64];

                for (size_t d = 0; inv && d < inv->devices.n; d++) {
                        if (!xp_streq0(inv->devices.items[d].id, pl->devices.items[i].id) ||
                            xp_cdi_device_name(&inv->devices.items[d], name, sizeof(name)) < 0)
                                continue;
                        if (!(l->cdi_devices[k++] = strdup(name)))
                                return -ENOMEM;
                        break;
                }
        }
        return 0;
}

/* securityContext.appArmorProfile (the container's, else the pod's), else the beta annotation:
 * NULL for the runtime's default, "unconfined", or a profile loaded on the node. */
static int apparmor(const struct xp_pod *pod,
                    const struct xp_container *c,
                    const char *cpath,
                    const char **ret,
                    struct xp_error *err)
{
        json_t *p = c->security_context
                        ? json_object_get(c->security_context->extra, "appArmorProfile")
                        : NULL;
        const char *type, *ann;
        char key[320];

        if (!p && pod->spec.security_context)
                p = json_object_get(pod->spec.security_context->extra, "appArmorProfile");
        snprintf(key,
                 sizeof(key),
                 "container.apparmor.security.beta.kubernetes.io/%s",
                 or_empty(c->name));
        ann = xp_strmap_get(&pod->metadata.annotations, key);
        type = json_string_value(json_object_get(p, "type"));
        *ret = NULL;
        if ((type && strcmp(type, "Unconfined") == 0) ||
            (!type && ann && strcmp(ann, "unconfined") == 0))
                *ret = "unconfined";
        else if (type && strcmp(type, "Localhost") == 0)
                *ret = json_string_value(json_object_get(p, "localhostProfile"));
        else if (!type && ann && strncmp(ann, "localhost/", 10) == 0)
                *ret = ann + 10;
        else if ((type && strcmp(type, "RuntimeDefault") != 0) ||
                 (!type && ann && strcmp(ann, "runtime/default") != 0))
                return xp_errorf(
                    err,
                    -EPERM,
                    "%s: AppArmor profile \"%s\" is none of RuntimeDefault, Unconfined, Localhost",
                    cpath,
                    type ? type : ann);
        if (type && strcmp(type, "Localhost") == 0 && (!*ret || !**ret))
                return xp_errorf(
                    err,
                    -EPERM,
                    "%s.securityContext.appArmorProfile.localhostProfile: required for type Localhost",
                    cpath);
        return 0;
}

/* The pod's host name: spec.hostname, else its name (at most 63 characters, as the kubelet);
 * its domain SUBDOMAIN.NAMESPACE.svc.cluster.local with spec.subdomain (kubelet's
 * GeneratePodHostNameAndDomain). */
static int hostname(const struct xp_pod *pod, struct xp_launch *l, struct xp_error *err)
{
        const char *h = json_string_value(json_object_get(pod->spec.extra, "hostname"));
        const char *sub = json_string_value(json_object_get(pod->spec.extra, "subdomain"));
        struct xp_error cause = {0};

        /* they go into the pod's /etc/hosts and UTS name: labels only, as the API server checks */
        if (h && *h && xp_check_dns1123_label(h, &cause) < 0)
                return xp_errorf(err, -EINVAL, "spec.hostname: %s", xp_error_message(&cause));
        if (sub && *sub && xp_check_dns1123_label(sub, &cause) < 0)
                return xp_errorf(err, -EINVAL, "spec.subdomain: %s", xp_error_message(&cause));

        if (!h || !*h)
                h = or_empty(pod->metadata.name);
        l->hostname = strndup(h, 63);
        if (!l->hostname)
                return -ENOMEM;
        if (sub && *sub &&
            asprintf(&l->host_domain,
                     "%s.%s.svc.cluster.local",
                     sub,
                     or_empty(pod->metadata.namespace)) < 0) {
                l->host_domain = NULL;
                return -ENOMEM;
        }
        return 0;
}

int launch_oci(const struct xp_pod *pod,
               const struct xp_container *c,
               const char *cpath,
               const struct xp_node *node,
               const struct xp_placement *devices,
               const struct xp_launch_policy *policy,
               const struct xp_launch_image *image,
               const struct env_list *env,
               struct xp_launch *l,
               struct xp_error *err)
{
        const struct xp_image_config *cfg = &image->image->config;
        struct xp_container_oci *oci = &l->oci;
        int r;

        r = hostname(pod, l, err);
        if (r >= 0)
                r = build_user(pod, c, cpath, cfg, l, err);
        if (r >= 0)
                r = build_argv(c, cpath, cfg, env, l, err);
        if (r >= 0)
                r = build_env(cfg, l->hostname, env, l);
        if (r >= 0)
                r = launch_volumes(pod, c, cpath, policy, l, err);
        if (r >= 0)
                r = cdi_devices(devices, node, l);
        if (r >= 0)
                r = apparmor(pod, c, cpath, &oci->apparmor, err);
        if (r < 0)
                return r;
        oci->runtime_class = image->runtime->name;
        oci->runtime_path = image->runtime->path;
        oci->layers = image->layers;
        oci->image = image->image->names && image->image->names[0] ? image->image->names[0]
                                                                   : image->image->id;
        l->image_id = xp_image_status_id(image->image, c->image);
        l->image_ref = xp_image_status_ref(image->image, c->image);
        if (!l->image_id || !l->image_ref)
                return xp_errorf(err, -ENOMEM, "out of memory");
        oci->image_id = l->image_id;
        oci->image_ref = l->image_ref;
        oci->hostname = l->hostname;
        oci->host_domain = l->host_domain;
        oci->pod_ip = pod->status.pod_ip; /* the agent's network step put it there */
        oci->cdi_devices = l->cdi_devices;
        l->launch.working_dir =
            c->working_dir && *c->working_dir ? c->working_dir : cfg->working_dir;
        l->launch.oci = oci;
        return 0;
}
