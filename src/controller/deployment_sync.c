/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One Deployment's sync (Kubernetes' syncDeployment): its ReplicaSets (claimed by selector and
 * controller ownerReference), then a scaling event, a paused Deployment, or a step of its
 * strategy (deployment_rollout.c), then its status with the Available and Progressing
 * conditions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deployment_sync.h"
#include "xpool/log.h"

static int collect(json_t *rs, void *userdata)
{
        struct dsync *s = userdata;
        const char *ns = wl_meta(rs, "namespace"), *dns = wl_meta(s->d, "namespace");
        const json_t *selector = json_object_get(json_object_get(s->d, "spec"), "selector");
        bool deleting =
            json_object_get(json_object_get(s->d, "metadata"), "deletionTimestamp") != NULL;
        enum xp_claim claim;

        if (!ns || !dns || strcmp(ns, dns) != 0)
                return 0;
        claim = xp_claim_decide(wl_meta(s->d, "uid"), selector, deleting, rs);
        if (claim == XP_CLAIM_RELEASE || claim == XP_CLAIM_IGNORE)
                return 0; /* a ReplicaSet is released by its Deployment only through its labels:
                             left as is */
        if (claim == XP_CLAIM_ADOPT &&
            wl_claim(s->w, "replicasets", s->d, "apps/v1", "Deployment", rs, true) <= 0)
                return 0;
        if (s->n % 16 == 0) {
                json_t **o = realloc(s->objs, (s->n + 16) * sizeof(*o));
                struct xp_deploy_rs *r = realloc(s->rs, (s->n + 16) * sizeof(*r));

                if (o)
                        s->objs = o;
                if (r)
                        s->rs = r;
                if (!o || !r)
                        return -ENOMEM;
        }
        s->objs[s->n] = json_incref(rs);
        xp_deploy_rs_read(rs, &s->rs[s->n]);
        s->n++;
        return 0;
}

static int32_t spec_int(const json_t *d, const char *key, int32_t dflt)
{
        const json_t *v = json_object_get(json_object_get(d, "spec"), key);

        if (!json_is_integer(v))
                return dflt;
        return json_integer_value(v) < 0 ? 0 : (int32_t)json_integer_value(v);
}

static int read_spec(struct dsync *s)
{
        const json_t *strategy = json_object_get(json_object_get(s->d, "spec"), "strategy");
        const json_t *rolling = json_object_get(strategy, "rollingUpdate");
        const char *type = json_string_value(json_object_get(strategy, "type"));
        const json_t *status = json_object_get(s->d, "status");
        struct xp_error err = {0};
        int r;

        s->spec.replicas = spec_int(s->d, "replicas", 1);
        s->spec.recreate = type && strcmp(type, "Recreate") == 0;
        s->spec.status_replicas = (int32_t)json_integer_value(json_object_get(status, "replicas"));
        if (s->spec.recreate)
                return 0;
        r = xp_deploy_fenceposts(json_object_get(rolling, "maxSurge"),
                                 json_object_get(rolling, "maxUnavailable"),
                                 s->spec.replicas,
                                 &s->spec.max_surge,
                                 &s->spec.max_unavailable,
                                 &err);
        if (r < 0)
                wl_event(s->w, s->d, "Warning", "InvalidStrategy", "%s", err.msg);
        return r;
}

static void read_before(struct dsync *s)
{
        const json_t *st = json_object_get(s->d, "status");

        s->before = (struct xp_deploy_counts){
            .replicas = (int32_t)json_integer_value(json_object_get(st, "replicas")),
            .updated = (int32_t)json_integer_value(json_object_get(st, "updatedReplicas")),
            .ready = (int32_t)json_integer_value(json_object_get(st, "readyReplicas")),
            .available = (int32_t)json_integer_value(json_object_get(st, "availableReplicas")),
        };
}

static void set_int(json_t *o, const char *key, int64_t v, bool always)
{
        if (v || always)
                json_object_set_new(o, key, json_integer(v));
}

/* The status as calculateStatus and syncRolloutStatus leave it. */
static int write_status(struct dsync *s)
{
        const json_t *old = json_object_get(s->d, "status");
        const json_t *meta = json_object_get(s->d, "metadata");
        json_t *status = json_object();
        const struct xp_deploy_rs *new_rs = s->new_index >= 0 ? &s->rs[s->new_index] : NULL;
        struct xp_deploy_counts c;
        int64_t recheck = 0;
        int r;

        if (!status)
                return -ENOMEM;
        xp_deploy_count(s->spec.replicas, s->rs, s->n, new_rs, &c);
        if (json_object_get(old, "conditions"))
                json_object_set_new(
                    status, "conditions", json_deep_copy(json_object_get(old, "conditions")));
        if (json_is_integer(json_object_get(meta, "generation")))
                json_object_set(status, "observedGeneration", json_object_get(meta, "generation"));
        set_int(status, "replicas", c.replicas, false);
        set_int(status, "updatedReplicas", c.updated, false);
        set_int(status, "readyReplicas", c.ready, false);
        set_int(status, "availableReplicas", c.available, false);
        set_int(status, "unavailableReplicas", c.unavailable, false);
        if (json_object_get(old, "collisionCount"))
                json_object_set(status, "collisionCount", json_object_get(old, "collisionCount"));
        struct xp_deploy_progress p = {
            .replicas = s->spec.replicas,
            .max_unavailable = s->spec.max_unavailable,
            .progress_deadline_s = spec_int(s->d, "progressDeadlineSeconds", 600),
            .paused = json_is_true(json_object_get(json_object_get(s->d, "spec"), "paused")),
            .new_rs_created = s->created,
            .observed = true,
            .new_rs = new_rs ? new_rs->name : NULL,
            .before = s->before,
            .now = c,
        };
        r = xp_deploy_conditions(&p, wl_now_s(s->w), status, &recheck);
        if (r == 1)
                wl_recheck_at(s->w, recheck);
        if (r >= 0)
                r = wl_write_status(s->w, "deployments", s->key, status);
        json_decref(status);
        return r == -ENOENT ? 0 : r;
}

static void dsync_done(struct dsync *s)
{
        for (size_t i = 0; i < s->n; i++)
                json_decref(s->objs[i]);
        free(s->objs);
        free(s->rs);
        json_decref(s->d);
}

static int step(struct dsync *s)
{
        bool paused = json_is_true(json_object_get(json_object_get(s->d, "spec"), "paused"));
        int r;

        if (json_object_get(json_object_get(s->d, "metadata"), "deletionTimestamp"))
                return 0;
        r = ds_new_replicaset(s, false);
        if (r < 0)
                return r;
        if (paused || xp_deploy_is_scaling_event(&s->spec, s->rs, s->n))
                return ds_scale(s);
        return s->spec.recreate ? ds_recreate(s) : ds_rolling(s);
}

int wl_deployment_sync(struct xp_workloads *w, const char *key)
{
        json_t *d = wl_cache_get(&w->cache[WL_DEPLOYMENTS], key);
        struct dsync s = {.w = w, .key = key, .new_index = -1};
        const json_t *selector;
        int r;

        if (!d)
                return 0;
        s.d = json_incref(d);
        selector = json_object_get(json_object_get(d, "spec"), "selector");
        if (json_object_size(selector) == 0) {
                wl_event(
                    w,
                    d,
                    "Warning",
                    "SelectingAll",
                    "This deployment is selecting all pods. A non-empty selector is required.");
                dsync_done(&s);
                return 0;
        }
        read_before(&s);
        r = read_spec(&s);
        if (r >= 0)
                r = wl_cache_each(&w->cache[WL_REPLICASETS], collect, &s);
        if (r >= 0)
                r = step(&s);
        if (r >= 0)
                r = write_status(&s);
        dsync_done(&s);
        return r;
}
