/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the files of src/kube share and nothing outside uses. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/kubeinventory.h"

/*
 * The inventory annotation's text expanded into the JSON of a Node's status.xpool (not yet
 * decoded by the codec: a caller may put it into a Node and decode that once), with the
 * allocation when ret_allocation is not NULL. Errors as xp_kube_inventory_decode().
 */
int xp_kube_inventory_expand(const char *text,
                             size_t len,
                             json_t **ret,
                             struct xp_kube_allocation *ret_allocation,
                             struct xp_error *err);

/*
 * When the publisher should patch next, a pure function of the clock: changed says the desired
 * labels or annotation differ from what was last patched. Returns 0 to patch now, or how many ms
 * to wait before asking again (INT64_MAX: nothing to do). last_patch_ms < 0: never patched.
 */
int64_t xp_kube_publish_wait_ms(int64_t now_ms,
                                bool changed,
                                int64_t last_patch_ms,
                                int64_t min_interval_ms,
                                int64_t resync_ms);
