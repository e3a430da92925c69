/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watches: GET on a collection with ?watch=true streams {"type":..., "object":...} lines, one per
 * change, as the Kubernetes API does, until the client goes away, ?timeoutSeconds passes or the
 * server stops.
 *
 * The stream reads the store's event log (xp_store_events_scan) from a resourceVersion on:
 * ?resourceVersion=N resumes after N (410 Gone when the log no longer reaches back that far);
 * none, or 0, starts with the current state as ADDED events. Each connection has its own thread,
 * so the stream simply blocks in xp_store_waiter_wait() between writes of its kind (those of
 * other kinds do not wake it), waking every second to notice a stopping server and sending a
 * newline when idle for a while, so that a client that went away is noticed (the write fails)
 * and its thread ends.
 *
 * Selectors: an object that stops matching (a pod whose phase changed) is reported DELETED, one
 * that starts matching ADDED, as Kubernetes does; the watch remembers which objects match. A
 * watch that starts now knows that from the current state. One that resumes from version R
 * learns, the first time it sees an object, what the object was at R from the newest event at or
 * before R that the log still holds; an object last written before the log begins is taken as it
 * is now.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "watch_shared.h"
#include "xpool/macro.h"
#include "xpool/map.h"
#include "xpool/selector.h"
#include "xpool/strutil.h"
#include "xpool/table.h"
#include "xpool/timeutil.h"

#define WATCH_BATCH       256          /* events read from the store at a time */
#define WATCH_PUMP_MAX    (256 * 1024) /* bytes handed to the stream hub at a time */
#define WATCH_WAKE_MS     1000         /* longest block before checking for a stopping server */
#define WATCH_IDLE_MS     15000        /* idle time before a keep-alive newline */
#define WATCH_TIMEOUT_MAX (24 * 3600)
#define WATCH_BOOKMARK_MS                                                                          \
        60000 /* between bookmarks, as kube-apiserver's watch cache sends them                     \
               */
/*
 * With many waiting on the store (WATCH_GATHER_WATCHERS), a watcher under a stream of writes
 * reads the log at most every WATCH_GATHER_MS: the writes committed meanwhile go out together,
 * one wake-up, one read of the log and one send for all of them. Woken for every commit, 200
 * watchers of 1,000 creates/s cost a wake-up and a send each per commit (~35 us), more CPU than
 * the creates; gathered, each costs at most 1000 / WATCH_GATHER_MS a second. A write after a quiet
 * spell goes out at once; one in a stream waits up to this long. With few watchers (a small
 * cluster's agents) the wake-ups cost little and every commit goes out at once: a pod's bind
 * right after its create is not held back.
 */
#define WATCH_GATHER_MS       25
#define WATCH_GATHER_WATCHERS 32

/* A set of "namespace/name" keys, each its own value in the map (and freed with it). */
struct keyset {
        struct xp_map map;
};

static bool keyset_has(const struct keyset *set, const char *key)
{
        return xp_map_get(&set->map, key) != NULL;
}

static int keyset_add(struct keyset *set, const char *key)
{
        char *copy;
        int r;

        if (keyset_has(set, key))
                return 0;
        copy = strdup(key);
        if (!copy)
                return -ENOMEM;
        r = xp_map_put(&set->map, copy, copy);
        if (r < 0)
                free(copy);
        return r;
}

static void keyset_remove(struct keyset *set, const char *key)
{
        free(xp_map_del(&set->map, key));
}

static void keyset_done(struct keyset *set)
{
        for (size_t i = 0; i < set->map.cap; i++)
                free(set->map.values[i]);
        xp_map_done(&set->map);
}

struct watch {
        struct api *api;
        const struct xp_kind *kind;
        char *namespace; /* NULL for every namespace */
        struct xp_label_selector *labels;
        struct xp_field_selector *fields;
        bool filtered;
        struct keyset matching; /* objects reported as matching the selectors */
        uint64_t resumed_at;    /* the resourceVersion a resumed watch started after, else 0 */
        struct keyset settled;  /* objects whose membership at resumed_at is known */
        bool table;
        enum xp_table_include include;
        bool headers_sent;
        uint64_t since;
        int64_t deadline_ms; /* CLOCK_MONOTONIC; 0 when none */
        int64_t idle_since_ms;
        bool bookmarks;         /* ?allowWatchBookmarks */
        int64_t bookmark_at_ms; /* the next bookmark is due */
        bool ended;
        bool drained;    /* the last read reached the store's version: wait before reading again */
        int64_t sent_ms; /* CLOCK_MONOTONIC: when events last went out */
        struct xp_store_waiter *waiter; /* wakes for writes of its kind only; NULL: for any */
        char *buf;
        size_t len, off, cap;
        bool pumped;                /* the stream hub sends it: it may send shared batches */
        struct watch_batch *shared; /* sent in place of buf, up to shared_off */
        size_t shared_off;
};

static int buf_append(struct watch *w, const char *text, size_t n)
{
        if (w->len + n > w->cap) {
                size_t cap = w->cap ? w->cap : 8192;
                char *buf;

                while (cap < w->len + n)
                        cap *= 2;
                buf = realloc(w->buf, cap);
                if (!buf)
                        return -ENOMEM;
                w->buf = buf;
                w->cap = cap;
        }
        memcpy(w->buf + w->len, text, n);
        w->len += n;
        return 0;
}

/* Appends one event line; object is borrowed. */
static int emit(struct watch *w, const char *type, const json_t *object)
{
        json_t *event, *shown = NULL;
        char *text;
        int r;

        if (w->table && strcmp(type, "ERROR") != 0 && strcmp(type, "BOOKMARK") != 0) {
                json_t *items = json_pack("[O]", object);

                if (!items)
                        return -ENOMEM;
                r = xp_table_build(w->kind->kind, items, NULL, time(NULL), w->include, &shown);
                json_decref(items);
                if (r < 0)
                        return r;
                /* The columns travel once, with the first event, as Kubernetes sends them. */
                if (w->headers_sent)
                        json_object_set_new(shown, "columnDefinitions", json_array());
                w->headers_sent = true;
        } else {
                shown = json_incref((json_t *)object);
                /* a kind served in another version than stored: each object converted */
                if (w->kind->answer_as && strcmp(type, "ERROR") != 0 &&
                    strcmp(type, "BOOKMARK") != 0 && shown_as(w->kind, &shown) < 0) {
                        json_decref(shown);
                        return -ENOMEM;
                }
        }
        event = json_pack("{s:s, s:o}", "type", type, "object", shown);
        if (!event)
                return -ENOMEM;
        text = json_dumps(event, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(event);
        if (!text)
                return -ENOMEM;
        r = buf_append(w, text, strlen(text));
        if (r >= 0)
                r = buf_append(w, "\n", 1);
        free(text);
        return r;
}

/*
 * Appends one event line of an object the store handed over as text (unfiltered, not a Table):
 * its bytes as they are, without a parse and an encoding per watcher. Text that is not ASCII is
 * parsed and encoded as emit() does, so the stream stays escaped to ASCII.
 */
static int emit_text(struct watch *w, const char *type, const char *text, size_t len)
{
        char head[48];
        json_t *object;
        int n, r;

        if (!text_is_ascii(text, len) || w->kind->answer_as) {
                object = json_loadb(text, len, 0, NULL);
                if (!object)
                        return -ENOMEM;
                r = emit(w, type, object);
                json_decref(object);
                return r;
        }
        n = snprintf(head, sizeof head, "{\"type\":\"%s\",\"object\":", type);
        r = buf_append(w, head, (size_t)n);
        if (r >= 0)
                r = buf_append(w, text, len);
        if (r >= 0)
                r = buf_append(w, "}\n", 2);
        return r;
}

static void object_key(const json_t *object, char *buf, size_t size)
{
        const json_t *meta = json_object_get(object, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));

        snprintf(buf, size, "%s/%s", ns ? ns : "", name ? name : "");
}

/*
 * What an object was, for the selectors, at the version a resumed watch started after: its newest
 * event at or before then (a new object was nothing), else as the watch's start found it.
 */
static int
settle(struct watch *w, const char *key, enum xp_store_event_type type, const json_t *object)
{
        const json_t *meta = json_object_get(object, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        enum xp_store_event_type before_type;
        json_t *before = NULL;
        int r;

        r = keyset_add(&w->settled, key);
        if (r < 0)
                return r;
        if (!name)
                return 0;
        r = xp_store_event_before(w->api->store,
                                  w->kind->plural,
                                  ns ? ns : "",
                                  name,
                                  w->resumed_at,
                                  &before_type,
                                  &before,
                                  NULL);
        if (r < 0)
                return r == -ENOMEM ? r : 0; /* keep what the start found */
        if (r == 0 && type != XP_STORE_ADDED)
                return 0;
        if (r > 0 && before_type != XP_STORE_DELETED &&
            selectors_match(w->labels, w->fields, before))
                r = keyset_add(&w->matching, key);
        else {
                keyset_remove(&w->matching, key);
                r = 0;
        }
        json_decref(before);
        return r;
}

/* Appends the event's object under type: its text as the store kept it when there is one (and
 * the watch is no Table), else encoded. */
static int emit_stored(struct watch *w, const char *type, const struct xp_store_event *event)
{
        if (event->text && !w->table)
                return emit_text(w, type, event->text, event->text_len);
        return emit(w, type, event->object);
}

/* One change, translated through the selectors into what this watcher sees. */
static int emit_change(struct watch *w, const struct xp_store_event *event)
{
        enum xp_store_event_type type = event->type;
        const json_t *object = event->object;
        static const char *const names[] = {
            [XP_STORE_ADDED] = "ADDED",
            [XP_STORE_MODIFIED] = "MODIFIED",
            [XP_STORE_DELETED] = "DELETED",
        };
        char key[2 * XP_STORE_KEY_MAX + 2];
        bool match, known;

        if (!w->filtered)
                return emit_stored(w, names[type], event);
        object_key(object, key, sizeof key);
        if (w->resumed_at && !keyset_has(&w->settled, key)) {
                int r = settle(w, key, type, object);

                if (r < 0)
                        return r;
        }
        match = selectors_match(w->labels, w->fields, object);
        known = keyset_has(&w->matching, key);
        if (type == XP_STORE_DELETED) {
                if (!known && !match)
                        return 0;
                keyset_remove(&w->matching, key);
                return emit_stored(w, "DELETED", event);
        }
        if (match) {
                int r = keyset_add(&w->matching, key);

                if (r < 0)
                        return r;
                return emit_stored(w, known ? "MODIFIED" : "ADDED", event);
        }
        if (!known)
                return 0;
        keyset_remove(&w->matching, key);
        return emit_stored(w, "DELETED", event);
}

static int emit_expired(struct watch *w, const struct xp_error *err)
{
        struct reply status = {0};
        int r;

        r = reply_status(&status, 410, "Expired", NULL, NULL, "%s", xp_error_message(err));
        if (r < 0)
                return r;
        r = emit(w, "ERROR", status.body);
        json_decref(status.body);
        w->ended = true;
        return r;
}

/*
 * A BOOKMARK: the kind with nothing but the version the watch has read through, so that a client
 * resumes from there; the one that ends ?sendInitialEvents' initial state is marked so.
 */
static int emit_bookmark(struct watch *w, bool initial_end)
{
        char rv[24];
        json_t *object;
        int r;

        xp_registry_version_format(w->since, rv);
        object = json_pack("{s:s, s:s, s:{s:s}}",
                           "kind",
                           w->kind->kind,
                           "apiVersion",
                           w->kind->api_version,
                           "metadata",
                           "resourceVersion",
                           rv);
        if (object && initial_end &&
            json_object_set_new(json_object_get(object, "metadata"),
                                "annotations",
                                json_pack("{s:s}", "k8s.io/initial-events-end", "true")) < 0)
                json_decref(object), object = NULL;
        if (!object)
                return -ENOMEM;
        r = emit(w, "BOOKMARK", object);
        json_decref(object);
        w->bookmark_at_ms = xp_monotonic_ms() + WATCH_BOOKMARK_MS;
        return r;
}

/*
 * Whether the watch's lines are the log's text and nothing else, the same for every watch of its
 * kind and namespace (watch_shared.h): then it sends the batches another watch read. Only on the
 * stream hub, whose pump hands the batch over without a copy.
 */
static bool watch_shares(const struct watch *w)
{
        return w->pumped && w->api->watch_batches && !w->filtered && !w->table &&
               !w->kind->answer_as;
}

/* Reads what the log holds after w->since into the buffer, or takes another watch's batch. */
static int watch_fill(struct watch *w)
{
        static const char *const names[] = {
            [XP_STORE_ADDED] = "ADDED",
            [XP_STORE_MODIFIED] = "MODIFIED",
            [XP_STORE_DELETED] = "DELETED",
        };
        struct xp_store_event *events = NULL;
        struct xp_error err = {0};
        /* what passes unchanged to the client needs no parse: the store's text is the line */
        bool as_text = !w->filtered && !w->table;
        uint64_t through, since = w->since;
        size_t n, start_len = w->len;
        int r;

        if (as_text && watch_shares(w)) {
                w->shared = watch_batch_find(
                    w->api->watch_batches, w->kind->plural, w->namespace, w->since);
                if (w->shared) {
                        w->shared_off = 0;
                        w->since = w->shared->through;
                        w->drained = w->shared->drained;
                        return 0;
                }
        }
        r = (as_text ? xp_store_events_scan_text : xp_store_events_scan)(w->api->store,
                                                                         w->kind->plural,
                                                                         w->namespace,
                                                                         w->since,
                                                                         WATCH_BATCH,
                                                                         &events,
                                                                         &n,
                                                                         &through,
                                                                         &err);
        if (r == -XP_STORE_EXPIRED)
                return emit_expired(w, &err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = as_text
                        ? emit_text(w, names[events[i].type], events[i].text, events[i].text_len)
                        : emit_change(w, &events[i]);
        xp_store_events_free(events, n);
        if (r < 0)
                return r;
        w->since = through;
        w->drained = n < WATCH_BATCH;
        if (as_text && watch_shares(w) && start_len == 0)
                watch_batch_offer(w->api->watch_batches,
                                  &(struct watch_batch){.plural = w->kind->plural,
                                                        .namespace = w->namespace,
                                                        .since = since,
                                                        .through = through,
                                                        .drained = w->drained,
                                                        .len = w->len,
                                                        .data = w->buf});
        return 0;
}

/* Lets the writes of a stream gather (WATCH_GATHER_MS) when events went out a moment ago. */
static void gather(const struct watch *w)
{
        int64_t wait_ms = w->sent_ms + WATCH_GATHER_MS - xp_monotonic_ms();
        struct timespec ts = {.tv_nsec = wait_ms * 1000000L};

        if (wait_ms > 0 && wait_ms <= WATCH_GATHER_MS &&
            xp_store_waiters(w->api->store) >= WATCH_GATHER_WATCHERS)
                nanosleep(&ts, NULL);
}

static int64_t earliest(int64_t a, int64_t b)
{
        return b && b < a ? b : a;
}

/*
 * What falls due now, into the empty buffer: the log's news (when not drained), the end, a
 * bookmark, a keep-alive newline. 1 to go on, with *ret_due_ms when to look again without news
 * (now while the log has more); 0 at the end of the stream; -errno.
 */
static int watch_step(struct watch *w, int64_t now, int64_t *ret_due_ms)
{
        int r;

        *ret_due_ms = now;
        if (w->ended || atomic_load(&w->api->stopping))
                return 0;
        if (!w->drained) {
                r = watch_fill(w);
                if (r < 0 || w->len || w->shared || !w->drained)
                        return r < 0 ? r : 1;
        }
        if (w->deadline_ms && now >= w->deadline_ms)
                return 0;
        if (w->bookmarks && now >= w->bookmark_at_ms)
                return emit_bookmark(w, false) < 0 ? -ENOMEM : 1;
        if (now - w->idle_since_ms >= WATCH_IDLE_MS)
                return buf_append(w, "\n", 1) < 0 ? -ENOMEM : 1;
        *ret_due_ms = earliest(now + WATCH_WAKE_MS, w->idle_since_ms + WATCH_IDLE_MS);
        *ret_due_ms = earliest(*ret_due_ms, w->deadline_ms);
        if (w->bookmarks)
                *ret_due_ms = earliest(*ret_due_ms, w->bookmark_at_ms);
        return 1;
}

/* The stream on its connection's own thread (no stream hub): it blocks on the store. */
static ssize_t watch_read(void *state, char *buf, size_t max)
{
        struct watch *w = state;

        for (;;) {
                int64_t now, due_ms;
                int r;

                if (w->off < w->len) {
                        size_t n = w->len - w->off < max ? w->len - w->off : max;

                        memcpy(buf, w->buf + w->off, n);
                        w->off += n;
                        w->idle_since_ms = w->sent_ms = xp_monotonic_ms();
                        return (ssize_t)n;
                }
                w->off = w->len = 0;
                now = xp_monotonic_ms();
                r = watch_step(w, now, &due_ms);
                if (r <= 0)
                        return r;
                if (w->len || due_ms <= now)
                        continue;
                if (!w->waiter &&
                    xp_store_waiter_new(w->api->store, &w->kind->plural, 1, &w->waiter) < 0)
                        w->waiter = NULL; /* no memory for it: woken by every write */
                /* before the wait: a watcher in its gathering spell is not woken by commits */
                gather(w);
                if (w->waiter)
                        xp_store_waiter_wait(w->waiter, &w->since, (int)(due_ms - now));
                else
                        xp_store_wait(w->api->store, w->since, (int)(due_ms - now));
                w->drained = false; /* news, a stopping server or time: read the log again */
        }
}

/*
 * The stream as the stream hub asks for it (stream_hub.h): what the buffer holds (the initial
 * state, the first time), else what falls due, WATCH_PUMP_MAX bytes at a time.
 */
static int
watch_pump(void *state, int64_t now, const char **ret_data, size_t *ret_len, int64_t *ret_due_ms)
{
        struct watch *w = state;
        const char *data;
        size_t left;
        int r;

        *ret_due_ms = now;
        w->pumped = true;
        if (w->shared && w->shared_off == w->shared->len) {
                watch_batch_release(w->shared); /* the hub is done with it: it asked again */
                w->shared = NULL;
        }
        if (!w->shared && w->off == w->len) {
                w->off = w->len = 0;
                /* a write of its kind since the log was read (as the store's waiters judge) */
                if (xp_store_kind_generation(w->api->store, w->kind->plural) > w->since)
                        w->drained = false;
                r = watch_step(w, now, ret_due_ms);
                if (r <= 0)
                        return r;
        }
        if (w->shared) {
                data = w->shared->data + w->shared_off;
                left = w->shared->len - w->shared_off;
        } else {
                data = w->buf ? w->buf + w->off : ""; /* nothing was ever emitted: no buffer */
                left = w->len - w->off;
        }
        if (left)
                w->idle_since_ms = w->sent_ms = now;
        *ret_data = data;
        /* At most a block at a time, as the daemon pulled it: the hub copies what the socket did
         * not take, and a watch's initial state of every pod would be held twice. The rest is due
         * at once. */
        *ret_len = left < WATCH_PUMP_MAX ? left : WATCH_PUMP_MAX;
        if (w->shared)
                w->shared_off += *ret_len;
        else
                w->off += *ret_len;
        return 1;
}

static void watch_free(void *state)
{
        struct watch *w = state;

        if (!w)
                return;
        xp_store_waiter_free(w->waiter);
        watch_batch_release(w->shared);
        free(w->namespace);
        xp_label_selector_free(w->labels);
        xp_field_selector_free(w->fields);
        keyset_done(&w->matching);
        keyset_done(&w->settled);
        free(w->buf);
        free(w);
}

/* ?timeoutSeconds=N: 1 with the deadline, 0 with ret filled. */
static int watch_deadline(const struct request *req, int64_t *ret_deadline, struct reply *ret)
{
        const char *v = request_query(req, "timeoutSeconds");
        char *end;
        long n;

        *ret_deadline = 0;
        if (!v || !v[0])
                return 1;
        errno = 0;
        n = strtol(v, &end, 10);
        if (errno || *end || n < 0)
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    NULL,
                    NULL,
                    "timeoutSeconds: Invalid value: %s: expected a number of seconds",
                    xp_quote(v, (char[XP_QUOTE_MAX]){0}));
        if (n > WATCH_TIMEOUT_MAX)
                n = WATCH_TIMEOUT_MAX;
        if (n > 0)
                *ret_deadline = xp_monotonic_ms() + n * 1000;
        return 1;
}

struct seed {
        struct watch *w;
        bool send;
        int failed; /* the watch's own failure, not the store's */
};

/* One object of the current state: its key kept when the watch is filtered, its ADDED event
 * when sent. A server stopping ends the read at the next object: the read of 100,000 pods (or of
 * thousands, beside the controllers' first reads under a sanitizer) held the stop for seconds. */
static int seed_one(const char *ns, const char *name, const char *text, size_t len, void *userdata)
{
        struct seed *seed = userdata;
        struct watch *w = seed->w;
        char key[2 * XP_STORE_KEY_MAX + 2];
        json_t *item;
        int r = 0;

        (void)ns;
        (void)name;
        if (atomic_load(&w->api->stopping))
                return seed->failed = -ECANCELED;
        item = json_loadb(text, len, 0, NULL);
        if (!item)
                return seed->failed = -EBADMSG;
        if (w->filtered && !selectors_match(w->labels, w->fields, item)) {
                json_decref(item);
                return 0;
        }
        if (w->filtered) {
                object_key(item, key, sizeof key);
                r = keyset_add(&w->matching, key);
        }
        if (r >= 0 && seed->send)
                r = emit(w, "ADDED", item);
        json_decref(item);
        return r < 0 ? (seed->failed = r) : 0;
}

/* The current state: ADDED events (from ?resourceVersion unset or 0, or ?sendInitialEvents=true)
 * when send, and the matching keys. */
static int watch_seed(struct watch *w, bool send, struct reply *ret)
{
        struct xp_error err = {0};
        struct seed seed = {.w = w, .send = send};
        uint64_t version;
        int r;

        if (!w->filtered && !send) {
                /* from now, sending nothing (?sendInitialEvents=false): only where the store is */
                w->since = xp_store_version(w->api->store);
                return 1;
        }
        r = xp_store_list_text(
            w->api->store, w->kind->plural, w->namespace, seed_one, &seed, &version, &err);
        if (r < 0 && seed.failed < 0)
                return r;
        if (r < 0)
                return reply_store_error(ret, r, w->kind, NULL, &err);
        /* a watch from now goes on from the state it read, sent or not */
        if (send || !w->resumed_at)
                w->since = version;
        return 1;
}

int watch_start(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        const char *rv = request_query(req, "resourceVersion");
        struct list_options options;
        struct watch *w;
        bool from_now = !rv || !rv[0] || strcmp(rv, "0") == 0, send_initial;
        int r;

        r = list_options_parse(req, kind, true, &options, ret);
        if (r <= 0)
                return r;
        /* SetListOptionsDefaults (WatchList, on in Kubernetes 1.32): a watch from now sends the
         * initial state; ?sendInitialEvents=true sends it whatever the version (NotOlderThan) */
        send_initial = options.send_initial < 0 ? from_now : options.send_initial == 1;
        if (send_initial)
                from_now = true;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->api = req->api;
        w->kind = kind;
        w->idle_since_ms = xp_monotonic_ms();
        if (kind->namespaced && req->namespace) {
                w->namespace = strdup(req->namespace);
                if (!w->namespace) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        r = selectors_parse(req, kind, &w->labels, &w->fields, ret);
        if (r <= 0)
                goto fail;
        w->filtered =
            !xp_label_selector_is_empty(w->labels) || !xp_field_selector_is_empty(w->fields);
        w->table = request_wants_table(req);
        /* an includeObject a list refuses (400) is taken as the default here */
        if (!table_include_parse(request_query(req, "includeObject"), &w->include))
                w->include = XP_TABLE_INCLUDE_METADATA;
        r = watch_deadline(req, &w->deadline_ms, ret);
        if (r <= 0)
                goto fail;

        if (!from_now) {
                struct xp_store_event *events = NULL;
                struct xp_error err = {0};
                size_t n;

                w->since = options.version; /* list_options_parse() checked it */
                /* Too old is 410 Gone before the stream starts, so clients relist at once. */
                r = xp_store_events_since(
                    req->api->store, kind->plural, w->namespace, w->since, 1, &events, &n, &err);
                if (r < 0) {
                        r = reply_store_error(ret, r, kind, NULL, &err);
                        goto fail;
                }
                xp_store_events_free(events, n);
                w->resumed_at = w->since;
        }
        w->bookmarks = options.bookmarks;
        w->bookmark_at_ms = xp_monotonic_ms() + WATCH_BOOKMARK_MS;
        if (from_now || w->filtered) {
                r = watch_seed(w, send_initial, ret);
                if (r <= 0)
                        goto fail;
        }
        /* the initial state is complete: kube-apiserver says so with a marked bookmark */
        if (send_initial && w->bookmarks) {
                r = emit_bookmark(w, true);
                if (r < 0)
                        goto fail;
        }
        ret->code = 200;
        ret->stream =
            (struct stream){.read = watch_read, .pump = watch_pump, .free = watch_free, .state = w};
        ret->content_type = "application/json";
        return 0;
fail:
        watch_free(w);
        return r;
}
