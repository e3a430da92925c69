/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Container probes, the kubelet's way (docs/probes.md): the state machine of one container's
 * startup, liveness and readiness probes (probe_state.c, pure: no I/O, no clock), one probe run
 * with its timeout (probe_run.c), and the agent's scheduling of them (probe_agent.c).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/error.h"

enum xp_probe_kind {
        XP_PROBE_STARTUP,
        XP_PROBE_LIVENESS,
        XP_PROBE_READINESS,
        XP_PROBE_KINDS
};

enum xp_probe_handler {
        XP_PROBE_EXEC,
        XP_PROBE_HTTP,
        XP_PROBE_TCP,
        XP_PROBE_GRPC
};

/* The most bytes of an exec probe's output or an HTTP probe's response read (the kubelet's). */
#define XP_PROBE_OUTPUT_MAX 10240
/* The longest httpGet path (and header line) and host a probe may give: the request of one
 * fits XP_PROBE_REQUEST_MAX with the usual headers; a longer path or host is refused. */
#define XP_PROBE_PATH_MAX    1024
#define XP_PROBE_HOST_MAX    255
#define XP_PROBE_REQUEST_MAX 8192
/* The longest message a probe result carries. */
#define XP_PROBE_MESSAGE_MAX 512

/* One probe of a container spec; strings owned (xp_probe_spec_clear()). */
struct xp_probe_spec {
        bool set;
        enum xp_probe_handler handler;
        char **command; /* exec: NULL-terminated */
        char *scheme;   /* httpGet: HTTP or HTTPS */
        char *host;     /* httpGet, tcpSocket: NULL: the pod's IP */
        char *path;     /* httpGet */
        char **headers; /* httpGet: "Name: value" lines, NULL-terminated; NULL: none */
        int port;       /* httpGet, tcpSocket, grpc: resolved (a named port looked up) */
        int64_t initial_delay_s, period_s, timeout_s, success_threshold, failure_threshold;
        int64_t termination_grace_s; /* -1: the pod's */
};

/*
 * The probe `key` (livenessProbe, readinessProbe, startupProbe) of a container's JSON into
 * *ret; ret->set false when the container has none. A port given by name is looked up in the
 * container's ports. -EINVAL with err for a probe with no handler or an unknown port name;
 * -ENOMEM.
 */
int xp_probe_spec_parse(const json_t *container,
                        const char *key,
                        struct xp_probe_spec *ret,
                        struct xp_error *err);
void xp_probe_spec_clear(struct xp_probe_spec *s);

enum xp_probe_result {
        XP_PROBE_UNKNOWN,
        XP_PROBE_SUCCESS,
        XP_PROBE_FAILURE
};

/* One probe's counters: the result flips after threshold consecutive results. */
struct xp_probe_tracker {
        enum xp_probe_result result;
        unsigned successes, failures; /* consecutive ones */
        int64_t next_ns;              /* when it is due next */
        bool in_flight;
};

/* One running container's probes (one attempt of it). */
struct xp_probe_container {
        struct xp_probe_spec spec[XP_PROBE_KINDS];
        struct xp_probe_tracker t[XP_PROBE_KINDS];
        bool started; /* no startup probe, or it passed */
        bool ready;   /* started, and its readiness probe passed (or it has none) */
        bool on_hold; /* killed by a probe: nothing is probed any more for this attempt */
};

/* The trackers of a container that started at started_ns, as the kubelet's workers begin:
 * readiness failing, liveness passing, startup unknown; each due after its initialDelaySeconds.
 * The specs in c are kept (set them first). */
void xp_probe_container_begin(struct xp_probe_container *c, int64_t started_ns);
/* Whether probe kind is due at now_ns (startup only until the container started; liveness and
 * readiness only after). */
bool xp_probe_due(const struct xp_probe_container *c, enum xp_probe_kind kind, int64_t now_ns);
/* The earliest time a probe of c is due (0: none will be). */
int64_t xp_probe_next_due(const struct xp_probe_container *c);

/* What a probe's result changed. */
struct xp_probe_change {
        bool ready_changed; /* c->ready flipped */
        bool started;       /* the startup probe just passed */
        bool kill;          /* liveness or startup failed failureThreshold times: kill it */
};

/*
 * A run of probe kind ended at now_ns with result (UNKNOWN: the probe cannot run here, e.g.
 * gRPC: counted as neither, never kills, keeps readiness false). Updates counters, the result,
 * started, ready, and the next due time (periodSeconds on).
 */
struct xp_probe_change xp_probe_record(struct xp_probe_container *c,
                                       enum xp_probe_kind kind,
                                       enum xp_probe_result result,
                                       int64_t now_ns);

/* An HTTP response's status code as the kubelet judges it: 200-399 pass. */
enum xp_probe_result xp_probe_http_status(int code);
/* "Liveness", "Readiness", "Startup". */
const char *xp_probe_kind_name(enum xp_probe_kind kind);

/* ---- one run (probe_run.c) ------------------------------------------------------------------ */

struct xp_runtime;

/* Where one run goes: the pod's IP and the container exec probes run in. */
struct xp_probe_target {
        struct xp_runtime *runtime;
        const char *pod_uid, *container;
        const char *pod_ip; /* NULL: 127.0.0.1 */
};

/*
 * Runs probe spec against target within spec->timeout_s: the result, and in message (may be
 * empty) what the kubelet's Event would say after "... probe failed: ". An exec probe's command
 * runs in the container (xp_runtime_exec()), is ended at its timeout and reaped; its output is
 * read up to XP_PROBE_OUTPUT_MAX bytes.
 */
enum xp_probe_result xp_probe_run(const struct xp_probe_spec *spec,
                                  const struct xp_probe_target *target,
                                  char message[static XP_PROBE_MESSAGE_MAX]);

/* CLOCK_MONOTONIC now in ms, and the ms left until deadline_ms (0 once past). */
int64_t xp_probe_now_ms(void);
int xp_probe_left_ms(int64_t deadline_ms);

/* probe_http.c: the GET of an httpGet probe on fd (connected to its host and port), done by
 * deadline_ms (CLOCK_MONOTONIC); msg (XP_PROBE_MESSAGE_MAX bytes) says why it failed. */
enum xp_probe_result xp_probe_http_run(const struct xp_probe_spec *spec,
                                       const struct xp_probe_target *t,
                                       int fd,
                                       int64_t deadline_ms,
                                       char *msg);

/* ---- the agent's probes (probe_agent.c) ----------------------------------------------------- */

struct xp_agent_events;
struct xp_container_record;

/*
 * Every running container's probes, on the reconcile loop's timers: due probes go to a few
 * worker threads (not one per probe), their results come back on an eventfd, Unhealthy Events
 * are queued, and what changed a container's readiness or asks for its kill is handed to the
 * loop as verdicts.
 */
struct xp_agent_probes;

int xp_agent_probes_new(struct xp_runtime *runtime,
                        struct xp_agent_events *events,
                        struct xp_agent_probes **ret,
                        struct xp_error *err);
/* Waits for the probes in flight (each ends by its timeout). NULL is fine. */
void xp_agent_probes_free(struct xp_agent_probes *p);
/* Readable while results wait for xp_agent_probes_collect(). */
int xp_agent_probes_fd(const struct xp_agent_probes *p);

/* One pod as the loop last synced it: pod (its JSON; the specs' probes), its containers'
 * records, its IP (NULL: not known). */
struct xp_agent_probe_pod {
        const char *uid, *namespace, *name;
        const json_t *pod;
        const struct xp_container_record *records;
        size_t n_records;
        const char *pod_ip;
};
/* The containers of pod that run now have probes from their start on; those that stopped have
 * none. -ENOMEM. */
int xp_agent_probes_track(struct xp_agent_probes *p, const struct xp_agent_probe_pod *pod);
/* The pod is over or gone: its probes end. */
void xp_agent_probes_forget(struct xp_agent_probes *p, const char *uid);
/* Hands the due probes to the workers: the next time one is due (0: none). */
int64_t xp_agent_probes_run_due(struct xp_agent_probes *p, int64_t now_ns);

/* What the results changed for one container's attempt. */
struct xp_agent_probe_verdict {
        char uid[64];
        char container[256];
        unsigned attempt;
        bool ready, started;
        bool kill; /* liveness or startup failed: kill by kill_deadline_ns */
        int64_t kill_deadline_ns;
        char kill_message[320]; /* the Killing Event's */
};
/* The verdicts since the last call (caller frees *ret); their Unhealthy Events are queued. */
size_t xp_agent_probes_collect(struct xp_agent_probes *p,
                               int64_t now_ns,
                               struct xp_agent_probe_verdict **ret);
