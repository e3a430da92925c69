/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helper of tests/integration/03-store-crash.sh.
 *
 *   store_crash write DB THREADS PREFIX   creates PREFIX-T-N objects from THREADS threads as fast
 *                                          as it can, printing each name on stdout (flushed) only
 *                                          after xp_store_create() returned 0; runs until killed
 *   store_crash check DB ACKED            reopens DB and checks every name listed in the file
 *                                          ACKED is there, versions are distinct, and new writes
 *                                          get versions above every stored one
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/store.h"

static struct xp_store *store;
static const char *prefix;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void *writer(void *arg)
{
        long id = (long)arg;

        for (long i = 0;; i++) {
                struct xp_error err = {0};
                char name[64];
                json_t *o;
                uint64_t v;
                int r;

                snprintf(name, sizeof(name), "%s-%ld-%ld", prefix, id, i);
                o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:s, s:s}]}}",
                              "apiVersion",
                              "v1",
                              "kind",
                              "Pod",
                              "metadata",
                              "name",
                              name,
                              "namespace",
                              "default",
                              "spec",
                              "containers",
                              "name",
                              "main",
                              "image",
                              "busybox");
                if (!o) {
                        fprintf(stderr, "store_crash: out of memory\n");
                        exit(1);
                }
                r = xp_store_create(store, "Pod", "default", name, o, &v, &err);
                json_decref(o);
                if (r < 0) {
                        fprintf(stderr, "store_crash: create %s: %s\n", name, err.msg);
                        exit(1);
                }
                /* acknowledged: only now does the name go out */
                pthread_mutex_lock(&out_lock);
                printf("%s %" PRIu64 "\n", name, v);
                fflush(stdout);
                pthread_mutex_unlock(&out_lock);
        }
        return NULL;
}

static int do_write(const char *path, long threads)
{
        struct xp_store_options options = {.path = path};
        struct xp_error err = {0};
        pthread_t th[64];

        if (threads < 1 || threads > 64) {
                fprintf(stderr, "store_crash: 1 to 64 threads\n");
                return 2;
        }
        if (xp_store_open(&options, &store, &err) < 0) {
                fprintf(stderr, "store_crash: %s\n", err.msg);
                return 1;
        }
        for (long i = 0; i < threads; i++)
                if (pthread_create(&th[i], NULL, writer, (void *)i) != 0) {
                        fprintf(stderr, "store_crash: cannot start a thread\n");
                        return 1;
                }
        for (long i = 0; i < threads; i++)
                pthread_join(th[i], NULL);
        return 0;
}

static int do_check(const char *path, const char *acked_path)
{
        struct xp_store_options options = {.path = path};
        struct xp_error err = {0};
        struct xp_store *s = NULL;
        json_t *items = NULL, *o;
        uint64_t max_version = 0, list_version = 0, v, acked_version;
        char line[256], name[200];
        long n_acked = 0, missing = 0;
        FILE *fp;
        int r = 0;

        if (xp_store_open(&options, &s, &err) < 0) {
                fprintf(stderr, "store_crash: %s\n", err.msg);
                return 1;
        }
        fp = fopen(acked_path, "re");
        if (!fp) {
                fprintf(stderr, "store_crash: %s: %s\n", acked_path, strerror(errno));
                xp_store_close(s);
                return 1;
        }
        while (fgets(line, sizeof(line), fp)) {
                /* the kill may cut the last line short: only whole lines were acknowledged */
                if (!strchr(line, '\n') ||
                    sscanf(line, "%199s %" SCNu64, name, &acked_version) != 2)
                        continue;
                n_acked++;
                if (xp_store_get(s, "Pod", "default", name, NULL, &v, &err) < 0) {
                        fprintf(
                            stderr, "store_crash: acknowledged %s is lost: %s\n", name, err.msg);
                        missing++;
                } else if (v != acked_version) {
                        fprintf(stderr,
                                "store_crash: %s acknowledged as version %" PRIu64
                                ", stored as %" PRIu64 "\n",
                                name,
                                acked_version,
                                v);
                        missing++;
                }
        }
        fclose(fp);

        if (xp_store_list(s, "Pod", NULL, &items, &list_version, &err) < 0) {
                fprintf(stderr, "store_crash: list: %s\n", err.msg);
                xp_store_close(s);
                return 1;
        }
        for (size_t i = 0; i < json_array_size(items); i++) {
                const char *rv = json_string_value(json_object_get(
                    json_object_get(json_array_get(items, i), "metadata"), "resourceVersion"));
                uint64_t iv = rv ? strtoull(rv, NULL, 10) : 0;

                if (iv > max_version)
                        max_version = iv;
        }
        if (max_version > list_version || list_version != xp_store_version(s)) {
                fprintf(stderr,
                        "store_crash: stored versions up to %" PRIu64 ", counter %" PRIu64
                        ", store version %" PRIu64 "\n",
                        max_version,
                        list_version,
                        xp_store_version(s));
                r = 1;
        }
        snprintf(name, sizeof(name), "after-crash-%" PRIu64, list_version);
        o = json_pack("{s:{s:s}}", "metadata", "name", name);
        if (!o || xp_store_create(s, "Pod", "default", name, o, &v, &err) < 0) {
                fprintf(stderr, "store_crash: create after the crash: %s\n", err.msg);
                r = 1;
        } else if (v <= list_version) {
                fprintf(stderr,
                        "store_crash: new write got version %" PRIu64 ", not above %" PRIu64 "\n",
                        v,
                        list_version);
                r = 1;
        }
        json_decref(o);
        printf("acknowledged %ld, stored %zu, lost %ld, counter %" PRIu64 "\n",
               n_acked,
               json_array_size(items),
               missing,
               list_version);
        json_decref(items);
        xp_store_close(s);
        return r || missing || n_acked == 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
        if (argc == 5 && strcmp(argv[1], "write") == 0) {
                prefix = argv[4];
                return do_write(argv[2], strtol(argv[3], NULL, 10));
        }
        if (argc == 4 && strcmp(argv[1], "check") == 0)
                return do_check(argv[2], argv[3]);
        fprintf(stderr, "usage: store_crash write DB THREADS PREFIX | check DB ACKED\n");
        return 2;
}
