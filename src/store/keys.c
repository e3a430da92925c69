/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The key file of the store's encryption at rest (include/store/xpool/storekeys.h): read,
 * created at first start, written atomically and durably.
 */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/atomic_file.h"
#include "xpool/base64.h"
#include "xpool/fileio.h"
#include "xpool/storekeys.h"

#define KEYS_FILE_MAX (64 * 1024)

void xp_store_keys_free(struct xp_store_keys *keys)
{
        if (!keys)
                return;
        gnutls_memset(keys, 0, sizeof(*keys)); /* no key left in freed memory */
        free(keys);
}

static bool good_name(const char *s, size_t len)
{
        if (len == 0 || len > XP_STORE_KEY_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
                            s[i]))
                        return false;
        return true;
}

const struct xp_store_key *xp_store_keys_find(const struct xp_store_keys *keys, const char *name)
{
        for (size_t i = 0; keys && i < keys->n; i++)
                if (strcmp(keys->keys[i].name, name) == 0)
                        return &keys->keys[i];
        return NULL;
}

/* One "NAME aesgcm BASE64" line into keys. */
static int parse_line(
    struct xp_store_keys *keys, char *line, const char *path, unsigned lineno, struct xp_error *err)
{
        char *save = NULL;
        char *name = strtok_r(line, " \t", &save), *kind = strtok_r(NULL, " \t", &save),
             *b64 = strtok_r(NULL, " \t", &save);
        char *raw = NULL;
        size_t raw_len = 0;
        struct xp_store_key *k;

        if (!name || !kind || !b64 || strtok_r(NULL, " \t", &save) ||
            !good_name(name, strlen(name)) || strcmp(kind, "aesgcm") != 0)
                return xp_errorf(
                    err, -EBADMSG, "key file %s:%u: not \"NAME aesgcm BASE64-KEY\"", path, lineno);
        if (xp_store_keys_find(keys, name))
                return xp_errorf(
                    err, -EBADMSG, "key file %s:%u: key %s appears twice", path, lineno, name);
        if (keys->n == XP_STORE_KEYS_MAX)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "key file %s:%u: more than %d keys",
                                 path,
                                 lineno,
                                 XP_STORE_KEYS_MAX);
        if (xp_base64_decode(b64, strlen(b64), &raw, &raw_len) < 0 ||
            raw_len != XP_STORE_KEY_BYTES) {
                free(raw);
                return xp_errorf(err,
                                 -EBADMSG,
                                 "key file %s:%u: key %s is not %d bytes of base64",
                                 path,
                                 lineno,
                                 name,
                                 XP_STORE_KEY_BYTES);
        }
        k = &keys->keys[keys->n++];
        snprintf(k->name, sizeof(k->name), "%s", name);
        memcpy(k->secret, raw, XP_STORE_KEY_BYTES);
        gnutls_memset(raw, 0, raw_len);
        free(raw);
        return 0;
}

static int parse(struct xp_store_keys *keys, char *text, const char *path, struct xp_error *err)
{
        unsigned lineno = 0;
        char *save = NULL;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                lineno++;
                line += strspn(line, " \t\r");
                line[strcspn(line, "\r")] = 0;
                if (!*line || *line == '#')
                        continue;
                int r = parse_line(keys, line, path, lineno, err);

                if (r < 0)
                        return r;
        }
        if (keys->n == 0)
                return xp_errorf(err, -EBADMSG, "key file %s: holds no key", path);
        return 0;
}

static int read_keys(const char *path, struct xp_store_keys *keys, struct xp_error *err)
{
        char *text = NULL;
        size_t len = 0;
        struct stat st;
        int fd, r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return xp_errorf(err, -errno, "key file %s: %m", path);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return xp_errorf(err, -EBADMSG, "key file %s: not a regular file", path);
        }
        if (st.st_mode & 077) {
                close(fd);
                return xp_errorf(err,
                                 -EPERM,
                                 "key file %s: mode %03o lets others read the keys: chmod 600 it",
                                 path,
                                 (unsigned)(st.st_mode & 0777));
        }
        r = xp_read_fd_all(fd, KEYS_FILE_MAX, &text, &len);
        close(fd);
        if (r < 0)
                return xp_errorf(err, r, "key file %s: %s", path, strerror(-r));
        char *z = realloc(text, len + 1);

        if (!z) {
                free(text);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        z[len] = 0;
        r = parse(keys, z, path, err);
        gnutls_memset(z, 0, len);
        free(z);
        return r;
}

int xp_store_keys_add(struct xp_store_keys *keys, const char **ret_name, struct xp_error *err)
{
        unsigned highest = 0;
        struct xp_store_key k = {0};

        if (keys->n == XP_STORE_KEYS_MAX)
                return xp_errorf(err, -E2BIG, "there are %d keys already", XP_STORE_KEYS_MAX);
        for (size_t i = 0; i < keys->n; i++) {
                unsigned n = 0;

                if (sscanf(keys->keys[i].name, "key%u", &n) == 1 && n > highest)
                        highest = n;
        }
        snprintf(k.name, sizeof(k.name), "key%u", highest + 1);
        if (gnutls_rnd(GNUTLS_RND_KEY, k.secret, sizeof(k.secret)) < 0)
                return xp_errorf(err, -EIO, "no random bytes for a new key");
        memmove(&keys->keys[1], &keys->keys[0], keys->n * sizeof(keys->keys[0]));
        keys->keys[0] = k;
        keys->n++;
        gnutls_memset(&k, 0, sizeof(k));
        if (ret_name)
                *ret_name = keys->keys[0].name;
        return 0;
}

void xp_store_keys_retire(struct xp_store_keys *keys)
{
        for (size_t i = 1; i < keys->n; i++)
                gnutls_memset(&keys->keys[i], 0, sizeof(keys->keys[i]));
        keys->n = keys->n ? 1 : 0;
}

int xp_store_keys_save(const char *path, const struct xp_store_keys *keys, struct xp_error *err)
{
        static const char head[] =
            "# xpool: the keys Secrets are encrypted with at rest (docs/security.md). The first\n"
            "# is the primary (new writes); the others still decrypt. Keep this file secret and\n"
            "# backed up apart from the store: without it the Secrets cannot be read.\n";
        size_t size = sizeof(head) + keys->n * (XP_STORE_KEY_NAME_MAX + 64);
        char *text = malloc(size);
        size_t len = 0;
        int r = 0;

        if (!text)
                return xp_errorf(err, -ENOMEM, "out of memory");
        len = (size_t)snprintf(text, size, "%s", head);
        for (size_t i = 0; r >= 0 && i < keys->n; i++) {
                char *b64 = NULL;

                r = xp_base64_encode(keys->keys[i].secret, XP_STORE_KEY_BYTES, &b64);
                if (r >= 0)
                        len += (size_t)snprintf(
                            text + len, size - len, "%s aesgcm %s\n", keys->keys[i].name, b64);
                if (b64)
                        gnutls_memset(b64, 0, strlen(b64));
                free(b64);
        }
        if (r >= 0)
                r = xp_write_file_atomic(path, text, len, 0600, err);
        else
                xp_errorf(err, r, "out of memory");
        gnutls_memset(text, 0, len);
        free(text);
        return r;
}

int xp_store_keys_load(const char *path,
                       bool create,
                       struct xp_store_keys **ret,
                       struct xp_error *err)
{
        struct xp_store_keys *keys = calloc(1, sizeof(*keys));
        int r;

        if (!keys)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r = read_keys(path, keys, err);
        if (r == -ENOENT && create) {
                r = xp_store_keys_add(keys, NULL, err);
                if (r >= 0)
                        r = xp_store_keys_save(path, keys, err);
        }
        if (r < 0) {
                xp_store_keys_free(keys);
                return r;
        }
        *ret = keys;
        return 0;
}
