/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Caller-owned error context. Fallible functions return >= 0 on success or exactly -errno on
 * failure; when the caller passes a non-NULL `struct xp_error *`, a human message saying what
 * failed and where is written into it. Passing NULL is always allowed.
 */

#include <stddef.h>

#include "xpool/macro.h"

#define XP_ERROR_MSG_MAX 1024

struct xp_error {
        int code;                   /* the negative errno that was returned, 0 when unset */
        char msg[XP_ERROR_MSG_MAX]; /* NUL-terminated, may be truncated */
};

/* Sets *err (when not NULL) and returns code, so `return xp_errorf(err, -EINVAL, ...)` works. */
int xp_errorf(struct xp_error *err, int code, const char *fmt, ...) _printf_(3, 4);

/*
 * Prepends "<prefix>: " to the message in err (strerror(code) when none was set), adding context
 * on the way up, and returns code, so `return xp_error_prefix(err, r, "loading %s", path);` is
 * one line. err may be NULL.
 */
int xp_error_prefix(struct xp_error *err, int code, const char *fmt, ...) _printf_(3, 4);

/* Clears an error so the struct can be reused. */
void xp_error_clear(struct xp_error *err);

/* The message, or strerror(-code) when no message was set. Never NULL. */
const char *xp_error_message(const struct xp_error *err);
