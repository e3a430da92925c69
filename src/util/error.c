/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xpool/error.h"

int xp_errorf(struct xp_error *err, int code, const char *fmt, ...)
{
        if (err) {
                va_list ap;

                va_start(ap, fmt);
                vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
                va_end(ap);
                err->code = code;
        }
        return code;
}

int xp_error_prefix(struct xp_error *err, int code, const char *fmt, ...)
{
        char prefix[XP_ERROR_MSG_MAX];
        char joined[XP_ERROR_MSG_MAX];
        va_list ap;

        if (!err)
                return code;
        if (err->code == 0)
                err->code = code;

        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);

        snprintf(joined, sizeof(joined), "%s: %s", prefix, xp_error_message(err));
        memcpy(err->msg, joined, sizeof(err->msg));
        return code;
}

void xp_error_clear(struct xp_error *err)
{
        if (err) {
                err->code = 0;
                err->msg[0] = '\0';
        }
}

const char *xp_error_message(const struct xp_error *err)
{
        if (!err)
                return "unknown error";
        if (err->msg[0])
                return err->msg;
        return err->code ? strerror(-err->code) : "no error";
}
