/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Deployment's rollout, one step per sync: its new ReplicaSet (found by template, or made and
 * named after the template's hash, with the next revision), the scaling of its ReplicaSets
 * (ScalingReplicaSet events as Kubernetes words them), the RollingUpdate and Recreate strategies
 * and the revision history's clean-up. The arithmetic is deployment_rolling.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deployment_sync.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/store.h"

/* Annotations a ReplicaSet never takes from its Deployment (skipCopyAnnotation). */
static bool skip_annotation(const char *key)
{
        return strcmp(key, "kubectl.kubernetes.io/last-applied-configuration") == 0 ||
               strcmp(key, XP_DEPLOY_REVISION) == 0 ||
               strcmp(key, "deployment.kubernetes.io/revision-history") == 0 ||
               strcmp(key, XP_DEPLOY_DESIRED) == 0 || strcmp(key, XP_DEPLOY_MAX) == 0;
}

/* What the ReplicaSet's annotations must be: the Deployment's, revision, desired and max. */
static int
fill_annotations(const struct dsync *s, json_t *annotations, int64_t revision, bool set_revision)
{
        const json_t *dann = json_object_get(json_object_get(s->d, "metadata"), "annotations");
        const char *key;
        json_t *v;
        char buf[32];

        json_object_foreach((json_t *)dann, key, v) if (!skip_annotation(key))
            json_object_set(annotations, key, v);
        if (set_revision) {
                snprintf(buf, sizeof(buf), "%lld", (long long)revision);
                json_object_set_new(annotations, XP_DEPLOY_REVISION, json_string(buf));
        }
        snprintf(buf, sizeof(buf), "%d", s->spec.replicas);
        json_object_set_new(annotations, XP_DEPLOY_DESIRED, json_string(buf));
        snprintf(buf, sizeof(buf), "%d", s->spec.replicas + s->spec.max_surge);
        return json_object_set_new(annotations, XP_DEPLOY_MAX, json_string(buf)) < 0 ? -ENOMEM : 0;
}

static int64_t max_old_revision(const struct dsync *s)
{
        int64_t max = 0;

        for (size_t i = 0; i < s->n; i++)
                if ((ssize_t)i != s->new_index && s->rs[i].revision > max)
                        max = s->rs[i].revision;
        return max;
}

struct rs_change {
        const struct dsync *s;
        const char *version; /* the resourceVersion the decision was made on; NULL: any */
        int32_t replicas;    /* < 0: leave */
        int64_t revision;    /* 0: leave */
};

static int change_rs(json_t *rs, void *userdata)
{
        const struct rs_change *c = userdata;
        json_t *meta = json_object_get(rs, "metadata"), *spec = json_object_get(rs, "spec");
        json_t *ann = json_object_get(meta, "annotations"), *before;
        const char *version = json_string_value(json_object_get(meta, "resourceVersion"));
        int r;

        /* decided on an older state: as Kubernetes' update conflict, sync again on the new one */
        if (c->version && version && strcmp(c->version, version) != 0)
                return -EAGAIN;
        if (!json_is_object(ann)) {
                ann = json_object();
                if (!ann || json_object_set_new(meta, "annotations", ann) < 0)
                        return -ENOMEM;
        }
        before = json_deep_copy(rs);
        r = fill_annotations(c->s, ann, c->revision, c->revision > 0);
        if (r >= 0 && c->replicas >= 0)
                r = json_object_set_new(spec, "replicas", json_integer(c->replicas)) < 0 ? -ENOMEM
                                                                                         : 0;
        if (r >= 0)
                r = json_equal(before, rs) ? 0 : 1;
        json_decref(before);
        return r;
}

static int write_rs(struct dsync *s, size_t i, int32_t replicas, int64_t revision)
{
        struct rs_change c = {s, wl_meta(s->objs[i], "resourceVersion"), replicas, revision};
        char *key = wl_key(s->objs[i]);
        int r;

        if (!key)
                return -ENOMEM;
        r = wl_change(s->w, "replicasets", key, change_rs, &c);
        free(key);
        return r;
}

int ds_scale_rs(struct dsync *s, size_t i, int32_t replicas)
{
        int32_t from = s->rs[i].replicas;
        int r;

        if (from == replicas && s->rs[i].desired == s->spec.replicas &&
            s->rs[i].max == s->spec.replicas + s->spec.max_surge)
                return 0;
        r = write_rs(s, i, replicas, 0);
        if (r < 0)
                return r;
        s->rs[i].replicas = replicas;
        if (from != replicas)
                wl_event(s->w,
                         s->d,
                         "Normal",
                         "ScalingReplicaSet",
                         "Scaled %s replica set %s from %d to %d",
                         replicas > from ? "up" : "down",
                         s->rs[i].name,
                         from,
                         replicas);
        return 0;
}

/* The Deployment's own revision annotation follows its new ReplicaSet's. */
static int set_deploy_revision(json_t *d, void *userdata)
{
        json_t *meta = json_object_get(d, "metadata"), *ann = json_object_get(meta, "annotations");
        const char *rev = userdata;

        if (json_is_object(ann) && json_string_value(json_object_get(ann, XP_DEPLOY_REVISION)) &&
            strcmp(json_string_value(json_object_get(ann, XP_DEPLOY_REVISION)), rev) == 0)
                return 0;
        if (!json_is_object(ann)) {
                ann = json_object();
                if (!ann || json_object_set_new(meta, "annotations", ann) < 0)
                        return -ENOMEM;
        }
        return json_object_set_new(ann, XP_DEPLOY_REVISION, json_string(rev)) < 0 ? -ENOMEM : 1;
}

static void sync_deploy_revision(struct dsync *s)
{
        char rev[32];

        snprintf(rev, sizeof(rev), "%lld", (long long)s->rs[s->new_index].revision);
        (void)wl_change(s->w, "deployments", s->key, set_deploy_revision, rev);
}

/* An existing new ReplicaSet takes the next revision (an undo brings an old one back). */
static int sync_revision(struct dsync *s)
{
        int64_t next = max_old_revision(s) + 1;
        struct xp_deploy_rs *rs = &s->rs[s->new_index];
        int64_t revision = rs->revision < next ? next : 0;
        int r;

        r = write_rs(s, (size_t)s->new_index, -1, revision);
        if (r < 0)
                return r;
        if (revision)
                rs->revision = revision;
        sync_deploy_revision(s);
        return 0;
}

static ssize_t find_new(const struct dsync *s)
{
        const json_t *template = json_object_get(json_object_get(s->d, "spec"), "template");
        ssize_t best = -1;

        for (size_t i = 0; i < s->n; i++) {
                const json_t *t = json_object_get(json_object_get(s->objs[i], "spec"), "template");

                if (xp_deploy_template_equal(t, template) &&
                    (best < 0 || s->rs[i].created_s < s->rs[best].created_s))
                        best = (ssize_t)i;
        }
        return best;
}

/* The new ReplicaSet's JSON, named after the template's hash. NULL: -ENOMEM. */
static json_t *
new_rs_json(const struct dsync *s, const char *hash, int32_t replicas, int64_t revision)
{
        const json_t *spec = json_object_get(s->d, "spec");
        json_t *template = json_deep_copy(json_object_get(spec, "template"));
        json_t *selector = json_deep_copy(json_object_get(spec, "selector"));
        json_t *tmeta, *labels, *rs, *ann = json_object(),
                                     *ref = xp_owner_ref_new("apps/v1", "Deployment", s->d);
        char name[512];

        snprintf(name, sizeof(name), "%s-%s", wl_meta(s->d, "name"), hash);
        if (!template || !selector || !ann || !ref)
                goto fail;
        if (!json_object_get(template, "metadata"))
                json_object_set_new(template, "metadata", json_object());
        tmeta = json_object_get(template, "metadata");
        if (!json_object_get(tmeta, "labels"))
                json_object_set_new(tmeta, "labels", json_object());
        labels = json_object_get(tmeta, "labels");
        json_object_set_new(labels, XP_DEPLOY_HASH_LABEL, json_string(hash));
        if (!json_object_get(selector, "matchLabels"))
                json_object_set_new(selector, "matchLabels", json_object());
        json_object_set_new(
            json_object_get(selector, "matchLabels"), XP_DEPLOY_HASH_LABEL, json_string(hash));
        if (fill_annotations(s, ann, revision, true) < 0)
                goto fail;
        rs = json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:o, s:[o]}, s:{s:i, s:i, s:o, s:o}}",
                       "apiVersion",
                       "apps/v1",
                       "kind",
                       "ReplicaSet",
                       "metadata",
                       "name",
                       name,
                       "namespace",
                       wl_meta(s->d, "namespace"),
                       "labels",
                       labels,
                       "annotations",
                       ann,
                       "ownerReferences",
                       ref,
                       "spec",
                       "replicas",
                       replicas,
                       "minReadySeconds",
                       (int)json_integer_value(json_object_get(spec, "minReadySeconds")),
                       "selector",
                       selector,
                       "template",
                       template);
        return rs;
fail:
        json_decref(template);
        json_decref(selector);
        json_decref(ann);
        json_decref(ref);
        return NULL;
}

static int create_rs(struct dsync *s, json_t *json, json_t **ret, struct xp_error *err)
{
        const struct xp_kind *kind = xp_kind_by_resource("apps", "replicasets");
        const char *ns = wl_meta(s->d, "namespace");
        void *object = NULL;
        int r;

        if (!kind)
                return xp_errorf(err, -EOPNOTSUPP, "the ReplicaSet kind is not served");
        /* the template as the Deployment holds it (defaulted and validated when it was written):
         * a ReplicaSet's own defaults would make it differ from the template it was made for */
        r = kind->from_json(json, NULL, XP_DECODE_TRUSTED, &object, err);
        if (r < 0)
                return r;
        r = xp_registry_namespace_hold(s->w->registry, ns, err);
        if (r >= 0) {
                r = xp_registry_create(s->w->registry, kind, ns, object, NULL, false, ret, err);
                xp_registry_namespace_release(s->w->registry, ns);
        }
        kind->free(object);
        return r;
}

static int add_rs(struct dsync *s, json_t *rs)
{
        json_t **o = realloc(s->objs, (s->n + 1) * sizeof(*o));
        struct xp_deploy_rs *r;

        if (!o)
                return -ENOMEM;
        s->objs = o;
        r = realloc(s->rs, (s->n + 1) * sizeof(*r));
        if (!r)
                return -ENOMEM;
        s->rs = r;
        s->objs[s->n] = rs;
        xp_deploy_rs_read(rs, &s->rs[s->n]);
        s->new_index = (ssize_t)s->n++;
        return 0;
}

/* A hash taken by another template: count the collision, so the next sync hashes anew. */
static int count_collision(json_t *d, void *userdata)
{
        json_t *status = json_object_get(d, "status");
        json_int_t n = json_integer_value(json_object_get(status, "collisionCount"));

        (void)userdata;
        if (!json_is_object(status)) {
                status = json_object();
                if (!status || json_object_set_new(d, "status", status) < 0)
                        return -ENOMEM;
        }
        return json_object_set_new(status, "collisionCount", json_integer(n + 1)) < 0 ? -ENOMEM : 1;
}

/*
 * The name is taken: by our own ReplicaSet of this template that the informer has not brought
 * yet (use it), or by another (a collision: count it, so that the next sync hashes anew).
 */
static int existing(struct dsync *s, const char *hash)
{
        const json_t *template = json_object_get(json_object_get(s->d, "spec"), "template");
        const json_t *ref;
        char name[512];
        json_t *rs = NULL;
        int r;

        snprintf(name, sizeof(name), "%s-%s", wl_meta(s->d, "name"), hash);
        r = xp_store_get(xp_registry_store(s->w->registry),
                         "replicasets",
                         wl_meta(s->d, "namespace"),
                         name,
                         &rs,
                         NULL,
                         NULL);
        if (r < 0)
                return r;
        ref = xp_owner_controller_ref(rs);
        if (ref && json_string_value(json_object_get(ref, "uid")) && wl_meta(s->d, "uid") &&
            strcmp(json_string_value(json_object_get(ref, "uid")), wl_meta(s->d, "uid")) == 0 &&
            xp_deploy_template_equal(json_object_get(json_object_get(rs, "spec"), "template"),
                                     template)) {
                r = add_rs(s, rs);
                if (r < 0)
                        json_decref(rs);
                return r;
        }
        json_decref(rs);
        (void)wl_change(s->w, "deployments", s->key, count_collision, NULL);
        return -EAGAIN;
}

static int make_new(struct dsync *s)
{
        const json_t *template = json_object_get(json_object_get(s->d, "spec"), "template");
        int32_t collisions = (int32_t)json_integer_value(
            json_object_get(json_object_get(s->d, "status"), "collisionCount"));
        struct xp_deploy_rs probe = {.replicas = 0};
        struct xp_error err = {0};
        char hash[XP_DEPLOY_HASH_MAX];
        json_t *json, *out = NULL;
        int32_t replicas;
        int r;

        r = xp_deploy_template_hash(template, collisions, hash);
        if (r < 0)
                return r;
        replicas = xp_deploy_rolling_new(&s->spec, s->rs, s->n, &probe);
        json = new_rs_json(s, hash, replicas, max_old_revision(s) + 1);
        if (!json)
                return -ENOMEM;
        r = create_rs(s, json, &out, &err);
        json_decref(json);
        if (r == -EEXIST)
                return existing(s, hash);
        if (r <= 0) {
                wl_event(s->w,
                         s->d,
                         "Warning",
                         "FailedCreate",
                         "Failed to create new replica set: %s",
                         err.msg);
                return r < 0 ? r : -EPERM;
        }
        r = add_rs(s, out);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        s->created = true;
        if (replicas > 0)
                wl_event(s->w,
                         s->d,
                         "Normal",
                         "ScalingReplicaSet",
                         "Scaled up replica set %s from 0 to %d",
                         s->rs[s->new_index].name,
                         replicas);
        sync_deploy_revision(s);
        return 0;
}

int ds_new_replicaset(struct dsync *s, bool create)
{
        s->new_index = find_new(s);
        if (s->new_index >= 0)
                return sync_revision(s);
        return create ? make_new(s) : 0;
}
