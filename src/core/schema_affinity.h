/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "schema.h"

extern const struct xp_schema xp_affinity_schema;
extern const struct xp_schema xp_toleration_schema;
extern const struct xp_schema xp_taint_schema;
