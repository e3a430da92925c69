/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_duration_parse() (every duration flag: the server's --node-monitor-grace-period and
 * --pod-eviction-timeout, the agent's, the device plugin's). The input is the flag's text. Checks:
 * success gives a value in [0, a year] and no message; failure is -EINVAL or -ERANGE with a message
 * and the output untouched.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_error err = {0};
        int64_t ms = -7;
        char *text;
        int r;

        if (size > 256)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        r = xp_duration_parse(text, 0, XP_DURATION_YEAR_MS, &ms, &err);
        if (r >= 0) {
                check(r == 0 && ms >= 0 && ms <= XP_DURATION_YEAR_MS);
        } else {
                check(r == -EINVAL || r == -ERANGE);
                check(err.msg[0] != '\0');
                check(ms == -7);
        }
        free(text);
        return 0;
}
