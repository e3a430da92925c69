/* SPDX-License-Identifier: Apache-2.0 */
/* The Secrets and ConfigMaps a pod names (xpool/podrefs.h). */
#include <string.h>

#include "xpool/podrefs.h"

struct visit {
        enum xp_pod_ref_kind kind;
        xp_pod_ref_fn fn;
        void *userdata;
};

static const char *str_at(const json_t *o, const char *a, const char *b)
{
        const json_t *v = json_object_get(o, a);

        return json_string_value(b ? json_object_get(v, b) : v);
}

static int name(const struct visit *v, const char *n)
{
        return n && n[0] ? v->fn(n, v->userdata) : 0;
}

static int containers(const struct visit *v, const json_t *list)
{
        const char *key_ref = v->kind == XP_POD_REF_SECRET ? "secretKeyRef" : "configMapKeyRef";
        const char *from_ref = v->kind == XP_POD_REF_SECRET ? "secretRef" : "configMapRef";
        const json_t *c, *e;
        size_t i, j;
        int r;

        json_array_foreach(list, i, c)
        {
                json_array_foreach(json_object_get(c, "envFrom"), j, e)
                {
                        if ((r = name(v, str_at(e, from_ref, "name"))) != 0)
                                return r;
                }
                json_array_foreach(json_object_get(c, "env"), j, e)
                {
                        if ((r = name(
                                 v, str_at(json_object_get(e, "valueFrom"), key_ref, "name"))) != 0)
                                return r;
                }
        }
        return 0;
}

static int volumes(const struct visit *v, const json_t *list)
{
        bool secret = v->kind == XP_POD_REF_SECRET;
        const json_t *vol, *src;
        size_t i, j;
        int r;

        json_array_foreach(list, i, vol)
        {
                r = name(v,
                         secret ? str_at(vol, "secret", "secretName")
                                : str_at(vol, "configMap", "name"));
                if (r != 0)
                        return r;
                json_array_foreach(
                    json_object_get(json_object_get(vol, "projected"), "sources"), j, src)
                {
                        if ((r = name(v, str_at(src, secret ? "secret" : "configMap", "name"))) !=
                            0)
                                return r;
                }
        }
        return 0;
}

int xp_pod_refs_visit(const json_t *pod,
                      enum xp_pod_ref_kind kind,
                      xp_pod_ref_fn fn,
                      void *userdata)
{
        static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
        const json_t *spec = json_object_get(pod, "spec"), *s;
        const struct visit v = {.kind = kind, .fn = fn, .userdata = userdata};
        size_t i;
        int r;

        if (kind == XP_POD_REF_SECRET)
                json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, s)
                {
                        if ((r = name(&v, str_at(s, "name", NULL))) != 0)
                                return r;
                }
        for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
                if ((r = containers(&v, json_object_get(spec, lists[i]))) != 0)
                        return r;
        return volumes(&v, json_object_get(spec, "volumes"));
}

static int is_name(const char *n, void *userdata)
{
        return strcmp(n, userdata) == 0;
}

bool xp_pod_references(const json_t *pod, enum xp_pod_ref_kind kind, const char *name)
{
        return name && xp_pod_refs_visit(pod, kind, is_name, (void *)name) > 0;
}
