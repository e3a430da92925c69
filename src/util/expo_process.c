/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process metrics Prometheus' Go client exports for every process (xpool/expo.h), under its
 * names and units, read from /proc/self: so that dashboards and alerts written for Go servers
 * (kube-apiserver's among them) read ours unchanged.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "xpool/expo.h"

/* Seconds since boot at which the process started, from /proc/self/stat's 22nd field. */
static bool start_ticks(unsigned long long *ret, unsigned long *ret_vsize)
{
        char buf[1024], *p;
        FILE *f = fopen("/proc/self/stat", "re");
        size_t n;

        if (!f)
                return false;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')'); /* the command may hold spaces */
        if (!p)
                return false;
        /* after ") ": state(3) ... starttime(22) vsize(23) */
        return sscanf(
                   p + 2,
                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu %lu",
                   ret,
                   ret_vsize) == 2;
}

static double boot_time(void)
{
        char line[256];
        double btime = 0;
        FILE *f = fopen("/proc/stat", "re");

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "btime %lf", &btime) == 1)
                        break;
        fclose(f);
        return btime;
}

static double open_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        double n = 0;

        if (!d)
                return 0;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n - 1; /* the directory's own fd */
}

static void
one(struct xp_expo *w, const char *name, enum xp_expo_type type, const char *help, double v)
{
        xp_expo_family(w, name, type, help);
        xp_expo_sample(w, "", NULL, 0, v);
}

void xp_expo_process(struct xp_expo *w)
{
        long page = sysconf(_SC_PAGESIZE), hz = sysconf(_SC_CLK_TCK);
        unsigned long long start = 0, size = 0, resident = 0;
        unsigned long vsize = 0;
        struct rusage ru;
        struct rlimit nofile;
        FILE *f = fopen("/proc/self/statm", "re");

        if (f) {
                if (fscanf(f, "%llu %llu", &size, &resident) != 2)
                        resident = 0;
                fclose(f);
        }
        getrusage(RUSAGE_SELF, &ru);
        one(w,
            "process_cpu_seconds_total",
            XP_EXPO_COUNTER,
            "CPU time the process used, user and system (s).",
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
        one(w,
            "process_open_fds",
            XP_EXPO_GAUGE,
            "File descriptors the process holds open.",
            open_fds());
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0)
                one(w,
                    "process_max_fds",
                    XP_EXPO_GAUGE,
                    "The most file descriptors the process may open.",
                    (double)nofile.rlim_cur);
        one(w,
            "process_resident_memory_bytes",
            XP_EXPO_GAUGE,
            "The process's memory in RAM (bytes).",
            (double)resident * (double)page);
        if (start_ticks(&start, &vsize) && hz > 0) {
                one(w,
                    "process_virtual_memory_bytes",
                    XP_EXPO_GAUGE,
                    "The process's virtual memory (bytes).",
                    (double)vsize);
                one(w,
                    "process_start_time_seconds",
                    XP_EXPO_GAUGE,
                    "When the process started (unix time, s).",
                    boot_time() + (double)start / (double)hz);
        }
}
