/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agents' usage, read and kept by the server (usage.h). One thread: each round lists the
 * nodes, reads every Ready one's /metrics/resource, and updates one record per node, pod and
 * device (its latest figures, the cumulative CPU time of the reading before for the rate, a ring
 * of points); records not seen for three rounds go.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "usage_internal.h"
#include "xpool/expo.h"
#include "xpool/history.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/map.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define DEFAULT_INTERVAL_MS 15000
#define FETCH_TIMEOUT_MS    5000

enum what {
        W_NODE,
        W_POD,
        W_DEVICE
};

struct record {
        char *key; /* "node/NAME", "pod/NS/NAME", "device/NODE/ID" */
        enum what what;
        uint64_t round;
        union {
                struct srv_usage_node node;
                struct srv_usage_pod pod;
                struct srv_usage_device device;
        } u;
        /* the reading before, for CPU rates: the pod's or node's, then each container's */
        double prev_time_s, prev_cpu_s, prev_container_cpu_s[SRV_USAGE_CONTAINERS_MAX];
        bool has_prev;
        struct srv_usage_point history[SRV_USAGE_HISTORY];
        size_t n_history, next;
};

struct srv_usage {
        struct xp_store *store;
        struct auth *auth;
        const struct agent_tls *agent_tls; /* NULL: plain HTTP to agents */
        const char *local_node;            /* its agent listens on 127.0.0.1 (xpool up) */
        int64_t interval_ms;
        pthread_mutex_t lock; /* guards records and round */
        pthread_cond_t wake;
        bool stopping;
        struct xp_map records;
        uint64_t round;
        pthread_t thread;
        bool started;
        _Atomic(struct xp_history *)
            history; /* the dashboard's hour (srv_usage_feed); NULL: none */
};

/* What one node's answer held, before it goes into the records. */
struct reading {
        const char *node;
        double time_s, node_cpu_s, node_memory;
        bool has_node_cpu, has_node_memory;
        struct srv_usage_pod *pods;
        double *pod_cpu_s, (*container_cpu_s)[SRV_USAGE_CONTAINERS_MAX];
        size_t n_pods, cap_pods;
        struct srv_usage_device *devices;
        size_t n_devices, cap_devices;
};

static void record_free(struct record *r)
{
        if (r) {
                free(r->key);
                free(r);
        }
}

/* The record of key, made when missing (NULL when out of memory). Under the lock. */
static struct record *record_get(struct srv_usage *u, enum what what, const char *key)
{
        struct record *r = xp_map_get(&u->records, key);

        if (r)
                return r;
        r = calloc(1, sizeof(*r));
        if (!r || !(r->key = strdup(key)) || xp_map_put(&u->records, r->key, r) < 0) {
                record_free(r);
                return NULL;
        }
        r->what = what;
        return r;
}

static void history_add(struct record *r, double time_s, double cpu, double memory)
{
        r->history[r->next] = (struct srv_usage_point){time_s, cpu, memory};
        r->next = (r->next + 1) % SRV_USAGE_HISTORY;
        if (r->n_history < SRV_USAGE_HISTORY)
                r->n_history++;
}

/* The pod of namespace/name in the reading, added when new; NULL when out of memory. */
static size_t reading_pod(struct reading *rd, const char *ns, const char *name)
{
        for (size_t i = 0; i < rd->n_pods; i++)
                if (strcmp(rd->pods[i].namespace, ns) == 0 && strcmp(rd->pods[i].name, name) == 0)
                        return i;
        if (rd->n_pods == rd->cap_pods) {
                size_t cap = rd->cap_pods ? rd->cap_pods * 2 : 16;
                void *a = realloc(rd->pods, cap * sizeof(*rd->pods));
                void *b = a ? realloc(rd->pod_cpu_s, cap * sizeof(*rd->pod_cpu_s)) : NULL;
                void *c =
                    b ? realloc(rd->container_cpu_s, cap * sizeof(*rd->container_cpu_s)) : NULL;

                if (a)
                        rd->pods = a;
                if (b)
                        rd->pod_cpu_s = b;
                if (c)
                        rd->container_cpu_s = c;
                if (!a || !b || !c)
                        return SIZE_MAX;
                rd->cap_pods = cap;
        }
        memset(&rd->pods[rd->n_pods], 0, sizeof(rd->pods[0]));
        rd->pod_cpu_s[rd->n_pods] = -1;
        snprintf(rd->pods[rd->n_pods].namespace, sizeof(rd->pods[0].namespace), "%s", ns);
        snprintf(rd->pods[rd->n_pods].name, sizeof(rd->pods[0].name), "%s", name);
        snprintf(rd->pods[rd->n_pods].node, sizeof(rd->pods[0].node), "%s", rd->node);
        return rd->n_pods++;
}

static int container_of(struct reading *rd, size_t p, const char *name)
{
        struct srv_usage_pod *pod = &rd->pods[p];

        for (size_t i = 0; i < pod->n_containers; i++)
                if (strcmp(pod->containers[i].name, name) == 0)
                        return (int)i;
        if (pod->n_containers == SRV_USAGE_CONTAINERS_MAX)
                return -1;
        snprintf(
            pod->containers[pod->n_containers].name, sizeof(pod->containers[0].name), "%s", name);
        rd->container_cpu_s[p][pod->n_containers] = -1;
        return (int)pod->n_containers++;
}

static int on_pod_sample(struct reading *rd, const struct xp_expo_sample *s)
{
        const char *ns = xp_expo_sample_label(s, "namespace"),
                   *pod = xp_expo_sample_label(s, "pod");
        const char *container = xp_expo_sample_label(s, "container");
        bool cpu = strstr(s->name, "cpu") != NULL;
        size_t p;
        int c;

        if (!ns || !pod)
                return 0;
        p = reading_pod(rd, ns, pod);
        if (p == SIZE_MAX)
                return -ENOMEM;
        if (!container) {
                if (cpu)
                        rd->pod_cpu_s[p] = s->value;
                else
                        rd->pods[p].memory_bytes = s->value;
                return 0;
        }
        c = container_of(rd, p, container);
        if (c >= 0 && cpu)
                rd->container_cpu_s[p][c] = s->value;
        else if (c >= 0)
                rd->pods[p].containers[c].memory_bytes = s->value;
        return 0;
}

/* A pod's own utilisation of one of its devices: folded into the mean over its devices. */
static int on_pod_device_sample(struct reading *rd, const struct xp_expo_sample *s)
{
        const char *ns = xp_expo_sample_label(s, "namespace"),
                   *pod = xp_expo_sample_label(s, "pod");
        struct srv_usage_pod *p;
        size_t i;

        if (!ns || !pod)
                return 0;
        i = reading_pod(rd, ns, pod);
        if (i == SIZE_MAX)
                return -ENOMEM;
        p = &rd->pods[i];
        p->has_device_utilization = true;
        p->n_devices++;
        p->device_utilization_percent += (s->value - p->device_utilization_percent) / p->n_devices;
        return 0;
}

static const char *or_empty(const char *s)
{
        return s ? s : "";
}

static int on_device_sample(struct reading *rd, const struct xp_expo_sample *s)
{
        const char *id = xp_expo_sample_label(s, "device");
        struct srv_usage_device *d = NULL;

        if (!id)
                return 0;
        for (size_t i = 0; i < rd->n_devices && !d; i++)
                if (strcmp(rd->devices[i].device, id) == 0)
                        d = &rd->devices[i];
        if (!d) {
                if (rd->n_devices == rd->cap_devices) {
                        size_t cap = rd->cap_devices ? rd->cap_devices * 2 : 16;
                        struct srv_usage_device *grown = realloc(rd->devices, cap * sizeof(*grown));

                        if (!grown)
                                return -ENOMEM;
                        rd->devices = grown;
                        rd->cap_devices = cap;
                }
                d = &rd->devices[rd->n_devices++];
                memset(d, 0, sizeof(*d));
                snprintf(d->node, sizeof(d->node), "%s", rd->node);
                snprintf(d->device, sizeof(d->device), "%s", id);
                snprintf(d->kind, sizeof(d->kind), "%s", or_empty(xp_expo_sample_label(s, "kind")));
                snprintf(
                    d->model, sizeof(d->model), "%s", or_empty(xp_expo_sample_label(s, "model")));
        }
        if (strcmp(s->name, "xpool_device_utilization_percent") == 0) {
                d->has_utilization = true;
                d->utilization_percent = s->value;
        } else if (strcmp(s->name, "xpool_device_memory_used_bytes") == 0) {
                d->has_memory_used = true;
                d->memory_used_bytes = s->value;
        } else if (strcmp(s->name, "xpool_device_memory_total_bytes") == 0) {
                d->has_memory_total = true;
                d->memory_total_bytes = s->value;
        }
        return 0;
}

static int on_sample(const struct xp_expo_sample *s, void *userdata)
{
        struct reading *rd = userdata;

        if (strcmp(s->name, "node_cpu_usage_seconds_total") == 0) {
                rd->node_cpu_s = s->value;
                rd->has_node_cpu = true;
        } else if (strcmp(s->name, "node_memory_working_set_bytes") == 0) {
                rd->node_memory = s->value;
                rd->has_node_memory = true;
        } else if (strcmp(s->name, "xpool_resource_time_seconds") == 0) {
                rd->time_s = s->value;
        } else if (strcmp(s->name, "xpool_pod_device_utilization_percent") == 0) {
                return on_pod_device_sample(rd, s);
        } else if (strncmp(s->name, "container_", 10) == 0 || strncmp(s->name, "pod_", 4) == 0) {
                return on_pod_sample(rd, s);
        } else if (strncmp(s->name, "xpool_device_", 13) == 0) {
                return on_device_sample(rd, s);
        }
        return 0;
}

static void reading_done(struct reading *rd)
{
        free(rd->pods);
        free(rd->pod_cpu_s);
        free(rd->container_cpu_s);
        free(rd->devices);
}

/* A CPU rate from two readings of a cumulative time; -1 when there is none yet. */
static double rate(double prev_s, double now_s, double prev_t, double now_t)
{
        return now_t > prev_t && now_s >= prev_s && prev_s >= 0
                   ? (now_s - prev_s) / (now_t - prev_t)
                   : -1;
}

/* The node's and its pods' and devices' records from one reading. Under the lock. */
static void apply_reading(struct srv_usage *u, struct reading *rd)
{
        char key[600];
        struct record *r;

        snprintf(key, sizeof(key), "node/%s", rd->node);
        if ((r = record_get(u, W_NODE, key))) {
                double cpu = rd->has_node_cpu && r->has_prev
                                 ? rate(r->prev_cpu_s, rd->node_cpu_s, r->prev_time_s, rd->time_s)
                                 : -1;

                snprintf(r->u.node.name, sizeof(r->u.node.name), "%s", rd->node);
                r->round = u->round;
                if (cpu >= 0) {
                        r->u.node.cpu_cores = cpu;
                        r->u.node.window_s = rd->time_s - r->prev_time_s;
                        r->u.node.time_s = rd->time_s;
                        r->u.node.memory_bytes = rd->node_memory;
                        history_add(r, rd->time_s, cpu, rd->node_memory);
                }
                r->prev_cpu_s = rd->node_cpu_s;
                r->prev_time_s = rd->time_s;
                r->has_prev = rd->has_node_cpu;
        }
        for (size_t i = 0; i < rd->n_pods; i++) {
                struct srv_usage_pod *p = &rd->pods[i];
                double cpu;

                snprintf(key, sizeof(key), "pod/%s/%s", p->namespace, p->name);
                if (!(r = record_get(u, W_POD, key)))
                        continue;
                cpu = r->has_prev
                          ? rate(r->prev_cpu_s, rd->pod_cpu_s[i], r->prev_time_s, rd->time_s)
                          : -1;
                for (size_t c = 0; cpu >= 0 && c < p->n_containers; c++) {
                        double cc = rate(r->prev_container_cpu_s[c],
                                         rd->container_cpu_s[i][c],
                                         r->prev_time_s,
                                         rd->time_s);

                        p->containers[c].cpu_cores = cc > 0 ? cc : 0;
                }
                if (cpu >= 0) {
                        p->cpu_cores = cpu;
                        p->time_s = rd->time_s;
                        p->window_s = rd->time_s - r->prev_time_s;
                        r->u.pod = *p;
                        history_add(r, rd->time_s, cpu, p->memory_bytes);
                }
                r->round = u->round;
                r->prev_cpu_s = rd->pod_cpu_s[i];
                memcpy(r->prev_container_cpu_s,
                       rd->container_cpu_s[i],
                       sizeof(r->prev_container_cpu_s));
                r->prev_time_s = rd->time_s;
                r->has_prev = rd->pod_cpu_s[i] >= 0;
        }
        for (size_t i = 0; i < rd->n_devices; i++) {
                snprintf(key, sizeof(key), "device/%s/%s", rd->node, rd->devices[i].device);
                if (!(r = record_get(u, W_DEVICE, key)))
                        continue;
                rd->devices[i].time_s = rd->time_s;
                r->u.device = rd->devices[i];
                r->round = u->round;
                history_add(r,
                            rd->time_s,
                            rd->devices[i].utilization_percent,
                            rd->devices[i].memory_used_bytes);
        }
}

static bool node_target(struct srv_usage *u, const json_t *node, struct usage_target *t)
{
        json_t *status = json_object_get(node, "status"), *x;
        const char *name =
            json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
        bool ready = false;
        json_int_t port;
        size_t i;

        json_array_foreach(json_object_get(status, "conditions"),
                           i,
                           x) if (xp_streq0(json_string_value(json_object_get(x, "type")), "Ready"))
            ready = xp_streq0(json_string_value(json_object_get(x, "status")), "True");
        *t = (struct usage_target){.path = "/metrics/resource", .tls = u->agent_tls};
        json_array_foreach(json_object_get(status, "addresses"), i, x)
        {
                const char *a = json_string_value(json_object_get(x, "address"));

                if (xp_streq0(json_string_value(json_object_get(x, "type")), "InternalIP") && a &&
                    strlen(a) < sizeof(t->host) && !t->host[0])
                        snprintf(t->host, sizeof(t->host), "%s", a);
        }
        port = json_integer_value(json_object_get(
            json_object_get(json_object_get(status, "daemonEndpoints"), "kubeletEndpoint"),
            "Port"));
        if (!ready || !name || !t->host[0] || port <= 0 || port > 65535 ||
            strlen(name) >= sizeof(t->node))
                return false;
        t->port = (unsigned)port;
        if (u->local_node && xp_streq0(name, u->local_node))
                snprintf(t->host, sizeof(t->host), "127.0.0.1");
        snprintf(t->node, sizeof(t->node), "%s", name);
        return u->auth && auth_node_key(u->auth, name, t->token_id, t->key) >= 0;
}

/* The devices' utilisation into the dashboard's history (thread-safe on its own). */
static void feed_history(struct srv_usage *u, const struct reading *rd)
{
        struct xp_history *history = atomic_load(&u->history);

        for (size_t i = 0; history && i < rd->n_devices; i++)
                if (rd->devices[i].has_utilization)
                        (void)xp_history_record_usage(history,
                                                      (int64_t)rd->time_s,
                                                      rd->node,
                                                      rd->devices[i].device,
                                                      rd->devices[i].kind,
                                                      rd->devices[i].utilization_percent);
}

static void read_node(struct srv_usage *u, const struct usage_target *t)
{
        struct reading rd = {.node = t->node};
        _cleanup_free_ char *body = NULL;
        struct xp_error err = {0};
        size_t len = 0;
        int r;

        r = usage_fetch(t, FETCH_TIMEOUT_MS, &body, &len, &err);
        if (r >= 0)
                r = xp_expo_parse(body, len, XP_EXPO_TEXT, on_sample, &rd, &err);
        if (r < 0) {
                xp_debug("usage", "node %s: %s", t->node, xp_error_message(&err));
        } else if (rd.time_s > 0) {
                pthread_mutex_lock(&u->lock);
                apply_reading(u, &rd);
                pthread_mutex_unlock(&u->lock);
                feed_history(u, &rd);
        }
        reading_done(&rd);
}

/* Records not seen for three rounds go: their node or pod is gone. Under the lock. */
static void prune(struct srv_usage *u)
{
        for (size_t i = 0; i < u->records.cap; i++) {
                struct record *r = u->records.values[i];

                if (r && r->round + 3 <= u->round) {
                        xp_map_del(&u->records, r->key);
                        record_free(r);
                }
        }
}

static void usage_round(struct srv_usage *u)
{
        json_t *nodes = NULL, *node;
        uint64_t version;
        size_t i;

        if (xp_store_list(u->store, "nodes", "", &nodes, &version, NULL) < 0)
                return;
        pthread_mutex_lock(&u->lock);
        u->round++;
        pthread_mutex_unlock(&u->lock);
        json_array_foreach(nodes, i, node)
        {
                struct usage_target t;

                if (node_target(u, node, &t))
                        read_node(u, &t);
        }
        json_decref(nodes);
        pthread_mutex_lock(&u->lock);
        prune(u);
        pthread_mutex_unlock(&u->lock);
}

static void *usage_main(void *arg)
{
        struct srv_usage *u = arg;

        pthread_mutex_lock(&u->lock);
        while (!u->stopping) {
                struct timespec until;

                pthread_mutex_unlock(&u->lock);
                usage_round(u);
                until = xp_monotonic_deadline(u->interval_ms);
                pthread_mutex_lock(&u->lock);
                while (!u->stopping && pthread_cond_timedwait(&u->wake, &u->lock, &until) == 0)
                        ;
        }
        pthread_mutex_unlock(&u->lock);
        return NULL;
}

void srv_usage_feed(struct srv_usage *u, struct xp_history *history)
{
        if (u)
                atomic_store(&u->history, history);
}

void srv_usage_free(struct srv_usage *u)
{
        if (!u)
                return;
        pthread_mutex_lock(&u->lock);
        u->stopping = true;
        pthread_cond_broadcast(&u->wake);
        pthread_mutex_unlock(&u->lock);
        if (u->started)
                pthread_join(u->thread, NULL);
        for (size_t i = 0; i < u->records.cap; i++)
                record_free(u->records.values[i]);
        xp_map_done(&u->records);
        pthread_cond_destroy(&u->wake);
        pthread_mutex_destroy(&u->lock);
        free(u);
}

int srv_usage_start(struct xp_store *store,
                    struct auth *auth,
                    const struct agent_tls *agent_tls,
                    int64_t interval_ms,
                    const char *local_node,
                    struct srv_usage **ret,
                    struct xp_error *err)
{
        struct srv_usage *u = calloc(1, sizeof(*u));
        int r;

        if (!u)
                return xp_errorf(err, -ENOMEM, "out of memory");
        u->store = store;
        u->auth = auth;
        u->agent_tls = agent_tls;
        u->local_node = local_node;
        u->interval_ms = interval_ms > 0 ? interval_ms : DEFAULT_INTERVAL_MS;
        pthread_mutex_init(&u->lock, NULL);
        xp_cond_init_monotonic(&u->wake);
        r = -pthread_create(&u->thread, NULL, usage_main, u);
        if (r < 0) {
                srv_usage_free(u);
                return xp_errorf(err, r, "cannot start the usage reader: %s", strerror(-r));
        }
        u->started = true;
        *ret = u;
        return 0;
}

/* Copies the records of what that have figures (and, for pods, are in namespace). */
static int
collect(struct srv_usage *u, enum what what, const char *namespace, void **ret, size_t *ret_n)
{
        size_t size = what == W_NODE  ? sizeof(struct srv_usage_node)
                      : what == W_POD ? sizeof(struct srv_usage_pod)
                                      : sizeof(struct srv_usage_device);
        char *out;
        size_t n = 0;

        pthread_mutex_lock(&u->lock);
        out = calloc(u->records.n + 1, size);
        for (size_t i = 0; out && i < u->records.cap; i++) {
                struct record *r = u->records.values[i];

                if (!r || r->what != what)
                        continue;
                if (what == W_NODE && r->u.node.time_s <= 0)
                        continue;
                if (what == W_POD && (r->u.pod.time_s <= 0 ||
                                      (namespace && strcmp(namespace, r->u.pod.namespace) != 0)))
                        continue;
                memcpy(out + n * size, &r->u, size);
                n++;
        }
        pthread_mutex_unlock(&u->lock);
        if (!out)
                return -ENOMEM;
        *ret = out;
        *ret_n = n;
        return 0;
}

int srv_usage_nodes(struct srv_usage *u, struct srv_usage_node **ret, size_t *ret_n)
{
        return collect(u, W_NODE, NULL, (void **)ret, ret_n);
}

int srv_usage_pods(struct srv_usage *u,
                   const char *namespace,
                   struct srv_usage_pod **ret,
                   size_t *ret_n)
{
        return collect(u, W_POD, namespace, (void **)ret, ret_n);
}

int srv_usage_devices(struct srv_usage *u, struct srv_usage_device **ret, size_t *ret_n)
{
        return collect(u, W_DEVICE, NULL, (void **)ret, ret_n);
}

int srv_usage_history(struct srv_usage *u,
                      const char *what,
                      const char *key,
                      struct srv_usage_point **ret,
                      size_t *ret_n)
{
        _cleanup_free_ char *full = NULL;
        struct srv_usage_point *out = NULL;
        struct record *r;
        size_t n = 0;

        if (asprintf(&full, "%s/%s", what, key) < 0)
                return -ENOMEM;
        bool found;

        pthread_mutex_lock(&u->lock);
        r = xp_map_get(&u->records, full);
        found = r && r->n_history > 0;
        if (found && (out = calloc(r->n_history, sizeof(*out)))) {
                size_t first = (r->next + SRV_USAGE_HISTORY - r->n_history) % SRV_USAGE_HISTORY;

                for (n = 0; n < r->n_history; n++)
                        out[n] = r->history[(first + n) % SRV_USAGE_HISTORY];
        }
        pthread_mutex_unlock(&u->lock);
        if (!found)
                return -ENOENT;
        if (!out)
                return -ENOMEM;
        *ret = out;
        *ret_n = n;
        return 0;
}
