/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The replays of one pod list (policies x seeds) on several processes. Each replay is
 * independent and single-threaded, and the core keeps its state per scheduler, so one child per
 * replay (fork: the trace is shared copy-on-write) runs it and sends back its figures through a
 * pipe. The placements stay in the child: only --export needs them, and it runs in-process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd_sim_jobs.h"

struct reply {
        int rc;
        char msg[256];
        struct xp_sim_result res;
};

/* One write of at most PIPE_BUF is whole: the child can write it and exit before the parent
 * reads, and the parent never reads half of it. */
_Static_assert(sizeof(struct reply) <= PIPE_BUF, "a reply must fit one atomic pipe write");

struct slot {
        pid_t pid;
        int fd;
        size_t job;
};

static void child(const struct xp_sim_trace *t, const struct xp_sim_options *o, int fd)
{
        struct reply m = {0};
        struct xp_error err = {0};

        m.rc = xp_sim_run(t, o, &m.res, &err);
        if (m.rc < 0)
                snprintf(m.msg, sizeof(m.msg), "%s", err.msg);
        else
                xp_sim_result_done(&m.res);
        _exit(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m) ? 0 : 1);
}

static int start(const struct xp_sim_trace *t, const struct xp_sim_options *o, struct slot *s)
{
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        fflush(NULL); /* nothing buffered is written twice */
        s->pid = fork();
        if (s->pid < 0) {
                int e = -errno;
                close(p[0]);
                close(p[1]);
                return e;
        }
        if (s->pid == 0) {
                close(p[0]);
                child(t, o, p[1]);
        }
        close(p[1]);
        s->fd = p[0];
        return 0;
}

/* Reaps one child of slots and takes its reply; the slot is freed. */
static int reap(struct slot *slots, size_t *n, struct xp_sim_result *res, struct sim_job_error *e)
{
        struct reply m;
        size_t i;
        ssize_t got;
        int status;
        pid_t pid = waitpid(-1, &status, 0);

        if (pid < 0)
                return -errno;
        for (i = 0; i < *n && slots[i].pid != pid; i++)
                ;
        if (i == *n)
                return 0; /* not one of ours */
        got = read(slots[i].fd, &m, sizeof(m));
        close(slots[i].fd);
        if (got != (ssize_t)sizeof(m)) {
                m.rc = -EIO;
                snprintf(m.msg, sizeof(m.msg), "the replay's process ended without its figures");
        }
        if (m.rc < 0 && e->rc == 0) {
                e->rc = m.rc;
                e->job = slots[i].job;
                snprintf(e->msg, sizeof(e->msg), "%s", m.msg);
        }
        if (m.rc >= 0) {
                m.res.placements = NULL;
                res[slots[i].job] = m.res;
        }
        slots[i] = slots[--(*n)];
        return 0;
}

static int run_here(const struct xp_sim_trace *t,
                    const struct xp_sim_options *opts,
                    struct xp_sim_result *res,
                    size_t n,
                    struct sim_job_error *e)
{
        for (size_t j = 0; j < n; j++) {
                struct xp_error err = {0};
                int r = xp_sim_run(t, &opts[j], &res[j], &err);
                if (r < 0) {
                        *e = (struct sim_job_error){.rc = r, .job = j};
                        snprintf(e->msg, sizeof(e->msg), "%s", err.msg);
                        return r;
                }
                xp_sim_result_done(&res[j]);
        }
        return 0;
}

int sim_jobs_run(const struct xp_sim_trace *t,
                 const struct xp_sim_options *opts,
                 struct xp_sim_result *res,
                 size_t n,
                 unsigned workers,
                 struct sim_job_error *e)
{
        struct slot slots[SIM_JOBS_MAX];
        size_t next = 0, running = 0;
        int r = 0;

        *e = (struct sim_job_error){0};
        if (workers > SIM_JOBS_MAX)
                workers = SIM_JOBS_MAX;
        if (workers <= 1 || n <= 1)
                return run_here(t, opts, res, n, e);
        while (running > 0 || (next < n && r >= 0 && e->rc == 0)) {
                while (running < workers && next < n && r >= 0 && e->rc == 0) {
                        slots[running].job = next;
                        r = start(t, &opts[next], &slots[running]);
                        if (r >= 0) {
                                running++;
                                next++;
                        }
                }
                if (running > 0) {
                        int k = reap(slots, &running, res, e);
                        if (k < 0 && k != -EINTR)
                                break; /* no child left to wait for */
                }
        }
        if (r < 0 && e->rc == 0) {
                *e = (struct sim_job_error){.rc = r, .job = next};
                snprintf(e->msg, sizeof(e->msg), "cannot start a replay: %s", strerror(-r));
        }
        return e->rc;
}
