/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image configs (the OCI image spec's config.md, Docker's image JSON): the runtime part a
 * container starts from and the layers' diff_ids. Pure, bounded, fuzzed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

void xp_image_config_done(struct xp_image_config *c)
{
        if (!c)
                return;
        xp_image_strv_free(c->entrypoint);
        xp_image_strv_free(c->cmd);
        xp_image_strv_free(c->env);
        free(c->working_dir);
        free(c->user);
        xp_image_strv_free(c->exposed_ports);
        xp_image_strv_free(c->volumes);
        xp_image_strv_free(c->labels);
        free(c->stop_signal);
        free(c->os);
        free(c->architecture);
        free(c->variant);
        *c = (struct xp_image_config){0};
}

static int string_field(
    const json_t *obj, const char *key, const char *where, char **ret, struct xp_error *err)
{
        const json_t *v = json_object_get(obj, key);

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return xp_errorf(err, -EBADMSG, "%s%s: must be a string", where, key);
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

/* A NULL-terminated array of n entries into *ret (the caller's to free even on a later failure);
 * NULL with err for more than XP_IMAGE_CONFIG_ITEMS, or out of memory. */
static int new_items(const char *key, size_t n, char ***ret, struct xp_error *err)
{
        if (n > XP_IMAGE_CONFIG_ITEMS)
                return xp_errorf(
                    err, -EBADMSG, "config.%s: more than %d entries", key, XP_IMAGE_CONFIG_ITEMS);
        *ret = calloc(n + 1, sizeof(char *));
        return *ret ? 0 : -ENOMEM;
}

/* An array of strings (Entrypoint, Cmd, Env). null: unset. */
static int strv_field(const json_t *obj, const char *key, char ***ret, struct xp_error *err)
{
        const json_t *v = json_object_get(obj, key);
        size_t n = json_array_size(v);
        char **out;
        int r;

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v))
                return xp_errorf(err, -EBADMSG, "config.%s: must be an array of strings", key);
        if ((r = new_items(key, n, ret, err)) < 0)
                return r;
        out = *ret;
        for (size_t i = 0; i < n; i++) {
                const json_t *s = json_array_get(v, i);

                if (!json_is_string(s))
                        return xp_errorf(err, -EBADMSG, "config.%s[%zu]: must be a string", key, i);
                if (!(out[i] = strdup(json_string_value(s))))
                        return -ENOMEM;
        }
        return 0;
}

/* The keys of an object ({"80/tcp": {}}), or "key=value" of a string map (Labels). */
static int
keys_field(const json_t *obj, const char *key, bool values, char ***ret, struct xp_error *err)
{
        const json_t *v = json_object_get(obj, key), *value;
        size_t n = json_object_size(v), i = 0;
        const char *k;
        char **out;
        int r;

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return xp_errorf(err, -EBADMSG, "config.%s: must be an object", key);
        if ((r = new_items(key, n, ret, err)) < 0)
                return r;
        out = *ret;
        json_object_foreach((json_t *)v, k, value)
        {
                if (values && !json_is_string(value))
                        return xp_errorf(err, -EBADMSG, "config.%s.%s: must be a string", key, k);
                if (values ? asprintf(&out[i], "%s=%s", k, json_string_value(value)) < 0
                           : !(out[i] = strdup(k))) {
                        out[i] = NULL;
                        return -ENOMEM;
                }
                i++;
        }
        return 0;
}

static int runtime_part(const json_t *c, struct xp_image_config *ret, struct xp_error *err)
{
        int r;

        if (!c || json_is_null(c))
                return 0;
        if (!json_is_object(c))
                return xp_errorf(err, -EBADMSG, "config: must be an object");
        if ((r = strv_field(c, "Entrypoint", &ret->entrypoint, err)) < 0 ||
            (r = strv_field(c, "Cmd", &ret->cmd, err)) < 0 ||
            (r = strv_field(c, "Env", &ret->env, err)) < 0 ||
            (r = string_field(c, "WorkingDir", "config.", &ret->working_dir, err)) < 0 ||
            (r = string_field(c, "User", "config.", &ret->user, err)) < 0 ||
            (r = string_field(c, "StopSignal", "config.", &ret->stop_signal, err)) < 0 ||
            (r = keys_field(c, "ExposedPorts", false, &ret->exposed_ports, err)) < 0 ||
            (r = keys_field(c, "Volumes", false, &ret->volumes, err)) < 0 ||
            (r = keys_field(c, "Labels", true, &ret->labels, err)) < 0)
                return r;
        for (char **e = ret->env; e && *e; e++)
                if (!strchr(*e, '=') || **e == '=')
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "config.Env[%td]: \"%s\" is not NAME=value",
                                         e - ret->env,
                                         *e);
        if (ret->working_dir && ret->working_dir[0] && ret->working_dir[0] != '/')
                return xp_errorf(err,
                                 -EBADMSG,
                                 "config.WorkingDir: \"%s\" is not an absolute path",
                                 ret->working_dir);
        return 0;
}

static int diff_ids(const json_t *rootfs, char ***ret, size_t *ret_n, struct xp_error *err)
{
        const json_t *ids = json_object_get(rootfs, "diff_ids");
        const char *type = json_string_value(json_object_get(rootfs, "type"));
        size_t n = json_array_size(ids);
        char **out;

        if (!json_is_object(rootfs))
                return xp_errorf(err, -EBADMSG, "rootfs: must be an object");
        if (!type || strcmp(type, "layers") != 0)
                return xp_errorf(err, -EBADMSG, "rootfs.type: must be \"layers\"");
        if (!json_is_array(ids))
                return xp_errorf(err, -EBADMSG, "rootfs.diff_ids: must be an array");
        if (n > XP_IMAGE_LAYERS_MAX)
                return xp_errorf(
                    err, -EBADMSG, "rootfs.diff_ids: more than %d layers", XP_IMAGE_LAYERS_MAX);
        out = calloc(n + 1, sizeof(*out));
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *id = json_string_value(json_array_get(ids, i));

                if (!id || !xp_image_digest_ok(id)) {
                        xp_image_strv_free(out);
                        return xp_errorf(
                            err,
                            -EBADMSG,
                            "rootfs.diff_ids[%zu]: must be sha256:<64 lower-case hex digits>",
                            i);
                }
                if (!(out[i] = strdup(id))) {
                        xp_image_strv_free(out);
                        return -ENOMEM;
                }
        }
        *ret = out;
        *ret_n = n;
        return 0;
}

static int parse_root(const json_t *root,
                      struct xp_image_config *c,
                      char ***ret_ids,
                      size_t *ret_n,
                      struct xp_error *err)
{
        int r;

        if (!json_is_object(root))
                return xp_errorf(err, -EBADMSG, "not a JSON object");
        if ((r = string_field(root, "os", "", &c->os, err)) < 0 ||
            (r = string_field(root, "architecture", "", &c->architecture, err)) < 0 ||
            (r = string_field(root, "variant", "", &c->variant, err)) < 0 ||
            (r = runtime_part(json_object_get(root, "config"), c, err)) < 0)
                return r;
        return diff_ids(json_object_get(root, "rootfs"), ret_ids, ret_n, err);
}

int xp_image_config_parse(const char *data,
                          size_t size,
                          struct xp_image_config *ret,
                          char ***ret_diff_ids,
                          size_t *ret_n,
                          struct xp_error *err)
{
        struct xp_image_config c = {0};
        char **ids = NULL;
        size_t n = 0;
        json_t *root = NULL;
        int r;

        r = xp_image_json_load(data, size, XP_IMAGE_CONFIG_MAX, &root, err);
        if (r < 0)
                return r;
        r = parse_root(root, &c, &ids, &n, err);
        json_decref(root);
        if (r < 0) {
                xp_image_config_done(&c);
                return r;
        }
        *ret = c;
        *ret_diff_ids = ids;
        *ret_n = n;
        return 0;
}
