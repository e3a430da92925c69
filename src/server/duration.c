/* SPDX-License-Identifier: Apache-2.0 */
/* The duration grammar of the server's flags (--node-monitor-grace-period, ...). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "xpool/macro.h"

int xp_server_parse_duration(const char *text, int64_t *ret_ms, struct xp_error *err)
{
        static const struct {
                const char *unit;
                int64_t ms;
        } units[] = {
            {"ms", 1},
            {"s", 1000},
            {"m", 60 * 1000},
            {"h", 60 * 60 * 1000},
        };
        const int64_t max_ms = (int64_t)366 * 24 * 60 * 60 * 1000;
        const char *p = text;
        int64_t total = 0;

        if (!text || !text[0])
                return xp_errorf(err, -EINVAL, "an empty duration: expected e.g. 40s or 5m");
        for (;;) {
                char *end;
                double v;
                size_t best = XP_ELEMENTSOF(units); /* the longest unit that matches: ms, not m */

                if (*p < '0' || *p > '9')
                        return xp_errorf(
                            err, -EINVAL, "duration '%s': expected a number at '%s'", text, p);
                errno = 0;
                v = strtod(p, &end);
                if (errno != 0 || end == p)
                        return xp_errorf(
                            err, -EINVAL, "duration '%s': bad number at '%s'", text, p);
                p = end;
                if (!*p && total == 0 && p != text) {
                        /* a plain number: seconds */
                        if (v * 1000 > (double)max_ms)
                                return xp_errorf(
                                    err, -ERANGE, "duration '%s': longer than a year", text);
                        *ret_ms = (int64_t)(v * 1000);
                        return 0;
                }
                for (size_t i = 0; i < XP_ELEMENTSOF(units); i++)
                        if (strncmp(p, units[i].unit, strlen(units[i].unit)) == 0 &&
                            (best == XP_ELEMENTSOF(units) ||
                             strlen(units[i].unit) > strlen(units[best].unit)))
                                best = i;
                if (best == XP_ELEMENTSOF(units))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "duration '%s': unknown unit at '%s' (ms, s, m or h)",
                                         text,
                                         p);
                if (v * (double)units[best].ms + (double)total > (double)max_ms)
                        return xp_errorf(err, -ERANGE, "duration '%s': longer than a year", text);
                total += (int64_t)(v * (double)units[best].ms);
                p += strlen(units[best].unit);
                if (!*p)
                        break;
        }
        *ret_ms = total;
        return 0;
}
