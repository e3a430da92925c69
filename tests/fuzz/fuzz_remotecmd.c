/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the terminal size messages of the resize channel (src/http/remotecmd.h): arbitrary
 * bytes as one message. Checks: accepted only within the size limit, refused with a reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "xpool/remotecmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *why = NULL;
        uint16_t w = 0, h = 0;
        int r = xp_rc_parse_resize(data, size, &w, &h, &why);

        check(r == 0 ? size <= XP_RC_RESIZE_MAX : (r == -EINVAL && why != NULL));
        return 0;
}
