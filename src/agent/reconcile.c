/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reconcile loop: one thread that waits on the watch's wake eventfd, the runtime's event fd
 * and the earliest wake time any pod asked for, then syncs the pods that changed: xp_podsync()
 * decides from the pod and its containers' records what to do, this file does it (start, kill,
 * forget containers; delete the pod) and hands the statuses to the writers.
 *
 * Re-adoption: the loop starts once the watch's first list is in, so the containers the runtime
 * lists are matched to the pods of that list; those of pods that are gone are synced with no pod,
 * which kills and forgets them.
 */
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent_internal.h"
#include "launch.h"
#include "network.h"
#include "nsgc.h"
#include "podclean.h"
#include "podconfig.h"
#include "podsync.h"
#include "probe.h"
#include "pull.h"
#include "xpool/codec.h"
#include "xpool/log.h"
#include "xpool/runtime.h"
#include "xpool/strutil.h"
#include "xpool/workers.h"

/* A pod syncs again at once after actions that change its records, at most this often. */
#define MAX_ROUNDS 8
/* configMap, secret and projected volumes are read again this often (the kubelet's sync) */
#define VOLUME_REFRESH_NS (10LL * 1000 * 1000 * 1000)
/* how often the runtime's orphaned pods' groups are looked for (after the first, at adoption) */
#define CGROUP_RECLAIM_NS (300LL * 1000 * 1000 * 1000)

struct podstate {
        char *uid, *namespace, *name;
        json_t *json;       /* the pod as last seen; NULL when gone or not known */
        struct xp_pod *pod; /* json decoded */
        bool gone;          /* deleted from the server, or absent from its list */
        bool done;          /* terminal and cleaned up: nothing to do until it is deleted */
        bool dirty;
        bool drop;
        bool admitted;     /* xp_launch_admit() asked (or not needed): never asked again */
        bool volumes_due;  /* its labels or annotations changed: its downwardAPI files now */
        unsigned starting; /* starts in flight: the pod is not synced until they are back */
        unsigned reads;    /* times its records were read from the runtime's files */
        struct xp_podsync_memory *memory;
        struct xp_container_record *records;
        size_t n_records;
        int64_t wake_at_ns;
};

struct loop {
        struct xp_agent *agent;
        struct xp_podsync_config config;
        void *tree; /* podstates by uid */
        struct podstate **states;
        size_t n_states, cap_states;
        int64_t volumes_at; /* the next xp_agent_volume_refresh() round */
        bool need_list;     /* read every container again (at start, after a start not seen back) */
        bool need_exits;    /* read the pods whose containers exited */
        bool adopted;       /* the first pass is done: networks of unknown pods torn down */
        int64_t reclaim_at; /* the next xp_runtime_reclaim_cgroups() */
        struct xp_workers *starter;      /* the container starts */
        struct xp_agent_podclean *clean; /* the teardown of pods that are over */
        struct xp_agent_probes *probes;  /* the running containers' probes (probe_agent.c) */
        unsigned freed; /* pods slimmed or dropped since the heap was last trimmed */
        /* starts back whose Events wait for their pod's sync: its status is put first, so that
         * the status writer is woken before the Events' (an idle start's Running waited 0.45 ms
         * behind three Events) */
        struct start_job *unannounced;
};

static int state_compare(const void *a, const void *b)
{
        return strcmp(((const struct podstate *)a)->uid, ((const struct podstate *)b)->uid);
}

static void state_free(struct podstate *st)
{
        if (!st)
                return;
        free(st->uid);
        free(st->namespace);
        free(st->name);
        json_decref(st->json);
        xp_pod_free(st->pod);
        xp_podsync_memory_free(st->memory);
        xp_container_records_free(st->records, st->n_records);
        free(st);
}

static struct podstate *state_find(struct loop *l, const char *uid)
{
        struct podstate key = {.uid = (char *)uid}, **found;

        found = tfind(&key, &l->tree, state_compare);
        return found ? *found : NULL;
}

/* The state of uid, made when missing. NULL on -ENOMEM. */
static struct podstate *state_get(struct loop *l, const char *uid, const char *ns, const char *name)
{
        struct podstate *st = state_find(l, uid);

        if (st)
                return st;
        if (l->n_states == l->cap_states) {
                size_t cap = l->cap_states ? 2 * l->cap_states : 64;
                struct podstate **states = realloc(l->states, cap * sizeof(*states));

                if (!states)
                        return NULL;
                l->states = states;
                l->cap_states = cap;
        }
        st = calloc(1, sizeof(*st));
        if (!st)
                return NULL;
        st->uid = strdup(uid);
        st->namespace = strdup(ns ? ns : "");
        st->name = strdup(name ? name : "");
        st->memory = xp_podsync_memory_new();
        if (!st->uid || !st->namespace || !st->name || !st->memory ||
            !tsearch(st, &l->tree, state_compare)) {
                state_free(st);
                return NULL;
        }
        l->states[l->n_states++] = st;
        return st;
}

/* Whether metadata.key (labels, annotations) differs between two versions of a pod. */
static bool meta_changed(const json_t *before, const json_t *after, const char *key)
{
        const json_t *a = json_object_get(json_object_get(before, "metadata"), key);
        const json_t *b = json_object_get(json_object_get(after, "metadata"), key);

        return (a || b) && !(a && b && json_equal(a, b));
}

/* A done pod's state holds only who it is: nothing of its spec is ever looked at again. The
 * watch's slim entry is shared rather than copied. */
static void keep_slim(struct podstate *st, json_t *json)
{
        json_t *slim = !json                            ? NULL
                       : !json_object_get(json, "spec") ? json_incref(json)
                                                        : xp_agent_pod_slim(json);

        xp_pod_free(st->pod);
        st->pod = NULL;
        if (slim) {
                json_decref(st->json);
                st->json = slim;
        }
}

/* The pod's cleanup is over: it is held slim here and in the watch's pods until it is deleted. */
static void set_done(struct loop *l, struct podstate *st)
{
        json_auto_t *slim = NULL;

        st->done = true;
        l->freed++;
        if (xp_agent_pods_mark_done(&l->agent->pods, st->uid, &slim) < 0)
                xp_log(LOG_WARNING,
                       "agent: pod %s/%s: out of memory (its whole object is kept)",
                       st->namespace,
                       st->name);
        /* a pod the watch no longer holds keeps what it has (none: it is gone) */
        keep_slim(st, slim && st->json ? slim : st->json);
}

static void set_pod(struct podstate *st, json_t *json)
{
        const json_t *meta = json_object_get(json, "metadata");
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;

        if (!json) {
                st->gone = true;
                st->dirty = true;
                return;
        }
        if (st->done) {
                keep_slim(st, json);
                st->gone = false;
                st->dirty = true;
                return;
        }
        if (xp_pod_from_json(json, NULL, 0, &pod, &err) < 0) {
                xp_log(LOG_WARNING, "agent: ignoring pod %s: %s", st->uid, xp_error_message(&err));
                return;
        }
        free(st->namespace);
        free(st->name);
        st->namespace = strdup(json_string_value(json_object_get(meta, "namespace")) ?: "");
        st->name = strdup(json_string_value(json_object_get(meta, "name")) ?: "");
        xp_pod_free(st->pod);
        st->pod = pod;
        if (st->json &&
            (meta_changed(st->json, json, "labels") || meta_changed(st->json, json, "annotations")))
                st->volumes_due = true;
        json_decref(st->json);
        st->json = json_incref(json);
        st->gone = false;
        st->dirty = true;
}

/* Takes the pods the watch changed since the last call. */
static int take_changes(struct loop *l)
{
        struct xp_agent_pods *pods = &l->agent->pods;
        json_auto_t *dirty = json_object(), *changed = json_object();
        const char *uid;
        json_t *value;
        void *tmp;
        bool resync;
        int r = 0;

        if (!dirty || !changed)
                return -ENOMEM;
        pthread_mutex_lock(&pods->lock);
        resync = pods->resync;
        pods->resync = false;
        json_object_foreach(pods->dirty, uid, value)
        {
                json_t *pod = json_object_get(pods->pods, uid);

                if (json_object_set(changed, uid, pod ? pod : json_null()) < 0)
                        r = -ENOMEM;
        }
        if (r >= 0) {
                json_decref(pods->dirty);
                pods->dirty = TAKE_PTR(dirty);
                json_object_foreach_safe(changed, tmp, uid, value) if (json_is_null(value))
                    json_object_del(pods->pods, uid);
        }
        pthread_mutex_unlock(&pods->lock);
        if (r < 0)
                return r;
        /* the server is back: every pod's status is compared with what it holds, and written
         * where it differs (a done pod's is known to be there) */
        for (size_t i = 0; resync && i < l->n_states; i++)
                l->states[i]->dirty = true;
        json_object_foreach(changed, uid, value)
        {
                const json_t *meta = json_object_get(value, "metadata");
                struct podstate *st;

                if (json_is_null(value)) {
                        /* gone from the server: nothing of it is to be written any more */
                        xp_agent_status_forget(l->agent->status, uid);
                        st = state_find(l, uid);
                        if (st)
                                set_pod(st, NULL);
                        continue;
                }
                st = state_get(l,
                               uid,
                               json_string_value(json_object_get(meta, "namespace")),
                               json_string_value(json_object_get(meta, "name")));
                if (!st)
                        return -ENOMEM;
                set_pod(st, value);
        }
        return 0;
}

static int record_compare(const void *a, const void *b)
{
        return strcmp(((const struct xp_container_record *)a)->pod_uid,
                      ((const struct xp_container_record *)b)->pod_uid);
}

/* Lists the runtime's containers and gives each pod its records (making states for orphans). */
static int refresh_records(struct loop *l)
{
        struct xp_container_record *records = NULL;
        struct xp_error err = {0};
        size_t n = 0, i, j;
        int r;

        r = xp_runtime_list(l->agent->runtime, &records, &n, &err);
        if (r < 0)
                return xp_log(LOG_WARNING,
                              "agent: listing the containers failed: %s",
                              xp_error_message(&err)),
                       r;
        l->need_list = false;
        for (i = 0; i < l->n_states; i++) {
                struct podstate *st = l->states[i];

                if (st->n_records > 0)
                        st->dirty = true;
                st->reads++;
                xp_container_records_free(st->records, st->n_records);
                st->records = NULL;
                st->n_records = 0;
        }
        if (n > 0)
                qsort(records, n, sizeof(*records), record_compare);
        for (i = 0; i < n; i = j) {
                struct podstate *st;

                for (j = i + 1; j < n && strcmp(records[j].pod_uid, records[i].pod_uid) == 0; j++)
                        ;
                st =
                    state_get(l, records[i].pod_uid, records[i].pod_namespace, records[i].pod_name);
                if (st) {
                        st->records = malloc((j - i) * sizeof(*records));
                        if (st->records) {
                                memcpy(st->records, records + i, (j - i) * sizeof(*records));
                                st->n_records = j - i;
                                /* the strings moved into st->records */
                                memset(records + i, 0, (j - i) * sizeof(*records));
                        }
                }
                if (!st || !st->records) {
                        xp_container_records_free(records, n);
                        return -ENOMEM;
                }
                /* a pod absent from the server's list is gone: its containers are killed */
                if (!st->json)
                        st->gone = true;
                st->dirty = true;
        }
        xp_container_records_free(records, n);
        return 0;
}

/*
 * Reads the containers of one pod again, from the runtime's files: what a start returned may be
 * older already (a short container can exit, and its exit be taken, before the start is back).
 */
static int reread_pod(struct loop *l, const char *uid, struct xp_error *err)
{
        struct xp_container_record *records = NULL;
        struct podstate *st = state_find(l, uid);
        size_t n = 0;
        int r;

        r = xp_runtime_list_pod(l->agent->runtime, uid, &records, &n, err);
        if (r < 0)
                return r;
        if (!st && n > 0)
                st = state_get(l, uid, records[0].pod_namespace, records[0].pod_name);
        if (!st) {
                xp_container_records_free(records, n);
                return n > 0 ? -ENOMEM : 0;
        }
        xp_container_records_free(st->records, st->n_records);
        st->records = records;
        st->n_records = n;
        st->reads++;
        /* a pod absent from the server's list is gone: its containers are killed */
        if (!st->json && n > 0)
                st->gone = true;
        st->dirty = true;
        return 0;
}

/* Reads again just the pods whose containers exited: the node's other records stay as they are. */
static int refresh_exits(struct loop *l)
{
        struct xp_error err = {0};
        char **uids = NULL;
        size_t n = 0;
        int r;

        l->need_exits = false;
        r = xp_runtime_take_exits(l->agent->runtime, &uids, &n, &err);
        for (size_t i = 0; i < n; i++) {
                if (r >= 0)
                        r = reread_pod(l, uids[i], &err);
                free(uids[i]);
        }
        free(uids);
        if (r < 0) {
                xp_log(LOG_WARNING, "agent: reading the exits: %s", xp_error_message(&err));
                l->need_list = true; /* the whole list then */
        }
        return r;
}

static int dev_lookup(const char *path, struct xp_cgroup_device *ret, void *userdata)
{
        struct stat s;

        (void)userdata;
        if (stat(path, &s) < 0)
                return -errno;
        if (!S_ISCHR(s.st_mode) && !S_ISBLK(s.st_mode))
                return -ENODEV;
        *ret = (struct xp_cgroup_device){
            .type = S_ISCHR(s.st_mode) ? 'c' : 'b',
            .major = major(s.st_rdev),
            .minor = minor(s.st_rdev),
            .access = "rwm",
        };
        return 0;
}

/* Puts rec into st's records, replacing the one of the same container and attempt. Takes rec. */
static int keep_record(struct podstate *st, struct xp_container_record *rec)
{
        struct xp_container_record *records;

        for (size_t i = 0; i < st->n_records; i++)
                if (strcmp(st->records[i].container, rec->container) == 0 &&
                    st->records[i].attempt == rec->attempt) {
                        xp_container_record_clear(&st->records[i]);
                        st->records[i] = *rec;
                        return 0;
                }
        records = realloc(st->records, (st->n_records + 1) * sizeof(*records));
        if (!records) {
                xp_container_record_clear(rec);
                return -ENOMEM;
        }
        st->records = records;
        st->records[st->n_records++] = *rec;
        return 0;
}

/* A record saying the container could not be started, which podsync reports (StartError; a
 * securityContext the node refuses: CreateContainerConfigError, and it is not started again). */
static int failed_record(struct podstate *st,
                         const struct xp_podsync_action *a,
                         const char *message,
                         bool config_error,
                         int64_t now_ns)
{
        struct xp_container_record rec = {
            .attempt = a->attempt,
            .started_ns = now_ns,
            .finished_ns = now_ns,
            .exited = true,
            .exit_code = 128,
            .start_failed = true,
            .config_error = config_error,
        };

        rec.pod_uid = strdup(st->uid);
        rec.pod_namespace = strdup(st->namespace);
        rec.pod_name = strdup(st->name);
        rec.container = strdup(a->container);
        rec.message = strdup(message);
        if (!rec.pod_uid || !rec.pod_namespace || !rec.pod_name || !rec.container || !rec.message) {
                xp_container_record_clear(&rec);
                return -ENOMEM;
        }
        return keep_record(st, &rec);
}

static void drain(int fd)
{
        uint64_t v;
        ssize_t n = read(fd, &v, sizeof(v));

        (void)n;
}

/*
 * Starts run on a few threads: a start waits for two execs (the shim's and the container's), and
 * the runtime lets several run at once, so many pods start in parallel. The loop builds the
 * launch, a starter runs xp_runtime_start() and hands the job back (the pool's eventfd).
 */
#define STARTERS 8

struct start_job {
        struct xp_work work; /* first: the starters' */
        struct podstate *st; /* kept while starting > 0 */
        json_t *pod;         /* the pod to start from: the launch borrows from its decoding */
        const struct xp_node *node;
        uint64_t pids_max;
        const struct xp_launch_policy *policy;
        char *container;
        bool init;
        unsigned attempt;
        char *netns;  /* the pod's network namespace; NULL: the node's network */
        char *pod_ip; /* status.podIP of the downward API; NULL: not known */
        const char *host_ip;
        struct xp_launch *launch;
        struct xp_image_store *images;
        struct xp_agent_launch_keep keep; /* what an image's launch borrows */
        int result;
        struct xp_container_record record;
        unsigned reads; /* the pod's reads of the runtime's files when the start was asked */
        char message[256];
        bool exec_failed;   /* the start came back with its exec's failure as its exit */
        char *exec_message; /* that failure's message (the record itself goes to the pod) */
};

static void job_free(struct start_job *job)
{
        if (!job)
                return;
        free(job->container);
        free(job->netns);
        free(job->pod_ip);
        free(job->exec_message);
        xp_launch_free(job->launch);
        xp_agent_launch_keep_done(&job->keep);
        json_decref(job->pod);
        xp_container_record_clear(&job->record);
        free(job);
}

static int replace_string(char **field, const char *value)
{
        char *copy = strdup(value);

        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

/* Decodes the pod, builds the launch and starts it (on a starter thread). */
static int start_job_run(struct xp_runtime *runtime, struct start_job *job, struct xp_error *err)
{
        _cleanup_(xp_pod_freep) struct xp_pod *pod = NULL;
        int r;

        r = xp_pod_from_json(job->pod, NULL, 0, &pod, err);
        /* the pod's addresses as its status will give them (the downward API reads them) */
        if (r >= 0 && job->pod_ip && (r = replace_string(&pod->status.pod_ip, job->pod_ip)) < 0)
                xp_errorf(err, r, "out of memory");
        if (r >= 0 && job->host_ip && (r = replace_string(&pod->status.host_ip, job->host_ip)) < 0)
                xp_errorf(err, r, "out of memory");
        if (r >= 0)
                r = xp_agent_container_launch(
                    &(struct xp_agent_launch_in){.pod = pod,
                                                 .container = job->container,
                                                 .init = job->init,
                                                 .attempt = job->attempt,
                                                 .node = job->node,
                                                 .lookup = dev_lookup,
                                                 .pids_max = job->pids_max,
                                                 .policy = job->policy,
                                                 .images = job->images},
                    &job->launch,
                    &job->keep,
                    err);
        if (r < 0)
                return r == -ENOMEM || r == -EPERM ? r : -EINVAL;
        job->launch->contain.netns = job->netns;
        r = xp_runtime_start(runtime, &job->launch->launch, &job->record, err);
        /* -EPERM is the builder's refusal (CreateContainerConfigError); the runtime's is a
         * failed start, tried again */
        return r == -EPERM ? -EACCES : r;
}

static void starter_run(void *userdata, void *ctx, struct xp_work *work)
{
        struct start_job *job = (struct start_job *)work;
        struct xp_error err = {0};

        (void)ctx;
        job->result = start_job_run(userdata, job, &err);
        if (job->result < 0)
                snprintf(job->message, sizeof(job->message), "%s", xp_error_message(&err));
}

static void starter_free_job(struct xp_work *work)
{
        job_free((struct start_job *)work);
}

/* Freeing the pool runs the queued starts first: a start is never left half done. */
static const struct xp_workers_ops starter_ops = {.run = starter_run, .free = starter_free_job};

/* pod: the pod to start from (its env resolved: podconfig.h), taken; NULL: st's as it is. */
static int start_container(struct loop *l,
                           struct podstate *st,
                           const struct xp_podsync_action *a,
                           const struct xp_agent_netview *net,
                           json_t *pod)
{
        struct xp_agent *agent = l->agent;
        struct start_job *job;

        if (!st->pod) {
                json_decref(pod);
                return 0;
        }
        job = calloc(1, sizeof(*job));
        if (!job) {
                json_decref(pod);
                return -ENOMEM;
        }
        job->st = st;
        job->reads = st->reads;
        job->pod = pod ? pod : json_incref(st->json);
        job->node = agent->node;
        job->pids_max = agent->pids_max;
        job->policy = &agent->policy;
        job->images = agent->images;
        job->init = a->init;
        job->attempt = a->attempt;
        job->container = strdup(a->container);
        job->host_ip = agent->advertise_address;
        if (!net->host)
                job->netns = strdup(net->netns);
        if (net->n_ips > 0)
                job->pod_ip = strdup(net->ips[0]);
        if (!job->container || (!net->host && !job->netns) || (net->n_ips > 0 && !job->pod_ip)) {
                job_free(job);
                return -ENOMEM;
        }
        st->starting++;
        xp_workers_submit(l->starter, &job->work);
        return 0;
}

/* A privileged container is audible: a Warning Event on its pod at its first start. */
static void privileged_event(struct loop *l, struct podstate *st, const struct start_job *job)
{
        struct xp_agent *agent = l->agent;
        char msg[512];

        if (!job->launch || !job->launch->contain.privileged || job->attempt > 0)
                return;
        snprintf(
            msg,
            sizeof(msg),
            "container %s runs privileged on node %s (allowed by --allow-privileged): every capability, every device node, no seccomp filter; it can take over the node",
            job->container,
            agent->node_name);
        if (xp_agent_event(
                agent->events, st->namespace, st->name, st->uid, "Warning", "Privileged", msg) < 0)
                xp_log(LOG_WARNING, "agent: pod %s/%s: %s", st->namespace, st->name, msg);
}

/* A start that came back may be of a container whose exec (or OCI runtime) failed: the shim
 * recorded that as its exit before answering, so the start's record says it. */
static void started_events(struct loop *l, struct podstate *st, const struct start_job *job)
{
        if (job->exec_failed)
                xp_agent_events_start_failed(l->agent->events,
                                             st->namespace,
                                             st->name,
                                             st->uid,
                                             job->container,
                                             true,
                                             job->exec_message);
        else
                xp_agent_events_started(l->agent->events,
                                        st->namespace,
                                        st->name,
                                        st->uid,
                                        job->container,
                                        job->attempt,
                                        job->launch);
}

/*
 * The record of a start that came back. The runtime's files hold one record per container (its
 * latest attempt), as the start's record replaces. That record is the newest known unless the
 * pod's files were read while the start was out: an exit taken meanwhile (a short container's,
 * or one whose exec failed) is newer than the start, and those files say so. Each read parsed the
 * pod's container specs again (0.2 ms a short pod on this VM, at every start and every exit).
 */
static int take_start_record(struct loop *l, struct podstate *st, struct start_job *job)
{
        struct xp_container_record *records;
        struct xp_error err = {0};
        int r;

        if (st->reads == job->reads && job->record.container && st->json) {
                for (size_t i = 0; i < st->n_records; i++)
                        if (strcmp(st->records[i].container, job->record.container) == 0) {
                                xp_container_record_clear(&st->records[i]);
                                st->records[i] = job->record;
                                job->record = (struct xp_container_record){0};
                                return 0;
                        }
                records = realloc(st->records, (st->n_records + 1) * sizeof(*records));
                if (records) {
                        st->records = records;
                        st->records[st->n_records++] = job->record;
                        job->record = (struct xp_container_record){0};
                        return 0;
                }
        }
        r = reread_pod(l, st->uid, &err);
        if (r < 0)
                xp_log(LOG_WARNING,
                       "agent: reading pod %s/%s: %s",
                       st->namespace,
                       st->name,
                       xp_error_message(&err));
        return r;
}

/* The Events of a start that came back: how it went. */
static void start_events(struct loop *l, const struct start_job *job)
{
        struct podstate *st = job->st;

        if (job->result < 0) {
                xp_agent_events_start_failed(l->agent->events,
                                             st->namespace,
                                             st->name,
                                             st->uid,
                                             job->container,
                                             false,
                                             job->message);
                return;
        }
        privileged_event(l, st, job);
        started_events(l, st, job);
}

/* Puts the Events of the starts of st that came back (of every pod: st NULL), in the order the
 * starts came back, and frees those starts. */
static void announce_starts(struct loop *l, const struct podstate *st)
{
        struct start_job **link = &l->unannounced;

        while (*link) {
                struct start_job *job = *link;

                if (st && job->st != st) {
                        link = (struct start_job **)&job->work.next;
                        continue;
                }
                *link = (struct start_job *)job->work.next;
                start_events(l, job);
                job_free(job);
        }
}

/* Keeps a start that came back until its Events are put (announce_starts()), after the others. */
static void defer_events(struct loop *l, struct start_job *job)
{
        struct start_job **link = &l->unannounced;

        while (*link)
                link = (struct start_job **)&(*link)->work.next;
        job->work.next = NULL;
        *link = job;
}

/* Takes the starts that came back: their records, or why they failed. Their Events wait for
 * their pods' sync (announce_starts()). */
static void collect_starts(struct loop *l)
{
        struct start_job *jobs;

        jobs = (struct start_job *)xp_workers_done(l->starter);
        while (jobs) {
                struct start_job *job = jobs;
                struct podstate *st = job->st;
                int r = 0;

                jobs = (struct start_job *)job->work.next;
                st->starting--;
                st->dirty = true;
                if (job->result == -EEXIST) {
                        /* it runs already (a start we did not see finish): the list has it */
                        l->need_list = true;
                        job_free(job);
                        continue;
                }
                if (job->result < 0) {
                        r = failed_record(st,
                                          &(struct xp_podsync_action){.container = job->container,
                                                                      .attempt = job->attempt},
                                          job->message,
                                          job->result == -EPERM,
                                          xp_agent_now_ns());
                } else {
                        job->exec_failed = job->record.start_failed;
                        if (job->exec_failed && job->record.message)
                                job->exec_message = strdup(job->record.message);
                        if (take_start_record(l, st, job) < 0)
                                l->need_list = true; /* before the next sync */
                }
                if (r < 0)
                        xp_log(LOG_ERR,
                               "agent: the start of %s/%s %s: %s",
                               st->namespace,
                               st->name,
                               job->container,
                               strerror(-r));
                defer_events(l, job);
        }
}

static void forget_record(struct podstate *st, const char *name)
{
        char container[256]; /* name may be a record's own, freed below */
        size_t i = 0;

        snprintf(container, sizeof(container), "%s", name);

        while (i < st->n_records) {
                if (strcmp(st->records[i].container, container) == 0 && st->records[i].exited) {
                        xp_container_record_clear(&st->records[i]);
                        st->records[i] = st->records[--st->n_records];
                } else {
                        i++;
                }
        }
}

/* A forgotten container holds its image no more (a hold that is not there is fine). */
static void release_image(struct loop *l, const struct podstate *st, const char *container)
{
        struct xp_error err = {0};
        char holder[256];

        if (xp_agent_image_holder(st->uid, container, holder) >= 0 &&
            xp_image_release(l->agent->images, holder, &err) < 0)
                xp_log(LOG_WARNING,
                       "agent: releasing the image of %s/%s %s: %s",
                       st->namespace,
                       st->name,
                       container,
                       xp_error_message(&err));
}

static struct xp_agent_pull_pod pull_pod(const struct podstate *st)
{
        return (struct xp_agent_pull_pod){.uid = st->uid,
                                          .namespace = st->namespace,
                                          .name = st->name,
                                          .json = st->json,
                                          .decoded = st->pod};
}

/* The pull step before a start (pull.c): 1 to start, 0 when the container waits for its image
 * (held in the pod's memory: the next round reports why). */
static int pull_gate(struct loop *l, struct podstate *st, const struct xp_podsync_action *a)
{
        const struct xp_pod_spec *spec = &st->pod->spec;
        const struct xp_container *items =
            a->init ? spec->init_containers.items : spec->containers.items;
        size_t n = a->init ? spec->init_containers.n : spec->containers.n;
        struct xp_agent_pull_pod pod = pull_pod(st);

        /* a process of the node runs on the node's files: its image is not pulled */
        if (!xp_agent_runs_images(l->agent, st->pod))
                return 1;
        for (size_t i = 0; i < n; i++)
                if (xp_streq0(items[i].name, a->container))
                        return xp_agent_pull_gate(l->agent->pulls,
                                                  &pod,
                                                  &items[i],
                                                  a->init,
                                                  a->attempt,
                                                  xp_agent_now_ns(),
                                                  st->memory);
        return 1;
}

/* Carries out one action: true when it changed the pod's records. net: the pod's network. */
static bool act(struct loop *l,
                struct podstate *st,
                const struct xp_podsync_action *a,
                const struct xp_agent_netview *net)
{
        struct xp_agent *agent = l->agent;
        struct xp_error err = {0};
        int r;

        switch (a->kind) {
        case XP_PODSYNC_START: {
                struct xp_agent_pull_pod pod = pull_pod(st);
                json_t *resolved = NULL;
                bool warming;

                r = st->pod ? pull_gate(l, st, a) : 1;
                /* the shim's move of the container into its group waits a grace period on an
                 * idle node: begun now, that wait overlaps the volumes and the config */
                warming = r > 0 && st->pod;
                if (warming)
                        xp_runtime_warm_moves(
                            agent->runtime, st->uid, a->container, xp_launch_pinned(st->pod));
                if (r > 0 && st->pod)
                        r = xp_agent_volume_gate(agent, &pod, a->container, a->init, st->memory);
                if (r > 0 && st->pod)
                        r = xp_agent_config_gate(
                            agent, &pod, a->container, a->init, st->memory, &resolved);
                if (r <= 0 && warming)
                        xp_runtime_warm_moves_cancel(agent->runtime);
                if (r == 0)
                        return true; /* held: the next round reports why */
                r = r < 0 ? r : start_container(l, st, a, net, resolved);
                if (r < 0)
                        xp_log(LOG_ERR,
                               "agent: starting %s/%s %s: %s",
                               st->namespace,
                               st->name,
                               a->container,
                               strerror(-r));
                /* a failed build is a record now; a start in flight comes back later */
                return r >= 0 && st->starting == 0;
        }
        case XP_PODSYNC_KILL:
                if (a->message)
                        (void)xp_agent_event(agent->events,
                                             st->namespace,
                                             st->name,
                                             st->uid,
                                             "Normal",
                                             "Killing",
                                             a->message);
                else
                        xp_agent_events_killing(
                            agent->events, st->namespace, st->name, st->uid, a->container);
                r = xp_runtime_kill(agent->runtime, st->uid, a->container, a->signal, &err);
                if (r < 0 && r != -ESRCH)
                        xp_log(LOG_WARNING,
                               "agent: signalling %s/%s %s: %s",
                               st->namespace,
                               st->name,
                               a->container,
                               xp_error_message(&err));
                return false;
        case XP_PODSYNC_FORGET:
                r = xp_runtime_remove(agent->runtime, st->uid, a->container, &err);
                if (r < 0 && r != -ENOENT) {
                        xp_log(LOG_WARNING,
                               "agent: forgetting %s/%s %s: %s",
                               st->namespace,
                               st->name,
                               a->container,
                               xp_error_message(&err));
                        return false;
                }
                /* before the record goes: a->container may be its name */
                release_image(l, st, a->container);
                forget_record(st, a->container);
                return true;
        case XP_PODSYNC_DELETE_POD:
                if (!st->gone &&
                    xp_agent_status_delete(agent->status, st->namespace, st->name, st->uid) < 0)
                        xp_log(LOG_ERR,
                               "agent: deleting pod %s/%s: out of memory",
                               st->namespace,
                               st->name);
                return false;
        }
        return false;
}

/* Whether a pod may still be refused: nothing of it has run here or anywhere. */
static bool never_started(const struct podstate *st)
{
        const struct xp_pod *pod = st->pod;

        return st->n_records == 0 && !pod->metadata.deletion_timestamp &&
               (pod->status.phase == XP_POD_PHASE_UNSET || pod->status.phase == XP_POD_PENDING) &&
               pod->status.container_statuses.n == 0 && pod->status.init_container_statuses.n == 0;
}

/*
 * The kubelet's admission of a pod new to the node: one this node refuses (privileged without
 * --allow-privileged, limits it cannot enforce) ends Failed with the reason, as the kubelet's
 * rejected pods do, and a Warning Event says why. false when it was refused.
 */
static bool admit(struct loop *l, struct podstate *st)
{
        struct xp_agent *agent = l->agent;
        struct xp_error err = {0};
        const char *reason = NULL;
        char msg[XP_ERROR_MSG_MAX + 32];
        json_t *status;

        st->admitted = true;
        if (!never_started(st) || xp_launch_admit(st->pod, &agent->policy, &reason, &err) >= 0)
                return true;
        snprintf(msg, sizeof(msg), "Pod was rejected: %s", xp_error_message(&err));
        xp_log(LOG_WARNING, "agent: pod %s/%s: %s", st->namespace, st->name, msg);
        (void)xp_agent_event(
            agent->events, st->namespace, st->name, st->uid, "Warning", reason, msg);
        status = json_pack("{s:s, s:s, s:s}", "phase", "Failed", "reason", reason, "message", msg);
        if (!status ||
            xp_agent_status_put(agent->status, st->namespace, st->name, st->uid, status) < 0)
                xp_log(LOG_ERR,
                       "agent: the status of pod %s/%s: out of memory",
                       st->namespace,
                       st->name);
        set_done(l, st);
        return false;
}

/* The pod's network as it stands, and the addresses its status reports (hostIP, podIP). */
static void network_facts(struct loop *l, struct podstate *st, struct xp_agent_netview *net)
{
        const char *ips[XP_CNI_IPS_MAX];
        size_t n = 0;

        if (st->gone || !st->pod || !st->memory) {
                /* nothing is started for it any more */
                *net = (struct xp_agent_netview){.state = XP_AGENT_NET_READY, .host = true};
                return;
        }
        xp_agent_network_peek(l->agent->network, st->pod, l->agent->advertise_address, net);
        for (; net->state == XP_AGENT_NET_READY && n < net->n_ips; n++)
                ips[n] = net->ips[n];
        xp_podsync_memory_set_ips(st->memory, l->agent->advertise_address, ips, n);
}

/* The pod's volumes (their tmpfs mounts, their files), with whole its logs and the runtime's
 * leftovers: a pod that is over no longer needs them. Removed on the cleaner's thread, out of the
 * way of the next pod's start. */
static void queue_teardown(struct loop *l, const struct podstate *st, bool whole)
{
        xp_agent_tokens_forget(l->agent, st->uid);
        xp_agent_podclean_submit(l->clean, st->namespace, st->name, st->uid, whole);
}

/*
 * Starts wait for the pod's network, as the kubelet's wait for the pod's sandbox: it is asked
 * for now (a worker sets it up; the pod is synced again when that ends), or, after a failure,
 * at its retry time, the status meanwhile saying that the containers are being created.
 */
static void hold_starts(struct loop *l, struct podstate *st, struct xp_podsync_result *res)
{
        struct xp_agent *agent = l->agent;
        struct xp_agent_netview net;

        xp_agent_network_want(
            agent->network, st->pod, agent->advertise_address, xp_agent_now_ns(), &net);
        st->wake_at_ns = res->wake_at_ns;
        if (net.state != XP_AGENT_NET_FAILED)
                return;
        if (res->status &&
            xp_agent_status_put(
                agent->status, st->namespace, st->name, st->uid, TAKE_PTR(res->status)) < 0)
                xp_log(LOG_ERR,
                       "agent: the status of pod %s/%s: out of memory",
                       st->namespace,
                       st->name);
        if (st->wake_at_ns == 0 || net.retry_at_ns < st->wake_at_ns)
                st->wake_at_ns = net.retry_at_ns;
}

/*
 * The pod is over: its address goes back and its IPC namespace's pin goes, as the kubelet stops
 * a terminal pod's sandbox, and its volumes are torn down, as the kubelet's (unless
 * --keep-terminated-pod-volumes): every pod's kube-api-access tmpfs kept mounted until the pod is
 * deleted made each later container's mount namespace copy one more mount, and every finished
 * pod's pin held an IPC namespace, its message queues and shared memory (docs/agent.md).
 */
static void finish_pod(struct loop *l, struct podstate *st)
{
        struct xp_error err = {0};

        xp_agent_network_release(l->agent->network, st->uid);
        if (xp_runtime_release_pod_ipc(l->agent->runtime, st->uid, &err) < 0)
                xp_log(LOG_WARNING,
                       "agent: pod %s/%s: its IPC namespace: %s",
                       st->namespace,
                       st->name,
                       xp_error_message(&err));
        /* one that is gone is dropped now: drop_states() removes the whole of it */
        if (!st->gone)
                queue_teardown(l, st, false);
        set_done(l, st);
        st->wake_at_ns = 0;
        xp_podsync_memory_free(st->memory);
        st->memory = NULL;
        if (st->gone)
                st->drop = true;
}

/* The status first, then the Events of the starts it tells of and those it makes itself: the
 * status writer is woken before the Events' writers, which share this VM's cores with it. */
static void put_status(struct loop *l, struct podstate *st, json_t *status)
{
        struct xp_agent *agent = l->agent;

        /* read below while its writer reads it too: neither changes it */
        if (xp_agent_status_put(
                agent->status, st->namespace, st->name, st->uid, json_incref(status)) < 0)
                xp_log(LOG_ERR,
                       "agent: the status of pod %s/%s: out of memory",
                       st->namespace,
                       st->name);
        announce_starts(l, st);
        xp_agent_events_status(agent->events, st->namespace, st->name, st->uid, status);
        json_decref(status);
}

static void sync_pod(struct loop *l, struct podstate *st)
{
        struct xp_agent *agent = l->agent;
        struct xp_error err = {0};

        if (st->starting > 0)
                return; /* stays dirty: synced once its starts are back */
        st->dirty = false;
        if (!st->done && !st->admitted && st->pod && !st->gone && !admit(l, st))
                return;
        if (st->done) {
                if (st->gone)
                        st->drop = true;
                return;
        }
        if (st->pod && !st->gone) {
                struct xp_agent_pull_pod pod = pull_pod(st);

                xp_agent_pull_refresh(agent->pulls, &pod, xp_agent_now_ns(), st->memory);
                xp_podsync_release_due(st->memory, XP_PODCONFIG_REASON, xp_agent_now_ns());
                xp_podsync_release_due(st->memory, XP_PODCONFIG_MOUNT_REASON, xp_agent_now_ns());
        }
        for (int round = 0; round < MAX_ROUNDS; round++) {
                struct xp_podsync_result res = {0};
                struct xp_agent_netview net;
                bool changed = false, done, starts;
                int r;

                network_facts(l, st, &net);
                r = xp_podsync(&l->config,
                               st->memory,
                               st->gone ? NULL : st->pod,
                               st->records,
                               st->n_records,
                               xp_agent_now_ns(),
                               &res,
                               &err);
                if (r < 0) {
                        xp_log(LOG_WARNING,
                               "agent: syncing pod %s/%s: %s",
                               st->namespace,
                               st->name,
                               xp_error_message(&err));
                        return;
                }
                starts = false;
                for (size_t i = 0; i < res.n_actions; i++)
                        starts |= res.actions[i].kind == XP_PODSYNC_START;
                /* the Events of the starts that came back go before what this round does (the
                 * next start's Pulled); a status put goes before them (put_status()) */
                if (!res.status || st->gone || starts)
                        announce_starts(l, st);
                if (starts && net.state != XP_AGENT_NET_READY) {
                        hold_starts(l, st, &res);
                        xp_podsync_result_clear(&res);
                        return;
                }
                if (res.status && st->pod && st->pod->metadata.deletion_timestamp)
                        xp_agent_status_deleting(agent->status, st->uid);
                /* with starts the pod is synced again once they are back: its status then says
                 * how they went, one write instead of a "ContainerCreating" one before it */
                if (res.status && !st->gone && !starts)
                        put_status(l, st, TAKE_PTR(res.status));
                st->wake_at_ns = res.wake_at_ns;
                for (size_t i = 0; i < res.n_actions; i++)
                        changed |= act(l, st, &res.actions[i], &net);
                done = res.done;
                xp_podsync_result_clear(&res);
                if (done) {
                        finish_pod(l, st);
                        return;
                }
                if (!changed)
                        return;
        }
}

/* The running pods' configMap, secret and projected volumes from their objects as they are:
 * every pod's each round (all: now >= l->volumes_at), else those whose labels or annotations an
 * update changed, at once, as the kubelet rewrites downwardAPI files on a pod update. */
static void refresh_volumes(struct loop *l, int64_t now)
{
        bool all = now >= l->volumes_at;

        for (size_t i = 0; i < l->n_states; i++) {
                struct podstate *st = l->states[i];
                struct xp_agent_pull_pod pod = pull_pod(st);

                if ((all || st->volumes_due) && st->pod && !st->done && !st->gone && !st->drop)
                        xp_agent_volume_refresh(l->agent, &pod);
                st->volumes_due = false;
        }
        if (all)
                l->volumes_at = now + VOLUME_REFRESH_NS;
}

/*
 * The pods' groups below the runtime's parent that no pod of this node needs (a shim killed with
 * its container, a start that failed, state that was lost): once every pod is adopted, and then
 * every CGROUP_RECLAIM_NS. The loop wakes at least every VOLUME_REFRESH_NS to look.
 */
static void reclaim_groups(struct loop *l, int64_t now)
{
        struct xp_error err = {0};
        int r;

        if (!l->adopted || now < l->reclaim_at)
                return;
        l->reclaim_at = now + CGROUP_RECLAIM_NS;
        r = xp_runtime_reclaim_cgroups(l->agent->runtime, &err);
        if (r > 0)
                xp_log(LOG_INFO,
                       "agent: removed %d pods' cgroups below %s that no pod of this node needs",
                       r,
                       xp_runtime_cgroup_parent(l->agent->runtime));
        else if (r < 0)
                xp_log(LOG_WARNING, "agent: reclaiming pods' cgroups: %s", xp_error_message(&err));
}

/*
 * A burst of short pods leaves the freed parts of their objects scattered among live ones, which
 * glibc keeps (the agent's RSS stayed a few MiB up after each thousand): every TRIM_AFTER_PODS pods
 * done or dropped, when the loop is about to wait, the free pages go back to the kernel.
 */
#define TRIM_AFTER_PODS 64

static void trim_heap(struct loop *l)
{
        if (l->freed < TRIM_AFTER_PODS)
                return;
        l->freed = 0;
        malloc_trim(0);
}

/* Frees the states of pods that are gone and cleaned up, removing their logs. */
static void drop_states(struct loop *l)
{
        size_t i = 0;

        while (i < l->n_states) {
                struct podstate *st = l->states[i];

                if (!st->drop || st->starting > 0) {
                        i++;
                        continue;
                }
                xp_agent_network_release(l->agent->network, st->uid);
                queue_teardown(l, st, true);
                xp_agent_probes_forget(l->probes, st->uid);
                xp_agent_pull_forget(l->agent->pulls, st->uid);
                tdelete(st, &l->tree, state_compare);
                state_free(st);
                l->states[i] = l->states[--l->n_states];
                l->freed++;
        }
}

/* The pods whose network setup ended are synced again (their starts waited for it). */
static void network_changes(struct loop *l)
{
        char **uids = NULL;
        size_t n = 0;

        xp_agent_network_take(l->agent->network, &uids, &n);
        for (size_t i = 0; i < n; i++) {
                struct podstate *st = state_find(l, uids[i]);

                if (st)
                        st->dirty = true;
                free(uids[i]);
        }
        free(uids);
}

static bool known_pod(const char *uid, void *userdata)
{
        return state_find(userdata, uid) != NULL;
}

static void free_nothing(void *p)
{
        (void)p;
}

/* Pulls finished: the pods that waited for them are synced (their holds refreshed). */
static void pulls_done(struct loop *l)
{
        char **uids = NULL;
        size_t n = 0;

        if (xp_agent_pull_take_done(l->agent->pulls, &uids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                struct podstate *st = state_find(l, uids[i]);

                if (st)
                        st->dirty = true;
                free(uids[i]);
        }
        free(uids);
}

/* The probes of the pod's running containers as its sync left them; none once it is over. */
static void track_probes(struct loop *l, struct podstate *st)
{
        struct xp_agent_probe_pod pod = {.uid = st->uid,
                                         .namespace = st->namespace,
                                         .name = st->name,
                                         .pod = st->json,
                                         .records = st->records,
                                         .n_records = st->n_records,
                                         .pod_ip = xp_podsync_memory_pod_ip(st->memory)};

        if (st->done || st->gone || st->drop || !st->json || !st->memory)
                xp_agent_probes_forget(l->probes, st->uid);
        else if (xp_agent_probes_track(l->probes, &pod) < 0)
                xp_log(LOG_ERR,
                       "agent: the probes of pod %s/%s: out of memory",
                       st->namespace,
                       st->name);
}

/* The probes' verdicts into their pods' memories; those pods sync again (their status, kills). */
static void probe_verdicts(struct loop *l)
{
        struct xp_agent_probe_verdict *v = NULL;
        size_t n = xp_agent_probes_collect(l->probes, xp_agent_now_ns(), &v);

        for (size_t i = 0; i < n; i++) {
                struct podstate *st = state_find(l, v[i].uid);
                int r;

                if (!st || !st->memory)
                        continue;
                r = xp_podsync_set_probed(
                    st->memory, v[i].container, v[i].attempt, v[i].ready, v[i].started);
                if (r >= 0 && v[i].kill)
                        r = xp_podsync_probe_kill(st->memory,
                                                  v[i].container,
                                                  v[i].attempt,
                                                  v[i].kill_deadline_ns,
                                                  v[i].kill_message);
                if (r < 0)
                        xp_log(LOG_ERR,
                               "agent: the probes of pod %s/%s: out of memory",
                               st->namespace,
                               st->name);
                st->dirty = true;
        }
        free(v);
}

/* Syncs the pods that changed or whose wake time came, and starts the due probes: the earliest
 * time one of them asked to be woken (0: none). */
static int64_t sync_pods(struct loop *l, int64_t now)
{
        int64_t next = 0, probe_at;

        for (size_t i = 0; i < l->n_states; i++) {
                struct podstate *st = l->states[i];

                if (st->dirty || (st->wake_at_ns > 0 && st->wake_at_ns <= now)) {
                        sync_pod(l, st);
                        track_probes(l, st);
                }
                if (st->wake_at_ns > 0 && (next == 0 || st->wake_at_ns < next))
                        next = st->wake_at_ns;
        }
        announce_starts(l, NULL); /* those of syncs that put no status */
        probe_at = xp_agent_probes_run_due(l->probes, now);
        if (probe_at > 0 && (next == 0 || probe_at < next))
                next = probe_at;
        return next;
}

static bool wait_for_list(struct xp_agent *agent)
{
        for (;;) {
                bool listed;

                pthread_mutex_lock(&agent->pods.lock);
                listed = agent->pods.listed;
                pthread_mutex_unlock(&agent->pods.lock);
                if (listed)
                        return true;
                if (xp_agent_sleep(agent, 50))
                        return false;
        }
}

void *xp_agent_reconcile_thread(void *userdata)
{
        struct xp_agent *agent = userdata;
        struct loop l = {
            .agent = agent,
            .config = {.backoff_initial_ms = agent->backoff_initial_ms,
                       .backoff_max_ms = agent->backoff_max_ms,
                       .backoff_reset_ms = 600000},
        };
        struct pollfd fds[7] = {
            {.fd = agent->stop_fd, .events = POLLIN},
            {.fd = agent->pods.wake_fd, .events = POLLIN},
            {.fd = -1, .events = POLLIN},
            {.fd = xp_runtime_event_fd(agent->runtime), .events = POLLIN},
            {.fd = xp_agent_pulls_fd(agent->pulls), .events = POLLIN},
            {.fd = xp_agent_network_fd(agent->network), .events = POLLIN}, /* -1: ignored */
            {.fd = -1, .events = POLLIN},
        };
        struct xp_error err = {0};
        int r;

        if (!wait_for_list(agent))
                return NULL;
        r = xp_agent_probes_new(agent->runtime, agent->events, &l.probes, &err);
        if (r >= 0)
                r = xp_agent_podclean_new(agent->runtime, agent->data_dir, &l.clean, &err);
        if (r >= 0)
                r = xp_workers_new(&(struct xp_workers_options){.ops = &starter_ops,
                                                                .userdata = agent->runtime,
                                                                .threads = STARTERS,
                                                                .notify = true},
                                   &l.starter,
                                   &err);
        if (r < 0) {
                xp_log(LOG_ERR,
                       "agent: cannot start the container starters: %s",
                       xp_error_message(&err));
                xp_agent_podclean_free(l.clean);
                xp_agent_probes_free(l.probes);
                return NULL;
        }
        fds[2].fd = xp_workers_fd(l.starter);
        fds[6].fd = xp_agent_probes_fd(l.probes);
        l.need_list = true;
        while (!atomic_load(&agent->stopping)) {
                int64_t now, next;
                int timeout = -1;

                collect_starts(&l);
                if (take_changes(&l) < 0)
                        xp_log(LOG_ERR, "agent: taking the pod changes: out of memory");
                if (l.need_list)
                        refresh_records(&l);
                else if (l.need_exits)
                        refresh_exits(&l);
                now = xp_agent_now_ns();
                next = sync_pods(&l, now);
                refresh_volumes(&l, now);
                if (next == 0 || l.volumes_at < next)
                        next = l.volumes_at;
                drop_states(&l);
                if (!l.adopted && !l.need_list) {
                        /* every pod and container is known now: the rest are leftovers */
                        l.adopted = true;
                        xp_agent_network_release_unknown(agent->network, known_pod, &l);
                        /* before the pins' sweep: a lost pod's .pods/<uid> kept its pins */
                        (void)xp_agent_podclean_sweep(
                            agent->runtime, agent->data_dir, agent->state_dir, known_pod, &l);
                        xp_agent_collect_namespaces(agent, known_pod, &l);
                }
                reclaim_groups(&l, now);
                if (l.need_list)
                        timeout = 0;
                else if (next > 0)
                        timeout = next <= now ? 0 : (int)((next - now) / 1000000 + 1);
                if (timeout != 0)
                        trim_heap(&l);
                if (poll(fds, XP_ELEMENTSOF(fds), timeout) < 0 && errno != EINTR)
                        break;
                if (fds[4].revents & POLLIN)
                        pulls_done(&l);
                if (fds[1].revents & POLLIN)
                        drain(fds[1].fd);
                if (fds[5].revents & POLLIN)
                        network_changes(&l);
                if (fds[6].revents & POLLIN)
                        probe_verdicts(&l);
                /* xp_runtime_list() empties the runtime's event fd */
                if (fds[3].revents & POLLIN)
                        l.need_exits = true;
        }
        xp_workers_free(l.starter);
        xp_agent_podclean_free(l.clean);
        xp_agent_probes_free(l.probes);
        for (size_t i = 0; i < l.n_states; i++)
                state_free(l.states[i]);
        tdestroy(l.tree, free_nothing);
        free(l.states);
        return NULL;
}
