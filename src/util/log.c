/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "xpool/log.h"

#define DEBUG_LIST_MAX 256

static int max_level = LOG_INFO;
static char debug_list[DEBUG_LIST_MAX];

static const struct {
        const char *name;
        int level;
} level_names[] = {
    {"emerg", LOG_EMERG},
    {"alert", LOG_ALERT},
    {"crit", LOG_CRIT},
    {"err", LOG_ERR},
    {"error", LOG_ERR},
    {"warning", LOG_WARNING},
    {"warn", LOG_WARNING},
    {"notice", LOG_NOTICE},
    {"info", LOG_INFO},
    {"debug", LOG_DEBUG},
};

static const char *level_label(int level)
{
        switch (level) {
        case LOG_EMERG:
        case LOG_ALERT:
        case LOG_CRIT:
        case LOG_ERR:
                return "error";
        case LOG_WARNING:
                return "warning";
        case LOG_NOTICE:
        case LOG_INFO:
                return "info";
        default:
                return "debug";
        }
}

void xp_log_init(void)
{
        const char *level = getenv("XPOOL_LOG_LEVEL");
        const char *debug = getenv("XPOOL_DEBUG");

        if (level) {
                for (size_t i = 0; i < XP_ELEMENTSOF(level_names); i++)
                        if (strcasecmp(level, level_names[i].name) == 0)
                                max_level = level_names[i].level;
        }

        debug_list[0] = '\0';
        if (debug && *debug) {
                snprintf(debug_list, sizeof(debug_list), ",%s,", debug);
                if (max_level < LOG_DEBUG)
                        max_level = LOG_DEBUG;
        }
}

void xp_log_set_max_level(int level)
{
        max_level = level;
}

int xp_log_get_max_level(void)
{
        return max_level;
}

bool xp_log_debug_enabled(const char *subsystem)
{
        char needle[64];

        if (!debug_list[0])
                return false;
        if (strstr(debug_list, ",all,"))
                return true;
        snprintf(needle, sizeof(needle), ",%s,", subsystem);
        return strstr(debug_list, needle) != NULL;
}

/* Replaces %m ourselves so the errno to print can be passed explicitly. */
static void expand_errno(char *out, size_t size, const char *fmt, int error)
{
        const char *text = strerror(error);
        size_t o = 0;

        for (const char *p = fmt; *p && o + 1 < size; p++) {
                if (p[0] == '%' && p[1] == 'm') {
                        for (const char *t = text; *t && o + 1 < size; t++)
                                out[o++] = *t;
                        p++;
                } else if (p[0] == '%' && p[1] == '%') {
                        out[o++] = '%';
                        if (o + 1 < size)
                                out[o++] = '%';
                        p++;
                } else {
                        out[o++] = *p;
                }
        }
        out[o] = '\0';
}

static void log_write(int level, int error, const char *file, int line, const char *fmt, va_list ap)
{
        char expanded[1024];
        char message[2048];
        struct timespec now;
        struct tm tm;

        expand_errno(expanded, sizeof(expanded), fmt, error);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(message, sizeof(message), expanded, ap);
#pragma GCC diagnostic pop

        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        if (level >= LOG_DEBUG)
                fprintf(stderr,
                        "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s:%d: %s\n",
                        tm.tm_year + 1900,
                        tm.tm_mon + 1,
                        tm.tm_mday,
                        tm.tm_hour,
                        tm.tm_min,
                        tm.tm_sec,
                        now.tv_nsec / 1000000,
                        level_label(level),
                        file,
                        line,
                        message);
        else
                fprintf(stderr,
                        "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s\n",
                        tm.tm_year + 1900,
                        tm.tm_mon + 1,
                        tm.tm_mday,
                        tm.tm_hour,
                        tm.tm_min,
                        tm.tm_sec,
                        now.tv_nsec / 1000000,
                        level_label(level),
                        message);
}

int xp_log_internal(int level, const char *file, int line, const char *fmt, ...)
{
        int saved = errno;
        va_list ap;

        va_start(ap, fmt);
        log_write(level, saved, file, line, fmt, ap);
        va_end(ap);
        errno = saved;
        return 0;
}

int xp_log_errno_internal(int level, int error, const char *file, int line, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        log_write(level, error, file, line, fmt, ap);
        va_end(ap);
        return -error;
}
