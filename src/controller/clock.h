/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The controllers' clock, injected so that a test decides what time it is: a controller reads
 * every time it acts on through one, and the system's is the default. Intervals and deadlines
 * that must not move with the wall clock use the monotonic one; what is written into objects
 * (timestamps, deletion deadlines) uses the wall clock.
 */

#include <stdint.h>

struct xp_clock {
        int64_t (*monotonic_ms)(void *userdata); /* CLOCK_MONOTONIC, in ms */
        int64_t (*wall_s)(void *userdata);       /* seconds since the epoch */
        void *userdata;
};

/* The clock's monotonic time in ms; NULL is the system's. */
int64_t xp_clock_monotonic_ms(const struct xp_clock *clock);
/* The clock's wall time in seconds since the epoch; NULL is the system's. */
int64_t xp_clock_wall_s(const struct xp_clock *clock);
