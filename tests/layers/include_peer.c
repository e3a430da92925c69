/* SPDX-License-Identifier: Apache-2.0 */
/* A file of the runtime that includes the store's header: the store is beside the runtime, not
 * below it, so this must not compile (tests/layers/check.sh). */
#include "xpool/store.h"

int probe_include_peer(void);
int probe_include_peer(void)
{
        return XP_STORE_KEY_MAX;
}
