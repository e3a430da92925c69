/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * CPU lists as the kernel writes them in cpulist files and takes them in cpuset.cpus and
 * cpuset.mems ("0-3,8-11"): the one parser and printer of device discovery, the scheduler's
 * placements and the runtime's cgroup limits.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XP_CPU_MAX 8192

struct xp_cpuset {
        uint64_t bits[XP_CPU_MAX / 64];
};

/*
 * Parses a cpulist: ranges and single CPUs separated by commas, with the line end the kernel
 * writes (leading spaces and a trailing newline are taken). "" is the empty set. -EINVAL with
 * nothing changed on bad syntax or CPUs >= XP_CPU_MAX.
 */
int xp_cpuset_parse(const char *text, struct xp_cpuset *ret);
/* Writes the canonical cpulist ("0-3,8-11", "" when empty). Caller frees. -ENOMEM. */
int xp_cpuset_format(const struct xp_cpuset *set, char **ret);
size_t xp_cpuset_count(const struct xp_cpuset *set);
bool xp_cpuset_has(const struct xp_cpuset *set, unsigned cpu);
/* Adds cpu; one >= XP_CPU_MAX is ignored. */
void xp_cpuset_add(struct xp_cpuset *set, unsigned cpu);
