/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pull step of a container start, as the kubelet's image manager does it: the pull policy,
 * the waits with their back-off, the waiting reasons and the Events, in the kubelet's words.
 * The pulls run on pull_jobs.c's threads; this file runs on the reconcile thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"
#include "pull_internal.h"
#include "xpool/log.h"

bool xp_agent_pull_needed(const struct xp_container *c)
{
        return c->image && *c->image;
}

static void event(struct xp_agent_pulls *p,
                  const struct xp_agent_pull_pod *pod,
                  const char *type,
                  const char *reason,
                  const char *fmt,
                  ...) _printf_(5, 6);

static void event(struct xp_agent_pulls *p,
                  const struct xp_agent_pull_pod *pod,
                  const char *type,
                  const char *reason,
                  const char *fmt,
                  ...)
{
        char msg[XP_ERROR_MSG_MAX + 256];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        xp_log(LOG_INFO, "agent: pod %s/%s: %s: %s", pod->namespace, pod->name, reason, msg);
        (void)xp_agent_event(p->events, pod->namespace, pod->name, pod->uid, type, reason, msg);
}

static void wait_free(struct xp_agent_pulls *p, struct xp_pull_wait *w)
{
        if (w->job) {
                xp_pulls_lock(p);
                xp_pull_job_unref(p, w->job);
                xp_pulls_unlock(p);
        }
        free(w->uid);
        free(w->container);
        free(w->image);
        free(w->message);
        free(w);
}

void xp_pull_waits_free(struct xp_agent_pulls *p)
{
        while (p->waits) {
                struct xp_pull_wait *w = p->waits;

                p->waits = w->next;
                wait_free(p, w);
        }
}

static struct xp_pull_wait *
wait_find(struct xp_agent_pulls *p, const char *uid, const char *container, bool init)
{
        for (struct xp_pull_wait *w = p->waits; w; w = w->next)
                if (w->init == init && strcmp(w->uid, uid) == 0 &&
                    strcmp(w->container, container) == 0)
                        return w;
        return NULL;
}

/* The wait of the container, made when missing; a changed image starts it over. */
static struct xp_pull_wait *
wait_get(struct xp_agent_pulls *p, const char *uid, const struct xp_container *c, bool init)
{
        struct xp_pull_wait *w = wait_find(p, uid, c->name, init);

        if (w && strcmp(w->image, c->image) == 0)
                return w;
        if (w) {
                struct xp_pull_wait **pp;

                for (pp = &p->waits; *pp != w; pp = &(*pp)->next)
                        ;
                *pp = w->next;
                wait_free(p, w);
        }
        w = calloc(1, sizeof(*w));
        if (!w)
                return NULL;
        w->uid = strdup(uid);
        w->container = strdup(c->name);
        w->image = strdup(c->image);
        w->init = init;
        if (!w->uid || !w->container || !w->image) {
                wait_free(p, w);
                return NULL;
        }
        w->next = p->waits;
        p->waits = w;
        return w;
}

static enum xp_pull_policy policy_of(const struct xp_container *c)
{
        if (c->image_pull_policy != XP_PULL_UNSET)
                return c->image_pull_policy;
        return strcmp(xp_image_default_pull_policy(c->image), "Always") == 0
                   ? XP_PULL_ALWAYS
                   : XP_PULL_IF_NOT_PRESENT;
}

static int64_t backoff_ns(const struct xp_agent_pulls *p, unsigned failures)
{
        int64_t ms = p->backoff_initial_ms;

        for (unsigned i = 1; i < failures && ms < p->backoff_max_ms; i++)
                ms *= 2;
        return (ms < p->backoff_max_ms ? ms : p->backoff_max_ms) * 1000000;
}

static int set_message(struct xp_pull_wait *w, const char *reason, const char *fmt, ...)
    _printf_(3, 4);

static int set_message(struct xp_pull_wait *w, const char *reason, const char *fmt, ...)
{
        char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(w->message);
        w->message = msg;
        w->reason = reason;
        return 0;
}

static int make_ready(struct xp_pull_wait *w, unsigned attempt, struct xp_podsync_memory *m)
{
        w->ready = true;
        w->attempt = attempt;
        w->reason = NULL;
        w->failures = 0;
        xp_podsync_release(m, w->container, w->init);
        return 1;
}

static int hold(struct xp_pull_wait *w, struct xp_podsync_memory *m)
{
        int r = xp_podsync_hold(m,
                                w->container,
                                w->init,
                                w->reason,
                                w->reason ? w->message : NULL,
                                w->reason ? w->retry_at_ns : 0);

        return r < 0 ? r : 0;
}

/* Never: the image must be there already; else ErrImageNeverPull, looked at again later. */
static int never(struct xp_agent_pulls *p,
                 const struct xp_agent_pull_pod *pod,
                 struct xp_pull_wait *w,
                 int64_t now_ns,
                 struct xp_podsync_memory *m)
{
        if (set_message(w,
                        "ErrImageNeverPull",
                        "Container image \"%s\" is not present with pull policy of Never",
                        w->image) < 0)
                return -ENOMEM;
        w->failures++;
        w->retry_at_ns = now_ns + backoff_ns(p, w->failures);
        event(p, pod, "Warning", "ErrImageNeverPull", "%s", w->message);
        event(p, pod, "Warning", "Failed", "Error: ErrImageNeverPull");
        return hold(w, m);
}

static int start_pull(struct xp_agent_pulls *p,
                      const struct xp_agent_pull_pod *pod,
                      struct xp_pull_wait *w,
                      unsigned attempt,
                      struct xp_podsync_memory *m)
{
        const json_t *secrets =
            json_object_get(json_object_get(pod->json, "spec"), "imagePullSecrets");
        json_auto_t *names = json_array();
        size_t i;
        json_t *s;

        json_array_foreach(secrets, i, s)
        {
                const char *name = json_string_value(json_object_get(s, "name"));

                if (name && names)
                        json_array_append_new(names, json_string(name));
        }
        w->job = names ? xp_pull_job_get(p, w->image, pod->namespace, names) : NULL;
        if (!w->job)
                return -ENOMEM;
        w->attempt = attempt;
        w->ready = false;
        event(p, pod, "Normal", "Pulling", "Pulling image \"%s\"", w->image);
        return hold(w, m);
}

int xp_agent_pull_gate(struct xp_agent_pulls *p,
                       const struct xp_agent_pull_pod *pod,
                       const struct xp_container *c,
                       bool init,
                       unsigned attempt,
                       int64_t now_ns,
                       struct xp_podsync_memory *m)
{
        struct xp_pull_wait *w;
        enum xp_pull_policy policy;
        struct xp_image *img = NULL;
        bool present;

        if (!xp_agent_pull_needed(c))
                return 1;
        w = wait_get(p, pod->uid, c, init);
        if (!w)
                return -ENOMEM;
        if (w->ready && w->attempt == attempt)
                return 1;
        if (w->job || (w->reason && now_ns < w->retry_at_ns))
                return hold(w, m);
        policy = policy_of(c);
        present = xp_image_get(p->store, w->image, &img, NULL) >= 0;
        xp_image_free(img);
        if (policy == XP_PULL_NEVER && !present)
                return never(p, pod, w, now_ns, m);
        /* Never and IfNotPresent say so alike, as the kubelet's image manager does */
        if (policy != XP_PULL_ALWAYS && present) {
                event(p,
                      pod,
                      "Normal",
                      "Pulled",
                      "Container image \"%s\" already present on machine",
                      w->image);
                return make_ready(w, attempt, m);
        }
        return start_pull(p, pod, w, attempt, m);
}

/*
 * Whether a pull failed only because no registry could be reached (no route, no name, no answer)
 * for an image the store has: it was pulled for policy Always, and a node without a registry
 * (where xpool image import brought it) runs it as it is.
 */
static bool
unreachable_but_present(struct xp_agent_pulls *p, const struct xp_pull_wait *w, int result)
{
        struct xp_image *img = NULL;
        bool present;

        if (result != -ECONNREFUSED && result != -EHOSTUNREACH && result != -ENETUNREACH &&
            result != -ETIMEDOUT)
                return false;
        present = xp_image_get(p->store, w->image, &img, NULL) >= 0;
        xp_image_free(img);
        return present;
}

/* A pull w waited for is over: ready, or ErrImagePull with its back-off. */
static void pull_over(struct xp_agent_pulls *p,
                      const struct xp_agent_pull_pod *pod,
                      struct xp_pull_wait *w,
                      int64_t now_ns,
                      struct xp_podsync_memory *m)
{
        struct xp_pull_job *job = w->job;

        if (job->result >= 0) {
                double took = (double)(job->finished_ns - job->started_ns) / 1e9;
                double waited = (double)(job->finished_ns - job->queued_ns) / 1e9;

                event(
                    p,
                    pod,
                    "Normal",
                    "Pulled",
                    "Successfully pulled image \"%s\" in %.3fs (%.3fs including waiting). Image size: %" PRIu64
                    " bytes.",
                    w->image,
                    took,
                    waited,
                    job->size);
                make_ready(w, w->attempt, m);
        } else if (unreachable_but_present(p, w, job->result)) {
                /* an edge box without a registry: Always cannot pull, the node has the image */
                event(p,
                      pod,
                      "Warning",
                      "Failed",
                      "Failed to pull image \"%s\": %s; the registry cannot be reached, so the "
                      "image already present on machine is used",
                      w->image,
                      job->message);
                make_ready(w, w->attempt, m);
        } else {
                w->failures++;
                w->retry_at_ns = now_ns + backoff_ns(p, w->failures);
                if (set_message(w, "ErrImagePull", "%s", job->message) >= 0) {
                        event(p,
                              pod,
                              "Warning",
                              "Failed",
                              "Failed to pull image \"%s\": %s",
                              w->image,
                              job->message);
                        event(p, pod, "Warning", "Failed", "Error: ErrImagePull");
                }
                (void)hold(w, m);
        }
        xp_pulls_lock(p);
        xp_pull_job_unref(p, job);
        xp_pulls_unlock(p);
        w->job = NULL;
}

void xp_agent_pull_refresh(struct xp_agent_pulls *p,
                           const struct xp_agent_pull_pod *pod,
                           int64_t now_ns,
                           struct xp_podsync_memory *m)
{
        for (struct xp_pull_wait *w = p->waits; w; w = w->next) {
                enum xp_pull_state state = XP_PULL_QUEUED;

                if (strcmp(w->uid, pod->uid) != 0)
                        continue;
                if (w->job) {
                        xp_pulls_lock(p);
                        state = w->job->state;
                        xp_pulls_unlock(p);
                }
                if (w->job && state == XP_PULL_DONE) {
                        pull_over(p, pod, w, now_ns, m);
                } else if (!w->job && w->reason && now_ns >= w->retry_at_ns) {
                        /* the back-off is over: the next START looks (and pulls) again */
                        xp_podsync_release(m, w->container, w->init);
                } else if (!w->job && w->reason && strcmp(w->reason, "ErrImagePull") == 0) {
                        char *last = w->message ? strdup(w->message) : NULL;

                        if (set_message(w,
                                        "ImagePullBackOff",
                                        "Back-off pulling image \"%s\": ErrImagePull: %s",
                                        w->image,
                                        last ? last : "") >= 0) {
                                event(p,
                                      pod,
                                      "Normal",
                                      "BackOff",
                                      "Back-off pulling image \"%s\"",
                                      w->image);
                                event(p, pod, "Warning", "Failed", "Error: ImagePullBackOff");
                        }
                        free(last);
                        (void)hold(w, m);
                }
        }
}

int xp_agent_pull_take_done(struct xp_agent_pulls *p, char ***ret, size_t *ret_n)
{
        char **uids = NULL;
        size_t n = 0;
        uint64_t v;

        if (read(p->done_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                return -errno;
        xp_pulls_lock(p);
        for (struct xp_pull_wait *w = p->waits; w; w = w->next) {
                char **grown;

                if (!w->job || w->job->state != XP_PULL_DONE)
                        continue;
                grown = realloc(uids, (n + 1) * sizeof(*uids));
                if (!grown || !(grown[n] = strdup(w->uid))) {
                        uids = grown ? grown : uids;
                        break;
                }
                uids = grown;
                n++;
        }
        xp_pulls_unlock(p);
        *ret = uids;
        *ret_n = n;
        return 0;
}

void xp_agent_pull_forget(struct xp_agent_pulls *p, const char *uid)
{
        struct xp_pull_wait **pp = &p->waits;

        while (*pp) {
                struct xp_pull_wait *w = *pp;

                if (strcmp(w->uid, uid) != 0) {
                        pp = &w->next;
                        continue;
                }
                *pp = w->next;
                wait_free(p, w);
        }
}
