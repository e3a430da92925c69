/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The newest writes in memory, for the readers of the event log: every watcher and every
 * controller's informer reads each write again, and through SQLite each of them would fetch the
 * row and parse its body for itself. The ring keeps the last RECENT_MAX writes as the text each
 * committed (with its resourceVersion) and the object: the writer's own when it gave it up
 * (xp_store_written.share), else parsed from the text by the first reader that wanted it. The
 * object is shared read-only by every reader after (jansson's reference counts are atomic). A scan
 * the ring reaches back to is answered from it under the store's lock; an older one reads SQLite as
 * before.
 *
 * Versions are consecutive (every applied write takes the next one), so version v sits at
 * slot v % cap. The leader adds a batch's writes under the lock in the same step that makes the
 * version visible (settle()), so a reader sees the ring and the counter agree. The ring holds no
 * more writes than the log keeps (cap <= event_history), so what it answers is never -EXPIRED.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

void store_recent_clear(struct recent *e)
{
        json_decref(e->blob);
        json_decref(e->object);
        *e = (struct recent){0};
}

/*
 * Freeing a tree that left the ring walks its ~250 blocks, made 1,024 writes ago and cold by
 * now: one cache miss after another, each waiting for the last (the next member's address is in
 * the one before). Walking several trees a step each in turn first lets their misses overlap;
 * the frees that follow find the blocks in the cache. Read-only: others may be reading the trees.
 */
#define WARM_TREES 16
#define WARM_DEPTH 16

struct warm_walk {
        json_t *container[WARM_DEPTH];
        void *iter[WARM_DEPTH]; /* an object's next member */
        size_t index[WARM_DEPTH];
        int depth;
};

static void warm_enter(struct warm_walk *w, json_t *v)
{
        w->container[w->depth] = v;
        w->iter[w->depth] = json_is_object(v) ? json_object_iter(v) : NULL;
        w->index[w->depth] = 0;
        w->depth++;
}

/* Touches the walk's next node: false when the tree is done. */
static bool warm_step(struct warm_walk *w, volatile unsigned char *sink)
{
        while (w->depth > 0) {
                int d = w->depth - 1;
                json_t *c = w->container[d], *v;

                if (json_is_object(c) && w->iter[d]) {
                        v = json_object_iter_value(w->iter[d]);
                        w->iter[d] = json_object_iter_next(c, w->iter[d]);
                } else if (json_is_array(c) && w->index[d] < json_array_size(c)) {
                        v = json_array_get(c, w->index[d]++);
                } else {
                        w->depth--;
                        continue;
                }
                if ((json_is_object(v) || json_is_array(v)) && w->depth < WARM_DEPTH)
                        warm_enter(w, v);
                else if (json_is_string(v))
                        *sink = *(const unsigned char *)json_string_value(v);
                return true;
        }
        return false;
}

/* Brings the trees (n <= WARM_TREES) into the cache, a node of each in turn. */
static void warm_trees(json_t **trees, size_t n)
{
        struct warm_walk walks[WARM_TREES];
        volatile unsigned char sink;
        bool any = true;

        for (size_t i = 0; i < n; i++) {
                walks[i].depth = 0;
                warm_enter(&walks[i], trees[i]);
        }
        while (any) {
                any = false;
                for (size_t i = 0; i < n; i++)
                        any |= warm_step(&walks[i], &sink);
        }
}

void store_recent_clear_all(struct recent *entries, size_t n)
{
        for (size_t i = 0; i < n; i += WARM_TREES) {
                size_t end = i + WARM_TREES < n ? i + WARM_TREES : n;
                json_t *trees[WARM_TREES];
                size_t k = 0;

                /* the trees the ring holds the last reference of: those are freed now (a guess
                 * read without order: the walk only reads, whoever holds the tree) */
                for (size_t j = i; j < end; j++)
                        if (entries[j].object &&
                            __atomic_load_n(&entries[j].object->refcount, __ATOMIC_RELAXED) == 1 &&
                            (json_is_object(entries[j].object) || json_is_array(entries[j].object)))
                                trees[k++] = entries[j].object;
                warm_trees(trees, k);
                for (size_t j = i; j < end; j++)
                        store_recent_clear(&entries[j]);
        }
}

/* Most writes' blocks fit: no allocation but the block's own (the leader builds them in turn). */
#define BLOB_STACK 4096

/* kind, namespace, name and text in one block: NULL when out of memory. */
static json_t *
blob_new(const char *kind, const char *ns, const char *name, const char *text, size_t n)
{
        size_t lk = strlen(kind) + 1, ln = strlen(ns) + 1, lm = strlen(name) + 1;
        size_t size = lk + ln + lm + n + 1;
        char stack[BLOB_STACK];
        char *buf = size <= sizeof(stack) ? stack : malloc(size);
        json_t *blob;

        if (!buf)
                return NULL;
        memcpy(buf, kind, lk);
        memcpy(buf + lk, ns, ln);
        memcpy(buf + lk + ln, name, lm);
        memcpy(buf + lk + ln + lm, text, n);
        buf[lk + ln + lm + n] = '\0';
        blob = json_stringn_nocheck(buf, lk + ln + lm + n);
        if (buf != stack)
                free(buf);
        return blob;
}

int store_recent_init(struct xp_store *store)
{
        store->recent_cap = store->event_history < RECENT_MAX ? store->event_history : RECENT_MAX;
        store->recent = calloc(store->recent_cap, sizeof(struct recent));
        return store->recent ? 0 : -ENOMEM;
}

void store_recent_free(struct xp_store *store)
{
        for (size_t i = 0; store->recent && i < store->recent_cap; i++)
                store_recent_clear(&store->recent[i]);
        free(store->recent);
        store->recent = NULL;
}

/*
 * Under lock, in version order: the write of version (its text copied). A write that
 * cannot be kept (out of memory) leaves a gap: readers go to SQLite until the ring fills again.
 */
void store_recent_add(struct xp_store *store,
                      uint64_t version,
                      int type,
                      const char *kind,
                      const char *namespace,
                      const char *name,
                      const char *text,
                      size_t text_len,
                      json_t *object,
                      struct recent *ret_old)
{
        json_t *blob = text ? blob_new(kind, namespace, name, text, text_len) : NULL;
        const char *b;
        struct recent *e;

        *ret_old = (struct recent){0};
        if (!store->recent || !blob) {
                json_decref(blob);
                json_decref(object);
                store->recent_lo = 0; /* a gap: readers go to SQLite until it fills again */
                return;
        }
        if (store->recent_lo == 0 || version != store->recent_hi + 1)
                store->recent_lo = version; /* the first, or after a gap: start over from here */
        store->recent_hi = version;
        if (version - store->recent_lo >= store->recent_cap)
                store->recent_lo = version - store->recent_cap + 1;
        e = &store->recent[version % store->recent_cap];
        *ret_old = *e;
        b = json_string_value(blob);
        *e = (struct recent){
            .version = version,
            .type = type,
            .blob = blob,
            .kind = b,
            .namespace = b + strlen(kind) + 1,
            .name = b + strlen(kind) + 1 + strlen(namespace) + 1,
            .text_len = text_len,
            .object = object,
        };
        e->text = e->name + strlen(name) + 1;
}

/* Under lock: whether the ring holds every write after since. */
static bool covers(const struct xp_store *store, uint64_t since)
{
        if (since >= store->version)
                return true; /* nothing after since yet */
        return store->recent_lo != 0 && store->recent_hi == store->version &&
               since + 1 >= store->recent_lo;
}

static void copy_event(const struct recent *e, bool text, struct xp_store_event *ret)
{
        /* pointers into the entry's block, which the event holds: nothing copied */
        *ret = (struct xp_store_event){
            .type = (enum xp_store_event_type)e->type,
            .resource_version = e->version,
            .kind = (char *)e->kind,
            .namespace = (char *)e->namespace,
            .name = (char *)e->name,
            .object = text ? NULL : json_incref(e->object),
            .text = (char *)e->text,
            .text_len = e->text_len,
            .hold = json_incref(e->blob),
        };
}

/* Under lock: the matching events after since into l; *ret_through as xp_store_events_scan(). */
static int scan_locked(struct xp_store *store,
                       const char *kind,
                       const char *namespace,
                       uint64_t since,
                       bool text,
                       struct store_event_list *l,
                       uint64_t *ret_through)
{
        uint64_t v;

        if (xp_store_kind_generation(store, kind) <= since) {
                /* nothing of kind was written after since (its mark is the version of its last
                 * write): an informer reads each of the kinds it follows on every wake-up, most of
                 * them with nothing new, and the walk compared every write to each */
                *ret_through = store->version > since ? store->version : since;
                return 0;
        }
        for (v = since + 1; v <= store->version && l->n < l->max; v++) {
                const struct recent *e = &store->recent[v % store->recent_cap];
                int r;

                if (strcmp(e->kind, kind) != 0 ||
                    (namespace && strcmp(e->namespace, namespace) != 0))
                        continue;
                r = store_event_list_grow(l);
                if (r < 0)
                        return r;
                copy_event(e, text, &l->events[l->n++]);
        }
        *ret_through = l->n == l->max ? l->events[l->n - 1].resource_version
                                      : (store->version > since ? store->version : since);
        return 0;
}

/* Outside the lock: parses the events that came as text, and offers the objects to the ring. */
static int parse_missing(struct xp_store *store, struct store_event_list *l)
{
        bool parsed = false;

        for (size_t i = 0; i < l->n; i++) {
                struct xp_store_event *e = &l->events[i];

                if (e->object)
                        continue;
                e->object = json_loadb(e->text, e->text_len, 0, NULL);
                if (!json_is_object(e->object))
                        return -EBADMSG;
                parsed = true;
        }
        if (!parsed)
                return 0;
        pthread_mutex_lock(&store->lock);
        for (size_t i = 0; i < l->n; i++) {
                struct xp_store_event *e = &l->events[i];
                struct recent *slot = &store->recent[e->resource_version % store->recent_cap];

                if (slot->version == e->resource_version && !slot->object)
                        slot->object = json_incref(e->object);
        }
        pthread_mutex_unlock(&store->lock);
        return 0;
}

json_t *store_recent_object(struct xp_store *store,
                            uint64_t version,
                            const char *kind,
                            const char *namespace,
                            const char *name)
{
        json_t *object = NULL;
        const struct recent *e;

        pthread_mutex_lock(&store->lock);
        e = store->recent ? &store->recent[version % store->recent_cap] : NULL;
        if (e && e->version == version && e->object && strcmp(e->kind, kind) == 0 &&
            strcmp(e->namespace, namespace) == 0 && strcmp(e->name, name) == 0)
                object = json_incref(e->object);
        pthread_mutex_unlock(&store->lock);
        return object;
}

int store_recent_scan(struct xp_store *store,
                      const char *kind,
                      const char *namespace,
                      uint64_t since,
                      bool text,
                      struct store_event_list *l,
                      uint64_t *ret_through)
{
        int r;

        pthread_mutex_lock(&store->lock);
        if (!store->recent || !covers(store, since)) {
                pthread_mutex_unlock(&store->lock);
                return 0;
        }
        r = scan_locked(store, kind, namespace, since, text, l, ret_through);
        pthread_mutex_unlock(&store->lock);
        if (r >= 0 && !text)
                r = parse_missing(store, l);
        return r < 0 ? r : 1;
}
