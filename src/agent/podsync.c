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

#include "agent/podsync.h"
#include "xpool/codec.h"
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
};

struct xp_podsync_memory {
        struct cmem *items;
        size_t n;
        bool seeded;
        enum xp_pod_phase terminal; /* once Succeeded or Failed, kept */
};

static void outcome_done(struct outcome *o)
{
        free(o->reason);
        free(o->message);
        *o = (struct outcome){0};
}

static int outcome_copy(const struct outcome *src, struct outcome *dst)
{
        *dst = *src;
        dst->reason = NULL;
        dst->message = NULL;
        if ((src->reason && !(dst->reason = strdup(src->reason))) ||
            (src->message && !(dst->message = strdup(src->message)))) {
                outcome_done(dst);
                return -ENOMEM;
        }
        return 0;
}

static void cmem_done(struct cmem *c)
{
        free(c->name);
        free(c->config_error);
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

static int memory_copy(const struct xp_podsync_memory *src, struct xp_podsync_memory *dst)
{
        *dst = (struct xp_podsync_memory){.seeded = src->seeded, .terminal = src->terminal};
        if (src->n == 0)
                return 0;
        dst->items = calloc(src->n, sizeof(*dst->items));
        if (!dst->items)
                return -ENOMEM;
        for (size_t i = 0; i < src->n; i++) {
                struct cmem *d = &dst->items[i];
                const struct cmem *s = &src->items[i];

                *d = *s;
                d->name = d->config_error = NULL;
                d->last = d->prev = (struct outcome){0};
                dst->n++;
                if (!(d->name = strdup(s->name)) || outcome_copy(&s->last, &d->last) < 0 ||
                    outcome_copy(&s->prev, &d->prev) < 0 ||
                    (s->config_error && !(d->config_error = strdup(s->config_error)))) {
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

/* A Go time.Duration as the kubelet prints it ("10s", "1m20s", "5m0s"). */
static void format_duration(int64_t ms, char buf[static 32])
{
        int64_t s = ms / 1000, frac = ms % 1000;
        char sec[16];

        if (ms < 1000) {
                snprintf(buf, 32, "%" PRId64 "ms", ms);
                return;
        }
        if (frac)
                snprintf(sec, sizeof(sec), "%" PRId64 ".%03" PRId64, s % 60, frac);
        else
                snprintf(sec, sizeof(sec), "%" PRId64, s % 60);
        if (frac) /* trailing zeros go, as in Go */
                for (size_t n = strlen(sec); sec[n - 1] == '0'; n--)
                        sec[n - 1] = 0;
        if (s >= 3600)
                snprintf(buf, 32, "%" PRId64 "h%" PRId64 "m%ss", s / 3600, s / 60 % 60, sec);
        else if (s >= 60)
                snprintf(buf, 32, "%" PRId64 "m%ss", s / 60, sec);
        else
                snprintf(buf, 32, "%ss", sec);
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
        bool restarting;                           /* finished, will restart (now or later) */
        bool starting;                             /* START is in this result */
        bool finished;                             /* finished, stays so */
};

static bool succeeded(const struct cview *v)
{
        return v->finished && v->mem->last.exit_code == 0;
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
        if (rec->message && !(o.message = strdup(rec->message))) {
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
        } else if (v->restarting && !v->starting) {
                char d[32];

                format_duration(c->shown_backoff_ms, d);
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
                               v->spec && (c->init ? succeeded(v) : running),
                               "restartCount",
                               (int)restarts,
                               "image",
                               v->spec->image ? v->spec->image : "",
                               "imageID",
                               "",
                               "started",
                               running);
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

static bool not_running(const struct cview *v)
{
        return v->running == NULL;
}

struct plan {
        struct cview *init;
        size_t n_init;
        struct cview *main;
        size_t n_main;
        bool inits_done;
        enum xp_pod_phase phase;
};

static int
build_status(const struct xp_pod *pod, const struct plan *p, int64_t now_ns, json_t **ret)
{
        _cleanup_(json_decrefp) json_t *pod_json = NULL, *status = NULL, *canon_json = NULL,
                                       *old = NULL;
        _cleanup_(xp_pod_freep) struct xp_pod *canon = NULL;
        _cleanup_free_ char *init_msg = NULL, *ready_msg = NULL;
        json_t *conds, *old_conds, *arr;
        bool ready = true, completed = p->phase == XP_POD_SUCCEEDED;
        int r;

        r = xp_pod_to_json(pod, &pod_json);
        if (r < 0)
                return r;
        /* a reference of our own: pod_json's status is replaced below */
        old = json_incref(json_object_get(pod_json, "status"));
        status = old ? json_deep_copy(old) : json_object();
        if (!status)
                return -ENOMEM;
        old_conds = json_object_get(old, "conditions");
        conds = json_object_get(status, "conditions");
        if (!conds) {
                if (json_object_set_new(status, "conditions", json_array()) < 0)
                        return -ENOMEM;
                conds = json_object_get(status, "conditions");
        }
        for (size_t i = 0; i < p->n_main; i++)
                ready = ready && p->main[i].running;
        if (!p->inits_done && names_message("containers with incomplete status: ",
                                            p->init,
                                            p->n_init,
                                            not_succeeded,
                                            &init_msg) < 0)
                return -ENOMEM;
        if (!ready && !completed &&
            names_message(
                "containers with unready status: ", p->main, p->n_main, not_running, &ready_msg) <
                0)
                return -ENOMEM;
        if ((r = set_condition(conds,
                               old_conds,
                               "Initialized",
                               p->inits_done,
                               p->inits_done ? (completed ? "PodCompleted" : NULL)
                                             : "ContainersNotInitialized",
                               init_msg,
                               now_ns)) < 0 ||
            (r = set_condition(conds,
                               old_conds,
                               "Ready",
                               ready,
                               ready       ? NULL
                               : completed ? "PodCompleted"
                                           : "ContainersNotReady",
                               ready_msg,
                               now_ns)) < 0 ||
            (r = set_condition(conds,
                               old_conds,
                               "ContainersReady",
                               ready,
                               ready       ? NULL
                               : completed ? "PodCompleted"
                                           : "ContainersNotReady",
                               ready_msg,
                               now_ns)) < 0)
                return r;
        if (json_object_set_new(status, "phase", json_string(xp_pod_phase_to_string(p->phase))) <
                0 ||
            (!pod->status.start_time &&
             json_object_set_new(status, "startTime", time_json(now_ns)) < 0))
                return -ENOMEM;
        for (int pass = 0; pass < 2; pass++) {
                const struct cview *v = pass ? p->main : p->init;
                size_t n = pass ? p->n_main : p->n_init;
                const char *key = pass ? "containerStatuses" : "initContainerStatuses";

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

        /* through the codec, so the comparison sees what encoding the pod would give */
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

static int sync_pod(const struct xp_podsync_config *config,
                    struct xp_podsync_memory *m,
                    const struct xp_pod *pod,
                    const struct xp_container_record *records,
                    size_t n_records,
                    int64_t now_ns,
                    struct xp_podsync_result *res,
                    struct xp_error *err)
{
        _cleanup_free_ struct cview *views = NULL;
        const struct xp_pod_spec *spec = &pod->spec;
        size_t n_init = spec->init_containers.n, n = n_init + spec->containers.n;
        enum xp_pod_phase server_phase = pod->status.phase;
        bool deleting = pod->metadata.deletion_timestamp != 0;
        bool server_terminal = server_phase == XP_POD_SUCCEEDED || server_phase == XP_POD_FAILED;
        bool stopping, any_running = false, absorbed = false, init_failed = false;
        struct plan p = {0};
        int r;

        if (!m->seeded && (r = seed(m, pod)) < 0)
                return r;
        views = calloc(n ? n : 1, sizeof(*views));
        if (!views)
                return -ENOMEM;
        /* every entry first: memory_get() may move them */
        for (size_t i = 0; i < n; i++) {
                bool init = i < n_init;
                const struct xp_container *ct =
                    init ? &spec->init_containers.items[i] : &spec->containers.items[i - n_init];

                if (ct->name && !memory_get(m, ct->name, init))
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                bool init = i < n_init;
                const struct xp_container *ct =
                    init ? &spec->init_containers.items[i] : &spec->containers.items[i - n_init];
                const struct xp_container_record *done;

                if (!ct->name)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "pod %s: container %zu has no name",
                                         pod->metadata.name,
                                         i);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(views[j].spec->name, ct->name) == 0)
                                return xp_errorf(err,
                                                 -EINVAL,
                                                 "pod %s: two containers named %s",
                                                 pod->metadata.name,
                                                 ct->name);
                views[i].spec = ct;
                views[i].mem = memory_get(m, ct->name, init);
                if (!views[i].mem)
                        return -ENOMEM;
                views[i].running = find_record(records, n_records, ct->name, false);
                done = find_record(records, n_records, ct->name, true);
                if (done && done->config_error) {
                        /* no attempt: kept apart from the outcomes, not started again */
                        free(views[i].mem->config_error);
                        views[i].mem->config_error = strdup(done->message ? done->message : "");
                        if (!views[i].mem->config_error)
                                return -ENOMEM;
                        absorbed = true;
                } else if (done) {
                        if (!views[i].mem->last.set || views[i].mem->last.attempt < done->attempt)
                                absorbed = true;
                        if ((r = absorb(config, views[i].mem, done, now_ns)) < 0)
                                return r;
                }
                if (done && !views[i].running) {
                        /* before any START of it: the runtime keeps one record per container */
                        r = add_action(res,
                                       (struct xp_podsync_action){.kind = XP_PODSYNC_FORGET,
                                                                  .container = ct->name,
                                                                  .init = init,
                                                                  .attempt = done->attempt});
                        if (r < 0)
                                return r;
                }
                if (views[i].running)
                        any_running = true;
        }
        p = (struct plan){.init = views,
                          .n_init = n_init,
                          .main = views + n_init,
                          .n_main = n - n_init,
                          .inits_done = true};
        if (m->terminal == XP_POD_PHASE_UNSET && server_terminal)
                m->terminal = server_phase;
        stopping = deleting || m->terminal != XP_POD_PHASE_UNSET;

        /* which containers finished for good, which restart */
        for (size_t i = 0; i < n; i++) {
                struct cview *v = &views[i];
                const struct outcome *o = &v->mem->last;

                if (v->running || !o->set)
                        continue;
                if (!stopping && wants_restart(spec->restart_policy, i < n_init, o))
                        v->restarting = true;
                else
                        v->finished = true;
                if (i < n_init && !v->restarting && o->exit_code != 0)
                        init_failed = true;
        }
        for (size_t i = 0; i < n_init; i++)
                if (!succeeded(&views[i]))
                        p.inits_done = false;

        /* starts: the first unfinished init container, else every container */
        if (!stopping && !init_failed) {
                size_t from = n_init, to = n;

                for (size_t i = 0; i < n_init; i++)
                        if (!succeeded(&views[i])) {
                                from = i;
                                to = i + 1;
                                break;
                        }
                for (size_t i = from; i < to; i++) {
                        struct cview *v = &views[i];
                        unsigned attempt = v->mem->last.set ? v->mem->last.attempt + 1 : 0;

                        if (v->running || v->finished || v->mem->config_error)
                                continue;
                        if (v->restarting && v->mem->restart_at_ns > now_ns) {
                                wake_at(res, v->mem->restart_at_ns);
                                continue;
                        }
                        v->starting = true;
                        r = add_action(res,
                                       (struct xp_podsync_action){.kind = XP_PODSYNC_START,
                                                                  .container = v->spec->name,
                                                                  .init = i < n_init,
                                                                  .attempt = attempt});
                        if (r < 0)
                                return r;
                }
        }

        /* kills: deletion (SIGTERM, SIGKILL at the deadline) or a terminal pod (SIGKILL) */
        if (stopping) {
                int64_t deadline = deleting ? pod->metadata.deletion_timestamp * NS_PER_SEC : 0;
                bool now_kill = !deleting || now_ns >= deadline;

                for (size_t i = 0; i < n; i++) {
                        struct cview *v = &views[i];
                        unsigned mark;

                        if (!v->running)
                                continue;
                        mark = v->running->attempt + 1;
                        if (!now_kill && v->mem->term_attempt != mark) {
                                v->mem->term_attempt = mark;
                                r = add_action(
                                    res,
                                    (struct xp_podsync_action){.kind = XP_PODSYNC_KILL,
                                                               .container = v->spec->name,
                                                               .init = i < n_init,
                                                               .attempt = v->running->attempt,
                                                               .signal = SIGTERM});
                                if (r < 0)
                                        return r;
                        }
                        if (now_kill && v->mem->kill_attempt != mark) {
                                v->mem->kill_attempt = mark;
                                r = add_action(
                                    res,
                                    (struct xp_podsync_action){.kind = XP_PODSYNC_KILL,
                                                               .container = v->spec->name,
                                                               .init = i < n_init,
                                                               .attempt = v->running->attempt,
                                                               .signal = SIGKILL});
                                if (r < 0)
                                        return r;
                        }
                        if (!now_kill)
                                wake_at(res, deadline);
                }
        }

        /* the phase, kubelet's way, kept once terminal */
        if (m->terminal != XP_POD_PHASE_UNSET) {
                p.phase = m->terminal;
        } else if (init_failed) {
                p.phase = XP_POD_FAILED;
        } else if (!p.inits_done) {
                p.phase = XP_POD_PENDING;
        } else {
                size_t pending = 0, running = 0, stopped = 0, ok = 0;

                for (size_t i = n_init; i < n; i++) {
                        const struct cview *v = &views[i];

                        if (v->running)
                                running++;
                        else if (v->finished || v->restarting)
                                stopped++, ok += v->mem->last.exit_code == 0;
                        else
                                pending++;
                }
                if (pending > 0)
                        p.phase = XP_POD_PENDING;
                else if (running > 0)
                        p.phase = XP_POD_RUNNING;
                else if (stopped > 0 && stopped == ok &&
                         (deleting || spec->restart_policy == XP_RESTART_NEVER ||
                          spec->restart_policy == XP_RESTART_ON_FAILURE))
                        p.phase = XP_POD_SUCCEEDED;
                else if (stopped > 0 && (deleting || spec->restart_policy == XP_RESTART_NEVER))
                        p.phase = XP_POD_FAILED;
                else
                        p.phase = XP_POD_RUNNING;
        }
        if (p.phase == XP_POD_SUCCEEDED || p.phase == XP_POD_FAILED)
                m->terminal = p.phase;

        /* a terminal pod on the server keeps what it has unless an outcome is new */
        if (!server_terminal || absorbed) {
                r = build_status(pod, &p, now_ns, &res->status);
                if (r < 0)
                        return r;
        }

        /* a record of a container the spec lacks has no place: kill it, then forget it */
        for (size_t i = 0; i < n_records; i++) {
                const struct xp_container_record *rec = &records[i];
                bool known = false;

                for (size_t j = 0; j < n && !known; j++)
                        known = xp_streq0(rec->container, views[j].spec->name);
                if (known || !rec->container)
                        continue;
                any_running = any_running || !rec->exited;
                if (!rec->exited) {
                        /* views[].mem may move here: they are not used after this loop */
                        struct cmem *c = memory_get(m, rec->container, false);

                        if (!c)
                                return -ENOMEM;
                        if (c->kill_attempt == rec->attempt + 1)
                                continue; /* SIGKILL once */
                        c->kill_attempt = rec->attempt + 1;
                }
                r = add_action(res,
                               (struct xp_podsync_action){.kind = rec->exited ? XP_PODSYNC_FORGET
                                                                              : XP_PODSYNC_KILL,
                                                          .container = rec->container,
                                                          .attempt = rec->attempt,
                                                          .signal = rec->exited ? 0 : SIGKILL});
                if (r < 0)
                        return r;
        }
        if (deleting && !any_running) {
                r = add_action(res, (struct xp_podsync_action){.kind = XP_PODSYNC_DELETE_POD});
                if (r < 0)
                        return r;
        }
        res->done = m->terminal != XP_POD_PHASE_UNSET && !deleting && !any_running;
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
        if (pod)
                r = sync_pod(&cfg, &work, pod, records, n_records, now_ns, &res, err);
        else
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
