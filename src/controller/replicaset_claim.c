/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A controller's pods (Kubernetes' ClaimPods): those it controls and that match its selector,
 * plus the orphans that match (adopted: a controller ownerReference written onto them), minus
 * those whose labels moved away (released: the reference removed).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"

struct claim {
        const json_t *owner;
        const char *api_version, *kind;
        bool adopt;
};

static int claim_change(json_t *pod, void *userdata)
{
        const struct claim *c = userdata;
        const char *uid = wl_meta(c->owner, "uid");
        json_t *meta = json_object_get(pod, "metadata");
        json_t *refs = json_object_get(meta, "ownerReferences");
        size_t i;
        json_t *ref;

        if (c->adopt) {
                /* still an orphan? (the write redoes this on fresh state) */
                if (xp_owner_controller_ref(pod) || json_object_get(meta, "deletionTimestamp"))
                        return 0;
                if (!json_is_array(refs)) {
                        refs = json_array();
                        if (!refs || json_object_set_new(meta, "ownerReferences", refs) < 0)
                                return -ENOMEM;
                }
                return json_array_append_new(
                           refs, xp_owner_ref_new(c->api_version, c->kind, c->owner)) < 0
                           ? -ENOMEM
                           : 1;
        }
        json_array_foreach(refs, i, ref)
        {
                const char *u = json_string_value(json_object_get(ref, "uid"));

                if (u && uid && strcmp(u, uid) == 0) {
                        json_array_remove(refs, i);
                        if (json_array_size(refs) == 0)
                                json_object_del(meta, "ownerReferences");
                        return 1;
                }
        }
        return 0;
}

int wl_claim(struct xp_workloads *w,
             const char *resource,
             const json_t *owner,
             const char *api_version,
             const char *kind,
             const json_t *pod,
             bool adopt)
{
        struct claim c = {owner, api_version, kind, adopt};
        char *key = wl_key(pod);
        int r;

        if (!key)
                return -ENOMEM;
        r = wl_change(w, resource, key, claim_change, &c);
        free(key);
        return r;
}

struct owned_ctx {
        struct xp_workloads *w;
        const json_t *owner;
        const char *api_version, *kind, *ns, *uid;
        const json_t *selector;
        bool deleting;
        struct xp_rs_pod *pods;
        size_t n, cap;
        int error;
};

static int take(struct owned_ctx *c, const json_t *pod)
{
        if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 16;
                struct xp_rs_pod *grown = realloc(c->pods, cap * sizeof(*grown));

                if (!grown)
                        return -ENOMEM;
                c->pods = grown;
                c->cap = cap;
        }
        xp_rs_pod_read(pod, &c->pods[c->n++]);
        return 0;
}

static int visit(json_t *pod, void *userdata)
{
        struct owned_ctx *c = userdata;
        const char *ns = wl_meta(pod, "namespace");

        if (!ns || strcmp(ns, c->ns) != 0)
                return 0;
        switch (xp_claim_decide(c->uid, c->selector, c->deleting, pod)) {
        case XP_CLAIM_KEEP:
                return take(c, pod);
        case XP_CLAIM_ADOPT:
                if (wl_claim(c->w, "pods", c->owner, c->api_version, c->kind, pod, true) > 0)
                        return take(c, pod);
                return 0;
        case XP_CLAIM_RELEASE:
                (void)wl_claim(c->w, "pods", c->owner, c->api_version, c->kind, pod, false);
                return 0;
        case XP_CLAIM_IGNORE:
                return 0;
        }
        return 0;
}

int wl_owned_pods(struct xp_workloads *w,
                  const json_t *owner,
                  const char *api_version,
                  const char *kind,
                  struct xp_rs_pod **ret,
                  size_t *ret_n)
{
        struct owned_ctx c = {
            .w = w,
            .owner = owner,
            .api_version = api_version,
            .kind = kind,
            .ns = wl_meta(owner, "namespace") ? wl_meta(owner, "namespace") : "",
            .uid = wl_meta(owner, "uid"),
            .selector = json_object_get(json_object_get(owner, "spec"), "selector"),
            .deleting =
                json_object_get(json_object_get(owner, "metadata"), "deletionTimestamp") != NULL,
        };
        int r = wl_cache_each(&w->cache[WL_PODS], visit, &c);

        if (r < 0) {
                free(c.pods);
                return r;
        }
        *ret = c.pods;
        *ret_n = c.n;
        return 0;
}
