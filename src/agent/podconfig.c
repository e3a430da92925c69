/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's env from ConfigMaps and Secrets (podconfig.h), as the kubelet's
 * makeEnvironmentVariables builds it: envFrom first (each key with the prefix; keys that are no
 * variable names skipped with an event), then env, whose valueFrom configMapKeyRef/secretKeyRef
 * read one key. A missing object or key is the kubelet's error unless optional.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podconfig.h"
#include "xpool/base64.h"
#include "xpool/macro.h"

static const char *kind_word(const char *resource)
{
        return strcmp(resource, "secrets") == 0 ? "secret" : "configmap";
}

int xp_podconfig_read(struct xp_podconfig_reader *r,
                      const char *resource,
                      const char *name,
                      const json_t **ret,
                      struct xp_error *err)
{
        _cleanup_free_ char *key = NULL;
        json_t *object = NULL, *seen;
        int rc;

        if (asprintf(&key, "%s/%s", resource, name) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        if (!r->seen && !(r->seen = json_object()))
                return xp_errorf(err, -ENOMEM, "out of memory");
        seen = json_object_get(r->seen, key);
        if (!seen) {
                rc = r->get(resource, r->ns, name, &object, r->userdata, err);
                if (rc < 0 && rc != -ENOENT)
                        return rc;
                seen = rc < 0 ? json_null() : object;
                if (json_object_set_new(r->seen, key, seen) < 0)
                        return xp_errorf(err, -ENOMEM, "out of memory");
        }
        *ret = json_is_null(seen) ? NULL : seen;
        return *ret ? 0 : -ENOENT;
}

int xp_podconfig_value(
    const char *resource, const json_t *object, const char *key, char **ret, size_t *ret_len)
{
        bool secret = strcmp(resource, "secrets") == 0;
        const char *text = json_string_value(json_object_get(json_object_get(object, "data"), key));
        char *raw = NULL, *copy;
        size_t len = 0;

        if (!secret && text) {
                *ret = strdup(text);
                *ret_len = strlen(text);
                return *ret ? 0 : -ENOMEM;
        }
        if (!text) /* a ConfigMap's binaryData is base64 as a Secret's data */
                text = secret ? NULL
                              : json_string_value(
                                    json_object_get(json_object_get(object, "binaryData"), key));
        if (!text)
                return -ENOENT;
        if (xp_base64_decode(text, strlen(text), &raw, &len) < 0)
                return -EBADMSG;
        copy = realloc(raw, len + 1);
        if (!copy) {
                free(raw);
                return -ENOMEM;
        }
        copy[len] = 0;
        *ret = copy;
        *ret_len = len;
        return 0;
}

/* The kubelet's test of an envFrom key (validation.IsEnvVarName): [-._a-zA-Z][-._a-zA-Z0-9]*. */
static bool env_var_name(const char *s)
{
        static const char first[] = "-._abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

        if (!*s || !strchr(first, *s))
                return false;
        for (s++; *s; s++)
                if (!strchr(first, *s) && !(*s >= '0' && *s <= '9'))
                        return false;
        return true;
}

/* value with each '$' doubled: $(VAR) expansion leaves it as it is. Caller frees. */
static char *escaped(const char *value)
{
        size_t n = 0;
        char *out, *o;

        for (const char *p = value; *p; p++)
                n += *p == '$' ? 2 : 1;
        out = o = malloc(n + 1);
        if (!out)
                return NULL;
        for (const char *p = value; *p; p++) {
                if (*p == '$')
                        *o++ = '$';
                *o++ = *p;
        }
        *o = 0;
        return out;
}

static int add_var(json_t *env, const char *name, const char *value)
{
        _cleanup_free_ char *e = escaped(value);

        if (!e)
                return -ENOMEM;
        return json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", e));
}

struct build {
        struct xp_podconfig_reader *reader;
        json_t *env;
        char *wait;    /* the kubelet's message when a start must wait */
        FILE *invalid; /* InvalidEnvironmentVariableNames messages */
        struct xp_error *err;
};

__attribute__((format(printf, 2, 3))) static int wait_for(struct build *b, const char *fmt, ...)
{
        va_list ap;
        int r;

        free(b->wait);
        b->wait = NULL;
        va_start(ap, fmt);
        r = vasprintf(&b->wait, fmt, ap);
        va_end(ap);
        if (r < 0)
                b->wait = NULL;
        return r < 0 ? -ENOMEM : 0;
}

/* One envFrom source: its keys as variables (1), a wait (0), or -errno. */
static int env_from(struct build *b, const json_t *source)
{
        bool cm = json_object_get(source, "configMapRef") != NULL;
        const char *resource = cm ? "configmaps" : "secrets";
        const json_t *ref = json_object_get(source, cm ? "configMapRef" : "secretRef"), *object, *v;
        const char *name = json_string_value(json_object_get(ref, "name")), *key;
        const char *prefix = json_string_value(json_object_get(source, "prefix"));
        _cleanup_free_ char *bad = NULL;
        int r;

        if (!name)
                return 1;
        r = xp_podconfig_read(b->reader, resource, name, &object, b->err);
        if (r == -ENOENT)
                return json_is_true(json_object_get(ref, "optional"))
                           ? 1
                           : (wait_for(b, "%s \"%s\" not found", kind_word(resource), name), 0);
        if (r < 0)
                return r;
        json_object_foreach((json_t *)json_object_get(object, "data"), key, v)
        {
                _cleanup_free_ char *var = NULL, *value = NULL;
                size_t len;

                if (asprintf(&var, "%s%s", prefix ? prefix : "", key) < 0)
                        return -ENOMEM;
                if (!env_var_name(var)) {
                        char *more = NULL;

                        if (asprintf(&more, "%s%s%s", bad ? bad : "", bad ? ", " : "", var) < 0)
                                return -ENOMEM;
                        free(bad);
                        bad = more;
                        continue;
                }
                r = xp_podconfig_value(resource, object, key, &value, &len);
                if (r < 0 || (r = add_var(b->env, var, value)) < 0)
                        return r == -ENOENT ? -EBADMSG : r;
        }
        if (bad)
                fprintf(b->invalid,
                        "Keys [%s] from the EnvFrom %s %s/%s were skipped since they are "
                        "considered invalid environment variable names.\n",
                        bad,
                        cm ? "configMap" : "secret",
                        b->reader->ns,
                        name);
        return 1;
}

/* One env entry with valueFrom configMapKeyRef/secretKeyRef: 1 done, 0 a wait, -errno. */
static int env_ref(struct build *b, const char *var, const json_t *from)
{
        bool cm = json_object_get(from, "configMapKeyRef") != NULL;
        const char *resource = cm ? "configmaps" : "secrets";
        const json_t *ref = json_object_get(from, cm ? "configMapKeyRef" : "secretKeyRef"), *object;
        const char *name = json_string_value(json_object_get(ref, "name"));
        const char *key = json_string_value(json_object_get(ref, "key"));
        bool optional = json_is_true(json_object_get(ref, "optional"));
        _cleanup_free_ char *value = NULL;
        size_t len;
        int r;

        r = xp_podconfig_read(b->reader, resource, name ? name : "", &object, b->err);
        if (r == -ENOENT)
                return optional
                           ? 1
                           : (wait_for(
                                  b, "%s \"%s\" not found", kind_word(resource), name ? name : ""),
                              0);
        if (r < 0)
                return r;
        r = xp_podconfig_value(resource, object, key ? key : "", &value, &len);
        if (r == -ENOENT)
                return optional ? 1
                                : (wait_for(b,
                                            cm ? "couldn't find key %s in ConfigMap %s/%s"
                                               : "couldn't find key %s in Secret %s/%s",
                                            key ? key : "",
                                            b->reader->ns,
                                            name),
                                   0);
        if (r < 0)
                return r;
        r = add_var(b->env, var, value);
        return r < 0 ? r : 1;
}

/* The container's new env into b->env: 1, 0 (a wait), -errno. */
static int build_env(struct build *b, const json_t *c)
{
        const json_t *e;
        size_t i;
        int r;

        json_array_foreach(json_object_get(c, "envFrom"), i, e)
        {
                if ((r = env_from(b, e)) <= 0)
                        return r;
        }
        json_array_foreach(json_object_get(c, "env"), i, e)
        {
                const json_t *from = json_object_get(e, "valueFrom");
                const char *var = json_string_value(json_object_get(e, "name"));

                if (var && (json_object_get(from, "configMapKeyRef") ||
                            json_object_get(from, "secretKeyRef")))
                        r = env_ref(b, var, from);
                else
                        r = json_array_append(b->env, (json_t *)e) < 0 ? -ENOMEM : 1;
                if (r <= 0)
                        return r;
        }
        return 1;
}

static json_t *find_container(json_t *pod, const char *name, bool init)
{
        json_t *list = json_object_get(json_object_get(pod, "spec"),
                                       init ? "initContainers" : "containers"),
               *c;
        size_t i;

        json_array_foreach(list, i, c)
        {
                if (json_is_string(json_object_get(c, "name")) &&
                    strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
                        return c;
        }
        return NULL;
}

int xp_podconfig_env(const json_t *pod,
                     const char *container,
                     bool init,
                     struct xp_podconfig_reader *reader,
                     json_t **ret_pod,
                     char **ret_wait,
                     char **ret_invalid,
                     struct xp_error *err)
{
        json_auto_t *copy = json_deep_copy(pod);
        struct build b = {.reader = reader, .env = json_array(), .err = err};
        char *invalid = NULL;
        size_t invalid_len = 0;
        json_t *c;
        int r;

        *ret_wait = *ret_invalid = NULL;
        b.invalid = open_memstream(&invalid, &invalid_len);
        c = copy ? find_container(copy, container, init) : NULL;
        if (!b.env || !b.invalid || !copy) {
                r = xp_errorf(err, -ENOMEM, "out of memory");
        } else if (!c) {
                r = xp_errorf(err, -ENOENT, "pod has no container %s", container);
        } else {
                r = build_env(&b, c);
                if (r > 0 &&
                    (json_object_set(c, "env", b.env) < 0 || json_object_del(c, "envFrom") < -1))
                        r = xp_errorf(err, -ENOMEM, "out of memory");
                else if (r < 0 && !xp_error_message(err)[0])
                        xp_errorf(err, r, "%s: %s", container, strerror(-r));
        }
        if (b.invalid)
                fclose(b.invalid);
        json_decref(b.env);
        if (r > 0)
                *ret_pod = TAKE_PTR(copy);
        if (r == 0)
                *ret_wait = TAKE_PTR(b.wait);
        free(b.wait);
        if (r > 0 && invalid && invalid_len > 0)
                *ret_invalid = TAKE_PTR(invalid);
        free(invalid);
        return r;
}
