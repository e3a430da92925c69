/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "xpool/object.h"

/*
 * The built-in catalog of common accelerator models: nominal fp16 and fp32 TFLOPS and compute
 * units, filled in where a backend left them zero. Matched on the model name.
 */
void xp_device_catalog_fill(struct xp_device *device);
