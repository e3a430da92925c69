/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The per-pod state machine of the node agent (what the kubelet's pod worker does), as one pure
 * function: given the pod as the server has it, the container records the runtime lists for it
 * and what the agent remembers, it says what to start, kill and forget, and what status to
 * report. No I/O, no clock (now_ns is given), no globals. docs/agent.md has the user's view.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/object.h"
#include "xpool/runtime.h"

struct xp_podsync_config {
        int64_t backoff_initial_ms; /* 10000 */
        int64_t backoff_max_ms;     /* 300000 */
        int64_t backoff_reset_ms;   /* 600000: running this long resets the back-off */
};

/* What the agent remembers of one pod between syncs (restart counts, back-off, last states). */
struct xp_podsync_memory; /* opaque; new/free */
/* NULL when out of memory. */
struct xp_podsync_memory *xp_podsync_memory_new(void);
void xp_podsync_memory_free(struct xp_podsync_memory *m);
XP_DEFINE_FREEP(struct xp_podsync_memory, xp_podsync_memory_free)

/* The most addresses of a pod (one per family) and the longest address. */
#define XP_PODSYNC_IPS_MAX 2
#define XP_PODSYNC_IP_MAX  46

/*
 * The addresses the pod's status reports from now on: hostIP and hostIPs the node's host_ip
 * (NULL or "": left as the server has them), podIP and podIPs pod_ips (the first is podIP; n 0:
 * left as the server has them, so a pod keeps its address once it had one, as with the
 * kubelet). Copied; longer ones are cut.
 */
void xp_podsync_memory_set_ips(struct xp_podsync_memory *m,
                               const char *host_ip,
                               const char *const *pod_ips,
                               size_t n_pod_ips);

/* The pod's first address as set last (the one its probes reach); NULL: none. */
const char *xp_podsync_memory_pod_ip(const struct xp_podsync_memory *m);

enum xp_podsync_action_kind {
        XP_PODSYNC_START,      /* start container `container`, attempt `attempt` (launch.c) */
        XP_PODSYNC_KILL,       /* send `signal` to container */
        XP_PODSYNC_FORGET,     /* xp_runtime_remove the exited container record */
        XP_PODSYNC_DELETE_POD, /* all stopped after deletionTimestamp: DELETE grace 0 */
};

/* container is borrowed from the pod spec or the records passed to xp_podsync(): valid while
 * they are. */
struct xp_podsync_action {
        enum xp_podsync_action_kind kind;
        const char *container;
        bool init;
        unsigned attempt;
        int signal;
        const char *message; /* KILL: the Killing Event's message; NULL: "Stopping container" */
};

struct xp_podsync_result {
        struct xp_podsync_action *actions;
        size_t n_actions;
        json_t
            *status; /* the pod status to report (a full v1 PodStatus JSON), NULL when unchanged */
        int64_t wake_at_ns; /* when to sync again without an event (back-off end, kill deadline), 0:
                               never */
        bool done;          /* terminal and fully cleaned: memory may be dropped */
};

/*
 * Pure: no I/O, no clock (now_ns given). pod may be NULL (deleted from the server): kill all,
 * forget all. records: this pod's containers as xp_runtime_list() gave them. memory is updated
 * (restart counts, back-off, outcomes of forgotten records). The agent writes the status first
 * (when not NULL: a FORGET's outcome is only in it and in memory), then carries out the actions
 * in order (FORGET of a container comes before its START), and syncs again once records change
 * or at wake_at_ns.
 * *ret owns its members (xp_podsync_result_clear()). -ENOMEM; -EINVAL for a pod without uid or
 * with two containers of one name. On failure memory and *ret are untouched.
 */
int xp_podsync(const struct xp_podsync_config *config,
               struct xp_podsync_memory *memory,
               const struct xp_pod *pod,
               const struct xp_container_record *records,
               size_t n_records,
               int64_t now_ns,
               struct xp_podsync_result *ret,
               struct xp_error *err);
void xp_podsync_result_clear(struct xp_podsync_result *r);

/*
 * Holds container (an init container when init) back: while held it is not started, and its
 * status is waiting with reason (NULL: ContainerCreating) and message (may be NULL); the pod
 * wakes at wake_ns (0: no wake) so that the holder can look again. The agent holds a container
 * whose image is being pulled or could not be (src/agent/pull.c). Holding again replaces the
 * reason. m NULL: -ENOMEM. xp_podsync_release() lets it start at the next sync.
 */
int xp_podsync_hold(struct xp_podsync_memory *m,
                    const char *container,
                    bool init,
                    const char *reason,
                    const char *message,
                    int64_t wake_ns);
void xp_podsync_release(struct xp_podsync_memory *m, const char *container, bool init);

/*
 * The probes' verdict about attempt of container (src/agent/probe_agent.c): a container whose
 * spec has a readiness or startup probe is ready (containerStatuses[].ready, the Ready and
 * ContainersReady conditions) only once the verdict about its running attempt says ready, and
 * with a startup probe started only once it says started. -ENOMEM.
 */
int xp_podsync_set_probed(
    struct xp_podsync_memory *m, const char *container, unsigned attempt, bool ready, bool started);
/*
 * A liveness or startup probe of attempt of container failed: it gets SIGTERM at the next sync
 * and SIGKILL at deadline_ns, the Killing Events saying message; its exit restarts it as the
 * pod's restartPolicy says, with the usual back-off. -ENOMEM.
 */
int xp_podsync_probe_kill(struct xp_podsync_memory *m,
                          const char *container,
                          unsigned attempt,
                          int64_t deadline_ns,
                          const char *message);
/* Releases the containers held with reason whose wake time has come (the holder looks again at
 * their next START: the agent's wait for a ConfigMap or Secret, src/agent/podconfig.c). */
void xp_podsync_release_due(struct xp_podsync_memory *m, const char *reason, int64_t now_ns);
