/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A pod's terminal status is final (docs/agent.md, "A terminal status is final"). The agent's
 * writers each build a whole status from their own snapshot of the pod (the pod sync from the pod
 * it last synced; the housekeeping's eviction and the device health from the watch's) and each
 * write replaces the stored status whole, so a status built from a snapshot older than an
 * eviction would put the pod back to Running, or leave it Failed without the eviction's reason.
 * The first status of a pod with phase Succeeded or Failed fixes its phase, reason and message
 * (a later one of that phase may add a reason where it had none) and its conditions are kept:
 * every later status of the pod takes those words and gets back a condition it lacks. Pure.
 */

#include <jansson.h>

/*
 * Makes status (a v1 PodStatus, changed in place) keep what finals (uid -> what the pod's
 * terminal status fixed) holds for the pod uid, and records there what a terminal status fixes.
 * 1: status is terminal (now), 0: it is not, -ENOMEM (status may be partly changed).
 */
int xp_agent_final_status(json_t *finals, const char *uid, json_t *status);
