/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The environment a container gets for the devices of its placement. Pure: no I/O, no globals.
 * The device cgroup decides what a pod can open; these variables make the vendor runtimes
 * enumerate exactly the allocated devices, so applications see 0..n-1 without errors on the
 * devices they may not open. docs/agent.md ("Device environment") is the user's view.
 */

#include "xpool/error.h"
#include "xpool/object.h"
#include "xpool/placement.h"

/* A placement naming more devices than this is refused (-E2BIG). */
#define XP_DEVENV_DEVICES_MAX 1024

/*
 * For each device resource, the vendor's visibility variable(s) naming exactly the allocated
 * devices (resources of unknown vendors get none), plus the vendor-neutral
 *   XPOOL_VISIBLE_DEVICES  the device ids, comma-separated, in placement order;
 *   XPOOL_DEVICES          JSON array of {"resource","id","index","milli"} with "kind",
 *                          "vendor" and "model" added when node knows the device;
 *   XPOOL_DEVICE_SHARE     only when a device is shared (milli < 1000): "id=milli,...".
 * node (may be NULL, borrowed for the call) gives kind, vendor and model by id from
 * status.xpool; its vendor also picks the variables for a resource name the table lacks.
 *
 * *ret is a NULL-terminated array of "NAME=value" strings sorted by NAME (caller frees with
 * xp_devenv_free()). An empty placement gives XPOOL_VISIBLE_DEVICES= and XPOOL_DEVICES=[].
 * -EINVAL with err naming the field (placement.devices[i].id, ...) for a device without resource
 * or id, an id with a comma, '=', space or control character, a negative index, milli outside
 * 1..1000, or a device listed twice; -E2BIG over XP_DEVENV_DEVICES_MAX; -ENOMEM. *ret is
 * untouched on failure.
 */
int xp_devenv_build(const struct xp_placement *placement,
                    const struct xp_node *node,
                    char ***ret,
                    struct xp_error *err);

/* Frees an array from xp_devenv_build(); NULL is allowed. */
void xp_devenv_free(char **env);
XP_DEFINE_FREEP(char *, xp_devenv_free)
