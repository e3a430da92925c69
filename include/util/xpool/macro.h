/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Small macros every xpool file may use: scope-bound cleanup, ownership transfer, array sizes and
 * printf-style attribute helpers.
 */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define XP_ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

#define _printf_(fmt, args) __attribute__((format(printf, fmt, args)))
#define _cleanup_(f)        __attribute__((cleanup(f)))
#define _unused_            __attribute__((unused))
#define _warn_unused_       __attribute__((warn_unused_result))

/* Take a pointer out of a cleanup-scoped variable so the cleanup does not free it. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                typeof(p) taken_ = (p);                                                            \
                (p) = NULL;                                                                        \
                taken_;                                                                            \
        })

#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int taken_fd_ = (fd);                                                              \
                (fd) = -1;                                                                         \
                taken_fd_;                                                                         \
        })

static inline void xp_freep(void *p)
{
        free(*(void **)p);
}

static inline void xp_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

#define _cleanup_free_  _cleanup_(xp_freep)
#define _cleanup_close_ _cleanup_(xp_closep)

/* Declares `name_freep()` for a type whose destructor is `name_free(T *)` (NULL-safe). */
#define XP_DEFINE_FREEP(type, func)                                                                \
        static inline void func##p(type **p)                                                       \
        {                                                                                          \
                func(*p);                                                                          \
        }
