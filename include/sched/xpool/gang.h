/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Gangs in the scheduler core: a group of pods placed all or nothing on one snapshot, devices
 * included (docs/scheduler.md, "Gangs"). Each member is placed and assumed on the snapshot in
 * turn, so the next member sees the devices taken; when a member fits nowhere every assumed
 * member is taken out again and the snapshot is as it was. A partial gang never holds devices.
 *
 * Across nodes the members land in as few topology domains as the node labels allow: the
 * topology keys are tried finest first (an NVLink domain, then a rack or zone): the whole gang
 * in one domain of the first key where one has room, else of the next key, else spread over
 * the coarsest key's domains, the fullest-free first.
 *
 * Also here: the hooks the server's scheduling loop (src/controller/scheduler*.c) calls at its
 * decision points, so queues and preemption (src/sched/queue*.c, preempt*.c and the controller's
 * queue*.c) plug into it without a second loop.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/object.h"
#include "xpool/placement.h"
#include "xpool/sched.h"

/* The xpool shape of a gang, for bare pods: the label names the gang (pods of one namespace
 * with the same value), the min label its minimum member count (1..XP_GANG_MEMBERS_MAX,
 * required with the name). */
#define XP_GANG_LABEL     "xpool.io/gang"
#define XP_GANG_MIN_LABEL "xpool.io/gang-min"
/* Volcano's shape: the pod annotation naming its scheduling.volcano.sh/v1beta1 PodGroup. */
#define XP_GANG_VOLCANO_ANNOTATION "scheduling.k8s.io/group-name"
/* The default topology keys, finest first ("," between them in the server's flag). */
#define XP_GANG_TOPOLOGY_KEYS     "nvidia.com/gpu.clique,topology.kubernetes.io/zone"
#define XP_GANG_TOPOLOGY_KEYS_MAX 4
#define XP_GANG_MEMBERS_MAX       10000

struct xp_gang_options {
        /* node label keys naming topology domains, finest first; n 0: no topology (every node
         * alike) */
        char topology_keys[XP_GANG_TOPOLOGY_KEYS_MAX][254];
        size_t n_topology_keys;
        /* keep the members assumed on the snapshot when the gang fits (the loop's choice: it
         * then binds them, and xp_sched_pod_add() of a bound member replaces its assumed entry);
         * false: the snapshot is left unchanged either way */
        bool commit;
        /* on failure, xp_sched_why() of the member that fit nowhere, with the members before it
         * assumed (ret->why) */
        bool explain;
};

/* Fills options with the default keys (XP_GANG_TOPOLOGY_KEYS), commit false. */
void xp_gang_options_default(struct xp_gang_options *options);
/* Parses a "key,key" list into options' keys. -EINVAL with err for an empty key or too many. */
int xp_gang_options_set_keys(struct xp_gang_options *options,
                             const char *list,
                             struct xp_error *err);

struct xp_gang_result {
        struct xp_placement *placements; /* [n], for pods[0..n) in order; NULL when it failed */
        size_t n;
        /* placed: the topology key the members were kept within (NULL: none applied) and how
         * many of its domains they use */
        const char *key; /* borrowed from the options until they change */
        size_t domains;
        /* not placed: the member that fit nowhere once pods[0..failed) were assumed */
        size_t failed;
        char *why; /* not placed, with options->explain: the failed member's explanation */
};

void xp_gang_result_done(struct xp_gang_result *result);

/*
 * Places the n pods of a gang all or nothing. 1 with *ret filled (caller frees with
 * xp_gang_result_done()); 0 when the gang does not fit whole, with ret->failed the member that
 * fit nowhere and *ret_reason (caller frees) why, in kube-scheduler's words for that member
 * with the members before it assumed: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
 * -EINVAL for an empty gang, more than XP_GANG_MEMBERS_MAX, a member already in the snapshot or
 * a member's request that cannot be understood (err says which); -ENOMEM. On 0 and on failure
 * the snapshot is unchanged; on 1 it is unchanged unless options->commit.
 */
int xp_sched_gang_place(struct xp_sched *sched,
                        const struct xp_pod *const *pods,
                        size_t n,
                        const struct xp_gang_options *options,
                        struct xp_gang_result *ret,
                        char **ret_reason,
                        struct xp_error *err);

/*
 * The scheduling loop's hooks (all optional; NULL: no such step). The loop calls them from its
 * one thread, with the snapshot it places on; userdata is the hook owner's.
 */
struct xp_sched_hooks {
        void *userdata;
        /*
         * Before a pod (n 1) or a whole gang is placed: 1 go on, 0 hold it back with *ret_reason
         * (caller frees: "queue team-a: over its limit of 8 nvidia.com/gpu"; shown by xpool why
         * and in the Event), -errno (logged, the pods retried later).
         */
        int (*admit)(void *userdata, const struct xp_pod *const *pods, size_t n, char **ret_reason);
        /*
         * Fair order among pods of equal priority (NULL: FIFO only): the queue a pending pod
         * counts in (borrowed until the pod changes; NULL: none), and that queue's dominant
         * share now (lower goes first; it grows as the loop places the queue's pods).
         */
        const char *(*queue)(void *userdata, const char *namespace, const char *name);
        double (*share)(void *userdata, const char *queue);
        /* A placement was accounted (assumed, its binding on its way; pl may be NULL: the pod's
         * placement annotation has it), or a pod was bound or went away (removed: nobody's
         * nominee any more). */
        void (*placed)(void *userdata, const struct xp_pod *pod, const struct xp_placement *pl);
        void (*removed)(void *userdata, const char *namespace, const char *name);
        /*
         * Nothing fits the pods (n 1, or a gang's members): 1 when victims were chosen and their
         * eviction begun (*ret_node: the nominated node, caller frees), 0 when preemption cannot
         * help, with *ret_message (caller frees; kube-scheduler's "preemption: ..." tail), -errno.
         */
        int (*preempt)(void *userdata,
                       struct xp_sched *sched,
                       const struct xp_pod *const *pods,
                       size_t n,
                       char **ret_node,
                       char **ret_message);
};
