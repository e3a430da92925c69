/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Logging for executables and daemons. Library code logs at LOG_DEBUG only (and only under a
 * subsystem flag); main() and the HTTP layer report errors once.
 *
 * Debug output is enabled per subsystem with XPOOL_DEBUG=sched,nvml (or "all").
 */

#include <stdbool.h>
#include <syslog.h>

#include "xpool/macro.h"

/* Reads XPOOL_DEBUG and XPOOL_LOG_LEVEL (err, warning, info, debug). Safe to call again. */
void xp_log_init(void);

void xp_log_set_max_level(int level);
int xp_log_get_max_level(void);

/* True when XPOOL_DEBUG names the subsystem or "all". */
bool xp_log_debug_enabled(const char *subsystem);

/* Writes one line to stderr; `%m` is replaced by strerror(errno). Returns 0. */
int xp_log_internal(int level, const char *file, int line, const char *fmt, ...) _printf_(4, 5);

/* Like xp_log_internal but formats `%m` with strerror(-error) and returns -|error|. */
int xp_log_errno_internal(int level, int error, const char *file, int line, const char *fmt, ...)
    _printf_(5, 6);

#define xp_log(level, ...)                                                                         \
        ({                                                                                         \
                int level_ = (level);                                                              \
                level_ <= xp_log_get_max_level()                                                   \
                    ? xp_log_internal(level_, __FILE__, __LINE__, __VA_ARGS__)                     \
                    : 0;                                                                           \
        })

#define xp_log_errno(level, error, ...)                                                            \
        ({                                                                                         \
                int error_ = (error) < 0 ? -(error) : (error);                                     \
                int level__ = (level);                                                             \
                level__ <= xp_log_get_max_level()                                                  \
                    ? xp_log_errno_internal(level__, error_, __FILE__, __LINE__, __VA_ARGS__)      \
                    : -error_;                                                                     \
        })

#define xp_debug(subsystem, ...)                                                                   \
        do {                                                                                       \
                if (xp_log_debug_enabled(subsystem))                                               \
                        xp_log_internal(LOG_DEBUG, __FILE__, __LINE__, __VA_ARGS__);               \
        } while (0)
