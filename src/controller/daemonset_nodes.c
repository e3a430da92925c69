/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a node should run a DaemonSet's pod: the predicates Kubernetes' DaemonSet controller
 * applies itself (node name, node selector and required affinity, taints), and the devices the
 * pod asks for, which must be among the node's allocatable resources.
 */
#include <string.h>

#include "daemonset.h"

/* The tolerations Kubernetes adds to every daemon pod (util.AddOrUpdateDaemonPodTolerations). */
static const struct {
        const char *key, *effect;
        bool host_network_only;
} default_tolerations[] = {
    {"node.kubernetes.io/not-ready", "NoExecute", false},
    {"node.kubernetes.io/unreachable", "NoExecute", false},
    {"node.kubernetes.io/disk-pressure", "NoSchedule", false},
    {"node.kubernetes.io/memory-pressure", "NoSchedule", false},
    {"node.kubernetes.io/pid-pressure", "NoSchedule", false},
    {"node.kubernetes.io/unschedulable", "NoSchedule", false},
    {"node.kubernetes.io/network-unavailable", "NoSchedule", true},
};

static const char *str(const json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

static bool eq(const char *a, const char *b)
{
        return a && b && strcmp(a, b) == 0;
}

static bool tolerates(const json_t *toleration, const json_t *taint)
{
        const char *key = str(toleration, "key"), *op = str(toleration, "operator");
        const char *effect = str(toleration, "effect");

        if (effect && *effect && !eq(effect, str(taint, "effect")))
                return false;
        if (key && *key && !eq(key, str(taint, "key")))
                return false;
        if (eq(op, "Exists"))
                return true;
        /* Equal (the default): the values must match, an absent value being "" */
        return strcmp(str(toleration, "value") ? str(toleration, "value") : "",
                      str(taint, "value") ? str(taint, "value") : "") == 0;
}

static bool tolerated(const json_t *spec, const json_t *taint)
{
        bool host_network = json_is_true(json_object_get(spec, "hostNetwork"));
        size_t i;
        json_t *t;

        for (size_t d = 0; d < sizeof(default_tolerations) / sizeof(default_tolerations[0]); d++)
                if (eq(default_tolerations[d].key, str(taint, "key")) &&
                    eq(default_tolerations[d].effect, str(taint, "effect")) &&
                    (!default_tolerations[d].host_network_only || host_network))
                        return true;
        json_array_foreach(
            json_object_get(spec, "tolerations"), i, t) if (tolerates(t, taint)) return true;
        return false;
}

/* A node selector term: every expression on labels and every field (metadata.name) holds. */
static bool term_matches(const json_t *term, const json_t *node)
{
        const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
        json_t *fields = json_pack(
            "{s:O?}", "metadata.name", json_object_get(json_object_get(node, "metadata"), "name"));
        bool ok = fields != NULL;
        size_t i;
        json_t *e;

        json_array_foreach(json_object_get(term, "matchExpressions"), i, e) ok =
            ok && xp_selector_requirement_matches(
                      str(e, "key"), str(e, "operator"), json_object_get(e, "values"), labels);
        json_array_foreach(json_object_get(term, "matchFields"), i, e) ok =
            ok && xp_selector_requirement_matches(
                      str(e, "key"), str(e, "operator"), json_object_get(e, "values"), fields);
        json_decref(fields);
        return ok;
}

static bool fits_affinity(const json_t *spec, const json_t *node)
{
        const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
        const json_t *required = json_object_get(
            json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                            "requiredDuringSchedulingIgnoredDuringExecution"),
            "nodeSelectorTerms");
        const char *key;
        size_t i;
        json_t *v;

        json_object_foreach((json_t *)json_object_get(spec, "nodeSelector"),
                            key,
                            v) if (!eq(json_string_value(v), str(labels, key))) return false;
        if (!json_is_array(required))
                return true;
        /* the terms are ORed */
        json_array_foreach(required, i, v) if (term_matches(v, node)) return true;
        return false;
}

/* Extended resources are the ones with a domain other than kubernetes.io (nvidia.com/gpu). */
static bool is_device(const char *resource)
{
        const char *slash = strchr(resource, '/');

        return slash && !strstr(resource, "kubernetes.io/");
}

static bool has_allocatable(const json_t *node, const char *resource)
{
        const json_t *v = json_object_get(
            json_object_get(json_object_get(node, "status"), "allocatable"), resource);
        const char *text = json_string_value(v);

        if (json_is_integer(v))
                return json_integer_value(v) > 0;
        return text && *text && strcmp(text, "0") != 0;
}

static bool fits_devices(const json_t *spec, const json_t *node)
{
        size_t i;
        json_t *c;

        json_array_foreach(json_object_get(spec, "containers"), i, c)
        {
                const json_t *res = json_object_get(c, "resources");
                const char *parts[] = {"requests", "limits"};

                for (size_t p = 0; p < 2; p++) {
                        const char *key;
                        json_t *v;

                        json_object_foreach((json_t *)json_object_get(res, parts[p]),
                                            key,
                                            v) if (is_device(key) &&
                                                   !has_allocatable(node, key)) return false;
                }
        }
        return true;
}

void xp_ds_node_fit(const json_t *pod_spec, const json_t *node, struct xp_ds_fit *ret)
{
        const char *want = str(pod_spec, "nodeName");
        const char *name = str(json_object_get(node, "metadata"), "name");
        size_t i;
        json_t *taint;

        *ret = (struct xp_ds_fit){false, false};
        if ((want && *want && !eq(want, name)) || !fits_affinity(pod_spec, node))
                return;
        ret->should_run = ret->should_continue = true;
        json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, taint)
        {
                const char *effect = str(taint, "effect");

                if (tolerated(pod_spec, taint))
                        continue;
                if (eq(effect, "NoExecute"))
                        ret->should_continue = false;
                if (eq(effect, "NoExecute") || eq(effect, "NoSchedule"))
                        ret->should_run = false;
        }
        if (!fits_devices(pod_spec, node))
                ret->should_run = false;
}
