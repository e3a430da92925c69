/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's environment as the kubelet builds it (launch_env.c): the spec's env with
 * $(VAR) expansion and the downward API, xpool's variables, the devices' variables. Values from
 * ConfigMaps and Secrets (env valueFrom, envFrom) were put in the spec before (podconfig.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_internal.h"
#include "xpool/devenv.h"
#include "xpool/placement.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"

void launch_env_done(struct env_list *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].value);
        }
        free(l->items);
        *l = (struct env_list){0};
}

const char *launch_env_get(const struct env_list *l, const char *name, size_t len)
{
        for (size_t i = 0; i < l->n; i++)
                if (strlen(l->items[i].name) == len && memcmp(l->items[i].name, name, len) == 0)
                        return l->items[i].value;
        return NULL;
}

/* Sets name (a later definition replaces an earlier one in place); takes value. */
int launch_env_set(struct env_list *l, const char *name, char *value)
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
char *launch_expand(const char *s, const struct env_list *vars)
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
                        value = launch_env_get(vars, p + 2, (size_t)(close - p - 2));
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
        else if (strcmp(path, "status.hostIP") == 0)
                v = host_ip(pod, node);
        else if (strcmp(path, "status.podIP") == 0)
                /* the pod's own address once its network is set up (the agent puts it in the
                 * pod's status before the launch), else the node's (hostNetwork) */
                v = pod->status.pod_ip ? pod->status.pod_ip : host_ip(pod, node);
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
                            kind && (strcmp(kind, "configMapKeyRef") == 0 ||
                                     strcmp(kind, "secretKeyRef") == 0)
                                ? "%s.%s: not read: the agent reads ConfigMaps and Secrets before the launch (src/agent/podconfig.c)"
                                : "%s.%s: not supported (fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef are)",
                            where,
                            kind ? kind : "?");
                } else {
                        value = launch_expand(or_empty(e->value), env);
                        r = value ? 0 : -ENOMEM;
                }
                if (r < 0)
                        return r;
                r = launch_env_set(env, e->name, value);
                if (r == -E2BIG)
                        return xp_errorf(
                            err, r, "%s.env: more than %d variables", cpath, XP_LAUNCH_ENV_MAX);
                if (r < 0)
                        return r;
        }
        return 0;
}

int launch_env_array(const struct env_list *env, char ***ret)
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

/* The container's environment: xpool's defaults, the devices' variables, then the spec's. */
int launch_env_build(const struct xp_pod *pod,
                     const struct xp_container *c,
                     const char *cpath,
                     const struct xp_node *node,
                     const struct xp_placement *devices,
                     const struct xp_launch *l,
                     bool image,
                     struct env_list *env,
                     struct xp_error *err)
{
        _cleanup_(xp_devenv_freep) char **devenv = NULL;
        int r;

        /* defaults first: the spec's env overrides them; an image brings its own PATH, and its
         * user's HOME comes from its /etc/passwd */
        if (!image &&
            ((r = launch_env_set(env, "PATH", strdup(LAUNCH_DEFAULT_PATH))) < 0 ||
             (r = launch_env_set(
                  env, "HOME", strdup(l->launch.set_user && l->launch.uid != 0 ? "/" : "/root"))) <
                 0))
                return r;
        if ((r = launch_env_set(env, "XPOOL_POD_NAME", strdup(or_empty(pod->metadata.name)))) < 0 ||
            (r = launch_env_set(
                 env, "XPOOL_POD_NAMESPACE", strdup(or_empty(pod->metadata.namespace)))) < 0 ||
            (r = launch_env_set(env, "XPOOL_POD_UID", strdup(or_empty(pod->metadata.uid)))) < 0 ||
            (r = launch_env_set(env, "XPOOL_NODE_NAME", strdup(or_empty(pod->spec.node_name)))) < 0)
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
                        r = launch_env_set(env, *e, strdup(eq + 1));
                        *eq = '=';
                        if (r < 0)
                                return r;
                }
        }
        return add_spec_env(pod, c, cpath, node, env, err);
}
