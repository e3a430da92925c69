/* SPDX-License-Identifier: Apache-2.0 */
/* A file of core that includes the scheduler core's header: sched is above core, so this must
 * not compile (tests/layers/check.sh). */
#include "xpool/sched.h"

int probe_include_up(void);
int probe_include_up(void)
{
        return XP_SCHED_SPREAD;
}
