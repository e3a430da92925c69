/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registries file (docs/images.md): k3s's registries.yaml shape (mirrors with endpoints,
 * configs with tls and auth per host) plus xpool's plain_http, untrusted and timeouts. Read
 * through the YAML loader so a mistake is reported at its line and column; unknown keys are
 * mistakes (a misspelt ca_file must not silently mean "no CA").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_internal.h"
#include "xpool/duration.h"
#include "xpool/fileio.h"
#include "xpool/strutil.h"
#include "xpool/yaml.h"

#define REGCONF_MAX_BYTES (1024 * 1024)
#define HOSTS_MAX         1024
#define MIRRORS_MAX       16

struct parse {
        const char *name;
        const struct xp_yaml_document *doc;
        struct xp_error *err;
};

static int fail_at(const struct parse *p, const char *pointer, const char *what, const char *path)
{
        struct xp_source_entry where;
        /* an unknown key is pointed at itself, a bad value at the value */
        bool key = strncmp(what, "unknown key", 11) == 0;

        if (xp_source_map_lookup(p->doc->map, pointer, &where) == 0 && where.value.line > 0)
                return xp_errorf(p->err,
                                 -EINVAL,
                                 "%s:%u:%u: %s: %s",
                                 p->name,
                                 key ? where.key.line : where.value.line,
                                 key ? where.key.column : where.value.column,
                                 path,
                                 what);
        return xp_errorf(p->err, -EINVAL, "%s: %s: %s", p->name, path, what);
}

/* A JSON pointer token and a path segment for key. */
static void pointer_join(char *buf, size_t size, const char *base, const char *key)
{
        size_t len = (size_t)snprintf(buf, size, "%s/", base);

        for (const char *k = key; *k && len + 3 < size; k++) {
                if (*k == '~' || *k == '/') {
                        buf[len++] = '~';
                        buf[len++] = *k == '~' ? '0' : '1';
                } else {
                        buf[len++] = *k;
                }
        }
        buf[len < size ? len : size - 1] = '\0';
}

static struct xp_regconf_host *host_get(struct xp_regconf *c, const char *host)
{
        struct xp_regconf_host *grown;

        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->hosts[i].host, host) == 0)
                        return &c->hosts[i];
        if (c->n >= HOSTS_MAX)
                return NULL;
        grown = realloc(c->hosts, (c->n + 1) * sizeof(*grown));
        if (!grown)
                return NULL;
        c->hosts = grown;
        grown[c->n] = (struct xp_regconf_host){.host = strdup(host)};
        if (!grown[c->n].host)
                return NULL;
        return &c->hosts[c->n++];
}

/* Only the keys of allowed may appear in obj. */
static int check_keys(const struct parse *p,
                      const json_t *obj,
                      const char *pointer,
                      const char *path,
                      const char *const *allowed)
{
        const char *key;
        json_t *v;

        if (!json_is_object(obj))
                return fail_at(p, pointer, "must be a mapping", path);
        json_object_foreach((json_t *)obj, key, v)
        {
                bool ok = false;
                char ptr[512], what[600];

                for (const char *const *a = allowed; *a && !ok; a++)
                        ok = strcmp(*a, key) == 0;
                if (ok)
                        continue;
                pointer_join(ptr, sizeof(ptr), pointer, key);
                snprintf(what, sizeof(what), "unknown key \"%s\"", key);
                return fail_at(p, ptr, what, path);
        }
        return 0;
}

static int get_string(const struct parse *p,
                      const json_t *obj,
                      const char *pointer,
                      const char *key,
                      const char *path,
                      char **ret)
{
        const json_t *v = json_object_get(obj, key);
        char ptr[512];

        if (!v || json_is_null(v))
                return 0;
        pointer_join(ptr, sizeof(ptr), pointer, key);
        if (!json_is_string(v) || !*json_string_value(v))
                return fail_at(p, ptr, "must be a non-empty string", path);
        free(*ret);
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

static int get_bool(const struct parse *p,
                    const json_t *obj,
                    const char *pointer,
                    const char *key,
                    const char *path,
                    bool *ret)
{
        const json_t *v = json_object_get(obj, key);
        char ptr[512];

        if (!v || json_is_null(v))
                return 0;
        pointer_join(ptr, sizeof(ptr), pointer, key);
        if (!json_is_boolean(v))
                return fail_at(p, ptr, "must be true or false", path);
        *ret = json_is_true(v);
        return 0;
}

/* scheme://host[:port][/path], scheme http or https */
static bool endpoint_ok(const char *url)
{
        const char *host = strncmp(url, "https://", 8) == 0  ? url + 8
                           : strncmp(url, "http://", 7) == 0 ? url + 7
                                                             : NULL;

        if (!host || !*host || *host == '/')
                return false;
        for (const char *c = url; *c; c++)
                if ((unsigned char)*c <= ' ' || *c == '?' || *c == '#' || *c == '@')
                        return false;
        return true;
}

static int parse_mirror(const struct parse *p,
                        const char *host,
                        const json_t *m,
                        const char *pointer,
                        struct xp_regconf *c)
{
        static const char *const keys[] = {"endpoint", NULL};
        const json_t *eps = json_object_get(m, "endpoint");
        struct xp_regconf_host *h;
        char path[512], ptr[512];
        size_t i;
        json_t *ep;
        int r;

        snprintf(path, sizeof(path), "mirrors.\"%s\"", host);
        if ((r = check_keys(p, m, pointer, path, keys)) < 0)
                return r;
        pointer_join(ptr, sizeof(ptr), pointer, "endpoint");
        if (!json_is_array(eps) || json_array_size(eps) > MIRRORS_MAX)
                return fail_at(p, ptr, "must be a list of at most 16 endpoint URLs", path);
        if (!(h = host_get(c, host)))
                return -ENOMEM;
        xp_image_strv_free(h->mirrors);
        h->mirrors = calloc(json_array_size(eps) + 1, sizeof(char *));
        if (!h->mirrors)
                return -ENOMEM;
        json_array_foreach(eps, i, ep)
        {
                const char *url = json_string_value(ep);
                char eptr[600];

                snprintf(eptr, sizeof(eptr), "%s/%zu", ptr, i);
                if (!url || !endpoint_ok(url))
                        return fail_at(
                            p, eptr, "must be an http:// or https:// URL with a host", path);
                if (!(h->mirrors[i] = strdup(url)))
                        return -ENOMEM;
                /* a trailing '/' would double the one before v2 */
                while (strlen(h->mirrors[i]) > 8 && h->mirrors[i][strlen(h->mirrors[i]) - 1] == '/')
                        h->mirrors[i][strlen(h->mirrors[i]) - 1] = '\0';
        }
        return 0;
}

static int parse_tls_auth(const struct parse *p,
                          const json_t *cfg,
                          const char *pointer,
                          const char *path,
                          struct xp_regconf_host *h)
{
        static const char *const tls_keys[] = {
            "ca_file", "cert_file", "key_file", "insecure_skip_verify", NULL};
        static const char *const auth_keys[] = {"username", "password", "auth", NULL};
        const json_t *tls = json_object_get(cfg, "tls"), *auth = json_object_get(cfg, "auth");
        char ptr[512];
        int r;

        if (tls) {
                pointer_join(ptr, sizeof(ptr), pointer, "tls");
                if ((r = check_keys(p, tls, ptr, path, tls_keys)) < 0 ||
                    (r = get_string(p, tls, ptr, "ca_file", path, &h->ca_file)) < 0 ||
                    (r = get_string(p, tls, ptr, "cert_file", path, &h->cert_file)) < 0 ||
                    (r = get_string(p, tls, ptr, "key_file", path, &h->key_file)) < 0 ||
                    (r = get_bool(
                         p, tls, ptr, "insecure_skip_verify", path, &h->insecure_skip_verify)) < 0)
                        return r;
        }
        if (auth) {
                pointer_join(ptr, sizeof(ptr), pointer, "auth");
                if ((r = check_keys(p, auth, ptr, path, auth_keys)) < 0 ||
                    (r = get_string(p, auth, ptr, "username", path, &h->username)) < 0 ||
                    (r = get_string(p, auth, ptr, "password", path, &h->password)) < 0 ||
                    (r = get_string(p, auth, ptr, "auth", path, &h->auth)) < 0)
                        return r;
        }
        return 0;
}

static int parse_config(const struct parse *p,
                        const char *host,
                        const json_t *cfg,
                        const char *pointer,
                        struct xp_regconf *c)
{
        static const char *const keys[] = {"tls", "auth", "plain_http", "untrusted", NULL};
        struct xp_regconf_host *h;
        char path[512];
        int r;

        snprintf(path, sizeof(path), "configs.\"%s\"", host);
        if ((r = check_keys(p, cfg, pointer, path, keys)) < 0)
                return r;
        if (!(h = host_get(c, host)))
                return -ENOMEM;
        if ((r = get_bool(p, cfg, pointer, "plain_http", path, &h->plain_http)) < 0 ||
            (r = get_bool(p, cfg, pointer, "untrusted", path, &h->untrusted)) < 0)
                return r;
        return parse_tls_auth(p, cfg, pointer, path, h);
}

/* A number of seconds, or a string in every duration flag's grammar ("10s", "500ms", "1m30s"). */
static int parse_duration(const json_t *v, int64_t *ret_ms)
{
        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 86400) {
                *ret_ms = json_integer_value(v) * 1000;
                return 0;
        }
        if (!json_is_string(v))
                return -EINVAL;
        return xp_duration_parse(json_string_value(v), 1, XP_DURATION_DAY_MS, ret_ms, NULL);
}

static int parse_timeouts(const struct parse *p, const json_t *t, struct xp_regconf *c)
{
        static const char *const keys[] = {"connect", "stall", NULL};
        int r;

        if ((r = check_keys(p, t, "/timeouts", "timeouts", keys)) < 0)
                return r;
        if (json_object_get(t, "connect") &&
            parse_duration(json_object_get(t, "connect"), &c->connect_ms) < 0)
                return fail_at(p,
                               "/timeouts/connect",
                               "must be a duration such as 10s or 500ms (at most 24h)",
                               "timeouts.connect");
        if (json_object_get(t, "stall") &&
            parse_duration(json_object_get(t, "stall"), &c->stall_ms) < 0)
                return fail_at(p,
                               "/timeouts/stall",
                               "must be a duration such as 30s (at most 24h)",
                               "timeouts.stall");
        return 0;
}

static int parse_doc(const struct parse *p, struct xp_regconf *c)
{
        static const char *const keys[] = {"mirrors", "configs", "timeouts", NULL};
        const json_t *root = p->doc->root, *section, *v;
        const char *host;
        char ptr[512];
        int r;

        if ((r = check_keys(p, root, "", "the file", keys)) < 0)
                return r;
        section = json_object_get(root, "mirrors");
        if (section && !json_is_null(section) && !json_is_object(section))
                return fail_at(p, "/mirrors", "must be a mapping", "mirrors");
        json_object_foreach((json_t *)section, host, v)
        {
                pointer_join(ptr, sizeof(ptr), "/mirrors", host);
                if ((r = parse_mirror(p, host, v, ptr, c)) < 0)
                        return r;
        }
        section = json_object_get(root, "configs");
        if (section && !json_is_null(section) && !json_is_object(section))
                return fail_at(p, "/configs", "must be a mapping", "configs");
        json_object_foreach((json_t *)section, host, v)
        {
                pointer_join(ptr, sizeof(ptr), "/configs", host);
                if ((r = parse_config(p, host, v, ptr, c)) < 0)
                        return r;
        }
        section = json_object_get(root, "timeouts");
        return section && !json_is_null(section) ? parse_timeouts(p, section, c) : 0;
}

int xp_regconf_parse(
    const char *data, size_t size, const char *name, struct xp_regconf **ret, struct xp_error *err)
{
        struct xp_yaml_document *docs = NULL;
        struct xp_regconf *c;
        size_t n = 0;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->connect_ms = XP_REGCONF_CONNECT_MS;
        c->stall_ms = XP_REGCONF_STALL_MS;
        r = xp_yaml_load(data, size, name, &docs, &n, err);
        if (r >= 0 && n > 1)
                r = xp_errorf(err, -EINVAL, "%s: one YAML document expected, found %zu", name, n);
        if (r >= 0 && n == 1) {
                struct parse p = {.name = name, .doc = &docs[0], .err = err};

                r = parse_doc(&p, c);
        }
        xp_yaml_documents_free(docs, n);
        if (r < 0) {
                xp_regconf_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_regconf_load(const char *path,
                    bool must_exist,
                    struct xp_regconf **ret,
                    struct xp_error *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r;

        if (fd < 0 && errno == ENOENT && !must_exist)
                return xp_regconf_parse("", 0, path, ret, err);
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot open the registries file %s: %m", path);
        r = xp_read_fd_all(fd, REGCONF_MAX_BYTES, &data, &size);
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "cannot read the registries file %s: %s",
                                 path,
                                 r == -E2BIG ? "larger than 1 MiB" : strerror(-r));
        return xp_regconf_parse(data, size, path, ret, err);
}

void xp_regconf_free(struct xp_regconf *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++) {
                struct xp_regconf_host *h = &c->hosts[i];

                free(h->host);
                xp_image_strv_free(h->mirrors);
                free(h->ca_file);
                free(h->cert_file);
                free(h->key_file);
                free(h->username);
                free(h->password);
                free(h->auth);
        }
        free(c->hosts);
        free(c);
}

const struct xp_regconf_host *xp_regconf_find(const struct xp_regconf *c, const char *host)
{
        const struct xp_regconf_host *any = NULL;

        for (size_t i = 0; c && i < c->n; i++) {
                if (strcmp(c->hosts[i].host, host) == 0)
                        return &c->hosts[i];
                if (strcmp(c->hosts[i].host, "*") == 0)
                        any = &c->hosts[i];
        }
        return any;
}
