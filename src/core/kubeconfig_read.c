/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubeconfig fields an xpool client needs, read through the YAML loader so that a problem
 * can point at its line and column.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpool/base64.h"
#include "xpool/fileio.h"
#include "xpool/kubeconfig.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/yaml.h"

struct parse {
        const char *name;
        const struct xp_yaml_document *doc;
        struct xp_error *err;
};

/* Fails with "name:line:column: path: what", the position found from the JSON pointer. */
static int fail_at(const struct parse *p, const char *pointer, const char *path, const char *what)
{
        struct xp_source_entry where;

        if (xp_source_map_lookup(p->doc->map, pointer, &where) == 0 && where.value.line > 0)
                return xp_errorf(p->err,
                                 -EINVAL,
                                 "%s:%u:%u: %s: %s",
                                 p->name,
                                 where.value.line,
                                 where.value.column,
                                 path,
                                 what);
        return xp_errorf(p->err, -EINVAL, "%s: %s: %s", p->name, path, what);
}

/*
 * Finds the element of the named list (clusters, users, contexts) whose name is `name` and
 * returns its member `field` (cluster, user, context) with its index in *ret_index.
 */
static int find_named(const struct parse *p,
                      const char *list,
                      const char *field,
                      const char *name,
                      const json_t **ret,
                      size_t *ret_index)
{
        const json_t *items = json_object_get(p->doc->root, list);
        char pointer[64], path[64], q[XP_QUOTE_MAX];
        size_t i;
        json_t *item;

        if (items && !json_is_array(items) && !json_is_null(items)) {
                snprintf(pointer, sizeof(pointer), "/%s", list);
                return fail_at(p, pointer, list, "must be a list");
        }
        json_array_foreach(items, i, item)
        {
                const json_t *value = json_object_get(item, field);

                if (!xp_streq0(json_string_value(json_object_get(item, "name")), name))
                        continue;
                if (!json_is_object(value)) {
                        snprintf(pointer, sizeof(pointer), "/%s/%zu", list, i);
                        snprintf(path, sizeof(path), "%s[%zu].%s", list, i, field);
                        return fail_at(p, pointer, path, "must be a mapping");
                }
                *ret = value;
                *ret_index = i;
                return 0;
        }
        return xp_errorf(p->err, -ENOENT, "%s: no %s named %s", p->name, field, xp_quote(name, q));
}

/* Copies an optional string member; a present non-string is an error naming its path. */
static int get_string(const struct parse *p,
                      const json_t *object,
                      const char *list,
                      size_t index,
                      const char *field,
                      const char *member,
                      char **ret)
{
        const json_t *value = json_object_get(object, member);
        char pointer[128], path[128];

        if (!value || json_is_null(value))
                return 0;
        if (!json_is_string(value)) {
                snprintf(pointer, sizeof(pointer), "/%s/%zu/%s/%s", list, index, field, member);
                snprintf(path, sizeof(path), "%s[%zu].%s.%s", list, index, field, member);
                return fail_at(p, pointer, path, "must be a string");
        }
        *ret = strdup(json_string_value(value));
        return *ret ? 0 : -ENOMEM;
}

static int
decode_ca(const struct parse *p, const json_t *cluster, size_t index, struct xp_kubeconfig *config)
{
        _cleanup_free_ char *text = NULL;
        char pointer[96], path[96];
        int r = get_string(
            p, cluster, "clusters", index, "cluster", "certificate-authority-data", &text);

        if (r < 0 || !text)
                return r;
        r = xp_base64_decode(text, strlen(text), &config->ca_data, &config->ca_len);
        if (r == -EINVAL) {
                snprintf(pointer,
                         sizeof(pointer),
                         "/clusters/%zu/cluster/certificate-authority-data",
                         index);
                snprintf(
                    path, sizeof(path), "clusters[%zu].cluster.certificate-authority-data", index);
                return fail_at(p, pointer, path, "not valid base64");
        }
        return r;
}

int xp_kubeconfig_parse(const char *data,
                        size_t size,
                        const char *source_name,
                        const char *context,
                        struct xp_kubeconfig *ret,
                        struct xp_error *err)
{
        struct xp_yaml_document *docs = NULL;
        struct xp_kubeconfig config = {0};
        struct parse p = {.name = source_name ? source_name : "<kubeconfig>", .err = err};
        const json_t *ctx, *cluster, *user = NULL, *insecure;
        const char *cluster_name, *user_name;
        size_t n_docs = 0, ctx_i, cluster_i, user_i = 0;
        char q[XP_QUOTE_MAX];
        int r;

        r = xp_yaml_load(data, size, p.name, &docs, &n_docs, err);
        if (r < 0)
                return r;
        if (n_docs != 1 || !json_is_object(docs[0].root)) {
                r = xp_errorf(
                    err, -EINVAL, "%s: not a kubeconfig (expected one YAML mapping)", p.name);
                goto out;
        }
        p.doc = &docs[0];
        if (!context) {
                context = json_string_value(json_object_get(p.doc->root, "current-context"));
                if (!context || !*context) {
                        r = xp_errorf(
                            err,
                            -EINVAL,
                            "%s: current-context is not set: name a context with --context",
                            p.name);
                        goto out;
                }
        }
        r = find_named(&p, "contexts", "context", context, &ctx, &ctx_i);
        if (r < 0)
                goto out;
        cluster_name = json_string_value(json_object_get(ctx, "cluster"));
        user_name = json_string_value(json_object_get(ctx, "user"));
        if (!cluster_name) {
                r = fail_at(&p, "/contexts", "contexts[].context.cluster", "not set");
                goto out;
        }
        r = find_named(&p, "clusters", "cluster", cluster_name, &cluster, &cluster_i);
        if (r < 0) {
                xp_error_prefix(err, r, "context %s", xp_quote(context, q));
                goto out;
        }
        /* A context without a user is allowed: the server decides whether anonymous is enough. */
        if (user_name) {
                r = find_named(&p, "users", "user", user_name, &user, &user_i);
                if (r < 0) {
                        xp_error_prefix(err, r, "context %s", xp_quote(context, q));
                        goto out;
                }
        }
        config.context = strdup(context);
        if (!config.context) {
                r = -ENOMEM;
                goto out;
        }
        r = get_string(&p, ctx, "contexts", ctx_i, "context", "namespace", &config.namespace);
        if (r >= 0)
                r = get_string(
                    &p, cluster, "clusters", cluster_i, "cluster", "server", &config.server);
        if (r >= 0)
                r = get_string(&p,
                               cluster,
                               "clusters",
                               cluster_i,
                               "cluster",
                               "certificate-authority",
                               &config.ca_file);
        if (r >= 0 && user)
                r = get_string(&p, user, "users", user_i, "user", "token", &config.token);
        if (r < 0)
                goto out;
        if (!config.server || !*config.server) {
                char path[64];

                snprintf(path, sizeof(path), "/clusters/%zu/cluster", cluster_i);
                r = fail_at(&p, path, "cluster.server", "not set: the cluster has no server URL");
                goto out;
        }
        insecure = json_object_get(cluster, "insecure-skip-tls-verify");
        config.insecure = json_is_true(insecure);
        r = decode_ca(&p, cluster, cluster_i, &config);
        if (r < 0)
                goto out;
        *ret = config;
        config = (struct xp_kubeconfig){0};
out:
        if (r == -ENOENT)
                r = err ? (err->code = -EINVAL) : -EINVAL;
        xp_kubeconfig_done(&config);
        xp_yaml_documents_free(docs, n_docs);
        return r;
}

int xp_kubeconfig_load(const char *path,
                       const char *context,
                       struct xp_kubeconfig *ret,
                       struct xp_error *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot open %s: %s", path, strerror(errno));
        r = xp_read_fd_all(fd, XP_KUBECONFIG_MAX_BYTES, &data, &size);
        if (r == -E2BIG)
                return xp_errorf(
                    err, r, "%s: too large (more than %d bytes)", path, XP_KUBECONFIG_MAX_BYTES);
        if (r < 0)
                return xp_errorf(err, r, "%s: %s", path, strerror(-r));
        return xp_kubeconfig_parse(data, size, path, context, ret, err);
}

void xp_kubeconfig_done(struct xp_kubeconfig *config)
{
        if (!config)
                return;
        free(config->context);
        free(config->server);
        free(config->token);
        free(config->ca_data);
        free(config->ca_file);
        free(config->namespace);
        *config = (struct xp_kubeconfig){0};
}
