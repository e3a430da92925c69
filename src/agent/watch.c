/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods of this node: list /api/v1/pods?fieldSelector=spec.nodeName=NAME, then watch from the
 * list's resourceVersion, resuming from the last event's after the stream ends, and listing again
 * on 410 Gone, after a failure (the server was away: the new list is what every pod's status is
 * compared with) and when the lease thread saw the server come back. What it sees goes into
 * agent->pods, and the reconcile loop is woken.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"
#include "xpool/log.h"

int xp_agent_pods_init(struct xp_agent_pods *pods)
{
        *pods = (struct xp_agent_pods){.wake_fd = -1};
        pods->pods = json_object();
        pods->dirty = json_object();
        pods->done = json_object();
        if (!pods->pods || !pods->dirty || !pods->done) {
                json_decref(pods->pods);
                json_decref(pods->dirty);
                json_decref(pods->done);
                return -ENOMEM;
        }
        pthread_mutex_init(&pods->lock, NULL);
        return 0;
}

void xp_agent_pods_done(struct xp_agent_pods *pods)
{
        if (!pods->pods)
                return;
        json_decref(pods->pods);
        json_decref(pods->dirty);
        json_decref(pods->done);
        pthread_mutex_destroy(&pods->lock);
        pods->pods = pods->dirty = pods->done = NULL;
}

static void wake(struct xp_agent_pods *pods)
{
        uint64_t one = 1;
        ssize_t n = 0;

        /* an eventfd write fails only when the counter is full: the loop is woken then anyway */
        if (pods->wake_fd >= 0)
                n = write(pods->wake_fd, &one, sizeof(one));
        (void)n;
}

void xp_agent_pods_resync(struct xp_agent_pods *pods)
{
        atomic_store(&pods->relist, true);
        pthread_mutex_lock(&pods->lock);
        pods->resync = true;
        pthread_mutex_unlock(&pods->lock);
        wake(pods);
}

/* Sets uid to pod (NULL: deleted) and marks it dirty; the caller holds the lock. */
static int set_pod(struct xp_agent_pods *pods, const char *uid, json_t *pod)
{
        json_auto_t *kept = NULL;

        /* the field managers' records are the server's business and a third of a pod's size */
        if (pod)
                json_object_del(json_object_get(pod, "metadata"), "managedFields");
        /* a done pod stays on the server until it is deleted (its status echoed back, relists):
         * the agent, holding every pod of its node, keeps only the little it still needs */
        if (pod && json_object_get(pods->done, uid)) {
                kept = pod = xp_agent_pod_slim(pod);
                if (!kept)
                        return -ENOMEM;
        }
        if (!pod)
                json_object_del(pods->done, uid);
        if (json_object_set(pods->pods, uid, pod ? pod : json_null()) < 0 ||
            json_object_set_new(pods->dirty, uid, json_true()) < 0)
                return -ENOMEM;
        return 0;
}

static const char *pod_uid(const json_t *pod)
{
        return json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
}

int xp_agent_pods_apply_list(struct xp_agent_pods *pods, const json_t *list, struct xp_error *err)
{
        const json_t *items = json_object_get(list, "items");
        json_auto_t *seen = json_object();
        const char *uid;
        json_t *pod;
        void *tmp;
        size_t i;
        int r = 0;

        if (!seen)
                return -ENOMEM;
        if (!json_is_array(items))
                return xp_errorf(err, -EBADMSG, "the pod list has no items array");
        pthread_mutex_lock(&pods->lock);
        json_array_foreach(items, i, pod)
        {
                uid = pod_uid(pod);
                if (!uid) {
                        r = xp_errorf(err, -EBADMSG, "items[%zu].metadata.uid: missing", i);
                        break;
                }
                if (json_object_set_new(seen, uid, json_true()) < 0 ||
                    set_pod(pods, uid, pod) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        json_object_foreach_safe(pods->pods, tmp, uid, pod) if (r >= 0 && !json_is_null(pod) &&
                                                                !json_object_get(seen, uid) &&
                                                                set_pod(pods, uid, NULL) < 0) r =
            -ENOMEM;
        if (r >= 0)
                pods->listed = true;
        pthread_mutex_unlock(&pods->lock);
        if (r >= 0)
                wake(pods);
        return r;
}

int xp_agent_pods_apply_event(struct xp_agent_pods *pods,
                              const char *line,
                              char **ret_rv,
                              struct xp_error *err)
{
        json_error_t jerr;
        json_auto_t *event = json_loads(line, 0, &jerr);
        const char *type = json_string_value(json_object_get(event, "type"));
        json_t *object = json_object_get(event, "object");
        const char *uid, *rv;
        char *rv_copy;
        int r;

        if (!event)
                return xp_errorf(
                    err, -EBADMSG, "watch event: %d:%d: %s", jerr.line, jerr.column, jerr.text);
        if (!type || !json_is_object(object))
                return xp_errorf(err, -EBADMSG, "watch event without type or object");
        if (strcmp(type, "ERROR") == 0) {
                json_int_t code = json_integer_value(json_object_get(object, "code"));
                const char *message = json_string_value(json_object_get(object, "message"));

                return xp_errorf(err,
                                 code == 410 ? -ESTALE : -EIO,
                                 "watch error %lld: %s",
                                 (long long)code,
                                 message ? message : "(no message)");
        }
        rv = json_string_value(
            json_object_get(json_object_get(object, "metadata"), "resourceVersion"));
        rv_copy = rv ? strdup(rv) : NULL;
        if (rv && !rv_copy)
                return -ENOMEM;
        if (strcmp(type, "BOOKMARK") != 0) {
                uid = pod_uid(object);
                if (!uid) {
                        free(rv_copy);
                        return xp_errorf(
                            err, -EBADMSG, "%s event: object.metadata.uid: missing", type);
                }
                pthread_mutex_lock(&pods->lock);
                r = set_pod(pods, uid, strcmp(type, "DELETED") == 0 ? NULL : object);
                pthread_mutex_unlock(&pods->lock);
                if (r < 0) {
                        free(rv_copy);
                        return r;
                }
                wake(pods);
        }
        *ret_rv = rv_copy;
        return 0;
}

struct watch {
        struct xp_agent *agent;
        char *rv;
};

static int on_event(const char *data, size_t len, void *userdata)
{
        struct watch *w = userdata;
        struct xp_error err = {0};
        char *rv = NULL;
        int r;

        (void)len;
        /* the server came back while this stream stayed open: list again, so what the agent
         * compares its pods with is what the server holds now */
        if (atomic_exchange(&w->agent->pods.relist, false))
                return -ESTALE;
        r = xp_agent_pods_apply_event(&w->agent->pods, data, &rv, &err);
        if (r == -ESTALE)
                return r;
        if (r < 0) {
                xp_log(
                    LOG_WARNING, "agent: ignoring a pod watch event: %s", xp_error_message(&err));
                return 0;
        }
        if (rv) {
                free(w->rv);
                w->rv = rv;
        }
        return 0;
}

static int list_pods(struct xp_agent *agent,
                     struct xp_apiclient *client,
                     struct watch *w,
                     struct xp_error *err)
{
        json_auto_t *list = NULL;
        char path[1024] = "/api/v1/pods", selector[512];
        const char *rv;
        int r;

        snprintf(selector, sizeof(selector), "spec.nodeName=%s", agent->node_name);
        r = xp_apiclient_add_query(path, sizeof(path), "fieldSelector", selector);
        if (r < 0)
                return r;
        r = xp_apiclient_json(client, "GET", path, NULL, NULL, NULL, &list, err);
        if (r < 0)
                return r;
        r = xp_agent_pods_apply_list(&agent->pods, list, err);
        if (r < 0)
                return r;
        rv = json_string_value(
            json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
        free(w->rv);
        w->rv = rv ? strdup(rv) : NULL;
        return w->rv || !rv ? 0 : -ENOMEM;
}

static int watch_pods(struct xp_agent *agent,
                      struct xp_apiclient *client,
                      struct watch *w,
                      struct xp_error *err)
{
        char path[1024] = "/api/v1/pods", selector[512];
        int r;

        snprintf(selector, sizeof(selector), "spec.nodeName=%s", agent->node_name);
        if ((r = xp_apiclient_add_query(path, sizeof(path), "watch", "true")) < 0 ||
            (r = xp_apiclient_add_query(path, sizeof(path), "fieldSelector", selector)) < 0 ||
            (r = xp_apiclient_add_query(path, sizeof(path), "allowWatchBookmarks", "true")) < 0 ||
            (w->rv &&
             (r = xp_apiclient_add_query(path, sizeof(path), "resourceVersion", w->rv)) < 0))
                return r;
        return xp_apiclient_stream_lines(client, path, NULL, on_event, w, err);
}

void *xp_agent_watch_thread(void *userdata)
{
        struct xp_agent *agent = userdata;
        struct watch w = {.agent = agent};
        struct xp_error err = {0};
        bool listed = false;
        int r;

        while (!atomic_load(&agent->stopping)) {
                xp_error_clear(&err);
                if (!listed)
                        atomic_store(&agent->pods.relist, false);
                r = listed ? 0 : list_pods(agent, agent->watch_client, &w, &err);
                if (r >= 0) {
                        int64_t started = xp_agent_now_ns();

                        listed = true;
                        r = watch_pods(agent, agent->watch_client, &w, &err);
                        /* a server ending every watch at once must not make this spin */
                        if (r >= 0 && xp_agent_now_ns() - started < 1000000000 &&
                            xp_agent_sleep(agent, 200))
                                break;
                }
                if (r == -ESTALE) {
                        /* our resourceVersion fell out of the server's window (or the server
                         * came back while the stream stayed open): list again */
                        listed = false;
                        continue;
                }
                if (r >= 0 || atomic_load(&agent->stopping))
                        continue; /* the server ended the stream: resume from the last event */
                /* after a failure, list again once the server answers: the list is what the
                 * reconcile loop compares every pod's status with, and re-sends where it differs */
                listed = false;
                xp_log(LOG_WARNING,
                       "agent: watching the pods of node %s failed, retrying in 1 s: %s",
                       agent->node_name,
                       xp_error_message(&err));
                if (xp_agent_sleep(agent, 1000))
                        break;
        }
        free(w.rv);
        return NULL;
}
