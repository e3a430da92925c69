/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NodePorts filter: a node where a placed pod already holds one of the pod's hostPorts
 * (same protocol and port, and the same hostIP or either the wildcard) is refused, as
 * kube-scheduler refuses it, rather than left for the node agent to fail. A pod's hostPorts are
 * those of its containers and sidecars (init containers with restartPolicy Always, which run
 * beside them); a plain init container has exited before the containers start, so Kubernetes
 * does not count its ports and neither do we. Pods without hostPorts cost one comparison.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

void hostports_free(struct shostport *ports, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(ports[i].host_ip);
        free(ports);
}

static bool is_wildcard(const char *ip)
{
        return !ip || !*ip || strcmp(ip, "0.0.0.0") == 0;
}

bool hostports_conflict(const struct shostport *a, const struct shostport *b)
{
        if (a->port != b->port || strcmp(a->protocol, b->protocol) != 0)
                return false;
        return !a->host_ip || !b->host_ip || strcmp(a->host_ip, b->host_ip) == 0;
}

static int add_port(const json_t *port, struct shostport **ports, size_t *n, size_t *cap)
{
        json_int_t host = json_integer_value(json_object_get(port, "hostPort"));
        const char *proto = json_string_value(json_object_get(port, "protocol"));
        const char *ip = json_string_value(json_object_get(port, "hostIP"));
        struct shostport *p;

        if (host <= 0 || host > 65535)
                return 0; /* no hostPort; validation refuses one out of range */
        if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 4;
                struct shostport *m = realloc(*ports, c * sizeof(*m));
                if (!m)
                        return -ENOMEM;
                *ports = m;
                *cap = c;
        }
        p = &(*ports)[*n];
        *p = (struct shostport){.port = (int32_t)host};
        /* the protocol's default, TCP, when unset */
        snprintf(p->protocol, sizeof(p->protocol), "%s", proto && *proto ? proto : "TCP");
        if (!is_wildcard(ip) && !(p->host_ip = strdup(ip)))
                return -ENOMEM;
        (*n)++;
        return 0;
}

static int
container_ports(const struct xp_container *c, struct shostport **ports, size_t *n, size_t *cap)
{
        const json_t *list = json_object_get(c->extra, "ports");
        size_t i;
        json_t *port;

        if (!json_is_array(list))
                return 0;
        json_array_foreach(list, i, port)
        {
                int r = add_port(port, ports, n, cap);
                if (r < 0)
                        return r;
        }
        return 0;
}

int hostports_from_pod(const struct xp_pod *pod, struct shostport **ret, size_t *ret_n)
{
        struct shostport *ports = NULL;
        size_t n = 0, cap = 0;
        int r = 0;

        for (size_t i = 0; r == 0 && i < pod->spec.init_containers.n; i++)
                if (sched_container_is_sidecar(&pod->spec.init_containers.items[i]))
                        r = container_ports(&pod->spec.init_containers.items[i], &ports, &n, &cap);
        for (size_t i = 0; r == 0 && i < pod->spec.containers.n; i++)
                r = container_ports(&pod->spec.containers.items[i], &ports, &n, &cap);
        if (r < 0) {
                hostports_free(ports, n);
                return r;
        }
        *ret = ports;
        *ret_n = n;
        return 0;
}

static bool pod_holds(const struct spod *p, const struct shostport *want, size_t n_want)
{
        /* a victim taken out by preemption gives its ports back for the question asked */
        if (p->ports_released)
                return false;
        for (size_t i = 0; i < p->n_ports; i++)
                for (size_t k = 0; k < n_want; k++)
                        if (hostports_conflict(&p->ports[i], &want[k]))
                                return true;
        return false;
}

static bool hostports_filter(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        if (ctx->req.n_ports == 0)
                return true;
        for (size_t i = 0; i < node->n_pods; i++)
                if (node->pods[i]->n_ports > 0 &&
                    pod_holds(node->pods[i], ctx->req.ports, ctx->req.n_ports)) {
                        reasons_add(r, REASON_HOST_PORTS, 0, NULL);
                        return false;
                }
        return true;
}

const struct filter_ops hostports_ops = {.name = "NodePorts", .filter = hostports_filter};
