/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

#define XP_RFC3339_MAX 32

/* The instants RFC 3339 can write: 0000-01-01T00:00:00Z to 9999-12-31T23:59:59Z. */
#define XP_RFC3339_MIN_SECONDS (-62167219200LL)
#define XP_RFC3339_MAX_SECONDS 253402300799LL

/*
 * Parses an RFC 3339 timestamp ("2026-12-02T15:51:44Z", "...44.123456Z", "...44+08:00") into
 * seconds since the epoch (fractions dropped). 0 or -EINVAL; *ret untouched on failure.
 */
int xp_time_parse_rfc3339(const char *text, int64_t *ret);

/* Formats seconds since the epoch as "YYYY-MM-DDTHH:MM:SSZ". 0, or -ERANGE outside the years
 * 0-9999. */
int xp_time_format_rfc3339(int64_t seconds, char buf[static XP_RFC3339_MAX]);

/* "YYYY-MM-DDTHH:MM:SS.ffffffZ" and its NUL. */
#define XP_MICROTIME_MAX 32

/*
 * Kubernetes' MicroTime: microseconds since the epoch. Parses any RFC 3339 timestamp the way
 * xp_time_parse_rfc3339() does, keeping the first six fraction digits (later ones are dropped,
 * as Go's formatting truncates). 0 or -EINVAL; *ret untouched on failure.
 */
int xp_time_parse_microtime(const char *text, int64_t *ret);

/* Formats in UTC with exactly six fraction digits. 0, or -ERANGE outside the years 0-9999. */
int xp_time_format_microtime(int64_t micros, char buf[static XP_MICROTIME_MAX]);

/* CLOCK_MONOTONIC now, for intervals and deadlines that must not move with the wall clock. */
int64_t xp_monotonic_ns(void);
int64_t xp_monotonic_ms(void);
