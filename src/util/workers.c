/* SPDX-License-Identifier: Apache-2.0 */
/* The worker pool (include/util/xpool/workers.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "xpool/macro.h"
#include "xpool/workers.h"

struct xp_workers {
        const struct xp_workers_ops *ops;
        void *userdata;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        struct xp_work *queue, *queue_tail, *done;
        bool stopping;
        int fd;
        pthread_t *threads;
        unsigned n_threads;
};

static int take_queued(struct xp_workers *w, struct xp_work **ret)
{
        if (!w->queue)
                return 0;
        *ret = w->queue;
        w->queue = w->queue->next;
        if (!w->queue)
                w->queue_tail = NULL;
        return 1;
}

/* Called with the lock held. */
static void put_done(struct xp_workers *w, void *ctx, struct xp_work *work)
{
        uint64_t one = 1;

        if (w->ops->done) {
                w->ops->done(w->userdata, ctx, work);
                return;
        }
        work->next = w->done;
        w->done = work;
        if (w->fd >= 0 && write(w->fd, &one, sizeof(one)) < 0) {
                /* the counter is far from full: it is read whenever the owner takes the list */
        }
}

/* Waits for a job; false when the thread is to end. Called and returns with the lock held. */
static bool wait_work(struct xp_workers *w, void *ctx, struct xp_work **ret)
{
        for (;;) {
                int64_t wake_ns = 0;

                if (w->ops->take ? w->ops->take(w->userdata, ctx, w->stopping, ret, &wake_ns) > 0
                                 : take_queued(w, ret) > 0)
                        return true;
                if (w->stopping)
                        return false;
                if (wake_ns == 0) {
                        pthread_cond_wait(&w->wake, &w->lock);
                } else {
                        struct timespec until = {.tv_sec = wake_ns / 1000000000,
                                                 .tv_nsec = wake_ns % 1000000000};

                        pthread_cond_timedwait(&w->wake, &w->lock, &until);
                }
        }
}

static void *worker_main(void *userdata)
{
        struct xp_workers *w = userdata;
        struct xp_work *work;
        void *ctx = NULL;

        pthread_mutex_lock(&w->lock);
        if (w->ops->thread_begin && w->ops->thread_begin(w->userdata, &ctx) < 0) {
                pthread_mutex_unlock(&w->lock);
                return NULL;
        }
        while (wait_work(w, ctx, &work)) {
                pthread_mutex_unlock(&w->lock);
                w->ops->run(w->userdata, ctx, work);
                pthread_mutex_lock(&w->lock);
                put_done(w, ctx, work);
        }
        if (w->ops->thread_end)
                w->ops->thread_end(w->userdata, ctx);
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int xp_workers_new(const struct xp_workers_options *options,
                   struct xp_workers **ret,
                   struct xp_error *err)
{
        struct xp_workers *w = calloc(1, sizeof(*w));
        pthread_condattr_t attr;

        if (!w)
                return xp_errorf(err, -ENOMEM, "out of memory");
        w->ops = options->ops;
        w->userdata = options->userdata;
        w->fd = -1;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->wake, &attr);
        pthread_condattr_destroy(&attr);
        if (options->notify) {
                w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (w->fd < 0) {
                        int r = -errno;

                        xp_workers_free(w);
                        return xp_errorf(err, r, "cannot make an eventfd: %s", strerror(-r));
                }
        }
        w->threads = calloc(options->threads ? options->threads : 1, sizeof(*w->threads));
        if (!w->threads) {
                xp_workers_free(w);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        for (; w->n_threads < options->threads; w->n_threads++) {
                int r = -pthread_create(&w->threads[w->n_threads], NULL, worker_main, w);

                if (r < 0) {
                        xp_workers_free(w);
                        return xp_errorf(err, r, "cannot start a worker thread: %s", strerror(-r));
                }
        }
        *ret = w;
        return 0;
}

static void free_list(struct xp_workers *w, struct xp_work *work)
{
        while (work) {
                struct xp_work *next = work->next;

                if (w->ops->free)
                        w->ops->free(work);
                work = next;
        }
}

void xp_workers_free(struct xp_workers *w)
{
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        w->stopping = true;
        if (w->ops->stopping)
                w->ops->stopping(w->userdata);
        pthread_cond_broadcast(&w->wake);
        pthread_mutex_unlock(&w->lock);
        for (unsigned i = 0; i < w->n_threads; i++)
                pthread_join(w->threads[i], NULL);
        free_list(w, w->queue);
        free_list(w, w->done);
        if (w->fd >= 0)
                close(w->fd);
        free(w->threads);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

void xp_workers_submit(struct xp_workers *w, struct xp_work *work)
{
        work->next = NULL;
        if (w->n_threads == 0) {
                w->ops->run(w->userdata, NULL, work);
                pthread_mutex_lock(&w->lock);
                put_done(w, NULL, work);
                pthread_mutex_unlock(&w->lock);
                return;
        }
        pthread_mutex_lock(&w->lock);
        if (w->queue_tail)
                w->queue_tail->next = work;
        else
                w->queue = work;
        w->queue_tail = work;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
}

struct xp_work *xp_workers_done(struct xp_workers *w)
{
        struct xp_work *done;
        uint64_t n;

        if (w->fd >= 0 && read(w->fd, &n, sizeof(n)) < 0) {
                /* EAGAIN: nothing was signalled since the last read */
        }
        pthread_mutex_lock(&w->lock);
        done = w->done;
        w->done = NULL;
        pthread_mutex_unlock(&w->lock);
        return done;
}

int xp_workers_fd(const struct xp_workers *w)
{
        return w->fd;
}

void xp_workers_lock(struct xp_workers *w)
{
        pthread_mutex_lock(&w->lock);
}

void xp_workers_unlock(struct xp_workers *w)
{
        pthread_mutex_unlock(&w->lock);
}

void xp_workers_wake(struct xp_workers *w)
{
        pthread_cond_broadcast(&w->wake);
}

void xp_workers_wake_one(struct xp_workers *w)
{
        pthread_cond_signal(&w->wake);
}
