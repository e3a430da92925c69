/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the agent keeps of each pod's network (include/xpool/podnet.h): one JSON file per pod,
 * replaced atomically and durably, so that an agent that restarts (or a node that rebooted)
 * knows what was set up and with which configuration to tear it down.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpool/atomic_file.h"
#include "xpool/fileio.h"
#include "xpool/podnet.h"

#define RECORD_SUFFIX ".json"
#define RECORD_MAX    (4 * 1024 * 1024)

void xp_podnet_record_clear(struct xp_podnet_record *r)
{
        free(r->uid);
        free(r->pod_namespace);
        free(r->pod_name);
        free(r->netns);
        free(r->ifname);
        json_decref(r->network);
        json_decref(r->runtime_config);
        json_decref(r->result);
        *r = (struct xp_podnet_record){0};
}

bool xp_podnet_uid_ok(const char *uid)
{
        size_t n = uid ? strlen(uid) : 0;

        if (n == 0 || n > XP_CNI_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = uid[i];
                bool alnum =
                    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

                if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
                        return false;
        }
        return !(n > strlen(RECORD_SUFFIX) &&
                 strcmp(uid + n - strlen(RECORD_SUFFIX), RECORD_SUFFIX) == 0);
}

json_t *xp_podnet_record_to_json(const struct xp_podnet_record *r)
{
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:O, s:O?, s:O?}",
                         "uid",
                         r->uid,
                         "namespace",
                         r->pod_namespace ? r->pod_namespace : "",
                         "name",
                         r->pod_name ? r->pod_name : "",
                         "netns",
                         r->netns,
                         "ifname",
                         r->ifname,
                         "ready",
                         r->ready,
                         "network",
                         r->network,
                         "runtimeConfig",
                         r->runtime_config,
                         "result",
                         r->result);
}

static int take_string(const json_t *json, const char *key, char **ret, struct xp_error *err)
{
        const char *s = json_string_value(json_object_get(json, key));

        if (!s)
                return xp_errorf(err, -EINVAL, "%s: missing or not a string", key);
        *ret = strdup(s);
        return *ret ? 0 : xp_errorf(err, -ENOMEM, "out of memory");
}

int xp_podnet_record_from_json(const json_t *json,
                               struct xp_podnet_record *ret,
                               struct xp_error *err)
{
        struct xp_podnet_record r = {0};
        const json_t *network = json_object_get(json, "network");
        const json_t *rc = json_object_get(json, "runtimeConfig");
        const json_t *result = json_object_get(json, "result");
        int e;

        if (!json_is_object(json))
                return xp_errorf(err, -EINVAL, "not a JSON object");
        if ((e = take_string(json, "uid", &r.uid, err)) < 0 ||
            (e = take_string(json, "namespace", &r.pod_namespace, err)) < 0 ||
            (e = take_string(json, "name", &r.pod_name, err)) < 0 ||
            (e = take_string(json, "netns", &r.netns, err)) < 0 ||
            (e = take_string(json, "ifname", &r.ifname, err)) < 0)
                goto fail;
        e = -EINVAL;
        if (!xp_podnet_uid_ok(r.uid)) {
                xp_errorf(err, e, "uid: \"%s\" cannot name a pod's network", r.uid);
                goto fail;
        }
        if (r.netns[0] != '/' || !*r.ifname) {
                xp_errorf(err, e, "%s: not set", r.netns[0] != '/' ? "netns" : "ifname");
                goto fail;
        }
        if (!json_is_boolean(json_object_get(json, "ready")) || !json_is_object(network) ||
            (rc && !json_is_object(rc) && !json_is_null(rc)) ||
            (result && !json_is_object(result) && !json_is_null(result))) {
                xp_errorf(err, e, "ready, network, runtimeConfig or result: of the wrong type");
                goto fail;
        }
        r.ready = json_is_true(json_object_get(json, "ready"));
        if (r.ready && !json_is_object(result)) {
                xp_errorf(err, e, "result: missing on a ready network");
                goto fail;
        }
        r.network = json_incref((json_t *)network);
        r.runtime_config = json_is_object(rc) ? json_incref((json_t *)rc) : NULL;
        r.result = json_is_object(result) ? json_incref((json_t *)result) : NULL;
        *ret = r;
        return 0;
fail:
        xp_podnet_record_clear(&r);
        return e;
}

static char *record_path(const char *dir, const char *uid)
{
        char *path;

        return asprintf(&path, "%s/%s" RECORD_SUFFIX, dir, uid) < 0 ? NULL : path;
}

int xp_podnet_record_write(const char *dir, const struct xp_podnet_record *r, struct xp_error *err)
{
        _cleanup_free_ char *path = NULL, *text = NULL;
        json_t *json;

        if (!xp_podnet_uid_ok(r->uid))
                return xp_errorf(
                    err, -EINVAL, "pod uid \"%s\" cannot name a network", r->uid ? r->uid : "");
        json = xp_podnet_record_to_json(r);
        text = json ? json_dumps(json, JSON_COMPACT) : NULL;
        json_decref(json);
        path = record_path(dir, r->uid);
        if (!text || !path)
                return xp_errorf(err, -ENOMEM, "the network of pod %s: out of memory", r->uid);
        return xp_write_file_atomic(path, text, strlen(text), 0600, err);
}

int xp_podnet_record_read(const char *dir,
                          const char *uid,
                          struct xp_podnet_record *ret,
                          struct xp_error *err)
{
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        json_error_t jerr;
        json_t *json;
        size_t len = 0;
        int r;

        if (!xp_podnet_uid_ok(uid))
                return xp_errorf(
                    err, -EINVAL, "pod uid \"%s\" cannot name a network", uid ? uid : "");
        path = record_path(dir, uid);
        if (!path)
                return xp_errorf(err, -ENOMEM, "out of memory");
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return xp_errorf(err, -errno, "%s: %s", path, strerror(errno));
        r = xp_read_fd_all(fd, RECORD_MAX, &text, &len);
        if (r < 0)
                return xp_errorf(err, r, "%s: %s", path, strerror(-r));
        json = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!json)
                return xp_errorf(
                    err, -EINVAL, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        r = xp_podnet_record_from_json(json, ret, err);
        json_decref(json);
        if (r >= 0 && strcmp(ret->uid, uid) != 0) {
                xp_podnet_record_clear(ret);
                return xp_errorf(err, -EINVAL, "%s: uid: the record is of another pod", path);
        }
        return r < 0 ? xp_error_prefix(err, r, "%s", path) : 0;
}

int xp_podnet_record_remove(const char *dir, const char *uid, struct xp_error *err)
{
        _cleanup_free_ char *path = xp_podnet_uid_ok(uid) ? record_path(dir, uid) : NULL;

        if (!path)
                return xp_errorf(
                    err, -EINVAL, "pod uid \"%s\" cannot name a network", uid ? uid : "");
        if (unlink(path) < 0 && errno != ENOENT)
                return xp_errorf(err, -errno, "removing %s: %s", path, strerror(errno));
        return 0;
}

static int uid_compare(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int xp_podnet_record_list(const char *dir, char ***ret, size_t *ret_n, struct xp_error *err)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        char **uids = NULL;
        size_t n = 0, cap = 0;
        int r = 0;

        if (!d)
                return errno == ENOENT
                           ? (*ret = NULL, *ret_n = 0, 0)
                           : xp_errorf(err, -errno, "reading %s: %s", dir, strerror(errno));
        while ((e = readdir(d))) {
                size_t len = strlen(e->d_name);
                char *uid;

                if (len <= strlen(RECORD_SUFFIX) ||
                    strcmp(e->d_name + len - strlen(RECORD_SUFFIX), RECORD_SUFFIX) != 0)
                        continue;
                uid = strndup(e->d_name, len - strlen(RECORD_SUFFIX));
                if (uid && !xp_podnet_uid_ok(uid)) {
                        free(uid); /* a temporary file of an atomic write, or not ours */
                        continue;
                }
                if (uid && n == cap) {
                        char **grown = realloc(uids, (cap = cap ? 2 * cap : 16) * sizeof(*uids));

                        if (grown)
                                uids = grown;
                        else {
                                free(uid);
                                uid = NULL;
                        }
                }
                if (!uid) {
                        r = -ENOMEM;
                        break;
                }
                uids[n++] = uid;
        }
        closedir(d);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(uids[i]);
                free(uids);
                return xp_errorf(err, r, "reading %s: out of memory", dir);
        }
        if (n > 1)
                qsort(uids, n, sizeof(*uids), uid_compare);
        *ret = uids;
        *ret_n = n;
        return 0;
}
