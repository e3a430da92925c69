/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_cron_parse() (a CronJob's spec.schedule, from any client) and xp_cron_next() on what
 * it accepts. Checks: failure is -EINVAL with a message and the output untouched; an accepted
 * schedule has a bit in every field (or a delay), and its next time, if any, is after the start
 * and on a minute (or the delay) boundary.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/cron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_error err = {0};
        struct xp_cron c = {.every_s = -7};
        const int64_t start = 1796292000; /* 2026-12-03 */
        int64_t t;
        char *text;

        if (size > 700)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        if (xp_cron_parse(text, &c, &err) < 0) {
                check(err.msg[0] != '\0');
                check(c.every_s == -7);
        } else if (c.every_s > 0) {
                check(xp_cron_next(&c, NULL, start, &t) == 0 && t == start + c.every_s);
        } else {
                check(c.minutes && c.hours && c.days && c.months && c.weekdays);
                if (xp_cron_next(&c, NULL, start, &t) == 0)
                        check(t > start && t % 60 == 0);
        }
        free(text);
        return 0;
}
