/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the agent runs containers (docs/containers.md): its runtime classes (the process runtime,
 * crun, runc, and what --runtime-class adds), the class of pods that name none, the paths
 * hostPath volumes may come from, and the node's CDI spec files, written at start for the OCI
 * runtime to inject devices from (and for containerd or CRI-O on the same node).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"
#include "xpool/cdi.h"
#include "xpool/datadir.h"
#include "xpool/device.h"
#include "xpool/log.h"
#include "xpool/names.h"

#define DEFAULT_RUNTIME "crun"

void xp_agent_containers_done(struct xp_agent_containers *c)
{
        for (size_t i = 0; i < c->n_classes; i++) {
                free((char *)c->classes[i].name);
                free((char *)c->classes[i].path);
        }
        free(c->classes);
        free(c->default_runtime);
        for (size_t i = 0; c->allowed_host_paths && c->allowed_host_paths[i]; i++)
                free(c->allowed_host_paths[i]);
        free(c->allowed_host_paths);
        free(c->cdi_dir);
        free(c->sim_dev_dir);
        *c = (struct xp_agent_containers){0};
}

/* The executable name found in PATH (as the shell finds it), else /usr/bin/NAME: a runtime that
 * is not installed is said at the start of a pod that needs it. */
static char *find_runtime(const char *name)
{
        const char *path = getenv("PATH");
        char *found = NULL;

        for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p && !found;) {
                size_t len = strcspn(p, ":");

                if (len && asprintf(&found, "%.*s/%s", (int)len, p, name) >= 0 &&
                    access(found, X_OK) < 0) {
                        free(found);
                        found = NULL;
                }
                p += len + (p[len] == ':');
        }
        if (!found && asprintf(&found, "/usr/bin/%s", name) < 0)
                return NULL;
        return found;
}

/* Sets class name to path (NULL: the process runtime), replacing a class of that name. */
static int set_class(struct xp_agent_containers *c, const char *name, const char *path)
{
        struct xp_runtime_class *grown;
        char *n = strdup(name), *p = path ? strdup(path) : NULL;

        if (!n || (path && !p)) {
                free(n);
                free(p);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_classes; i++)
                if (strcmp(c->classes[i].name, name) == 0) {
                        free(n);
                        free((char *)c->classes[i].path);
                        c->classes[i].path = p;
                        return 0;
                }
        grown = realloc(c->classes, (c->n_classes + 1) * sizeof(*grown));
        if (!grown) {
                free(n);
                free(p);
                return -ENOMEM;
        }
        c->classes = grown;
        c->classes[c->n_classes++] = (struct xp_runtime_class){.name = n, .path = p};
        return 0;
}

/* "NAME=PATH": an OCI runtime under runtimeClassName NAME. */
static int add_spec(struct xp_agent_containers *c, const char *spec, struct xp_error *err)
{
        const char *eq = strchr(spec, '=');
        _cleanup_free_ char *name = eq ? strndup(spec, (size_t)(eq - spec)) : NULL;

        if (!eq || !name || xp_check_dns1123_label(name, NULL) < 0 || eq[1] != '/')
                return xp_errorf(err,
                                 -EINVAL,
                                 "--runtime-class '%s': expected NAME=PATH, NAME a runtime class "
                                 "(a DNS label, as in a pod's runtimeClassName) and PATH the OCI "
                                 "runtime's absolute path",
                                 spec);
        if (strcmp(name, XP_RUNTIME_CLASS_PROCESS) == 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "--runtime-class '%s': \"process\" is the process runtime's class",
                                 spec);
        return set_class(c, name, eq + 1);
}

static int builtin_classes(struct xp_agent_containers *c)
{
        static const char *const oci[] = {"crun", "runc"};
        int r = set_class(c, XP_RUNTIME_CLASS_PROCESS, NULL);

        for (size_t i = 0; r >= 0 && i < XP_ELEMENTSOF(oci); i++) {
                _cleanup_free_ char *path = find_runtime(oci[i]);

                r = path ? set_class(c, oci[i], path) : -ENOMEM;
        }
        return r;
}

static bool has_simulated(const struct xp_node_inventory *inv)
{
        for (size_t i = 0; inv && i < inv->devices.n; i++)
                if (inv->devices.items[i].simulated)
                        return true;
        return false;
}

static int copy_paths(const char *const *paths, char ***ret, struct xp_error *err)
{
        size_t n = 0;

        while (paths && paths[n])
                n++;
        *ret = calloc(n + 1, sizeof(char *));
        if (!*ret)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (paths[i][0] != '/')
                        return xp_errorf(
                            err, -EINVAL, "--allow-host-path '%s': not an absolute path", paths[i]);
                if (!((*ret)[i] = strdup(paths[i])))
                        return -ENOMEM;
        }
        return 0;
}

int xp_agent_containers_init(struct xp_agent *a,
                             const struct xp_agent_options *o,
                             struct xp_error *err)
{
        struct xp_agent_containers *c = &a->containers;
        bool known = false;
        int r;

        r = builtin_classes(c);
        for (size_t i = 0; r >= 0 && o->runtime_classes && o->runtime_classes[i]; i++)
                r = add_spec(c, o->runtime_classes[i], err);
        if (r >= 0 && !(c->default_runtime =
                            strdup(o->default_runtime ? o->default_runtime : DEFAULT_RUNTIME)))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < c->n_classes; i++)
                known |= strcmp(c->classes[i].name, c->default_runtime) == 0;
        if (r >= 0 && !known)
                r = xp_errorf(
                    err,
                    -EINVAL,
                    "--default-runtime %s: no such runtime class (process, crun, runc, or one --runtime-class adds)",
                    c->default_runtime);
        if (r >= 0)
                r = copy_paths(o->allowed_host_paths, &c->allowed_host_paths, err);
        if (r >= 0 && has_simulated(a->inventory) &&
            !(c->sim_dev_dir = xp_datadir_path(a->data_dir, "sim-dev")))
                r = -ENOMEM;
        /* simulated devices are not offered to the machine's other runtimes */
        if (r >= 0 && !(c->cdi_dir = o->cdi_dir       ? strdup(o->cdi_dir)
                                     : c->sim_dev_dir ? xp_datadir_path(a->data_dir, "cdi")
                                                      : strdup(XP_CDI_DIR)))
                r = -ENOMEM;
        if (r == -ENOMEM)
                return xp_errorf(err, r, "out of memory");
        if (r < 0)
                return r;
        a->policy.runtime_classes = c->classes;
        a->policy.n_runtime_classes = c->n_classes;
        a->policy.default_runtime = c->default_runtime;
        a->policy.allowed_host_paths = (const char *const *)c->allowed_host_paths;
        a->policy.data_dir = a->data_dir;
        return 0;
}

void xp_agent_containers_publish(struct xp_agent *a)
{
        struct xp_agent_containers *c = &a->containers;
        struct xp_error err = {0};
        const char *warning = xp_runtime_oci_warning(a->runtime);
        int r = 0;

        if (warning)
                xp_log(LOG_WARNING, "agent: containers from images: %s", warning);
        if (c->sim_dev_dir)
                r = xp_device_sim_nodes(a->inventory, c->sim_dev_dir, &err);
        if (r >= 0)
                r = xp_cdi_write_with(
                    a->inventory,
                    c->cdi_dir,
                    &(struct xp_cdi_write_options){.simulated_dev_dir = c->sim_dev_dir},
                    &err);
        if (r < 0)
                xp_log(LOG_WARNING,
                       "agent: the node's CDI specs were not written (%s): containers of OCI "
                       "runtime classes cannot be given devices",
                       xp_error_message(&err));
}

/* ---- a container's launch ------------------------------------------------------------------- */

static const struct xp_container *find(const struct xp_pod *pod, const char *name, bool init)
{
        const struct xp_container *items =
            init ? pod->spec.init_containers.items : pod->spec.containers.items;
        size_t n = init ? pod->spec.init_containers.n : pod->spec.containers.n;

        for (size_t i = 0; i < n; i++)
                if (items[i].name && strcmp(items[i].name, name) == 0)
                        return &items[i];
        return NULL;
}

int xp_agent_image_holder(const char *uid, const char *container, char buf[static 256])
{
        int n = snprintf(buf, 256, "%s_%s", uid, container);

        return n > 0 && n < 201 ? 0 : -ENAMETOOLONG;
}

/* The image of c from the store, held for the container (image.h's holds: no rm or prune takes
 * it while the container has state), with its layers NULL-terminated in *ret_layers. */
static int take_image(struct xp_image_store *store,
                      const struct xp_pod *pod,
                      const struct xp_container *c,
                      struct xp_image **ret,
                      char ***ret_layers,
                      struct xp_error *err)
{
        char holder[256], what[400];
        int r;

        r = xp_image_get(store, c->image ? c->image : "", ret, err);
        if (r < 0)
                return xp_error_prefix(err, r, "image \"%s\"", c->image ? c->image : "");
        if (xp_agent_image_holder(pod->metadata.uid, c->name, holder) < 0)
                return xp_errorf(err,
                                 -ENAMETOOLONG,
                                 "container %s: its name is too long to hold its image",
                                 c->name);
        /* `xpool image rm` names the pod and container, not the holder (an internal id) */
        snprintf(what,
                 sizeof(what),
                 "pod %s/%s, container %s",
                 pod->metadata.namespace ? pod->metadata.namespace : "",
                 pod->metadata.name ? pod->metadata.name : "",
                 c->name);
        r = xp_image_hold_for(store, (*ret)->id, holder, what, err);
        if (r < 0)
                return r;
        *ret_layers = calloc((*ret)->n_layers + 1, sizeof(char *));
        if (!*ret_layers)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < (*ret)->n_layers; i++)
                (*ret_layers)[i] = (*ret)->layers[i];
        return 0;
}

int xp_agent_container_launch(const struct xp_agent_launch_in *in,
                              struct xp_launch **ret,
                              struct xp_agent_launch_keep *keep,
                              struct xp_error *err)
{
        const struct xp_runtime_class *cls;
        const struct xp_container *c;
        int r;

        r = xp_launch_runtime_class(in->pod, in->policy, &cls, err);
        if (r < 0)
                return -EPERM;
        if (!xp_launch_runs_images(cls))
                return xp_launch_build(in->pod,
                                       in->container,
                                       in->init,
                                       in->attempt,
                                       in->node,
                                       in->lookup,
                                       NULL,
                                       in->pids_max,
                                       in->policy,
                                       ret,
                                       err);
        c = find(in->pod, in->container, in->init);
        if (!c)
                return xp_errorf(err, -ENOENT, "pod has no container %s", in->container);
        if (!c->image || !*c->image)
                /* Kubernetes refuses such a pod at create; here it names what to do */
                return xp_errorf(
                    err,
                    -EINVAL,
                    "container %s has no image: runtime class %s runs containers from images (name an image, or set runtimeClassName: process to run its command on the node)",
                    c->name,
                    cls->name);
        r = take_image(in->images, in->pod, c, &keep->image, &keep->layers, err);
        if (r < 0)
                return r;
        return xp_launch_build_image(
            in->pod,
            in->container,
            in->init,
            in->attempt,
            in->node,
            in->pids_max,
            in->policy,
            &(struct xp_launch_image){.runtime = cls, .image = keep->image, .layers = keep->layers},
            ret,
            err);
}

void xp_agent_launch_keep_done(struct xp_agent_launch_keep *keep)
{
        xp_image_free(keep->image);
        free(keep->layers);
        *keep = (struct xp_agent_launch_keep){0};
}

bool xp_agent_runs_images(const struct xp_agent *a, const struct xp_pod *pod)
{
        const struct xp_runtime_class *cls;

        return xp_launch_runtime_class(pod, &a->policy, &cls, NULL) >= 0 &&
               xp_launch_runs_images(cls);
}
