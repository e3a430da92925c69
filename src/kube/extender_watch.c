/* SPDX-License-Identifier: Apache-2.0 */
/*
 * List and watch of one collection for the extender, as client-go's reflector does: a list in
 * pages of 500 (limit/continue), then a watch from the list's resourceVersion with bookmarks,
 * resumed from the last version seen when the server ends it, and a new list when that version
 * is too old (410 Gone, as an event or as the answer). The consumer gets the whole collection
 * after each list (so what went away while nobody watched is dropped) and each event after.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_internal.h"
#include "xpool/client.h"
#include "xpool/kubeapi.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"

#define PAGE_SIZE          "500"
#define RETRY_FIRST_MS     1000
#define RETRY_MAX_MS       30000
#define REQUEST_TIMEOUT_MS 60000
#define PATH_MAX_LEN       2048

struct ext_watch {
        char *path;
        char *selector;
        struct ext_watch_ops ops;
        void *userdata;
        struct xp_kube_api api;
        pthread_mutex_t lock; /* client swaps, against ext_watch_stop()'s cancel */
        struct xp_apiclient *client;
        pthread_t thread;
        atomic_bool stopping;
        atomic_bool synced;
        char *rv;
};

/* A fresh client when there is none or the service account token changed. */
static int ensure_client(struct ext_watch *w, struct xp_error *err)
{
        return xp_kube_api_client(
            &w->api, REQUEST_TIMEOUT_MS, &w->lock, &w->stopping, &w->client, err);
}

static int query(char *buf, const char *key, const char *value)
{
        return value ? xp_apiclient_add_query(buf, PATH_MAX_LEN, key, value) : 0;
}

/* Lists every page and hands the whole collection over. */
static int list(struct ext_watch *w, struct xp_error *err)
{
        json_auto_t *items = json_array();
        _cleanup_free_ char *cont = NULL, *rv = NULL;
        int r;

        if (!items)
                return -ENOMEM;
        do {
                json_auto_t *page = NULL;
                char path[PATH_MAX_LEN];
                const json_t *meta;

                snprintf(path, sizeof(path), "%s", w->path);
                if ((r = query(path, "limit", PAGE_SIZE)) < 0 ||
                    (r = query(path, "fieldSelector", w->selector)) < 0 ||
                    (r = query(path, "continue", cont)) < 0)
                        return xp_errorf(err, r, "listing %s: the path is too long", w->path);
                r = xp_apiclient_json(w->client, "GET", path, NULL, NULL, NULL, &page, err);
                if (r < 0)
                        return r;
                if (!json_is_array(json_object_get(page, "items")) ||
                    json_array_extend(items, json_object_get(page, "items")) < 0)
                        return xp_errorf(
                            err, -EBADMSG, "listing %s: the answer has no items list", w->path);
                meta = json_object_get(page, "metadata");
                free(cont);
                free(rv);
                cont = json_string_value(json_object_get(meta, "continue")) &&
                               *json_string_value(json_object_get(meta, "continue"))
                           ? strdup(json_string_value(json_object_get(meta, "continue")))
                           : NULL;
                rv = json_string_value(json_object_get(meta, "resourceVersion"))
                         ? strdup(json_string_value(json_object_get(meta, "resourceVersion")))
                         : NULL;
        } while (cont);
        r = w->ops.replace(w->userdata, items, err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                xp_log(LOG_WARNING, "extender: %s: %s", w->path, xp_error_message(err));
        free(w->rv);
        w->rv = TAKE_PTR(rv);
        atomic_store(&w->synced, true);
        return 0;
}

static int on_line(const char *line, size_t len, void *userdata)
{
        struct ext_watch *w = userdata;
        struct xp_error err = {0};
        json_error_t jerr;
        json_auto_t *event = len ? json_loads(line, 0, &jerr) : NULL;
        const char *type = json_string_value(json_object_get(event, "type")), *rv;
        const json_t *object = json_object_get(event, "object");

        if (!len)
                return 0; /* a keep-alive newline */
        if (!type || !json_is_object(object)) {
                xp_log(LOG_WARNING,
                       "extender: %s: ignoring a watch line that is not an event",
                       w->path);
                return 0;
        }
        if (strcmp(type, "ERROR") == 0)
                return json_integer_value(json_object_get(object, "code")) == 410 ? -ESTALE : -EIO;
        rv = json_string_value(
            json_object_get(json_object_get(object, "metadata"), "resourceVersion"));
        if (strcmp(type, "BOOKMARK") != 0 && w->ops.event(w->userdata, type, object, &err) < 0)
                xp_log(LOG_WARNING,
                       "extender: %s: %s event: %s",
                       w->path,
                       type,
                       xp_error_message(&err));
        if (rv) {
                char *copy = strdup(rv);
                if (!copy)
                        return -ENOMEM;
                free(w->rv);
                w->rv = copy;
        }
        return 0;
}

static int watch(struct ext_watch *w, struct xp_error *err)
{
        char path[PATH_MAX_LEN];
        int r;

        snprintf(path, sizeof(path), "%s", w->path);
        if ((r = query(path, "watch", "true")) < 0 ||
            (r = query(path, "allowWatchBookmarks", "true")) < 0 ||
            (r = query(path, "fieldSelector", w->selector)) < 0 ||
            (r = query(path, "resourceVersion", w->rv)) < 0)
                return xp_errorf(err, r, "watching %s: the path is too long", w->path);
        return xp_apiclient_stream_lines(w->client, path, NULL, on_line, w, err);
}

static void sleep_ms(struct ext_watch *w, int64_t ms)
{
        for (int64_t slept = 0; slept < ms && !atomic_load(&w->stopping); slept += 100)
                nanosleep(&(struct timespec){.tv_nsec = 100 * 1000000}, NULL);
}

static void *watch_main(void *userdata)
{
        struct ext_watch *w = userdata;
        int64_t retry = RETRY_FIRST_MS;
        bool listed = false;

        while (!atomic_load(&w->stopping)) {
                struct xp_error err = {0};
                int64_t started = xp_monotonic_ms();
                int r = ensure_client(w, &err);

                if (r >= 0 && !listed)
                        r = list(w, &err);
                listed = listed || r >= 0;
                if (r >= 0)
                        r = watch(w, &err);
                if (r == -ESTALE) {
                        listed = false; /* our version fell out of the server's window */
                        continue;
                }
                if (atomic_load(&w->stopping))
                        break;
                if (r >= 0) {
                        /* the server ended the stream: resume, but never spin on a server that
                         * ends every watch at once */
                        if (xp_monotonic_ms() - started < 1000)
                                sleep_ms(w, 200);
                        retry = RETRY_FIRST_MS;
                        continue;
                }
                xp_log(LOG_WARNING,
                       "extender: %s of %s failed, retrying in %lld ms: %s",
                       listed ? "watching" : "listing",
                       w->path,
                       (long long)retry,
                       xp_error_message(&err));
                sleep_ms(w, retry);
                retry = retry * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : retry * 2;
        }
        return NULL;
}

void ext_watch_stop(struct ext_watch *w)
{
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        atomic_store(&w->stopping, true);
        if (w->client)
                xp_apiclient_cancel(w->client);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        pthread_mutex_destroy(&w->lock);
        xp_apiclient_free(w->client);
        xp_kube_api_done(&w->api);
        free(w->path);
        free(w->selector);
        free(w->rv);
        free(w);
}

int ext_watch_start(const char *path,
                    const char *field_selector,
                    const char *kubeconfig,
                    const char *sa_dir,
                    const struct ext_watch_ops *ops,
                    void *userdata,
                    struct ext_watch **ret,
                    struct xp_error *err)
{
        struct ext_watch *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->path = strdup(path);
        w->selector = field_selector ? strdup(field_selector) : NULL;
        w->ops = *ops;
        w->userdata = userdata;
        pthread_mutex_init(&w->lock, NULL);
        r = w->path && (!field_selector || w->selector)
                ? xp_kube_api_load(kubeconfig, sa_dir, &w->api, err)
                : -ENOMEM;
        if (r >= 0)
                r = -pthread_create(&w->thread, NULL, watch_main, w);
        if (r < 0) {
                pthread_mutex_destroy(&w->lock);
                xp_kube_api_done(&w->api);
                free(w->path);
                free(w->selector);
                free(w);
                return r == -ENOMEM ? xp_errorf(err, r, "out of memory") : r;
        }
        *ret = w;
        return 0;
}

bool ext_watch_synced(struct ext_watch *w)
{
        return w && atomic_load(&w->synced);
}
