/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What libmicrohttpd's relay thread is doing, from /proc (proc(5): task/TID/stat's state and
 * task/TID/syscall). A thread woken from poll() is runnable ('R') even before it runs again, and
 * one that sleeps ('S') in poll() waits for a condition that is not there yet: asleep in poll()
 * is a fact about its work, where "no byte went out for 50 ms" was only a guess about the
 * scheduler.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "relay_thread.h"

/* The text of /proc/self/task/TID/NAME into buf (NUL-terminated): its length, or -errno. */
static ssize_t task_file(pid_t tid, const char *name, char *buf, size_t size)
{
        char path[64];
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                n = -errno;
        close(fd);
        if (n >= 0)
                buf[n] = '\0';
        return n;
}

/* The state letter of the thread (after the ')' that ends its name), or -errno. */
static int task_state(pid_t tid)
{
        char buf[512];
        ssize_t n = task_file(tid, "stat", buf, sizeof buf);
        const char *close_paren;

        if (n < 0)
                return (int)n;
        close_paren = strrchr(buf, ')');
        return close_paren && close_paren[1] == ' ' && close_paren[2] ? close_paren[2] : -EIO;
}

static bool is_wait_call(long nr)
{
#ifdef SYS_poll
        if (nr == SYS_poll)
                return true;
#endif
#ifdef SYS_select
        if (nr == SYS_select)
                return true;
#endif
        return nr == SYS_ppoll || nr == SYS_pselect6;
}

int relay_thread_waits(pid_t tid)
{
        char buf[256];
        long nr;
        ssize_t n;
        int state = task_state(tid);

        if (state < 0)
                return state;
        n = task_file(tid, "syscall", buf, sizeof buf);
        if (n < 0)
                return (int)n;
        /* "running", or "-1 ..." (blocked outside a system call) */
        if (sscanf(buf, "%ld", &nr) != 1 || !is_wait_call(nr))
                return 0;
        /* the state again: the thread may have woken between the two reads */
        return state == 'S' && task_state(tid) == 'S';
}
