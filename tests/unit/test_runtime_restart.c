/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starts interrupted by the death of the agent (docs/agent.md, "Interrupted starts"), against
 * real shims: this binary is its own shim (main() runs xp_shim_main() for "__shim"). The "agent"
 * is a forked child that opens its own runtime on the same directories and is SIGKILLed while its
 * shim is held up opening the container's log, a FIFO. The container appends a line to a file
 * each time it runs, so "ran exactly once" is counted, not assumed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"
#include "xpool/runtime.h"

struct fixture {
        struct tmpdir *tmp;
        char state[128], logs[128], ran[160], script[256];
        struct xp_runtime *rt;
};

/* Unique per test process, so runs in parallel never share a cgroup xpool/<uid>/<container>. */
static char cname[32];

static char *const default_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};

/* The test's directory, which its containers write (the rest of the node is read-only to them,
 * their /tmp their own); the runtime copies it. */
static const char *const *shared(const struct fixture *f)
{
        static const char *paths[2];

        paths[0] = f->tmp->dir;
        return paths;
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct xp_error err = {0};

        assert_non_null(f);
        tmpdir_setup((void **)&f->tmp, "restart", "data");
        snprintf(f->state, sizeof(f->state), "%s/containers", f->tmp->path);
        snprintf(f->logs, sizeof(f->logs), "%s/logs", f->tmp->path);
        snprintf(f->ran, sizeof(f->ran), "%s/ran", f->tmp->dir);
        snprintf(f->script, sizeof(f->script), "echo ran >>%s; echo hello", f->ran);
        assert_int_equal(xp_runtime_open(&(struct xp_runtime_options){.state_dir = f->state,
                                                                      .log_dir = f->logs,
                                                                      .share_paths = shared(f)},
                                         &f->rt,
                                         &err),
                         0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        struct xp_container_record *v = NULL;
        size_t n = 0;

        if (xp_runtime_list(f->rt, &v, &n, NULL) == 0)
                for (size_t i = 0; i < n; i++) {
                        if (!v[i].exited)
                                (void)xp_runtime_kill(
                                    f->rt, v[i].pod_uid, v[i].container, SIGKILL, NULL);
                        for (int k = 0;
                             k < 100 &&
                             xp_runtime_remove(f->rt, v[i].pod_uid, v[i].container, NULL) == -EBUSY;
                             k++)
                                usleep(20000);
                }
        xp_container_records_free(v, n);
        xp_runtime_free(f->rt);
        tmpdir_teardown((void **)&f->tmp);
        free(f);
        return 0;
}

static struct xp_container_launch launch_of(struct fixture *f, const char *uid, unsigned attempt)
{
        static char *argv[4];

        argv[0] = "sh";
        argv[1] = "-c";
        argv[2] = f->script;
        argv[3] = NULL;
        return (struct xp_container_launch){
            .pod_uid = uid,
            .pod_namespace = "default",
            .pod_name = "pod",
            .container = cname,
            .attempt = attempt,
            .argv = argv,
            .env = default_env,
        };
}

static void path_of(struct fixture *f, const char *uid, const char *leaf, char buf[static 512])
{
        snprintf(buf, 512, "%s/%s/%s/%s", f->state, uid, cname, leaf);
}

static bool exists(const char *path)
{
        return access(path, F_OK) == 0;
}

/* How many times the container ran. */
static int runs(struct fixture *f)
{
        FILE *fp = fopen(f->ran, "r");
        int n = 0, c;

        if (!fp)
                return 0;
        while ((c = fgetc(fp)) != EOF)
                n += c == '\n';
        fclose(fp);
        return n;
}

static void sleep_ms(long ms)
{
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

        nanosleep(&ts, NULL);
}

/* The state and session of pid from /proc/PID/stat; false when there is no such process. */
static bool proc_stat(pid_t pid, char *ret_state, int *ret_session)
{
        char path[64], buf[512], *p;
        int ppid, pgrp;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        return p && sscanf(p + 1, " %c %d %d %d", ret_state, &ppid, &pgrp, ret_session) == 4;
}

/* Whether pid runs (a zombie does not: our pid 1 may take its time to reap it). */
static bool alive(pid_t pid)
{
        char state;
        int session;

        return proc_stat(pid, &state, &session) && state != 'Z' && state != 'X';
}

static void wait_dead(pid_t pid)
{
        for (int i = 0; i < 3000 && alive(pid); i++)
                sleep_ms(10);
        assert_false(alive(pid));
}

/* Whether pid leads its own session: the shim after detaching (its first process does not). */
static bool session_leader(pid_t pid)
{
        char state;
        int session;

        return proc_stat(pid, &state, &session) && session == (int)pid;
}

/* The pid of the shim of uid's container (its argv names the state directory, and it has
 * detached: the first process, about to exit, does not count), 0: none. */
static pid_t find_shim(struct fixture *f, const char *uid)
{
        char dir[512], path[64], buf[4096];
        struct dirent *e;
        pid_t found = 0;
        DIR *d = opendir("/proc");

        snprintf(dir, sizeof(dir), "%s/%s/%s", f->state, uid, cname);
        assert_non_null(d);
        while (!found && (e = readdir(d))) {
                ssize_t n;
                int fd;

                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                /* argv: EXE __shim DIR */
                for (char *a = buf; a < buf + n; a += strlen(a) + 1)
                        if (strcmp(a, "__shim") == 0 && a + strlen(a) + 1 < buf + n &&
                            strcmp(a + strlen(a) + 1, dir) == 0 &&
                            session_leader((pid_t)atoi(e->d_name)))
                                found = (pid_t)atoi(e->d_name);
        }
        closedir(d);
        return found;
}

/* The container's log made a FIFO: its shim blocks opening it until someone reads. */
static void fifo_log(struct fixture *f, const char *uid, char path[static 512])
{
        char dir[512];

        snprintf(dir, sizeof(dir), "%s/default_pod_%s", f->logs, uid);
        mkdir(f->logs, 0755);
        mkdir(dir, 0755);
        snprintf(dir, sizeof(dir), "%s/default_pod_%s/%s", f->logs, uid, cname);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(path, 512, "%s/0.log", dir);
        assert_int_equal(mkfifo(path, 0644), 0);
}

/*
 * An "agent" (a child with its own runtime) starts uid's container and is SIGKILLed while the
 * shim waits on the FIFO log, i.e. between writing the start's state and hearing from the shim.
 * Returns the shim's pid.
 */
static pid_t agent_killed_mid_start(struct fixture *f, const char *uid)
{
        char spec[512];
        pid_t agent, shim = 0;
        int status;

        path_of(f, uid, "spec.json", spec);
        agent = fork();
        assert_true(agent >= 0);
        if (agent == 0) {
                struct xp_container_launch l = launch_of(f, uid, 0);
                struct xp_container_record rec = {0};
                struct xp_runtime *rt = NULL;

                if (xp_runtime_open(&(struct xp_runtime_options){.state_dir = f->state,
                                                                 .log_dir = f->logs,
                                                                 .share_paths = shared(f)},
                                    &rt,
                                    NULL) < 0)
                        _exit(2);
                (void)xp_runtime_start(rt, &l, &rec, NULL);
                _exit(3); /* it never gets here: the shim waits for its log */
        }
        for (int i = 0; i < 3000 && !(exists(spec) && (shim = find_shim(f, uid))); i++)
                sleep_ms(10);
        assert_true(shim > 0);
        sleep_ms(50);
        assert_int_equal(waitpid(agent, &status, WNOHANG), 0); /* still in the start */
        assert_int_equal(kill(agent, SIGKILL), 0);
        assert_int_equal(waitpid(agent, &status, 0), agent);
        return shim;
}

static size_t listed(struct fixture *f, const char *uid, struct xp_container_record *ret)
{
        struct xp_container_record *v = NULL;
        size_t n = 0;

        assert_int_equal(xp_runtime_list_pod(f->rt, uid, &v, &n, NULL), 0);
        if (n > 0 && ret) {
                *ret = v[0];
                v[0] = (struct xp_container_record){0};
        }
        xp_container_records_free(v, n);
        return n;
}

/* Waits (up to 30 s) until uid's container has exited; fills *ret. */
static void wait_exit(struct fixture *f, const char *uid, struct xp_container_record *ret)
{
        for (int i = 0; i < 1500; i++) {
                *ret = (struct xp_container_record){0};
                if (listed(f, uid, ret) == 1 && ret->exited)
                        return;
                xp_container_record_clear(ret);
                sleep_ms(20);
        }
        fail_msg("container %s did not exit", uid);
}

/* The shim outlived the agent: the next start waits for it and finds the container started. */
static void interrupted_start_is_finished(void **state)
{
        struct fixture *f = *state;
        struct xp_container_launch l = launch_of(f, "uid-finish", 0);
        struct xp_container_record rec = {0};
        struct xp_error err = {0};
        char fifo[512], spec[512], out[256] = "";
        char **uids = NULL;
        size_t n_uids = 0;
        pid_t shim;
        int rd;

        fifo_log(f, "uid-finish", fifo);
        shim = agent_killed_mid_start(f, "uid-finish");
        /* not reported, not failed: its shim is still at it */
        assert_int_equal(listed(f, "uid-finish", NULL), 0);
        path_of(f, "uid-finish", "spec.json", spec);
        assert_true(exists(spec));
        assert_true(alive(shim));
        /* the log is read from now on: the shim goes on while the next start waits for it */
        rd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rd >= 0);
        assert_int_equal(xp_runtime_start(f->rt, &l, &rec, &err), -EEXIST);
        wait_exit(f, "uid-finish", &rec);
        assert_int_equal(rec.exit_code, 0);
        assert_false(rec.start_failed);
        assert_int_equal(rec.attempt, 0);
        xp_container_record_clear(&rec);
        assert_int_equal(runs(f), 1);
        {
                struct pollfd p = {.fd = rd, .events = POLLIN};
                ssize_t got;

                for (int i = 0; i < 300 && !strstr(out, "hello"); i++) {
                        poll(&p, 1, 100);
                        got = read(rd, out + strlen(out), sizeof(out) - 1 - strlen(out));
                        if (got > 0)
                                out[strlen(out) + (size_t)got] = '\0';
                }
        }
        close(rd);
        assert_non_null(strstr(out, "stdout F hello"));
        /* the shim, its agent gone, announced the pod: the next agent reads it again */
        assert_int_equal(xp_runtime_take_exits(f->rt, &uids, &n_uids, NULL), 0);
        assert_int_equal(n_uids, 1);
        assert_string_equal(uids[0], "uid-finish");
        for (size_t i = 0; i < n_uids; i++)
                free(uids[i]);
        free(uids);
        /* and the attempt never runs a second time */
        assert_int_equal(xp_runtime_start(f->rt, &l, &rec, &err), -EEXIST);
        sleep_ms(100);
        assert_int_equal(runs(f), 1);
}

/* The shim died with the agent before the container could run: the start is made again. */
static void interrupted_start_is_redone(void **state)
{
        struct fixture *f = *state;
        struct xp_container_launch l = launch_of(f, "uid-redo", 0);
        struct xp_container_record rec = {0};
        struct xp_error err = {0};
        char fifo[512], dir[512];
        pid_t shim;

        fifo_log(f, "uid-redo", fifo);
        shim = agent_killed_mid_start(f, "uid-redo");
        assert_int_equal(kill(shim, SIGKILL), 0);
        wait_dead(shim);
        unlink(fifo);
        /* nothing ran: nothing to report, and its state goes */
        assert_int_equal(listed(f, "uid-redo", NULL), 0);
        snprintf(dir, sizeof(dir), "%s/uid-redo/%s", f->state, cname);
        assert_false(exists(dir));
        assert_int_equal(runs(f), 0);
        /* the same attempt, again */
        if (xp_runtime_start(f->rt, &l, &rec, &err) < 0)
                fail_msg("start: %s", xp_error_message(&err));
        xp_container_record_clear(&rec);
        wait_exit(f, "uid-redo", &rec);
        assert_int_equal(rec.exit_code, 0);
        assert_int_equal(rec.attempt, 0);
        assert_null(rec.message);
        xp_container_record_clear(&rec);
        assert_int_equal(runs(f), 1);
}

/*
 * The shim died after letting the container go on to exec, but before recording it: the
 * container may have run, so it is killed and recorded (the shim's own failure), never redone.
 */
static void shim_died_after_letting_go(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"sleep", "100", NULL};
        struct xp_container_launch l = launch_of(f, "uid-lost", 0);
        struct xp_container_record rec = {0};
        struct xp_error err = {0};
        char running[512];
        pid_t shim, pid;

        l.argv = argv;
        if (xp_runtime_start(f->rt, &l, &rec, &err) < 0)
                fail_msg("start: %s", xp_error_message(&err));
        pid = rec.pid;
        xp_container_record_clear(&rec);
        shim = find_shim(f, "uid-lost");
        assert_true(shim > 0 && pid > 0);
        /* as if it died just before writing running.json */
        assert_int_equal(kill(shim, SIGKILL), 0);
        wait_dead(shim);
        path_of(f, "uid-lost", "running.json", running);
        assert_int_equal(unlink(running), 0);
        assert_int_equal(listed(f, "uid-lost", &rec), 1);
        assert_true(rec.exited);
        assert_int_equal(rec.exit_code, 137);
        assert_false(rec.start_failed);
        assert_non_null(rec.message);
        assert_non_null(strstr(rec.message, "died while starting the container"));
        assert_null(strstr(rec.message, "died before starting"));
        xp_container_record_clear(&rec);
        wait_dead(pid); /* killed */
        /* that attempt is over: starting it again is refused, the next one runs */
        assert_int_equal(xp_runtime_start(f->rt, &l, &rec, &err), -EEXIST);
        l = launch_of(f, "uid-lost", 1);
        if (xp_runtime_start(f->rt, &l, &rec, &err) < 0)
                fail_msg("start attempt 1: %s", xp_error_message(&err));
        xp_container_record_clear(&rec);
        wait_exit(f, "uid-lost", &rec);
        assert_int_equal(rec.attempt, 1);
        assert_int_equal(rec.exit_code, 0);
        xp_container_record_clear(&rec);
        assert_int_equal(runs(f), 1);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(interrupted_start_is_finished, setup, teardown),
            cmocka_unit_test_setup_teardown(interrupted_start_is_redone, setup, teardown),
            cmocka_unit_test_setup_teardown(shim_died_after_letting_go, setup, teardown),
        };

        if (argc >= 2 && strcmp(argv[1], "__shim") == 0)
                return xp_shim_main(argc - 1, argv + 1);
        snprintf(cname, sizeof(cname), "main-%d", (int)getpid());
        return cmocka_run_group_tests(tests, NULL, NULL);
}
