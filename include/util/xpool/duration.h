/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Durations: the one grammar every duration flag takes (the server's, the agent's, the device
 * plugin's), and the two ways xpool prints one: Go's time.Duration (the kubelet's messages) and
 * kubectl's HumanDuration (the AGE columns).
 */

#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

#define XP_DURATION_DAY_MS  (24LL * 60 * 60 * 1000)
#define XP_DURATION_YEAR_MS (366 * XP_DURATION_DAY_MS) /* the longest any flag takes */

/*
 * Go's time.ParseDuration form without a sign ("40s", "5m", "1m30s", "500ms", "1.5h"; units ms,
 * s, m, h) or a plain number of seconds ("10", "0.5"), in whole milliseconds (fractions cut).
 * 0 with *ret_ms; -EINVAL with err saying what is wrong and where; -ERANGE with err when the
 * duration is below min_ms or above max_ms. *ret_ms is untouched on failure.
 */
int xp_duration_parse(
    const char *text, int64_t min_ms, int64_t max_ms, int64_t *ret_ms, struct xp_error *err);

/* Longest string the printers below write, NUL included ("<invalid>", "292277024626y"). */
#define XP_DURATION_MAX 32

/* Go's time.Duration.String() of ms >= 0: "500ms", "10s", "1.5s", "1m20s", "2h0m5s". */
void xp_duration_format(int64_t ms, char buf[static XP_DURATION_MAX]);

/*
 * kubectl's HumanDuration (k8s.io/apimachinery/pkg/util/duration): below -1 s "<invalid>", -1 s
 * "0s"; up to 119 s "Ns"; below 10 min "MmSs" ("3m2s", "5m"); below 3 h "Nm"; below 8 h "HhMm"
 * ("4h", "4h5m"); below 48 h "Nh"; below 8 d "DdHh"; below 2 y "Nd"; below 8 y "YyDd"; then "Ny",
 * a year being 365 days. Writes into buf (truncated to size, always NUL-terminated when size > 0;
 * XP_DURATION_MAX always suffices).
 */
void xp_duration_human(int64_t seconds, char *buf, size_t size);
