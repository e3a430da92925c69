/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One ReplicaSet's sync (Kubernetes' syncReplicaSet): claim its pods, create or delete the
 * difference to spec.replicas unless earlier creations and deletions are still on their way
 * (expectations), and write its status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"
#include "xpool/log.h"

static int32_t spec_replicas(const json_t *object)
{
        const json_t *v = json_object_get(json_object_get(object, "spec"), "replicas");
        json_int_t n = v ? json_integer_value(v) : 1;

        return n < 0 ? 0 : n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

static int32_t min_ready(const json_t *object)
{
        json_int_t n =
            json_integer_value(json_object_get(json_object_get(object, "spec"), "minReadySeconds"));

        return n < 0 ? 0 : n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

static int create_pods(struct xp_workloads *w, const json_t *rs, const char *ekey, int32_t n)
{
        int r = xp_expectations_expect_creations(&w->expectations, ekey, n, wl_now_ms(w));
        size_t created;

        if (r < 0)
                return r;
        created = wl_create_pods(w, rs, "apps/v1", "ReplicaSet", NULL, NULL, (size_t)n);
        /* what was not created is not coming: expect no more than what was */
        for (size_t k = created; k < (size_t)n; k++)
                xp_expectations_creation_observed(&w->expectations, ekey);
        return created < (size_t)n ? -EAGAIN : 0;
}

static int delete_pods(struct xp_workloads *w,
                       const json_t *rs,
                       const char *ekey,
                       struct xp_rs_pod *active,
                       size_t n_active,
                       int32_t n)
{
        const char **names = calloc((size_t)n + 1, sizeof(*names));
        int r;

        if (!names)
                return -ENOMEM;
        xp_rs_pods_sort_for_deletion(active, n_active);
        for (int32_t i = 0; i < n; i++)
                names[i] = active[i].name;
        r = xp_expectations_expect_deletions(
            &w->expectations, ekey, names, (size_t)n, wl_now_ms(w));
        for (int32_t i = 0; r >= 0 && i < n; i++)
                if (wl_delete_pod(w, rs, active[i].object) < 0)
                        xp_expectations_deletion_observed(&w->expectations, ekey, names[i]);
        free(names);
        return r;
}

/* Keeps the active pods at the front of pods; returns their count. */
static size_t partition_active(struct xp_rs_pod *pods, size_t n)
{
        size_t k = 0;

        for (size_t i = 0; i < n; i++)
                if (xp_rs_pod_active(&pods[i])) {
                        struct xp_rs_pod t = pods[k];

                        pods[k++] = pods[i];
                        pods[i] = t;
                }
        return k;
}

static json_t *status_of(const json_t *rs, const struct xp_rs_counts *c)
{
        json_t *status = json_pack("{s:i}", "replicas", c->replicas);
        const json_t *generation = json_object_get(json_object_get(rs, "metadata"), "generation");

        if (!status)
                return NULL;
        /* the counts Kubernetes leaves out when 0 (omitempty) */
        if (c->fully_labeled)
                json_object_set_new(status, "fullyLabeledReplicas", json_integer(c->fully_labeled));
        if (c->ready)
                json_object_set_new(status, "readyReplicas", json_integer(c->ready));
        if (c->available)
                json_object_set_new(status, "availableReplicas", json_integer(c->available));
        if (json_is_integer(generation))
                json_object_set(status, "observedGeneration", (json_t *)generation);
        return status;
}

static int
manage(struct xp_workloads *w, const json_t *rs, const char *ekey, struct xp_rs_pod *pods, size_t n)
{
        size_t n_active = partition_active(pods, n);
        int32_t diff = xp_rs_diff(spec_replicas(rs), (int32_t)n_active);

        if (diff > 0)
                return create_pods(w, rs, ekey, diff);
        if (diff < 0)
                return delete_pods(w, rs, ekey, pods, n_active, -diff);
        return 0;
}

int wl_replicaset_sync(struct xp_workloads *w, const char *key)
{
        json_t *rs = wl_cache_get(&w->cache[WL_REPLICASETS], key), *status;
        struct xp_rs_pod *pods = NULL;
        struct xp_rs_counts counts;
        char ekey[600];
        size_t n = 0;
        int r;

        wl_expect_key("ReplicaSet", key, ekey, sizeof(ekey));
        if (!rs) {
                xp_expectations_delete(&w->expectations, ekey);
                return 0;
        }
        json_incref(rs); /* the cache may not change under a sync, but be safe across writes */
        r = wl_owned_pods(w, rs, "apps/v1", "ReplicaSet", &pods, &n);
        if (r >= 0 && xp_expectations_satisfied(&w->expectations, ekey, wl_now_ms(w)) &&
            !json_object_get(json_object_get(rs, "metadata"), "deletionTimestamp"))
                r = manage(w, rs, ekey, pods, n);
        xp_rs_count(pods,
                    n,
                    json_object_get(
                        json_object_get(json_object_get(json_object_get(rs, "spec"), "template"),
                                        "metadata"),
                        "labels"),
                    min_ready(rs),
                    wl_now_s(w),
                    &counts);
        if (counts.next_available_s)
                wl_recheck_at(w, counts.next_available_s);
        status = status_of(rs, &counts);
        if (status) {
                int s = wl_write_status(w, "replicasets", key, status);

                if (r >= 0 && s < 0 && s != -ENOENT)
                        r = s;
        }
        json_decref(status);
        json_decref(rs);
        free(pods);
        return r;
}
