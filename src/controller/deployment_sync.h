/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One Deployment's sync, shared by deployment_sync.c (reads, status) and deployment_rollout.c
 * (the new ReplicaSet, scaling, the strategies). */

#include <sys/types.h>

#include "deployment.h"
#include "workloads.h"

struct dsync {
        struct xp_workloads *w;
        json_t *d;
        const char *key;
        struct xp_deploy_spec spec;
        json_t **objs; /* the ReplicaSets it controls, each referenced */
        struct xp_deploy_rs *rs;
        size_t n;
        ssize_t new_index; /* -1: none yet */
        bool created;      /* this sync created the new ReplicaSet */
        struct xp_deploy_counts before;
};

/* The rollout (deployment_rollout.c). */
int ds_new_replicaset(struct dsync *s, bool create);
int ds_scale_rs(struct dsync *s, size_t i, int32_t replicas);
int ds_scale(struct dsync *s);
int ds_rolling(struct dsync *s);
int ds_recreate(struct dsync *s);
/* Deletes the old ReplicaSets past revisionHistoryLimit. */
void ds_cleanup(struct dsync *s);
/* Whether a pod of an old ReplicaSet is still running (or may be). */
bool ds_old_pods_active(struct dsync *s);
