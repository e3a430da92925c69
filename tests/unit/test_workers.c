/* SPDX-License-Identifier: Apache-2.0 */
/* The worker pool (src/util/workers.c): its own queue and done list, and an owner's queue. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/macro.h"
#include "xpool/timeutil.h"
#include "xpool/workers.h"

struct job {
        struct xp_work work;
        int id;
        int result;
};

static atomic_int freed;

static void run_double(void *userdata, void *ctx, struct xp_work *work)
{
        struct job *j = (struct job *)work;

        (void)userdata;
        (void)ctx;
        j->result = 2 * j->id;
}

static void free_job(struct xp_work *work)
{
        atomic_fetch_add(&freed, 1);
        free(work);
}

static const struct xp_workers_ops doubling = {.run = run_double, .free = free_job};

static struct job *job_new(int id)
{
        struct job *j = calloc(1, sizeof(*j));

        assert_non_null(j);
        j->id = id;
        return j;
}

/* Takes done jobs until n came back (bounded: 10 s), checking each, and frees them. */
static void collect(struct xp_workers *w, int n)
{
        int64_t deadline = xp_monotonic_ms() + 10000;
        int seen = 0;

        while (seen < n) {
                struct pollfd p = {.fd = xp_workers_fd(w), .events = POLLIN};
                struct xp_work *work;

                assert_true(xp_monotonic_ms() < deadline);
                if (p.fd >= 0)
                        (void)poll(&p, 1, 100);
                work = xp_workers_done(w);
                while (work) {
                        struct job *j = (struct job *)work;

                        work = work->next;
                        assert_int_equal(j->result, 2 * j->id);
                        free(j);
                        seen++;
                }
        }
        assert_int_equal(seen, n);
}

static void threads_run_what_is_submitted(void **state)
{
        const struct xp_workers_options options = {.ops = &doubling, .threads = 4, .notify = true};
        struct xp_workers *w = NULL;

        (void)state;
        assert_int_equal(xp_workers_new(&options, &w, NULL), 0);
        assert_true(xp_workers_fd(w) >= 0);
        for (int i = 0; i < 200; i++)
                xp_workers_submit(w, &job_new(i)->work);
        collect(w, 200);
        assert_null(xp_workers_done(w));
        xp_workers_free(w);
}

static void without_threads_jobs_run_at_once(void **state)
{
        const struct xp_workers_options options = {.ops = &doubling};
        struct xp_workers *w = NULL;
        struct xp_work *done;

        (void)state;
        assert_int_equal(xp_workers_new(&options, &w, NULL), 0);
        assert_int_equal(xp_workers_fd(w), -1);
        xp_workers_submit(w, &job_new(1)->work);
        xp_workers_submit(w, &job_new(2)->work);
        done = xp_workers_done(w); /* newest first */
        assert_int_equal(((struct job *)done)->id, 2);
        assert_int_equal(((struct job *)done->next)->result, 2);
        assert_null(done->next->next);
        free(done->next);
        free(done);
        xp_workers_free(w);
}

/* A slow job holds the one thread; what is queued behind it still runs before free returns. */
static void run_slow(void *userdata, void *ctx, struct xp_work *work)
{
        (void)ctx;
        if (((struct job *)work)->id == 0)
                while (!atomic_load((atomic_bool *)userdata))
                        usleep(1000);
        run_double(userdata, ctx, work);
}

static void *release_later(void *userdata)
{
        usleep(50000);
        atomic_store((atomic_bool *)userdata, true);
        return NULL;
}

static void free_runs_the_queue_first(void **state)
{
        static const struct xp_workers_ops slow = {.run = run_slow, .free = free_job};
        atomic_bool release = false;
        struct xp_workers_options options = {.ops = &slow, .userdata = &release, .threads = 1};
        struct xp_workers *w = NULL;
        pthread_t t;

        (void)state;
        atomic_store(&freed, 0);
        assert_int_equal(xp_workers_new(&options, &w, NULL), 0);
        for (int i = 0; i < 5; i++)
                xp_workers_submit(w, &job_new(i)->work);
        assert_int_equal(pthread_create(&t, NULL, release_later, &release), 0);
        xp_workers_free(w); /* waits for all five, then frees them from the done list */
        pthread_join(t, NULL);
        assert_int_equal(atomic_load(&freed), 5);
}

/* An owner's queue: jobs due at a time, each taken on the thread whose context asks. */
struct owner {
        struct job jobs[3];
        int64_t due_ns[3];
        int next;
        int done;
        int threads_begun, threads_ended;
};

static int owner_begin(void *userdata, void **ret_ctx)
{
        struct owner *o = userdata;

        *ret_ctx = &o->threads_begun;
        o->threads_begun++;
        return 0;
}

static void owner_end(void *userdata, void *ctx)
{
        struct owner *o = userdata;

        assert_ptr_equal(ctx, &o->threads_begun);
        o->threads_ended++;
}

static int
owner_take(void *userdata, void *ctx, bool stopping, struct xp_work **ret, int64_t *ret_wake_ns)
{
        struct owner *o = userdata;

        assert_ptr_equal(ctx, &o->threads_begun);
        if (stopping || o->next == 3)
                return 0;
        if (xp_monotonic_ns() < o->due_ns[o->next]) {
                *ret_wake_ns = o->due_ns[o->next];
                return 0;
        }
        *ret = &o->jobs[o->next++].work;
        return 1;
}

static void owner_done(void *userdata, void *ctx, struct xp_work *work)
{
        struct owner *o = userdata;

        (void)ctx;
        assert_int_equal(((struct job *)work)->result, 2 * ((struct job *)work)->id);
        o->done++;
}

static void an_owners_queue_with_due_times(void **state)
{
        static const struct xp_workers_ops ops = {.run = run_double,
                                                  .thread_begin = owner_begin,
                                                  .thread_end = owner_end,
                                                  .take = owner_take,
                                                  .done = owner_done};
        struct owner o = {0};
        struct xp_workers_options options = {.ops = &ops, .userdata = &o, .threads = 2};
        struct xp_workers *w = NULL;
        int64_t start = xp_monotonic_ns(), deadline = xp_monotonic_ms() + 10000;
        int done = 0;

        (void)state;
        for (int i = 0; i < 3; i++) {
                o.jobs[i].id = i + 1;
                o.due_ns[i] = start + (int64_t)i * 30 * 1000000; /* 0, 30 and 60 ms from now */
        }
        assert_int_equal(xp_workers_new(&options, &w, NULL), 0);
        /* nobody wakes the threads: the due times alone bring the jobs out */
        while (done < 3 && xp_monotonic_ms() < deadline) {
                usleep(5000);
                xp_workers_lock(w);
                done = o.done;
                xp_workers_unlock(w);
        }
        assert_int_equal(done, 3);
        assert_true(xp_monotonic_ns() - start >= 60 * 1000000);
        xp_workers_free(w);
        assert_int_equal(o.threads_begun, 2);
        assert_int_equal(o.threads_ended, 2);
}

/* An owner's queue whose jobs come while every thread sleeps: made ready, each with one wake. */
struct ready_queue {
        struct job jobs[3];
        int ready, next, done, idle_asks;
};

static int
ready_take(void *userdata, void *ctx, bool stopping, struct xp_work **ret, int64_t *ret_wake_ns)
{
        struct ready_queue *q = userdata;

        (void)ctx;
        (void)ret_wake_ns;
        if (stopping || q->next == q->ready) {
                q->idle_asks++;
                return 0;
        }
        *ret = &q->jobs[q->next++].work;
        return 1;
}

static void ready_done(void *userdata, void *ctx, struct xp_work *work)
{
        struct ready_queue *q = userdata;

        (void)ctx;
        assert_int_equal(((struct job *)work)->result, 2 * ((struct job *)work)->id);
        q->done++;
}

/* Waits (bounded: 10 s) until *value, read with the lock held, reaches at least want. */
static int wait_locked(struct xp_workers *w, const int *value, int want)
{
        int64_t deadline = xp_monotonic_ms() + 10000;
        int seen = 0;

        while (xp_monotonic_ms() < deadline) {
                xp_workers_lock(w);
                seen = *value;
                xp_workers_unlock(w);
                if (seen >= want)
                        break;
                usleep(2000);
        }
        return seen;
}

static void wake_one_brings_out_each_job(void **state)
{
        static const struct xp_workers_ops ops = {
            .run = run_double, .take = ready_take, .done = ready_done};
        struct ready_queue q = {0};
        struct xp_workers_options options = {.ops = &ops, .userdata = &q, .threads = 4};
        struct xp_workers *w = NULL;

        (void)state;
        for (int i = 0; i < 3; i++)
                q.jobs[i].id = i + 1;
        assert_int_equal(xp_workers_new(&options, &w, NULL), 0);
        /* every thread asked once and sleeps, with no time to wake at */
        assert_int_equal(wait_locked(w, &q.idle_asks, 4), 4);
        for (int i = 0; i < 3; i++) {
                xp_workers_lock(w);
                q.ready++;
                xp_workers_wake_one(w);
                xp_workers_unlock(w);
        }
        assert_int_equal(wait_locked(w, &q.done, 3), 3);
        xp_workers_free(w);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(threads_run_what_is_submitted),
            cmocka_unit_test(without_threads_jobs_run_at_once),
            cmocka_unit_test(free_runs_the_queue_first),
            cmocka_unit_test(an_owners_queue_with_due_times),
            cmocka_unit_test(wake_one_brings_out_each_job),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
