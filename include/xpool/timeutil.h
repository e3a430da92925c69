/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

#define XP_RFC3339_MAX 32

/*
 * Parses an RFC 3339 timestamp ("2026-12-02T15:51:44Z", "...44.123456Z", "...44+08:00") into
 * seconds since the epoch (fractions dropped). 0 or -EINVAL; *ret untouched on failure.
 */
int xp_time_parse_rfc3339(const char *text, int64_t *ret);

/* Formats seconds since the epoch as "YYYY-MM-DDTHH:MM:SSZ". Returns buf. */
char *xp_time_format_rfc3339(int64_t seconds, char buf[static XP_RFC3339_MAX]);
