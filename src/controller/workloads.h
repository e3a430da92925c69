/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Inside the workload controllers: the cache the informer fills (workloads_cache.c), the writes
 * they share (workloads_write.c), and each controller's sync (replicaset_sync.c,
 * deployment_sync.c, daemonset_sync.c, gc_sync.c).
 */

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc.h"
#include "informer.h"
#include "replicaset.h"
#include "xpool/macro.h"
#include "xpool/map.h"
#include "xpool/workloads.h"

struct xp_clock;
struct xp_controller;
struct xp_kind;
struct xp_workqueue;
struct xp_workers;

/* The kinds kept whole in the cache. */
enum wl_resource {
        WL_PODS,
        WL_REPLICASETS,
        WL_DEPLOYMENTS,
        WL_DAEMONSETS,
        WL_NODES,
        WL_JOBS,     /* job_sync.c */
        WL_CRONJOBS, /* cronjob_sync.c */
        WL_N
};

struct wl_entry {
        char *key; /* "namespace/name" ("name" for nodes) */
        json_t *object;
};

struct wl_cache {
        struct xp_map map; /* key -> struct wl_entry */
};

struct xp_workloads {
        struct xp_registry *registry;
        const struct xp_clock *clock;
        struct xp_informer *informer;
        struct xp_controller *loop;
        struct xp_informer_handler *handlers; /* every kind: the GC sees all owners */
        size_t n_handlers;
        struct wl_cache cache[WL_N];
        struct xp_gc_graph graph;
        struct xp_expectations expectations; /* ReplicaSets' and DaemonSets' pods */
        struct xp_workqueue *rs_queue, *deploy_queue, *ds_queue, *gc_queue;
        struct xp_workqueue *job_queue, *cronjob_queue; /* batch/v1 (docs/workloads.md) */
        struct xp_workers *creators; /* pod creations in parallel (replicaset_batch.c) */
        pthread_mutex_t events_lock; /* the Events' spam filter, used from the creators too */
        struct xp_map event_buckets; /* object uid -> struct bucket */
        bool orphans_left_out; /* pods without a controller were not cached (wl_pod_cached()) */
        int64_t busy_ms;
        int64_t next_s; /* wall time of the earliest recheck asked for (minReady, deadline) */
};

/* ---- the cache (workloads_cache.c) -------------------------------------------------------- */

/* The cache's key of object: "namespace/name", or "name" without a namespace. NULL: -ENOMEM. */
char *wl_key(const json_t *object);
int wl_cache_put(struct wl_cache *cache, const json_t *object);
/*
 * What the cache keeps of a pod, sharing the values with it: the syncs read only its metadata
 * (without managedFields), status, spec.nodeName and spec.affinity, and the cache may hold every
 * pod of the cluster (the whole pod cost ~14 KB each in jansson). NULL: -ENOMEM.
 */
json_t *wl_pod_slim(const json_t *pod);
/*
 * Whether the cache keeps pod: one with a controller (a ReplicaSet's, a Job's) always; one
 * without only while a ReplicaSet or a DaemonSet exists, the only kinds that adopt such pods
 * (nothing else reads them from the cache).
 */
bool wl_pod_cached(const struct xp_workloads *w, const json_t *pod);
/*
 * Brings the pods left out into the cache from the store, once a ReplicaSet or a DaemonSet
 * exists to adopt them, before any sync reads the cache; nothing while none was left out or
 * none exists. 0, or the store's errors (to be tried again before the next sync).
 */
int wl_orphans_fill(struct xp_workloads *w, struct xp_error *err);
void wl_cache_del(struct wl_cache *cache, const json_t *object);
/* The object of key, borrowed until the next informer sync; NULL when absent. */
json_t *wl_cache_get(const struct wl_cache *cache, const char *key);
void wl_cache_clear(struct wl_cache *cache);
/* Visits every object (in no order); stops when fn returns < 0 and returns that. */
int wl_cache_each(const struct wl_cache *cache,
                  int (*fn)(json_t *object, void *userdata),
                  void *userdata);

/* The informer's handlers for every kind (filled into w->handlers). -ENOMEM. */
int wl_handlers_make(struct xp_workloads *w);

/* ---- shared reads and writes (workloads_write.c) ------------------------------------------ */

const char *wl_meta(const json_t *object, const char *key);
/* metadata.namespace and .name split from "namespace/name" into buffers of ns_size/name_size. */
void wl_split_key(const char *key, char *ns, size_t ns_size, char *name, size_t name_size);

/* An Event about a workload object; best effort. */
void wl_event(struct xp_workloads *w,
              const json_t *object,
              const char *type,
              const char *reason,
              const char *fmt,
              ...) _printf_(5, 6);

/*
 * Creates a pod from owner's template (spec.template) with a controller ownerReference to owner
 * (apiVersion, kind), labels extra_labels (may be NULL) added and pod_spec_extra's members (may be
 * NULL) merged into the spec (a DaemonSet's node affinity). Records SuccessfulCreate or
 * FailedCreate. 0, or -errno when it was not created.
 */
int wl_create_pod(struct xp_workloads *w,
                  const json_t *owner,
                  const char *api_version,
                  const char *kind,
                  const json_t *extra_labels,
                  const json_t *affinity);

/* The creators' threads. -errno with err. */
int wl_creators_start(struct xp_workloads *w, struct xp_error *err);
/*
 * Creates n pods from owner's template as wl_create_pod() does, in slow-start batches on the
 * creators' threads; affinities (may be NULL) holds each pod's. Returns how many were created: a
 * batch with a failure ends it.
 */
size_t wl_create_pods(struct xp_workloads *w,
                      const json_t *owner,
                      const char *api_version,
                      const char *kind,
                      const json_t *labels,
                      json_t *const *affinities,
                      size_t n);
/* Frees the Events' spam filter. */
void wl_events_done(struct xp_workloads *w);

/*
 * Creates json as an object of kind in ns, as the API would (xp_registry_create()); a pod
 * (changed in place) gets the API's pod admission (xp_registry_pod_admit(), the quota check at
 * the write): 1 with *ret the object as written, 0 refused by a ResourceQuota (err says why),
 * -EPERM refused by another admission rule (err says which), -errno.
 */
int wl_create_object(struct xp_workloads *w,
                     const struct xp_kind *kind,
                     const char *ns,
                     json_t *json,
                     json_t **ret,
                     struct xp_error *err);

/* Deletes a pod gracefully, recording SuccessfulDelete on owner. 0 (gone or going), -errno. */
int wl_delete_pod(struct xp_workloads *w, const json_t *owner, const json_t *pod);

/*
 * xp_registry_change() on resource's key, logged unless -ENOENT. Returns its result.
 */
int wl_change(struct xp_workloads *w,
              const char *resource,
              const char *key,
              int (*fn)(json_t *object, void *userdata),
              void *userdata);

/* Replaces status in resource's key unless it is already equal. */
int wl_write_status(struct xp_workloads *w, const char *resource, const char *key, json_t *status);

/* Adopts (adopt) or releases object of resource for owner (its controller ownerReference): 1
 * written, 0 nothing to do, -errno. */
int wl_claim(struct xp_workloads *w,
             const char *resource,
             const json_t *owner,
             const char *api_version,
             const char *kind,
             const json_t *pod,
             bool adopt);

/* The pods owner controls (after adopting and releasing as its selector says), as xp_rs_pod
 * records, active or not, terminating ones too. Free with free(). -ENOMEM. */
int wl_owned_pods(struct xp_workloads *w,
                  const json_t *owner,
                  const char *api_version,
                  const char *kind,
                  struct xp_rs_pod **ret,
                  size_t *ret_n);

/* The wall clock, whole seconds. */
int64_t wl_now_s(const struct xp_workloads *w);
int64_t wl_now_ms(const struct xp_workloads *w);
/* Asks for a recheck of everything at wall time at_s. */
void wl_recheck_at(struct xp_workloads *w, int64_t at_s);

/* ---- the syncs -------------------------------------------------------------------------- */

int wl_replicaset_sync(struct xp_workloads *w, const char *key);
int wl_deployment_sync(struct xp_workloads *w, const char *key);
int wl_daemonset_sync(struct xp_workloads *w, const char *key);
/* The DaemonSet's ControllerRevisions for the template of hash (daemonset_history.c). -ENOMEM;
 * a failed write is left for the next sync. */
struct xp_rs_pod;
int wl_daemonset_history(struct xp_workloads *w,
                         const json_t *ds,
                         const char *hash,
                         const struct xp_rs_pod *pods,
                         size_t n_pods);
int wl_gc_sync(struct xp_workloads *w, const char *uid);
int wl_job_sync(struct xp_workloads *w, const char *key);
int wl_cronjob_sync(struct xp_workloads *w, const char *key);

/* What the informer's events queue (workloads_queue.c). */
enum wl_event {
        WL_ADDED,
        WL_UPDATED,
        WL_DELETED
};
void wl_on_any(struct xp_workloads *w,
               const char *resource,
               const json_t *object,
               enum wl_event event);
/* Queues the key of object ("namespace/name"). */
void wl_enqueue(struct xp_workqueue *queue, const json_t *object);
/* The expectations' key of a ReplicaSet or DaemonSet: "ReplicaSet/namespace/name". */
void wl_expect_key(const char *kind, const char *key, char *buf, size_t size);
