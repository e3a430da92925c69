/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The scheduling loop's state, shared by its files: scheduler.c (the loop: informer callbacks,
 * passes, placements), scheduler_queue.c (the pods waiting for a node), scheduler_write.c (the
 * writes and the threads that make them).
 */

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "xpool/gang.h"
#include "xpool/histogram.h"
#include "xpool/map.h"
#include "xpool/scheduler.h"
#include "xpool/workers.h"

/* kube-scheduler's default profile, the name its Events report when a pod names no other */
#define SCHEDULER_NAME "default-scheduler"
#define RETRY_MS       250 /* longest interval between retries of unschedulable pods */
#define RETRY_MIN_MS   5   /* shortest, after a cheap pass (scheduler.c, retry_gap_set()) */
/* Per-pod backoff after a failed attempt, as kube-scheduler's: 1 s, doubled per failure in a
 * row, at most 10 s (podInitialBackoffSeconds, podMaxBackoffSeconds). */
#define BACKOFF_INITIAL_MS 1000
#define BACKOFF_MAX_MS     10000
/* A pod that fails again for the same reasons (reasons_same()) with another count of nodes keeps
 * the status and Event message said until it is this old (its backoff's longest): the count in
 * them is at most that stale, and a pass over thousands of waiting pods after each added node
 * does not rewrite every one of them. */
#define REASONS_REFRESH_MS BACKOFF_MAX_MS
#define EVENT_MESSAGE_MAX  1024 /* an Event's message is cut there, as kube's recorder cuts it */
#define EVENT_INTERVAL_MS  2000 /* repeated failures update their Event at most this often, */
#define EVENT_INTERVAL_MAX_MS                                                                      \
        300000 /* doubling per update up to this (kube's spam filter: 5 min) */
#define NAME_MAX_LEN 253
#define INFLIGHT_MAX 512 /* writes handed to the workers and not yet done */
/* A pass waits until the workers are down to this many (scheduler.c, scheduler_work()). */
#define INFLIGHT_RESUME (INFLIGHT_MAX / 2)
/* A pass's bindings go to the workers in groups of this many, each group one store transaction
 * (scheduler_write.c): a full pass makes a few, so that the first is written while the pass
 * goes on. */
#define BIND_BATCH_MAX 128

/*
 * A shape's text (namespace, queue, priority, labels, spec: scheduler_shape.c), one per distinct
 * text among the pending pods, so that pods of one shape are known alike by their pointer: the
 * release walks every waiting pod after each end, and comparing their texts (about 1 KB each)
 * was half of that walk.
 */
struct shape {
        char *text;
        uint64_t hash;  /* xp_map_hash(text) */
        size_t holders; /* pending pods holding it: the last one frees it */
        /* the release walk (xp_scheduler.release_walks) that found the nodes' headroom short of
         * a pod of it */
        uint64_t refused_walk;
};

/* A pod waiting for a node; allocated one by one so that pointers to it stay valid. */
struct pending {
        char *key; /* "namespace/name": the index's key */
        char *namespace;
        char *name;
        json_t *pod; /* its latest state */
        uint64_t version;
        /* pod decoded, at decoded_version: a pod that waits is tried again on every change of
         * the cluster, and decoding it each time would cost more than placing it */
        struct xp_pod *decoded;
        uint64_t decoded_version;
        /* creationTimestamp (µs; INT64_MIN when missing), read once: the queue's order is
         * compared O(n log n) times a pass, and reading it from the JSON each time cost more
         * than the placements */
        int64_t created_us;
        uint64_t first_version; /* FIFO order among equal creationTimestamps */
        int64_t priority;
        size_t slot;    /* its place in scheduler.queue */
        bool waiting;   /* tried and unschedulable: tried again when the cluster changes */
        bool drop;      /* bound or gone: removed at the end of the pass */
        bool inflight;  /* its binding is with the workers: not tried meanwhile */
        char *bound_to; /* while inflight: the node its binding names (as assumed) */
        char *message;  /* the last failure's reason (the PodScheduled condition's) */
        char *explain;  /* xpool's explanation of it (the FailedScheduling Event's), or NULL */
        int attempts;   /* failed attempts in a row: the backoff's exponent */
        int64_t backoff_until_ms; /* in the backoff queue until then */
        int64_t queued_ms;        /* first queued: a gang's timeout counts from its first */
        char *queue;            /* its queue (s->hooks.queue's, read at each change), NULL: none */
        char *gang;             /* its gang's key (struct gang_id), NULL: none */
        const char *gang_what;  /* struct gang_id.what */
        int64_t gang_min;       /* its minimum; 0 when missing or bad */
        bool gang_missing;      /* its PodGroup or Workload is not (yet) there */
        bool gang_priority_set; /* priority is its gang's (gang_id.priority), not its own */
        uint64_t gang_pass;     /* the pass that last tried its gang */
        /* unschedulable: tried again then even without a cluster event (its gang's timeout, to
         * say so); 0: only after one */
        int64_t retry_at_ms;
        int64_t failures_unwritten; /* failures with message not yet counted in its Event */
        /* what its placement depends on, at shape_version (scheduler_shape.c): shared by the
         * pending pods of one shape */
        struct shape *shape;
        uint64_t shape_version;
        /* its PodScheduled condition at said_version says Unschedulable with this message:
         * known without walking the conditions at each of the pod's failures (NULL: unknown) */
        char *said;
        uint64_t said_version;
        int64_t event_written_ms;
        int64_t event_interval_ms; /* until its Event's next update is due; 0: EVENT_INTERVAL_MS */
        int64_t message_ms;        /* when message was said (its status and Event written) */
        /* released because the nodes' headroom covered it (scheduler_release.c) */
        bool by_headroom;
        /* failed for another reason than room once the headroom covered it: released at every
         * event, whatever the headroom, until its request changes */
        bool headroom_blind;
        /* status.nominatedNodeName set, at nominated_version (pending_nominated()) */
        bool nominated, nominated_known;
        uint64_t nominated_version;
};

/*
 * A write for the workers: a binding (node set), or a PodScheduled=False status (unschedulable
 * set); either may carry a FailedScheduling Event's count (event_message set).
 */
struct bind_job {
        struct xp_work work; /* first: the workers' */
        char *namespace, *name, *node;
        json_t *annotations;
        json_t *pod;         /* the pod as decided on (status and Event writes) */
        char *unschedulable; /* the reason to write as PodScheduled=False */
        char *event_message; /* a FailedScheduling Event counting event_count failures */
        int64_t event_count;
        uint64_t version; /* the version the decision was made on */
        int result;       /* xp_registry_pod_bind()'s */
        char message[256];
        struct bind_job *batched; /* the bindings written in the same group after this one */
};

struct xp_scheduler {
        struct xp_registry *registry;
        const struct xp_clock *clock;
        struct xp_informer *informer;
        struct xp_controller *loop; /* NULL when a test steps it */
        atomic_bool stopping;       /* set as xp_scheduler_free() begins */
        struct xp_workers *workers;
        /* the jobs the workers finished, newest first: pushed by them, taken by the loop */
        _Atomic(struct xp_work *) jobs_done;
        size_t inflight; /* the loop's count of jobs not yet collected */
        /* this pass's bindings not yet handed to the workers, in the order decided */
        struct bind_job *batch, **batch_tail;
        size_t n_batch;
        struct xp_sched *sched;
        struct queue_ctl *queues; /* queues and preemption (queue_ctl.h) */
        /* Unordered (a pass sorts what it tries); index finds an entry by key, so that a pod
         * event costs O(1) whatever the number pending. */
        struct pending **queue;
        size_t n_queue, cap_queue;
        /* a pass's active pods and order_run()'s scratch, cap_active each: kept from pass to
         * pass, as a pass may run for every few bindings the workers finish */
        struct pending **active, **scratch;
        size_t cap_active;
        struct xp_map index;
        bool changed; /* capacity may have appeared since the waiting pods were tried */
        /* placed pods ended since: the waiting pods that the headroom covers are released
         * (scheduler_release.c); changed releases them all */
        bool freed;
        uint64_t pass; /* counts passes: a gang is tried once per pass */
        int64_t gang_timeout_ms;
        enum xp_sched_profile profile;         /* how nodes are ranked (--placement-profile) */
        unsigned percentage_of_nodes_to_score; /* of the pods without devices (0: adaptive) */
        struct xp_gang_options gang_options;
        /* queues and preemption (src/controller/queue*.c install them); zero: none */
        struct xp_sched_hooks hooks;
        /* scheduler_groups.c: the Workloads and PodGroups followed, the gangs' bound members */
        struct xp_map groups;
        struct xp_map gang_counts;
        struct xp_map gang_members;
        int64_t retried_ms;
        int64_t retry_gap_ms; /* the shortest time between two releases of the waiting pods */
        /* this pass's unschedulable pods by shape (scheduler_shape.c): keys are their shapes */
        struct xp_map failed_shapes;
        /* the pending pods' shapes, one per distinct text (struct shape), keyed by it */
        struct xp_map shapes;
        uint64_t release_walks; /* counts the release's walks (struct shape.refused_walk) */
        /* scheduler_nodes.c: each node's last digest, by name */
        struct xp_map node_digests;
        /* /metrics (xp_scheduler_metrics()): attempts by result and their duration */
        atomic_uint_fast64_t attempts[XP_SCHEDULER_RESULTS];
        struct xp_histogram attempt_seconds;
};

/* ---- the pending pods (scheduler_queue.c) ------------------------------------------------ */

static inline const char *pod_string(const json_t *pod, const char *part, const char *key)
{
        return json_string_value(json_object_get(json_object_get(pod, part), key));
}

static inline bool pod_is_bound(const json_t *pod)
{
        const char *node = pod_string(pod, "spec", "nodeName");

        return node && node[0];
}

static inline bool pod_is_finished(const json_t *pod)
{
        const char *phase = pod_string(pod, "status", "phase");

        return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

/* Unbound, not going away, and asking for this scheduler. */
bool pod_is_ours_pending(const json_t *pod);
/* Whether name is a schedulerName (profile) this scheduler serves. */
bool scheduler_name_is_ours(const char *name);

/* The entry of a pod, or NULL (also when it is to be dropped). */
struct pending *pending_find(struct xp_scheduler *s, const char *ns, const char *name);
/* Records the pod's newest state in the queue (a new entry is tried at once). */
int pending_upsert(
    struct xp_scheduler *s, const char *ns, const char *name, json_t *pod, uint64_t version);
/* Takes p out of the index and the array (the last entry fills its slot) and frees it. */
void pending_delete(struct xp_scheduler *s, struct pending *p);
void pending_remove(struct xp_scheduler *s, const char *ns, const char *name);
void pending_clear(struct xp_scheduler *s);

/* Priority (higher first), then FIFO (scheduler_order.c): qsort()'s comparison of pending
 * pointers. */
int pending_compare(const void *a, const void *b);

/* ---- leaving the unschedulable set (scheduler_release.c) --------------------------------- */

/* Releases the waiting pods: all of them (all), or those that what the nodes have free covers,
 * walked in queue order, and those the headroom cannot judge. Uses s->scratch (n_queue). */
void release_waiting(struct xp_scheduler *s, bool all);
/* p failed with message: if the headroom had released it and it failed for another reason than
 * room, it is released at every event from now on and the pods behind it are walked again. */
void release_missed(struct xp_scheduler *s, struct pending *p, const char *message);

/* Whether a FitError's message gives only reasons of room ("Insufficient cpu", "Too many pods"),
 * preemption's tail left out (scheduler_reasons.c). */
bool reasons_room_only(const char *message);

/* Two failures' messages give the same reasons, whatever their counts of nodes
 * (scheduler_reasons.c). */
bool reasons_same(const char *a, const char *b);

/* Reads the pod's gang into p (after its JSON or its group changed). -ENOMEM. */
int pending_gang_read(struct xp_scheduler *s, struct pending *p);
/* Decodes p->pod when it changed since the last decode. -errno with err. */
int pending_decode(struct pending *p, struct xp_error *err);

/* ---- the informer's word (scheduler.c) ---------------------------------------------------- */

/* A pod added, changed or deleted (its last state), at the store's version: the queue, the
 * snapshot, the gangs' bound members and the queues follow it. */
void pod_seen(struct xp_scheduler *s, json_t *json, uint64_t version, bool deleted);

/* ---- placing (scheduler.c, scheduler_gang.c) ---------------------------------------------- */

/* A failed attempt: backoff, the status message (kube-scheduler's) and the Event's explanation
 * (xpool's: prefix lines, then xp_sched_why() of the pod unless why_done). */
/* unschedulable() with a reason whose lines after the first explain it (a queue's refusal and
 * what would admit the pod); reason is cut there. */
void unschedulable_split(struct xp_scheduler *s, struct pending *p, char *reason);
void unschedulable(struct xp_scheduler *s,
                   struct pending *p,
                   const char *message,
                   const char *explain);
/* Accounts p (decoded) as placed and hands its binding to the workers; text is the placement
 * as its annotation says it. -errno. */
int dispatch(struct xp_scheduler *s,
             struct pending *p,
             const struct xp_placement *placement,
             const char *text);
/* The pass may try more pods (not stopping, the workers not too far behind). */
bool pass_open(struct xp_scheduler *s);
/* Tries p in this pass unless its binding is in flight, it went, or its gang was tried. */
void pass_try(struct xp_scheduler *s, struct pending *p);
/* Tries active[0..n) in order while the pass is open (scheduler_order.c): priority, the
 * queues' shares among equal priorities, FIFO. Reorders active; scratch holds n entries. */
void order_run(struct xp_scheduler *s, struct pending **active, struct pending **scratch, size_t n);
/* Tries p's gang, all its pending members together, once per pass. */
void gang_schedule(struct xp_scheduler *s, struct pending *p, enum xp_scheduler_result *result);

/* ---- pods of one shape fail alike within a pass (scheduler_shape.c) ---------------------- */

/* A pod of p's shape found unschedulable in this pass (its message and explanation are p's),
 * or NULL. */
const struct pending *shape_failed(struct xp_scheduler *s, struct pending *p);
/* Records p, just found unschedulable with nothing nominated, for its shape. */
void shape_fail(struct xp_scheduler *s, struct pending *p);
/* p's shape, kept per version and shared with the pending pods of the same text; NULL for a
 * gang member or a nominated pod (or without memory). */
struct shape *pending_shape(struct xp_scheduler *s, struct pending *p);
/* Lets go of p's shape: the last pod holding a shape frees it. */
void pending_shape_drop(struct xp_scheduler *s, struct pending *p);
/* Whether p's pod names a nominated node, read once per version of the pod: every release
 * asks it of every waiting pod. */
bool pending_nominated(struct pending *p);
/* Forgets the pass's failures (the next pass may find capacity freed). */
void shapes_forget(struct xp_scheduler *s);
/* Frees the map of shapes, once no pending pod holds one. */
void shapes_done(struct xp_scheduler *s);

/* ---- node updates that may make a waiting pod fit (scheduler_nodes.c) ------------------- */

/* Whether node (named name) differs from its last update in anything but the fields every
 * status write changes; remembers it. */
bool node_update_matters(struct xp_scheduler *s, const char *name, const json_t *node);
/* Forgets a deleted node's digest. */
void node_forget(struct xp_scheduler *s, const char *name);
/* Forgets every node's (the scheduler goes). */
void nodes_forget(struct xp_scheduler *s);

/* ---- gangs' shapes and bound members (scheduler_groups.c) -------------------------------- */

/* The store's kinds of Kubernetes' Workload and PodGroup and of Volcano's PodGroup. */
#define XP_SCHEDULER_WORKLOADS     "workloads"
#define XP_SCHEDULER_K8S_PODGROUPS "podgroups.scheduling.k8s.io"
#define XP_SCHEDULER_PODGROUPS     "podgroups"
/* struct gang_id.what of a gang that Kubernetes' PodGroup names */
#define XP_GANG_SCHEDULING_GROUP "schedulingGroup"

/* A pod's gang: key "namespace/name" (a Workload's "namespace/workload/podGroup[/replicaKey]"),
 * what names it ("label", "podgroup", "workload", XP_GANG_SCHEDULING_GROUP), its minimum (0: none
 * valid), and whether its PodGroup or Workload is missing. */
struct gang_id {
        char *key;
        const char *what;
        int64_t min;
        bool missing;
        bool has_priority; /* its Volcano PodGroup's priorityClassName names a class */
        int64_t priority;  /* that class's value: the gang's priority */
};

/* 1 with *ret (caller frees ret->key), 0 when the pod is in no gang, -ENOMEM. */
int gang_identify(struct xp_scheduler *s, const json_t *pod, const char *ns, struct gang_id *ret);
/* Counts (bound) or forgets (not) a pod among its gang's bound members. */
void gang_bound_seen(
    struct xp_scheduler *s, const json_t *pod, const char *ns, const char *name, bool bound);
int64_t gang_bound(struct xp_scheduler *s, const char *gang);
/* A Workload or PodGroup added, changed or deleted: the pending pods of its namespace read their
 * gang again. */
void group_seen(struct xp_scheduler *s, const char *resource, const json_t *object, bool deleted);
void groups_clear(struct xp_scheduler *s);
/* Reads p's queue again (s->hooks.queue) into p->queue. -ENOMEM. */
int pending_queue_read(struct xp_scheduler *s, struct pending *p);
/* The Volcano PodGroup p's gang names, NULL when it names none (or it is not there). */
const json_t *gang_volcano_group(struct xp_scheduler *s, const struct pending *p);
/* Writes a Volcano PodGroup's status.phase ("Pending", "Inqueue", "Running"), or a Kubernetes
 * PodGroup's PodGroupScheduled condition for it, when p's gang is one and it says otherwise. */
void podgroup_phase(struct xp_scheduler *s, const struct pending *p, const char *phase);

/* ---- writes (scheduler_write.c) ---------------------------------------------------------- */

/* The workers (n threads; 0: each job runs at once, in the loop). */
int bind_jobs_start(struct xp_scheduler *s, unsigned n, struct xp_error *err);
/* Lets the workers finish what they hold, joins them, and frees what is left. */
void bind_jobs_stop(struct xp_scheduler *s);
/* The jobs the workers finished, newest first (NULL: none). */
struct bind_job *bind_jobs_done(struct xp_scheduler *s);
void bind_job_free(struct bind_job *job);
/* Hands a job to the workers, or runs it at once when there are none. */
void bind_job_enqueue(struct xp_scheduler *s, struct bind_job *job);
/* Adds a binding to the pass's batch (handed on when BIND_BATCH_MAX are there). */
void bind_batch_add(struct xp_scheduler *s, struct bind_job *job);
/* Hands the batch to the workers: its bindings and their Events in one group of the store's. */
void bind_batch_flush(struct xp_scheduler *s);
/* Tests only (NULL in the server): called for each job of a group once the group's bindings are
 * written, before anything else is: what another component does right then (the agent's
 * Created of a pod just bound), for the order of the names of the pod's Events. */
extern void (*scheduler_bound_hook)(struct xp_scheduler *s, const struct bind_job *job);

/*
 * Reads the pod again after a stale write: 1 when still pending (entry refreshed), 0 when it was
 * dropped (bound elsewhere, deleted, no longer ours).
 */
int pending_refresh(struct xp_scheduler *s, struct pending *p);

/*
 * The failures not yet in the Event, once the pod's interval passed since it was written (or
 * force): their count, taken (0: none due). The interval starts at EVENT_INTERVAL_MS and doubles
 * with every update that was not forced, up to EVENT_INTERVAL_MAX_MS.
 */
int64_t failures_take(struct xp_scheduler *s, struct pending *p, bool force);
/*
 * Hands the workers what a failure of p has to write: its status (when it does not say message
 * yet) and the Event's count when due. Neither waits for a commit in this loop.
 */
void failure_write(struct xp_scheduler *s,
                   struct pending *p,
                   const char *status_message,
                   bool force_event);
/* Accounts the pod as the store has it now (bound: its placement; otherwise nothing). */
void account_stored(struct xp_scheduler *s, const char *ns, const char *name);

/* This host's name, which kube-scheduler's Events end their reportingInstance with. */
const char *scheduler_host(void);
