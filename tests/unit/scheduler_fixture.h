/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A cmocka fixture of the scheduling loop's tests (test_scheduler, test_scheduler_queues): the
 * registry fixture and a scheduler over it with no thread (bindings are written in the step),
 * on the fixture's clock at 1,000,000 ms. Header-only, static inline, as registry_fixture.h;
 * include after <cmocka.h>.
 */

#include <stdlib.h>

#include "registry_fixture.h"
#include "xpool/scheduler.h"

struct fixture {
        struct registry_fixture base; /* store, registry, clock */
        struct xp_scheduler *scheduler;
};

/* history: the store's event log kept (0: the default); a short one makes the loop list again. */
static inline int scheduler_fixture_setup_history(void **state, const char *name, size_t history)
{
        struct fixture *f = calloc(1, sizeof *f);
        struct xp_error err = {0};

        assert_non_null(f);
        fixture_open(&f->base, name, history);
        f->base.now_ms = 1000000;
        struct xp_scheduler_options options = {.clock = &f->base.clock, .bind_workers = 0};
        if (xp_scheduler_new(f->base.registry, &options, &f->scheduler, &err) < 0)
                fail_msg("scheduler: %s", err.msg);
        *state = f;
        return 0;
}

static inline int teardown(void **state)
{
        struct fixture *f = *state;

        xp_scheduler_free(f->scheduler);
        fixture_close(&f->base);
        free(f);
        return 0;
}

static inline int scheduler_fixture_setup(void **state, const char *name)
{
        return scheduler_fixture_setup_history(state, name, 0);
}

/* One round of the loop: what the informer has, then a pass. */
static inline void step(struct fixture *f)
{
        struct xp_error err = {0};

        if (xp_scheduler_step(f->scheduler, &err) < 0)
                fail_msg("step: %s", err.msg);
}
