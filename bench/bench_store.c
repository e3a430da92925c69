/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Durable creates through the store: N threads create pod-sized JSON objects until COUNT are
 * written, each create acknowledged only once fsync'ed. Prints creates/s, p50/p99 latency per
 * create, commits (fsyncs) per write, which shows group commit at work, the context switches per
 * create (the writers' sleeps and wake-ups) and the peak RSS.
 * Prints figures; asserts nothing.
 *
 *   build/bench/bench_store [THREADS [COUNT [DIR [BYTES]]]]   defaults: 32 20000 $TMPDIR or /tmp
 *
 * BYTES pads the pod with an annotation to about that size: the API server stores a pod of about
 * 2,000 bytes (its defaults and the kube-api-access volume), past what a 4 KiB page keeps in its
 * row.
 *
 * Also prints the CPU per create and how long opening the store it wrote takes (the database
 * checks of a server's start, page cache warm).
 *
 *   build/bench/bench_store --upgrade [THREADS [COUNT [DIR [BYTES]]]]
 *
 * also turns the store written into a schema 3 store (its objects table WITHOUT ROWID, rebuilt
 * by SQL) and times the open that upgrades it to schema 4, then an open with nothing to upgrade.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "xpool/store.h"

/* A realistic pod as the API server would store it: about 1 KiB of JSON. */
static const char pod_json[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"NAME\",\"namespace\":"
    "\"research\",\"uid\":\"6f1c2b9e-3d4a-4e8b-9a51-0c7d2e8f4b13\",\"creationTimestamp\":\"2026-"
    "01-15T10:20:30Z\",\"labels\":{\"app\":\"trainer\",\"job\":\"llm\",\"tier\":\"gpu\"},"
    "\"annotations\":{\"owner\":\"team-a\"}},\"spec\":{\"containers\":[{\"name\":\"trainer\","
    "\"image\":\"ai-framework:latest\",\"command\":[\"python\",\"train.py\",\"--epochs\",\"3\"],"
    "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"INFO\"},{\"name\":\"OMP_NUM_THREADS\",\"value\":"
    "\"8\"}],\"resources\":{\"limits\":{\"cpu\":\"8\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"4\"},"
    "\"requests\":{\"cpu\":\"4\",\"memory\":\"32Gi\",\"nvidia.com/gpu\":\"4\"}},\"ports\":[{"
    "\"containerPort\":29500,\"protocol\":\"TCP\"}],\"terminationMessagePath\":\"/dev/termination-"
    "log\",\"imagePullPolicy\":\"IfNotPresent\"}],\"restartPolicy\":\"Never\",\"schedulerName\":"
    "\"xpool\",\"nodeSelector\":{\"xpool.io/gpu-product\":\"H100-SXM\"},\"tolerations\":[{\"key\":"
    "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"affinity\":{"
    "\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":"
    "{\"matchLabels\":{\"job\":\"llm\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}},"
    "\"status\":{\"phase\":\"Pending\",\"qosClass\":\"Burstable\"}}";

static struct xp_store *store;
static json_t *template;
static size_t pod_bytes = sizeof(pod_json) - 1;
static long count;
static atomic_long next_index;
static double *latencies; /* seconds, one per create, indexed by the create's number */
static atomic_int failed;

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
        (void)arg;
        for (;;) {
                long i = atomic_fetch_add(&next_index, 1);
                struct xp_error err = {0};
                char name[32];
                json_t *o;
                double t;

                if (i >= count)
                        return NULL;
                snprintf(name, sizeof(name), "trainer-%ld", i);
                o = json_deep_copy(template);
                if (!o || json_object_set_new(
                              json_object_get(o, "metadata"), "name", json_string(name)) < 0) {
                        fprintf(stderr, "bench_store: out of memory\n");
                        atomic_store(&failed, 1);
                        json_decref(o);
                        return NULL;
                }
                t = now();
                if (xp_store_create(store, "Pod", "research", name, o, NULL, &err) < 0) {
                        fprintf(stderr, "bench_store: %s\n", err.msg);
                        atomic_store(&failed, 1);
                        json_decref(o);
                        return NULL;
                }
                latencies[i] = now() - t;
                json_decref(o);
        }
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static double cpu_seconds(const struct rusage *u)
{
        return (double)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) +
               (double)(u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1e6;
}

/* Pads the template's annotations with one of about the size that makes its text BYTES long. */
static int pad_template(long bytes)
{
        const size_t overhead = sizeof(",\"padding\":\"\"") - 1;
        json_t *annotations = json_object_get(json_object_get(template, "metadata"), "annotations");
        size_t n;
        char *pad;
        int r;

        if (bytes < 0 || (size_t)bytes < pod_bytes + overhead)
                return 0;
        n = (size_t)bytes - pod_bytes - overhead;
        pad = malloc(n + 1);
        if (!pad)
                return -1;
        memset(pad, 'x', n);
        pad[n] = '\0';
        r = json_object_set_new(annotations, "padding", json_string(pad));
        free(pad);
        pod_bytes = (size_t)bytes;
        return r;
}

/* The open of the store just written (what a server's start pays for it), wall and CPU. */
static int time_reopen(const struct xp_store_options *options)
{
        struct xp_error err = {0};
        struct xp_store *again = NULL;
        struct rusage before, after;
        double t0 = now();

        getrusage(RUSAGE_SELF, &before);
        if (xp_store_open(options, &again, &err) < 0) {
                fprintf(stderr, "bench_store: reopen failed: %s\n", err.msg);
                return 1;
        }
        getrusage(RUSAGE_SELF, &after);
        printf("reopen             %10.1f ms (%.1f ms CPU)\n",
               (now() - t0) * 1e3,
               (cpu_seconds(&after) - cpu_seconds(&before)) * 1e3);
        xp_store_close(again);
        return 0;
}

/* The store at path as schema 3 kept it: its objects table WITHOUT ROWID, rows as they are. */
static int make_schema3(const char *path)
{
        static const char sql[] =
            "BEGIN;"
            "CREATE TABLE objects_v3 (kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT "
            "NULL, version INTEGER NOT NULL, body TEXT NOT NULL, checksum INTEGER, PRIMARY KEY "
            "(kind, namespace, name)) WITHOUT ROWID;"
            "INSERT INTO objects_v3 SELECT kind, namespace, name, version, body, checksum FROM "
            "objects;"
            "DROP TABLE objects; ALTER TABLE objects_v3 RENAME TO objects;"
            "PRAGMA user_version = 3; COMMIT; VACUUM";
        sqlite3 *db = NULL;
        char *msg = NULL;
        double t0 = now();
        int rc = sqlite3_open(path, &db);

        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
        if (rc != SQLITE_OK)
                fprintf(stderr, "bench_store: to schema 3: %s\n", msg ?: sqlite3_errmsg(db));
        else
                printf("to schema 3        %10.1f ms (by SQL, vacuumed)\n", (now() - t0) * 1e3);
        sqlite3_free(msg);
        sqlite3_close(db);
        return rc == SQLITE_OK ? 0 : 1;
}

/* The run's figures (from the store's counters and the process's usage): 1 when a create failed. */
static int print_results(double elapsed)
{
        struct xp_store_stats stats;
        struct rusage usage;
        int r = 0;

        if (atomic_load(&failed)) {
                r = 1;
        } else {
                xp_store_stats(store, &stats);
                qsort(latencies, (size_t)count, sizeof(*latencies), cmp_double);
                printf("creates/s          %10.0f\n", (double)count / elapsed);
                printf("latency p50        %10.2f ms\n", latencies[count / 2] * 1e3);
                printf("latency p99        %10.2f ms\n",
                       latencies[(size_t)((double)count * 0.99)] * 1e3);
                printf("latency max        %10.2f ms\n", latencies[count - 1] * 1e3);
                printf("commits (fsyncs)   %10" PRIu64 " for %" PRIu64
                       " writes: %.3f per write, %.1f writes per commit, at most %" PRIu64 "\n",
                       stats.commits,
                       stats.writes,
                       (double)stats.commits / (double)stats.writes,
                       (double)stats.writes / (double)stats.commits,
                       stats.max_batch);
                printf("checkpoints        %10" PRIu64 "\n", stats.checkpoints);
        }
        getrusage(RUSAGE_SELF, &usage);
        printf("CPU per create     %10.1f us (user+system of the whole process)\n",
               cpu_seconds(&usage) * 1e6 / (double)count);
        printf("switches           %10.2f voluntary, %.2f preempted per create\n",
               (double)usage.ru_nvcsw / (double)count,
               (double)usage.ru_nivcsw / (double)count);
        printf("peak RSS           %10ld KiB\n", usage.ru_maxrss);
        return r;
}

int main(int argc, char **argv)
{
        bool upgrade = argc > 1 && strcmp(argv[1], "--upgrade") == 0;
        long threads = argc > 1 + upgrade ? strtol(argv[1 + upgrade], NULL, 10) : 32;
        const char *tmpdir = argc > 3 + upgrade ? argv[3 + upgrade] : (getenv("TMPDIR") ?: "/tmp");
        struct xp_store_options options = {0};
        struct xp_error err = {0};
        char dir[512], path[600], side[640];
        pthread_t *th;
        double t0, elapsed;
        int r = 0;

        if (upgrade) {
                argc--;
                argv++;
        }
        count = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
        if (threads < 1 || threads > 1024 || count < 1) {
                fprintf(
                    stderr,
                    "usage: bench_store [--upgrade] [THREADS (1-1024) [COUNT [DIR [BYTES]]]]\n");
                return 2;
        }
        snprintf(dir, sizeof(dir), "%s/bench-store-XXXXXX", tmpdir);
        if (!mkdtemp(dir)) {
                perror("bench_store: mkdtemp");
                return 1;
        }
        snprintf(path, sizeof(path), "%s/state.db", dir);
        template = json_loads(pod_json, 0, NULL);
        latencies = calloc((size_t)count, sizeof(*latencies));
        th = calloc((size_t)threads, sizeof(*th));
        options.path = path;
        if (!template || !latencies || !th ||
            pad_template(argc > 4 ? strtol(argv[4], NULL, 10) : 0) < 0 ||
            xp_store_open(&options, &store, &err) < 0) {
                fprintf(stderr, "bench_store: setup failed: %s\n", err.msg);
                return 1;
        }

        printf("%ld threads, %ld creates of a %zu-byte pod, database %s\n",
               threads,
               count,
               pod_bytes,
               path);
        t0 = now();
        for (long i = 0; i < threads; i++)
                if (pthread_create(&th[i], NULL, worker, NULL) != 0) {
                        fprintf(stderr, "bench_store: cannot start thread %ld\n", i);
                        return 1;
                }
        for (long i = 0; i < threads; i++)
                pthread_join(th[i], NULL);
        elapsed = now() - t0;

        r = print_results(elapsed);

        xp_store_close(store);
        if (!r && upgrade) {
                r = make_schema3(path);
                if (!r)
                        printf("the next open upgrades it to schema 4:\n");
                if (!r)
                        r = time_reopen(&options);
        }
        if (!r)
                r = time_reopen(&options);
        json_decref(template);
        free(latencies);
        free(th);
        unlink(path);
        snprintf(side, sizeof(side), "%s-wal", path);
        unlink(side);
        snprintf(side, sizeof(side), "%s-shm", path);
        unlink(side);
        snprintf(side, sizeof(side), "%s.seal", path);
        unlink(side);
        rmdir(dir);
        return r;
}
