/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods on one node, end to end: `xpool server --no-tls` and `xpool agent` started as two
 * processes (so that the agent is measured alone), the agent with the simulated devices of
 * --node-description (default examples/nodes/dgx-h100.yaml: eight GPUs), then
 *   - the agent's idle RSS and CPU with no pods, over --idle seconds;
 *   - its RSS with --running pods (`sleep 600`, no requests) running at once (issue 21: under
 *     16 MiB with 200), which are then deleted;
 *   - create -> Running latency: --latency pods (`sleep 600`) created one after another, each
 *     timed from its POST until the watch shows it running; p50/p99. Each is deleted once seen
 *     running, and the next created at once, while the node still tears the last one down;
 *     --latency-pause MS waits that long between them (the node idle when a pod comes);
 *   - throughput: --throughput pods (`true`, or the words of --command split at spaces, e.g.
 *     --command 'sh -c true' as the figures before 2026-12-05 night ran them; restartPolicy
 *     Never; each asking for --gpus GPUs
 *     (nvidia.com/gpu, default 1) and --cpu CPUs (default 1) as issue 21 has them) created as fast
 *     as --clients clients (4) can, and the time until the watch has seen every one Succeeded:
 *     pods completed per second;
 *   - the agent's RSS and CPU once more, idle after the work.
 * Prints figures; asserts nothing. The latency is split at the bind (the watch shows
 * spec.nodeName): API and scheduler before, the agent after. Beside each phase, the agent's own
 * CPU per pod (its threads; the shims it detaches are not counted: `perf stat -p AGENT` counts
 * them), the figure that survives a loaded machine, and after the short pods the server's CPU
 * per pod (API, scheduler, controllers: with every pod after the first two waiting for a CPU,
 * the scheduler's retries are part of it). As root the agent runs in a cgroup of the bench's own
 * (cpuacct on v1), where the shims it spawns stay: the short pods' figures add the CPU of agent
 * and shims together (the containers move to their own groups), the server's count of the
 * agent's writes per pod (status PATCHes, Events), and the store's writes and commits per pod
 * from every writer (the scheduler's writes for the waiting pods among them) with the
 * unschedulable attempts per pod. --keep leaves the logs (server.log, agent.log). The load
 * average is printed at the start and the end.
 *
 *   build/bench/bench_pods [--xpool build/xpool] [--latency 200] [--throughput 2000] [--idle 10]
 *                          [--clients 4] [--keep] [--cni-conf-dir DIR] [--running 200]
 *                          [--node-description FILE] [--gpus 1] [--cpu 1] [--agent-dir DIR]
 *                          [--state-dir DIR] [--agent-flag FLAG]... [--no-token]
 *                          [--command WORDS] [--latency-pause MS]
 *
 * The agent runs every pod on the node's network (--pod-network host), measuring the runtime
 * alone; --cni-conf-dir DIR gives each pod a network of its own from that CNI configuration
 * (docs/networking.md has the cost), its namespaces under the bench's directory.
 *
 * --agent-dir DIR puts the agent's data directory (containers' state, logs) in a directory of
 * its own under DIR, the server's staying under $TMPDIR: `--agent-dir /dev/shm` measures what
 * ext4's inode allocation for the containers' files costs, apart from the store's fsyncs.
 * --state-dir DIR gives the agent its --state-dir (a directory of its own under DIR): the
 * containers' runtime state alone on a tmpfs, as a node would keep it on /run.
 * --agent-flag FLAG (up to 4) is one more argument of the agent's, e.g. `--status-coalesce=0`.
 * --no-token creates every pod with automountServiceAccountToken: false, so that it has no
 * kube-api-access volume and its agent asks no TokenRequest: run with and without it in the same
 * minutes, the difference is the token's share of the CPU per pod.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xpool/client.h"
#include "xpool/macro.h"

extern char **environ;

#define NODE        "bench-node"
#define PODS_PATH   "/api/v1/namespaces/default/pods"
#define MAX_CLIENTS 64

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char dir[512];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path) < 0 ? -errno : 0;
}

/* Starts xpool with args, its output into DIR/log. 0 or -errno. */
static int spawn(const char *log, char **argv, pid_t *ret)
{
        posix_spawn_file_actions_t fa;
        char path[700];
        int r;

        snprintf(path, sizeof(path), "%s/%s", dir, log);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(
            &fa, STDOUT_FILENO, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
        r = posix_spawn(ret, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0) {
                fprintf(stderr, "bench_pods: cannot start %s: %s\n", argv[0], strerror(r));
                return -r;
        }
        return 0;
}

static void stop(pid_t pid)
{
        double deadline = now() + 10;
        int status;

        if (pid <= 0)
                return;
        kill(pid, SIGTERM);
        while (waitpid(pid, &status, WNOHANG) == 0) {
                if (now() > deadline) {
                        kill(pid, SIGKILL);
                        waitpid(pid, &status, 0);
                        return;
                }
                usleep(20000);
        }
}

/* The first line of file holding needle, from the needle on, or NULL (caller frees). */
static char *grep_file(const char *file, const char *needle)
{
        char path[700], line[4096], *found = NULL, *p;
        FILE *fp;

        snprintf(path, sizeof(path), "%s/%s", dir, file);
        fp = fopen(path, "re");
        while (fp && !found && fgets(line, sizeof(line), fp)) {
                p = strstr(line, needle);
                if (p) {
                        p[strcspn(p, "\r\n")] = '\0';
                        found = strdup(p);
                }
        }
        if (fp)
                fclose(fp);
        return found;
}

/* The value after "token:" in the admin kubeconfig. */
static char *admin_token(void)
{
        char *line = grep_file("data/admin.kubeconfig", "token:"), *p, *token;

        if (!line)
                return NULL;
        p = line + 6;
        p += strspn(p, " \t\"'");
        p[strcspn(p, " \t\"'")] = '\0';
        token = strdup(p);
        free(line);
        return token;
}

/*
 * The agent's RSS and its anonymous part (KiB: the rest are pages of the executable and the
 * shared libraries, shared with other processes) and CPU seconds so far, from /proc.
 */
static void proc_usage(pid_t pid, long *ret_rss_kib, long *ret_anon_kib, double *ret_cpu)
{
        char path[64], buf[4096], *p;
        unsigned long utime = 0, stime = 0;
        long rss = -1, anon = -1;
        FILE *fp;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        fp = fopen(path, "re");
        while (fp && fgets(buf, sizeof(buf), fp))
                if (sscanf(buf, "VmRSS: %ld kB", &rss) != 1)
                        sscanf(buf, "RssAnon: %ld kB", &anon);
        if (fp)
                fclose(fp);
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fp = fopen(path, "re");
        if (fp && fgets(buf, sizeof(buf), fp) && (p = strrchr(buf, ')')))
                /* fields 14 and 15 (utime, stime) after the command's closing parenthesis */
                sscanf(
                    p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime);
        if (fp)
                fclose(fp);
        *ret_rss_kib = rss;
        *ret_anon_kib = anon;
        *ret_cpu = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static void measure_idle(const char *when, pid_t agent, int seconds)
{
        long rss0, rss1, anon0, anon1;
        double cpu0, cpu1;

        proc_usage(agent, &rss0, &anon0, &cpu0);
        sleep((unsigned)seconds);
        proc_usage(agent, &rss1, &anon1, &cpu1);
        printf("agent idle %s: RSS %.1f MiB (%.1f MiB anonymous), CPU %.2f%% of one core over %d "
               "s\n",
               when,
               (double)rss1 / 1024.0,
               (double)anon1 / 1024.0,
               100.0 * (cpu1 - cpu0) / seconds,
               seconds);
}

/* A process's own CPU (its threads: the agent's, not the shims it detaches) per pod since
 * *cpu0, which is moved on to now. */
static double cpu_per_pod(pid_t pid, double *cpu0, long pods)
{
        long rss, anon;
        double cpu;

        proc_usage(pid, &rss, &anon, &cpu);
        cpu -= *cpu0;
        *cpu0 += cpu;
        return pods > 0 ? cpu / (double)pods : 0;
}

/* ---- the watch: when each pod was first seen running, how many have Succeeded ---- */

struct watch {
        struct xp_apiclient *client;
        pthread_mutex_t lock;
        pthread_cond_t changed;
        json_t *bound;     /* name -> seconds (now()) first seen with a node */
        json_t *running;   /* name -> seconds (now()) first seen running */
        json_t *succeeded; /* name -> true */
        double last_succeeded;
};

static int on_event(const char *line, size_t len, void *userdata)
{
        struct watch *w = userdata;
        json_auto_t *event = json_loadb(line, len, 0, NULL);
        json_t *pod = json_object_get(event, "object");
        const char *name =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        double t = now();

        if (!name || !phase)
                return 0;
        pthread_mutex_lock(&w->lock);
        if (json_object_get(json_object_get(pod, "spec"), "nodeName") &&
            !json_object_get(w->bound, name))
                json_object_set_new(w->bound, name, json_real(t));
        if ((strcmp(phase, "Running") == 0 || strcmp(phase, "Succeeded") == 0 ||
             strcmp(phase, "Failed") == 0) &&
            !json_object_get(w->running, name))
                json_object_set_new(w->running, name, json_real(t));
        if (strcmp(phase, "Succeeded") == 0 && !json_object_get(w->succeeded, name)) {
                json_object_set_new(w->succeeded, name, json_true());
                w->last_succeeded = t;
        }
        pthread_cond_broadcast(&w->changed);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

static void *watch_thread(void *userdata)
{
        struct watch *w = userdata;
        struct xp_error err = {0};
        int r;

        r = xp_apiclient_stream_lines(
            w->client, PODS_PATH "?watch=1", "application/json", on_event, w, &err);
        if (r < 0 && r != -ECANCELED)
                fprintf(stderr, "bench_pods: the watch ended: %s\n", xp_error_message(&err));
        return NULL;
}

/* ---- what the node costs beside the agent's own threads, what it writes ---- */

/*
 * A cgroup of the bench's own that the agent is moved into right after its start: the shims it
 * spawns start in it (and stay, while each container moves to a group of its own), so its CPU is
 * the agent's and its shims'. v2: a group at the root (cpu.stat's usage_usec); v1: one in the
 * cpuacct hierarchy (cpuacct.usage). Empty where neither can be made (not root).
 */
static char node_cgroup[256];

static void node_cgroup_join(pid_t pid)
{
        bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
        char path[320];
        FILE *fp;

        snprintf(node_cgroup,
                 sizeof(node_cgroup),
                 v2 ? "/sys/fs/cgroup/bench-pods-%d" : "/sys/fs/cgroup/cpuacct/bench-pods-%d",
                 (int)getpid());
        snprintf(path, sizeof(path), "%s/cgroup.procs", node_cgroup);
        if (mkdir(node_cgroup, 0755) < 0 || !(fp = fopen(path, "we"))) {
                node_cgroup[0] = '\0';
                return;
        }
        fprintf(fp, "%d\n", (int)pid);
        if (fclose(fp) != 0) {
                rmdir(node_cgroup);
                node_cgroup[0] = '\0';
        }
}

/* The group's CPU seconds so far; -1 without it. */
static double node_cgroup_cpu(void)
{
        bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
        char path[320], line[256];
        double cpu = -1;
        long long v;
        FILE *fp;

        if (!node_cgroup[0])
                return -1;
        snprintf(path, sizeof(path), "%s/%s", node_cgroup, v2 ? "cpu.stat" : "cpuacct.usage");
        fp = fopen(path, "re");
        while (fp && fgets(line, sizeof(line), fp))
                if (v2 ? sscanf(line, "usage_usec %lld", &v) == 1 : sscanf(line, "%lld", &v) == 1) {
                        cpu = v2 ? (double)v / 1e6 : (double)v / 1e9;
                        break;
                }
        if (fp)
                fclose(fp);
        return cpu;
}

/* After the agent stopped: what is left in the group (shims of containers still running) goes
 * back to the root group, and the group goes. */
static void node_cgroup_remove(void)
{
        bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
        char path[320], line[64];
        FILE *in, *out;

        if (!node_cgroup[0])
                return;
        snprintf(path, sizeof(path), "%s/cgroup.procs", node_cgroup);
        in = fopen(path, "re");
        while (in && fgets(line, sizeof(line), in)) {
                out = fopen(v2 ? "/sys/fs/cgroup/cgroup.procs"
                               : "/sys/fs/cgroup/cpuacct/cgroup.procs",
                            "we");
                if (out) {
                        fputs(line, out);
                        fclose(out);
                }
        }
        if (in)
                fclose(in);
        rmdir(node_cgroup);
}

/* The server's count of the agent's writes so far (apiserver_request_total): status PATCHes,
 * Event POSTs, TokenRequests. */
struct writes {
        double status, events, tokens;
        double store_writes, commits, unschedulable; /* the server's own figures, all writers */
};

/* The value of a metric line without labels named name ("name 123"), into *ret. */
static void plain_metric(const char *text, const char *name, double *ret)
{
        size_t n = strlen(name);

        if (strncmp(text, name, n) == 0 && text[n] == ' ')
                *ret = strtod(text + n + 1, NULL);
}

static int on_metric(const char *line, size_t len, void *userdata)
{
        struct writes *w = userdata;
        char text[512];
        const char *value;

        if (len >= sizeof(text))
                return 0;
        memcpy(text, line, len);
        text[len] = '\0';
        plain_metric(text, "xpool_store_writes_total", &w->store_writes);
        plain_metric(text, "xpool_store_commits_total", &w->commits);
        value = strrchr(text, ' ');
        if (value && strncmp(text, "scheduler_schedule_attempts_total{", 34) == 0 &&
            strstr(text, "result=\"unschedulable\""))
                w->unschedulable += strtod(value + 1, NULL);
        if (!value || strncmp(text, "apiserver_request_total{", 24) != 0)
                return 0;
        if (strstr(text, "verb=\"PATCH\"") && strstr(text, "resource=\"pods\"") &&
            strstr(text, "subresource=\"status\""))
                w->status += strtod(value + 1, NULL);
        else if (strstr(text, "verb=\"POST\"") && strstr(text, "resource=\"events\""))
                w->events += strtod(value + 1, NULL);
        else if (strstr(text, "verb=\"POST\"") && strstr(text, "resource=\"serviceaccounts\"") &&
                 strstr(text, "subresource=\"token\""))
                w->tokens += strtod(value + 1, NULL);
        return 0;
}

static struct writes count_writes(struct xp_apiclient *client)
{
        struct writes w = {0};

        if (xp_apiclient_stream_lines(client, "/metrics", "text/plain", on_metric, &w, NULL) < 0)
                w = (struct writes){-1, -1, -1, -1, -1, -1};
        return w;
}

/* What each latency and throughput pod asks for: --gpus (nvidia.com/gpu) and --cpu; "0": none. */
static const char *pod_gpus = "1", *pod_cpu = "1";
/* --no-token: every pod without its service account token (no projected volume, no TokenRequest) */
static bool pod_no_token;
/* the short pods' command, split at spaces (--command) */
static const char *short_command = "true";

/* requests (= limits) of the GPUs and CPUs asked for, into the pod's first container */
static int add_requests(json_t *pod)
{
        json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
        json_t *list = json_object();
        int r = 0;

        if (!list)
                return -ENOMEM;
        if (strcmp(pod_gpus, "0") != 0)
                r |= json_object_set_new(list, "nvidia.com/gpu", json_string(pod_gpus));
        if (strcmp(pod_cpu, "0") != 0)
                r |= json_object_set_new(list, "cpu", json_string(pod_cpu));
        if (json_object_size(list) == 0) {
                json_decref(list);
                return r;
        }
        r |= json_object_set_new(
            c, "resources", json_pack("{s:O, s:O}", "requests", list, "limits", list));
        json_decref(list);
        return r < 0 ? -ENOMEM : 0;
}

/* The words of command (split at spaces) as a container's command, ["true"] for "true". */
static json_t *command_words(const char *command)
{
        json_t *words = json_array();
        char *copy = strdup(command), *save = NULL;
        int r = words && copy ? 0 : -1;

        for (char *w = copy ? strtok_r(copy, " ", &save) : NULL; w && r == 0;
             w = strtok_r(NULL, " ", &save))
                r = json_array_append_new(words, json_string(w));
        free(copy);
        if (r < 0) {
                json_decref(words);
                return NULL;
        }
        return words;
}

static int create_pod(struct xp_apiclient *client, const char *name, const char *command, bool ask)
{
        json_t *words = command_words(command);
        json_auto_t *pod = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:o?}]}}",
                                     "apiVersion",
                                     "v1",
                                     "kind",
                                     "Pod",
                                     "metadata",
                                     "name",
                                     name,
                                     "spec",
                                     "restartPolicy",
                                     "Never",
                                     "containers",
                                     "name",
                                     "c",
                                     "command",
                                     words);
        json_auto_t *answer = NULL;
        struct xp_error err = {0};
        int r;

        if (!pod || !words || (ask && add_requests(pod) < 0))
                return -ENOMEM;
        if (pod_no_token && json_object_set_new(json_object_get(pod, "spec"),
                                                "automountServiceAccountToken",
                                                json_false()) < 0)
                return -ENOMEM;
        r = xp_apiclient_json(client, "POST", PODS_PATH, NULL, pod, NULL, &answer, &err);
        if (r < 0)
                fprintf(stderr, "bench_pods: create %s: %s\n", name, xp_error_message(&err));
        return r;
}

static void delete_pod(struct xp_apiclient *client, const char *name)
{
        json_auto_t *answer = NULL;
        char path[128];

        snprintf(path, sizeof(path), PODS_PATH "/%s?gracePeriodSeconds=0", name);
        xp_apiclient_json(client, "DELETE", path, NULL, NULL, NULL, &answer, NULL);
}

/* One of the --clients threads: creates the pods first, first + step, ... below count. */
struct creator {
        const char *url, *token;
        long first, step, count;
        bool failed;
        pthread_t thread;
};

static void *creator_thread(void *userdata)
{
        struct creator *c = userdata;
        struct xp_apiclient *client = NULL;
        struct xp_error err = {0};

        if (xp_apiclient_new(&(struct xp_apiclient_options){.server = c->url, .token = c->token},
                             &client,
                             &err) < 0) {
                fprintf(stderr, "bench_pods: %s\n", xp_error_message(&err));
                c->failed = true;
                return NULL;
        }
        for (long i = c->first; i < c->count && !c->failed; i += c->step) {
                char name[64];

                snprintf(name, sizeof(name), "thr-%ld", i);
                c->failed = create_pod(client, name, short_command, true) < 0;
        }
        xp_apiclient_free(client);
        return NULL;
}

/* The latest time in times (name -> seconds) of the names starting with prefix; since if none. */
static double latest(const json_t *times, const char *prefix, double since)
{
        const char *key;
        json_t *v;

        json_object_foreach((json_t *)times, key, v)
        {
                if (strncmp(key, prefix, strlen(prefix)) == 0 && json_real_value(v) > since)
                        since = json_real_value(v);
        }
        return since;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, size_t n, double p)
{
        size_t i = (size_t)((double)n * p);

        return sorted[i < n ? i : n - 1];
}

static void print_load(const char *when)
{
        double load[3];

        if (getloadavg(load, 3) == 3)
                printf("load average at %s: %.2f %.2f %.2f\n", when, load[0], load[1], load[2]);
}

/* How many of the listed pods have names starting with prefix; -1 when the list fails. */
static long count_pods(struct xp_apiclient *client, const char *prefix)
{
        json_auto_t *list = NULL;
        const json_t *item;
        long n = 0;
        size_t i;

        if (xp_apiclient_json(client, "GET", PODS_PATH, NULL, NULL, NULL, &list, NULL) < 0)
                return -1;
        json_array_foreach(json_object_get(list, "items"), i, item)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));

                n += name && strncmp(name, prefix, strlen(prefix)) == 0;
        }
        return n;
}

/* n `sleep 600` pods running at once: the agent's RSS with them, then they are deleted. */
static int
measure_running(struct xp_apiclient *client, struct watch *w, pid_t agent, long n, int seconds)
{
        double deadline = now() + 120, t0 = now();
        long running = 0;

        for (long i = 0; i < n; i++) {
                char name[64];

                snprintf(name, sizeof(name), "run-%ld", i);
                if (create_pod(client, name, "sleep 600", false) < 0)
                        return -1;
        }
        pthread_mutex_lock(&w->lock);
        while (now() < deadline) {
                const char *key;
                json_t *v;

                running = 0;
                json_object_foreach(w->running, key, v) running += strncmp(key, "run-", 4) == 0;
                if (running >= n)
                        break;
                pthread_mutex_unlock(&w->lock);
                usleep(100000);
                pthread_mutex_lock(&w->lock);
        }
        pthread_mutex_unlock(&w->lock);
        if (running < n) {
                fprintf(stderr, "bench_pods: %ld of %ld pods running after 120 s\n", running, n);
                return -1;
        }
        printf("%ld pods running after %.2f s\n", n, now() - t0);
        {
                char when[64];

                snprintf(when, sizeof(when), "with %ld running pods", n);
                measure_idle(when, agent, seconds);
        }
        for (long i = 0; i < n; i++) {
                char name[64];

                snprintf(name, sizeof(name), "run-%ld", i);
                delete_pod(client, name);
        }
        for (deadline = now() + 120; now() < deadline && count_pods(client, "run-") > 0;)
                usleep(200000);
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
            {"xpool", required_argument, NULL, 'x'},
            {"latency", required_argument, NULL, 'l'},
            {"throughput", required_argument, NULL, 't'},
            {"idle", required_argument, NULL, 'i'},
            {"keep", no_argument, NULL, 'k'},
            {"clients", required_argument, NULL, 'c'},
            {"cni-conf-dir", required_argument, NULL, 'n'},
            {"running", required_argument, NULL, 'r'},
            {"node-description", required_argument, NULL, 'D'},
            {"gpus", required_argument, NULL, 'g'},
            {"cpu", required_argument, NULL, 'C'},
            {"agent-dir", required_argument, NULL, 'A'},
            {"state-dir", required_argument, NULL, 'S'},
            {"agent-flag", required_argument, NULL, 'F'},
            {"no-token", no_argument, NULL, 'T'},
            {"command", required_argument, NULL, 'm'},
            {"latency-pause", required_argument, NULL, 'P'},
            {},
        };
        const char *xpool = "build/xpool", *cni_conf_dir = NULL, *agent_dir = NULL,
                   *state_parent = NULL;
        char state_dir[600] = "";
        const char *agent_flags[4] = {0};
        size_t n_agent_flags = 0;
        struct writes writes0 = {0}, writes1;
        double node_cpu = -1;
        const char *node_description = "examples/nodes/dgx-h100.yaml";
        long n_running = 200;
        char max_pods[32];
        char netns_dir[620];
        long n_latency = 200, n_throughput = 2000, idle = 10, n_clients = 4, latency_pause_ms = 0;
        char data[600], agent_data[600], url[64] = "", *token = NULL, *node_token = NULL, *line;
        struct watch w = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
        struct xp_apiclient *client = NULL;
        struct xp_error err = {0};
        pid_t server = 0, agent = 0;
        double *latencies = NULL, *to_bound = NULL, *to_running = NULL, deadline, t0, agent_cpu = 0,
               server_cpu = 0;
        pthread_t thread;
        bool watching = false, keep = false;
        int c, rc = 1;

        while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
                switch (c) {
                case 'x':
                        xpool = optarg;
                        break;
                case 'l':
                        n_latency = strtol(optarg, NULL, 10);
                        break;
                case 't':
                        n_throughput = strtol(optarg, NULL, 10);
                        break;
                case 'i':
                        idle = strtol(optarg, NULL, 10);
                        break;
                case 'k':
                        keep = true;
                        break;
                case 'c':
                        n_clients = strtol(optarg, NULL, 10);
                        break;
                case 'n':
                        cni_conf_dir = optarg;
                        break;
                case 'r':
                        n_running = strtol(optarg, NULL, 10);
                        break;
                case 'D':
                        node_description = optarg;
                        break;
                case 'g':
                        pod_gpus = optarg;
                        break;
                case 'C':
                        pod_cpu = optarg;
                        break;
                case 'A':
                        agent_dir = optarg;
                        break;
                case 'S':
                        state_parent = optarg;
                        break;
                case 'F':
                        if (n_agent_flags == XP_ELEMENTSOF(agent_flags)) {
                                fprintf(stderr, "bench_pods: --agent-flag: at most 4\n");
                                return 2;
                        }
                        agent_flags[n_agent_flags++] = optarg;
                        break;
                case 'T':
                        pod_no_token = true;
                        break;
                case 'm':
                        short_command = optarg;
                        break;
                case 'P':
                        latency_pause_ms = strtol(optarg, NULL, 10);
                        break;
                default:
                        fprintf(
                            stderr,
                            "usage: bench_pods [--xpool PATH] [--latency N] [--throughput N] [--idle S] [--clients N] [--keep] [--cni-conf-dir DIR] [--running N] [--node-description FILE] [--gpus N] [--cpu Q] [--agent-dir DIR] [--state-dir DIR] [--agent-flag FLAG]... [--no-token] [--command WORDS] [--latency-pause MS]\n");
                        return 2;
                }
        }
        if (short_command[strspn(short_command, " ")] == '\0') {
                fprintf(stderr, "bench_pods: --command: no words\n");
                return 2;
        }
        if (n_latency < 1 || n_throughput < 1 || idle < 1 || n_clients < 1 ||
            n_clients > MAX_CLIENTS || n_running < 0 || n_running > 10000 || latency_pause_ms < 0 ||
            latency_pause_ms > 10000) {
                fprintf(stderr,
                        "bench_pods: counts and seconds are at least 1, clients at most %d, the "
                        "latency pause 0-10000 ms\n",
                        MAX_CLIENTS);
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        setvbuf(stdout, NULL, _IOLBF, 0);
        print_load("start");
        /* the running pods fit beside the kubelet's default 110 */
        snprintf(max_pods, sizeof(max_pods), "%ld", n_running + 110);
        snprintf(dir, sizeof(dir), "%s/bench-pods-XXXXXX", getenv("TMPDIR") ?: "/tmp");
        if (!mkdtemp(dir)) {
                fprintf(stderr, "bench_pods: mkdtemp %s: %s\n", dir, strerror(errno));
                return 1;
        }
        snprintf(data, sizeof(data), "%s/data", dir);
        snprintf(agent_data, sizeof(agent_data), "%s/agent", dir);
        if (agent_dir) {
                snprintf(agent_data, sizeof(agent_data), "%s/bench-pods-agent-XXXXXX", agent_dir);
                if (!mkdtemp(agent_data)) {
                        fprintf(
                            stderr, "bench_pods: mkdtemp %s: %s\n", agent_data, strerror(errno));
                        return 1;
                }
        }
        snprintf(netns_dir, sizeof(netns_dir), "%s/netns", dir);
        if (state_parent) {
                snprintf(state_dir, sizeof(state_dir), "%s/bench-pods-state-XXXXXX", state_parent);
                if (!mkdtemp(state_dir)) {
                        fprintf(stderr, "bench_pods: mkdtemp %s: %s\n", state_dir, strerror(errno));
                        return 1;
                }
        }

        /* a node token (before the server, which would take a second to see it), the server,
         * the agent */
        if (mkdir(data, 0700) < 0) {
                fprintf(stderr, "bench_pods: mkdir %s: %s\n", data, strerror(errno));
                goto out;
        }
        {
                /* the token alone is on stdout; no threads exist yet, so popen's fork is safe */
                char command[2048], text[512] = "";
                FILE *fp;

                snprintf(command,
                         sizeof(command),
                         "'%s' token create --node " NODE " --data-dir '%s' 2>/dev/null",
                         xpool,
                         data);
                fp = popen(command, "r");
                if (fp && fgets(text, sizeof(text), fp))
                        text[strcspn(text, "\r\n")] = '\0';
                if (fp)
                        pclose(fp);
                if (strncmp(text, "xpn_", 4) != 0) {
                        fprintf(stderr, "bench_pods: xpool token create gave no node token\n");
                        goto out;
                }
                node_token = strdup(text);
                if (!node_token)
                        goto out;
        }
        {
                char *args[] = {(char *)xpool,
                                "server",
                                "--listen",
                                "127.0.0.1:0",
                                "--no-tls",
                                "--data-dir",
                                data,
                                NULL};

                if (spawn("server.log", args, &server) < 0)
                        goto out;
        }
        for (deadline = now() + 15; now() < deadline && !url[0]; usleep(20000)) {
                unsigned port;

                line = grep_file("server.log", "listening on http://127.0.0.1:");
                if (line && sscanf(line, "listening on http://127.0.0.1:%u", &port) == 1)
                        snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
                free(line);
        }
        token = admin_token();
        if (!url[0] || !token) {
                fprintf(stderr, "bench_pods: the server did not come up; see %s/server.log\n", dir);
                goto out;
        }
        {
                char *args[] = {(char *)xpool,
                                "agent",
                                "--server",
                                url,
                                "--token",
                                node_token,
                                "--node-name",
                                NODE,
                                "--data-dir",
                                agent_data,
                                "--pod-network",
                                cni_conf_dir ? "cni" : "host",
                                "--cni-conf-dir",
                                (char *)(cni_conf_dir ? cni_conf_dir : "/nonexistent"),
                                "--netns-dir",
                                netns_dir,
                                "--default-runtime",
                                "process",
                                "--node-description",
                                (char *)node_description,
                                /* last, those given: without them the agent has its defaults */
                                NULL,
                                NULL,
                                NULL,
                                NULL,
                                NULL,
                                NULL,
                                NULL,
                                NULL,
                                NULL};
                size_t tail = XP_ELEMENTSOF(args) - 9;

                if (state_parent) {
                        args[tail++] = "--state-dir";
                        args[tail++] = state_dir;
                }
                if (n_running > 0) {
                        args[tail++] = "--max-pods";
                        args[tail++] = max_pods;
                }
                for (size_t i = 0; i < n_agent_flags; i++)
                        args[tail++] = (char *)agent_flags[i];
                if (spawn("agent.log", args, &agent) < 0)
                        goto out;
                node_cgroup_join(agent);
        }
        if (xp_apiclient_new(
                &(struct xp_apiclient_options){.server = url, .token = token}, &client, &err) < 0 ||
            xp_apiclient_new(&(struct xp_apiclient_options){.server = url, .token = token},
                             &w.client,
                             &err) < 0) {
                fprintf(stderr, "bench_pods: %s\n", xp_error_message(&err));
                goto out;
        }
        /* the node Ready */
        for (deadline = now() + 30;; usleep(100000)) {
                json_auto_t *node = NULL;
                const json_t *cond;
                size_t i;
                bool ready = false;

                if (xp_apiclient_json(
                        client, "GET", "/api/v1/nodes/" NODE, NULL, NULL, NULL, &node, NULL) >= 0)
                        json_array_foreach(
                            json_object_get(json_object_get(node, "status"), "conditions"), i, cond)
                            ready |=
                            json_is_string(json_object_get(cond, "status")) &&
                            strcmp(json_string_value(json_object_get(cond, "type")), "Ready") ==
                                0 &&
                            strcmp(json_string_value(json_object_get(cond, "status")), "True") == 0;
                if (ready)
                        break;
                if (now() > deadline) {
                        fprintf(stderr,
                                "bench_pods: node %s not Ready within 30 s; see %s/agent.log\n",
                                NODE,
                                dir);
                        goto out;
                }
        }
        printf("one node (server + agent, --no-tls) on 127.0.0.1; logs in %s", dir);
        printf(agent_dir ? "; the agent's directory %s\n" : "\n", agent_data);
        measure_idle("before any pod", agent, (int)idle);

        w.bound = json_object();
        w.running = json_object();
        w.succeeded = json_object();
        latencies = calloc((size_t)n_latency, sizeof(*latencies));
        to_bound = calloc((size_t)n_latency, sizeof(*to_bound));
        to_running = calloc((size_t)n_latency, sizeof(*to_running));
        if (!w.bound || !w.running || !w.succeeded || !latencies || !to_bound || !to_running ||
            pthread_create(&thread, NULL, watch_thread, &w) != 0)
                goto out;
        watching = true;
        usleep(200000); /* the watch open before the first create */
        if (n_running > 0 && measure_running(client, &w, agent, n_running, (int)idle) < 0)
                goto out;

        /* create -> Running, one pod at a time */
        (void)cpu_per_pod(agent, &agent_cpu, 0);
        for (long i = 0; i < n_latency; i++) {
                char name[64];
                double start, seen = 0, bound;

                snprintf(name, sizeof(name), "lat-%ld", i);
                start = now();
                if (create_pod(client, name, "sleep 600", true) < 0)
                        goto out;
                pthread_mutex_lock(&w.lock);
                while (!json_object_get(w.running, name) && now() < start + 60) {
                        struct timespec ts;

                        clock_gettime(CLOCK_REALTIME, &ts);
                        ts.tv_nsec += 50 * 1000 * 1000;
                        if (ts.tv_nsec >= 1000000000) {
                                ts.tv_sec++;
                                ts.tv_nsec -= 1000000000;
                        }
                        pthread_cond_timedwait(&w.changed, &w.lock, &ts);
                }
                if (json_object_get(w.running, name))
                        seen = json_real_value(json_object_get(w.running, name));
                /* the bind event may come in the same watch chunk as Running, never after */
                bound = json_object_get(w.bound, name)
                            ? json_real_value(json_object_get(w.bound, name))
                            : seen;
                pthread_mutex_unlock(&w.lock);
                if (!seen) {
                        fprintf(stderr, "bench_pods: %s not Running within 60 s\n", name);
                        goto out;
                }
                latencies[i] = seen - start;
                to_bound[i] = bound - start;
                to_running[i] = seen - bound;
                /* gone (grace 0) before the next: the node takes 110 pods at most */
                delete_pod(client, name);
                /* the node's teardown of it out of the next one's way: an idle node */
                if (latency_pause_ms > 0)
                        usleep((useconds_t)latency_pause_ms * 1000);
        }
        qsort(latencies, (size_t)n_latency, sizeof(*latencies), cmp_double);
        printf(
            "create -> Running, %ld pods one at a time (%ld ms apart): p50 %.1f ms, p99 %.1f ms, "
            "max %.1f ms\n",
            n_latency,
            latency_pause_ms,
            1e3 * percentile(latencies, (size_t)n_latency, 0.50),
            1e3 * percentile(latencies, (size_t)n_latency, 0.99),
            1e3 * latencies[n_latency - 1]);
        qsort(to_bound, (size_t)n_latency, sizeof(*to_bound), cmp_double);
        qsort(to_running, (size_t)n_latency, sizeof(*to_running), cmp_double);
        printf("  of which create -> bound (API + scheduler): p50 %.1f ms, p99 %.1f ms; "
               "bound -> Running (agent): p50 %.1f ms, p99 %.1f ms\n",
               1e3 * percentile(to_bound, (size_t)n_latency, 0.50),
               1e3 * percentile(to_bound, (size_t)n_latency, 0.99),
               1e3 * percentile(to_running, (size_t)n_latency, 0.50),
               1e3 * percentile(to_running, (size_t)n_latency, 0.99));
        printf("  agent CPU per pod (its own threads; create, start, delete): %.2f ms\n",
               1e3 * cpu_per_pod(agent, &agent_cpu, n_latency));

        /* throughput of short pods, created by --clients threads */
        (void)cpu_per_pod(server, &server_cpu, 0);
        node_cpu = node_cgroup_cpu();
        writes0 = count_writes(client);
        t0 = now();
        {
                struct creator creators[MAX_CLIENTS] = {0};
                long started = 0;
                bool failed = false;

                for (long i = 0; i < n_clients; i++) {
                        creators[i] = (struct creator){.url = url,
                                                       .token = token,
                                                       .first = i,
                                                       .step = n_clients,
                                                       .count = n_throughput};
                        if (pthread_create(
                                &creators[i].thread, NULL, creator_thread, &creators[i]) != 0)
                                break;
                        started++;
                }
                for (long i = 0; i < started; i++) {
                        pthread_join(creators[i].thread, NULL);
                        failed |= creators[i].failed;
                }
                if (failed || started < n_clients)
                        goto out;
        }
        printf("created %ld pods with %ld clients in %.2f s (%.0f/s)\n",
               n_throughput,
               n_clients,
               now() - t0,
               (double)n_throughput / (now() - t0));
        pthread_mutex_lock(&w.lock);
        for (deadline = now() + 600; now() < deadline;) {
                long done = 0;
                const char *key;
                json_t *v;

                json_object_foreach(w.succeeded, key, v) done += strncmp(key, "thr-", 4) == 0;
                if (done >= n_throughput)
                        break;
                pthread_mutex_unlock(&w.lock);
                usleep(100000);
                pthread_mutex_lock(&w.lock);
        }
        printf("%ld short pods (`%s`, restartPolicy Never) completed in %.2f s: %.1f pods/s\n",
               n_throughput,
               short_command,
               w.last_succeeded - t0,
               (double)n_throughput / (w.last_succeeded - t0));
        printf("  the last bound after %.2f s, the last started after %.2f s\n",
               latest(w.bound, "thr-", t0) - t0,
               latest(w.running, "thr-", t0) - t0);
        {
                double agent_ms = 1e3 * cpu_per_pod(agent, &agent_cpu, n_throughput);
                double node_ms =
                    node_cpu < 0 ? -1 : 1e3 * (node_cgroup_cpu() - node_cpu) / (double)n_throughput;

                printf("  agent CPU per short pod (its own threads): %.2f ms\n", agent_ms);
                if (node_ms >= 0)
                        printf("  agent and shims CPU per short pod (a cgroup of their own): %.2f "
                               "ms, of which the shims %.2f ms\n",
                               node_ms,
                               node_ms - agent_ms);
        }
        writes1 = count_writes(client);
        if (writes0.status >= 0 && writes1.status >= 0)
                printf("  the agent's writes per short pod: %.2f status PATCHes, %.2f Events, "
                       "%.2f TokenRequests\n",
                       (writes1.status - writes0.status) / (double)n_throughput,
                       (writes1.events - writes0.events) / (double)n_throughput,
                       (writes1.tokens - writes0.tokens) / (double)n_throughput);
        /* every writer's (API clients, agent, scheduler, controllers): the server's CPU per pod
         * follows its writes and the transactions they took */
        if (writes0.status >= 0 && writes1.status >= 0)
                printf(
                    "  the store's writes per short pod: %.2f in %.2f commits; %.1f unschedulable "
                    "scheduling attempts per short pod\n",
                    (writes1.store_writes - writes0.store_writes) / (double)n_throughput,
                    (writes1.commits - writes0.commits) / (double)n_throughput,
                    (writes1.unschedulable - writes0.unschedulable) / (double)n_throughput);
        /* the API, the scheduler and the controllers: on one node, the largest share */
        printf("  server CPU per short pod (all its threads): %.2f ms\n",
               1e3 * cpu_per_pod(server, &server_cpu, n_throughput));
        pthread_mutex_unlock(&w.lock);
        measure_idle("after the work", agent, (int)idle);
        print_load("end");
        rc = 0;
out:
        /* a failed run leaves no sleepers behind: the agent kills what is deleted */
        if (rc != 0 && client && agent > 0) {
                for (long i = 0; i < n_latency; i++) {
                        char name[64];

                        snprintf(name, sizeof(name), "lat-%ld", i);
                        delete_pod(client, name);
                }
                sleep(2);
        }
        if (watching) {
                xp_apiclient_cancel(w.client);
                pthread_join(thread, NULL);
        }
        stop(agent);
        node_cgroup_remove();
        stop(server);
        xp_apiclient_free(client);
        xp_apiclient_free(w.client);
        json_decref(w.bound);
        json_decref(w.running);
        json_decref(w.succeeded);
        free(latencies);
        free(to_bound);
        free(to_running);
        free(token);
        free(node_token);
        if (cni_conf_dir)
                (void)umount2(netns_dir, MNT_DETACH);
        if (rc == 0 && !keep) {
                nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
                if (agent_dir)
                        nftw(agent_data, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
                if (state_parent)
                        nftw(state_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        }
        return rc;
}
