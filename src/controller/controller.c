/* SPDX-License-Identifier: Apache-2.0 */
/* The controllers' loop (controller.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"
#include "informer.h"
#include "xpool/log.h"

struct xp_controller {
        const struct xp_controller_ops *ops;
        struct xp_informer *informer;
        void *userdata;
        pthread_t thread;
        atomic_bool stop;
};

static int clamp_ms(int64_t ms)
{
        return ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
}

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* How long one wait lasts before the stop flag is read again (a stop also wakes the wait). */
#define STOP_SLICE_MS 200

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

static void *controller_main(void *userdata)
{
        struct xp_controller *c = userdata;

        while (!atomic_load(&c->stop)) {
                struct xp_error err = {0};
                int r;

                r = xp_informer_sync(c->informer, &err);
                if (r == 2 && c->ops->relisted)
                        c->ops->relisted(c->userdata);
                if (r < 0) {
                        xp_log(LOG_WARNING,
                               "%s: reading the store: %s",
                               c->ops->name,
                               err.msg[0] ? err.msg : strerror(-r));
                        /* a plain sleep: waiting on the store would wake at once while it has
                         * news that cannot be read */
                        sleep_ms(clamp_ms(c->ops->retry_ms));
                        continue;
                }
                wait_news(c, clamp_ms(c->ops->work(c->userdata)));
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
        /* a sleeping loop would otherwise see the stop only at its slice's end: the server's
         * dozen controllers stopped one after another added up to a second or more */
        xp_informer_wake(c->informer);
        pthread_join(c->thread, NULL);
        free(c);
}

bool xp_controller_stopping(const struct xp_controller *c)
{
        return c && atomic_load(&c->stop);
}
