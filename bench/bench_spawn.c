/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The floor under a short pod on this machine: what the kernel and the C library alone take to
 * start `true` and wait for it, with nothing of xpool in between (issue 21 goal 1 asks for 500
 * short pods a second on one node; this says what that is bounded by). --count times each:
 *   - posix_spawn of `true`, then waitpid (glibc: clone(CLONE_VM|CLONE_VFORK) and execve);
 *   - vfork + execve of `true` (the same without posix_spawn's signal and attribute work);
 *   - posix_spawn of `sh -c true` (what bench_pods ran before it ran `true`: the shell's start);
 *   - vfork + execve of `true` in a new mount namespace (clone with CLONE_NEWNS);
 *   - the same, the child first moved into a fresh group in each cgroup hierarchy of
 *     --hierarchies (default cpu,cpuacct,memory,pids,devices: those an xpool pod's container
 *     gets on a cgroup v1 node when it pins no CPU), made before and removed after, one level
 *     (a group per spawn) and two (a pod's group and its container's, as the runtime has them).
 * For each: spawns per second one after another (wall; noisy on a loaded machine), and the CPU
 * per spawn of this process and its children (getrusage, the figure that survives load). Work
 * the kernel defers to its own threads (a cgroup's css release after rmdir, a namespace's last
 * mount put) is not in it: the busy CPU of the whole machine per spawn (/proc/stat, every other
 * process included) is printed beside it as an upper bound. Prints figures; asserts nothing.
 * The cgroup rows need root and skip with a note without it.
 *
 *   build/bench/bench_spawn [--count 2000] [--hierarchies cpu,cpuacct,memory,pids,devices]
 *                           [--cgroup-root /sys/fs/cgroup] [--true /bin/true]
 *                           [--also build/xpool-shim]
 * --also PATH adds one more row: PATH started without arguments (its usage message and exit
 * status are ignored), e.g. the shim, whose start is part of every pod's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

extern char **environ;

#define MAX_HIERARCHIES 8
#define CHILD_STACK     (64 * 1024)

static const char *true_path = "/bin/true";
static const char *also_path; /* --also: one more program's start, e.g. build/xpool-shim */
static const char *cgroup_root = "/sys/fs/cgroup";
static char *hierarchies[MAX_HIERARCHIES];
static int n_hierarchies;
static char group_base[64];

/* What one clone child needs: the fds of the groups' cgroup.procs to join, then execve. */
struct child_plan {
        int procs[MAX_HIERARCHIES];
        int n_procs;
        char *const *argv;
};

static int child_main(void *arg)
{
        const struct child_plan *plan = arg;

        /* "0" moves the writer itself (v1 and v2 alike) */
        for (int i = 0; i < plan->n_procs; i++)
                if (write(plan->procs[i], "0", 1) != 1)
                        _exit(126);
        execve(plan->argv[0], plan->argv, environ);
        _exit(127);
}

/* Busy jiffies of the whole machine so far (every CPU, every process). */
static unsigned long long machine_busy_jiffies(void)
{
        unsigned long long v[8] = {0};
        FILE *fp = fopen("/proc/stat", "re");

        if (!fp)
                return 0;
        if (fscanf(fp,
                   "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
                   &v[0],
                   &v[1],
                   &v[2],
                   &v[3],
                   &v[4],
                   &v[5],
                   &v[6],
                   &v[7]) != 8)
                memset(v, 0, sizeof(v));
        fclose(fp);
        /* user nice system (idle iowait) irq softirq steal */
        return v[0] + v[1] + v[2] + v[5] + v[6];
}

static double self_and_children_cpu_s(void)
{
        struct rusage self, children;

        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &children);
        return bench_rusage_s(&self) + bench_rusage_s(&children);
}

enum spawn_way {
        WAY_POSIX_SPAWN,
        WAY_POSIX_ANY_EXIT, /* a program run without its arguments (--also): any exit status */
        WAY_VFORK,
        WAY_CLONE
};

struct variant {
        const char *what;
        enum spawn_way way;
        char *const *argv;
        int clone_flags;   /* WAY_CLONE: namespaces */
        int cgroup_levels; /* WAY_CLONE: 0, 1 or 2 levels of groups per spawn */
};

static int wait_ok(pid_t pid, bool any_exit)
{
        int status;

        if (waitpid(pid, &status, 0) != pid)
                return -errno;
        return WIFEXITED(status) && (any_exit || WEXITSTATUS(status) == 0) ? 0 : -ECHILD;
}

/* The path of a spawn's group in hierarchy h: its pod's (level 1) or its container's (level 2). */
static int group_path(char *path, size_t size, int h, int serial, int level)
{
        int n = snprintf(path,
                         size,
                         "%s/%s/%s/s%d%s",
                         cgroup_root,
                         hierarchies[h],
                         group_base,
                         serial,
                         level == 2 ? "/c" : "");

        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Makes a spawn's groups, LEVELS deep, in every hierarchy, and opens their cgroup.procs. */
static int groups_make(int levels, int serial, struct child_plan *plan)
{
        char path[512], procs[600];

        plan->n_procs = 0;
        for (int h = 0; h < n_hierarchies; h++) {
                for (int level = 1; level <= levels; level++)
                        if (group_path(path, sizeof(path), h, serial, level) < 0 ||
                            mkdir(path, 0755) < 0)
                                return -errno;
                snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
                plan->procs[h] = open(procs, O_WRONLY | O_CLOEXEC);
                if (plan->procs[h] < 0)
                        return -errno;
                plan->n_procs++;
        }
        return 0;
}

static void groups_remove(int levels, int serial, struct child_plan *plan)
{
        char path[512];

        for (int i = 0; i < plan->n_procs; i++)
                close(plan->procs[i]);
        plan->n_procs = 0;
        for (int h = 0; h < n_hierarchies; h++)
                for (int level = levels; level >= 1; level--)
                        if (group_path(path, sizeof(path), h, serial, level) == 0)
                                rmdir(path);
}

/* The bench's own parent group in each hierarchy (make), or its removal. 0 or -errno. */
static int base_groups(bool make)
{
        char path[512];

        for (int h = 0; h < n_hierarchies; h++) {
                snprintf(path, sizeof(path), "%s/%s/%s", cgroup_root, hierarchies[h], group_base);
                if (!make)
                        rmdir(path);
                else if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return -errno;
        }
        return 0;
}

/* One spawn of the variant, waited for. 0 or -errno. */
static int spawn_once(const struct variant *v, int serial, char *stack)
{
        struct child_plan plan = {.argv = v->argv};
        pid_t pid;
        int r = 0;

        if (v->way == WAY_POSIX_SPAWN) {
                r = posix_spawn(&pid, v->argv[0], NULL, NULL, v->argv, environ);
                return r != 0 ? -r : wait_ok(pid, false);
        }
        if (v->way == WAY_POSIX_ANY_EXIT) {
                posix_spawn_file_actions_t quiet; /* its usage message would flood the figures */

                posix_spawn_file_actions_init(&quiet);
                posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
                posix_spawn_file_actions_adddup2(&quiet, STDOUT_FILENO, STDERR_FILENO);
                r = posix_spawn(&pid, v->argv[0], &quiet, NULL, v->argv, environ);
                posix_spawn_file_actions_destroy(&quiet);
                return r != 0 ? -r : wait_ok(pid, true);
        }
        if (v->way == WAY_VFORK) {
                pid = vfork();
                if (pid == 0) {
                        execve(v->argv[0], v->argv, environ);
                        _exit(127);
                }
                return pid < 0 ? -errno : wait_ok(pid, false);
        }
        if (v->cgroup_levels > 0 && (r = groups_make(v->cgroup_levels, serial, &plan)) < 0) {
                groups_remove(v->cgroup_levels, serial, &plan);
                return r;
        }
        pid = clone(child_main,
                    stack + CHILD_STACK,
                    CLONE_VM | CLONE_VFORK | v->clone_flags | SIGCHLD,
                    &plan);
        r = pid < 0 ? -errno : wait_ok(pid, false);
        if (v->cgroup_levels > 0)
                groups_remove(v->cgroup_levels, serial, &plan);
        return r;
}

static void run_variant(const struct variant *v, int count)
{
        static char stack[CHILD_STACK] __attribute__((aligned(16)));
        unsigned long long busy0 = machine_busy_jiffies(), busy1;
        double cpu0 = self_and_children_cpu_s(), cpu1;
        uint64_t t0 = bench_now_ns(), t1;
        int r = 0, done = 0;

        for (; done < count && r == 0; done++)
                r = spawn_once(v, done, stack);
        t1 = bench_now_ns();
        cpu1 = self_and_children_cpu_s();
        busy1 = machine_busy_jiffies();
        if (r < 0) {
                printf("%-58s skipped: spawn %d: %s\n", v->what, done, strerror(-r));
                return;
        }
        printf("%-58s %7.0f /s  %7.1f us CPU each  (machine busy %7.1f us each)\n",
               v->what,
               (double)count / ((double)(t1 - t0) / 1e9),
               (cpu1 - cpu0) * 1e6 / count,
               (double)(busy1 - busy0) * 1e6 / (double)sysconf(_SC_CLK_TCK) / count);
        fflush(stdout);
}

static int parse_hierarchies(char *list)
{
        for (char *save = NULL, *h = strtok_r(list, ",", &save); h;
             h = strtok_r(NULL, ",", &save)) {
                if (n_hierarchies == MAX_HIERARCHIES || !*h || strchr(h, '/')) {
                        fprintf(stderr,
                                "bench_spawn: --hierarchies: bad or too many names (at most "
                                "%d, no '/'): %s\n",
                                MAX_HIERARCHIES,
                                h);
                        return -EINVAL;
                }
                hierarchies[n_hierarchies++] = h;
        }
        return 0;
}

static int parse_args(int argc, char **argv, int *count)
{
        static const struct option options[] = {
            {"count", required_argument, NULL, 'n'},
            {"hierarchies", required_argument, NULL, 'H'},
            {"cgroup-root", required_argument, NULL, 'r'},
            {"true", required_argument, NULL, 't'},
            {"also", required_argument, NULL, 'a'},
            {0},
        };
        int c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
                if (c == 'n' && (*count = atoi(optarg)) > 0)
                        continue;
                if (c == 'H' && parse_hierarchies(optarg) == 0)
                        continue;
                if (c == 'r' || c == 't' || c == 'a') {
                        *(c == 'r' ? &cgroup_root : c == 't' ? &true_path : &also_path) = optarg;
                        continue;
                }
                fprintf(stderr,
                        "usage: bench_spawn [--count N>0] [--hierarchies a,b,...] "
                        "[--cgroup-root DIR] [--true PATH] [--also PATH]\n");
                return -EINVAL;
        }
        return 0;
}

int main(int argc, char **argv)
{
        static char default_hierarchies[] = "cpu,cpuacct,memory,pids,devices";
        char *true_argv[] = {NULL, NULL}, *sh_argv[] = {"/bin/sh", "-c", "true", NULL},
             *also_argv[] = {NULL, NULL};
        char also_what[128];
        int count = 2000;

        if (parse_args(argc, argv, &count) < 0)
                return 2;
        if (n_hierarchies == 0)
                parse_hierarchies(default_hierarchies);
        true_argv[0] = (char *)true_path;
        snprintf(group_base, sizeof(group_base), "bench-spawn-%d", (int)getpid());
        const struct variant variants[] = {
            {"posix_spawn true + waitpid", WAY_POSIX_SPAWN, true_argv, 0, 0},
            {"vfork + execve true + waitpid", WAY_VFORK, true_argv, 0, 0},
            {"posix_spawn sh -c true + waitpid", WAY_POSIX_SPAWN, sh_argv, 0, 0},
            {"clone(VFORK) true in a new mount namespace", WAY_CLONE, true_argv, CLONE_NEWNS, 0},
            {"  and a new group per hierarchy (1 level)", WAY_CLONE, true_argv, CLONE_NEWNS, 1},
            {"  and a pod group + container group (2 levels)",
             WAY_CLONE,
             true_argv,
             CLONE_NEWNS,
             2},
        };

        bench_loadavg("start");
        printf(
            "%d spawns each, one after another; cgroup hierarchies under %s:", count, cgroup_root);
        for (int h = 0; h < n_hierarchies; h++)
                printf(" %s", hierarchies[h]);
        printf("\n");
        if (base_groups(true) < 0)
                printf("(cannot make %s's groups: %s; the cgroup rows will say so)\n",
                       group_base,
                       strerror(errno));
        for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
                run_variant(&variants[i], count);
        if (also_path) {
                also_argv[0] = (char *)also_path;
                snprintf(also_what, sizeof(also_what), "posix_spawn %s (no arguments)", also_path);
                run_variant(&(struct variant){also_what, WAY_POSIX_ANY_EXIT, also_argv, 0, 0},
                            count);
        }
        base_groups(false);
        bench_loadavg("end");
        return 0;
}
