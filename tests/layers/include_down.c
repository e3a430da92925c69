/* SPDX-License-Identifier: Apache-2.0 */
/* The control of the include probes: a file of the server includes the headers of the layers
 * below it, and compiles (tests/layers/check.sh). */
#include "xpool/error.h"
#include "xpool/object.h"
#include "xpool/registry.h"
#include "xpool/scheduler.h"
#include "xpool/store.h"

int probe_include_down(void);
int probe_include_down(void)
{
        return XP_STORE_KEY_MAX;
}
