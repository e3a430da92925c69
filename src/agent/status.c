/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The status writers: a few threads, each with its own client (its own connection), PATCH pod
 * statuses (a strategic merge patch whose `$patch: replace` makes the whole status replace the
 * stored one) and DELETE pods whose containers all stopped after their deletion. What to write
 * waits in the retry queue (retryq.c): one entry per pod, the newest status replacing one not yet
 * written, so a burst of changes of one pod is one write and the writes of many pods go out
 * together and share the server's group commits. A status that is not final waits a few
 * milliseconds for the pod's next change while the node runs short pods (statushold.h): a short
 * pod's Running and Succeeded are one write, a long one's Running goes at once. A
 * write that fails is tried again, with a back-off, until it lands: only a pod that is gone (404)
 * drops its writes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_internal.h"
#include "clientslots.h"
#include "retryq.h"
#include "statushold.h"
#include "xpool/log.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"
#include "xpool/workers.h"

#define MAX_THREADS 16
_Static_assert(MAX_THREADS <= XP_CLIENT_SLOTS_MAX,
               "every writer thread's client has a slot to be cancelled in");
/* A failed write waits 0.2 s, doubling at each failure, at most 3.2 s: a server that comes back
 * finds the writes going again within about three seconds (at once, after one of them lands). */
#define RETRY_INITIAL_NS (200 * 1000000LL)
#define RETRY_MAX_NS     (3200 * 1000000LL)
/* A write that keeps failing is logged at its first failure and then every this many tries. */
#define LOG_EVERY_TRIES 16

struct xp_agent_status {
        /* first: the writer pool's userdata is read as the set (clientslots.h); cancelled on
         * free, so that no writer waits for a timeout, and then says the writers stop */
        struct xp_client_slots clients;
        struct xp_workers *writers; /* its lock guards the set above and what follows */
        struct xp_retryq *queue;
        struct xp_status_hold hold; /* whether a status that is not final waits */
};
_Static_assert(offsetof(struct xp_agent_status, clients) == 0, "clientslots.h: the set first");

/* A writer thread's own: its client (its connection; first, for clientslots.h) and the write it
 * has out. */
struct writer {
        struct xp_apiclient *client;
        struct xp_work work;
        struct xp_retryq_write w;
        struct xp_error err;
        int result;
};
_Static_assert(offsetof(struct writer, client) == 0, "clientslots.h: the client first");

int xp_agent_status_put(struct xp_agent_status *s,
                        const char *pod_namespace,
                        const char *pod_name,
                        const char *pod_uid,
                        json_t *status)
{
        const char *phase = json_string_value(json_object_get(status, "phase"));
        bool final = xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed");
        int64_t hold;
        int r;

        xp_workers_lock(s->writers);
        hold = xp_status_hold_until(&s->hold, pod_uid, final, xp_monotonic_ns());
        r = xp_retryq_put_status(s->queue, pod_namespace, pod_name, pod_uid, status, hold);
        xp_workers_wake_one(s->writers);
        xp_workers_unlock(s->writers);
        return r;
}

int xp_agent_status_delete(struct xp_agent_status *s,
                           const char *pod_namespace,
                           const char *pod_name,
                           const char *pod_uid)
{
        int r;

        xp_workers_lock(s->writers);
        r = xp_retryq_put_delete(s->queue, pod_namespace, pod_name, pod_uid);
        xp_workers_wake_one(s->writers);
        xp_workers_unlock(s->writers);
        return r;
}

void xp_agent_status_forget(struct xp_agent_status *s, const char *pod_uid)
{
        xp_workers_lock(s->writers);
        xp_retryq_drop(s->queue, pod_uid);
        xp_workers_unlock(s->writers);
}

void xp_agent_status_deleting(struct xp_agent_status *s, const char *pod_uid)
{
        xp_workers_lock(s->writers);
        xp_status_hold_forget(&s->hold, pod_uid);
        xp_workers_unlock(s->writers);
}

static int
write_status(struct xp_apiclient *client, const struct xp_retryq_write *w, struct xp_error *err)
{
        /* the status is whole (podsync starts from the stored one): it replaces the stored one,
         * so what it no longer has (a condition's old reason, a waiting state) goes too */
        json_auto_t *copy = json_copy(w->status), *body = NULL;
        char path[1024];

        if (!copy || json_object_set_new(copy, "$patch", json_string("replace")) < 0)
                return -ENOMEM;
        body = json_pack("{s:O}", "status", copy);
        if (!body)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", w->namespace, w->name);
        return xp_apiclient_json(
            client, "PATCH", path, "application/strategic-merge-patch+json", body, NULL, NULL, err);
}

/* Whether the pod named by w is still the one of w's uid: 1 yes, 0 gone or replaced, -errno. */
static int same_pod(struct xp_apiclient *client, const struct xp_retryq_write *w)
{
        json_auto_t *pod = NULL;
        char path[1024];
        int r;

        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", w->namespace, w->name);
        r = xp_apiclient_json(client, "GET", path, NULL, NULL, NULL, &pod, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return xp_streq0(
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid")), w->uid);
}

static int
delete_pod(struct xp_apiclient *client, const struct xp_retryq_write *w, struct xp_error *err)
{
        json_auto_t *body = json_pack("{s:s, s:s, s:i, s:{s:s}}",
                                      "kind",
                                      "DeleteOptions",
                                      "apiVersion",
                                      "v1",
                                      "gracePeriodSeconds",
                                      0,
                                      "preconditions",
                                      "uid",
                                      w->uid);
        char path[1024];
        int r;

        if (!body)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", w->namespace, w->name);
        r = xp_apiclient_json(client, "DELETE", path, NULL, body, NULL, NULL, err);
        /* 409: the uid precondition failed, or the server lost a race; read the pod again to
         * tell a pod deleted (and maybe made again) by someone else from one still to delete */
        if (r == -EEXIST && same_pod(client, w) == 0)
                return -ENOENT;
        return r;
}

/* What an answer means for the write: only a pod that is gone ends it unwritten. */
static enum xp_retryq_outcome outcome_of(int r)
{
        if (r >= 0)
                return XP_RETRYQ_LANDED;
        switch (r) {
        case -ENOENT:
                return XP_RETRYQ_GONE;
        case -EINVAL:
        case -EPERM:
        case -EEXIST:
        case -E2BIG:
        case -ENOMEM:
                return XP_RETRYQ_REFUSED;
        default:
                return XP_RETRYQ_UNREACHABLE;
        }
}

/* Logs how a write went (pod is "NAMESPACE/NAME", tries the failures before it). */
static void log_result(const char *pod,
                       unsigned tries,
                       bool delete,
                       enum xp_retryq_outcome outcome,
                       int64_t wait_ns,
                       const struct xp_error *err)
{
        const char *what = delete ? "deleting" : "writing the status of";

        if (outcome == XP_RETRYQ_LANDED && tries > 0)
                xp_log(LOG_INFO,
                       "agent: %s pod %s went through after %u failed tries",
                       what,
                       pod,
                       tries);
        else if ((outcome == XP_RETRYQ_UNREACHABLE || outcome == XP_RETRYQ_REFUSED) &&
                 tries % LOG_EVERY_TRIES == 0)
                xp_log(LOG_WARNING,
                       "agent: %s pod %s failed (%u tries), trying again in %.1f s: %s",
                       what,
                       pod,
                       tries + 1,
                       (double)wait_ns / 1e9,
                       xp_error_message(err));
}

/* ---- the writers: the pool's callbacks, all but writer_run with its lock held ------------ */

/* The next due write; none while stopping. */
static int
writer_take(void *userdata, void *ctx, bool stopping, struct xp_work **ret, int64_t *ret_wake_ns)
{
        struct xp_agent_status *s = userdata;
        struct writer *wr = ctx;

        if (stopping || !xp_retryq_take(s->queue, xp_monotonic_ns(), &wr->w, ret_wake_ns))
                return 0;
        *ret = &wr->work;
        return 1;
}

static void writer_run(void *userdata, void *ctx, struct xp_work *work)
{
        struct writer *wr = ctx;

        (void)userdata;
        (void)work;
        xp_error_clear(&wr->err);
        wr->result = !wr->w.status ? delete_pod(wr->client, &wr->w, &wr->err)
                                   : write_status(wr->client, &wr->w, &wr->err);
}

static void writer_done(void *userdata, void *ctx, struct xp_work *work)
{
        struct xp_agent_status *s = userdata;
        struct writer *wr = ctx;
        enum xp_retryq_outcome outcome = outcome_of(wr->result);
        bool delete = !wr->w.status;
        unsigned tries = wr->w.tries;
        char pod[512];
        int64_t wait;

        (void)work;
        if (s->clients.cancelled)
                outcome = XP_RETRYQ_UNREACHABLE; /* cancelled: what is left is dropped */
        /* the names are the queue's: done may free them */
        snprintf(pod, sizeof(pod), "%s/%s", wr->w.namespace, wr->w.name);
        wait = xp_retryq_done(s->queue, &wr->w, outcome, xp_monotonic_ns());
        if (!s->clients.cancelled)
                log_result(pod, tries, delete, outcome, wait, &wr->err);
        /* a write that landed after failures may have brought others, waiting out their
         * back-off, forward to now: every writer asks. (One that landed at its first try lets
         * this thread ask alone: if it brought others forward, those land after failures.) */
        if (outcome == XP_RETRYQ_LANDED && tries > 0)
                xp_workers_wake(s->writers);
}

static const struct xp_workers_ops writer_ops =
    XP_CLIENT_SLOTS_WRITER_OPS(writer_run, writer_take, writer_done);

int xp_agent_status_new(const struct xp_apiclient_options *api,
                        unsigned n_threads,
                        int64_t coalesce_ns,
                        struct xp_agent_status **ret,
                        struct xp_error *err)
{
        const struct xp_retryq_config retry = {.initial_ns = RETRY_INITIAL_NS,
                                               .max_ns = RETRY_MAX_NS};
        struct xp_agent_status *s;
        int r;

        if (n_threads == 0 || n_threads > MAX_THREADS)
                return xp_errorf(err,
                                 -EINVAL,
                                 "status writers: %u threads, give 1 to %d",
                                 n_threads,
                                 MAX_THREADS);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        xp_status_hold_init(&s->hold, coalesce_ns);
        xp_client_slots_init_writers(
            &s->clients, n_threads, api, sizeof(struct writer), "a status writer");
        r = xp_retryq_new(&retry, &s->queue);
        if (r >= 0)
                r = xp_workers_new(&(struct xp_workers_options){.ops = &writer_ops,
                                                                .userdata = s,
                                                                .threads = n_threads},
                                   &s->writers,
                                   err);
        if (r < 0) {
                xp_retryq_free(s->queue);
                free(s);
                return xp_error_prefix(err, r, "starting the status writers");
        }
        *ret = s;
        return 0;
}

void xp_agent_status_free(struct xp_agent_status *s)
{
        if (!s)
                return;
        xp_workers_free(s->writers);
        xp_retryq_free(s->queue);
        free(s);
}
