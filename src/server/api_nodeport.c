/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Services' node ports, as kube-apiserver allocates them: a Service of type NodePort (or
 * LoadBalancer with allocateLoadBalancerNodePorts) gets, for each port without one, a free
 * nodePort from --service-node-port-range (default 30000-32767), anywhere in it; a nodePort it
 * names must be in the range and free. An update keeps the ports the Service had (a port left
 * without a nodePort gets the one its port and protocol had), and a change to ClusterIP drops
 * them. What is taken comes from the stored Services at each allocation, so a restart loses
 * nothing and a deleted Service's ports are free again; ports handed out whose Service is not
 * stored yet are remembered until it is (or for a minute, for a create that failed).
 *
 * Nothing listens on a node port: xpool has no kube-proxy (docs/server.md, "Services").
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

#define RECENT_MAX 128
#define RECENT_S   60
#define KEY_MAX    256 /* "namespace/name" */

struct node_ports {
        pthread_mutex_t lock;
        unsigned first, last;
        char range[16];
        struct {
                unsigned port;
                time_t at;
                char key[KEY_MAX];
        } recent[RECENT_MAX];
        size_t next_recent;
};

int node_ports_new(const char *range, struct node_ports **ret, struct xp_error *err)
{
        unsigned first = 0, last = 0;
        struct node_ports *np;
        int n = 0;

        if (!range)
                range = "30000-32767";
        /* "A-B", or "A+N" as kube-apiserver's PortRange (N more after A) */
        if (sscanf(range, "%u-%u%n", &first, &last, &n) == 2 && !range[n]) {
        } else if (sscanf(range, "%u+%u%n", &first, &last, &n) == 2 && !range[n]) {
                last += first;
        } else {
                first = last = 0;
        }
        if (first == 0 || last > 65535 || last < first)
                return xp_errorf(err,
                                 -EINVAL,
                                 "--service-node-port-range '%s': expected a port range "
                                 "FIRST-LAST within 1-65535, e.g. 30000-32767",
                                 range);
        np = calloc(1, sizeof(*np));
        if (!np)
                return -ENOMEM;
        pthread_mutex_init(&np->lock, NULL);
        np->first = first;
        np->last = last;
        snprintf(np->range, sizeof(np->range), "%u-%u", first, last);
        *ret = np;
        return 0;
}

void node_ports_free(struct node_ports *np)
{
        if (!np)
                return;
        pthread_mutex_destroy(&np->lock);
        free(np);
}

#define IS_SET(map, p) ((map)[(p) / 8] & (1u << ((p) % 8)))
#define SET(map, p)    ((map)[(p) / 8] |= (uint8_t)(1u << ((p) % 8)))

int node_ports_pick(const struct node_ports *np,
                    const uint8_t taken[static NODE_PORTS_MAP],
                    unsigned want,
                    unsigned *ret,
                    struct xp_error *err)
{
        unsigned span = np->last - np->first + 1, start = 0;

        if (want) {
                if (want < np->first || want > np->last)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "provided port is not in the valid range. The range "
                                         "of valid ports is %s",
                                         np->range);
                if (IS_SET(taken, want))
                        return xp_errorf(err, -EINVAL, "provided port is already allocated");
                *ret = want;
                return 0;
        }
        /* anywhere in the range, as Kubernetes' allocator: no order to guess */
        if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
                start = (unsigned)time(NULL);
        for (unsigned i = 0; i < span; i++) {
                unsigned p = np->first + (start + i) % span;

                if (!IS_SET(taken, p)) {
                        *ret = p;
                        return 0;
                }
        }
        return xp_errorf(err, -ENOSPC, "range is full");
}

/* ---- what is taken -------------------------------------------------------------------------- */

static void service_key(const json_t *service, char key[static KEY_MAX])
{
        snprintf(key,
                 KEY_MAX,
                 "%s/%s",
                 xp_json_str_at(service, "metadata.namespace", ""),
                 xp_json_str_at(service, "metadata.name", ""));
}

static void mark_ports(const json_t *service, uint8_t *taken)
{
        int64_t hc = xp_json_int_at(service, "spec.healthCheckNodePort", 0);
        size_t i;
        json_t *p;

        json_array_foreach(xp_json_at(service, "spec.ports"), i, p)
        {
                int64_t port = xp_json_int_at(p, "nodePort", 0);

                if (port > 0 && port < 65536)
                        SET(taken, (unsigned)port);
        }
        if (hc > 0 && hc < 65536)
                SET(taken, (unsigned)hc);
}

/* The ports of the stored Services but key's own, and the recent ones not stored yet. */
static int taken_ports(struct node_ports *np,
                       struct xp_store *store,
                       const char *key,
                       uint8_t *taken,
                       struct xp_error *err)
{
        json_t *services = NULL, *s;
        time_t now = time(NULL);
        uint64_t version;
        size_t i, j;
        int r;

        r = xp_store_list(store, "services", NULL, &services, &version, err);
        if (r < 0)
                return r;
        json_array_foreach(services, i, s)
        {
                char own[KEY_MAX];

                service_key(s, own);
                /* a stored Service speaks for itself: its recent entries are done */
                for (j = 0; j < RECENT_MAX; j++)
                        if (np->recent[j].port && strcmp(np->recent[j].key, own) == 0)
                                np->recent[j].port = 0;
                if (strcmp(own, key) != 0)
                        mark_ports(s, taken);
        }
        json_decref(services);
        for (j = 0; j < RECENT_MAX; j++)
                if (np->recent[j].port && now - np->recent[j].at < RECENT_S)
                        SET(taken, np->recent[j].port);
        return 0;
}

static void remember(struct node_ports *np, unsigned port, const char *key)
{
        np->recent[np->next_recent].port = port;
        np->recent[np->next_recent].at = time(NULL);
        snprintf(np->recent[np->next_recent].key, KEY_MAX, "%s", key);
        np->next_recent = (np->next_recent + 1) % RECENT_MAX;
}

/* ---- one Service ---------------------------------------------------------------------------- */

/* The nodePort old had on the port of this number and protocol; 0: none. */
static int64_t old_node_port(const json_t *old, const json_t *port, bool any_of_old)
{
        size_t i;
        json_t *p;

        json_array_foreach(xp_json_at(old, "spec.ports"), i, p)
        {
                int64_t was = xp_json_int_at(p, "nodePort", 0);

                if (any_of_old) {
                        if (was && was == xp_json_int_at(port, "nodePort", -1))
                                return was;
                } else if (xp_json_int_at(p, "port", 0) == xp_json_int_at(port, "port", -1) &&
                           xp_streq0(xp_json_str_at(p, "protocol", "TCP"),
                                     xp_json_str_at(port, "protocol", "TCP"))) {
                        return was;
                }
        }
        return 0;
}

/* Each port's nodePort set; -EINVAL with problem (the field's words) when one cannot be. */
static int assign(struct node_ports *np,
                  const json_t *old,
                  json_t *service,
                  uint8_t *taken,
                  char *problem,
                  size_t size)
{
        char key[KEY_MAX];
        size_t i;
        json_t *p;

        service_key(service, key);
        json_array_foreach(xp_json_at(service, "spec.ports"), i, p)
        {
                int64_t want = xp_json_int_at(p, "nodePort", 0), kept;
                struct xp_error err = {0};
                unsigned port = 0;
                int r;

                kept = want ? old_node_port(old, p, true) : old_node_port(old, p, false);
                if (kept) {
                        r = json_object_set_new(p, "nodePort", json_integer(kept));
                        if (r < 0)
                                return -ENOMEM;
                        continue;
                }
                r = node_ports_pick(
                    np, taken, want > 0 && want < 65536 ? (unsigned)want : 0, &port, &err);
                if (r >= 0 && want && port != want)
                        r = xp_errorf(&err,
                                      -EINVAL,
                                      "provided port is not in the valid range. "
                                      "The range of valid ports is %s",
                                      np->range);
                if (r < 0) {
                        snprintf(problem,
                                 size,
                                 "spec.ports[%zu].nodePort: Invalid value: %lld: %s",
                                 i,
                                 (long long)want,
                                 xp_error_message(&err));
                        return -EINVAL;
                }
                SET(taken, port);
                remember(np, port, key);
                if (json_object_set_new(p, "nodePort", json_integer(port)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static bool needs_node_ports(const json_t *service)
{
        const char *type = xp_json_str_at(service, "spec.type", "ClusterIP");

        return xp_streq0(type, "NodePort") ||
               (xp_streq0(type, "LoadBalancer") &&
                xp_json_bool_at(service, "spec.allocateLoadBalancerNodePorts", true));
}

/* A change away from NodePort drops the ports it had, as kube-apiserver's
 * dropTypeDependentFields; a new nodePort on a ClusterIP Service is refused. */
static int drop_node_ports(const json_t *old, json_t *service, char *problem, size_t size)
{
        size_t i;
        json_t *p;

        json_array_foreach(xp_json_at(service, "spec.ports"), i, p)
        {
                int64_t want = xp_json_int_at(p, "nodePort", 0);

                if (!want)
                        continue;
                if (old && old_node_port(old, p, true)) {
                        json_object_del(p, "nodePort");
                        continue;
                }
                if (xp_streq0(xp_json_str_at(service, "spec.type", "ClusterIP"), "ClusterIP")) {
                        snprintf(problem,
                                 size,
                                 "spec.ports[%zu].nodePort: Forbidden: may not be "
                                 "used when `type` is 'ClusterIP'",
                                 i);
                        return -EINVAL;
                }
        }
        return 0;
}

int service_node_ports(const struct request *req,
                       const json_t *old,
                       json_t *service,
                       struct reply *ret)
{
        struct node_ports *np = req->api->node_ports;
        struct xp_error err = {0};
        char problem[512] = "", key[KEY_MAX];
        uint8_t *taken;
        int r;

        if (!np)
                return 1;
        if (!needs_node_ports(service))
                r = drop_node_ports(old, service, problem, sizeof(problem));
        else {
                taken = calloc(NODE_PORTS_MAP, 1);
                if (!taken)
                        return -ENOMEM;
                service_key(service, key);
                pthread_mutex_lock(&np->lock);
                r = taken_ports(np, req->api->store, key, taken, &err);
                if (r >= 0)
                        r = assign(np,
                                   needs_node_ports(old) ? old : NULL,
                                   service,
                                   taken,
                                   problem,
                                   sizeof(problem));
                pthread_mutex_unlock(&np->lock);
                free(taken);
        }
        if (r == -EINVAL)
                return reply_invalid(
                    ret, &xp_kind_service, xp_json_str_at(service, "metadata.name", ""), problem);
        if (r < 0)
                return r == -ENOMEM ? r : reply_store_error(ret, r, &xp_kind_service, NULL, &err);
        return 1;
}
