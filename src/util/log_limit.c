/* SPDX-License-Identifier: Apache-2.0 */
/* The log rate of a state that lasts (xpool/log_limit.h). */
#include "xpool/log_limit.h"

bool xp_log_limit_check(struct xp_log_limit *limit,
                        uint64_t digest,
                        int64_t now_ms,
                        int64_t interval_ms,
                        uint64_t *ret_held)
{
        if (limit->said && digest == limit->digest && now_ms - limit->said_ms < interval_ms) {
                limit->held++;
                return false;
        }
        if (ret_held)
                *ret_held = limit->said && digest == limit->digest ? limit->held : 0;
        *limit = (struct xp_log_limit){.digest = digest, .said_ms = now_ms, .said = true};
        return true;
}

void xp_log_limit_reset(struct xp_log_limit *limit)
{
        *limit = (struct xp_log_limit){0};
}
