/* SPDX-License-Identifier: Apache-2.0 */
/* The control of the link probe: a file of the registry that calls the store and util below it
 * links (tests/layers/check.sh). */
#include <stddef.h>

#include "xpool/map.h"
#include "xpool/store.h"

int probe_call_down(void);
int probe_call_down(void)
{
        json_t *obj = NULL;
        uint64_t version = 0;

        return xp_store_get(NULL, "pods", "default", "p", &obj, &version, NULL) +
               (int)xp_hash_string("p");
}
