/* SPDX-License-Identifier: Apache-2.0 */
/* The controllers' loop (controller.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"
#include "informer.h"
#include "xpool/log.h"
#include "xpool/log_limit.h"
#include "xpool/map.h"
#include "xpool/timeutil.h"
#include "xpool/wake_word.h"

struct xp_controller {
        const struct xp_controller_ops *ops;
        struct xp_informer *informer;
        void *userdata;
        pthread_t thread;
        atomic_bool stop;
        atomic_uint stopped; /* bumped at the stop: a rest sleeps on it (xpool/wake_word.h) */
};

static int clamp_ms(int64_t ms)
{
        return ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
}

/* How long one wait lasts before the stop flag is read again (a stop also wakes the wait). */
#define STOP_SLICE_MS 200
/* A store that keeps failing: the retries back off from the controller's retry_ms to this */
#define RETRY_MAX_MS 30000
/* and the same failure is written again after this long (a new one at once) */
#define FAILURE_SAID_AGAIN_MS 60000

/* Waits for news in the store or ms, in slices, so that a stop is seen within a slice. */
static void wait_news(struct xp_controller *c, int ms)
{
        while (!atomic_load(&c->stop)) {
                int slice = ms < STOP_SLICE_MS ? ms : STOP_SLICE_MS;

                if (xp_informer_wait(c->informer, slice) != 0 || ms <= slice)
                        return;
                ms -= slice;
        }
}

/*
 * A plain sleep that a stop ends: waiting on the store would wake at once while it has news that
 * cannot be read, or before the news of a settling controller has gathered. On a word, not a
 * condition variable: glibc's condition wait retakes its mutex marked contended, so each rest
 * made a second futex call at its unlock, with no one to wake (docs/store.md "Locks").
 */
static void rest(struct xp_controller *c, int ms)
{
        struct timespec deadline;

        if (ms <= 0)
                return;
        deadline = xp_monotonic_deadline(ms);
        for (;;) {
                unsigned int seen = xp_wake_word_prepare(&c->stopped);

                if (atomic_load(&c->stop) ||
                    xp_wake_word_wait(&c->stopped, seen, &deadline) == -ETIMEDOUT)
                        return;
        }
}

int xp_controller_settle_ms(int64_t settle_ms, int work_ms)
{
        if (settle_ms <= 0 || work_ms <= 0)
                return 0;
        return settle_ms < work_ms ? (int)settle_ms : work_ms;
}

/* The wait before the next read of a store whose reads fail: retry_ms, doubled per failure. */
static int64_t retry_after(int64_t last_ms, int64_t retry_ms)
{
        int64_t first = retry_ms > 0 ? retry_ms : 1;

        if (last_ms <= 0)
                return first < RETRY_MAX_MS ? first : RETRY_MAX_MS;
        return last_ms >= RETRY_MAX_MS / 2 ? RETRY_MAX_MS : 2 * last_ms;
}

/* A failed read: written when it is new or a minute after it was last written. */
static void read_failed(struct xp_controller *c,
                        struct xp_log_limit *said,
                        const struct xp_error *err,
                        int r,
                        int64_t retry_ms)
{
        const char *why = err->msg[0] ? err->msg : strerror(-r);
        uint64_t held = 0;

        if (xp_log_limit_check(
                said, xp_hash_string(why), xp_monotonic_ms(), FAILURE_SAID_AGAIN_MS, &held))
                xp_log(LOG_WARNING,
                       "%s: reading the store: %s; retried in %" PRId64 " ms%s",
                       c->ops->name,
                       why,
                       retry_ms,
                       held ? " (the same failure since it was last written)" : "");
}

static void *controller_main(void *userdata)
{
        struct xp_controller *c = userdata;
        struct xp_log_limit said = {0};
        int64_t retry_ms = 0;

        while (!atomic_load(&c->stop)) {
                struct xp_error err = {0};
                int r;

                r = xp_informer_sync(c->informer, &err);
                if (r == 2 && c->ops->relisted)
                        c->ops->relisted(c->userdata);
                if (r < 0) {
                        retry_ms = retry_after(retry_ms, c->ops->retry_ms);
                        read_failed(c, &said, &err, r, retry_ms);
                        rest(c, clamp_ms(retry_ms));
                        continue;
                }
                if (retry_ms > 0) {
                        xp_log(LOG_INFO, "%s: reading the store again", c->ops->name);
                        xp_log_limit_reset(&said);
                        retry_ms = 0;
                }
                int ms = clamp_ms(c->ops->work(c->userdata));
                int settle = xp_controller_settle_ms(c->ops->settle_ms, ms);

                rest(c, settle);
                wait_news(c, ms - settle);
        }
        return NULL;
}

int xp_controller_start(const struct xp_controller_ops *ops,
                        struct xp_informer *informer,
                        void *userdata,
                        struct xp_controller **ret,
                        struct xp_error *err)
{
        struct xp_controller *c = calloc(1, sizeof *c);
        int r;

        if (!c)
                return -ENOMEM;
        *c = (struct xp_controller){.ops = ops, .informer = informer, .userdata = userdata};
        r = -pthread_create(&c->thread, NULL, controller_main, c);
        if (r < 0) {
                free(c);
                return xp_errorf(err, r, "cannot start the %s thread", ops->name);
        }
        *ret = c;
        return 0;
}

void xp_controller_stop(struct xp_controller *c)
{
        if (!c)
                return;
        atomic_store(&c->stop, true);
        xp_wake_word_bump(&c->stopped);
        /* a sleeping loop would otherwise see the stop only at its slice's end: the server's
         * dozen controllers stopped one after another added up to a second or more */
        xp_informer_wake(c->informer);
        int64_t asked_ms = xp_monotonic_ms();
        pthread_join(c->thread, NULL);
        xp_debug("stop",
                 "stop: %s: its loop ended %lld ms after the stop",
                 c->ops->name,
                 (long long)(xp_monotonic_ms() - asked_ms));
        free(c);
}

bool xp_controller_stopping(const struct xp_controller *c)
{
        return c && atomic_load(&c->stop);
}
