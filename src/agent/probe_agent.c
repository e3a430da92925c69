/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's probes (probe.h): one entry per running container that has probes, its state
 * machine (probe_state.c) driven by the reconcile loop's clock. The loop asks for the due
 * probes; a few worker threads run them (probe_run.c, each bounded by its timeout) and hand them
 * back on the pool's eventfd; the loop collects the results, queues the Unhealthy Events and
 * takes the verdicts into its pods' memories (xp_podsync_set_probed(), _probe_kill()).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "probe.h"
#include "xpool/log.h"
#include "xpool/runtime.h"
#include "xpool/workers.h"

#define NS_PER_SEC INT64_C(1000000000)
/* Probes run at once at most this many: exec probes wait for a helper process, HTTP and TCP
 * ones for their timeouts; more due ones queue. */
#define PROBE_THREADS 3
/* The kubelet's default grace of a pod that says none. */
#define DEFAULT_GRACE_S 30

struct entry {
        char *uid, *namespace, *name, *container, *pod_ip;
        unsigned attempt;
        int64_t pod_grace_s;
        struct xp_probe_container c;
        unsigned in_flight; /* jobs running: the entry is freed after they are back */
        bool dead;          /* the container stopped: freed once nothing is in flight */
        bool seen;          /* found running by the current track */
};

struct probe_job {
        struct xp_work work; /* first: the pool's */
        struct entry *e;
        enum xp_probe_kind kind;
        struct xp_probe_target target;
        enum xp_probe_result result;
        char message[XP_PROBE_MESSAGE_MAX];
};

struct xp_agent_probes {
        struct xp_runtime *runtime;
        struct xp_agent_events *events;
        struct xp_workers *workers;
        struct entry **entries;
        size_t n, cap;
};

static void entry_free(struct entry *e)
{
        if (!e)
                return;
        free(e->uid);
        free(e->namespace);
        free(e->name);
        free(e->container);
        free(e->pod_ip);
        for (int k = 0; k < XP_PROBE_KINDS; k++)
                xp_probe_spec_clear(&e->c.spec[k]);
        free(e);
}

static void probe_job_run(void *userdata, void *ctx, struct xp_work *work)
{
        struct probe_job *job = (struct probe_job *)work;

        (void)userdata;
        (void)ctx;
        job->result = xp_probe_run(&job->e->c.spec[job->kind], &job->target, job->message);
}

static void probe_job_free(struct xp_work *work)
{
        free(work);
}

static const struct xp_workers_ops probe_ops = {.run = probe_job_run, .free = probe_job_free};

int xp_agent_probes_new(struct xp_runtime *runtime,
                        struct xp_agent_events *events,
                        struct xp_agent_probes **ret,
                        struct xp_error *err)
{
        struct xp_agent_probes *p = calloc(1, sizeof(*p));
        int r;

        if (!p)
                return xp_errorf(err, -ENOMEM, "out of memory");
        p->runtime = runtime;
        p->events = events;
        r = xp_workers_new(
            &(struct xp_workers_options){
                .ops = &probe_ops, .userdata = p, .threads = PROBE_THREADS, .notify = true},
            &p->workers,
            err);
        if (r < 0) {
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

void xp_agent_probes_free(struct xp_agent_probes *p)
{
        if (!p)
                return;
        /* the queued probes run to their end first; the entries outlive them */
        xp_workers_free(p->workers);
        for (size_t i = 0; i < p->n; i++)
                entry_free(p->entries[i]);
        free(p->entries);
        free(p);
}

int xp_agent_probes_fd(const struct xp_agent_probes *p)
{
        return xp_workers_fd(p->workers);
}

static struct entry *entry_find(struct xp_agent_probes *p, const char *uid, const char *container)
{
        for (size_t i = 0; i < p->n; i++) {
                struct entry *e = p->entries[i];

                if (!e->dead && strcmp(e->uid, uid) == 0 && strcmp(e->container, container) == 0)
                        return e;
        }
        return NULL;
}

static const struct xp_container_record *running_record(const struct xp_agent_probe_pod *pod,
                                                        const char *container)
{
        const struct xp_container_record *best = NULL;

        for (size_t i = 0; i < pod->n_records; i++) {
                const struct xp_container_record *r = &pod->records[i];

                if (!r->exited && r->pid > 0 && r->container &&
                    strcmp(r->container, container) == 0 && (!best || r->attempt > best->attempt))
                        best = r;
        }
        return best;
}

/* "<Kind> probe failed: message", or "errored" when the probe could not run. */
static void unhealthy(struct xp_agent_probes *p,
                      const struct entry *e,
                      bool errored,
                      enum xp_probe_kind kind,
                      const char *message)
{
        char text[XP_PROBE_MESSAGE_MAX + 64];

        snprintf(text,
                 sizeof(text),
                 "%s probe %s: %s",
                 xp_probe_kind_name(kind),
                 errored ? "errored" : "failed",
                 message);
        if (xp_agent_event(p->events, e->namespace, e->name, e->uid, "Warning", "Unhealthy", text) <
            0)
                xp_log(LOG_WARNING, "agent: pod %s/%s: %s", e->namespace, e->name, text);
}

/* The entry's probe specs from the container's JSON; one that cannot be used is said in an
 * Event and left out (a readiness or startup one then keeps the container unready). */
static int entry_specs(struct xp_agent_probes *p, struct entry *e, const json_t *container)
{
        static const char *const keys[] = {"startupProbe", "livenessProbe", "readinessProbe"};

        for (int k = 0; k < XP_PROBE_KINDS; k++) {
                struct xp_error err = {0};
                int r = xp_probe_spec_parse(container, keys[k], &e->c.spec[k], &err);

                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        unhealthy(p, e, true, k, xp_error_message(&err));
        }
        return 0;
}

static int entry_add(struct xp_agent_probes *p,
                     const struct xp_agent_probe_pod *pod,
                     const json_t *container,
                     const struct xp_container_record *rec)
{
        struct entry *e = calloc(1, sizeof(*e));
        const json_t *grace =
            json_object_get(json_object_get(pod->pod, "spec"), "terminationGracePeriodSeconds");

        if (!e)
                return -ENOMEM;
        e->uid = strdup(pod->uid);
        e->namespace = strdup(pod->namespace);
        e->name = strdup(pod->name);
        e->container = strdup(rec->container);
        e->pod_ip = pod->pod_ip ? strdup(pod->pod_ip) : NULL;
        e->attempt = rec->attempt;
        e->pod_grace_s = json_is_integer(grace) ? json_integer_value(grace) : DEFAULT_GRACE_S;
        if (e->pod_grace_s < 0 || e->pod_grace_s > INT32_MAX)
                e->pod_grace_s = e->pod_grace_s < 0 ? 0 : INT32_MAX;
        e->seen = true;
        if (!e->uid || !e->namespace || !e->name || !e->container || (pod->pod_ip && !e->pod_ip) ||
            entry_specs(p, e, container) < 0) {
                entry_free(e);
                return -ENOMEM;
        }
        xp_probe_container_begin(&e->c, rec->started_ns);
        if (p->n == p->cap) {
                size_t cap = p->cap ? 2 * p->cap : 16;
                struct entry **grown = realloc(p->entries, cap * sizeof(*grown));

                if (!grown) {
                        entry_free(e);
                        return -ENOMEM;
                }
                p->entries = grown;
                p->cap = cap;
        }
        p->entries[p->n++] = e;
        return 0;
}

static bool has_probes(const json_t *container)
{
        return json_object_get(container, "livenessProbe") ||
               json_object_get(container, "readinessProbe") ||
               json_object_get(container, "startupProbe");
}

/* Frees the dead entries nothing runs for. */
static void sweep(struct xp_agent_probes *p)
{
        size_t i = 0;

        while (i < p->n) {
                struct entry *e = p->entries[i];

                if (!e->dead || e->in_flight > 0) {
                        i++;
                        continue;
                }
                entry_free(e);
                p->entries[i] = p->entries[--p->n];
        }
}

int xp_agent_probes_track(struct xp_agent_probes *p, const struct xp_agent_probe_pod *pod)
{
        const json_t *containers = json_object_get(json_object_get(pod->pod, "spec"), "containers");
        const json_t *c;
        size_t i;

        for (i = 0; i < p->n; i++)
                if (strcmp(p->entries[i]->uid, pod->uid) == 0)
                        p->entries[i]->seen = false;
        json_array_foreach(containers, i, c)
        {
                const char *name = json_string_value(json_object_get(c, "name"));
                const struct xp_container_record *rec;
                struct entry *e;

                if (!name || !has_probes(c) || !(rec = running_record(pod, name)))
                        continue;
                e = entry_find(p, pod->uid, name);
                if (e && e->attempt == rec->attempt) {
                        e->seen = true;
                        continue;
                }
                if (e)
                        e->dead = true;
                if (entry_add(p, pod, c, rec) < 0)
                        return -ENOMEM;
        }
        for (i = 0; i < p->n; i++)
                if (strcmp(p->entries[i]->uid, pod->uid) == 0 && !p->entries[i]->seen)
                        p->entries[i]->dead = true;
        sweep(p);
        return 0;
}

void xp_agent_probes_forget(struct xp_agent_probes *p, const char *uid)
{
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->entries[i]->uid, uid) == 0)
                        p->entries[i]->dead = true;
        sweep(p);
}

static int submit(struct xp_agent_probes *p, struct entry *e, enum xp_probe_kind kind)
{
        struct probe_job *job = calloc(1, sizeof(*job));

        if (!job)
                return -ENOMEM;
        job->e = e;
        job->kind = kind;
        job->target = (struct xp_probe_target){.runtime = p->runtime,
                                               .pod_uid = e->uid,
                                               .container = e->container,
                                               .pod_ip = e->pod_ip};
        e->c.t[kind].in_flight = true;
        e->in_flight++;
        xp_workers_submit(p->workers, &job->work);
        return 0;
}

int64_t xp_agent_probes_run_due(struct xp_agent_probes *p, int64_t now_ns)
{
        int64_t next = 0;

        for (size_t i = 0; i < p->n; i++) {
                struct entry *e = p->entries[i];
                int64_t due;

                for (int k = 0; k < XP_PROBE_KINDS && !e->dead; k++)
                        if (xp_probe_due(&e->c, k, now_ns) && submit(p, e, k) < 0)
                                xp_log(LOG_ERR,
                                       "agent: a probe of %s/%s: out of memory",
                                       e->namespace,
                                       e->name);
                due = e->dead ? 0 : xp_probe_next_due(&e->c);
                if (due > 0 && (next == 0 || due < next))
                        next = due;
        }
        return next;
}

/* One result into its entry: the Event, and the verdict when something changed. */
static bool take_result(struct xp_agent_probes *p,
                        struct probe_job *job,
                        int64_t now_ns,
                        struct xp_agent_probe_verdict *v)
{
        struct entry *e = job->e;
        struct xp_probe_change ch;

        e->in_flight--;
        if (e->dead)
                return false;
        ch = xp_probe_record(&e->c, job->kind, job->result, now_ns);
        if (job->result == XP_PROBE_FAILURE)
                unhealthy(p, e, false, job->kind, job->message);
        else if (job->result == XP_PROBE_UNKNOWN)
                unhealthy(p, e, true, job->kind, job->message);
        if (!ch.ready_changed && !ch.started && !ch.kill)
                return false;
        *v = (struct xp_agent_probe_verdict){
            .attempt = e->attempt, .ready = e->c.ready, .started = e->c.started, .kill = ch.kill};
        snprintf(v->uid, sizeof(v->uid), "%s", e->uid);
        snprintf(v->container, sizeof(v->container), "%s", e->container);
        if (ch.kill) {
                int64_t grace = e->c.spec[job->kind].termination_grace_s;

                v->kill_deadline_ns = now_ns + (grace >= 0 ? grace : e->pod_grace_s) * NS_PER_SEC;
                snprintf(v->kill_message,
                         sizeof(v->kill_message),
                         "Container %s failed %s probe, will be restarted",
                         e->container,
                         job->kind == XP_PROBE_STARTUP ? "startup" : "liveness");
        }
        return true;
}

size_t xp_agent_probes_collect(struct xp_agent_probes *p,
                               int64_t now_ns,
                               struct xp_agent_probe_verdict **ret)
{
        struct probe_job *jobs = (struct probe_job *)xp_workers_done(p->workers);
        struct xp_agent_probe_verdict *out = NULL;
        size_t n = 0, cap = 0;

        while (jobs) {
                struct probe_job *job = jobs;
                struct xp_agent_probe_verdict v;

                jobs = (struct probe_job *)job->work.next;
                if (take_result(p, job, now_ns, &v)) {
                        if (n == cap) {
                                size_t c2 = cap ? 2 * cap : 8;
                                struct xp_agent_probe_verdict *grown =
                                    realloc(out, c2 * sizeof(*grown));

                                if (grown) {
                                        out = grown;
                                        cap = c2;
                                }
                        }
                        if (n < cap)
                                out[n++] = v;
                }
                free(job);
        }
        sweep(p);
        *ret = out;
        return n;
}
