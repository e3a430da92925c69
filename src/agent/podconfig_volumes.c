/* SPDX-License-Identifier: Apache-2.0 */
/*
 * configMap, secret and projected volumes as the files the kubelet's volume plugins write
 * (podconfig.h): every key of the object, or only its items (key -> path, with their mode),
 * defaultMode otherwise; a missing object or key waits with the kubelet's FailedMount message
 * unless optional. Pure: podconfig_write.c puts the files on disk.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podconfig.h"
#include "xpool/doc.h"
#include "xpool/macro.h"

#define N_OF(a)      (sizeof(a) / sizeof((a)[0]))
#define DEFAULT_MODE 0644 /* the API's default defaultMode */

struct vbuild {
        struct xp_podconfig_reader *reader;
        struct xp_podconfig_files *files;
        const char *volume;
        char *wait;
        struct xp_error *err;
};

void xp_podconfig_files_clear(struct xp_podconfig_files *f)
{
        for (size_t i = 0; i < f->n; i++) {
                free(f->v[i].path);
                free(f->v[i].data);
        }
        free(f->v);
        f->v = NULL;
        f->n = 0;
}

__attribute__((format(printf, 2, 3))) static int wait_for(struct vbuild *b, const char *fmt, ...)
{
        _cleanup_free_ char *why = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&why, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(b->wait);
        if (asprintf(&b->wait, "MountVolume.SetUp failed for volume \"%s\" : %s", b->volume, why) <
            0) {
                b->wait = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* A relative path without "." or ".." components and not starting with "..", as the API's
 * validation of items[].path asks. */
static bool item_path(const char *p)
{
        const char *c = p;

        if (!p || !*p || *p == '/' || strncmp(p, "..", 2) == 0)
                return false;
        while (c) {
                size_t n = strcspn(c, "/");

                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && strncmp(c, "..", 2) == 0))
                        return false;
                c = c[n] ? c + n + 1 : NULL;
        }
        return true;
}

/* The mode of an items[] entry or a volume's defaultMode: permission bits (0 to 0777). */
static int mode_of(struct vbuild *b, const json_t *v, unsigned fallback, unsigned *ret)
{
        json_int_t m;

        if (!v) {
                *ret = fallback;
                return 0;
        }
        m = json_is_integer(v) ? json_integer_value(v) : -1;
        if (m < 0 || m > 0777)
                return xp_errorf(b->err,
                                 -EINVAL,
                                 "volume %s: mode %lld is not between 0 and 0777 (511)",
                                 b->volume,
                                 (long long)m);
        *ret = (unsigned)m;
        return 0;
}

/* A file of data (taken, data_len bytes) at path. */
static int add_data(struct vbuild *b, const char *path, char *data, size_t len, unsigned mode)
{
        struct xp_podconfig_file *v, f = {.mode = mode, .data = data, .len = len};

        if (!item_path(path)) {
                free(data);
                return xp_errorf(b->err,
                                 -EINVAL,
                                 "volume %s: path \"%s\" is not a relative path inside the volume",
                                 b->volume,
                                 path ? path : "");
        }
        for (size_t i = 0; i < b->files->n; i++)
                if (strcmp(b->files->v[i].path, path) == 0) {
                        free(data);
                        return xp_errorf(
                            b->err, -EINVAL, "volume %s: path \"%s\" twice", b->volume, path);
                }
        f.path = strdup(path);
        v = f.path ? reallocarray(b->files->v, b->files->n + 1, sizeof(*v)) : NULL;
        if (!v) {
                free(f.path);
                free(f.data);
                return xp_errorf(b->err, -ENOMEM, "out of memory");
        }
        b->files->v = v;
        v[b->files->n++] = f;
        return 0;
}

static int add_file(struct vbuild *b,
                    const char *resource,
                    const json_t *object,
                    const char *key,
                    const char *path,
                    unsigned mode)
{
        char *data = NULL;
        size_t len = 0;
        int r = xp_podconfig_value(resource, object, key, &data, &len);

        return r < 0 ? r : add_data(b, path, data, len, mode);
}

/* Every key of the object's data (and a ConfigMap's binaryData), each as a file of its name. */
static int all_keys(struct vbuild *b, const char *resource, const json_t *object, unsigned mode)
{
        static const char *const fields[] = {"data", "binaryData"};
        const char *key;
        json_t *value;
        int r;

        for (size_t i = 0; i < N_OF(fields); i++)
                json_object_foreach(json_object_get(object, fields[i]), key, value)
                {
                        r = add_file(b, resource, object, key, key, mode);
                        if (r < 0)
                                return r;
                }
        return 1;
}

/* One ConfigMap or Secret (src: {name|secretName, items, optional}): 1, 0 (wait) or -errno. */
static int source(struct vbuild *b, const char *resource, const json_t *src, unsigned mode)
{
        bool secret = strcmp(resource, "secrets") == 0;
        bool optional = json_is_true(json_object_get(src, "optional"));
        const char *name = json_string_value(json_object_get(src, "name"));
        const json_t *object, *items = json_object_get(src, "items"), *item;
        size_t i;
        int r;

        if (!name && secret)
                name = json_string_value(json_object_get(src, "secretName"));
        if (!name || !*name)
                return xp_errorf(b->err, -EINVAL, "volume %s: names no %s", b->volume, resource);
        r = xp_podconfig_read(b->reader, resource, name, &object, b->err);
        if (r == -ENOENT)
                return optional
                           ? 1
                           : wait_for(
                                 b, "%s \"%s\" not found", secret ? "secret" : "configmap", name);
        if (r < 0)
                return r;
        if (json_array_size(items) == 0)
                return all_keys(b, resource, object, mode);
        json_array_foreach(items, i, item)
        {
                const char *key = json_string_value(json_object_get(item, "key"));
                unsigned m = mode;

                r = mode_of(b, json_object_get(item, "mode"), mode, &m);
                if (r >= 0)
                        r = add_file(b,
                                     resource,
                                     object,
                                     key ? key : "",
                                     json_string_value(json_object_get(item, "path")),
                                     m);
                if (r == -ENOENT && optional)
                        continue;
                if (r == -ENOENT)
                        return wait_for(b,
                                        secret ? "secret references non-existent secret key: %s"
                                               : "configmap references non-existent config key: %s",
                                        key ? key : "");
                if (r == -EBADMSG)
                        return xp_errorf(b->err,
                                         r,
                                         "volume %s: key %s of %s %s is not base64",
                                         b->volume,
                                         key,
                                         resource,
                                         name);
                if (r < 0)
                        return r;
        }
        return 1;
}

/* One item of a downwardAPI volume or source: its file's value. */
static int downward_value(struct vbuild *b, const json_t *item, size_t i, char **ret)
{
        const json_t *field = json_object_get(item, "fieldRef");
        const char *path = json_string_value(json_object_get(field, "fieldPath"));
        const json_t *res = json_object_get(item, "resourceFieldRef");
        const char *cname = json_string_value(json_object_get(res, "containerName"));
        const struct xp_pod *pod = b->reader->pod;
        char where[96];
        int r;

        snprintf(where, sizeof(where), "volume %s: items[%zu]", b->volume, i);
        if (!pod)
                return xp_errorf(b->err, -EINVAL, "%s: no pod to take values from", where);
        if (field) {
                r = path ? xp_downward_field(pod, b->reader->node, path, true, ret) : -EINVAL;
                if (r == -EINVAL)
                        return xp_errorf(
                            b->err,
                            r,
                            "%s.fieldRef.fieldPath: \"%s\" is not supported (metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations, metadata.labels['KEY'], metadata.annotations['KEY'])",
                            where,
                            path ? path : "");
                return r;
        }
        if (!res || !cname || !*cname)
                return xp_errorf(b->err,
                                 -EINVAL,
                                 "%s: fieldRef or resourceFieldRef with containerName is required",
                                 where);
        return xp_downward_resource(pod, NULL, b->reader->node, res, where, ret, b->err);
}

/* A downwardAPI volume's or source's items (dw: {items, defaultMode}), each a file. */
static int downward(struct vbuild *b, const json_t *dw, unsigned mode)
{
        const json_t *item;
        size_t i;
        int r;

        json_array_foreach(json_object_get(dw, "items"), i, item)
        {
                char *value = NULL;
                unsigned m = mode;

                r = mode_of(b, json_object_get(item, "mode"), mode, &m);
                if (r >= 0)
                        r = downward_value(b, item, i, &value);
                if (r >= 0)
                        r = add_data(b,
                                     json_string_value(json_object_get(item, "path")),
                                     value,
                                     value ? strlen(value) : 0,
                                     m);
                if (r < 0)
                        return r;
        }
        return 1;
}

/* A serviceAccountToken source: a token bound to the pod at its path (podconfig_token.c). */
static int sa_token(struct vbuild *b, const json_t *src, size_t i, unsigned mode)
{
        const char *path = xp_json_str_at(src, "path", NULL);
        const json_t *exp = json_object_get(src, "expirationSeconds");
        int64_t seconds = exp ? json_integer_value(exp) : XP_PODCONFIG_TOKEN_SECONDS_DEFAULT;
        char *token = NULL;
        int r;

        if (!b->reader->token || !b->reader->pod_json)
                return xp_errorf(b->err,
                                 -EPERM,
                                 "volume %s: sources[%zu]: no serviceAccountToken source here",
                                 b->volume,
                                 i);
        if (!path || !path[0])
                return xp_errorf(b->err,
                                 -EINVAL,
                                 "volume %s: sources[%zu].serviceAccountToken.path: Required value",
                                 b->volume,
                                 i);
        if (seconds < XP_PODCONFIG_TOKEN_SECONDS_MIN)
                return xp_errorf(b->err,
                                 -EINVAL,
                                 "volume %s: sources[%zu].serviceAccountToken.expirationSeconds: "
                                 "Invalid value: %lld: may not specify a duration less than 10 "
                                 "minutes",
                                 b->volume,
                                 i,
                                 (long long)seconds);
        r = b->reader->token(b->reader->pod_json,
                             xp_json_str_at(src, "audience", NULL),
                             seconds,
                             b->reader->token_userdata,
                             &token,
                             b->err);
        if (r >= 0)
                r = add_data(b, path, token, strlen(token), mode);
        return r < 0 ? r : 1;
}

/* A projected volume's configMap, secret, downwardAPI and serviceAccountToken sources, in
 * order. */
static int projected(struct vbuild *b, const json_t *p)
{
        const json_t *src;
        unsigned mode = DEFAULT_MODE;
        size_t i;
        int r = mode_of(b, json_object_get(p, "defaultMode"), DEFAULT_MODE, &mode);

        json_array_foreach(json_object_get(p, "sources"), i, src)
        {
                if (r < 0)
                        return r;
                if (json_object_get(src, "configMap"))
                        r = source(b, "configmaps", json_object_get(src, "configMap"), mode);
                else if (json_object_get(src, "secret"))
                        r = source(b, "secrets", json_object_get(src, "secret"), mode);
                else if (json_object_get(src, "downwardAPI"))
                        r = downward(b, json_object_get(src, "downwardAPI"), mode);
                else if (json_object_get(src, "serviceAccountToken"))
                        r = sa_token(b, json_object_get(src, "serviceAccountToken"), i, mode);
                else
                        r = xp_errorf(b->err,
                                      -EPERM,
                                      "volume %s: sources[%zu]: only configMap, secret, "
                                      "downwardAPI and serviceAccountToken sources are supported "
                                      "by xpool",
                                      b->volume,
                                      i);
                if (r == 0)
                        return 0;
        }
        return r < 0 ? r : 1;
}

int xp_podconfig_volume_files(const json_t *vol,
                              struct xp_podconfig_reader *reader,
                              struct xp_podconfig_files *ret,
                              char **ret_wait,
                              struct xp_error *err)
{
        struct vbuild b = {.reader = reader, .files = ret, .err = err};
        const char *names[] = {"configMap", "secret"}, *resources[] = {"configmaps", "secrets"};
        unsigned mode = DEFAULT_MODE;
        int r = -EPERM;

        *ret_wait = NULL;
        b.volume = json_string_value(json_object_get(vol, "name"));
        if (!b.volume)
                b.volume = "";
        for (size_t i = 0; i < N_OF(names); i++) {
                const json_t *src = json_object_get(vol, names[i]);

                if (!src)
                        continue;
                r = mode_of(&b, json_object_get(src, "defaultMode"), DEFAULT_MODE, &mode);
                if (r >= 0)
                        r = source(&b, resources[i], src, mode);
        }
        if (r == -EPERM && json_object_get(vol, "downwardAPI")) {
                const json_t *dw = json_object_get(vol, "downwardAPI");

                r = mode_of(&b, json_object_get(dw, "defaultMode"), DEFAULT_MODE, &mode);
                if (r >= 0)
                        r = downward(&b, dw, mode);
        } else if (r == -EPERM && json_object_get(vol, "projected"))
                r = projected(&b, json_object_get(vol, "projected"));
        else if (r == -EPERM && !xp_error_message(err)[0])
                xp_errorf(err,
                          r,
                          "volume %s: not a configMap, secret, projected or downwardAPI volume",
                          b.volume);
        if (r <= 0)
                xp_podconfig_files_clear(ret);
        if (r == 0)
                *ret_wait = TAKE_PTR(b.wait);
        free(b.wait);
        return r;
}
