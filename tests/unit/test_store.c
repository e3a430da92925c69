/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/macro.h"
#include "xpool/store.h"

struct fixture {
        char dir[64];
        char path[128];
        struct xp_store *store;
};

static void remove_db(struct fixture *f)
{
        char p[160];

        unlink(f->path);
        snprintf(p, sizeof(p), "%s-wal", f->path);
        unlink(p);
        snprintf(p, sizeof(p), "%s-shm", f->path);
        unlink(p);
        snprintf(p, sizeof(p), "%s.seal", f->path);
        unlink(p);
}

static struct xp_store *open_store(const char *path, size_t history)
{
        struct xp_store_options options = {.path = path, .event_history = history};
        struct xp_error err = {0};
        struct xp_store *store = NULL;

        if (xp_store_open(&options, &store, &err) < 0)
                fail_msg("open %s: %s", path, err.msg);
        return store;
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/xpool-store-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/state.db", f->dir);
        f->store = open_store(f->path, 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        xp_store_close(f->store);
        remove_db(f);
        rmdir(f->dir);
        free(f);
        return 0;
}

static json_t *pod(const char *name, const char *phase)
{
        json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}",
                              "apiVersion",
                              "v1",
                              "kind",
                              "Pod",
                              "metadata",
                              "name",
                              name,
                              "namespace",
                              "default",
                              "status",
                              "phase",
                              phase);

        assert_non_null(o);
        return o;
}

static const char *rv_of(json_t *o)
{
        return json_string_value(
            json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
}

static uint64_t create(struct xp_store *s, const char *kind, const char *ns, const char *name)
{
        struct xp_error err = {0};
        json_t *o = pod(name, "Pending");
        uint64_t v = 0;

        if (xp_store_create(s, kind, ns, name, o, &v, &err) < 0)
                fail_msg("create %s %s/%s: %s", kind, ns, name, err.msg);
        json_decref(o);
        return v;
}

static void crud(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *o = pod("a", "Pending"), *got = NULL, *last = NULL;
        uint64_t v1 = 0, v2 = 0, v3 = 0, gv = 0;
        char buf[32];

        assert_int_equal(xp_store_version(f->store), 0);
        assert_int_equal(xp_store_create(f->store, "Pod", "default", "a", o, &v1, &err), 0);
        assert_true(v1 > 0);
        snprintf(buf, sizeof(buf), "%" PRIu64, v1);
        assert_string_equal(rv_of(o), buf);
        assert_int_equal(xp_store_version(f->store), v1);

        assert_int_equal(xp_store_get(f->store, "Pod", "default", "a", &got, &gv, &err), 0);
        assert_int_equal(gv, v1);
        assert_true(json_equal(got, o));
        json_decref(got);

        /* -EEXIST changes nothing, not even the caller's object */
        json_object_set_new(json_object_get(o, "status"), "phase", json_string("Running"));
        json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string("77"));
        assert_int_equal(xp_store_create(f->store, "Pod", "default", "a", o, &v2, &err), -EEXIST);
        assert_non_null(strstr(err.msg, "Pod default/a already exists"));
        assert_string_equal(rv_of(o), "77");
        assert_int_equal(xp_store_version(f->store), v1);

        /* update, with and without an expected version */
        assert_int_equal(xp_store_update(f->store, "Pod", "default", "a", v1, o, &v2, &err), 0);
        assert_true(v2 > v1);
        assert_int_equal(xp_store_get(f->store, "Pod", "default", "a", &got, &gv, &err), 0);
        assert_int_equal(gv, v2);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(got, "status"), "phase")), "Running");
        json_decref(got);
        assert_int_equal(xp_store_update(f->store, "Pod", "default", "a", v1, o, &v3, &err),
                         -ESTALE);
        assert_non_null(strstr(err.msg, "expected"));
        assert_int_equal(xp_store_update(f->store, "Pod", "default", "a", 0, o, &v3, &err), 0);
        assert_true(v3 > v2);
        assert_int_equal(xp_store_update(f->store, "Pod", "default", "zz", 0, o, &v3, &err),
                         -ENOENT);

        /* the same name in another namespace or kind is another object */
        create(f->store, "Pod", "other", "a");
        create(f->store, "Node", "", "a");

        /* delete: stale, then right; the last state carries the deletion's version */
        assert_int_equal(xp_store_delete(f->store, "Pod", "default", "a", v1, &last, NULL, &err),
                         -ESTALE);
        assert_int_equal(xp_store_delete(f->store, "Pod", "default", "a", v3, &last, &v2, &err), 0);
        assert_non_null(last);
        snprintf(buf, sizeof(buf), "%" PRIu64, v2);
        assert_string_equal(rv_of(last), buf);
        json_decref(last);
        assert_int_equal(xp_store_get(f->store, "Pod", "default", "a", &got, NULL, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "Pod default/a not found"));
        assert_int_equal(xp_store_delete(f->store, "Pod", "default", "a", 0, NULL, NULL, &err),
                         -ENOENT);
        assert_int_equal(xp_store_get(f->store, "Pod", "other", "a", NULL, NULL, &err), 0);
        assert_int_equal(xp_store_get(f->store, "Node", "", "a", NULL, NULL, &err), 0);

        /* bad input */
        assert_int_equal(xp_store_create(f->store, "Pod", "default", "", o, NULL, &err), -EINVAL);
        json_t *arr = json_array();
        assert_int_equal(xp_store_create(f->store, "Pod", "default", "x", arr, NULL, &err),
                         -EINVAL);
        json_decref(arr);
        json_decref(o);
}

static void versions_persist(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        struct xp_store_event *ev = NULL;
        uint64_t v1, v2, v3, v4;
        size_t n = 0;

        v1 = create(f->store, "Pod", "default", "a");
        v2 = create(f->store, "Pod", "default", "b");
        assert_true(v2 > v1);
        /* delete the newest object, then restart: the counter must not go back */
        assert_int_equal(xp_store_delete(f->store, "Pod", "default", "b", 0, NULL, &v3, &err), 0);
        assert_true(v3 > v2);
        xp_store_close(f->store);
        f->store = open_store(f->path, 0);
        assert_int_equal(xp_store_version(f->store), v3);
        v4 = create(f->store, "Pod", "default", "b");
        assert_true(v4 > v3);
        assert_int_equal(xp_store_get(f->store, "Pod", "default", "a", NULL, &v2, &err), 0);
        assert_int_equal(v2, v1);

        /* the history survived too */
        assert_int_equal(xp_store_events_since(f->store, "Pod", NULL, 0, 100, &ev, &n, &err), 0);
        assert_int_equal(n, 4);
        assert_int_equal(ev[0].type, XP_STORE_ADDED);
        assert_int_equal(ev[2].type, XP_STORE_DELETED);
        assert_string_equal(ev[2].name, "b");
        assert_int_equal(ev[3].resource_version, v4);
        xp_store_events_free(ev, n);
}

static void list_snapshot(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *items = NULL;
        uint64_t v = 0, last;

        create(f->store, "Pod", "b-ns", "z");
        create(f->store, "Pod", "a-ns", "y");
        create(f->store, "Pod", "b-ns", "a");
        create(f->store, "Node", "", "n1");
        last = create(f->store, "Pod", "a-ns", "x");

        assert_int_equal(xp_store_list(f->store, "Pod", NULL, &items, &v, &err), 0);
        assert_int_equal(v, last);
        assert_int_equal(json_array_size(items), 4);
        const char *want[][2] = {{"a-ns", "x"}, {"a-ns", "y"}, {"b-ns", "a"}, {"b-ns", "z"}};
        for (size_t i = 0; i < 4; i++) {
                json_t *it = json_array_get(items, i);
                assert_string_equal(
                    json_string_value(json_object_get(json_object_get(it, "metadata"), "name")),
                    want[i][1]);
                assert_non_null(rv_of(it));
        }
        json_decref(items);

        assert_int_equal(xp_store_list(f->store, "Pod", "b-ns", &items, &v, &err), 0);
        assert_int_equal(json_array_size(items), 2);
        json_decref(items);
        assert_int_equal(xp_store_list(f->store, "Pod", "none", &items, &v, &err), 0);
        assert_int_equal(json_array_size(items), 0);
        json_decref(items);
        assert_int_equal(xp_store_list(f->store, "Node", NULL, &items, &v, &err), 0);
        assert_int_equal(json_array_size(items), 1);
        json_decref(items);
}

static void events_filters(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        struct xp_store_event *ev = NULL;
        uint64_t v0, through = 0;
        size_t n = 0;

        v0 = create(f->store, "Pod", "a", "p1");
        create(f->store, "Node", "", "n1");
        create(f->store, "Pod", "b", "p2");
        create(f->store, "Pod", "a", "p3");

        assert_int_equal(xp_store_events_since(f->store, "Pod", NULL, 0, 100, &ev, &n, &err), 0);
        assert_int_equal(n, 3);
        for (size_t i = 1; i < n; i++)
                assert_true(ev[i].resource_version > ev[i - 1].resource_version);
        assert_string_equal(ev[0].kind, "Pod");
        assert_string_equal(ev[1].namespace, "b");
        assert_string_equal(rv_of(ev[1].object), "3");
        xp_store_events_free(ev, n);

        assert_int_equal(xp_store_events_since(f->store, "Pod", "a", 0, 100, &ev, &n, &err), 0);
        assert_int_equal(n, 2);
        assert_string_equal(ev[1].name, "p3");
        xp_store_events_free(ev, n);

        assert_int_equal(xp_store_events_since(f->store, "Pod", NULL, v0, 100, &ev, &n, &err), 0);
        assert_int_equal(n, 2);
        xp_store_events_free(ev, n);

        assert_int_equal(xp_store_events_since(f->store, "Node", "", 0, 100, &ev, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(ev[0].namespace, "");
        xp_store_events_free(ev, n);

        /* max bounds the answer; through says where to go on from */
        assert_int_equal(xp_store_events_scan(f->store, "Pod", NULL, 0, 2, &ev, &n, &through, &err),
                         0);
        assert_int_equal(n, 2);
        assert_int_equal(through, ev[1].resource_version);
        xp_store_events_free(ev, n);
        assert_int_equal(
            xp_store_events_scan(f->store, "Pod", NULL, through, 2, &ev, &n, &through, &err), 0);
        assert_int_equal(n, 1);
        assert_int_equal(through, xp_store_version(f->store));
        xp_store_events_free(ev, n);

        /* at or past the newest: nothing */
        assert_int_equal(xp_store_events_since(
                             f->store, "Pod", NULL, xp_store_version(f->store), 10, &ev, &n, &err),
                         0);
        assert_int_equal(n, 0);
        xp_store_events_free(ev, n);
        assert_int_equal(xp_store_events_since(f->store, "Pod", NULL, 0, 0, &ev, &n, &err),
                         -EINVAL);

        /* a kind not written after since answers nothing, through the newest write of any kind
         * (the ring is not walked); from before its write, the write */
        assert_int_equal(
            xp_store_events_scan(f->store, "Node", NULL, v0 + 1, 10, &ev, &n, &through, &err), 0);
        assert_int_equal(n, 0);
        assert_int_equal(through, xp_store_version(f->store));
        xp_store_events_free(ev, n);
        assert_int_equal(
            xp_store_events_scan(f->store, "Node", NULL, v0, 10, &ev, &n, &through, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(ev[0].name, "n1");
        assert_int_equal(through, xp_store_version(f->store));
        xp_store_events_free(ev, n);
}

/* A reader's buffer: the same events as a scan of its own, one array kept across scans. */
static void events_scan_into_reuses(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        struct xp_store_event_buffer buf = {0};
        struct xp_store_event *kept;
        uint64_t through = 0;

        create(f->store, "Pod", "a", "p1");
        create(f->store, "Node", "", "n1");
        create(f->store, "Pod", "b", "p2");
        create(f->store, "Pod", "a", "p3");

        assert_int_equal(
            xp_store_events_scan_into(f->store, "Pod", NULL, 0, 2, &buf, &through, &err), 0);
        assert_int_equal(buf.n, 2);
        assert_int_equal(buf.cap, 2);
        assert_string_equal(buf.events[0].name, "p1");
        assert_string_equal(buf.events[1].namespace, "b");
        assert_string_equal(rv_of(buf.events[1].object), "3");
        assert_int_equal(through, buf.events[1].resource_version);
        kept = buf.events;

        /* the next scan releases the last one's events and fills the same array */
        assert_int_equal(
            xp_store_events_scan_into(f->store, "Pod", NULL, through, 2, &buf, &through, &err), 0);
        assert_ptr_equal(buf.events, kept);
        assert_int_equal(buf.n, 1);
        assert_string_equal(buf.events[0].name, "p3");
        assert_int_equal(through, xp_store_version(f->store));

        /* nothing new; a bad max fails and leaves no event */
        assert_int_equal(
            xp_store_events_scan_into(f->store, "Pod", NULL, through, 2, &buf, &through, &err), 0);
        assert_int_equal(buf.n, 0);
        assert_int_equal(
            xp_store_events_scan_into(f->store, "Pod", NULL, 0, 0, &buf, &through, &err), -EINVAL);
        assert_int_equal(buf.n, 0);

        /* a larger max grows the array once */
        assert_int_equal(
            xp_store_events_scan_into(f->store, "Pod", "a", 0, 8, &buf, &through, &err), 0);
        assert_int_equal(buf.cap, 8);
        assert_int_equal(buf.n, 2);
        assert_string_equal(buf.events[1].name, "p3");
        xp_store_event_buffer_free(&buf);
        assert_null(buf.events);
        assert_int_equal(buf.n, 0);
}

static void events_expire(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        struct xp_store_event *ev = NULL;
        struct xp_store_stats stats;
        uint64_t oldest = 0, last = 0, through = 0;
        size_t n = 0;
        char name[32];

        /* a fresh store expires nothing */
        xp_store_close(f->store);
        remove_db(f);
        f->store = open_store(f->path, 10);
        assert_int_equal(xp_store_events_since(f->store, "Pod", NULL, 0, 10, &ev, &n, &err), 0);
        assert_int_equal(n, 0);
        xp_store_events_free(ev, n);

        for (int i = 0; i < 100; i++) {
                snprintf(name, sizeof(name), "p%d", i);
                last = create(f->store, "Pod", "default", name);
        }
        xp_store_stats(f->store, &stats);
        assert_true(stats.trims >= 1);
        assert_true(stats.trims < 100); /* in batches, not on every write */

        /* find the oldest kept version: the history holds at least 10 */
        assert_int_equal(
            xp_store_events_since(f->store, "Pod", NULL, last - 10, 100, &ev, &n, &err), 0);
        assert_int_equal(n, 10);
        xp_store_events_free(ev, n);
        assert_int_equal(xp_store_events_since(f->store, "Pod", NULL, 0, 100, &ev, &n, &err),
                         -XP_STORE_EXPIRED);
        assert_non_null(strstr(err.msg, "no longer kept"));
        assert_non_null(strstr(err.msg, f->path));
        /* the boundary: oldest - 1 is fine, oldest - 2 is expired */
        assert_int_equal(sscanf(strstr(err.msg, "oldest kept is ") + strlen("oldest kept is "),
                                "%" SCNu64,
                                &oldest),
                         1);
        assert_true(oldest > 1 && oldest <= last - 9);
        assert_int_equal(
            xp_store_events_since(f->store, "Pod", NULL, oldest - 1, 200, &ev, &n, &err), 0);
        assert_int_equal(n, last - oldest + 1);
        assert_int_equal(ev[0].resource_version, oldest);
        xp_store_events_free(ev, n);
        assert_int_equal(
            xp_store_events_since(f->store, "Pod", NULL, oldest - 2, 200, &ev, &n, &err),
            -XP_STORE_EXPIRED);

        /* a watcher of another kind that follows `through` is not aged out by Pod writes */
        assert_int_equal(
            xp_store_events_scan(f->store, "Node", NULL, last, 10, &ev, &n, &through, &err), 0);
        assert_int_equal(n, 0);
        for (int i = 0; i < 50; i++) {
                snprintf(name, sizeof(name), "q%d", i);
                create(f->store, "Pod", "default", name);
                assert_int_equal(xp_store_events_scan(
                                     f->store, "Node", NULL, through, 10, &ev, &n, &through, &err),
                                 0);
                assert_int_equal(n, 0);
                assert_int_equal(through, xp_store_version(f->store));
        }
        /* one that did not follow it is */
        assert_int_equal(
            xp_store_events_scan(f->store, "Node", NULL, last, 10, &ev, &n, &through, &err),
            -XP_STORE_EXPIRED);

        /* the trimmed log survives a restart with the counter */
        xp_store_close(f->store);
        f->store = open_store(f->path, 10);
        assert_int_equal(xp_store_events_since(f->store, "Pod", NULL, 0, 100, &ev, &n, &err),
                         -XP_STORE_EXPIRED);
        assert_true(create(f->store, "Pod", "default", "after") == last + 51);
}

struct waiter {
        struct xp_store *store;
        uint64_t version;
        int result;
};

static void *wait_thread(void *arg)
{
        struct waiter *w = arg;

        w->result = xp_store_wait(w->store, w->version, 5000);
        return NULL;
}

static void wait_wakes(void **state)
{
        struct fixture *f = *state;
        struct waiter w = {.store = f->store};
        struct timespec t0, t1;
        pthread_t th;
        uint64_t v;

        v = create(f->store, "Pod", "default", "a");
        /* already newer: at once */
        assert_int_equal(xp_store_wait(f->store, v - 1, 0), 1);
        /* nothing newer: times out after about the time asked */
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(xp_store_wait(f->store, v, 100), 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 90);

        w.version = v;
        assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
        usleep(50 * 1000);
        create(f->store, "Pod", "default", "b");
        pthread_join(th, NULL);
        assert_int_equal(w.result, 1);
}

struct kind_waiter {
        struct xp_store_waiter *waiter;
        uint64_t since[2];
        int result;
};

static void *kind_wait_thread(void *arg)
{
        struct kind_waiter *k = arg;

        k->result = xp_store_waiter_wait(k->waiter, k->since, 5000);
        return NULL;
}

/* A waiter on some kinds: news of those (against what its reader saw of each), or a wake. */
static void kind_waiter_sees_its_kinds(void **state)
{
        static const char *const kinds[] = {"Pod", "Node"};
        struct fixture *f = *state;
        struct kind_waiter k = {0};
        pthread_t th;
        uint64_t v;

        v = create(f->store, "Pod", "default", "a");
        assert_int_equal(xp_store_waiters(f->store), 0);
        assert_int_equal(xp_store_waiter_new(f->store, kinds, 2, &k.waiter), 0);
        assert_int_equal(xp_store_waiters(f->store), 1);
        /* nothing read yet: the pod is news */
        assert_int_equal(xp_store_waiter_wait(k.waiter, k.since, 0), 1);
        k.since[0] = k.since[1] = v;
        assert_int_equal(xp_store_waiter_wait(k.waiter, k.since, 0), 0);
        /* another kind's write is none */
        v = create(f->store, "Event", "default", "e");
        assert_int_equal(xp_store_waiter_wait(k.waiter, k.since, 0), 0);
        /* a Node is, until its reader has read that far in Nodes (the Pods' position lags) */
        v = create(f->store, "Node", "", "n");
        assert_int_equal(xp_store_waiter_wait(k.waiter, k.since, 0), 1);
        k.since[1] = v;
        assert_int_equal(xp_store_waiter_wait(k.waiter, k.since, 0), 0);
        /* a wake comes once, even before the wait */
        xp_store_waiter_wake(k.waiter);
        assert_int_equal(xp_store_waiter_wait(k.waiter, k.since, 0), 1);
        assert_int_equal(xp_store_waiter_wait(k.waiter, k.since, 0), 0);
        /* a waiting thread: ended by a write of its kind */
        k.since[0] = k.since[1] = xp_store_version(f->store);
        assert_int_equal(pthread_create(&th, NULL, kind_wait_thread, &k), 0);
        create(f->store, "Pod", "default", "b");
        pthread_join(th, NULL);
        assert_int_equal(k.result, 1);
        /* and by a wake from another thread */
        k.since[0] = k.since[1] = xp_store_version(f->store);
        k.result = -1;
        assert_int_equal(pthread_create(&th, NULL, kind_wait_thread, &k), 0);
        xp_store_waiter_wake(k.waiter);
        pthread_join(th, NULL);
        assert_int_equal(k.result, 1);
        xp_store_waiter_free(k.waiter);
        assert_int_equal(xp_store_waiters(f->store), 0);
}

#define N_THREADS 8
#define N_CREATES 500

struct writer {
        struct xp_store *store;
        int id;
        uint64_t versions[N_CREATES];
        int failures;
};

static void *writer_thread(void *arg)
{
        struct writer *w = arg;
        char name[32];

        for (int i = 0; i < N_CREATES; i++) {
                struct xp_error err = {0};
                json_t *o;

                snprintf(name, sizeof(name), "w%d-%d", w->id, i);
                o = pod(name, "Pending");
                if (xp_store_create(w->store, "Pod", "default", name, o, &w->versions[i], &err) < 0)
                        w->failures++;
                json_decref(o);
        }
        return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* A writer of groups: a pod, its Event after it, another pod; every group written whole. */
#define N_GROUPS 150

static void *group_thread(void *arg)
{
        struct writer *w = arg;
        char pod_a[32], event[40], pod_b[32];

        for (int i = 0; i < N_GROUPS; i++) {
                json_t *a, *e, *b;

                snprintf(pod_a, sizeof(pod_a), "g%d-%d", w->id, i);
                snprintf(event, sizeof(event), "g%d-%d.event", w->id, i);
                snprintf(pod_b, sizeof(pod_b), "h%d-%d", w->id, i);
                a = pod(pod_a, "Pending");
                e = json_pack("{s:s, s:{s:s}}", "kind", "Event", "metadata", "name", event);
                b = pod(pod_b, "Pending");
                struct xp_store_group_write g[] = {
                    {.kind = "Pod", .namespace = "default", .name = pod_a, .object = a},
                    {.kind = "Event",
                     .namespace = "default",
                     .name = event,
                     .object = e,
                     .after_previous = true},
                    {.kind = "Pod", .namespace = "default", .name = pod_b, .object = b},
                };
                /* queued one after another: consecutive versions, whatever batches they land in */
                if (xp_store_write_group(w->store, g, 3) != 3 || g[1].version != g[0].version + 1 ||
                    g[2].version != g[1].version + 1)
                        w->failures++;
                json_decref(a);
                json_decref(e);
                json_decref(b);
        }
        return NULL;
}

/* Groups beside single writes: batches settle a group's writes apart and wake them in any order. */
static void concurrent_groups(void **state)
{
        struct fixture *f = *state;
        struct writer *w = calloc(N_THREADS, sizeof(*w));
        pthread_t th[N_THREADS];
        struct xp_error err = {0};
        json_t *items = NULL;
        uint64_t v;

        assert_non_null(w);
        for (int i = 0; i < N_THREADS; i++) {
                w[i].store = f->store;
                w[i].id = i;
                assert_int_equal(
                    pthread_create(&th[i], NULL, i % 2 ? group_thread : writer_thread, &w[i]), 0);
        }
        for (int i = 0; i < N_THREADS; i++) {
                pthread_join(th[i], NULL);
                assert_int_equal(w[i].failures, 0);
        }
        assert_int_equal(xp_store_list(f->store, "Pod", "default", &items, &v, &err), 0);
        assert_int_equal(json_array_size(items), N_THREADS / 2 * (N_CREATES + 2 * N_GROUPS));
        assert_int_equal(v, N_THREADS / 2 * (N_CREATES + 3 * N_GROUPS));
        json_decref(items);
        free(w);
}

static void concurrent_creates(void **state)
{
        struct fixture *f = *state;
        struct writer *w = calloc(N_THREADS, sizeof(*w));
        uint64_t *all = calloc(N_THREADS * N_CREATES, sizeof(*all));
        pthread_t th[N_THREADS];
        struct xp_store_stats stats;
        struct xp_error err = {0};
        json_t *items = NULL;
        uint64_t v;

        assert_non_null(w);
        assert_non_null(all);
        for (int i = 0; i < N_THREADS; i++) {
                w[i].store = f->store;
                w[i].id = i;
                assert_int_equal(pthread_create(&th[i], NULL, writer_thread, &w[i]), 0);
        }
        for (int i = 0; i < N_THREADS; i++) {
                pthread_join(th[i], NULL);
                assert_int_equal(w[i].failures, 0);
                /* each thread sees its own writes in order */
                for (int j = 1; j < N_CREATES; j++)
                        assert_true(w[i].versions[j] > w[i].versions[j - 1]);
                memcpy(all + i * N_CREATES, w[i].versions, sizeof(w[i].versions));
        }
        qsort(all, N_THREADS * N_CREATES, sizeof(*all), cmp_u64);
        for (int i = 1; i < N_THREADS * N_CREATES; i++)
                assert_true(all[i] > all[i - 1]);
        assert_int_equal(all[N_THREADS * N_CREATES - 1], N_THREADS * N_CREATES);

        assert_int_equal(xp_store_list(f->store, "Pod", "default", &items, &v, &err), 0);
        assert_int_equal(json_array_size(items), N_THREADS * N_CREATES);
        assert_int_equal(v, N_THREADS * N_CREATES);
        json_decref(items);

        /* group commit: fewer commits (fsyncs) than writes */
        xp_store_stats(f->store, &stats);
        assert_int_equal(stats.writes, N_THREADS * N_CREATES);
        assert_int_equal(stats.rejected, 0);
        assert_true(stats.commits < stats.writes);
        assert_true(stats.max_batch > 1);
        /* a batch's writers (and the next leader) woken with one system call, not one each */
        assert_true(stats.writer_wakeups <= stats.commits + stats.checkpoints);
        print_message("group commit: %" PRIu64 " writes in %" PRIu64 " commits, at most %" PRIu64
                      " in one\n",
                      stats.writes,
                      stats.commits,
                      stats.max_batch);
        free(all);
        free(w);
}

/* Creates of one name from many threads: exactly one wins, the rest get -EEXIST. */
struct racer {
        struct xp_store *store;
        int result;
};

static void *racer_thread(void *arg)
{
        struct racer *r = arg;
        json_t *o = pod("same", "Pending");

        r->result = xp_store_create(r->store, "Pod", "default", "same", o, NULL, NULL);
        json_decref(o);
        return NULL;
}

static void racing_creates(void **state)
{
        struct fixture *f = *state;
        struct racer r[N_THREADS];
        pthread_t th[N_THREADS];
        int ok = 0, exists = 0;

        for (int i = 0; i < N_THREADS; i++) {
                r[i].store = f->store;
                assert_int_equal(pthread_create(&th[i], NULL, racer_thread, &r[i]), 0);
        }
        for (int i = 0; i < N_THREADS; i++) {
                pthread_join(th[i], NULL);
                ok += r[i].result == 0;
                exists += r[i].result == -EEXIST;
        }
        assert_int_equal(ok, 1);
        assert_int_equal(exists, N_THREADS - 1);
        assert_int_equal(xp_store_version(f->store), 1);
}

static void open_errors(void **state)
{
        struct fixture *f = *state;
        struct xp_store_options options = {0};
        struct xp_error err = {0};
        struct xp_store *s = NULL;
        char path[160];
        FILE *fp;

        /* a directory that does not exist */
        snprintf(path, sizeof(path), "%s/missing/state.db", f->dir);
        options.path = path;
        assert_int_equal(xp_store_open(&options, &s, &err), -ENOENT);
        assert_null(s);
        assert_non_null(strstr(err.msg, path));

        /* a file that is not a database */
        snprintf(path, sizeof(path), "%s/garbage.db", f->dir);
        fp = fopen(path, "w");
        assert_non_null(fp);
        for (int i = 0; i < 512; i++)
                fputs("this is not an SQLite database\n", fp);
        fclose(fp);
        assert_int_equal(xp_store_open(&options, &s, &err), -EBADMSG);
        assert_null(s);
        assert_non_null(strstr(err.msg, path));
        assert_non_null(strstr(err.msg, "not a database"));
        unlink(path);

        /* no path */
        options.path = NULL;
        assert_int_equal(xp_store_open(&options, &s, &err), -EINVAL);
}

/* ---- the store's text: what it hands out equals the object a read gives, encoded ------------ */

/* The object as a read gives it (parsed, resourceVersion filled in), encoded as the store does. */
static char *encoded(json_t *o)
{
        char *text = json_dumps(o, JSON_COMPACT);

        assert_non_null(text);
        return text;
}

/* An object whose stored text is len bytes: metadata and a "pad" string filling the rest. */
static json_t *object_of_size(size_t len)
{
        json_t *o = json_pack("{s:{s:s}, s:s}", "metadata", "name", "big", "pad", "");
        char *text = encoded(o), *pad;
        size_t base = strlen(text);

        free(text);
        assert_true(len >= base);
        pad = malloc(len - base + 1);
        assert_non_null(pad);
        memset(pad, 'a', len - base);
        pad[len - base] = '\0';
        assert_int_equal(json_object_set_new(o, "pad", json_string(pad)), 0);
        free(pad);
        return o;
}

/* Bodies on either side of the serialiser's first buffer are written whole; one past
 * XP_STORE_BODY_MAX is refused with its size and leaves nothing behind. */
static void bodies_of_every_size(void **state)
{
        static const size_t sizes[] = {8191, 8192, 8193, 100000, XP_STORE_BODY_MAX};
        struct fixture *f = *state;
        struct xp_error err = {0};
        char name[16], message[128];
        json_t *o;

        for (size_t i = 0; i < XP_ELEMENTSOF(sizes); i++) {
                struct xp_store_written w = {.want_text = true};
                json_t *got = NULL;
                char *want;

                o = object_of_size(sizes[i]);
                snprintf(name, sizeof(name), "s%zu", i);
                assert_int_equal(xp_store_create_text(f->store, "Thing", "", name, o, &w, &err), 0);
                assert_int_equal(xp_store_get(f->store, "Thing", "", name, &got, NULL, &err), 0);
                want = encoded(got);
                assert_string_equal(w.text, want);
                json_object_del(json_object_get(got, "metadata"), "resourceVersion");
                /* the writer's object has its version too */
                json_object_del(json_object_get(o, "metadata"), "resourceVersion");
                assert_true(json_equal(got, o));
                free(want);
                free(w.text);
                json_decref(got);
                json_decref(o);
        }
        o = object_of_size(XP_STORE_BODY_MAX + 1);
        assert_int_equal(xp_store_create(f->store, "Thing", "", "over", o, NULL, &err), -E2BIG);
        snprintf(message,
                 sizeof(message),
                 "is %d bytes, more than the %d allowed",
                 XP_STORE_BODY_MAX + 1,
                 XP_STORE_BODY_MAX);
        assert_non_null(strstr(err.msg, message));
        assert_int_equal(xp_store_get(f->store, "Thing", "", "over", &(json_t *){NULL}, NULL, &err),
                         -ENOENT);
        json_decref(o);
}

static void text_written(void **state)
{
        static const char *const bodies[] = {
            /* braces and quotes in strings before metadata must not confuse the scanner */
            ("{\"kind\":\"Pod\",\"x\":\"}{\\\"metadata\\\":{\",\"y\":[{\"a\":[1,{}]}],"
             "\"metadata\":{\"name\":\"a\",\"labels\":{\"k\":\"v}\"}},\"spec\":{\"z\":null}}"),
            "{\"metadata\":{}}",
            "{\"kind\":\"Thing\"}",
            "{}",
            "{\"metadata\":{\"name\":\"\\u00e9t\\u00e9\",\"resourceVersion\":\"77\"},\"n\":1.5}",
        };
        struct fixture *f = *state;

        for (size_t i = 0; i < XP_ELEMENTSOF(bodies); i++) {
                struct xp_store_written w = {.want_text = true};
                struct xp_error err = {0};
                json_t *o = json_loads(bodies[i], 0, NULL), *got = NULL;
                char name[16], *want;
                size_t start, len;

                assert_non_null(o);
                snprintf(name, sizeof(name), "t%zu", i);
                assert_int_equal(xp_store_create_text(f->store, "Thing", "", name, o, &w, &err), 0);
                assert_non_null(w.text);
                assert_int_equal(strlen(w.text), w.text_len);
                assert_int_equal(xp_store_get(f->store, "Thing", "", name, &got, NULL, &err), 0);
                want = encoded(got);
                assert_string_equal(w.text, want);
                /* the metadata's span, as the reader that only wants labels takes it */
                assert_int_equal(xp_store_text_metadata(w.text, w.text_len, &start, &len), 0);
                assert_int_equal(w.text[start], '{');
                assert_int_equal(w.text[start + len - 1], '}');
                assert_non_null(strstr(w.text, "\"metadata\":"));
                assert_ptr_equal(strstr(w.text, "\"metadata\":{") + 11 - w.text, (char *)start);
                free(want);
                free(w.text);
                json_decref(got);
                json_decref(o);
        }
        assert_int_equal(xp_store_text_metadata("[1]", 3, &(size_t){0}, &(size_t){0}), -EBADMSG);
        assert_int_equal(xp_store_text_metadata("{\"a\":1}", 7, &(size_t){0}, &(size_t){0}),
                         -ENOENT);
}

static int labels_in(const char *text, size_t *ret_start, size_t *ret_len)
{
        return xp_store_text_labels(text, strlen(text), ret_start, ret_len);
}

/* The labels' span, as a label selector takes it without parsing the rest of metadata. */
static void text_labels(void **state)
{
        static const char *const with_labels =
            ("{\"kind\":\"Pod\",\"labels\":{\"no\":\"top\"},\"metadata\":{\"managedFields\":[{\""
             "labels\":{\"x\":\"}\"}}],\"name\":\"a\",\"labels\":{\"k\":\"v}\",\"q\":\"\\\"\"},"
             "\"uid\":\"u\"},\"spec\":{}}");
        size_t start = 0, len = 0;
        json_t *labels;

        (void)state;
        assert_int_equal(labels_in(with_labels, &start, &len), 0);
        labels = json_loadb(with_labels + start, len, 0, NULL);
        assert_non_null(labels);
        assert_int_equal(json_object_size(labels), 2);
        assert_string_equal(json_string_value(json_object_get(labels, "k")), "v}");
        assert_string_equal(json_string_value(json_object_get(labels, "q")), "\"");
        json_decref(labels);
        assert_int_equal(labels_in("{\"metadata\":{\"name\":\"a\"}}", &start, &len), -ENOENT);
        assert_int_equal(labels_in("{\"labels\":{}}", &start, &len), -ENOENT);
        assert_int_equal(labels_in("{\"metadata\":{\"labels\":{", &start, &len), -EBADMSG);
        assert_int_equal(labels_in("[]", &start, &len), -EBADMSG);
}

struct texts {
        json_t *items;
        size_t n;
};

static int
check_text(const char *ns, const char *name, const char *text, size_t len, void *userdata)
{
        struct texts *t = userdata;
        json_t *item = json_array_get(t->items, t->n++);
        const json_t *meta = json_object_get(item, "metadata");
        char *want = encoded(item);

        (void)ns; /* pod() writes "default" into every body whatever its key */
        assert_string_equal(name, json_string_value(json_object_get(meta, "name")));
        assert_int_equal(len, strlen(want));
        assert_memory_equal(text, want, len);
        free(want);
        return 0;
}

static void list_text(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        struct texts t = {0};
        uint64_t v1 = 0, v2 = 0;

        for (int i = 0; i < 30; i++) {
                char name[16];

                snprintf(name, sizeof(name), "p%02d", i);
                create(f->store, "Pod", i % 3 ? "default" : "other", name);
        }
        assert_int_equal(xp_store_list(f->store, "Pod", NULL, &t.items, &v1, &err), 0);
        assert_int_equal(xp_store_list_text(f->store, "Pod", NULL, check_text, &t, &v2, &err), 0);
        assert_int_equal(t.n, 30);
        assert_int_equal(v1, v2);
        json_decref(t.items);
        t = (struct texts){0};
        assert_int_equal(xp_store_list(f->store, "Pod", "other", &t.items, NULL, &err), 0);
        assert_int_equal(xp_store_list_text(f->store, "Pod", "other", check_text, &t, NULL, &err),
                         0);
        assert_int_equal(t.n, 10);
        json_decref(t.items);
}

/*
 * A cursor reads what xp_store_list_text() reads, in steps of any size, from the snapshot it
 * opened on: writes between its steps are not in it, and its version is the snapshot's.
 */
static void list_cursor(void **state)
{
        struct fixture *f = *state;
        static const size_t steps[] = {1, 3, 7, 1000};
        struct xp_error err = {0};

        for (int i = 0; i < 20; i++) {
                char name[16];

                snprintf(name, sizeof(name), "p%02d", i);
                create(f->store, "Pod", i % 4 ? "default" : "other", name);
        }
        for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
                struct xp_store_cursor *cur = NULL;
                struct texts t = {0};
                uint64_t v_list = 0, v_cursor = 0;
                char name[16];
                int r, rounds = 0;

                assert_int_equal(xp_store_list(f->store, "Pod", NULL, &t.items, &v_list, &err), 0);
                assert_int_equal(xp_store_list_open(f->store, "Pod", NULL, &cur, &v_cursor, &err),
                                 0);
                assert_int_equal(v_cursor, v_list);
                /* a write after the open: in the store, not in the snapshot */
                snprintf(name, sizeof(name), "late%zu", k);
                create(f->store, "Pod", "default", name);
                while ((r = xp_store_list_next(cur, steps[k], check_text, &t, &err)) == 1)
                        assert_true(++rounds <= 20);
                assert_int_equal(r, 0);
                assert_int_equal(t.n, json_array_size(t.items));
                /* done stays done */
                assert_int_equal(xp_store_list_next(cur, steps[k], check_text, &t, &err), 0);
                xp_store_list_close(cur);
                json_decref(t.items);
        }
        /* one namespace; closed before its end (the read is given up, the store goes on) */
        {
                struct xp_store_cursor *cur = NULL;
                struct texts t = {0};

                assert_int_equal(xp_store_list(f->store, "Pod", "other", &t.items, NULL, &err), 0);
                assert_int_equal(json_array_size(t.items), 5);
                assert_int_equal(xp_store_list_open(f->store, "Pod", "other", &cur, NULL, &err), 0);
                assert_int_equal(xp_store_list_next(cur, 2, check_text, &t, &err), 1);
                assert_int_equal(t.n, 2);
                xp_store_list_close(cur);
                xp_store_list_close(NULL);
                json_decref(t.items);
                create(f->store, "Pod", "other", "after-close");
        }
}

/* Every event after since, as objects and as text, encoded into one string to compare. */
static char *events_encoded(struct xp_store *s, uint64_t since)
{
        struct xp_store_event *ev = NULL, *tv = NULL;
        struct xp_error err = {0};
        size_t n = 0, tn = 0, len = 0;
        char *all = NULL;
        FILE *out = open_memstream(&all, &len);

        assert_non_null(out);
        for (uint64_t at = since, through = 0;; at = through) {
                assert_int_equal(
                    xp_store_events_scan(s, "Pod", NULL, at, 100, &ev, &n, &through, &err), 0);
                assert_int_equal(
                    xp_store_events_scan_text(s, "Pod", NULL, at, 100, &tv, &tn, &through, &err),
                    0);
                assert_int_equal(n, tn);
                for (size_t i = 0; i < n; i++) {
                        char *text = encoded(ev[i].object);

                        /* the object parsed, the text, and the event's key all agree */
                        assert_null(tv[i].object);
                        assert_string_equal(text, tv[i].text);
                        fprintf(out,
                                "%d %" PRIu64 " %s/%s %s\n",
                                ev[i].type,
                                ev[i].resource_version,
                                ev[i].namespace,
                                ev[i].name,
                                text);
                        free(text);
                }
                xp_store_events_free(ev, n);
                xp_store_events_free(tv, tn);
                if (n < 100)
                        break;
        }
        fclose(out);
        return all;
}

static void recent_matches_log(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        uint64_t mid = 0;
        char *memory[3], *disk[3];

        /* more writes than the ring keeps, of every type, the newest creates shared */
        for (int i = 0; i < 1500; i++) {
                struct xp_store_written w = {.want_text = true, .share = i % 2 == 0};
                json_t *o = pod((char[16]){0}, "Pending"), *last = NULL;
                char name[16];

                snprintf(name, sizeof(name), "p%d", i % 700);
                json_object_set_new(json_object_get(o, "metadata"), "name", json_string(name));
                if (xp_store_create_text(f->store, "Pod", "default", name, o, &w, &err) == -EEXIST)
                        assert_int_equal(
                            i % 3 ? xp_store_update(
                                        f->store, "Pod", "default", name, 0, o, NULL, &err)
                                  : xp_store_delete(
                                        f->store, "Pod", "default", name, 0, &last, NULL, &err),
                            0);
                free(w.text);
                json_decref(last);
                json_decref(o);
                snprintf(name, sizeof(name), "n%d", i);
                create(f->store, "Node", "", name); /* another kind between them */
                if (i == 1200)
                        mid = xp_store_version(f->store);
        }
        /* from memory where the ring reaches back, from SQLite before it */
        memory[0] = events_encoded(f->store, 0);
        memory[1] = events_encoded(f->store, mid);
        memory[2] = events_encoded(f->store, xp_store_version(f->store) - 3);
        xp_store_close(f->store);
        f->store = open_store(f->path, 0); /* the ring starts empty: everything from SQLite */
        disk[0] = events_encoded(f->store, 0);
        disk[1] = events_encoded(f->store, mid);
        disk[2] = events_encoded(f->store, xp_store_version(f->store) - 3);
        for (int i = 0; i < 3; i++) {
                assert_string_equal(memory[i], disk[i]);
                free(memory[i]);
                free(disk[i]);
        }
}

/*
 * A group (the scheduler's bindings with their Events): one commit for all, each write its own
 * result, a write after_previous dropped with the one it follows, all of it durable.
 */
static void group_writes(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *a = pod("a", "Pending"), *b = pod("b", "Pending"), *c = pod("c", "Pending");
        json_t *ea = pod("a.event", "x"), *eb = pod("b.event", "x"), *got = NULL;
        uint64_t va = 0, vb = 0, gv = 0;
        struct xp_store_stats before, after;

        assert_int_equal(xp_store_create(f->store, "Pod", "default", "a", a, &va, &err), 0);
        assert_int_equal(xp_store_create(f->store, "Pod", "default", "b", b, &vb, &err), 0);
        json_object_set_new(json_object_get(a, "status"), "phase", json_string("Running"));
        json_object_set_new(json_object_get(b, "status"), "phase", json_string("Running"));
        struct xp_store_group_write w[] = {
            {.update = true,
             .kind = "Pod",
             .namespace = "default",
             .name = "a",
             .expected_version = va,
             .object = a},
            {.kind = "Event",
             .namespace = "default",
             .name = "a.event",
             .object = ea,
             .after_previous = true},
            {.update = true,
             .kind = "Pod",
             .namespace = "default",
             .name = "b",
             .expected_version = va,
             .object = b},
            {.kind = "Event",
             .namespace = "default",
             .name = "b.event",
             .object = eb,
             .after_previous = true},
            {.kind = "Pod", .namespace = "default", .name = "c", .object = c},
        };

        xp_store_stats(f->store, &before);
        assert_int_equal(xp_store_write_group(f->store, w, 5), 3);
        xp_store_stats(f->store, &after);
        assert_int_equal(after.commits - before.commits, 1);
        assert_int_equal(w[0].result, 0);
        assert_int_equal(w[1].result, 0);
        assert_int_equal(w[1].version, w[0].version + 1);
        assert_int_equal(w[2].result, -ESTALE); /* b is at vb, not va */
        assert_int_equal(w[3].result, -ECANCELED);
        assert_non_null(strstr(w[3].err.msg, "the write it follows was not"));
        assert_int_equal(w[4].result, 0);
        assert_int_equal(w[4].version, w[1].version + 1);

        /* durable: what a reopened store reads */
        xp_store_close(f->store);
        f->store = open_store(f->path, 0);
        assert_int_equal(xp_store_get(f->store, "Pod", "default", "a", &got, &gv, &err), 0);
        assert_int_equal(gv, w[0].version);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(got, "status"), "phase")), "Running");
        json_decref(got);
        assert_int_equal(xp_store_get(f->store, "Event", "default", "a.event", &got, &gv, &err), 0);
        json_decref(got);
        assert_int_equal(xp_store_get(f->store, "Event", "default", "b.event", &got, &gv, &err),
                         -ENOENT);
        assert_int_equal(xp_store_get(f->store, "Pod", "default", "b", &got, &gv, &err), 0);
        assert_int_equal(gv, vb);
        json_decref(got);
        json_decref(a);
        json_decref(b);
        json_decref(c);
        json_decref(ea);
        json_decref(eb);
}

/* A group's shared writes go to the event log's readers as the writer's own objects, with their
 * version: nobody parses the text again. A refused one stays out of the log. */
static void group_writes_shared(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *a = pod("a", "Pending"), *bound = pod("a", "Running"), *event = pod("a.event", "x");
        json_t *stale = pod("a", "Failed");
        struct xp_store_event *ev = NULL;
        uint64_t va = 0;
        size_t n = 0;
        char version[24];

        assert_int_equal(xp_store_create(f->store, "Pod", "default", "a", a, &va, &err), 0);
        struct xp_store_group_write w[] = {
            {.update = true,
             .kind = "Pod",
             .namespace = "default",
             .name = "a",
             .expected_version = va,
             .object = bound,
             .share = true},
            {.kind = "Event",
             .namespace = "default",
             .name = "a.event",
             .object = event,
             .after_previous = true,
             .share = true},
            {.update = true,
             .kind = "Pod",
             .namespace = "default",
             .name = "a",
             .expected_version = va,
             .object = stale,
             .share = true},
        };
        assert_int_equal(xp_store_write_group(f->store, w, 3), 2);
        assert_int_equal(w[2].result, -ESTALE);
        assert_int_equal(xp_store_events_scan(f->store, "Pod", NULL, va, 10, &ev, &n, NULL, &err),
                         0);
        assert_int_equal(n, 1);
        assert_ptr_equal(ev[0].object, bound);
        snprintf(version, sizeof(version), "%" PRIu64, w[0].version);
        assert_string_equal(json_string_value(json_object_get(json_object_get(bound, "metadata"),
                                                              "resourceVersion")),
                            version);
        xp_store_events_free(ev, n);
        assert_int_equal(xp_store_events_scan(f->store, "Event", NULL, va, 10, &ev, &n, NULL, &err),
                         0);
        assert_int_equal(n, 1);
        assert_ptr_equal(ev[0].object, event);
        xp_store_events_free(ev, n);
        assert_null(json_object_get(json_object_get(stale, "metadata"), "resourceVersion"));
        json_decref(a);
        json_decref(bound);
        json_decref(event);
        json_decref(stale);
}

/* A shared read hands out the object the event log's readers share when the ring holds the row's
 * version (no parse), a parsed one otherwise (a version the ring never had as an object, another
 * object's write there); both equal what xp_store_get() reads. */
static void get_shared_from_ring(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *a = pod("a", "Pending"), *b = pod("b", "Pending"), *got = NULL, *plain = NULL;
        struct xp_store_written written = {.share = true};
        uint64_t va = 0, vb = 0, v = 0;

        /* a: not shared by its writer, and nobody read the log: the ring has its text only */
        assert_int_equal(xp_store_create(f->store, "Pod", "default", "a", a, &va, &err), 0);
        assert_int_equal(xp_store_get_shared(f->store, "Pod", "default", "a", &got, &v, &err), 0);
        assert_int_equal(v, va);
        assert_ptr_not_equal(got, a);
        assert_int_equal(xp_store_get(f->store, "Pod", "default", "a", &plain, NULL, &err), 0);
        assert_true(json_equal(got, plain));
        json_decref(got);
        json_decref(plain);

        /* b: the writer gave its object to the readers: the same tree comes back */
        assert_int_equal(xp_store_create_text(f->store, "Pod", "default", "b", b, &written, &err),
                         0);
        vb = written.version;
        assert_int_equal(xp_store_get_shared(f->store, "Pod", "default", "b", &got, &v, &err), 0);
        assert_int_equal(v, vb);
        assert_ptr_equal(got, b);
        assert_int_equal(xp_store_get(f->store, "Pod", "default", "b", &plain, NULL, &err), 0);
        assert_ptr_not_equal(plain, b);
        assert_true(json_equal(got, plain));
        json_decref(got);
        json_decref(plain);
        assert_int_equal(xp_store_get_shared(f->store, "Pod", "default", "c", &got, NULL, &err),
                         -ENOENT);
        json_decref(a);
        json_decref(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(crud, setup, teardown),
            cmocka_unit_test_setup_teardown(group_writes, setup, teardown),
            cmocka_unit_test_setup_teardown(group_writes_shared, setup, teardown),
            cmocka_unit_test_setup_teardown(get_shared_from_ring, setup, teardown),
            cmocka_unit_test_setup_teardown(versions_persist, setup, teardown),
            cmocka_unit_test_setup_teardown(list_snapshot, setup, teardown),
            cmocka_unit_test_setup_teardown(events_filters, setup, teardown),
            cmocka_unit_test_setup_teardown(events_expire, setup, teardown),
            cmocka_unit_test_setup_teardown(events_scan_into_reuses, setup, teardown),
            cmocka_unit_test_setup_teardown(wait_wakes, setup, teardown),
            cmocka_unit_test_setup_teardown(kind_waiter_sees_its_kinds, setup, teardown),
            cmocka_unit_test_setup_teardown(concurrent_creates, setup, teardown),
            cmocka_unit_test_setup_teardown(racing_creates, setup, teardown),
            cmocka_unit_test_setup_teardown(open_errors, setup, teardown),
            cmocka_unit_test(text_labels),
            cmocka_unit_test_setup_teardown(text_written, setup, teardown),
            cmocka_unit_test_setup_teardown(bodies_of_every_size, setup, teardown),
            cmocka_unit_test_setup_teardown(list_text, setup, teardown),
            cmocka_unit_test_setup_teardown(list_cursor, setup, teardown),
            cmocka_unit_test_setup_teardown(recent_matches_log, setup, teardown),
            cmocka_unit_test_setup_teardown(concurrent_groups, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
