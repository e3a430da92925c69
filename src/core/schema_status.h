/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "schema.h"

/* Pod conditions carry lastProbeTime, Node conditions lastHeartbeatTime; one struct serves both. */
extern const struct xp_schema xp_pod_condition_schema;
extern const struct xp_schema xp_node_condition_schema;
