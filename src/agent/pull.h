/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's pull step (pull.c): before a container that runs from its image starts, its image
 * is made present as its imagePullPolicy says (Kubernetes' default when unset: Always for
 * :latest or no tag, else IfNotPresent), on puller threads of their own so that no pod waits
 * for another's pull, one pull shared by every container waiting for the same image. Meanwhile
 * the container is held (xp_podsync_hold()) with the kubelet's waiting reasons (ErrImagePull,
 * ImagePullBackOff with back-off, ErrImageNeverPull) and Events (Pulling, Pulled, Failed,
 * BackOff, ErrImageNeverPull). Everything but the pulls runs on the reconcile thread.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "podsync.h"
#include "xpool/client.h"
#include "xpool/error.h"
#include "xpool/image.h"
#include "xpool/object.h"

struct xp_agent_events;
struct xp_agent_pulls;

struct xp_agent_pulls_config {
        struct xp_image_store *store;           /* borrowed */
        const struct xp_apiclient_options *api; /* to read imagePullSecrets */
        struct xp_agent_events *events;         /* may be NULL */
        int64_t backoff_initial_ms, backoff_max_ms;
        unsigned threads;
};

int xp_agent_pulls_new(const struct xp_agent_pulls_config *c,
                       struct xp_agent_pulls **ret,
                       struct xp_error *err);
/* Cancels the pulls in flight and stops the threads. NULL is fine. */
void xp_agent_pulls_free(struct xp_agent_pulls *p);
/* An eventfd, readable once a pull has finished: then xp_agent_pull_take_done(). */
int xp_agent_pulls_fd(const struct xp_agent_pulls *p);

/* Whether container c names an image to pull. The gate is asked only for containers that run
 * from their images (an OCI runtime class); the process runtime's run on the node's files. */
bool xp_agent_pull_needed(const struct xp_container *c);

/* The pod a gate is asked about. */
struct xp_agent_pull_pod {
        const char *uid, *namespace, *name;
        const json_t *json;           /* spec.imagePullSecrets is read from it */
        const struct xp_pod *decoded; /* json decoded (the reconcile loop's), NULL: not at hand */
};

/*
 * Before START of container c (attempt): 1 when its image is there as its pull policy wants
 * (the start goes on), 0 when it is held in m (a pull queued or in flight, a back-off, a Never
 * image that is missing), -ENOMEM.
 */
int xp_agent_pull_gate(struct xp_agent_pulls *p,
                       const struct xp_agent_pull_pod *pod,
                       const struct xp_container *c,
                       bool init,
                       unsigned attempt,
                       int64_t now_ns,
                       struct xp_podsync_memory *m);

/* Before a sync of pod uid: its containers' holds brought up to date in m (a pull finished:
 * released or failed; a back-off over: released, the next START pulls again). */
void xp_agent_pull_refresh(struct xp_agent_pulls *p,
                           const struct xp_agent_pull_pod *pod,
                           int64_t now_ns,
                           struct xp_podsync_memory *m);

/* The uids of the pods whose pulls finished since the last call: *ret (caller frees each and
 * the array), *ret_n. */
int xp_agent_pull_take_done(struct xp_agent_pulls *p, char ***ret, size_t *ret_n);

/* The pod is gone: its waits are dropped (a pull others wait for goes on). */
void xp_agent_pull_forget(struct xp_agent_pulls *p, const char *uid);

/* Whether a pull brought an image since the last call (the Node's images are then written
 * at the next heartbeat). */
bool xp_agent_pulls_images_changed(struct xp_agent_pulls *p);

/* Node status.images as the kubelet reports them: the largest 50 images, each with at most 5
 * names (repo@digest names first, then tags) and sizeBytes. NULL: -ENOMEM or no store. */
json_t *xp_agent_node_images(struct xp_image_store *store);
