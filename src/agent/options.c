/* SPDX-License-Identifier: Apache-2.0 */
/* What the agent's command line needs parsed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/agent.h"

#define DAY_MS (24LL * 3600 * 1000)

int xp_agent_parse_duration_ms(const char *text, int64_t *ret_ms)
{
        static const struct {
                const char *unit;
                int64_t ms;
        } units[] = {
            {"ms", 1},
            {"s", 1000},
            {"", 1000},
            {"m", 60 * 1000},
            {"h", 3600 * 1000},
        };
        char *end;
        double value;

        if (!text || !(text[0] >= '0' && text[0] <= '9'))
                return -EINVAL;
        errno = 0;
        value = strtod(text, &end);
        if (errno != 0 || end == text)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                double ms;

                if (strcmp(end, units[i].unit) != 0)
                        continue;
                ms = value * (double)units[i].ms;
                if (!(ms >= 1) || ms > (double)DAY_MS)
                        return -EINVAL;
                *ret_ms = (int64_t)ms;
                return 0;
        }
        return -EINVAL;
}
