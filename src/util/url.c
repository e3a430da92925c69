/* SPDX-License-Identifier: Apache-2.0 */
/* scheme://host[:port][path] into its parts (xpool/url.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xpool/url.h"

static const char *scheme_end(const char *url)
{
        size_t n = strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

        /* RFC 3986: a letter first */
        if (n == 0 || strchr("0123456789+.-", url[0]) || strncmp(url + n, "://", 3) != 0)
                return NULL;
        return url + n;
}

static unsigned default_port(const char *scheme)
{
        return strcasecmp(scheme, "https") == 0 ? 443 : strcasecmp(scheme, "http") == 0 ? 80 : 0;
}

/* The port's digits in [p, end): 1 to 65535, else 0. */
static unsigned port_of(const char *p, const char *end)
{
        unsigned long n = 0;

        if (p == end)
                return 0;
        for (; p < end; p++) {
                if (*p < '0' || *p > '9')
                        return 0;
                n = n * 10 + (unsigned long)(*p - '0');
                if (n > 65535)
                        return 0;
        }
        return (unsigned)n;
}

/* host into ret, and where its ":port" starts (NULL: none) in *colon. */
static int split_host(
    const char *p, const char *end, const char **colon, struct xp_url *ret, struct xp_error *err)
{
        const char *host_end;

        if (*p == '[') {
                const char *close = memchr(p, ']', (size_t)(end - p));

                if (!close || close == p + 1)
                        return xp_errorf(err, -EINVAL, "an IPv6 address needs [ADDRESS]");
                if (close + 1 != end && close[1] != ':')
                        return xp_errorf(
                            err, -EINVAL, "after an IPv6 address's ']' only \":PORT\" may follow");
                *colon = close + 1 != end ? close + 1 : NULL;
                p++;
                host_end = close;
        } else {
                *colon = memchr(p, ':', (size_t)(end - p));
                host_end = *colon ? *colon : end;
                if (host_end == p)
                        return xp_errorf(err, -EINVAL, "no host");
                if (*colon && memchr(*colon + 1, ':', (size_t)(end - *colon - 1)))
                        return xp_errorf(
                            err, -EINVAL, "an IPv6 address goes in brackets: [ADDRESS]:PORT");
        }
        ret->host = strndup(p, (size_t)(host_end - p));
        return ret->host ? 0 : -ENOMEM;
}

static int split(const char *url, struct xp_url *ret, struct xp_error *err)
{
        const char *p = scheme_end(url), *end, *colon = NULL;
        int r;

        if (!p)
                return xp_errorf(err, -EINVAL, "no scheme (scheme://host[:port][/path])");
        ret->scheme = strndup(url, (size_t)(p - url));
        if (!ret->scheme)
                return -ENOMEM;
        p += 3;
        end = p + strcspn(p, "/?#");
        if (memchr(p, '@', (size_t)(end - p)))
                return xp_errorf(
                    err, -EINVAL, "a user name or password before the host is not taken");
        if (p == end)
                return xp_errorf(err, -EINVAL, "no host");
        r = split_host(p, end, &colon, ret, err);
        if (r < 0)
                return r;
        ret->port_given = colon != NULL;
        ret->port = colon ? port_of(colon + 1, end) : default_port(ret->scheme);
        if (colon && !ret->port)
                return xp_errorf(err,
                                 -EINVAL,
                                 "port \"%.*s\": not a number from 1 to 65535",
                                 (int)(end - colon - 1),
                                 colon + 1);
        if (!ret->port)
                return xp_errorf(err, -EINVAL, "no port, and %s has no default one", ret->scheme);
        ret->path = strdup(end);
        return ret->path ? 0 : -ENOMEM;
}

int xp_url_split(const char *url, struct xp_url *ret, struct xp_error *err)
{
        int r;

        *ret = (struct xp_url){0};
        r = split(url, ret, err);
        if (r < 0)
                xp_url_done(ret);
        return r;
}

void xp_url_done(struct xp_url *url)
{
        free(url->scheme);
        free(url->host);
        free(url->path);
        *url = (struct xp_url){0};
}
