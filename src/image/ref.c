/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image references as Docker's reference package (distribution/reference) reads them: the
 * grammar of its regexp.go, and the normalization of normalize.go (default registry, library/,
 * default tag).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"
#include "xpool/image.h"

#define NAME_MAX_TOTAL 255 /* Docker's NameTotalLengthMax: domain/path */
#define TAG_MAX        128

static bool is_lower_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* path-component := [a-z0-9]+ (separator [a-z0-9]+)*, separator := [_.] | __ | -+ */
static bool path_component_ok(const char *s, size_t n)
{
        size_t i = 0;

        if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
                return false;
        while (i < n) {
                size_t j;

                if (is_lower_alnum(s[i])) {
                        i++;
                        continue;
                }
                j = i;
                if (s[i] == '-') {
                        while (j < n && s[j] == '-')
                                j++;
                } else if (s[i] == '_' && i + 1 < n && s[i + 1] == '_') {
                        j = i + 2;
                } else if (s[i] == '_' || s[i] == '.') {
                        j = i + 1;
                } else {
                        return false;
                }
                if (j >= n || !is_lower_alnum(s[j]))
                        return false;
                i = j;
        }
        return true;
}

/* domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9] */
static bool domain_component_ok(const char *s, size_t n)
{
        if (n == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)s[i]) && s[i] != '-')
                        return false;
        return true;
}

static bool port_ok(const char *s, size_t n)
{
        if (n == 0 || n > 5)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isdigit((unsigned char)s[i]))
                        return false;
        return strtoul(s, NULL, 10) <= 65535;
}

/* host[:port], host a domain name, an IPv4 address or [IPv6] */
static bool domain_ok(const char *s, size_t n)
{
        const char *colon = NULL;
        size_t host_n = n;

        if (n > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', n);

                if (!close || close - s < 3)
                        return false;
                for (const char *p = s + 1; p < close; p++)
                        if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
                                return false;
                host_n = (size_t)(close - s) + 1;
                if (host_n == n)
                        return true;
                return s[host_n] == ':' && port_ok(s + host_n + 1, n - host_n - 1);
        }
        colon = memchr(s, ':', n);
        if (colon) {
                host_n = (size_t)(colon - s);
                if (!port_ok(colon + 1, n - host_n - 1))
                        return false;
        }
        for (size_t i = 0; i < host_n;) {
                const char *dot = memchr(s + i, '.', host_n - i);
                size_t end = dot ? (size_t)(dot - s) : host_n;

                if (!domain_component_ok(s + i, end - i))
                        return false;
                i = end + 1;
                if (dot && i == host_n)
                        return false;
        }
        return host_n > 0;
}

/* tag := [\w][\w.-]{0,127} */
static bool tag_ok(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > TAG_MAX || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
                        return false;
        return true;
}

bool xp_image_digest_ok(const char *s)
{
        if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64)
                return false;
        for (const char *p = s + 7; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* Whether the part before the first '/' names a registry (Docker's splitDockerDomain). */
static bool names_domain(const char *s, size_t n)
{
        if (memchr(s, '.', n) || memchr(s, ':', n) || (n == 9 && memcmp(s, "localhost", 9) == 0))
                return true;
        for (size_t i = 0; i < n; i++)
                if (isupper((unsigned char)s[i]))
                        return true;
        return false;
}

static int check_path(const char *path, const char *text, struct xp_error *err)
{
        for (const char *p = path;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);

                if (!path_component_ok(p, n))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "image \"%s\": the repository \"%s\" is not valid (lower-case letters, digits and single separators . _ __ - between them, components split by /)",
                            text,
                            path);
                if (!slash)
                        return 0;
                p = slash + 1;
        }
}

/* Splits text (a copy) into name, tag and digest. */
static int
split(char *s, const char *text, char **name, char **tag, char **digest, struct xp_error *err)
{
        char *at = strchr(s, '@'), *slash, *colon;

        *digest = NULL;
        *tag = NULL;
        if (at) {
                *at = '\0';
                *digest = at + 1;
                if (!xp_image_digest_ok(*digest))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "image \"%s\": the digest \"%s\" is not sha256:<64 lower-case hex digits>",
                            text,
                            *digest);
        }
        slash = strrchr(s, '/');
        colon = strrchr(slash ? slash : s, ':');
        if (colon) {
                *colon = '\0';
                *tag = colon + 1;
                if (!tag_ok(*tag))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "image \"%s\": the tag \"%s\" is not valid (letters, digits, _ . -, at most 128, not starting with . or -)",
                            text,
                            *tag);
        }
        *name = s;
        return 0;
}

static int split_domain(
    const char *name, const char *text, char **ret_domain, char **ret_path, struct xp_error *err)
{
        const char *slash = strchr(name, '/');
        _cleanup_free_ char *domain = NULL, *path = NULL;

        if (slash && names_domain(name, (size_t)(slash - name))) {
                domain = strndup(name, (size_t)(slash - name));
                path = strdup(slash + 1);
                if (!domain || !path)
                        return -ENOMEM;
                if (!domain_ok(domain, strlen(domain)))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "image \"%s\": \"%s\" is not a registry host[:port]",
                                         text,
                                         domain);
                if (strcmp(domain, "index.docker.io") == 0) {
                        free(domain);
                        domain = strdup(XP_IMAGE_DEFAULT_DOMAIN);
                }
        } else {
                domain = strdup(XP_IMAGE_DEFAULT_DOMAIN);
                path = strdup(name);
        }
        if (!domain || !path)
                return -ENOMEM;
        /* docker.io's official images live under library/ */
        if (strcmp(domain, XP_IMAGE_DEFAULT_DOMAIN) == 0 && !strchr(path, '/')) {
                char *full;

                if (asprintf(&full, "library/%s", path) < 0)
                        return -ENOMEM;
                free(path);
                path = full;
        }
        *ret_domain = TAKE_PTR(domain);
        *ret_path = TAKE_PTR(path);
        return 0;
}

int xp_image_ref_parse(const char *text, struct xp_image_ref *ret, struct xp_error *err)
{
        _cleanup_free_ char *copy = NULL, *domain = NULL, *path = NULL, *tag = NULL, *digest = NULL;
        char *name = NULL, *tag_part = NULL, *digest_part = NULL;
        int r;

        if (!text || !*text)
                return xp_errorf(err, -EINVAL, "the image name is empty");
        if (strlen(text) > XP_IMAGE_REF_MAX)
                return xp_errorf(
                    err, -EINVAL, "an image name longer than %d bytes", XP_IMAGE_REF_MAX);
        for (const char *p = text; *p; p++)
                if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
                        return xp_errorf(
                            err, -EINVAL, "image \"%s\": a blank or control character", text);
        copy = strdup(text);
        if (!copy)
                return -ENOMEM;
        r = split(copy, text, &name, &tag_part, &digest_part, err);
        if (r < 0)
                return r;
        if (!*name)
                return xp_errorf(err, -EINVAL, "image \"%s\": no repository name", text);
        r = split_domain(name, text, &domain, &path, err);
        if (r < 0)
                return r;
        r = check_path(path, text, err);
        if (r < 0)
                return r;
        if (strlen(domain) + 1 + strlen(path) > NAME_MAX_TOTAL)
                return xp_errorf(err,
                                 -EINVAL,
                                 "image \"%s\": the repository name is longer than %d bytes",
                                 text,
                                 NAME_MAX_TOTAL);
        if (!tag_part && !digest_part)
                tag_part = XP_IMAGE_DEFAULT_TAG;
        if ((tag_part && !(tag = strdup(tag_part))) ||
            (digest_part && !(digest = strdup(digest_part))))
                return -ENOMEM;
        *ret = (struct xp_image_ref){
            .domain = TAKE_PTR(domain),
            .path = TAKE_PTR(path),
            .tag = TAKE_PTR(tag),
            .digest = TAKE_PTR(digest),
        };
        return 0;
}

void xp_image_ref_done(struct xp_image_ref *ref)
{
        if (!ref)
                return;
        free(ref->domain);
        free(ref->path);
        free(ref->tag);
        free(ref->digest);
        *ref = (struct xp_image_ref){0};
}

char *xp_image_ref_format(const struct xp_image_ref *ref)
{
        char *s;

        if (asprintf(&s,
                     "%s/%s%s%s%s%s",
                     ref->domain,
                     ref->path,
                     ref->tag ? ":" : "",
                     ref->tag ? ref->tag : "",
                     ref->digest ? "@" : "",
                     ref->digest ? ref->digest : "") < 0)
                return NULL;
        return s;
}

char *xp_image_ref_repository(const struct xp_image_ref *ref)
{
        char *s;

        return asprintf(&s, "%s/%s", ref->domain, ref->path) < 0 ? NULL : s;
}

const char *xp_image_default_pull_policy(const char *text)
{
        struct xp_image_ref ref;
        bool latest;

        if (xp_image_ref_parse(text, &ref, NULL) < 0)
                return "IfNotPresent";
        /* Kubernetes: no tag, or :latest, and no digest pulls always */
        latest = ref.tag && strcmp(ref.tag, XP_IMAGE_DEFAULT_TAG) == 0;
        xp_image_ref_done(&ref);
        return latest ? "Always" : "IfNotPresent";
}
