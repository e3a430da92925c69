/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `kubernetes` Service's variables the kubelet gives every container (launch_svcenv.c), in
 * the names and formats of the kubelet's Service environment. The values are the Service's
 * address that the agent forwards to the server (apiaddr.c), or, where it does not, the address
 * the agent itself reaches the API server at (docs/networking.md, "The API from pods").
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_internal.h"

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

int launch_env_add_kubernetes(struct env_list *env, const char *host, unsigned port)
{
        bool v6 = strchr(host, ':') != NULL;
        char link[300], name[64];
        int r;

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
