/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `kubernetes` Service's variables the kubelet gives every container (launch_svcenv.c), in
 * the names and formats of the kubelet's Service environment. xpool has no kube-proxy, so the
 * Service's ClusterIP would lead nowhere: the values are the address the agent itself reaches
 * the API server at (docs/agent.md, "Environment").
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_internal.h"
#include "xpool/macro.h"

/* host (without an IPv6 address's brackets) and port of scheme://host[:port][/path] */
int launch_api_endpoint(const char *url, char **host, unsigned *port)
{
        const char *p = strstr(url, "://"), *end, *colon = NULL;
        unsigned long n = 0;
        char *stop;

        if (!p || p == url)
                return -EINVAL;
        *port = strncmp(url, "https://", 8) == 0 ? 443 : strncmp(url, "http://", 7) == 0 ? 80 : 0;
        p += 3;
        end = p + strcspn(p, "/?#");
        if (*p == '[') {
                const char *close = memchr(p, ']', (size_t)(end - p));

                if (!close || close == p + 1 || (close + 1 != end && close[1] != ':'))
                        return -EINVAL;
                colon = close + 1 != end ? close + 1 : NULL;
                *host = strndup(p + 1, (size_t)(close - p - 1));
        } else {
                colon = memchr(p, ':', (size_t)(end - p));
                if ((colon ? colon : end) == p)
                        return -EINVAL;
                *host = strndup(p, (size_t)((colon ? colon : end) - p));
        }
        if (!*host)
                return -ENOMEM;
        if (colon) {
                n = strtoul(colon + 1, &stop, 10);
                if (stop != end || stop == colon + 1 || n == 0 || n > 65535)
                        n = 0;
                *port = (unsigned)n;
        }
        if (*port == 0) {
                free(*host);
                *host = NULL;
                return -EINVAL;
        }
        return 0;
}

static int set_fmt(struct env_list *env, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_fmt(struct env_list *env, const char *name, const char *fmt, ...)
{
        char *value;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&value, fmt, ap);
        va_end(ap);
        return launch_env_set(env, name, n < 0 ? NULL : value);
}

int launch_env_add_kubernetes(struct env_list *env, const char *server_url, struct xp_error *err)
{
        _cleanup_free_ char *host = NULL;
        char link[300], name[64];
        unsigned port;
        bool v6;
        int r;

        r = launch_api_endpoint(server_url, &host, &port);
        if (r == -EINVAL)
                return xp_errorf(err,
                                 r,
                                 "the agent's server address \"%s\": not scheme://host[:port]",
                                 server_url);
        if (r < 0)
                return r;
        v6 = strchr(host, ':') != NULL;
        /* tcp://host:port, an IPv6 address in brackets, as Docker's links and the kubelet */
        snprintf(link, sizeof(link), "tcp://%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", port);
        snprintf(name, sizeof(name), "KUBERNETES_PORT_%u_TCP", port);
        if ((r = launch_env_set(env, "KUBERNETES_SERVICE_HOST", strdup(host))) < 0 ||
            (r = set_fmt(env, "KUBERNETES_SERVICE_PORT", "%u", port)) < 0 ||
            (r = set_fmt(env, "KUBERNETES_SERVICE_PORT_HTTPS", "%u", port)) < 0 ||
            (r = launch_env_set(env, "KUBERNETES_PORT", strdup(link))) < 0 ||
            (r = launch_env_set(env, name, strdup(link))) < 0)
                return r;
        strcat(name, "_PROTO");
        if ((r = launch_env_set(env, name, strdup("tcp"))) < 0)
                return r;
        strcpy(strrchr(name, '_'), "_PORT");
        if ((r = set_fmt(env, name, "%u", port)) < 0)
                return r;
        strcpy(strrchr(name, '_'), "_ADDR");
        return launch_env_set(env, name, strdup(host));
}
