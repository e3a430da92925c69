/* SPDX-License-Identifier: Apache-2.0 */
/* The system's clock, and reading a clock that may be NULL. */
#include <time.h>

#include "clock.h"
#include "xpool/timeutil.h"

static int64_t system_monotonic_ms(void *userdata)
{
        (void)userdata;
        return xp_monotonic_ms();
}

static int64_t system_wall_s(void *userdata)
{
        (void)userdata;
        return (int64_t)time(NULL);
}

static const struct xp_clock system_clock = {
    .monotonic_ms = system_monotonic_ms,
    .wall_s = system_wall_s,
};

int64_t xp_clock_monotonic_ms(const struct xp_clock *clock)
{
        if (!clock)
                clock = &system_clock;
        return clock->monotonic_ms(clock->userdata);
}

int64_t xp_clock_wall_s(const struct xp_clock *clock)
{
        if (!clock)
                clock = &system_clock;
        return clock->wall_s(clock->userdata);
}
