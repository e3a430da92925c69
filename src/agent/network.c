/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's network step (network.h): a table of the pods' networks by uid, and workers that
 * set them up, tear them down and CHECK the adopted ones, one job at a time per pod, so that the
 * reconcile loop only ever asks and is told (through an eventfd) when a setup ended.
 */
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "network.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"
#include "xpool/workers.h"

#define WORKERS_MAX 8

enum job_kind {
        JOB_SETUP,
        JOB_TEARDOWN,
        JOB_CHECK,
};

struct netentry {
        char *uid, *namespace, *name;  /* namespace and name: "" until the pod is seen */
        enum xp_agent_net_state state; /* NONE, READY or FAILED; PENDING is busy && not READY */
        bool busy;                     /* a job of it is queued or running */
        bool release;                  /* the pod is over: tear down (after the job) */
        struct xp_podnet_info info;    /* READY */
        char message[512];             /* FAILED */
        int64_t retry_at_ns, backoff_ms;
};

struct job {
        struct xp_work work; /* first: the workers' pool's */
        enum job_kind kind;
        struct netentry *entry; /* kept while busy; its uid never changes */
        json_t *runtime_config;
        int64_t not_before_ns;
        /* taken under the lock when the job starts: want() may rename the entry meanwhile */
        char *namespace, *name;
        int64_t backoff_ms;
        struct job *next;
};

struct xp_agent_network {
        struct xp_podnet *pn;
        struct xp_agent_network_config config;
        struct xp_workers *workers; /* its lock is the table's (no threads without pn) */
        void *tree;                 /* entries by uid */
        struct job *jobs, *jobs_tail;
        char **changed;
        size_t n_changed;
        int fd;
};

static int64_t now_ns(void)
{
        return xp_agent_now_ns();
}

static int entry_compare(const void *a, const void *b)
{
        return strcmp(((const struct netentry *)a)->uid, ((const struct netentry *)b)->uid);
}

static void entry_free(void *p)
{
        struct netentry *e = p;

        if (!e)
                return;
        free(e->uid);
        free(e->namespace);
        free(e->name);
        free(e);
}

static struct netentry *entry_find(struct xp_agent_network *net, const char *uid)
{
        struct netentry key = {.uid = (char *)uid},
                        **found = tfind(&key, &net->tree, entry_compare);

        return found ? *found : NULL;
}

/* The entry of uid, made when missing (NONE). NULL on -ENOMEM. */
static struct netentry *entry_get(struct xp_agent_network *net, const char *uid)
{
        struct netentry *e = entry_find(net, uid);

        if (e)
                return e;
        e = calloc(1, sizeof(*e));
        if (!e || !(e->uid = strdup(uid)) || !(e->namespace = strdup("")) ||
            !(e->name = strdup("")) || !tsearch(e, &net->tree, entry_compare)) {
                entry_free(e);
                return NULL;
        }
        e->backoff_ms = net->config.backoff_initial_ms;
        return e;
}

static void entry_drop(struct xp_agent_network *net, struct netentry *e)
{
        tdelete(e, &net->tree, entry_compare);
        entry_free(e);
}

/* Names the entry after its pod (events and logs say which pod). */
static void entry_name(struct netentry *e, const struct xp_pod *pod)
{
        const char *ns = pod->metadata.namespace ? pod->metadata.namespace : "";
        const char *name = pod->metadata.name ? pod->metadata.name : "";
        char *a, *b;

        if (strcmp(e->namespace, ns) == 0 && strcmp(e->name, name) == 0)
                return;
        a = strdup(ns);
        b = strdup(name);
        if (!a || !b) {
                free(a);
                free(b);
                return;
        }
        free(e->namespace);
        free(e->name);
        e->namespace = a;
        e->name = b;
}

/* Queues a job of e (under the lock); e is busy until it is done. -ENOMEM. */
static int queue(struct xp_agent_network *net,
                 struct netentry *e,
                 enum job_kind kind,
                 json_t *rc,
                 int64_t not_before)
{
        struct job *j = calloc(1, sizeof(*j));

        if (!j) {
                json_decref(rc);
                return -ENOMEM;
        }
        *j = (struct job){
            .kind = kind, .entry = e, .runtime_config = rc, .not_before_ns = not_before};
        if (net->jobs_tail)
                net->jobs_tail->next = j;
        else
                net->jobs = j;
        net->jobs_tail = j;
        e->busy = true;
        xp_workers_wake(net->workers);
        return 0;
}

/* Tells the reconcile loop that uid's setup ended (under the lock). */
static void announce(struct xp_agent_network *net, const char *uid)
{
        char **changed = realloc(net->changed, (net->n_changed + 1) * sizeof(*changed));
        uint64_t one = 1;
        ssize_t n;

        if (!changed || !(changed[net->n_changed] = strdup(uid))) {
                net->changed = changed ? changed : net->changed;
                xp_log(LOG_ERR, "agent: the network of pod %s: out of memory", uid);
                return;
        }
        net->changed = changed;
        net->n_changed++;
        n = write(net->fd, &one, sizeof(one));
        (void)n;
}

/* ---- the jobs ---------------------------------------------------------------------------------
 */

static void setup_done(struct xp_agent_network *net,
                       struct netentry *e,
                       int r,
                       const struct xp_podnet_info *info,
                       const struct xp_error *err)
{
        if (r >= 0) {
                e->state = XP_AGENT_NET_READY;
                e->info = *info;
                e->backoff_ms = net->config.backoff_initial_ms;
                return;
        }
        e->state = XP_AGENT_NET_FAILED;
        snprintf(e->message, sizeof(e->message), "%s", xp_error_message(err));
        e->retry_at_ns = now_ns() + e->backoff_ms * 1000000;
        e->backoff_ms = e->backoff_ms * 2 > net->config.backoff_max_ms ? net->config.backoff_max_ms
                                                                       : e->backoff_ms * 2;
}

/* Runs one job (without the lock), then records how it went (with it). */
static void run_job(struct xp_agent_network *net, struct job *j)
{
        struct netentry *e = j->entry;
        struct xp_podnet_info info;
        struct xp_error err = {0};
        char msg[XP_ERROR_MSG_MAX + 64];
        int r = 0;

        switch (j->kind) {
        case JOB_SETUP:
                r = xp_podnet_setup(net->pn,
                                    &(struct xp_podnet_pod){.uid = e->uid,
                                                            .pod_namespace = j->namespace,
                                                            .pod_name = j->name,
                                                            .runtime_config = j->runtime_config},
                                    &info,
                                    &err);
                if (r < 0) {
                        snprintf(msg,
                                 sizeof(msg),
                                 "Failed to create pod sandbox: %s",
                                 xp_error_message(&err));
                        xp_log(LOG_WARNING, "agent: pod %s/%s: %s", j->namespace, j->name, msg);
                        (void)xp_agent_event(net->config.events,
                                             j->namespace,
                                             j->name,
                                             e->uid,
                                             "Warning",
                                             "FailedCreatePodSandBox",
                                             msg);
                }
                break;
        case JOB_TEARDOWN:
                r = xp_podnet_teardown(net->pn, e->uid, &err);
                if (r < 0)
                        xp_log(
                            LOG_WARNING,
                            "agent: tearing down the network of pod %s (%s/%s): %s; trying again in %.1f s",
                            e->uid,
                            j->namespace,
                            j->name,
                            xp_error_message(&err),
                            (double)j->backoff_ms / 1000.0);
                break;
        case JOB_CHECK:
                r = xp_podnet_check(net->pn, e->uid, &err);
                xp_debug("net",
                         "agent: the CHECK of the adopted network of pod %s: %s",
                         e->uid,
                         r < 0 ? xp_error_message(&err) : "as it was made");
                break;
        }
        xp_workers_lock(net->workers);
        if (j->kind == JOB_SETUP)
                setup_done(net, e, r, &info, &err);
        e->busy = false;
        if (j->kind == JOB_TEARDOWN && r < 0) {
                /* tried again later: the pod's address stays taken until its DEL lands */
                int64_t delay = e->backoff_ms;

                e->backoff_ms =
                    delay * 2 > net->config.backoff_max_ms ? net->config.backoff_max_ms : delay * 2;
                (void)queue(net, e, JOB_TEARDOWN, NULL, now_ns() + delay * 1000000);
        } else if (j->kind == JOB_TEARDOWN && e->release) {
                entry_drop(net, e);
        } else if (j->kind == JOB_TEARDOWN) {
                /* an earlier agent's leftover cleaned up: the pod gets a new network */
                e->state = XP_AGENT_NET_NONE;
                announce(net, e->uid);
        } else if (e->release) {
                (void)queue(net, e, JOB_TEARDOWN, NULL, 0);
        } else if (j->kind == JOB_SETUP) {
                announce(net, e->uid);
        }
        xp_workers_unlock(net->workers);
}

/*
 * The first job due (under the lock), setups and teardowns before CHECKs (those of an agent's
 * start must not hold up the pods waiting to start), or NULL with *wait_ns the earliest not yet
 * due (0: none).
 */
static struct job *take_due(struct xp_agent_network *net, int64_t *wait_ns)
{
        int64_t now = now_ns();

        *wait_ns = 0;
        for (int pass = 0; pass < 2; pass++) {
                struct job *prev = NULL;

                for (struct job *j = net->jobs; j; prev = j, j = j->next) {
                        if (j->not_before_ns > now) {
                                if (*wait_ns == 0 || j->not_before_ns < *wait_ns)
                                        *wait_ns = j->not_before_ns;
                                continue;
                        }
                        if ((j->kind == JOB_CHECK) != (pass == 1))
                                continue;
                        if (prev)
                                prev->next = j->next;
                        else
                                net->jobs = j->next;
                        if (net->jobs_tail == j)
                                net->jobs_tail = prev;
                        return j;
                }
        }
        return NULL;
}

static void job_free(struct job *j)
{
        json_decref(j->runtime_config);
        free(j->namespace);
        free(j->name);
        free(j);
}

/* A job that could not start (out of memory): queued again in a second. */
static void job_lost(struct xp_agent_network *net, struct job *j)
{
        xp_log(LOG_ERR, "agent: the network of pod %s: out of memory", j->entry->uid);
        xp_workers_lock(net->workers);
        j->entry->busy = false;
        (void)queue(net, j->entry, j->kind, TAKE_PTR(j->runtime_config), now_ns() + 1000000000);
        xp_workers_unlock(net->workers);
}

/* The first job due, with what it needs of its entry (under the lock); none while stopping. */
static int
worker_take(void *userdata, void *ctx, bool stopping, struct xp_work **ret, int64_t *ret_wake_ns)
{
        struct xp_agent_network *net = userdata;
        int64_t wait_ns;
        struct job *j;

        (void)ctx;
        *ret_wake_ns = 0;
        if (stopping)
                return 0;
        j = take_due(net, &wait_ns);
        if (!j) {
                /* the jobs' times are the wall clock's, the pool's the monotonic clock's */
                if (wait_ns) {
                        int64_t left = wait_ns - now_ns();

                        *ret_wake_ns = xp_monotonic_ns() + (left > 0 ? left : 1);
                }
                return 0;
        }
        j->namespace = strdup(j->entry->namespace);
        j->name = strdup(j->entry->name);
        j->backoff_ms = j->entry->backoff_ms;
        *ret = &j->work;
        return 1;
}

static void worker_run(void *userdata, void *ctx, struct xp_work *work)
{
        struct job *j = (struct job *)work;

        (void)ctx;
        if (j->namespace && j->name)
                run_job(userdata, j);
        else
                job_lost(userdata, j);
}

static void worker_done(void *userdata, void *ctx, struct xp_work *work)
{
        (void)userdata;
        (void)ctx;
        job_free((struct job *)work);
}

static const struct xp_workers_ops worker_ops = {
    .run = worker_run,
    .take = worker_take,
    .done = worker_done,
};

/* ---- the table ------------------------------------------------------------------------------- */

/* The records an earlier agent left: ready ones adopted (and CHECKed), others cleaned up. */
static int adopt(struct xp_agent_network *net, struct xp_error *err)
{
        char **uids = NULL;
        size_t n = 0;
        int r = xp_podnet_list(net->pn, &uids, &n, err);

        for (size_t i = 0; i < n; i++) {
                struct netentry *e = r >= 0 ? entry_get(net, uids[i]) : NULL;

                if (r >= 0 && !e)
                        r = xp_errorf(err, -ENOMEM, "out of memory");
                if (e && xp_podnet_get(net->pn, e->uid, &e->info, NULL) >= 0) {
                        e->state = XP_AGENT_NET_READY;
                        /* a diagnosis only: Debian's bridge and portmap 1.1.1 fail the CHECK
                         * of sound networks (the bridge's MAC changes as veths join it; IPv6
                         * rules of IPv4 pods), and no kubelet acts on one */
                        if (xp_log_debug_enabled("net"))
                                r = queue(net, e, JOB_CHECK, NULL, 0);
                } else if (e) {
                        r = queue(net, e, JOB_TEARDOWN, NULL, 0);
                }
                free(uids[i]);
        }
        free(uids);
        return r;
}

int xp_agent_network_new(struct xp_podnet *pn,
                         const struct xp_agent_network_config *config,
                         struct xp_agent_network **ret,
                         struct xp_error *err)
{
        struct xp_agent_network *net = calloc(1, sizeof(*net));
        unsigned workers = config->workers ? config->workers : 4;
        int r = 0;

        if (!net) {
                xp_podnet_free(pn);
                return xp_errorf(err, -ENOMEM, "the pod network: out of memory");
        }
        net->pn = pn;
        net->config = *config;
        if (net->config.backoff_initial_ms <= 0)
                net->config.backoff_initial_ms = 1000;
        if (net->config.backoff_max_ms < net->config.backoff_initial_ms)
                net->config.backoff_max_ms = 300000;
        net->fd = -1;
        *ret = net;
        r = xp_workers_new(&(struct xp_workers_options){.ops = &worker_ops,
                                                        .userdata = net,
                                                        .threads = !pn ? 0
                                                                   : workers < WORKERS_MAX
                                                                       ? workers
                                                                       : WORKERS_MAX},
                           &net->workers,
                           err);
        if (r < 0 || !pn)
                return r < 0 ? xp_error_prefix(err, r, "starting the network workers") : 0;
        net->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (net->fd < 0)
                return xp_errorf(err, -errno, "eventfd: %s", strerror(errno));
        /* the workers run already: the records go into the table under its lock */
        xp_workers_lock(net->workers);
        r = adopt(net, err);
        xp_workers_unlock(net->workers);
        return r < 0 ? r : 0;
}

void xp_agent_network_free(struct xp_agent_network *net)
{
        if (!net)
                return;
        /* the jobs running are finished first, the queued ones left */
        xp_workers_free(net->workers);
        while (net->jobs) {
                struct job *j = net->jobs;

                net->jobs = j->next;
                job_free(j);
        }
        for (size_t i = 0; i < net->n_changed; i++)
                free(net->changed[i]);
        free(net->changed);
        tdestroy(net->tree, entry_free);
        if (net->fd >= 0)
                close(net->fd);
        xp_podnet_free(net->pn);
        free(net);
}

int xp_agent_network_fd(const struct xp_agent_network *net)
{
        return net ? net->fd : -1;
}

int xp_agent_network_take(struct xp_agent_network *net, char ***ret, size_t *ret_n)
{
        uint64_t v;
        ssize_t n;

        *ret = NULL;
        *ret_n = 0;
        if (!net || net->fd < 0)
                return 0;
        n = read(net->fd, &v, sizeof(v));
        (void)n;
        xp_workers_lock(net->workers);
        *ret = TAKE_PTR(net->changed);
        *ret_n = net->n_changed;
        net->n_changed = 0;
        xp_workers_unlock(net->workers);
        return 0;
}

/* Whether the pod runs on the node's network. */
static bool on_host(const struct xp_agent_network *net, const struct xp_pod *pod)
{
        return xp_agent_pod_host_network(pod) || !net || !net->pn ||
               (xp_podnet_unavailable(net->pn, NULL) && net->config.degrade_to_host);
}

static void view_of(const struct netentry *e, struct xp_agent_netview *ret)
{
        *ret = (struct xp_agent_netview){.state = e ? e->state : XP_AGENT_NET_NONE};
        if (!e)
                return;
        if (e->busy && e->state != XP_AGENT_NET_READY)
                ret->state = XP_AGENT_NET_PENDING;
        if (ret->state == XP_AGENT_NET_READY) {
                snprintf(ret->netns, sizeof(ret->netns), "%s", e->info.netns);
                for (size_t i = 0; i < e->info.n_ips; i++)
                        snprintf(ret->ips[i], sizeof(ret->ips[i]), "%s", e->info.ips[i].address);
                ret->n_ips = e->info.n_ips;
        } else if (ret->state == XP_AGENT_NET_FAILED) {
                snprintf(ret->message, sizeof(ret->message), "%s", e->message);
                ret->retry_at_ns = e->retry_at_ns;
        }
}

static void host_view(const char *host_ip, struct xp_agent_netview *ret)
{
        *ret = (struct xp_agent_netview){.state = XP_AGENT_NET_READY, .host = true};
        if (host_ip && *host_ip) {
                snprintf(ret->ips[0], sizeof(ret->ips[0]), "%s", host_ip);
                ret->n_ips = 1;
        }
}

void xp_agent_network_peek(struct xp_agent_network *net,
                           const struct xp_pod *pod,
                           const char *host_ip,
                           struct xp_agent_netview *ret)
{
        if (on_host(net, pod)) {
                host_view(host_ip, ret);
                return;
        }
        xp_workers_lock(net->workers);
        view_of(entry_find(net, pod->metadata.uid), ret);
        xp_workers_unlock(net->workers);
}

void xp_agent_network_want(struct xp_agent_network *net,
                           const struct xp_pod *pod,
                           const char *host_ip,
                           int64_t now,
                           struct xp_agent_netview *ret)
{
        struct netentry *e;
        json_t *rc = NULL;

        if (on_host(net, pod)) {
                host_view(host_ip, ret);
                return;
        }
        if (xp_agent_port_mappings(pod, &rc) < 0)
                rc = NULL; /* out of memory: the setup fails for want of the ports instead */
        xp_workers_lock(net->workers);
        e = entry_get(net, pod->metadata.uid);
        if (e)
                entry_name(e, pod);
        if (e && !e->busy && !e->release &&
            (e->state == XP_AGENT_NET_NONE ||
             (e->state == XP_AGENT_NET_FAILED && e->retry_at_ns <= now)) &&
            queue(net, e, JOB_SETUP, TAKE_PTR(rc), 0) >= 0)
                e->state = XP_AGENT_NET_NONE;
        view_of(e, ret);
        if (!e) {
                ret->state = XP_AGENT_NET_FAILED;
                snprintf(ret->message, sizeof(ret->message), "out of memory");
                ret->retry_at_ns = now + 1000000000;
        }
        xp_workers_unlock(net->workers);
        json_decref(rc);
}

/* Asks for e's teardown (under the lock). */
static void release(struct xp_agent_network *net, struct netentry *e)
{
        if (e->release)
                return;
        e->release = true;
        if (!e->busy)
                (void)queue(net, e, JOB_TEARDOWN, NULL, 0);
}

void xp_agent_network_release(struct xp_agent_network *net, const char *uid)
{
        struct netentry *e;

        if (!net || !net->pn)
                return;
        xp_workers_lock(net->workers);
        e = entry_find(net, uid);
        if (e)
                release(net, e);
        xp_workers_unlock(net->workers);
}

bool xp_agent_network_has(struct xp_agent_network *net, const char *uid)
{
        bool has;

        if (!net || !net->pn)
                return false;
        xp_workers_lock(net->workers);
        has = entry_find(net, uid) != NULL;
        xp_workers_unlock(net->workers);
        return has;
}

struct unknown_walk {
        struct xp_agent_network *net;
        bool (*known)(const char *uid, void *userdata);
        void *userdata;
};

static void release_if_unknown(const void *node, VISIT which, void *closure)
{
        struct unknown_walk *w = closure;
        struct netentry *e = *(struct netentry *const *)node;

        if ((which == postorder || which == leaf) && !w->known(e->uid, w->userdata)) {
                xp_log(LOG_INFO, "agent: the pod of network %s is gone: tearing it down", e->uid);
                release(w->net, e);
        }
}

void xp_agent_network_release_unknown(struct xp_agent_network *net,
                                      bool (*known)(const char *uid, void *userdata),
                                      void *userdata)
{
        struct unknown_walk w = {.net = net, .known = known, .userdata = userdata};

        if (!net || !net->pn)
                return;
        xp_workers_lock(net->workers);
        twalk_r(net->tree, release_if_unknown, &w);
        xp_workers_unlock(net->workers);
}

/* ---- what a pod asks for ----------------------------------------------------------------------
 */

bool xp_agent_pod_host_network(const struct xp_pod *pod)
{
        return json_is_true(json_object_get(pod->spec.extra, "hostNetwork"));
}

/* One container port as CNI's portMappings entry, NULL when it has no hostPort (or -ENOMEM). */
static json_t *mapping(const json_t *port, int *r)
{
        static const char *const protocols[] = {"tcp", "udp", "sctp"};
        json_int_t host = json_integer_value(json_object_get(port, "hostPort"));
        json_int_t container = json_integer_value(json_object_get(port, "containerPort"));
        const char *protocol = json_string_value(json_object_get(port, "protocol"));
        const char *host_ip = json_string_value(json_object_get(port, "hostIP"));
        const char *proto = protocol ? NULL : "tcp";
        json_t *m;

        *r = 0;
        for (size_t i = 0; protocol && i < XP_ELEMENTSOF(protocols); i++)
                if (strcasecmp(protocol, protocols[i]) == 0)
                        proto = protocols[i];
        if (host < 1 || host > 65535 || container < 1 || container > 65535 || !proto)
                return NULL;
        m = json_pack(
            "{s:I, s:I, s:s}", "hostPort", host, "containerPort", container, "protocol", proto);
        if (m && host_ip && *host_ip &&
            json_object_set_new(m, "hostIP", json_string(host_ip)) < 0) {
                json_decref(m);
                m = NULL;
        }
        if (!m)
                *r = -ENOMEM;
        return m;
}

int xp_agent_port_mappings(const struct xp_pod *pod, json_t **ret)
{
        json_t *list = json_array();
        int r = list ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < pod->spec.containers.n; i++) {
                const json_t *ports = json_object_get(pod->spec.containers.items[i].extra, "ports");

                for (size_t k = 0; r >= 0 && k < json_array_size(ports); k++) {
                        json_t *m = mapping(json_array_get(ports, k), &r);

                        if (m && json_array_append_new(list, m) < 0)
                                r = -ENOMEM;
                }
        }
        if (r < 0 || json_array_size(list) == 0) {
                json_decref(list);
                *ret = NULL;
                return r;
        }
        *ret = json_pack("{s:o}", "portMappings", list);
        return *ret ? 0 : -ENOMEM;
}
