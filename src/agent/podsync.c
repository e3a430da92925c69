/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod worker: init containers one after another, then every container; restarts by
 * restartPolicy with the kubelet's back-off; graceful deletion; the status the kubelet would
 * report. Pure, so every transition is a unit test (tests/unit/test_podsync.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podsync.h"
#include "xpool/codec.h"
#include "xpool/duration.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define NS_PER_MS  INT64_C(1000000)
#define NS_PER_SEC INT64_C(1000000000)

/* The outcome of one finished attempt, kept after its record is forgotten. */
struct outcome {
        bool set;
        unsigned attempt;
        int exit_code;
        int signal;
        char *reason;
        char *message;
        char *image_id;  /* the imageID it ran from; NULL: none (a process of the node) */
        char *image_ref; /* its image as the runtime resolved it; NULL: a process of the node */
        int64_t started_ns;
        int64_t finished_ns;
};

struct cmem {
        char *name;
        bool init;
        struct outcome last; /* the newest finished attempt */
        struct outcome prev; /* the one before it (lastState while last is state) */
        int64_t backoff_ms;  /* the next delay; 0: no back-off entry (restart at once) */
        int64_t restart_at_ns;
        int64_t shown_backoff_ms; /* the delay the CrashLoopBackOff message names */
        unsigned term_attempt;    /* attempt+1 that got SIGTERM (0: none) */
        unsigned kill_attempt;    /* attempt+1 that got SIGKILL (0: none) */
        char *config_error;       /* the agent will not start it: CreateContainerConfigError */
        bool held;                /* xp_podsync_hold(): not started, waiting as hold_reason says */
        char *hold_reason, *hold_message;
        int64_t hold_wake_ns;
        /* the probes' verdicts (xp_podsync_set_probed()) about attempt probed_attempt - 1 */
        unsigned probed_attempt;
        bool probed_ready, probed_started;
        /* a probe failed: attempt probe_kill_attempt - 1 is killed, SIGKILL at the deadline */
        unsigned probe_kill_attempt;
        int64_t probe_kill_deadline_ns;
        char *probe_kill_message; /* the Killing Event's */
};

struct xp_podsync_memory {
        struct cmem *items;
        size_t n;
        bool seeded;
        enum xp_pod_phase terminal; /* once Succeeded or Failed, kept */
        int64_t deleting_since_ns;  /* when the deletion was first seen: the grace runs from it */
        /* the addresses the status reports: the node's, the pod's (xp_podsync_memory_set_ips) */
        char host_ip[XP_PODSYNC_IP_MAX];
        char pod_ips[XP_PODSYNC_IPS_MAX][XP_PODSYNC_IP_MAX];
        size_t n_pod_ips;
};

static void outcome_done(struct outcome *o)
{
        free(o->reason);
        free(o->message);
        free(o->image_id);
        free(o->image_ref);
        *o = (struct outcome){0};
}

static int outcome_copy(const struct outcome *src, struct outcome *dst)
{
        *dst = *src;
        dst->reason = NULL;
        dst->message = NULL;
        dst->image_id = NULL;
        dst->image_ref = NULL;
        if ((src->reason && !(dst->reason = strdup(src->reason))) ||
            (src->message && !(dst->message = strdup(src->message))) ||
            (src->image_id && !(dst->image_id = strdup(src->image_id))) ||
            (src->image_ref && !(dst->image_ref = strdup(src->image_ref)))) {
                outcome_done(dst);
                return -ENOMEM;
        }
        return 0;
}

static void cmem_done(struct cmem *c)
{
        free(c->name);
        free(c->config_error);
        free(c->hold_reason);
        free(c->hold_message);
        free(c->probe_kill_message);
        outcome_done(&c->last);
        outcome_done(&c->prev);
}

static void memory_done(struct xp_podsync_memory *m)
{
        for (size_t i = 0; i < m->n; i++)
                cmem_done(&m->items[i]);
        free(m->items);
        *m = (struct xp_podsync_memory){0};
}

struct xp_podsync_memory *xp_podsync_memory_new(void)
{
        return calloc(1, sizeof(struct xp_podsync_memory));
}

void xp_podsync_memory_free(struct xp_podsync_memory *m)
{
        if (!m)
                return;
        memory_done(m);
        free(m);
}

void xp_podsync_memory_set_ips(struct xp_podsync_memory *m,
                               const char *host_ip,
                               const char *const *pod_ips,
                               size_t n_pod_ips)
{
        snprintf(m->host_ip, sizeof(m->host_ip), "%s", host_ip ? host_ip : "");
        m->n_pod_ips = 0;
        for (size_t i = 0; i < n_pod_ips && i < XP_PODSYNC_IPS_MAX; i++)
                if (pod_ips[i] && *pod_ips[i])
                        snprintf(
                            m->pod_ips[m->n_pod_ips++], sizeof(m->pod_ips[0]), "%s", pod_ips[i]);
}

static int memory_copy(const struct xp_podsync_memory *src, struct xp_podsync_memory *dst)
{
        *dst = (struct xp_podsync_memory){.seeded = src->seeded,
                                          .terminal = src->terminal,
                                          .deleting_since_ns = src->deleting_since_ns};
        memcpy(dst->host_ip, src->host_ip, sizeof(dst->host_ip));
        memcpy(dst->pod_ips, src->pod_ips, sizeof(dst->pod_ips));
        dst->n_pod_ips = src->n_pod_ips;
        if (src->n == 0)
                return 0;
        dst->items = calloc(src->n, sizeof(*dst->items));
        if (!dst->items)
                return -ENOMEM;
        for (size_t i = 0; i < src->n; i++) {
                struct cmem *d = &dst->items[i];
                const struct cmem *s = &src->items[i];

                *d = *s;
                d->name = d->config_error = d->hold_reason = d->hold_message = NULL;
                d->probe_kill_message = NULL;
                d->last = d->prev = (struct outcome){0};
                dst->n++;
                if (!(d->name = strdup(s->name)) || outcome_copy(&s->last, &d->last) < 0 ||
                    outcome_copy(&s->prev, &d->prev) < 0 ||
                    (s->config_error && !(d->config_error = strdup(s->config_error))) ||
                    (s->hold_reason && !(d->hold_reason = strdup(s->hold_reason))) ||
                    (s->hold_message && !(d->hold_message = strdup(s->hold_message))) ||
                    (s->probe_kill_message &&
                     !(d->probe_kill_message = strdup(s->probe_kill_message)))) {
                        memory_done(dst);
                        return -ENOMEM;
                }
        }
        return 0;
}

static struct cmem *memory_get(struct xp_podsync_memory *m, const char *name, bool init)
{
        struct cmem *grown;

        for (size_t i = 0; i < m->n; i++)
                if (m->items[i].init == init && strcmp(m->items[i].name, name) == 0)
                        return &m->items[i];
        grown = realloc(m->items, (m->n + 1) * sizeof(*grown));
        if (!grown)
                return NULL;
        m->items = grown;
        grown[m->n] = (struct cmem){.init = init, .name = strdup(name)};
        if (!grown[m->n].name)
                return NULL;
        return &grown[m->n++];
}

int xp_podsync_hold(struct xp_podsync_memory *m,
                    const char *container,
                    bool init,
                    const char *reason,
                    const char *message,
                    int64_t wake_ns)
{
        struct cmem *c = m ? memory_get(m, container, init) : NULL;
        char *r = reason ? strdup(reason) : NULL, *msg = message ? strdup(message) : NULL;

        if (!c || (reason && !r) || (message && !msg)) {
                free(r);
                free(msg);
                return -ENOMEM;
        }
        free(c->hold_reason);
        free(c->hold_message);
        c->held = true;
        c->hold_reason = r;
        c->hold_message = msg;
        c->hold_wake_ns = wake_ns;
        return 0;
}

void xp_podsync_release(struct xp_podsync_memory *m, const char *container, bool init)
{
        for (size_t i = 0; m && i < m->n; i++) {
                struct cmem *c = &m->items[i];

                if (c->init != init || strcmp(c->name, container) != 0)
                        continue;
                free(c->hold_reason);
                free(c->hold_message);
                c->hold_reason = c->hold_message = NULL;
                c->held = false;
                c->hold_wake_ns = 0;
        }
}

void xp_podsync_release_due(struct xp_podsync_memory *m, const char *reason, int64_t now_ns)
{
        for (size_t i = 0; m && i < m->n; i++) {
                struct cmem *c = &m->items[i];

                if (c->held && c->hold_wake_ns > 0 && c->hold_wake_ns <= now_ns && c->hold_reason &&
                    strcmp(c->hold_reason, reason) == 0)
                        xp_podsync_release(m, c->name, c->init);
        }
}

const char *xp_podsync_memory_pod_ip(const struct xp_podsync_memory *m)
{
        return m && m->n_pod_ips > 0 ? m->pod_ips[0] : NULL;
}

int xp_podsync_set_probed(
    struct xp_podsync_memory *m, const char *container, unsigned attempt, bool ready, bool started)
{
        struct cmem *c = m ? memory_get(m, container, false) : NULL;

        if (!c)
                return -ENOMEM;
        c->probed_attempt = attempt + 1;
        c->probed_ready = ready;
        c->probed_started = started;
        return 0;
}

int xp_podsync_probe_kill(struct xp_podsync_memory *m,
                          const char *container,
                          unsigned attempt,
                          int64_t deadline_ns,
                          const char *message)
{
        struct cmem *c = m ? memory_get(m, container, false) : NULL;
        char *msg = message ? strdup(message) : NULL;

        if (!c || (message && !msg)) {
                free(msg);
                return -ENOMEM;
        }
        free(c->probe_kill_message);
        c->probe_kill_message = msg;
        c->probe_kill_attempt = attempt + 1;
        c->probe_kill_deadline_ns = deadline_ns;
        return 0;
}

void xp_podsync_result_clear(struct xp_podsync_result *r)
{
        if (!r)
                return;
        free(r->actions);
        json_decref(r->status);
        *r = (struct xp_podsync_result){0};
}

static int add_action(struct xp_podsync_result *r, struct xp_podsync_action a)
{
        struct xp_podsync_action *grown = realloc(r->actions, (r->n_actions + 1) * sizeof(*grown));

        if (!grown)
                return -ENOMEM;
        r->actions = grown;
        grown[r->n_actions++] = a;
        return 0;
}

static void wake_at(struct xp_podsync_result *r, int64_t t)
{
        if (t > 0 && (r->wake_at_ns == 0 || t < r->wake_at_ns))
                r->wake_at_ns = t;
}

static const char *outcome_reason(const struct xp_container_record *rec)
{
        if (rec->start_failed)
                return "StartError";
        if (rec->oom_killed)
                return "OOMKilled";
        return rec->exit_code == 0 ? "Completed" : "Error";
}

/* What one container is doing in this sync. */
struct cview {
        const struct xp_container *spec;
        struct cmem *mem;
        const struct xp_container_record *running; /* a record that has not exited */
        const struct xp_container_record *exited;  /* the newest exited record, if any */
        bool restarting;                           /* finished, will restart (now or later) */
        bool starting;                             /* START is in this result */
        bool finished;                             /* finished, stays so */
};

static bool succeeded(const struct cview *v)
{
        return v->finished && v->mem->last.exit_code == 0;
}

static bool has_probe(const struct cview *v, const char *key)
{
        return v->spec && json_is_object(json_object_get(v->spec->extra, key));
}

/* Running, and its startup probe passed (or it has none). */
static bool container_started(const struct cview *v)
{
        const struct cmem *c = v->mem;

        if (!v->running)
                return false;
        return !has_probe(v, "startupProbe") ||
               (c->probed_attempt == v->running->attempt + 1 && c->probed_started);
}

/* Running, and its probes say ready: a container with neither a readiness nor a startup probe
 * is ready once it runs, one with either once the probes of its attempt said so. */
static bool container_ready(const struct cview *v)
{
        const struct cmem *c = v->mem;

        if (!v->running)
                return false;
        if (!has_probe(v, "readinessProbe") && !has_probe(v, "startupProbe"))
                return true;
        return c->probed_attempt == v->running->attempt + 1 && c->probed_ready;
}

static bool wants_restart(enum xp_restart_policy policy, bool init, const struct outcome *o)
{
        if (init)
                return policy != XP_RESTART_NEVER && o->exit_code != 0;
        switch (policy) {
        case XP_RESTART_NEVER:
                return false;
        case XP_RESTART_ON_FAILURE:
                return o->exit_code != 0;
        default:
                return true;
        }
}

/* Takes an exited record's outcome into memory (once per attempt) and plans the back-off. */
static int absorb(const struct xp_podsync_config *config,
                  struct cmem *c,
                  const struct xp_container_record *rec,
                  int64_t now_ns)
{
        struct outcome o = {.set = true,
                            .attempt = rec->attempt,
                            .exit_code = rec->exit_code,
                            .signal = rec->signal,
                            .started_ns = rec->started_ns,
                            .finished_ns = rec->finished_ns ? rec->finished_ns : now_ns};
        int64_t ran_ms;

        if (c->last.set && c->last.attempt >= rec->attempt)
                return 0;
        o.reason = strdup(outcome_reason(rec));
        if (!o.reason)
                return -ENOMEM;
        if ((rec->message && !(o.message = strdup(rec->message))) ||
            (rec->image_id && !(o.image_id = strdup(rec->image_id))) ||
            (rec->image_ref && !(o.image_ref = strdup(rec->image_ref)))) {
                outcome_done(&o);
                return -ENOMEM;
        }
        outcome_done(&c->prev);
        c->prev = c->last;
        c->last = o;

        ran_ms = o.started_ns > 0 ? (o.finished_ns - o.started_ns) / NS_PER_MS : 0;
        if (ran_ms >= config->backoff_reset_ms)
                c->backoff_ms = 0;
        c->shown_backoff_ms = c->backoff_ms;
        if (c->backoff_ms == 0) {
                /* the kubelet restarts a first failure at once, then backs off */
                c->restart_at_ns = o.finished_ns;
                c->backoff_ms = config->backoff_initial_ms;
        } else {
                c->restart_at_ns = o.finished_ns + c->backoff_ms * NS_PER_MS;
                c->backoff_ms = c->backoff_ms * 2 > config->backoff_max_ms ? config->backoff_max_ms
                                                                           : c->backoff_ms * 2;
        }
        return 0;
}

static int
seed_outcome(struct outcome *o, const struct xp_container_state_terminated *t, int64_t attempt)
{
        *o = (struct outcome){.set = true,
                              .attempt = attempt > 0 ? (unsigned)attempt : 0,
                              .exit_code = (int)t->exit_code,
                              .signal = (int)t->signal,
                              .started_ns = t->started_at * NS_PER_SEC,
                              .finished_ns = t->finished_at * NS_PER_SEC};
        if ((t->reason && !(o->reason = strdup(t->reason))) ||
            (t->message && !(o->message = strdup(t->message))))
                return -ENOMEM;
        return 0;
}

/* After an agent restart: what the server's status says of finished attempts, so restart counts,
 * last states and containers that finished for good carry on. */
static int seed(struct xp_podsync_memory *m, const struct xp_pod *pod)
{
        const struct xp_pod_status *st = &pod->status;

        for (int pass = 0; pass < 2; pass++) {
                bool init = pass == 0;
                size_t n = init ? st->init_container_statuses.n : st->container_statuses.n;

                for (size_t i = 0; i < n; i++) {
                        const struct xp_container_status *cs =
                            init ? &st->init_container_statuses.items[i]
                                 : &st->container_statuses.items[i];
                        const struct xp_container_state_terminated *t = cs->state.terminated;
                        const struct xp_container_state_terminated *lt = cs->last_state.terminated;
                        int64_t count = cs->restart_count;
                        struct cmem *c;
                        int r;

                        if (!cs->name || (!t && !lt))
                                continue;
                        c = memory_get(m, cs->name, init);
                        if (!c)
                                return -ENOMEM;
                        if (t) {
                                r = seed_outcome(&c->last, t, count);
                                if (r >= 0 && lt)
                                        r = seed_outcome(&c->prev, lt, count - 1);
                        } else {
                                /* running: lastState is the attempt before; waiting: the last */
                                r = seed_outcome(
                                    &c->last, lt, cs->state.running ? count - 1 : count);
                        }
                        /* the image and imageID the server has are the last run's */
                        if (r >= 0 && cs->image_id && *cs->image_id &&
                            (!(c->last.image_id = strdup(cs->image_id)) ||
                             (cs->image && !(c->last.image_ref = strdup(cs->image)))))
                                r = -ENOMEM;
                        if (r < 0)
                                return r;
                        c->restart_at_ns = c->last.finished_ns;
                }
        }
        m->seeded = true;
        return 0;
}

static const struct xp_container_record *
find_record(const struct xp_container_record *records, size_t n, const char *name, bool exited)
{
        const struct xp_container_record *best = NULL;

        for (size_t i = 0; i < n; i++)
                if (records[i].container && strcmp(records[i].container, name) == 0 &&
                    records[i].exited == exited && (!best || records[i].attempt > best->attempt))
                        best = &records[i];
        return best;
}

/* ---- status JSON ---------------------------------------------------------------------------- */

static json_t *time_json(int64_t ns)
{
        char buf[XP_RFC3339_MAX];

        if (xp_time_format_rfc3339(ns / NS_PER_SEC, buf) < 0)
                return NULL;
        return json_string(buf);
}

static int container_id(const char *uid, const char *name, unsigned attempt, char **ret)
{
        return asprintf(ret, "xpool://%s/%s/%u", uid, name, attempt) < 0 ? -ENOMEM : 0;
}

static json_t *terminated_json(const char *uid, const char *name, const struct outcome *o)
{
        _cleanup_free_ char *id = NULL;
        json_t *t = json_object();

        if (!t || container_id(uid, name, o->attempt, &id) < 0)
                goto fail;
        if (json_object_set_new(t, "exitCode", json_integer(o->exit_code)) < 0 ||
            (o->signal && json_object_set_new(t, "signal", json_integer(o->signal)) < 0) ||
            json_object_set_new(t, "reason", json_string(o->reason ? o->reason : "Error")) < 0 ||
            (o->message && json_object_set_new(t, "message", json_string(o->message)) < 0) ||
            (o->started_ns > 0 &&
             json_object_set_new(t, "startedAt", time_json(o->started_ns)) < 0) ||
            json_object_set_new(t, "finishedAt", time_json(o->finished_ns)) < 0 ||
            json_object_set_new(t, "containerID", json_string(id)) < 0)
                goto fail;
        return json_pack("{s:o}", "terminated", t);
fail:
        json_decref(t);
        return NULL;
}

static json_t *waiting_json(const char *reason, const char *message)
{
        json_t *w = json_pack("{s:s}", "reason", reason);

        if (w && message && json_object_set_new(w, "message", json_string(message)) < 0) {
                json_decref(w);
                return NULL;
        }
        return w ? json_pack("{s:o}", "waiting", w) : NULL;
}

/* The imageID of the run shown: its image's repo@digest or ID as it started; "" for a process
 * of the node. */
static const char *image_id(const struct cview *v)
{
        const char *id = v->running ? v->running->image_id : v->mem->last.image_id;

        return id ? id : "";
}

/* The image of the run shown as the runtime resolved it; the spec's text for a process of the
 * node or before the first run. */
static const char *image_ref(const struct cview *v)
{
        const char *ref = v->running ? v->running->image_ref : v->mem->last.image_ref;

        return ref ? ref : v->spec->image ? v->spec->image : "";
}

static json_t *
container_status_json(const struct xp_pod *pod, const struct cview *v, bool init_pending)
{
        const char *uid = pod->metadata.uid, *name = v->spec->name;
        const struct cmem *c = v->mem;
        _cleanup_free_ char *id = NULL, *msg = NULL;
        json_t *state = NULL, *last = NULL;
        unsigned restarts = c->last.set ? c->last.attempt : 0;
        bool running = v->running != NULL;

        if (running) {
                restarts = v->running->attempt;
                if (container_id(uid, name, restarts, &id) < 0)
                        return NULL;
                state = json_pack(
                    "{s:{s:o}}", "running", "startedAt", time_json(v->running->started_ns));
                last = c->last.set && c->last.attempt < restarts
                           ? terminated_json(uid, name, &c->last)
                           : json_object();
        } else if (v->finished) {
                state = terminated_json(uid, name, &c->last);
                if (c->last.set && container_id(uid, name, c->last.attempt, &id) < 0)
                        return NULL;
                last = c->prev.set ? terminated_json(uid, name, &c->prev) : json_object();
        } else if (c->config_error && !v->starting) {
                /* the kubelet's: the container is not created, the pod stays Pending */
                state = waiting_json("CreateContainerConfigError", c->config_error);
                last = c->last.set ? terminated_json(uid, name, &c->last) : json_object();
        } else if (c->held && !v->starting) {
                /* held by the agent (its image): ErrImagePull, ImagePullBackOff, ... */
                state = waiting_json(c->hold_reason ? c->hold_reason : "ContainerCreating",
                                     c->hold_message);
                last = c->last.set ? terminated_json(uid, name, &c->last) : json_object();
        } else if (v->restarting && !v->starting) {
                char d[XP_DURATION_MAX];

                xp_duration_format(c->shown_backoff_ms, d);
                if (asprintf(&msg,
                             "back-off %s restarting failed container=%s pod=%s_%s(%s)",
                             d,
                             name,
                             pod->metadata.name ? pod->metadata.name : "",
                             pod->metadata.namespace ? pod->metadata.namespace : "",
                             uid) < 0)
                        return NULL;
                state = waiting_json("CrashLoopBackOff", msg);
                last = terminated_json(uid, name, &c->last);
        } else {
                state = waiting_json(
                    !v->starting && init_pending ? "PodInitializing" : "ContainerCreating", NULL);
                last = c->last.set ? terminated_json(uid, name, &c->last) : json_object();
        }
        if (!state || !last) {
                json_decref(state);
                json_decref(last);
                return NULL;
        }
        json_t *cs = json_pack("{s:s, s:o, s:o, s:b, s:i, s:s, s:s, s:b}",
                               "name",
                               name,
                               "state",
                               state,
                               "lastState",
                               last,
                               "ready",
                               v->spec && (c->init ? succeeded(v) : container_ready(v)),
                               "restartCount",
                               (int)restarts,
                               "image",
                               image_ref(v),
                               "imageID",
                               image_id(v),
                               "started",
                               c->init ? running : container_started(v));
        if (cs && id && json_object_set_new(cs, "containerID", json_string(id)) < 0) {
                json_decref(cs);
                return NULL;
        }
        return cs;
}

/* Condition `type` with lastTransitionTime carried over while its status stays the same. */
static int set_condition(json_t *conds,
                         const json_t *old_conds,
                         const char *type,
                         bool status,
                         const char *reason,
                         const char *message,
                         int64_t now_ns)
{
        const char *st = status ? "True" : "False";
        json_t *c = NULL, *old = NULL, *v;
        size_t i;

        json_array_foreach(old_conds, i, v)
        {
                const char *t = json_string_value(json_object_get(v, "type"));
                if (t && strcmp(t, type) == 0)
                        old = v;
        }
        c = old ? json_deep_copy(old) : json_object();
        if (!c)
                return -ENOMEM;
        if (!old || !xp_streq0(json_string_value(json_object_get(old, "status")), st)) {
                if (json_object_set_new(c, "lastTransitionTime", time_json(now_ns)) < 0)
                        goto fail;
        }
        json_object_del(c, "reason");
        json_object_del(c, "message");
        if (json_object_set_new(c, "type", json_string(type)) < 0 ||
            json_object_set_new(c, "status", json_string(st)) < 0 ||
            (reason && json_object_set_new(c, "reason", json_string(reason)) < 0) ||
            (message && json_object_set_new(c, "message", json_string(message)) < 0))
                goto fail;
        json_array_foreach(conds, i, v)
        {
                const char *t = json_string_value(json_object_get(v, "type"));
                if (t && strcmp(t, type) == 0)
                        return json_array_set_new(conds, i, c) < 0 ? -ENOMEM : 0;
        }
        return json_array_append_new(conds, c) < 0 ? -ENOMEM : 0;
fail:
        json_decref(c);
        return -ENOMEM;
}

/* "containers with unready status: [a b]" as the kubelet words it. */
static int names_message(const char *prefix,
                         const struct cview *v,
                         size_t n,
                         bool (*bad)(const struct cview *),
                         char **ret)
{
        size_t len = strlen(prefix) + 4;
        char *s;

        for (size_t i = 0; i < n; i++)
                if (bad(&v[i]))
                        len += strlen(v[i].spec->name) + 1;
        s = malloc(len);
        if (!s)
                return -ENOMEM;
        strcpy(s, prefix);
        strcat(s, "[");
        for (size_t i = 0, first = 1; i < n; i++)
                if (bad(&v[i])) {
                        if (!first)
                                strcat(s, " ");
                        strcat(s, v[i].spec->name);
                        first = 0;
                }
        strcat(s, "]");
        *ret = s;
        return 0;
}

static bool not_succeeded(const struct cview *v)
{
        return !succeeded(v);
}

static bool unready(const struct cview *v)
{
        return !container_ready(v);
}

static const char *const kubelet_conditions[] = {
    "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"};

/* Where condition c comes in the kubelet's order; the others after its own. */
static size_t kubelet_rank(const json_t *c)
{
        const char *type = json_string_value(json_object_get(c, "type"));
        size_t k = 0;

        while (k < XP_ELEMENTSOF(kubelet_conditions) && !xp_streq0(type, kubelet_conditions[k]))
                k++;
        return k;
}

/* The kubelet's conditions first, in its order, then the others (PodScheduled, readiness gates)
 * as they were: the order a cluster's pod status lists them in. */
static int order_conditions(json_t *conds)
{
        _cleanup_(json_decrefp) json_t *ordered = json_array();
        json_t *c;
        size_t i;

        if (!ordered)
                return -ENOMEM;
        for (size_t k = 0; k <= XP_ELEMENTSOF(kubelet_conditions); k++) {
                json_array_foreach(conds, i, c)
                {
                        if (kubelet_rank(c) == k && json_array_append(ordered, c) < 0)
                                return -ENOMEM;
                }
        }
        if (json_array_clear(conds) < 0 || json_array_extend(conds, ordered) < 0)
                return -ENOMEM;
        return 0;
}

struct plan {
        struct cview *init;
        size_t n_init;
        struct cview *main;
        size_t n_main;
        bool inits_done;
        enum xp_pod_phase phase;
};

/*
 * PodReadyToStartContainers: the pod's sandbox (its network namespace, its address) is up from
 * the agent's first status until the pod ends, when the kubelet removes it. Its end is when the
 * last container finished, so a status written again after a failed write says the same.
 */
static int
set_sandbox_condition(json_t *conds, const json_t *old_conds, const struct plan *p, int64_t now_ns)
{
        bool ended = p->phase == XP_POD_SUCCEEDED || p->phase == XP_POD_FAILED;
        int64_t ended_ns = 0;

        for (int pass = 0; pass < 2 && ended; pass++) {
                const struct cview *v = pass ? p->main : p->init;
                size_t n = pass ? p->n_main : p->n_init;

                for (size_t i = 0; i < n; i++)
                        if (v[i].mem->last.set && v[i].mem->last.finished_ns > ended_ns)
                                ended_ns = v[i].mem->last.finished_ns;
        }
        return set_condition(conds,
                             old_conds,
                             "PodReadyToStartContainers",
                             !ended,
                             NULL,
                             NULL,
                             ended_ns > 0 ? ended_ns : now_ns);
}

/*
 * The conditions PodReadyToStartContainers, Initialized, Ready and ContainersReady into status,
 * the kubelet's way, listed in its order.
 */
static int
set_conditions(json_t *status, const json_t *old_conds, const struct plan *p, int64_t now_ns)
{
        _cleanup_free_ char *init_msg = NULL, *ready_msg = NULL;
        bool ready = true, completed = p->phase == XP_POD_SUCCEEDED;
        const char *not_ready = completed ? "PodCompleted" : "ContainersNotReady";
        json_t *conds = json_object_get(status, "conditions");
        int r;

        if (!conds) {
                if (json_object_set_new(status, "conditions", json_array()) < 0)
                        return -ENOMEM;
                conds = json_object_get(status, "conditions");
        }
        for (size_t i = 0; i < p->n_main; i++)
                ready = ready && container_ready(&p->main[i]);
        if (!p->inits_done && names_message("containers with incomplete status: ",
                                            p->init,
                                            p->n_init,
                                            not_succeeded,
                                            &init_msg) < 0)
                return -ENOMEM;
        if (!ready && !completed &&
            names_message(
                "containers with unready status: ", p->main, p->n_main, unready, &ready_msg) < 0)
                return -ENOMEM;
        if ((r = set_condition(conds,
                               old_conds,
                               "Initialized",
                               p->inits_done,
                               p->inits_done ? (completed ? "PodCompleted" : NULL)
                                             : "ContainersNotInitialized",
                               init_msg,
                               now_ns)) < 0 ||
            (r = set_condition(
                 conds, old_conds, "Ready", ready, ready ? NULL : not_ready, ready_msg, now_ns)) <
                0 ||
            (r = set_condition(conds,
                               old_conds,
                               "ContainersReady",
                               ready,
                               ready ? NULL : not_ready,
                               ready_msg,
                               now_ns)) < 0 ||
            (r = set_sandbox_condition(conds, old_conds, p, now_ns)) < 0)
                return r;
        return order_conditions(conds);
}

/* initContainerStatuses and containerStatuses into status, one entry per container. */
static int set_container_statuses(json_t *status, const struct xp_pod *pod, const struct plan *p)
{
        for (int pass = 0; pass < 2; pass++) {
                const struct cview *v = pass ? p->main : p->init;
                size_t n = pass ? p->n_main : p->n_init;
                const char *key = pass ? "containerStatuses" : "initContainerStatuses";
                json_t *arr;

                if (n == 0)
                        continue;
                arr = json_array();
                if (!arr || json_object_set_new(status, key, arr) < 0)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        json_t *cs = container_status_json(pod, &v[i], !p->inits_done);

                        if (!cs || json_array_append_new(arr, cs) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/*
 * status as the pod's encoding gives it (through the codec, so the comparison sees what the
 * server will store) into *ret, or NULL when that equals old. pod_json's status is replaced.
 */
static int changed_status(json_t *pod_json, json_t *status, const json_t *old, json_t **ret)
{
        _cleanup_(json_decrefp) json_t *canon_json = NULL;
        _cleanup_(xp_pod_freep) struct xp_pod *canon = NULL;
        int r;

        if (json_object_set(pod_json, "status", status) < 0)
                return -ENOMEM;
        r = xp_pod_from_json(pod_json, NULL, XP_DECODE_TRUSTED, &canon, NULL);
        if (r < 0)
                return r;
        r = xp_pod_to_json(canon, &canon_json);
        if (r < 0)
                return r;
        if (old && json_equal(old, json_object_get(canon_json, "status"))) {
                *ret = NULL;
                return 0;
        }
        *ret = json_incref(json_object_get(canon_json, "status"));
        return *ret ? 0 : -ENOMEM;
}

/* [{"ip": ips[0]}, ...], NULL on -ENOMEM. */
static json_t *ip_list(const char (*ips)[XP_PODSYNC_IP_MAX], size_t n)
{
        json_t *list = json_array();

        for (size_t i = 0; list && i < n; i++)
                if (json_array_append_new(list, json_pack("{s:s}", "ip", ips[i])) < 0) {
                        json_decref(list);
                        return NULL;
                }
        return list;
}

/* hostIP(s) and podIP(s), as far as they are known: a pod keeps them once it had them. */
static int set_ips(json_t *status, const struct xp_podsync_memory *m)
{
        if (m->host_ip[0] && (json_object_set_new(status, "hostIP", json_string(m->host_ip)) < 0 ||
                              json_object_set_new(status, "hostIPs", ip_list(&m->host_ip, 1)) < 0))
                return -ENOMEM;
        if (m->n_pod_ips > 0 &&
            (json_object_set_new(status, "podIP", json_string(m->pod_ips[0])) < 0 ||
             json_object_set_new(status, "podIPs", ip_list(m->pod_ips, m->n_pod_ips)) < 0))
                return -ENOMEM;
        return 0;
}

/* The whole status the plan gives the pod (from its stored one), NULL when that is unchanged. */
static int build_status(const struct xp_pod *pod,
                        const struct xp_podsync_memory *m,
                        const struct plan *p,
                        int64_t now_ns,
                        json_t **ret)
{
        _cleanup_(json_decrefp) json_t *pod_json = NULL, *status = NULL, *old = NULL;
        /* the status alone goes through the codec, in a pod of nothing else (borrowed, not
         * freed): the encoding of a status does not depend on the rest of its pod, and each sync
         * then encodes and decodes a status, not the whole pod three times */
        const struct xp_pod status_only = {.status = pod->status};
        int r;

        r = xp_pod_to_json(&status_only, &pod_json);
        if (r < 0)
                return r;
        /* a reference of our own: pod_json's status is replaced in changed_status() */
        old = json_incref(json_object_get(pod_json, "status"));
        status = old ? json_deep_copy(old) : json_object();
        if (!status)
                return -ENOMEM;
        r = set_conditions(status, json_object_get(old, "conditions"), p, now_ns);
        if (r < 0)
                return r;
        if (json_object_set_new(status, "phase", json_string(xp_pod_phase_to_string(p->phase))) <
                0 ||
            (!pod->status.start_time &&
             json_object_set_new(status, "startTime", time_json(now_ns)) < 0))
                return -ENOMEM;
        r = set_container_statuses(status, pod, p);
        if (r >= 0)
                r = set_ips(status, m);
        if (r < 0)
                return r;
        return changed_status(pod_json, status, old, ret);
}

/* ---- the sync ------------------------------------------------------------------------------- */

/* Kills and forgets everything: the pod is gone from the server. */
static int sync_gone(struct xp_podsync_memory *m,
                     const struct xp_container_record *records,
                     size_t n,
                     struct xp_podsync_result *res)
{
        bool running = false;
        int r;

        for (size_t i = 0; i < n; i++) {
                const struct xp_container_record *rec = &records[i];
                struct cmem *c;

                if (!rec->container)
                        continue;
                if (rec->exited) {
                        r = add_action(res,
                                       (struct xp_podsync_action){.kind = XP_PODSYNC_FORGET,
                                                                  .container = rec->container,
                                                                  .attempt = rec->attempt});
                        if (r < 0)
                                return r;
                        continue;
                }
                running = true;
                c = memory_get(m, rec->container, false);
                if (!c)
                        return -ENOMEM;
                if (c->kill_attempt == rec->attempt + 1)
                        continue;
                c->kill_attempt = rec->attempt + 1;
                r = add_action(res,
                               (struct xp_podsync_action){.kind = XP_PODSYNC_KILL,
                                                          .container = rec->container,
                                                          .attempt = rec->attempt,
                                                          .signal = SIGKILL});
                if (r < 0)
                        return r;
        }
        res->done = !running;
        return 0;
}

/* One sync of a pod the server has: what xp_podsync() works with, the steps below fill it in. */
struct sync {
        const struct xp_podsync_config *config;
        struct xp_podsync_memory *m;
        const struct xp_pod *pod;
        const struct xp_container_record *records;
        size_t n_records;
        int64_t now_ns;
        struct xp_podsync_result *res;
        struct cview *views; /* the init containers, then the others */
        size_t n_init, n;
        bool deleting;        /* deletionTimestamp is set */
        bool server_terminal; /* the server's phase is Succeeded or Failed */
        bool stopping;        /* deleting or terminal: nothing starts any more */
        bool any_running, absorbed, init_failed;
        bool kept; /* an exited record is kept until the server holds its outcome */
};

static const struct xp_container *spec_container(const struct sync *y, size_t i)
{
        const struct xp_pod_spec *spec = &y->pod->spec;

        return i < y->n_init ? &spec->init_containers.items[i]
                             : &spec->containers.items[i - y->n_init];
}

/* Every container's view: its memory, its running record, the outcome of an exited one (taken
 * into memory; plan_forgets() decides when the record goes). */
static int build_views(struct sync *y, struct xp_error *err)
{
        const char *pod_name = y->pod->metadata.name;
        int r;

        y->views = calloc(y->n ? y->n : 1, sizeof(*y->views));
        if (!y->views)
                return -ENOMEM;
        /* every entry first: memory_get() may move them */
        for (size_t i = 0; i < y->n; i++)
                if (spec_container(y, i)->name &&
                    !memory_get(y->m, spec_container(y, i)->name, i < y->n_init))
                        return -ENOMEM;
        for (size_t i = 0; i < y->n; i++) {
                const struct xp_container *ct = spec_container(y, i);
                struct cview *v = &y->views[i];
                const struct xp_container_record *done;

                if (!ct->name)
                        return xp_errorf(
                            err, -EINVAL, "pod %s: container %zu has no name", pod_name, i);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(y->views[j].spec->name, ct->name) == 0)
                                return xp_errorf(err,
                                                 -EINVAL,
                                                 "pod %s: two containers named %s",
                                                 pod_name,
                                                 ct->name);
                v->spec = ct;
                v->mem = memory_get(y->m, ct->name, i < y->n_init);
                if (!v->mem)
                        return -ENOMEM;
                v->running = find_record(y->records, y->n_records, ct->name, false);
                done = find_record(y->records, y->n_records, ct->name, true);
                if (done && done->config_error) {
                        /* no attempt: kept apart from the outcomes, not started again */
                        free(v->mem->config_error);
                        v->mem->config_error = strdup(done->message ? done->message : "");
                        if (!v->mem->config_error)
                                return -ENOMEM;
                        y->absorbed = true;
                        v->exited = done;
                } else if (done) {
                        if (!v->mem->last.set || v->mem->last.attempt < done->attempt)
                                y->absorbed = true;
                        if ((r = absorb(y->config, v->mem, done, y->now_ns)) < 0)
                                return r;
                        v->exited = done;
                }
                if (v->running)
                        y->any_running = true;
        }
        return 0;
}

/* Which containers finished for good, which restart; whether the inits are all done. */
static void classify(struct sync *y, struct plan *p)
{
        for (size_t i = 0; i < y->n; i++) {
                struct cview *v = &y->views[i];
                const struct outcome *o = &v->mem->last;

                if (v->running || !o->set)
                        continue;
                if (!y->stopping && wants_restart(y->pod->spec.restart_policy, i < y->n_init, o))
                        v->restarting = true;
                else
                        v->finished = true;
                if (i < y->n_init && !v->restarting && o->exit_code != 0)
                        y->init_failed = true;
        }
        for (size_t i = 0; i < y->n_init; i++)
                if (!succeeded(&y->views[i]))
                        p->inits_done = false;
}

/* Adds action kind (FORGET, START or KILL with sig) for container i of the sync. */
static int container_action(
    struct sync *y, size_t i, enum xp_podsync_action_kind kind, unsigned attempt, int sig)
{
        return add_action(y->res,
                          (struct xp_podsync_action){.kind = kind,
                                                     .container = y->views[i].spec->name,
                                                     .init = i < y->n_init,
                                                     .attempt = attempt,
                                                     .signal = sig});
}

/* Whether the server's status holds the outcome of attempt of container name: its terminated
 * state (or last state) names the attempt's containerID. */
static bool server_has(const struct xp_pod *pod, const char *name, bool init, unsigned attempt)
{
        const struct xp_pod_status *st = &pod->status;
        size_t n = init ? st->init_container_statuses.n : st->container_statuses.n;
        _cleanup_free_ char *id = NULL;

        if (container_id(pod->metadata.uid, name, attempt, &id) < 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                const struct xp_container_status *cs =
                    init ? &st->init_container_statuses.items[i] : &st->container_statuses.items[i];
                const struct xp_container_state_terminated *t = cs->state.terminated;
                const struct xp_container_state_terminated *lt = cs->last_state.terminated;

                if (xp_streq0(cs->name, name) && ((t && xp_streq0(t->container_id, id)) ||
                                                  (lt && xp_streq0(lt->container_id, id))))
                        return true;
        }
        return false;
}

/*
 * Forgets: an exited record goes at once when its container restarts (the runtime keeps one
 * record per container: before its START), or once the server holds its outcome. Until then it
 * is the only durable copy: an agent restarted while the server is away reads it again, and
 * neither loses the exit nor starts the attempt again.
 */
static int plan_forgets(struct sync *y)
{
        for (size_t i = 0; i < y->n; i++) {
                const struct cview *v = &y->views[i];
                unsigned attempt;
                int r;

                if (!v->exited || v->running)
                        continue;
                attempt = v->exited->attempt;
                if (!v->exited->config_error && !v->restarting && v->mem->last.attempt == attempt &&
                    !server_has(y->pod, v->spec->name, i < y->n_init, attempt)) {
                        y->kept = true;
                        continue;
                }
                r = container_action(y, i, XP_PODSYNC_FORGET, attempt, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Starts: the first unfinished init container, else every container (after its back-off). */
static int plan_starts(struct sync *y)
{
        size_t from = y->n_init, to = y->n;

        if (y->stopping || y->init_failed)
                return 0;
        for (size_t i = 0; i < y->n_init; i++)
                if (!succeeded(&y->views[i])) {
                        from = i;
                        to = i + 1;
                        break;
                }
        for (size_t i = from; i < to; i++) {
                struct cview *v = &y->views[i];
                unsigned attempt = v->mem->last.set ? v->mem->last.attempt + 1 : 0;
                int r;

                if (v->running || v->finished || v->mem->config_error)
                        continue;
                if (v->restarting && v->mem->restart_at_ns > y->now_ns) {
                        wake_at(y->res, v->mem->restart_at_ns);
                        continue;
                }
                if (v->mem->held) {
                        if (v->mem->hold_wake_ns > 0)
                                wake_at(y->res, v->mem->hold_wake_ns);
                        continue;
                }
                v->starting = true;
                r = container_action(y, i, XP_PODSYNC_START, attempt, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One signal to a running container, once per attempt (mark is the memory of having sent it). */
static int signal_once(struct sync *y, size_t i, unsigned *mark, int sig)
{
        const struct cview *v = &y->views[i];

        if (*mark == v->running->attempt + 1)
                return 0;
        *mark = v->running->attempt + 1;
        return container_action(y, i, XP_PODSYNC_KILL, v->running->attempt, sig);
}

/* Kills: deletion (SIGTERM, SIGKILL at the deadline) or a terminal pod (SIGKILL). */
static int plan_kills(struct sync *y)
{
        const struct xp_opt_int64 *grace = &y->pod->metadata.deletion_grace_period_seconds;
        int64_t deadline = y->deleting ? y->pod->metadata.deletion_timestamp * NS_PER_SEC : 0;
        bool now_kill;

        if (!y->stopping)
                return 0;
        /* The kubelet gives the whole grace from when it starts stopping: deletionTimestamp
         * holds whole seconds, so counting to it alone cut a 3 s grace to about 2.4 s. */
        if (y->deleting && !y->m->deleting_since_ns)
                y->m->deleting_since_ns = y->now_ns;
        if (y->deleting && grace->set && grace->value > 0 &&
            y->m->deleting_since_ns + grace->value * NS_PER_SEC > deadline)
                deadline = y->m->deleting_since_ns + grace->value * NS_PER_SEC;
        now_kill = !y->deleting || y->now_ns >= deadline;
        for (size_t i = 0; i < y->n; i++) {
                struct cview *v = &y->views[i];
                int r;

                if (!v->running)
                        continue;
                r = now_kill ? signal_once(y, i, &v->mem->kill_attempt, SIGKILL)
                             : signal_once(y, i, &v->mem->term_attempt, SIGTERM);
                if (r < 0)
                        return r;
                if (!now_kill)
                        wake_at(y->res, deadline);
        }
        return 0;
}

/* The kills a failed liveness or startup probe asked for: SIGTERM once, SIGKILL at the probe's
 * deadline; the first of them carries the probe's Killing message, so that each restart is one
 * more count on the Event, as the kubelet's; the exit then restarts as restartPolicy says. */
static int plan_probe_kills(struct sync *y)
{
        for (size_t i = y->n_init; i < y->n && !y->stopping; i++) {
                struct cview *v = &y->views[i];
                struct cmem *c = v->mem;
                size_t before = y->res->n_actions;
                bool now_kill, first;
                int r;

                if (!v->running || c->probe_kill_attempt != v->running->attempt + 1)
                        continue;
                first = c->term_attempt != v->running->attempt + 1 &&
                        c->kill_attempt != v->running->attempt + 1;
                now_kill = y->now_ns >= c->probe_kill_deadline_ns;
                r = now_kill ? signal_once(y, i, &c->kill_attempt, SIGKILL)
                             : signal_once(y, i, &c->term_attempt, SIGTERM);
                if (r < 0)
                        return r;
                if (first && y->res->n_actions > before)
                        y->res->actions[before].message = c->probe_kill_message;
                if (!now_kill)
                        wake_at(y->res, c->probe_kill_deadline_ns);
        }
        return 0;
}

/* The phase, the kubelet's way, kept once terminal. */
static enum xp_pod_phase pod_phase(const struct sync *y, const struct plan *p)
{
        enum xp_restart_policy policy = y->pod->spec.restart_policy;
        size_t pending = 0, running = 0, stopped = 0, ok = 0;

        if (y->m->terminal != XP_POD_PHASE_UNSET)
                return y->m->terminal;
        if (y->init_failed)
                return XP_POD_FAILED;
        if (!p->inits_done)
                return XP_POD_PENDING;
        for (size_t i = y->n_init; i < y->n; i++) {
                const struct cview *v = &y->views[i];

                if (v->running)
                        running++;
                else if (v->finished || v->restarting)
                        stopped++, ok += v->mem->last.exit_code == 0;
                else
                        pending++;
        }
        if (pending > 0)
                return XP_POD_PENDING;
        if (running > 0)
                return XP_POD_RUNNING;
        if (stopped > 0 && stopped == ok &&
            (y->deleting || policy == XP_RESTART_NEVER || policy == XP_RESTART_ON_FAILURE))
                return XP_POD_SUCCEEDED;
        if (stopped > 0 && (y->deleting || policy == XP_RESTART_NEVER))
                return XP_POD_FAILED;
        return XP_POD_RUNNING;
}

/* A record of a container the spec lacks has no place: kill it, then forget it. */
static int remove_strangers(struct sync *y)
{
        for (size_t i = 0; i < y->n_records; i++) {
                const struct xp_container_record *rec = &y->records[i];
                bool known = false;
                int r;

                for (size_t j = 0; j < y->n && !known; j++)
                        known = xp_streq0(rec->container, y->views[j].spec->name);
                if (known || !rec->container)
                        continue;
                y->any_running = y->any_running || !rec->exited;
                if (!rec->exited) {
                        /* views[].mem may move here: they are not used after this */
                        struct cmem *c = memory_get(y->m, rec->container, false);

                        if (!c)
                                return -ENOMEM;
                        if (c->kill_attempt == rec->attempt + 1)
                                continue; /* SIGKILL once */
                        c->kill_attempt = rec->attempt + 1;
                }
                r = add_action(y->res,
                               (struct xp_podsync_action){.kind = rec->exited ? XP_PODSYNC_FORGET
                                                                              : XP_PODSYNC_KILL,
                                                          .container = rec->container,
                                                          .attempt = rec->attempt,
                                                          .signal = rec->exited ? 0 : SIGKILL});
                if (r < 0)
                        return r;
        }
        return 0;
}

static int sync_pod(struct sync *y, struct xp_error *err)
{
        enum xp_pod_phase server_phase = y->pod->status.phase;
        struct plan p;
        int r;

        y->n_init = y->pod->spec.init_containers.n;
        y->n = y->n_init + y->pod->spec.containers.n;
        y->deleting = y->pod->metadata.deletion_timestamp != 0;
        y->server_terminal = server_phase == XP_POD_SUCCEEDED || server_phase == XP_POD_FAILED;
        if (!y->m->seeded && (r = seed(y->m, y->pod)) < 0)
                return r;
        r = build_views(y, err);
        if (r < 0)
                return r;
        p = (struct plan){.init = y->views,
                          .n_init = y->n_init,
                          .main = y->views + y->n_init,
                          .n_main = y->n - y->n_init,
                          .inits_done = true};
        if (y->m->terminal == XP_POD_PHASE_UNSET && y->server_terminal)
                y->m->terminal = server_phase;
        y->stopping = y->deleting || y->m->terminal != XP_POD_PHASE_UNSET;
        classify(y, &p);
        if ((r = plan_forgets(y)) < 0 || (r = plan_starts(y)) < 0 || (r = plan_kills(y)) < 0 ||
            (r = plan_probe_kills(y)) < 0)
                return r;
        p.phase = pod_phase(y, &p);
        if (p.phase == XP_POD_SUCCEEDED || p.phase == XP_POD_FAILED)
                y->m->terminal = p.phase;

        /* a terminal pod on the server keeps what it has unless an outcome is new */
        if (!y->server_terminal || y->absorbed) {
                r = build_status(y->pod, y->m, &p, y->now_ns, &y->res->status);
                if (r < 0)
                        return r;
        }
        r = remove_strangers(y);
        if (r < 0)
                return r;
        if (y->deleting && !y->any_running) {
                r = add_action(y->res, (struct xp_podsync_action){.kind = XP_PODSYNC_DELETE_POD});
                if (r < 0)
                        return r;
        }
        /* done only once the server holds the final status: until then a sync (a watch event,
         * a relist after the server was away) compares it again and writes it again */
        y->res->done = y->m->terminal != XP_POD_PHASE_UNSET && !y->deleting && !y->any_running &&
                       !y->res->status && !y->kept;
        return 0;
}

int xp_podsync(const struct xp_podsync_config *config,
               struct xp_podsync_memory *memory,
               const struct xp_pod *pod,
               const struct xp_container_record *records,
               size_t n_records,
               int64_t now_ns,
               struct xp_podsync_result *ret,
               struct xp_error *err)
{
        struct xp_podsync_config cfg = *config;
        struct xp_podsync_result res = {0};
        struct xp_podsync_memory work;
        int r;

        if (pod && !pod->metadata.uid)
                return xp_errorf(err,
                                 -EINVAL,
                                 "pod %s: metadata.uid is missing",
                                 pod->metadata.name ? pod->metadata.name : "?");
        if (cfg.backoff_initial_ms <= 0)
                cfg.backoff_initial_ms = 10000;
        if (cfg.backoff_max_ms <= 0)
                cfg.backoff_max_ms = 300000;
        if (cfg.backoff_reset_ms <= 0)
                cfg.backoff_reset_ms = 600000;
        r = memory_copy(memory, &work);
        if (r < 0)
                return xp_errorf(err, r, "pod sync: out of memory");
        if (pod) {
                struct sync y = {.config = &cfg,
                                 .m = &work,
                                 .pod = pod,
                                 .records = records,
                                 .n_records = n_records,
                                 .now_ns = now_ns,
                                 .res = &res};

                r = sync_pod(&y, err);
                free(y.views);
        } else
                r = sync_gone(&work, records, n_records, &res);
        if (r < 0) {
                memory_done(&work);
                xp_podsync_result_clear(&res);
                if (r == -ENOMEM)
                        return xp_errorf(err, r, "pod sync: out of memory");
                return r;
        }
        memory_done(memory);
        *memory = work;
        *ret = res;
        return 0;
}
