/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The removal of what a pod that is over left on the node, on a thread of its own: its volumes
 * (their tmpfs unmounted, their directories removed) once it is over, and, once it is gone from
 * the server, its logs and the runtime's leftovers too. The reconcile loop hands the removal over
 * and goes on: a new pod's start no longer waits behind the last one's teardown (unmounts and
 * directory removals on the data directory's disk, ~6 ms of the loop's time per pod in a
 * `perf trace` of bench_pods on the loaded 2-core VM). One thread, first in first out: a pod's
 * volumes-only removal goes before its whole one.
 */

#include <stdbool.h>

#include "xpool/error.h"
#include "xpool/runtime.h"

struct xp_agent_podclean;

/* runtime and data_dir are borrowed until free. -errno with err (thread creation). */
int xp_agent_podclean_new(struct xp_runtime *runtime,
                          const char *data_dir,
                          struct xp_agent_podclean **ret,
                          struct xp_error *err);
/* Runs every removal queued, then stops. NULL is fine. */
void xp_agent_podclean_free(struct xp_agent_podclean *c);
/*
 * Queues the removal of the pod's volumes, and with whole its logs and what the runtime keeps of
 * it (xp_runtime_remove_logs(), xp_runtime_remove_pod()). Out of memory it is done at once, on
 * the caller's thread. Failures are logged. A removal still queued when the agent dies (SIGKILL,
 * a crash) is lost with the queue: the next agent's xp_agent_podclean_sweep() finds what it left.
 */
void xp_agent_podclean_submit(struct xp_agent_podclean *c,
                              const char *pod_namespace,
                              const char *pod_name,
                              const char *pod_uid,
                              bool whole);
/*
 * What a teardown queued by an earlier agent, and lost with it, left, for every uid known() does
 * not claim: DATA/volumes/<uid> (their tmpfs unmounted), DATA/logs/<ns>_<name>_<uid> (what the
 * containers printed) and, by xp_runtime_remove_pod(), STATE_DIR/.pods/<uid> with the pod's IPC
 * pin (a .pods/<uid> whose pod still has a container's state stays: -EBUSY). Run once the pods
 * and containers are all known (after re-adoption), before the namespace pins' sweep: .pods/<uid>
 * gone, that pod's pins go in the same start. Failures are logged. Returns how many were removed.
 */
int xp_agent_podclean_sweep(struct xp_runtime *runtime,
                            const char *data_dir,
                            const char *state_dir,
                            bool (*known)(const char *uid, void *userdata),
                            void *userdata);
