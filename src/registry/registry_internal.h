/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the registry's files (src/registry/): the registry itself. */

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "xpool/registry.h"
#include "xpool/store.h"

/*
 * The namespaces known to exist and be Active, so that a hold need not read its namespace from
 * the store. Only the registry writes namespaces, so the cache cannot go stale: a namespace enters
 * when a hold checks it, leaves when its deletion begins or its object changes.
 *
 * lock orders holds against namespace deletion: a hold takes it shared from the check to the end
 * of its write, a deletion exclusively while it marks the namespace Terminating, so no write that
 * saw the namespace Active lands after its contents are deleted.
 */
struct namespace_cache {
        pthread_rwlock_t lock;
        pthread_mutex_t mutex; /* guards names */
        char **names;
        size_t n;
};

/* The globalDefault PriorityClass as of version (priority.c): read again only when the store's
 * log shows a PriorityClass written since (every pod create asks). */
struct priority_cache {
        pthread_mutex_t mutex;
        bool read;     /* best was read, at the PriorityClasses' write mark mark */
        uint64_t mark; /* xp_store_kind_generation() */
        json_t *best;  /* NULL: none */
};

/*
 * One kind's objects by namespace, as listed from the store (kind_cache.c): what admission reads
 * on every pod create (ResourceQuotas, LimitRanges, ServiceAccounts). All of it is dropped when the
 * store's mark for the kind (xp_store_kind_generation()) moves, so an update or delete anywhere is
 * seen by the next create; a namespace without any costs a lookup. The lists are shared and
 * read-only.
 */
struct kind_cache {
        pthread_mutex_t mutex;
        const char *kind;
        uint64_t generation;  /* the store's mark for kind when by_namespace was begun */
        json_t *by_namespace; /* namespace -> array of the kind's objects there */
};

/* The names handed to the controllers' Events, by what they report (event_names.c). */
struct event_name_slot;
struct event_names {
        pthread_mutex_t lock;
        struct event_name_slot *slots;
        int64_t last_ns; /* the time in the last name: each new one is later */
};

struct xp_registry {
        struct xp_store *store;
        struct event_names event_names;
        struct namespace_cache namespaces;
        struct priority_cache priority;
        struct kind_cache quotas, limitranges, serviceaccounts;
        /* Held from a create's quota check to its write in a namespace with ResourceQuotas, but
         * for pods, whose check charges the quotas' running usage (quota_ledger.c)
         * (object.c), so that creates made at once cannot all fit under the same usage: what
         * Kubernetes gets from writing each quota's usage with its resourceVersion. Recursive:
         * an admission rule may create (a namespace's default ServiceAccount). */
        pthread_mutex_t quota_lock;
        struct quota_ledger *ledgers; /* quota_ledger.c, under quota_lock */
        /* how many there are, read without the lock: a namespace without quotas looks for its
         * ledger (to free it) only while some namespace has one */
        atomic_size_t n_ledgers;
        /* what new pods get (xp_registry_serviceaccount_tokens): set at start, read after */
        bool pod_tokens, pod_root_ca;
        int64_t pod_toleration_seconds; /* xp_registry_pod_tolerations() */
};

/*
 * pod (JSON) against quotas (the ResourceQuotas of namespace, a JSON array) and the running
 * usage of each (quota_ledger.c), caught up with the store's pod writes first: 0, -EDQUOT with
 * Kubernetes' message, -errno with err. Takes quota_lock.
 */
int registry_quota_ledger_check(struct xp_registry *registry,
                                const char *namespace,
                                const json_t *quotas,
                                const json_t *pod,
                                struct xp_error *err);
void registry_quota_ledgers_free(struct xp_registry *registry);
/* The namespace has no ResourceQuota (any more): its ledger, if it has one, is freed (a quota
 * that comes back lists its pods again). */
void registry_quota_ledger_forget(struct xp_registry *registry, const char *namespace);

/*
 * A pod create's quota charge: set (registry_quota_charge, this thread's) by the create around
 * its admission check, so that the check that admits the pod charges the quotas at once and the
 * store's commit runs outside quota_lock; settled after the write, whether or not it landed.
 */
struct quota_charge {
        char *uid; /* the pod charged; NULL: nothing charged */
        char *namespace;
};
extern _Thread_local struct quota_charge *registry_quota_charge;
void registry_quota_charge_settle(struct xp_registry *registry, struct quota_charge *charge);

/* Whether pod holds quota: pods that are done (Succeeded, Failed) hold nothing, as Kubernetes'
 * quota counts them (quota.c). */
bool registry_pod_holds_quota(const json_t *pod);

/* Whether namespace has a ResourceQuota (its creates then take quota_lock): quota.c. */
bool registry_quotas_present(struct xp_registry *registry, const char *namespace);

void kind_cache_init(struct kind_cache *cache, const char *kind);
void kind_cache_done(struct kind_cache *cache);
/* The kind's objects in namespace as *ret_items (a new reference; do not modify it), as
 * xp_store_list() would give them: 0, or the store's -errno with err set. */
int kind_cache_list(struct kind_cache *cache,
                    struct xp_store *store,
                    const char *namespace,
                    json_t **ret_items,
                    struct xp_error *err);

void priority_cache_init(struct xp_registry *registry);
/* A new Event for e (event.c): its namespace and name in ret_ns/ret_name, NULL without memory.
 * A repeat of an Event still remembered gets that Event's name: its create fails (-EEXIST), and
 * xp_registry_event_record() counts on it. */
json_t *registry_event_new(struct xp_registry *registry,
                           const struct xp_registry_event *e,
                           const char **ret_ns,
                           char ret_name[static XP_STORE_KEY_MAX + 1]);
void priority_cache_done(struct xp_registry *registry);
/*
 * The write that records e in a group of writes (event.c): the Event there (named into name)
 * read and counted on, or a new one. 0 with ret's object a new reference, the store's -errno.
 * A write that loses a race fails alone; xp_registry_event_record() then records it.
 */
int registry_event_write(struct xp_registry *registry,
                         const struct xp_registry_event *e,
                         char name[static XP_STORE_KEY_MAX + 1],
                         struct xp_store_group_write *ret);
int registry_event_names_init(struct event_names *names);
void registry_event_names_done(struct event_names *names);
/* The name of e's Event (event_names.c): true when e repeats one that has it, else a new one. */
bool registry_event_name(struct xp_registry *registry,
                         const struct xp_registry_event *e,
                         char name[static XP_STORE_KEY_MAX + 1]);
/* Holds the namespaces a group of writes goes into, at once (namespace.c). */
void registry_namespaces_hold(struct xp_registry *registry,
                              const char *const *ns,
                              size_t n,
                              bool *ret_active);

/* A quantity written as a JSON string or number; false for anything else (quota.c). */
struct xp_quantity;
bool registry_quantity_of(const json_t *value, struct xp_quantity *ret);

struct xp_resource_list;
/* list[name] += q (quota.c). 0, -ENOMEM, -ERANGE. */
int registry_quota_add(struct xp_resource_list *list,
                       const char *name,
                       const struct xp_quantity *q);
/* The resources of hard that used + requested exceed, or none: kube-apiserver's message ("exceeded
 * quota: NAME, requested: R=1, used: R=2, limited: R=2"), or NULL (quota.c). */
char *registry_quota_exceeded(const char *quota,
                              const json_t *hard,
                              const struct xp_resource_list *requested,
                              const struct xp_resource_list *used);
