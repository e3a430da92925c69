/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shims' watch (src/runtime/shimwatch.c) over real processes: a shim that ends is named once
 * and its watch dropped; a duplicate or a stale pid adds nothing; running out of memory while
 * naming the ended ones loses none (they stay watched and the next take names them); hundreds
 * watched at once; and no pidfd is left open on any of these paths.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/runtime_internal.h"

#define MANY 300

/* reallocarray() succeeds this many more times, then fails; -1: never fails. */
static int reallocs_left = -1;

/* The one shimwatch_take() grows its list of uids with: failed on demand. */
void *reallocarray(void *ptr, size_t nmemb, size_t size)
{
        if (reallocs_left == 0) {
                errno = ENOMEM;
                return NULL;
        }
        if (reallocs_left > 0)
                reallocs_left--;
        if (size && nmemb > SIZE_MAX / size) {
                errno = ENOMEM;
                return NULL;
        }
        return realloc(ptr, nmemb * size);
}

static size_t open_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        size_t n = 0;

        assert_non_null(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* A process that waits to be killed, as a shim stands in for; its start time in *start. */
static pid_t shim_like(uint64_t *start)
{
        pid_t pid = fork();
        char state;

        assert_true(pid >= 0);
        if (pid == 0) {
                for (;;)
                        pause();
        }
        assert_int_equal(runtime_proc_start(pid, start, &state), 0);
        return pid;
}

static void end(pid_t pid)
{
        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
}

static bool ready(const struct shimwatch *w)
{
        struct pollfd p = {.fd = shimwatch_fd(w), .events = POLLIN};

        return poll(&p, 1, 0) > 0;
}

static void free_uids(char **uids, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(uids[i]);
        free(uids);
}

static int uid_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The uids taken are pod-000 ... pod-(count-1), each once. */
static void expect_pods(char **uids, size_t n, size_t count)
{
        char uid[32];

        assert_int_equal(n, count);
        qsort(uids, n, sizeof(*uids), uid_cmp);
        for (size_t i = 0; i < n; i++) {
                snprintf(uid, sizeof(uid), "pod-%03zu", i);
                assert_string_equal(uids[i], uid);
        }
}

struct fixture {
        int inotify; /* stands in for the announcements' inotify: any pollable fd */
        struct shimwatch *w;
        size_t fds_before;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->fds_before = open_fds();
        f->inotify = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(f->inotify >= 0);
        assert_int_equal(shimwatch_new(f->inotify, &f->w), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        shimwatch_free(f->w);
        close(f->inotify);
        assert_int_equal(open_fds(), f->fds_before);
        free(f);
        return 0;
}

static void ended_shim_named_once(void **state)
{
        struct fixture *f = *state;
        size_t base = open_fds(), n = 0;
        char **uids = NULL;
        uint64_t start;
        pid_t pid = shim_like(&start);

        assert_int_equal(shimwatch_add(f->w, "pod-a", pid, start), 0);
        assert_int_equal(open_fds(), base + 1);
        /* again, as each list adds every running shim: nothing new */
        assert_int_equal(shimwatch_add(f->w, "pod-a", pid, start), 0);
        assert_int_equal(shimwatch_count(f->w), 1);
        assert_int_equal(open_fds(), base + 1);
        /* another start time: the pid is another process now; its pidfd is not kept */
        assert_int_equal(shimwatch_add(f->w, "pod-b", pid, start + 1), -ESRCH);
        assert_int_equal(shimwatch_count(f->w), 1);
        assert_int_equal(open_fds(), base + 1);
        assert_int_equal(shimwatch_take(f->w, &uids, &n), 0);
        assert_int_equal(n, 0);
        assert_false(ready(f->w));
        end(pid);
        assert_true(ready(f->w));
        assert_int_equal(shimwatch_take(f->w, &uids, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(uids[0], "pod-a");
        assert_int_equal(shimwatch_count(f->w), 0);
        assert_int_equal(open_fds(), base);
        assert_false(ready(f->w));
        assert_int_equal(shimwatch_take(f->w, &uids, &n), 0);
        assert_int_equal(n, 1);
        /* a pid that is gone: nothing opened */
        assert_int_equal(shimwatch_add(f->w, "pod-c", pid, start), -ESRCH);
        assert_int_equal(open_fds(), base);
        free_uids(uids, n);
}

static void out_of_memory_loses_none(void **state)
{
        struct fixture *f = *state;
        size_t base = open_fds(), n = 0;
        char **uids = NULL;
        uint64_t start[3];
        pid_t pid[3];
        char uid[16];

        for (int i = 0; i < 3; i++) {
                pid[i] = shim_like(&start[i]);
                snprintf(uid, sizeof(uid), "pod-%03d", i);
                assert_int_equal(shimwatch_add(f->w, uid, pid[i], start[i]), 0);
        }
        for (int i = 0; i < 3; i++)
                end(pid[i]);
        /* nothing can be named: all stay watched, and the event fd says so */
        reallocs_left = 0;
        assert_int_equal(shimwatch_take(f->w, &uids, &n), -ENOMEM);
        assert_int_equal(n, 0);
        assert_int_equal(shimwatch_count(f->w), 3);
        assert_true(ready(f->w));
        /* one named, then memory runs out: the others stay */
        reallocs_left = 1;
        assert_int_equal(shimwatch_take(f->w, &uids, &n), -ENOMEM);
        assert_int_equal(n, 1);
        assert_int_equal(shimwatch_count(f->w), 2);
        assert_int_equal(open_fds(), base + 2);
        reallocs_left = -1;
        assert_int_equal(shimwatch_take(f->w, &uids, &n), 0);
        expect_pods(uids, n, 3);
        assert_int_equal(shimwatch_count(f->w), 0);
        assert_false(ready(f->w));
        assert_int_equal(open_fds(), base);
        free_uids(uids, n);
}

/* Hundreds watched (a node's pods), each added again as every list does, then all ended. */
static void hundreds(void **state)
{
        struct fixture *f = *state;
        size_t base = open_fds(), n = 0;
        char **uids = NULL;
        uint64_t start;
        pid_t pid = shim_like(&start);
        char uid[32];

        for (int round = 0; round < 2; round++)
                for (int i = 0; i < MANY; i++) {
                        snprintf(uid, sizeof(uid), "pod-%03d", i);
                        assert_int_equal(shimwatch_add(f->w, uid, pid, start), 0);
                }
        assert_int_equal(shimwatch_count(f->w), MANY);
        assert_int_equal(open_fds(), base + MANY);
        end(pid);
        assert_int_equal(shimwatch_take(f->w, &uids, &n), 0);
        expect_pods(uids, n, MANY);
        assert_int_equal(shimwatch_count(f->w), 0);
        assert_int_equal(open_fds(), base);
        free_uids(uids, n);
}

/* Freed with shims still watched: their pidfds are closed too (teardown counts). */
static void free_closes_all(void **state)
{
        struct fixture *f = *state;
        uint64_t start;
        pid_t pid = shim_like(&start);

        assert_int_equal(shimwatch_add(f->w, "pod-x", pid, start), 0);
        assert_int_equal(shimwatch_add(f->w, "pod-y", pid, start), 0);
        assert_int_equal(shimwatch_count(f->w), 2);
        end(pid);
}

/* A pod whose exits are all read stops being watched: its shims' ends name it no more, while
 * another pod's shim, watched beside it, still does. */
static void forgotten_pod_not_named(void **state)
{
        struct fixture *f = *state;
        uint64_t start[3];
        pid_t pid[3] = {shim_like(&start[0]), shim_like(&start[1]), shim_like(&start[2])};
        char **uids = NULL;
        size_t n = 0;

        assert_int_equal(shimwatch_add(f->w, "pod-done", pid[0], start[0]), 0);
        assert_int_equal(shimwatch_add(f->w, "pod-done", pid[1], start[1]), 0);
        assert_int_equal(shimwatch_add(f->w, "pod-000", pid[2], start[2]), 0);
        shimwatch_forget_pod(f->w, "pod-done");
        assert_int_equal(shimwatch_count(f->w), 1);
        for (size_t i = 0; i < 3; i++)
                end(pid[i]);
        assert_true(ready(f->w));
        assert_int_equal(shimwatch_take(f->w, &uids, &n), 0);
        expect_pods(uids, n, 1);
        assert_int_equal(shimwatch_count(f->w), 0);
        free_uids(uids, n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(ended_shim_named_once, setup, teardown),
            cmocka_unit_test_setup_teardown(out_of_memory_loses_none, setup, teardown),
            cmocka_unit_test_setup_teardown(hundreds, setup, teardown),
            cmocka_unit_test_setup_teardown(free_closes_all, setup, teardown),
            cmocka_unit_test_setup_teardown(forgotten_pod_not_named, setup, teardown),
        };

        int probe = (int)syscall(SYS_pidfd_open, getpid(), 0);

        if (probe < 0) {
                printf("SKIP: no pidfd_open here (%s; Linux 5.3 has it)\n", strerror(errno));
                return 77;
        }
        close(probe);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
