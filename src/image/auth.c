/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials and challenges: Docker's config.json ("auths") and the older .dockercfg, matched
 * to a registry the way the kubelet's credential keyring matches them (scheme and /v1/ paths
 * ignored, index.docker.io is docker.io, the longest key whose path is a prefix of the
 * repository wins); WWW-Authenticate challenges (RFC 7235) as registries send them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"
#include "xpool/base64.h"

#define AUTH_TEXT_MAX (1024 * 1024)

void xp_image_cred_done(struct xp_image_cred *c)
{
        if (!c)
                return;
        free(c->username);
        if (c->password)
                explicit_bzero(c->password, strlen(c->password));
        free(c->password);
        *c = (struct xp_image_cred){0};
}

/* A key of "auths" as host[/path]: scheme, "/v1/", "/v2/" and trailing slashes dropped. */
static void normalize_key(const char *key, char *buf, size_t size)
{
        const char *k = key;
        size_t n;

        if (strncmp(k, "https://", 8) == 0)
                k += 8;
        else if (strncmp(k, "http://", 7) == 0)
                k += 7;
        snprintf(buf, size, "%s", k);
        n = strlen(buf);
        while (n > 0 && buf[n - 1] == '/')
                buf[--n] = '\0';
        if (n >= 3 && (strcmp(buf + n - 3, "/v1") == 0 || strcmp(buf + n - 3, "/v2") == 0))
                buf[n - 3] = '\0';
        if (strncmp(buf, "index.docker.io", 15) == 0 ||
            strncmp(buf, "registry-1.docker.io", 20) == 0) {
                const char *rest = buf + (buf[0] == 'i' ? 15 : 20);
                char tmp[512];

                snprintf(tmp, sizeof(tmp), "docker.io%s", rest);
                snprintf(buf, size, "%s", tmp);
        }
}

/* How well key matches host/repo: 0 not, else the key's length (longer is closer). */
static size_t key_match(const char *key, const char *host, const char *repo)
{
        char k[512], full[1024];
        size_t n;

        normalize_key(key, k, sizeof(k));
        snprintf(full, sizeof(full), "%s/%s", host, repo ? repo : "");
        n = strlen(k);
        if (n == 0 || strncmp(full, k, n) != 0 || (full[n] != '/' && full[n] != '\0'))
                return 0;
        /* a bare host must be the whole host, not a prefix of another one */
        return n >= strlen(host) ? n : 0;
}

static int cred_from_entry(const json_t *entry,
                           const char *key,
                           struct xp_image_cred *ret,
                           struct xp_error *err)
{
        const char *auth = json_string_value(json_object_get(entry, "auth"));
        const char *user = json_string_value(json_object_get(entry, "username"));
        const char *pass = json_string_value(json_object_get(entry, "password"));
        _cleanup_free_ char *decoded = NULL;
        size_t len = 0;
        char *colon;

        if (!json_is_object(entry))
                return xp_errorf(err, -EINVAL, "auths.\"%s\": must be an object", key);
        if (auth && *auth) {
                if (xp_base64_decode(auth, strlen(auth), &decoded, &len) < 0 ||
                    !(colon = strchr(decoded, ':')) || strlen(decoded) != len)
                        return xp_errorf(
                            err, -EINVAL, "auths.\"%s\".auth: not base64 of user:password", key);
                *colon = '\0';
                ret->username = strdup(decoded);
                ret->password = strdup(colon + 1);
                explicit_bzero(decoded, len);
        } else if (user && pass) {
                ret->username = strdup(user);
                ret->password = strdup(pass);
        } else {
                return 0; /* an identity token or a credential helper: not ours to use */
        }
        if (!ret->username || !ret->password) {
                xp_image_cred_done(ret);
                return -ENOMEM;
        }
        return 1;
}

int xp_image_auth_lookup(const char *text,
                         size_t size,
                         const char *host,
                         const char *repo,
                         struct xp_image_cred *ret,
                         struct xp_error *err)
{
        json_auto_t *root = NULL;
        const json_t *auths, *entry, *best = NULL;
        const char *key, *best_key = NULL;
        size_t best_n = 0;
        json_error_t jerr;
        char h[512];

        if (size > AUTH_TEXT_MAX)
                return xp_errorf(err, -EINVAL, "credentials larger than 1 MiB");
        root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(root))
                return xp_errorf(err,
                                 -EINVAL,
                                 "credentials: not a JSON object (line %d: %s)",
                                 jerr.line,
                                 root ? "not an object" : jerr.text);
        normalize_key(host, h, sizeof(h));
        /* config.json holds "auths"; a .dockercfg is the map itself */
        auths = json_object_get(root, "auths");
        if (!auths)
                auths = json_object_get(root, "credHelpers") || json_object_get(root, "credsStore")
                            ? NULL
                            : root;
        if (auths && !json_is_object(auths))
                return xp_errorf(err, -EINVAL, "credentials: auths must be an object");
        json_object_foreach((json_t *)auths, key, entry)
        {
                size_t n = key_match(key, h, repo);

                if (n > best_n) {
                        best_n = n;
                        best = entry;
                        best_key = key;
                }
        }
        if (!best)
                return 0;
        return cred_from_entry(best, best_key, ret, err);
}

/* ---- WWW-Authenticate ------------------------------------------------------------------------ */

void xp_image_challenge_done(struct xp_image_challenge *c)
{
        free(c->realm);
        free(c->service);
        free(c->scope);
        *c = (struct xp_image_challenge){0};
}

/* A token or a quoted-string (with \-escapes) at *p, into a new string. */
static char *param_value(const char **p)
{
        const char *s = *p;
        char *out, *o;

        out = o = malloc(strlen(s) + 1);
        if (!out)
                return NULL;
        if (*s == '"') {
                for (s++; *s && *s != '"'; s++) {
                        if (*s == '\\' && s[1])
                                s++;
                        *o++ = *s;
                }
                if (*s == '"')
                        s++;
        } else {
                while (*s && *s != ',' && !isspace((unsigned char)*s))
                        *o++ = *s++;
        }
        *o = '\0';
        *p = s;
        return out;
}

static int set_param(struct xp_image_challenge *c, const char *name, size_t n, char *value)
{
        char **slot = NULL;

        if (n == 5 && strncasecmp(name, "realm", 5) == 0)
                slot = &c->realm;
        else if (n == 7 && strncasecmp(name, "service", 7) == 0)
                slot = &c->service;
        else if (n == 5 && strncasecmp(name, "scope", 5) == 0)
                slot = &c->scope;
        if (!slot) {
                free(value);
                return 0;
        }
        free(*slot);
        *slot = value;
        return 0;
}

int xp_image_challenge_parse(const char *header, struct xp_image_challenge *ret)
{
        struct xp_image_challenge c = {0};
        const char *p = header;
        size_t n = 0;

        while (*p && isspace((unsigned char)*p))
                p++;
        while (p[n] && !isspace((unsigned char)p[n]) && n < sizeof(c.scheme) - 1)
                n++;
        if (n == 0)
                return -EINVAL;
        memcpy(c.scheme, p, n);
        p += n;
        for (int guard = 0; *p && guard < 64; guard++) {
                const char *name;
                char *value;

                while (*p == ',' || isspace((unsigned char)*p))
                        p++;
                name = p;
                while (*p && *p != '=' && *p != ',' && !isspace((unsigned char)*p))
                        p++;
                n = (size_t)(p - name);
                if (*p != '=') {
                        while (*p && *p != ',')
                                p++;
                        continue;
                }
                p++;
                value = param_value(&p);
                if (!value) {
                        xp_image_challenge_done(&c);
                        return -ENOMEM;
                }
                set_param(&c, name, n, value);
        }
        *ret = c;
        return 0;
}
