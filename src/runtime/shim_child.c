/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's process between the shim's clone and its exec, and the clone itself. The shim
 * is single-threaded, yet this code keeps to system calls and its own string handling (no printf,
 * no malloc, no locale), as POSIX asks of what runs after fork and as a child sharing the shim's
 * memory must: everything it needs was prepared before.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "shim_internal.h"

/* A message built without stdio. */
struct line {
        char buf[RUNTIME_NOTIFY_MAX];
        size_t len;
};

static void put(struct line *l, const char *s)
{
        while (s && *s && l->len < sizeof(l->buf) - 1)
                l->buf[l->len++] = *s++;
}

static void put_uint(struct line *l, unsigned long v)
{
        char digits[24];
        size_t n = 0;

        do
                digits[n++] = (char)('0' + v % 10);
        while ((v /= 10) && n < sizeof(digits));
        while (n > 0 && l->len < sizeof(l->buf) - 1)
                l->buf[l->len++] = digits[--n];
}

/* Reports `what "arg": reason` over the error pipe and ends the process. */
_Noreturn static void child_fail(int errfd, int code, const char *what, const char *arg)
{
        const char *reason = strerrordesc_np(code);
        struct line l = {.len = 0};

        put(&l, what);
        put(&l, " \"");
        put(&l, arg);
        put(&l, "\": ");
        if (reason) {
                put(&l, reason);
        } else {
                put(&l, "error ");
                put_uint(&l, (unsigned long)code);
        }
        (void)!write(errfd, l.buf, l.len);
        _exit(127);
}

/* execve with the PATH search of execvpe, but over the container's PATH. */
_Noreturn static void child_exec(const struct shim *s, int errfd)
{
        const char *name = s->argv[0];
        size_t name_len = strlen(name);
        int saved = ENOENT;

        if (strchr(name, '/')) {
                execve(name, s->argv, s->env);
                child_fail(errfd, errno, "exec", name);
        }
        for (const char *p = s->path; *p;) {
                size_t len = strcspn(p, ":");
                char full[PATH_MAX];

                if (len + 1 + name_len < sizeof(full)) {
                        memcpy(full, p, len);
                        full[len] = '/';
                        memcpy(full + len + (len ? 1 : 0), name, name_len + 1);
                        execve(full, s->argv, s->env);
                        if (errno == EACCES)
                                saved = EACCES;
                        else if (errno != ENOENT && errno != ENOTDIR)
                                child_fail(errfd, errno, "exec", name);
                }
                p += len + (p[len] == ':');
        }
        child_fail(errfd, saved, "exec", name);
}

/* The pid the host (and the shim's records) know this process by. */
static pid_t host_pid(void)
{
        char buf[24];
        ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);
        pid_t pid = 0;

        /* before the container's own /proc is mounted, /proc is the host's */
        for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
                pid = pid * 10 + (buf[i] - '0');
        return pid > 0 ? pid : getpid();
}

static void take_user(const struct shim *s, int errfd)
{
        struct line id = {.len = 0};

        if (!s->set_user)
                return;
        put_uint(&id, s->group);
        if (setgroups(s->n_groups, s->groups) < 0)
                child_fail(errfd, errno, "setgroups", "");
        if (setgid(s->group) < 0)
                child_fail(errfd, errno, "setgid", id.buf);
        id.len = 0;
        memset(id.buf, 0, sizeof(id.buf));
        put_uint(&id, s->user);
        if (setuid(s->user) < 0)
                child_fail(errfd, errno, "setuid", id.buf);
}

/*
 * The signals the shim handles back to their defaults, and SIGPIPE (which it ignores), as
 * posix_spawn() does before it unblocks them: a signal arriving between the unblock and the exec
 * would otherwise run the shim's handler in this child, on the shim's memory. The child has its
 * own copy of the handlers (no CLONE_SIGHAND), so the shim's stay as they are. sigaction only.
 */
void shim_child_default_signals(void)
{
        struct sigaction dfl = {.sa_handler = SIG_DFL}, old;

        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &old) == 0 &&
                    old.sa_handler != SIG_DFL && (old.sa_handler != SIG_IGN || sig == SIGPIPE))
                        (void)sigaction(sig, &dfl, NULL);
}

_Noreturn void
shim_child_main(const struct shim *s, int sync_fd, int errfd, int in_fd, int out_fd, int err_fd)
{
        const char *what = "", *arg = "";
        sigset_t none;
        pid_t pid;
        char c;
        int null, r;

        shim_child_default_signals();
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* our pid as the host sees it first (the shim's release marker names it); the mounts
         * while the shim puts us in the cgroup (an idle node's first move waits for an RCU grace
         * period); then wait until it has. A failed mount is reported after the wait, so the
         * shim's moves find us and it reads why. */
        pid = host_pid();
        if (write(errfd, &pid, sizeof(pid)) != sizeof(pid))
                _exit(127);
        r = contain_child_mounts(&s->plan, &what, &arg);
        if (read(sync_fd, &c, 1) != 1)
                _exit(127);
        if (r < 0 || (r = contain_child_cgroup_namespace(&s->plan, &what, &arg)) < 0 ||
            (r = contain_child_own_terminals(&s->plan, s->tty ? in_fd : -1, &what, &arg)) < 0)
                child_fail(errfd, -r, what, arg);
        if (setsid() < 0)
                child_fail(errfd, errno, "setsid", s->container);
        if ((r = contain_child_before_user(&s->plan, &what, &arg)) < 0)
                child_fail(errfd, -r, what, arg);
        take_user(s, errfd);
        if ((r = contain_child_after_user(&s->plan, &what, &arg)) < 0)
                child_fail(errfd, -r, what, arg);
        if (chdir(s->working_dir) < 0)
                child_fail(errfd, errno, "chdir", s->working_dir);
        null = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
                child_fail(errfd, errno, "stdio", in_fd >= 0 ? "stdin" : "/dev/null");
        /* tty: the terminal is the session's, so ^C on it signals the foreground group */
        if (s->tty && ioctl(0, TIOCSCTTY, 0) < 0)
                child_fail(errfd, errno, "ioctl", "TIOCSCTTY");
        /* nothing of the shim's may reach the container; errfd is already close-on-exec */
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                for (int fd = 3; fd < 1024; fd++)
                        if (fd != errfd)
                                close(fd);
        if ((r = contain_child_seccomp_last(&s->plan, &what, &arg)) < 0)
                child_fail(errfd, -r, what, arg);
        child_exec(s, errfd);
}

/* Sanitizers keep per-thread state (ASan's fake stacks) that a child sharing our memory would
 * share too: their builds fork. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHILD_FORKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CHILD_FORKS 1
#endif
#endif

#define STACK_GUARD_SIZE (64 * 1024)
#define CHILD_STACK_SIZE (512 * 1024)

#ifndef CHILD_FORKS
/* A stack of stack_size with a guard below it that faults rather than let a deep call write over
 * our heap; its base (the guard's start), or NULL. */
static char *map_guarded_stack(size_t stack_size)
{
        char *m = mmap(NULL,
                       STACK_GUARD_SIZE + stack_size,
                       PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                       -1,
                       0);

        if (m == MAP_FAILED)
                return NULL;
        if (mprotect(m + STACK_GUARD_SIZE, stack_size, PROT_READ | PROT_WRITE) == 0)
                return m;
        munmap(m, STACK_GUARD_SIZE + stack_size);
        return NULL;
}

/* fn on a stack of its own; the mapping is left to the process's exit (an munmap flushes every
 * CPU's TLB). -1 when it cannot be mapped. */
static pid_t clone_vm(int (*fn)(void *), void *arg, size_t stack_size)
{
        char *stack = map_guarded_stack(stack_size);
        pid_t pid;

        if (!stack)
                return -1;
        pid = clone(fn, stack + STACK_GUARD_SIZE + stack_size, CLONE_VM | SIGCHLD, arg);
        if (pid < 0)
                munmap(stack, STACK_GUARD_SIZE + stack_size);
        return pid;
}
#endif

pid_t shim_clone(int (*fn)(void *), void *arg, size_t stack_size)
{
        pid_t pid;

#ifndef CHILD_FORKS
        pid = clone_vm(fn, arg, stack_size);
        if (pid >= 0)
                return pid;
#endif
        (void)stack_size;
        pid = fork();
        if (pid == 0)
                _exit(fn(arg));
        return pid;
}

/*
 * fn in a child that shares our memory and stops us until it exec'd or ended (vfork's contract):
 * a runtime's call costs no copy of our page tables. Its stack, mapped on the first call, serves
 * every later one: stopped meanwhile, we never run beside a child that uses it.
 */
pid_t shim_vfork(int (*fn)(void *), void *arg)
{
#ifndef CHILD_FORKS
        static char *stack;

        if (!stack)
                stack = map_guarded_stack(CHILD_STACK_SIZE);
        if (stack)
                return clone(fn,
                             stack + STACK_GUARD_SIZE + CHILD_STACK_SIZE,
                             CLONE_VM | CLONE_VFORK | SIGCHLD,
                             arg);
#endif
        return shim_clone(fn, arg, CHILD_STACK_SIZE);
}

static int child_entry(void *arg)
{
        const struct shim_child_args *a = arg;

        shim_child_main(a->s, a->sync_fd, a->errfd, a->in_fd, a->out_fd, a->err_fd);
}

pid_t shim_child_start(const struct shim_child_args *a)
{
        return shim_clone(child_entry, (void *)a, CHILD_STACK_SIZE);
}

_Noreturn void shim_exec_child_main(const struct shim *s, char *const *argv, bool tty, int errfd)
{
        struct shim cmd = *s;
        const char *what = "", *arg = "";
        sigset_t none;
        int r;

        shim_child_default_signals();
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* the helper that forked us stays outside: its end is ours */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        /* its own process group, which the helper kills as a whole */
        if (setsid() < 0)
                child_fail(errfd, errno, "setsid", s->container);
        if (tty && ioctl(0, TIOCSCTTY, 0) < 0)
                child_fail(errfd, errno, "ioctl", "TIOCSCTTY");
        if ((r = contain_child_before_user(&s->plan, &what, &arg)) < 0)
                child_fail(errfd, -r, what, arg);
        take_user(s, errfd);
        if ((r = contain_child_after_user(&s->plan, &what, &arg)) < 0)
                child_fail(errfd, -r, what, arg);
        if (chdir(s->working_dir) < 0)
                child_fail(errfd, errno, "chdir", s->working_dir);
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                for (int fd = 3; fd < 1024; fd++)
                        if (fd != errfd)
                                close(fd);
        if ((r = contain_child_seccomp_last(&s->plan, &what, &arg)) < 0)
                child_fail(errfd, -r, what, arg);
        cmd.argv = (char **)argv;
        child_exec(&cmd, errfd);
}
