/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running usage of each ResourceQuota of a namespace (registry_internal.h), so that a pod
 * create is checked in time independent of how many pods the namespace holds. The ledger keeps
 * the pods that count (not Succeeded or Failed) as last written and, per quota, the sum of those
 * its scopes take in. It follows the store's log of pod writes from the version it was listed at:
 * an admitted create lands there and is charged at the next check, a delete or a terminal phase
 * releases what the pod held, and a write of any writer (the agent's status, a delete, a
 * namespace's deletion) is seen. Everything runs under quota_lock, the lock a create holds from
 * its check to its write, so the totals are exact when a create is checked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/doc.h"
#include "xpool/log.h"
#include "xpool/resource.h"
#include "xpool/store.h"

#define LEDGER_SCAN_MAX    512 /* events read at once */
#define LEDGER_SCAN_ROUNDS 64  /* a backlog longer than this many scans is listed again */

/* One quota's total: the quota as summed ({"spec": ...}, compared with the stored one). */
struct ledger_quota {
        char *uid; /* quota_key() */
        json_t *quota;
        struct xp_resource_list used;
};

struct quota_ledger {
        char *namespace;
        uint64_t version; /* the pod writes of the store's log read through */
        json_t *pods;     /* name -> the pod as written, those that count only */
        json_t *pending;  /* uid -> a pod admitted and charged whose write the log has not shown */
        uint64_t lists;   /* the times its pods were listed (XPOOL_DEBUG=quota logs each) */
        struct ledger_quota *quotas;
        size_t n_quotas;
        struct quota_ledger *next;
};

static void ledger_quota_done(struct ledger_quota *q)
{
        free(q->uid);
        json_decref(q->quota);
        xp_resource_list_done(&q->used);
}

static void ledger_free(struct quota_ledger *l)
{
        for (size_t i = 0; i < l->n_quotas; i++)
                ledger_quota_done(&l->quotas[i]);
        free(l->quotas);
        json_decref(l->pods);
        json_decref(l->pending);
        free(l->namespace);
        free(l);
}

void registry_quota_ledgers_free(struct xp_registry *registry)
{
        while (registry->ledgers) {
                struct quota_ledger *next = registry->ledgers->next;

                ledger_free(registry->ledgers);
                registry->ledgers = next;
        }
}

/* q->used += sign * what pod counts for, when q's scopes take it in. */
static int charge(struct ledger_quota *q, const json_t *pod, int sign)
{
        struct xp_resource_list usage = {0};
        int r;

        if (!xp_registry_quota_matches(q->quota, pod))
                return 0;
        r = xp_registry_pod_usage(pod, &usage);
        if (r >= 0)
                r = sign > 0 ? xp_resource_list_add(&q->used, &usage, NULL)
                             : xp_resource_list_sub(&q->used, &usage, NULL);
        xp_resource_list_done(&usage);
        return r;
}

/* All of l's totals += sign * what pod counts for. */
static int charge_all(struct quota_ledger *l, const json_t *pod, int sign)
{
        int r = 0;

        for (size_t i = 0; r >= 0 && i < l->n_quotas; i++)
                r = charge(&l->quotas[i], pod, sign);
        return r;
}

/* The charge made at the check of the pod whose uid this is, released (its write was seen, or
 * failed). */
static int release_pending(struct quota_ledger *l, const char *uid)
{
        const json_t *pod = uid[0] ? json_object_get(l->pending, uid) : NULL;
        int r = pod ? charge_all(l, pod, -1) : 0;

        if (pod)
                json_object_del(l->pending, uid);
        return r;
}

/* One pod write: what it held before is released, what it holds now charged. */
static int apply(struct quota_ledger *l, const char *name, const json_t *now)
{
        const json_t *before = json_object_get(l->pods, name);
        int r = now ? release_pending(l, xp_json_str_at(now, "metadata.uid", "")) : 0;

        if (now && !registry_pod_holds_quota(now))
                now = NULL;
        for (size_t i = 0; r >= 0 && i < l->n_quotas; i++) {
                if (before)
                        r = charge(&l->quotas[i], before, -1);
                if (r >= 0 && now)
                        r = charge(&l->quotas[i], now, 1);
        }
        if (r < 0)
                return r;
        if (!now) {
                json_object_del(l->pods, name); /* absent when it never counted */
                return 0;
        }
        return json_object_set(l->pods, name, (json_t *)now) < 0 ? -ENOMEM : 0;
}

/* Starts l over from pods (the namespace's, as listed at version); its quotas are summed again
 * by sync_quotas(). */
static int install(struct quota_ledger *l, const json_t *pods, uint64_t version)
{
        const json_t *pod;
        size_t i;
        int r = 0;

        for (size_t k = 0; k < l->n_quotas; k++)
                ledger_quota_done(&l->quotas[k]);
        l->n_quotas = 0;
        l->version = version;
        json_object_clear(l->pods);
        json_array_foreach(pods, i, pod)
        {
                json_object_del(l->pending, xp_json_str_at(pod, "metadata.uid", ""));
                if (r >= 0 && registry_pod_holds_quota(pod))
                        r = json_object_set(l->pods,
                                            xp_json_str_at(pod, "metadata.name", ""),
                                            (json_t *)pod) < 0
                                ? -ENOMEM
                                : 0;
        }
        if (r < 0)
                l->version = 0; /* listed again at the next check */
        return r;
}

#define LEDGER_RELIST 1 /* catch_up(): the pods are to be listed again */

/* Reads the pod writes since l->version: 0, LEDGER_RELIST (l->version is 0 then) when the log no
 * longer holds them or never did, or -errno with err. */
static int catch_up(struct xp_store *store, struct quota_ledger *l, struct xp_error *err)
{
        for (int round = 0; l->version != 0 && round < LEDGER_SCAN_ROUNDS; round++) {
                struct xp_store_event *events = NULL;
                size_t n = 0;
                uint64_t through = l->version;
                int r = xp_store_events_scan(store,
                                             "pods",
                                             l->namespace,
                                             l->version,
                                             LEDGER_SCAN_MAX,
                                             &events,
                                             &n,
                                             &through,
                                             NULL);

                if (r == -XP_STORE_EXPIRED)
                        break;
                if (r < 0)
                        return xp_errorf(
                            err, r, "quota: reading the pod writes of %s", l->namespace);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = apply(l,
                                  events[i].name,
                                  events[i].type == XP_STORE_DELETED ? NULL : events[i].object);
                xp_store_events_free(events, n);
                if (r < 0) {
                        l->version = 0;
                        return xp_errorf(err, r, "quota: out of memory");
                }
                l->version = through;
                if (n < LEDGER_SCAN_MAX)
                        return 0;
        }
        l->version = 0; /* no check runs on these totals until they are listed again */
        return LEDGER_RELIST;
}

/* Which quota a total is for: its uid and name (a quota written without a uid has a name). */
static char *quota_key(const json_t *stored)
{
        char *key = NULL;

        if (asprintf(&key,
                     "%s/%s",
                     xp_json_str_at(stored, "metadata.uid", ""),
                     xp_json_str_at(stored, "metadata.name", "")) < 0)
                return NULL;
        return key;
}

/* A quota's total summed over the ledger's pods. */
static int sum_quota(struct quota_ledger *l, const json_t *stored, struct ledger_quota *ret)
{
        const char *name;
        json_t *pod;
        int r = 0;

        ret->uid = quota_key(stored);
        ret->quota = json_pack("{s:O?}", "spec", json_object_get(stored, "spec"));
        if (!ret->uid || !ret->quota)
                r = -ENOMEM;
        json_object_foreach(l->pods, name, pod)
        {
                if (r >= 0)
                        r = charge(ret, pod, 1);
        }
        json_object_foreach(l->pending, name, pod)
        {
                if (r >= 0)
                        r = charge(ret, pod, 1);
        }
        return r;
}

/* l's totals for quotas (the namespace's, in order): kept where a quota's spec is unchanged,
 * summed where it is new or changed, dropped where it is gone. */
static int sync_quotas(struct quota_ledger *l, const json_t *quotas)
{
        size_t n = json_array_size(quotas);
        struct ledger_quota *next = calloc(n ? n : 1, sizeof *next);
        int r = next ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < n; i++) {
                const json_t *stored = json_array_get(quotas, i);
                char *uid = quota_key(stored);

                if (!uid) {
                        r = -ENOMEM;
                        break;
                }

                for (size_t k = 0; k < l->n_quotas && !next[i].quota; k++) {
                        struct ledger_quota *q = &l->quotas[k];

                        if (q->quota && strcmp(q->uid, uid) == 0 &&
                            json_equal(json_object_get(q->quota, "spec"),
                                       json_object_get(stored, "spec"))) {
                                next[i] = *q;
                                *q = (struct ledger_quota){0};
                        }
                }
                free(uid);
                if (!next[i].quota)
                        r = sum_quota(l, stored, &next[i]);
        }
        for (size_t k = 0; k < l->n_quotas; k++)
                ledger_quota_done(&l->quotas[k]);
        free(l->quotas);
        l->quotas = next;
        l->n_quotas = next ? n : 0;
        return r;
}

/* The namespace's ledger, made (empty, to be listed) when absent; NULL without memory. */
static struct quota_ledger *ledger_of(struct xp_registry *registry, const char *namespace)
{
        struct quota_ledger *l;

        for (l = registry->ledgers; l; l = l->next)
                if (strcmp(l->namespace, namespace) == 0)
                        return l;
        l = calloc(1, sizeof *l);
        if (!l)
                return NULL;
        l->namespace = strdup(namespace);
        l->pods = json_object();
        l->pending = json_object();
        if (!l->namespace || !l->pods || !l->pending) {
                ledger_free(l);
                return NULL;
        }
        l->next = registry->ledgers;
        registry->ledgers = l;
        atomic_fetch_add(&registry->n_ledgers, 1);
        return l;
}

#define LEDGER_LIST_TRIES 3 /* lists made outside quota_lock before one is made under it */

/*
 * The namespace's ledger caught up with the store (quota_lock held): NULL with *r set on failure.
 * The pods are listed outside quota_lock, so that creates in other namespaces, and the status of
 * this one, do not wait on a list of thousands of pods; the list then starts the ledger over
 * unless another thread's list did so meanwhile. The last try lists under the lock, so that a
 * namespace whose log moves faster than it is listed still gets its totals: that list is current
 * for admission as it stands (every create is checked and written under the lock), so it is not
 * caught up again with a log that other writers may have trimmed past it meanwhile.
 */
static struct quota_ledger *
ledger_current(struct xp_registry *registry, const char *namespace, int *r, struct xp_error *err)
{
        for (int try = 0; try <= LEDGER_LIST_TRIES; try++) {
                struct quota_ledger *l = ledger_of(registry, namespace);
                json_t *pods = NULL;
                uint64_t version = 0;
                bool unlocked = try < LEDGER_LIST_TRIES;

                *r = l ? catch_up(registry->store, l, err)
                       : xp_errorf(err, -ENOMEM, "quota: out of memory");
                if (*r != LEDGER_RELIST)
                        return *r < 0 ? NULL : l;
                if (unlocked)
                        pthread_mutex_unlock(&registry->quota_lock);
                *r = xp_store_list(registry->store, "pods", namespace, &pods, &version, err);
                if (unlocked)
                        pthread_mutex_lock(&registry->quota_lock);
                l = *r >= 0 ? ledger_of(registry, namespace) : NULL; /* freed meanwhile? */
                if (*r >= 0 && !l)
                        *r = xp_errorf(err, -ENOMEM, "quota: out of memory");
                if (*r >= 0 && l->version == 0 && install(l, pods, version) < 0)
                        *r = xp_errorf(err, -ENOMEM, "quota: out of memory");
                else if (*r >= 0 && l->version == version)
                        xp_debug("quota",
                                 "quota: the pods of %s listed at version %" PRIu64
                                 " (list %" PRIu64 "%s)",
                                 namespace,
                                 version,
                                 ++l->lists,
                                 unlocked ? "" : ", under the lock");
                json_decref(pods);
                if (*r < 0)
                        return NULL;
                if (!unlocked)
                        return l;
        }
        *r = xp_errorf(err, -EAGAIN, "quota: the pods of %s could not be listed", namespace);
        return NULL; /* not reached: the last try returns */
}

void registry_quota_ledger_forget(struct xp_registry *registry, const char *namespace)
{
        struct quota_ledger **at;

        if (atomic_load(&registry->n_ledgers) == 0)
                return;
        pthread_mutex_lock(&registry->quota_lock);
        for (at = &registry->ledgers; *at && strcmp((*at)->namespace, namespace) != 0;
             at = &(*at)->next)
                ;
        if (*at) {
                struct quota_ledger *l = *at;

                *at = l->next;
                ledger_free(l);
                atomic_fetch_sub(&registry->n_ledgers, 1);
        }
        pthread_mutex_unlock(&registry->quota_lock);
}

/* pod against one quota's total: 0, or -EDQUOT with Kubernetes' message. */
static int check_one(const json_t *stored,
                     const struct ledger_quota *q,
                     const struct xp_resource_list *requested,
                     struct xp_error *err)
{
        char *message = registry_quota_exceeded(xp_json_str_at(stored, "metadata.name", ""),
                                                xp_json_object_at(stored, "spec.hard"),
                                                requested,
                                                &q->used);
        int r = 0;

        if (message)
                r = xp_errorf(err, -EDQUOT, "%s", message);
        free(message);
        return r;
}

_Thread_local struct quota_charge *registry_quota_charge;

/* The create being checked admitted: pod charged now, until its write shows in the log. */
static int charge_pending(struct quota_ledger *l,
                          const json_t *pod,
                          struct quota_charge *c,
                          struct xp_error *err)
{
        const char *uid = xp_json_str_at(pod, "metadata.uid", "");
        json_t *copy;
        int r;

        if (!uid[0])
                return 0; /* not a create: every create has its uid by its check */
        copy = json_deep_copy(pod);
        r = copy ? 0 : -ENOMEM;

        if (r >= 0 && !c->uid) {
                c->uid = strdup(uid);
                c->namespace = strdup(l->namespace);
        }
        if (r >= 0 && (!c->uid || !c->namespace))
                r = -ENOMEM;
        if (r >= 0) /* a create checked twice is charged once */
                r = release_pending(l, uid);
        if (r >= 0)
                r = json_object_set(l->pending, uid, copy) < 0 ? -ENOMEM : charge_all(l, copy, 1);
        json_decref(copy);
        if (r < 0) {
                l->version = 0; /* the totals summed again from the store at the next check */
                return xp_errorf(err, r, "quota: charging pod %s", uid);
        }
        return 0;
}

void registry_quota_charge_settle(struct xp_registry *registry, struct quota_charge *c)
{
        struct quota_ledger *l;

        if (!c->uid)
                return;
        pthread_mutex_lock(&registry->quota_lock);
        for (l = registry->ledgers; l && strcmp(l->namespace, c->namespace) != 0; l = l->next)
                ;
        /* the write, when it landed and the log shows it, takes the charge over (apply());
         * else it is given back here and charged by the next check that reads the log */
        if (l) {
                (void)catch_up(registry->store, l, NULL);
                if (release_pending(l, c->uid) < 0)
                        l->version = 0; /* summed again from the store at the next check */
        }
        pthread_mutex_unlock(&registry->quota_lock);
        free(c->uid);
        free(c->namespace);
        *c = (struct quota_charge){0};
}

/* ledger_current() with its totals for quotas (the namespace's ResourceQuotas, in order). */
static struct quota_ledger *ledger_synced(struct xp_registry *registry,
                                          const char *namespace,
                                          const json_t *quotas,
                                          int *r,
                                          struct xp_error *err)
{
        struct quota_ledger *l = ledger_current(registry, namespace, r, err);

        if (l && sync_quotas(l, quotas) < 0) {
                l->version = 0; /* summed again from the store at the next check */
                *r = xp_errorf(err, -ENOMEM, "quota: out of memory");
                return NULL;
        }
        return l;
}

int xp_registry_quota_ledger_usage(struct xp_registry *registry,
                                   const char *namespace,
                                   const json_t *quotas,
                                   struct xp_resource_list *ret,
                                   struct xp_error *err)
{
        struct quota_ledger *l;
        int r = 0;

        pthread_mutex_lock(&registry->quota_lock);
        l = ledger_synced(registry, namespace, quotas, &r, err);
        for (size_t i = 0; l && r >= 0 && i < l->n_quotas; i++)
                r = xp_resource_list_add(&ret[i], &l->quotas[i].used, NULL);
        pthread_mutex_unlock(&registry->quota_lock);
        if (r < 0 && l)
                r = xp_errorf(err, r, "quota: out of memory");
        for (size_t i = 0; r < 0 && i < json_array_size(quotas); i++)
                xp_resource_list_done(&ret[i]);
        return r < 0 ? r : 0;
}

int registry_quota_ledger_check(struct xp_registry *registry,
                                const char *namespace,
                                const json_t *quotas,
                                const json_t *pod,
                                struct xp_error *err)
{
        struct xp_resource_list requested = {0};
        struct quota_ledger *l;
        int r = xp_registry_pod_usage(pod, &requested);

        pthread_mutex_lock(&registry->quota_lock);
        l = r >= 0 ? ledger_synced(registry, namespace, quotas, &r, err) : NULL;
        for (size_t i = 0; l && r >= 0 && i < l->n_quotas; i++) {
                const json_t *stored = json_array_get(quotas, i);

                if (xp_registry_quota_matches(stored, pod))
                        r = check_one(stored, &l->quotas[i], &requested, err);
        }
        if (r >= 0 && registry_quota_charge)
                r = charge_pending(l, pod, registry_quota_charge, err);
        pthread_mutex_unlock(&registry->quota_lock);
        xp_resource_list_done(&requested);
        return r < 0 ? r : 0;
}
