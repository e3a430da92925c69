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
#include "podconfig.h"
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

/* A fieldRef as the kubelet resolves it for env (podconfig_downward.c). */
static int field_ref(const struct xp_pod *pod,
                     const struct xp_node *node,
                     const json_t *ref,
                     const char *where,
                     char **ret,
                     struct xp_error *err)
{
        const char *path = json_string_value(json_object_get(ref, "fieldPath"));
        int r;

        if (!path)
                return xp_errorf(err, -EINVAL, "%s.fieldRef.fieldPath: missing", where);
        r = xp_downward_field(pod, node, path, false, ret);
        if (r == -EINVAL)
                return xp_errorf(err,
                                 r,
                                 "%s.fieldRef.fieldPath: \"%s\" is not supported (%s)",
                                 where,
                                 path,
                                 XP_DOWNWARD_ENV_PATHS);
        return r;
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
                        r = xp_downward_resource(pod,
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

/* The container's environment: xpool's defaults, the devices' variables, the `kubernetes`
 * Service's, then the spec's, which override them and may name them in $(VAR) as the kubelet's. */
int launch_env_build(const struct xp_pod *pod,
                     const struct xp_container *c,
                     const char *cpath,
                     const struct xp_node *node,
                     const struct xp_placement *devices,
                     const struct xp_launch *l,
                     bool image,
                     const char *api_host,
                     unsigned api_port,
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
        if (api_host && (r = launch_env_add_kubernetes(env, api_host, api_port)) < 0)
                return r;
        return add_spec_env(pod, c, cpath, node, env, err);
}
