/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The registry: the object writes that the API's handlers (src/server) and the controllers
 * (src/controller) share, over the durable store, with no HTTP in sight. It owns what the API
 * server decides for every object (uid, generated names, creationTimestamp), the namespace holds
 * that order creates against namespace deletion, binding, graceful pod deletion, the Event
 * recorder, and the read-modify-write loop that redoes a write that lost a race.
 *
 * Errors are -errno with err saying what, in the API's words where a Status carries it: a handler
 * maps them to a Kubernetes Status (reply_store_error() and friends), a controller logs them.
 * The store's errors come through unchanged (-ENOENT, -EEXIST, -ESTALE, ...).
 *
 * Thread-safe: handlers' threads and controllers' threads call into one registry at once.
 * Lifecycle: xp_registry_new() borrows the store until xp_registry_free(), which must run after
 * every user of the registry stopped and before the store closes.
 */

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/kind.h"

struct xp_store;
struct xp_registry;

/* A namespace whose deletion has begun refuses new content: -XP_REGISTRY_TERMINATING. */
#define XP_REGISTRY_TERMINATING ESHUTDOWN

/*
 * Opens the registry over store (borrowed) and creates the namespaces every server has (default,
 * kube-system, kube-public, kube-node-lease) where they are missing. -ENOMEM, the store's errors.
 * Caller frees with xp_registry_free().
 */
int xp_registry_new(struct xp_store *store, struct xp_registry **ret, struct xp_error *err);
/* NULL is fine. */
void xp_registry_free(struct xp_registry *registry);
/* The store, borrowed: reads go to it directly. */
struct xp_store *xp_registry_store(const struct xp_registry *registry);

/* ---- names and versions (registry.c) ------------------------------------------------------ */

#define XP_REGISTRY_UID_STRING 37
/* A random (version 4) UUID, as Kubernetes gives every object. -errno of getrandom(). */
int xp_registry_uid(char buf[static XP_REGISTRY_UID_STRING]);
/* prefix plus five random characters from Kubernetes' alphabet (no vowels, no 0/1/3). */
int xp_registry_generate_name(const char *prefix, char **ret);
/* A resourceVersion as the store writes it: a positive decimal. */
bool xp_registry_version_parse(const char *text, uint64_t *ret);
void xp_registry_version_format(uint64_t version, char buf[static 24]);

/* ---- namespaces (namespace.c) ------------------------------------------------------------- */

/* The namespaces every server has, which cannot be deleted. */
bool xp_registry_namespace_protected(const char *name);

/*
 * Holds namespace ns for a write into it: 0 with ns existing and Active, held shared until
 * xp_registry_namespace_release(); -ENOENT when ns does not exist (err: namespaces "ns" not
 * found), -XP_REGISTRY_TERMINATING when its deletion has begun, the store's errors; nothing is
 * held on failure. A namespace deletion waits for the holds, so no write that found ns Active
 * lands after its contents were deleted. ns NULL (a cluster-scoped object) holds nothing.
 */
int xp_registry_namespace_hold(struct xp_registry *registry, const char *ns, struct xp_error *err);
/* Ends a hold; ns as given to the hold (NULL: nothing). */
void xp_registry_namespace_release(struct xp_registry *registry, const char *ns);

/* ServiceAccount name of namespace: 0 with *ret_account (a new reference, not to be modified;
 * ret_account NULL: only whether it exists), -ENOENT, or the store's -errno with err set. Read
 * from a cache dropped at every ServiceAccount write (what each pod create asks). */
int xp_registry_serviceaccount_get(struct xp_registry *registry,
                                   const char *namespace,
                                   const char *name,
                                   json_t **ret_account,
                                   struct xp_error *err);
/* ---- what a new pod gets from its ServiceAccount (serviceaccount_mount.c) ------------------ */

/* The volume kube-apiserver's ServiceAccount admission adds (its name's prefix), and its mount. */
#define XP_SERVICEACCOUNT_VOLUME_PREFIX "kube-api-access-"
#define XP_SERVICEACCOUNT_MOUNT_PATH    "/var/run/secrets/kubernetes.io/serviceaccount"
/* Whether the pod gets the token volume: its automountServiceAccountToken when set, else its
 * account's (account NULL: none), else true. */
bool xp_serviceaccount_automount(const json_t *pod, const json_t *account);
/*
 * Mounts the pod's kube-api-access-* volume (its first; none: one named new_name, added when a
 * container needs it) read-only at XP_SERVICEACCOUNT_MOUNT_PATH in each init and app container
 * that has nothing mounted there. The volume projects a token of 3607 s (path token), the
 * ConfigMap kube-root-ca.crt's ca.crt when with_ca, and the namespace (downwardAPI), mode 420.
 * A spec of the wrong shape is left alone for validation. 0 or -ENOMEM.
 */
int xp_serviceaccount_mount(json_t *pod, const char *new_name, bool with_ca);
/* The account's imagePullSecrets (names only) into a pod that names none: 0 or -ENOMEM. */
int xp_serviceaccount_pull_secrets(json_t *pod, const json_t *account);
/* Whether new pods get the token volume (tokens can be signed) and with the CA's source (the
 * server has a CA, published as kube-root-ca.crt). Set once at start, before any pod create. */
void xp_registry_serviceaccount_tokens(struct xp_registry *registry, bool tokens, bool root_ca);
/* All of the above for a new pod (changed in place) of account (NULL: an account that says
 * nothing, as `default` just made), as the admission does it: 0 or -ENOMEM. */
int xp_registry_serviceaccount_admit(struct xp_registry *registry,
                                     json_t *pod,
                                     const json_t *account);

/* ---- the admission of every new pod (pod_admit.c) ----------------------------------------- */

/*
 * What a new pod (its JSON, changed in place, before it is decoded) goes through whoever
 * creates it, the API's create as the workload controllers, in kube-apiserver's order: its
 * ServiceAccount (xp_registry_pod_account(), which must exist: a caller that may make `default`
 * does so first, xp_serviceaccount_default_ensure()) with the token volume and pull secrets it
 * gives, its PriorityClass, the namespace's LimitRanges, then Kubernetes' defaults (with
 * xp_registry_pod_tolerations()'). The ResourceQuota check follows on the pod as it will be
 * written: xp_registry_pod_admit_written(). 0; -EPERM with err in kube-apiserver's words when a
 * rule refuses the pod ("error looking up service account ns/x: serviceaccount \"x\" not found",
 * "no PriorityClass with name high was found", "maximum cpu usage per Container is 1, but limit
 * is 2"), -ENOMEM, the store's errors.
 */
int xp_registry_pod_admit(struct xp_registry *registry,
                          const char *ns,
                          json_t *pod,
                          struct xp_error *err);
/* The last step of xp_registry_pod_admit()'s admission, on the pod as xp_registry_create() would
 * write it: the namespace's ResourceQuotas. 0, or -EDQUOT with err "exceeded quota: ...". */
int xp_registry_pod_admit_written(struct xp_registry *registry,
                                  const char *ns,
                                  const json_t *pod,
                                  struct xp_error *err);
/* xp_registry_pod_admit_written() as an xp_registry_admit check, for callers with no admission
 * of their own: userdata is a struct xp_registry_pod_check; refused: 0 with *err saying why. */
struct xp_registry_pod_check {
        struct xp_registry *registry;
        const char *ns;
        struct xp_error *err;
};
int xp_registry_pod_admit_check(void *userdata, const json_t *pod);
/* The ServiceAccount a pod runs as: spec.serviceAccountName, else the deprecated
 * spec.serviceAccount, else "default". Borrowed from pod. */
const char *xp_registry_pod_account(const json_t *pod);
/* The not-ready and unreachable tolerations' tolerationSeconds new pods get (0: Kubernetes' 300);
 * the server sets it once at start, before any pod create. */
void xp_registry_pod_tolerations(struct xp_registry *registry, int64_t toleration_seconds);

/* Records a namespace just created as Active, so that holds need not read it. */
void xp_registry_namespace_created(struct xp_registry *registry, const char *name);
/* Forgets what is known of a namespace whose object changed: the next hold reads it. */
void xp_registry_namespace_changed(struct xp_registry *registry, const char *name);

/*
 * Deletes a namespace as Kubernetes does, synchronously: marks it Terminating (holds are refused
 * from then on), deletes every object in it (pods gracefully), then the namespace itself once no
 * pod is left. expected: the version it must have (0: any). dry: decide, write nothing.
 * *ret_ns receives what the API answers: the namespace as stored (dry), as last seen (removed),
 * or as marked (pods are still terminating). -EPERM for the protected namespaces, -ESTALE when
 * expected does not match, the store's errors.
 */
int xp_registry_namespace_delete(struct xp_registry *registry,
                                 const char *name,
                                 uint64_t expected,
                                 bool dry,
                                 json_t **ret_ns,
                                 struct xp_error *err);

/*
 * Deletes what is left in a Terminating namespace (pods gracefully), and the namespace once no
 * pod remains: 1 when it is gone, 0 while pods are terminating. *ret_last (may be NULL) receives
 * the namespace's last state (NULL when another call removed it first), or its current one while
 * it stays.
 */
int xp_registry_namespace_finish(struct xp_registry *registry,
                                 const char *name,
                                 json_t **ret_last,
                                 struct xp_error *err);

/* ---- objects (object.c) ------------------------------------------------------------------- */

/*
 * Admission: the caller's rules on an object as it would be written, before the write. check
 * returns > 0 to let it go on, 0 to refuse it (userdata has recorded why), or -errno.
 */
struct xp_registry_admit {
        int (*check)(void *userdata, const json_t *object);
        void *userdata;
};

/*
 * Creates an object as the API server does. object is of kind, decoded and validated by the
 * caller, and borrowed: its metadata is changed to what the server owns (the name generated from
 * generateName when empty, a new uid, creationTimestamp now, no resourceVersion or deletion) and
 * its kind's defaults are set; then it is encoded, admitted (admit: NULL for none) and written
 * into ns ("" for cluster-scoped kinds), which the caller holds (xp_registry_namespace_hold()). A
 * generated name that is taken gets another, as Kubernetes retries it. dry: everything but the
 * write. Returns 1 with *ret_json the object as written, 0 when admission refused it (nothing
 * written), or the store's errors (-EEXIST: the name is taken).
 */
int xp_registry_create(struct xp_registry *registry,
                       const struct xp_kind *kind,
                       const char *ns,
                       void *object,
                       const struct xp_registry_admit *admit,
                       bool dry,
                       json_t **ret_json,
                       struct xp_error *err);
/*
 * As xp_registry_create(), and *ret_text (set to NULL first) receives the object as the store
 * wrote it, as text (xp_store_written's: caller frees; NULL for a dry run or when the text could
 * not be had), so that an answer need not encode *ret_json again. *object is taken once it is
 * encoded (freed then, while it is still in the cache, not after the commit's wait; NULL after):
 * *ret_name (set to NULL first; caller frees) is then the name it was, or would have been,
 * written under.
 */
int xp_registry_create_text(struct xp_registry *registry,
                            const struct xp_kind *kind,
                            const char *ns,
                            void **object,
                            const struct xp_registry_admit *admit,
                            bool dry,
                            json_t **ret_json,
                            char **ret_text,
                            char **ret_name,
                            struct xp_error *err);

/*
 * The generation an update writes (generation.c): for a kind with a status subresource, object's
 * metadata.generation becomes stored's, plus one when the spec changed. 0 or -ENOMEM.
 */
int xp_registry_generation(const struct xp_kind *kind, json_t *object, const json_t *stored);

struct xp_object_meta;
/*
 * What an update may not change, taken from the stored object: uid, creationTimestamp,
 * deletionTimestamp and deletionGracePeriodSeconds belong to the server, and the store sets the
 * resourceVersion. meta is the update's (changed in place). -ECANCELED when the update names
 * another uid (err in Kubernetes' "Precondition failed: ..." words), -ENOMEM.
 */
int xp_registry_keep_owned(struct xp_object_meta *meta, const json_t *stored, struct xp_error *err);

/*
 * A change to one object, made on its freshly read state: 1 when it changed object, 0 when
 * nothing is to be written, -errno to give up (returned as is).
 */
typedef int (*xp_registry_change_fn)(json_t *object, void *userdata);

/*
 * Reads resource/ns/name, lets fn change it and writes it back with the version read as
 * precondition; a write that lost a race is redone on the new state (a bounded number of times,
 * then -ESTALE). Returns 1 written, 0 nothing to write, -errno; *ret_object (may be NULL) receives
 * the object as written (or as read when nothing was written).
 */
int xp_registry_change(struct xp_registry *registry,
                       const char *resource,
                       const char *ns,
                       const char *name,
                       xp_registry_change_fn fn,
                       void *userdata,
                       json_t **ret_object,
                       struct xp_error *err);

/* ---- pods (pod.c) ------------------------------------------------------------------------- */

/*
 * Binds a pod as the Binding subresource does: spec.nodeName, annotations (may be NULL) merged
 * into metadata.annotations and PodScheduled=True, in one store update whose precondition is the
 * version read. expected_version 0 binds whatever the pod's version (a stale read is read again);
 * otherwise the pod must still be at that version, else -ESTALE. -EALREADY when the pod is bound
 * already, -EBUSY when it is being deleted (err says which, as the 409 message's tail), the
 * store's errors (-ENOENT, ...). *ret_pod (may be NULL) receives the pod as written.
 */
int xp_registry_pod_bind(struct xp_registry *registry,
                         const char *ns,
                         const char *name,
                         const char *node,
                         const json_t *annotations,
                         uint64_t expected_version,
                         json_t **ret_pod,
                         struct xp_error *err);

/*
 * The same binding of a pod the caller has as stored at version (an informer's copy; not
 * changed): no read, the store's precondition on version stands for it. -ESTALE when the pod
 * changed since, -EINVAL for a pod without name, namespace or version, else as above.
 */
int xp_registry_pod_bind_known(struct xp_registry *registry,
                               const json_t *pod,
                               uint64_t version,
                               const char *node,
                               const json_t *annotations,
                               json_t **ret_pod,
                               struct xp_error *err);

struct xp_registry_event;

/*
 * As xp_registry_pod_bind_known(), with the Event reporting it (the scheduler's Scheduled)
 * written in the same group of the store's: one transaction and one wait for the disk for both,
 * and the Event only once the binding is written. An Event that cannot be written (its namespace
 * going away, a repeat) does not fail the binding.
 */
int xp_registry_pod_bind_reported(struct xp_registry *registry,
                                  const json_t *pod,
                                  uint64_t version,
                                  const char *node,
                                  const json_t *annotations,
                                  const struct xp_registry_event *event,
                                  json_t **ret_pod,
                                  struct xp_error *err);

/* One binding of xp_registry_pod_bind_many(). */
struct xp_registry_binding {
        const json_t *pod; /* as decided on: the store's at version */
        uint64_t version;
        const char *node;
        const json_t *annotations;
        const struct xp_registry_event *event; /* reporting it (the Scheduled Event), or NULL */
        /* recorded in the same group whatever becomes of the binding (the FailedScheduling
         * count of the failures before it), or NULL */
        const struct xp_registry_event *before;
        json_t **ret_pod; /* NULL, or gets the pod as bound */
        /* a pod written since version, its uid, spec, labels and annotations still as decided
         * on (its status written meanwhile), is bound as it is now rather than failing as stale:
         * kube's Binding checks no version, only that the pod is unbound (the scheduler's own
         * status write of a failure must not undo its next decision); xpool's scheduler also
         * decides on labels (the queue, the gang), so a relabelled pod stays stale */
        bool same_spec_will_do;
        int result; /* 0 bound, else as xp_registry_pod_bind_reported()'s, with err */
        struct xp_error err;
};

/*
 * As xp_registry_pod_bind_reported() for n bindings at once (a scheduling pass's): the bindings
 * and their Events share one group of the store's, so one transaction and one wait for the disk
 * for all, in their order (each Event right after its binding). Each binding succeeds or fails
 * alone (a stale version, a pod bound or deleted meanwhile: b[i].result), and an Event is
 * written only with its binding. A before Event that loses a race is recorded after the group.
 * A binding with same_spec_will_do that lost to a write leaving uid, spec, labels and annotations
 * as they were is made again after the group, alone, on the pod as it is now (its Event recorded
 * after it).
 * Returns how many were bound, or -ENOMEM when none was tried.
 */
int xp_registry_pod_bind_many(struct xp_registry *registry,
                              struct xp_registry_binding *b,
                              size_t n);

/*
 * Updates pod (as it is to be stored, its namespace and name in its metadata; expected_version
 * the precondition, as xp_store_update()'s) and records event in the same group of the store's:
 * one transaction and one wait for the disk for both (the scheduler's PodScheduled=False and its
 * FailedScheduling Event). The Event only if the update is written; one that loses a race is
 * recorded after the group, one into a namespace going away not at all. 0 with *ret_version;
 * the update's -errno with err (-ESTALE, -ENOENT); -EINVAL without a name or version. pod is
 * shared with the store's readers once written: the caller never changes it after (members it
 * shares with another object included).
 */
int xp_registry_pod_update_reported(struct xp_registry *registry,
                                    json_t *pod,
                                    uint64_t expected_version,
                                    const struct xp_registry_event *event,
                                    uint64_t *ret_version,
                                    struct xp_error *err);

/*
 * Whether an update of a pod from old to new (both as they would be stored, with Kubernetes'
 * defaults) keeps to what ValidatePodUpdate allows: only the images, activeDeadlineSeconds (set or
 * lowered), additions to tolerations (and existing ones' tolerationSeconds), and
 * terminationGracePeriodSeconds from a negative value to 1 may change in the spec. 0 when it may
 * go on; -EINVAL with err holding the first problem as "FIELD: MESSAGE" in kube-apiserver's
 * words (spec: Forbidden: pod updates may not change fields other than ..., with a diff of the
 * spec's members that changed); -ENOMEM.
 */
int xp_registry_pod_update_check(const json_t *old, const json_t *new, struct xp_error *err);

/* What a DELETE asks for (DeleteOptions or the query). */
struct xp_registry_delete_options {
        bool has_grace;        /* gracePeriodSeconds given */
        int64_t grace_seconds; /* negative counts as 1, as Kubernetes */
        const char *uid;       /* preconditions.uid, NULL when none */
        uint64_t version;      /* preconditions.resourceVersion, 0 when none */
        bool dry;              /* ?dryRun=All: decide, write nothing */
};

/*
 * Deletes a pod as Kubernetes does (xp_lifecycle_delete_plan()): a pod bound to a node and not
 * terminal gets metadata.deletionTimestamp = now + grace and stays until its agent deletes it
 * with grace 0; an unbound or terminal one, or grace 0, is removed at once. *ret_pod receives the
 * pod as it is now (the last state when removed), *ret_removed whether it is gone. -ECANCELED
 * when a precondition fails (err has Kubernetes' "Precondition failed: ..." text), the store's
 * errors (-ENOENT, ...).
 */
int xp_registry_pod_delete(struct xp_registry *registry,
                           const char *ns,
                           const char *name,
                           const struct xp_registry_delete_options *options,
                           json_t **ret_pod,
                           bool *ret_removed,
                           struct xp_error *err);

/* ---- finalizers (finalize.c) -------------------------------------------------------------- */

/* Whether metadata.finalizers holds any name. */
bool xp_registry_has_finalizers(const json_t *object);

/*
 * Marks object deleting as kube-apiserver does for an object whose finalizers hold it:
 * deletionTimestamp now (an earlier one is kept), deletionGracePeriodSeconds 0, and generation
 * one more on the first mark. 1 when changed, 0 when already so, -EINVAL, -ENOMEM.
 */
int xp_registry_mark_deleting(json_t *object, int64_t now_s);

/*
 * Whether an update that writes object removes it instead: it is deleting, its last finalizer
 * has gone and no grace is pending (a pod in its grace goes when its agent has stopped it).
 */
bool xp_registry_update_removes(const json_t *object);

/*
 * The finalizers an update of old to new may write: none new once old is deleting. 0 when it
 * may; -EINVAL with err as "metadata.finalizers: Forbidden: no new finalizers can be added if
 * the object is being deleted, found new finalizers []string{...}" (kube-apiserver's words).
 */
int xp_registry_finalizers_check(const json_t *old, const json_t *new, struct xp_error *err);

/*
 * Deletes an object of any kind but pods (xp_registry_pod_delete()) as kube-apiserver does: one
 * without finalizers is removed (1, *ret_last its last state); one with finalizers is marked
 * (xp_registry_mark_deleting()) and stays until an update takes the last one away (0, *ret_last
 * as it is now). expected: the version it must have (0: any, a lost race is tried again).
 * ret_last may be NULL. -ESTALE when expected does not match, the store's errors.
 */
int xp_registry_delete(struct xp_registry *registry,
                       const char *resource,
                       const char *ns,
                       const char *name,
                       uint64_t expected,
                       json_t **ret_last,
                       struct xp_error *err);

/* ---- events (event.c) --------------------------------------------------------------------- */

/* An Event about one object, as the controllers report what they did or could not do. */
struct xp_registry_event {
        const char *kind;      /* involvedObject.kind: "Pod", "Node" */
        const char *namespace; /* the object's; "" (cluster-scoped): the Event goes to default */
        const char *name;      /* the object's */
        const char *uid;       /* the object's; NULL: "" */
        const char *resource_version; /* the object's version reported on; NULL: left out */
        const char *component;        /* source.component: "default-scheduler" */
        /* Set by a reporter that, as kube-scheduler's events.k8s.io recorder, also names itself in
         * reportingComponent (the component) and reportingInstance (COMPONENT-HOST); NULL: the
         * two are left out. */
        const char *reporting_host;
        const char *type;   /* Normal, Warning */
        const char *reason; /* FailedScheduling */
        const char *message;
        int64_t count; /* occurrences this report adds; 0 counts as 1 */
};

/*
 * Records an Event as Kubernetes' recorder does: the same object, reason and message count on one
 * Event (its name is the object's plus a hash of the three), whose count and lastTimestamp grow;
 * anything else is a new Event. 1 when written, 0 when the Event's namespace is gone or
 * terminating (nowhere to report: nothing written), -errno with err.
 */
int xp_registry_event_record(struct xp_registry *registry,
                             const struct xp_registry_event *event,
                             struct xp_error *err);

/* ---- lists at a version (list_at.c) -------------------------------------------------------- */

/*
 * The objects of a kind (one namespace, or all when namespace is NULL) as they were at version,
 * ordered by namespace and name: the current ones, with what was written since taken back
 * through the store's event log. version 0 or at/after the store's version: the current list,
 * *ret_version the store's version; else *ret_version = version. -XP_STORE_EXPIRED (err says
 * what) when the log no longer holds what the list was then; -ENOMEM; the store's errors.
 */
int xp_registry_list_at(struct xp_store *store,
                        const char *kind,
                        const char *namespace,
                        uint64_t version,
                        json_t **ret_items,
                        uint64_t *ret_version,
                        struct xp_error *err);

/* ---- ResourceQuota and LimitRange admission of a new pod (quota.c, limitrange.c) --------------
 */

struct xp_resource_list;

/*
 * What a pod (JSON) counts for in a quota: pods and count/pods 1, requests.R and limits.R of its
 * containers (and cpu, memory, ... as requests under their bare names). *ret must be empty.
 * 0, -ENOMEM, -ERANGE (then *ret is empty).
 */
int xp_registry_pod_usage(const json_t *pod, struct xp_resource_list *ret);
/* The sum over pods (a JSON array) that are not Succeeded or Failed. */
int xp_registry_namespace_usage(const json_t *pods, struct xp_resource_list *ret);
/*
 * The usage of pods under each of quotas (the ResourceQuotas of namespace, a JSON array), from
 * the running totals admission checks against (quota_ledger.c), so that status and admission
 * agree: ret[i] += the usage under quotas[i], for an array ret of json_array_size(quotas) lists
 * the caller frees. 0, or -errno with err (ret freed).
 */
int xp_registry_quota_ledger_usage(struct xp_registry *registry,
                                   const char *namespace,
                                   const json_t *quotas,
                                   struct xp_resource_list *ret,
                                   struct xp_error *err);
/* Whether quota's scopes (spec.scopes, spec.scopeSelector) take pod in (quota_scope.c). */
bool xp_registry_quota_matches(const json_t *quota, const json_t *pod);
/* xp_registry_namespace_usage() of the pods quota's scopes take in. */
int xp_registry_quota_usage(const json_t *quota, const json_t *pods, struct xp_resource_list *ret);
/*
 * -EDQUOT with err "exceeded quota: NAME, requested: R=1, used: R=2, limited: R=2" (the
 * resources over their hard limit, sorted) when pod, added to pods, exceeds one of quotas (JSON
 * arrays of ResourceQuotas and Pods of its namespace) whose scopes take it in, counting the
 * pods each one takes in; else 0.
 */
int xp_registry_quota_check(const json_t *quotas,
                            const json_t *pods,
                            const json_t *pod,
                            struct xp_error *err);
/* As xp_registry_quota_check() with the namespace's quotas and pods as stored now, against a
 * running usage that follows the store's pod writes (a delete or a terminal phase releases what
 * the pod held): its cost does not grow with the namespace's pods. */
int xp_registry_quota_admit(struct xp_registry *registry,
                            const char *namespace,
                            const json_t *pod,
                            struct xp_error *err);
struct xp_kind;
/*
 * What objects (a JSON array of one namespaced kind) count for in quota's object count
 * resources: count/<resource>[.<group>], the older bare names (configmaps, secrets, services,
 * persistentvolumeclaims, replicationcontrollers, resourcequotas) and services.nodeports,
 * services.loadbalancers, added to *ret; nothing for pods (xp_registry_pod_usage()) or a quota
 * with scopes (they apply to pods). 0, -ENOMEM, -ERANGE (quota_count.c).
 */
int xp_registry_object_usage(const struct xp_kind *kind,
                             const json_t *quota,
                             const json_t *objects,
                             struct xp_resource_list *ret);
/* The kind a quota resource name counts (count/configmaps, services.nodeports, ...), or NULL. */
const struct xp_kind *xp_registry_quota_counted_kind(const char *name);
/*
 * The ResourceQuota admission of a new object of kind (not a pod) in namespace, as stored now:
 * -EDQUOT with err "exceeded quota: NAME, requested: count/configmaps=1, used:
 * count/configmaps=2, limited: count/configmaps=2" when one of its object counts would go over
 * its hard limit; else 0.
 */
int xp_registry_quota_count_admit(struct xp_registry *registry,
                                  const struct xp_kind *kind,
                                  const char *namespace,
                                  const json_t *object,
                                  struct xp_error *err);
/*
 * LimitRanger: each container of pod (changed in place) gets the defaults of ranges' Container
 * items it lacks (limits from default; requests from defaultRequest, else default), then every
 * request and limit is checked against min and max: -EPERM with err "maximum cpu usage per
 * Container is 1, but limit is 2". -ENOMEM.
 */
int xp_registry_limitrange_apply(const json_t *ranges, json_t *pod, struct xp_error *err);
/* xp_registry_limitrange_apply() with the namespace's LimitRanges as stored now. */
int xp_registry_limitrange_admit(struct xp_registry *registry,
                                 const char *namespace,
                                 json_t *pod,
                                 struct xp_error *err);
