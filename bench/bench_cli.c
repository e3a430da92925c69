/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CLI's cost as a user sees it: whole processes, each timed from its spawn to its exit, the
 * median (and p90) of --runs runs, with the CPU it took (user + system, from wait4). Against a
 * local `xpool server` with TLS on (its admin kubeconfig carries the CA, as a user's does):
 *   - `true` and `kubectl version --client` (and `sbatch --version` where Slurm is installed):
 *     what a process costs here at all, and a comparable CLI;
 *   - `xpool version`, `xpool get pods`, `xpool run --detach -- true` (issue 21: each under
 *     15 ms wall).
 * Prints the load average at start and end, since the wall figures move with it (the CPU
 * figures much less). Asserts nothing.
 *
 *   build/bench/bench_cli [--xpool build/xpool] [--runs 50] [--keep]
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_RUNS 1000

static char dir[512];

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_load(const char *when)
{
        double load[3];

        if (getloadavg(load, 3) == 3)
                printf("load average at %s: %.2f %.2f %.2f\n", when, load[0], load[1], load[2]);
}

/* Runs argv with output to /dev/null (or log under dir): its wall and CPU seconds, 0 or -1. */
static int run_once(char *const *argv, const char *log, double *ret_wall, double *ret_cpu)
{
        posix_spawn_file_actions_t fa;
        char path[700] = "/dev/null";
        struct rusage ru;
        double t0;
        pid_t pid;
        int status;

        if (log)
                snprintf(path, sizeof(path), "%s/%s", dir, log);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(
            &fa, STDOUT_FILENO, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
        t0 = now();
        if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
                posix_spawn_file_actions_destroy(&fa);
                return -1;
        }
        posix_spawn_file_actions_destroy(&fa);
        if (wait4(pid, &status, 0, &ru) != pid)
                return -1;
        *ret_wall = now() - t0;
        *ret_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/* Times runs runs of argv and prints a row; false when a run failed (its output in dir/log). */
static bool measure(const char *label, char *const *argv, long runs)
{
        static double wall[MAX_RUNS];
        double cpu = 0, w, c;

        for (long i = 0; i < runs; i++) {
                if (run_once(argv, "failed.log", &w, &c) < 0) {
                        printf("%-34s failed (see %s/failed.log)\n", label, dir);
                        return false;
                }
                wall[i] = w;
                cpu += c;
        }
        qsort(wall, (size_t)runs, sizeof(double), cmp_double);
        printf("%-34s wall median %6.2f ms  p90 %6.2f ms  min %6.2f ms  CPU mean %6.2f ms\n",
               label,
               wall[runs / 2] * 1e3,
               wall[runs * 9 / 10] * 1e3,
               wall[0] * 1e3,
               cpu / (double)runs * 1e3);
        return true;
}

static bool on_path(const char *name)
{
        char *path = getenv("PATH"), *copy, *save = NULL;
        bool found = false;

        if (!path || !(copy = strdup(path)))
                return false;
        for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
                char file[1024];

                snprintf(file, sizeof(file), "%s/%s", d, name);
                found = access(file, X_OK) == 0;
        }
        free(copy);
        return found;
}

/* The server's port from its log ("listening on https://127.0.0.1:PORT"), 0 until it is there. */
static unsigned server_port(void)
{
        char path[700], line[512];
        unsigned port = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/server.log", dir);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f) && !port) {
                char *p = strstr(line, "listening on https://127.0.0.1:");

                if (p)
                        sscanf(p, "listening on https://127.0.0.1:%u", &port);
        }
        fclose(f);
        return port;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path) < 0 ? -errno : 0;
}

static void usage(void)
{
        fprintf(stderr, "usage: bench_cli [--xpool PATH] [--runs N] [--keep]\n");
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
            {"xpool", required_argument, NULL, 'x'},
            {"runs", required_argument, NULL, 'r'},
            {"keep", no_argument, NULL, 'k'},
            {},
        };
        const char *xpool = "build/xpool";
        char data[600], kubeconfig[700], listen_arg[] = "127.0.0.1:0";
        long runs = 50;
        bool keep = false, ok = true;
        pid_t server = -1;
        int c, rc = 1;

        while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
                if (c == 'x')
                        xpool = optarg;
                else if (c == 'r')
                        runs = strtol(optarg, NULL, 10);
                else if (c == 'k')
                        keep = true;
                else {
                        usage();
                        return 2;
                }
        }
        if (runs < 1 || runs > MAX_RUNS) {
                fprintf(stderr, "bench_cli: --runs is 1 to %d\n", MAX_RUNS);
                return 2;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        snprintf(dir, sizeof(dir), "%s/bench-cli-XXXXXX", getenv("TMPDIR") ?: "/tmp");
        if (!mkdtemp(dir)) {
                fprintf(stderr, "bench_cli: mkdtemp %s: %s\n", dir, strerror(errno));
                return 1;
        }
        snprintf(data, sizeof(data), "%s/data", dir);
        snprintf(kubeconfig, sizeof(kubeconfig), "%s/admin.kubeconfig", data);
        print_load("start");
        {
                char *args[] = {
                    (char *)xpool, "server", "--listen", listen_arg, "--data-dir", data, NULL};
                char path[700];
                posix_spawn_file_actions_t fa;

                snprintf(path, sizeof(path), "%s/server.log", dir);
                posix_spawn_file_actions_init(&fa);
                posix_spawn_file_actions_addopen(
                    &fa, STDOUT_FILENO, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
                c = posix_spawn(&server, xpool, &fa, NULL, args, environ);
                posix_spawn_file_actions_destroy(&fa);
                if (c != 0) {
                        fprintf(stderr, "bench_cli: cannot start %s: %s\n", xpool, strerror(c));
                        server = -1;
                        goto out;
                }
        }
        for (double deadline = now() + 30; now() < deadline && !server_port(); usleep(20000))
                ;
        if (!server_port() || access(kubeconfig, R_OK) < 0) {
                fprintf(stderr, "bench_cli: the server did not come up; see %s/server.log\n", dir);
                goto out;
        }
        setenv("KUBECONFIG", kubeconfig, 1);
        printf(
            "xpool: %s, server on 127.0.0.1:%u (TLS), %ld runs each\n", xpool, server_port(), runs);
        {
                char *true_argv[] = {"true", NULL};
                char *kubectl_argv[] = {"kubectl", "version", "--client", NULL};
                char *sbatch_argv[] = {"sbatch", "--version", NULL};
                char *version_argv[] = {(char *)xpool, "version", NULL};
                char *get_argv[] = {(char *)xpool, "get", "pods", NULL};
                char *run_argv[] = {(char *)xpool, "run", "--detach", "--", "true", NULL};

                ok = measure("true", true_argv, runs) && ok;
                if (on_path("kubectl"))
                        ok = measure("kubectl version --client", kubectl_argv, runs) && ok;
                else
                        printf("%-34s not installed\n", "kubectl version --client");
                if (on_path("sbatch"))
                        ok = measure("sbatch --version", sbatch_argv, runs) && ok;
                else
                        printf("%-34s not installed\n", "sbatch --version");
                ok = measure("xpool version", version_argv, runs) && ok;
                ok = measure("xpool run --detach -- true", run_argv, runs) && ok;
                ok = measure("xpool get pods", get_argv, runs) && ok;
        }
        print_load("end");
        rc = ok ? 0 : 1;
out:
        if (server > 0) {
                kill(server, SIGTERM);
                waitpid(server, NULL, 0);
        }
        if (keep || rc != 0)
                printf("kept %s\n", dir);
        else
                nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        return rc;
}
