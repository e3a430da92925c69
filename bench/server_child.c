/* SPDX-License-Identifier: Apache-2.0 */
/* The server the benchmarks start for themselves (server_child.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server_child.h"

#define ARGS_MAX 32

extern char **environ;

double bench_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bench_print_load(const char *when)
{
        double load[3];

        if (getloadavg(load, 3) == 3)
                printf("load average (%s) %.2f %.2f %.2f\n", when, load[0], load[1], load[2]);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path) < 0 ? -errno : 0;
}

static int
spawn(const char *who, const char *xpool, const char *const *extra, struct server_child *ch)
{
        const char *argv[ARGS_MAX] = {
            xpool, "server", "--listen", "127.0.0.1:0", "--no-tls", "--data-dir", ch->data};
        posix_spawn_file_actions_t fa;
        size_t n = 7;
        int r;

        for (size_t i = 0; extra && extra[i] && n < ARGS_MAX - 1; i++)
                argv[n++] = extra[i];
        argv[n] = NULL;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(
            &fa, STDOUT_FILENO, ch->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
        r = posix_spawn(&ch->pid, xpool, &fa, NULL, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0) {
                fprintf(stderr, "%s: cannot start %s: %s\n", who, xpool, strerror(r));
                ch->pid = 0;
                return -r;
        }
        return 0;
}

/* The port from the line that names it, when the log has it yet: 1 with ch->url, else 0. */
static int listening(struct server_child *ch)
{
        char line[1024], *p;
        unsigned port;
        FILE *fp = fopen(ch->log, "re");

        while (fp && fgets(line, sizeof(line), fp)) {
                p = strstr(line, "listening on http://127.0.0.1:");
                if (p && sscanf(p, "listening on http://127.0.0.1:%u,", &port) == 1) {
                        fclose(fp);
                        snprintf(ch->url, sizeof(ch->url), "http://127.0.0.1:%u", port);
                        return 1;
                }
        }
        if (fp)
                fclose(fp);
        return 0;
}

int server_child_start(const char *who,
                       const char *xpool,
                       const char *const *extra,
                       struct server_child *ch)
{
        const char *tmpdir = getenv("TMPDIR") ?: "/tmp";
        double deadline;
        int r;

        snprintf(ch->dir, sizeof(ch->dir), "%s/%s-XXXXXX", tmpdir, who);
        if (!mkdtemp(ch->dir)) {
                r = -errno;
                fprintf(stderr, "%s: mkdtemp %s: %s\n", who, ch->dir, strerror(-r));
                ch->dir[0] = '\0';
                return r;
        }
        snprintf(ch->data, sizeof(ch->data), "%s/data", ch->dir);
        snprintf(ch->log, sizeof(ch->log), "%s/server.log", ch->dir);
        r = spawn(who, xpool, extra, ch);
        if (r < 0)
                return r;

        /* wait (bounded) for the line that names the port */
        deadline = bench_now() + 15;
        while (bench_now() < deadline) {
                int status;

                if (waitpid(ch->pid, &status, WNOHANG) == ch->pid) {
                        ch->pid = 0;
                        fprintf(stderr, "%s: the server exited; its log is %s\n", who, ch->log);
                        return -ECHILD;
                }
                if (listening(ch))
                        return 0;
                usleep(20000);
        }
        fprintf(
            stderr, "%s: the server did not say it listens within 15 s; see %s\n", who, ch->log);
        return -ETIMEDOUT;
}

char *server_child_token(const struct server_child *ch)
{
        char path[700], line[1024];
        char *found = NULL;
        FILE *fp;

        snprintf(path, sizeof(path), "%s/admin.kubeconfig", ch->data);
        fp = fopen(path, "re");
        if (!fp)
                return NULL;
        while (!found && fgets(line, sizeof(line), fp)) {
                char *p = line + strspn(line, " \t");

                if (strncmp(p, "token:", 6) != 0)
                        continue;
                p += 6;
                p += strspn(p, " \t\"'");
                p[strcspn(p, " \t\"'\r\n")] = '\0';
                if (*p)
                        found = strdup(p);
        }
        fclose(fp);
        return found;
}

long server_child_kib(const struct server_child *ch, const char *field)
{
        size_t len = strlen(field);
        char path[64], line[256];
        long kib = -1;
        FILE *fp;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)ch->pid);
        fp = fopen(path, "re");
        if (!fp)
                return -1;
        while (fgets(line, sizeof(line), fp))
                if (strncmp(line, field, len) == 0 && line[len] == ':' &&
                    sscanf(line + len + 1, "%ld", &kib) == 1)
                        break;
        fclose(fp);
        return kib;
}

double server_child_cpu_seconds(const struct server_child *ch)
{
        char path[64], buf[1024], *p;
        unsigned long utime, stime;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)ch->pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        /* after the command's name in parentheses: state is field 3, utime 14, stime 15 */
        p = strrchr(buf, ')');
        if (!p ||
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) !=
                2)
                return -1;
        return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

void server_child_stop(const char *who, struct server_child *ch)
{
        if (ch->pid > 0) {
                double term = bench_now(), deadline = term + 10, cpu = server_child_cpu_seconds(ch);
                struct rusage ru = {0};
                int status;

                kill(ch->pid, SIGTERM);
                while (wait4(ch->pid, &status, WNOHANG, &ru) == 0) {
                        if (bench_now() > deadline) {
                                fprintf(
                                    stderr, "%s: the server ignored SIGTERM; killing it\n", who);
                                kill(ch->pid, SIGKILL);
                                wait4(ch->pid, &status, 0, &ru);
                                break;
                        }
                        usleep(20000);
                }
                /* a figure, not a check: a stop that waits on its controllers or on streams
                 * shows here (docs/reliability.md) */
                printf("%s: the server stopped %.2f s after SIGTERM, %.2f s of CPU\n",
                       who,
                       bench_now() - term,
                       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6 - cpu);
                ch->pid = 0;
        }
        if (ch->dir[0])
                nftw(ch->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        ch->dir[0] = '\0';
}
