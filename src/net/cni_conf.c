/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CNI network configuration lists (include/xpool/cni.h): reading and checking them, the
 * directory lookup of containerd and CRI-O, the built-in network, and the configuration each
 * plugin is given on stdin.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/cni.h"
#include "xpool/fileio.h"
#include "xpool/netcidr.h"

void xp_cni_conf_free(struct xp_cni_conf *c)
{
        if (!c)
                return;
        free(c->name);
        free(c->cni_version);
        free(c->source);
        json_decref(c->json);
        free(c);
}

static bool name_char(char c, bool first)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (!first && (c == '_' || c == '.' || c == '-'));
}

/* A network name as the specification allows it. */
static bool name_ok(const char *s)
{
        if (!s || !*s || strlen(s) > 253)
                return false;
        for (size_t i = 0; s[i]; i++)
                if (!name_char(s[i], i == 0))
                        return false;
        return true;
}

/* A plugin's type: a plain file name looked up in the plugin directories. */
static bool type_ok(const char *s)
{
        return name_ok(s) && strlen(s) <= 64;
}

/* "1.0.0", "0.4": digits separated by single dots. */
static bool version_ok(const char *s)
{
        bool digit = false;

        if (!s || !*s || strlen(s) > 16)
                return false;
        for (; *s; s++) {
                if (*s >= '0' && *s <= '9')
                        digit = true;
                else if (*s == '.' && digit)
                        digit = false;
                else
                        return false;
        }
        return digit;
}

int xp_cni_version_compare(const char *a, const char *b)
{
        const char *pa = a ? a : "", *pb = b ? b : "";

        for (int part = 0; part < 3; part++) {
                char *ea, *eb;
                unsigned long x = strtoul(pa, &ea, 10), y = strtoul(pb, &eb, 10);

                if (x != y)
                        return x < y ? -1 : 1;
                pa = *ea == '.' ? ea + 1 : ea;
                pb = *eb == '.' ? eb + 1 : eb;
        }
        return 0;
}

static int check_plugin(const json_t *p, size_t i, const char *source, struct xp_error *err)
{
        const json_t *ipam = json_object_get(p, "ipam");
        const char *type = json_string_value(json_object_get(p, "type"));

        if (!json_is_object(p))
                return xp_errorf(err, -EINVAL, "%s: plugins[%zu]: not an object", source, i);
        if (!type_ok(type))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s: plugins[%zu].type: %s (the plugin's file name: letters, digits, '_', '.', '-')",
                    source,
                    i,
                    type ? "not a plain file name" : "missing or not a string");
        if (ipam && !json_is_object(ipam))
                return xp_errorf(err, -EINVAL, "%s: plugins[%zu].ipam: not an object", source, i);
        if (ipam && !type_ok(json_string_value(json_object_get(ipam, "type"))))
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: plugins[%zu].ipam.type: missing or not a plain file name",
                                 source,
                                 i);
        return 0;
}

/* Checks a list (json is taken) and makes the configuration of it. */
static int
conf_new(json_t *json, const char *source, struct xp_cni_conf **ret, struct xp_error *err)
{
        _cleanup_(xp_cni_conf_freep) struct xp_cni_conf *c = calloc(1, sizeof(*c));
        const char *name = json_string_value(json_object_get(json, "name"));
        const char *version = json_string_value(json_object_get(json, "cniVersion"));
        const json_t *plugins = json_object_get(json, "plugins");
        const char *where = source ? source : "the built-in network";
        int r;

        if (!c) {
                json_decref(json);
                return xp_errorf(err, -ENOMEM, "%s: out of memory", where);
        }
        c->json = json;
        if (!name_ok(name))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s: name: %s (a letter or digit, then letters, digits, '_', '.', '-')",
                    where,
                    name ? "not a network name" : "missing or not a string");
        if (!version_ok(version))
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: cniVersion: %s",
                                 where,
                                 version ? "not a version such as 1.0.0"
                                         : "missing or not a string");
        if (!json_is_array(plugins) || json_array_size(plugins) == 0 ||
            json_array_size(plugins) > XP_CNI_PLUGINS_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: plugins: %s",
                                 where,
                                 json_is_array(plugins) ? "1 to 32 plugins expected"
                                                        : "missing or not an array");
        for (size_t i = 0; i < json_array_size(plugins); i++) {
                r = check_plugin(json_array_get(plugins, i), i, where, err);
                if (r < 0)
                        return r;
        }
        if (json_object_get(json, "disableCheck") &&
            !json_is_boolean(json_object_get(json, "disableCheck")))
                return xp_errorf(err, -EINVAL, "%s: disableCheck: not a boolean", where);
        c->disable_check = json_is_true(json_object_get(json, "disableCheck"));
        c->name = strdup(name);
        c->cni_version = strdup(version);
        c->source = source ? strdup(source) : NULL;
        if (!c->name || !c->cni_version || (source && !c->source))
                return xp_errorf(err, -ENOMEM, "%s: out of memory", where);
        *ret = TAKE_PTR(c);
        return 0;
}

/* A single plugin's configuration as a list of one (libcni's ConfListFromConf). */
static json_t *list_of_one(json_t *conf)
{
        json_t *list = json_object();

        if (!list || json_object_set(list, "cniVersion", json_object_get(conf, "cniVersion")) < 0 ||
            json_object_set(list, "name", json_object_get(conf, "name")) < 0 ||
            json_object_set_new(list, "plugins", json_pack("[O]", conf)) < 0) {
                json_decref(list);
                return NULL;
        }
        return list;
}

static int
from_object(json_t *json, const char *source, struct xp_cni_conf **ret, struct xp_error *err)
{
        const char *where = source ? source : "the network configuration";

        if (!json_is_object(json)) {
                json_decref(json);
                return xp_errorf(err, -EINVAL, "%s: not a JSON object", where);
        }
        if (!json_object_get(json, "plugins") && json_object_get(json, "type")) {
                json_t *list = list_of_one(json);

                json_decref(json);
                if (!list)
                        return xp_errorf(err, -ENOMEM, "%s: out of memory", where);
                json = list;
        }
        return conf_new(json, source, ret, err);
}

int xp_cni_conf_parse(const char *text,
                      size_t len,
                      const char *source,
                      struct xp_cni_conf **ret,
                      struct xp_error *err)
{
        const char *where = source ? source : "the network configuration";
        json_error_t jerr;
        json_t *json;

        if (len > XP_CNI_CONF_MAX)
                return xp_errorf(err, -EINVAL, "%s: larger than 1 MiB", where);
        json = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!json)
                return xp_errorf(
                    err, -EINVAL, "%s:%d:%d: %s", where, jerr.line, jerr.column, jerr.text);
        return from_object(json, source, ret, err);
}

int xp_cni_conf_from_json(const json_t *json,
                          const char *source,
                          struct xp_cni_conf **ret,
                          struct xp_error *err)
{
        json_t *copy = json_deep_copy(json);

        if (!copy)
                return xp_errorf(err, -ENOMEM, "network configuration: out of memory");
        return from_object(copy, source, ret, err);
}

static bool conf_file_name(const char *name)
{
        static const char *const exts[] = {".conflist", ".conf", ".json"};
        size_t n = strlen(name);

        for (size_t i = 0; i < XP_ELEMENTSOF(exts); i++) {
                size_t e = strlen(exts[i]);

                if (n > e && strcmp(name + n - e, exts[i]) == 0)
                        return true;
        }
        return false;
}

/* The first configuration file of dir in byte order (caller frees), NULL with *r when none. */
static char *first_conf_file(const char *dir, int *r)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        char *best = NULL;

        *r = d ? -ENOENT : -errno;
        while (d && (e = readdir(d))) {
                struct stat st;

                if (!conf_file_name(e->d_name) || (best && strcmp(e->d_name, best) >= 0) ||
                    fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
                        continue;
                free(best);
                best = strdup(e->d_name);
                if (!best) {
                        *r = -ENOMEM;
                        break;
                }
        }
        if (d)
                closedir(d);
        return best;
}

int xp_cni_conf_load_dir(const char *dir, struct xp_cni_conf **ret, struct xp_error *err)
{
        _cleanup_free_ char *name = NULL, *path = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        size_t len = 0;
        int r;

        name = first_conf_file(dir, &r);
        if (!name && r == -ENOMEM)
                return xp_errorf(err, r, "%s: out of memory", dir);
        if (!name)
                return xp_errorf(err,
                                 -ENOENT,
                                 "no network configuration in %s (*.conflist, *.conf, *.json)%s",
                                 dir,
                                 r == -ENOENT ? "" : ": cannot read the directory");
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return xp_errorf(err, -ENOMEM, "%s: out of memory", dir);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return xp_errorf(err, -errno, "%s: %s", path, strerror(errno));
        r = xp_read_fd_all(fd, XP_CNI_CONF_MAX, &text, &len);
        if (r < 0)
                return xp_errorf(
                    err, r, "%s: %s", path, r == -E2BIG ? "larger than 1 MiB" : strerror(-r));
        return xp_cni_conf_parse(text, len, path, ret, err);
}

/* A network address with its prefix, host bits zero, of the sizes a node's pods fit in. */
static int pod_subnet_check(const char *text, bool *ret_v6, struct xp_error *err)
{
        struct xp_net_cidr cidr;
        bool v6;

        if (xp_net_cidr_parse(text, 0, &cidr, err) < 0)
                return -EINVAL;
        v6 = cidr.family == AF_INET6;
        if (v6 ? cidr.prefix < 64 || cidr.prefix > 126 : cidr.prefix < 8 || cidr.prefix > 30)
                return xp_errorf(err,
                                 -EINVAL,
                                 "'%s': the prefix /%u is outside /%u to /%u",
                                 text,
                                 cidr.prefix,
                                 v6 ? 64 : 8,
                                 v6 ? 126 : 30);
        *ret_v6 = v6;
        return 0;
}

int xp_cni_conf_default(const char *subnet, struct xp_cni_conf **ret, struct xp_error *err)
{
        json_t *json;
        bool v6 = false;

        if (!subnet)
                subnet = XP_CNI_DEFAULT_SUBNET;
        if (pod_subnet_check(subnet, &v6, err) < 0)
                return xp_error_prefix(
                    err,
                    -EINVAL,
                    "pod CIDR \"%s\": not a network such as %s (its host bits zero, a prefix from /8 to /30, or /64 to /126 for IPv6)",
                    subnet,
                    XP_CNI_DEFAULT_SUBNET);
        json = json_pack("{s:s, s:s, s:[{s:s, s:s, s:b, s:b, s:b, s:{s:s, s:[[{s:s}]], "
                         "s:[{s:s}]}}, {s:s, s:{s:b}}]}",
                         "cniVersion",
                         "1.0.0",
                         "name",
                         XP_CNI_DEFAULT_NETWORK,
                         "plugins",
                         "type",
                         "bridge",
                         "bridge",
                         XP_CNI_DEFAULT_BRIDGE,
                         "isGateway",
                         true,
                         "ipMasq",
                         true,
                         "hairpinMode",
                         true,
                         "ipam",
                         "type",
                         "host-local",
                         "ranges",
                         "subnet",
                         subnet,
                         "routes",
                         "dst",
                         v6 ? "::/0" : "0.0.0.0/0",
                         "type",
                         "portmap",
                         "capabilities",
                         "portMappings",
                         true);
        if (!json)
                return xp_errorf(err, -ENOMEM, "the built-in network: out of memory");
        return conf_new(json, NULL, ret, err);
}

size_t xp_cni_conf_plugins(const struct xp_cni_conf *c)
{
        return json_array_size(json_object_get(c->json, "plugins"));
}

static const json_t *plugin(const struct xp_cni_conf *c, size_t i)
{
        return json_array_get(json_object_get(c->json, "plugins"), i);
}

const char *xp_cni_conf_plugin_type(const struct xp_cni_conf *c, size_t i)
{
        return json_string_value(json_object_get(plugin(c, i), "type"));
}

const char *xp_cni_conf_ipam_type(const struct xp_cni_conf *c, size_t i)
{
        return json_string_value(json_object_get(json_object_get(plugin(c, i), "ipam"), "type"));
}

/* The members of runtime_config that plugin p asks for in its "capabilities"; NULL: none. */
static json_t *runtime_config_for(const json_t *p, const json_t *runtime_config, int *r)
{
        const json_t *caps = json_object_get(p, "capabilities");
        json_t *rc = NULL, *value;
        const char *key;

        *r = 0;
        json_object_foreach((json_t *)caps, key, value)
        {
                json_t *given = json_object_get(runtime_config, key);

                if (!json_is_true(value) || !given)
                        continue;
                if ((!rc && !(rc = json_object())) || json_object_set(rc, key, given) < 0) {
                        json_decref(rc);
                        *r = -ENOMEM;
                        return NULL;
                }
        }
        return rc;
}

int xp_cni_netconf(const struct xp_cni_conf *c,
                   size_t i,
                   const json_t *prev_result,
                   const json_t *runtime_config,
                   json_t **ret)
{
        const json_t *p = plugin(c, i);
        json_t *conf = json_copy((json_t *)p), *rc;
        int r;

        if (!conf)
                return -ENOMEM;
        rc = runtime_config_for(p, runtime_config, &r);
        if (r < 0 || json_object_set_new(conf, "name", json_string(c->name)) < 0 ||
            json_object_set_new(conf, "cniVersion", json_string(c->cni_version)) < 0 ||
            (prev_result && json_object_set(conf, "prevResult", (json_t *)prev_result) < 0) ||
            (rc && json_object_set_new(conf, "runtimeConfig", TAKE_PTR(rc)) < 0)) {
                json_decref(rc);
                json_decref(conf);
                return -ENOMEM;
        }
        *ret = conf;
        return 0;
}
