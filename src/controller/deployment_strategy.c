/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The strategies' steps over a Deployment's ReplicaSets (Kubernetes' rolling.go, recreate.go,
 * sync.go scale() and cleanupDeployment). The arithmetic works on copies that it may reorder;
 * what changed is written back by name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deployment_sync.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/store.h"

static ssize_t index_of(const struct dsync *s, const char *name)
{
        for (size_t i = 0; i < s->n; i++)
                if (s->rs[i].name && name && strcmp(s->rs[i].name, name) == 0)
                        return (ssize_t)i;
        return -1;
}

/* Writes each ReplicaSet of copy (n of them) whose replicas changed. Returns how many did. */
static int apply(struct dsync *s, const struct xp_deploy_rs *copy, size_t n, int *ret_changed)
{
        int changed = 0;

        for (size_t i = 0; i < n; i++) {
                ssize_t k = index_of(s, copy[i].name);
                int r;

                if (k < 0)
                        continue;
                if (s->rs[k].replicas != copy[i].replicas)
                        changed++;
                r = ds_scale_rs(s, (size_t)k, copy[i].replicas);
                if (r < 0)
                        return r;
        }
        *ret_changed = changed;
        return 0;
}

int ds_scale(struct dsync *s)
{
        struct xp_deploy_rs *copy = malloc((s->n + 1) * sizeof(*copy));
        ssize_t new_index = -1;
        int changed, r;

        if (!copy)
                return -ENOMEM;
        memcpy(copy, s->rs, s->n * sizeof(*copy));
        if (s->new_index >= 0)
                new_index = s->new_index;
        xp_deploy_scale(&s->spec, copy, s->n, new_index);
        r = apply(s, copy, s->n, &changed);
        free(copy);
        return r;
}

static bool complete(const struct dsync *s)
{
        const struct xp_deploy_rs *n = &s->rs[s->new_index];

        if (n->replicas != s->spec.replicas || n->available < s->spec.replicas)
                return false;
        for (size_t i = 0; i < s->n; i++)
                if ((ssize_t)i != s->new_index && (s->rs[i].replicas || s->rs[i].status_replicas))
                        return false;
        return true;
}

/* The old ReplicaSets, copied (the new one left out). */
static struct xp_deploy_rs *olds(const struct dsync *s, size_t *ret_n)
{
        struct xp_deploy_rs *copy = malloc((s->n + 1) * sizeof(*copy));
        size_t n = 0;

        if (!copy)
                return NULL;
        for (size_t i = 0; i < s->n; i++)
                if ((ssize_t)i != s->new_index)
                        copy[n++] = s->rs[i];
        *ret_n = n;
        return copy;
}

int ds_rolling(struct dsync *s)
{
        struct xp_deploy_rs *old;
        int32_t target, from;
        size_t n_old;
        int changed = 0, r;

        if (s->new_index < 0) {
                r = ds_new_replicaset(s, true);
                if (r < 0 || s->created)
                        return r;
        }
        from = s->rs[s->new_index].replicas;
        target = xp_deploy_rolling_new(&s->spec, s->rs, s->n, &s->rs[s->new_index]);
        r = ds_scale_rs(s, (size_t)s->new_index, target);
        if (r < 0 || target > from)
                return r; /* scaled up: the old ones wait for the next sync */
        old = olds(s, &n_old);
        if (!old)
                return -ENOMEM;
        xp_deploy_rolling_old(&s->spec, old, n_old, &s->rs[s->new_index]);
        r = apply(s, old, n_old, &changed);
        free(old);
        if (r >= 0 && !changed && complete(s))
                ds_cleanup(s);
        return r;
}

struct pods_ctx {
        const struct dsync *s;
        bool active;
};

static int old_pod(json_t *pod, void *userdata)
{
        struct pods_ctx *c = userdata;
        const json_t *ref = xp_owner_controller_ref(pod);
        const char *uid = json_string_value(json_object_get(ref, "uid"));
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

        if (!uid || (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
                return 0;
        for (size_t i = 0; i < c->s->n; i++) {
                const char *rs_uid = wl_meta(c->s->objs[i], "uid");

                if ((ssize_t)i != c->s->new_index && rs_uid && strcmp(rs_uid, uid) == 0) {
                        c->active = true;
                        return -1; /* found one: stop */
                }
        }
        return 0;
}

bool ds_old_pods_active(struct dsync *s)
{
        struct pods_ctx c = {s, false};

        wl_cache_each(&s->w->cache[WL_PODS], old_pod, &c);
        return c.active;
}

int ds_recreate(struct dsync *s)
{
        struct xp_deploy_rs *old;
        size_t n_old;
        int changed, r = 0;

        old = olds(s, &n_old);
        if (!old)
                return -ENOMEM;
        switch (xp_deploy_recreate_step(&s->spec,
                                        old,
                                        n_old,
                                        ds_old_pods_active(s),
                                        s->new_index >= 0 ? &s->rs[s->new_index] : NULL)) {
        case XP_RECREATE_SCALE_DOWN_OLD:
                for (size_t i = 0; i < n_old; i++)
                        old[i].replicas = 0;
                r = apply(s, old, n_old, &changed);
                break;
        case XP_RECREATE_WAIT:
                break;
        case XP_RECREATE_SCALE_UP_NEW:
                if (s->new_index < 0)
                        r = ds_new_replicaset(s, true);
                if (r >= 0 && !s->created)
                        r = ds_scale_rs(s, (size_t)s->new_index, s->spec.replicas);
                break;
        case XP_RECREATE_DONE:
                if (complete(s))
                        ds_cleanup(s);
                break;
        }
        free(old);
        return r;
}

void ds_cleanup(struct dsync *s)
{
        const json_t *limit =
            json_object_get(json_object_get(s->d, "spec"), "revisionHistoryLimit");
        struct xp_deploy_rs *old;
        size_t n_old, *del, n_del;

        old = olds(s, &n_old);
        del = malloc((n_old + 1) * sizeof(*del));
        if (!old || !del) {
                free(old);
                free(del);
                return;
        }
        n_del = xp_deploy_history_cleanup(
            old, n_old, json_is_integer(limit) ? (int32_t)json_integer_value(limit) : 10, del);
        for (size_t i = 0; i < n_del; i++) {
                struct xp_error err = {0};
                json_t *last = NULL;
                int r = xp_registry_delete(s->w->registry,
                                           "replicasets",
                                           wl_meta(s->d, "namespace"),
                                           old[del[i]].name,
                                           0,
                                           &last,
                                           &err);

                if (r < 0 && r != -ENOENT)
                        xp_log(LOG_WARNING,
                               "deployment %s: old replica set %s not deleted: %s",
                               s->key,
                               old[del[i]].name,
                               err.msg);
                json_decref(last);
        }
        free(old);
        free(del);
}
