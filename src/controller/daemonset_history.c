/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A DaemonSet's history as Kubernetes' DaemonSet controller keeps it (constructHistory,
 * snapshot, cleanupHistory): one apps/v1 ControllerRevision per distinct pod template, named
 * <daemonset>-<hash> and labelled with the template's labels and controller-revision-hash (the
 * label its pods carry), owned by the DaemonSet, its data the patch that puts that template back
 * ({"spec": {"template": {..., "$patch": "replace"}}}) and its revision one above the others.
 * A template that comes back (a rollback) gets its old revision renumbered as the newest. Those
 * no pod runs beyond spec.revisionHistoryLimit (10) are deleted, oldest first. This is what
 * `kubectl rollout history|undo daemonset` read and apply.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemonset.h"
#include "workloads.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/registry.h"
#include "xpool/store.h"

#define REVISION_LABEL "controller-revision-hash"

/* Whether revision's controller owner reference is the DaemonSet of uid. */
static bool controlled_by(const json_t *revision, const char *uid)
{
        const json_t *ref;
        size_t i;

        json_array_foreach(xp_json_at(revision, "metadata.ownerReferences"), i, ref)
        {
                if (json_is_true(json_object_get(ref, "controller")))
                        return strcmp(xp_json_str_at(ref, "uid", ""), uid) == 0;
        }
        return false;
}

/* The DaemonSet's revisions (borrowed from all, which the caller owns) into a new array. */
static json_t *owned(const json_t *all, const char *uid)
{
        json_t *mine = json_array(), *r;
        size_t i;

        json_array_foreach(all, i, r)
        {
                if (mine && controlled_by(r, uid) && json_array_append(mine, r) < 0) {
                        json_decref(mine);
                        return NULL;
                }
        }
        return mine;
}

static json_t *revision_new(const json_t *ds, const char *name, const char *hash, int64_t number)
{
        const json_t *template = xp_json_at(ds, "spec.template");
        json_t *copy = json_deep_copy(template), *labels, *annotations, *ref, *cr;

        labels = json_deep_copy(xp_json_at(template, "metadata.labels"));
        if (!labels)
                labels = json_object();
        annotations = json_deep_copy(xp_json_at(ds, "metadata.annotations"));
        ref = xp_owner_ref_new("apps/v1", "DaemonSet", ds);
        cr = json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:[O]}, s:{s:{s:O}}, s:I}",
                       "apiVersion",
                       "apps/v1",
                       "kind",
                       "ControllerRevision",
                       "metadata",
                       "name",
                       name,
                       "namespace",
                       wl_meta(ds, "namespace"),
                       "labels",
                       labels ? labels : json_null(),
                       "ownerReferences",
                       ref ? ref : json_null(),
                       "data",
                       "spec",
                       "template",
                       copy ? copy : json_null(),
                       "revision",
                       (json_int_t)number);
        if (cr && json_is_object(copy))
                json_object_set_new(copy, "$patch", json_string("replace"));
        if (cr && labels && json_object_set_new(labels, REVISION_LABEL, json_string(hash)) < 0)
                json_decref(cr), cr = NULL;
        if (cr && json_is_object(annotations) && json_object_size(annotations))
                json_object_set(json_object_get(cr, "metadata"), "annotations", annotations);
        json_decref(copy);
        json_decref(labels);
        json_decref(annotations);
        json_decref(ref);
        return cr;
}

static int set_revision(json_t *object, void *userdata)
{
        const int64_t *number = userdata;

        return json_object_set_new(object, "revision", json_integer(*number)) < 0 ? -ENOMEM : 1;
}

/* Whether some pod of the DaemonSet runs the revision's template. */
static bool live(const json_t *revision, const struct xp_rs_pod *pods, size_t n_pods)
{
        const char *hash = xp_json_str_at(revision, "metadata.labels." REVISION_LABEL, NULL);

        for (size_t i = 0; hash && i < n_pods; i++)
                if (strcmp(xp_json_str_at(pods[i].object, "metadata.labels." REVISION_LABEL, ""),
                           hash) == 0)
                        return true;
        return false;
}

static int by_revision(const void *a, const void *b)
{
        int64_t x = xp_json_int_at(*(json_t *const *)a, "revision", 0),
                y = xp_json_int_at(*(json_t *const *)b, "revision", 0);

        return (x > y) - (x < y);
}

/* cleanupHistory: the revisions no pod runs, beyond the limit, oldest first. */
static int prune(struct xp_workloads *w,
                 const json_t *ds,
                 const json_t *mine,
                 const char *current,
                 const struct xp_rs_pod *pods,
                 size_t n_pods)
{
        int64_t limit = xp_json_int_at(ds, "spec.revisionHistoryLimit", 10);
        size_t n = json_array_size(mine), n_old = 0;
        json_t **old = calloc(n ? n : 1, sizeof(*old));
        int r = 0;

        if (!old)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *rev = json_array_get(mine, i);
                if (strcmp(wl_meta(rev, "name"), current) != 0 && !live(rev, pods, n_pods))
                        old[n_old++] = rev;
        }
        qsort(old, n_old, sizeof(*old), by_revision);
        for (size_t i = 0; limit >= 0 && i + (size_t)limit < n_old; i++) {
                int d = xp_registry_delete(w->registry,
                                           "controllerrevisions",
                                           wl_meta(ds, "namespace"),
                                           wl_meta(old[i], "name"),
                                           0,
                                           NULL,
                                           NULL);
                if (d < 0 && d != -ENOENT)
                        r = d;
        }
        free(old);
        return r;
}

int wl_daemonset_history(struct xp_workloads *w,
                         const json_t *ds,
                         const char *hash,
                         const struct xp_rs_pod *pods,
                         size_t n_pods)
{
        const char *ns = wl_meta(ds, "namespace");
        json_t *all = NULL, *mine = NULL, *rev, *current = NULL;
        struct xp_error err = {0};
        int64_t max = 0;
        char name[320];
        size_t i;
        int r;

        snprintf(name, sizeof(name), "%s-%s", wl_meta(ds, "name"), hash);
        r = xp_store_list(
            xp_registry_store(w->registry), "controllerrevisions", ns, &all, NULL, &err);
        if (r >= 0 && !(mine = owned(all, wl_meta(ds, "uid"))))
                r = -ENOMEM;
        json_array_foreach(r >= 0 ? mine : NULL, i, rev)
        {
                int64_t number = xp_json_int_at(rev, "revision", 0);
                if (strcmp(wl_meta(rev, "name"), name) == 0)
                        current = rev;
                else if (number > max)
                        max = number;
        }
        if (r >= 0 && !current) {
                json_t *cr = revision_new(ds, name, hash, max + 1), *out = NULL;
                r = cr ? wl_create_object(w, &xp_kind_controllerrevision, ns, cr, &out, &err)
                       : -ENOMEM;
                json_decref(cr);
                json_decref(out);
                if (r == -EEXIST) /* another owner's: Kubernetes bumps collisionCount */
                        r = 0;
        } else if (r >= 0 && xp_json_int_at(current, "revision", 0) <= max) {
                char key[600];
                int64_t number = max + 1;
                snprintf(key, sizeof(key), "%s/%s", ns, name);
                r = wl_change(w, "controllerrevisions", key, set_revision, &number);
        }
        if (r >= 0)
                r = prune(w, ds, mine, name, pods, n_pods);
        json_decref(mine);
        json_decref(all);
        return r < 0 && r != -ENOMEM ? 0 : r;
}
