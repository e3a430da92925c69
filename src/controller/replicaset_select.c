/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Label selectors as workloads write them (metav1.LabelSelector in JSON) and the ownership rules
 * every workload controller shares: who controls an object, and whether to adopt or release it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replicaset.h"

static bool values_contain(const json_t *values, const char *value)
{
        size_t i;
        json_t *v;

        if (!value)
                return false;
        json_array_foreach(values, i, v) if (json_is_string(v) &&
                                             strcmp(json_string_value(v), value) == 0) return true;
        return false;
}

/* Gt and Lt compare the label and the one value as integers; anything else matches nothing. */
static bool compare_integer(const char *label, const json_t *values, bool greater)
{
        char *end;
        long long have, want;

        if (!label || json_array_size(values) != 1 || !json_is_string(json_array_get(values, 0)))
                return false;
        errno = 0;
        have = strtoll(label, &end, 10);
        if (errno || *end || end == label)
                return false;
        want = strtoll(json_string_value(json_array_get(values, 0)), &end, 10);
        if (errno || *end)
                return false;
        return greater ? have > want : have < want;
}

bool xp_selector_requirement_matches(const char *key,
                                     const char *op,
                                     const json_t *values,
                                     const json_t *labels)
{
        const json_t *v = key ? json_object_get(labels, key) : NULL;
        const char *label = json_string_value(v);

        if (!op)
                return false;
        if (strcmp(op, "In") == 0)
                return values_contain(values, label);
        if (strcmp(op, "NotIn") == 0)
                return !values_contain(values, label);
        if (strcmp(op, "Exists") == 0)
                return label != NULL;
        if (strcmp(op, "DoesNotExist") == 0)
                return label == NULL;
        if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0)
                return compare_integer(label, values, op[0] == 'G');
        return false;
}

bool xp_selector_json_matches(const json_t *selector, const json_t *labels)
{
        const json_t *match = json_object_get(selector, "matchLabels");
        const json_t *exprs = json_object_get(selector, "matchExpressions");
        const char *key;
        json_t *v;
        size_t i;

        if (json_object_size(match) == 0 && json_array_size(exprs) == 0)
                return false;
        json_object_foreach((json_t *)match, key, v)
        {
                const char *have = json_string_value(json_object_get(labels, key));

                if (!have || !json_is_string(v) || strcmp(have, json_string_value(v)) != 0)
                        return false;
        }
        json_array_foreach(exprs, i, v)
        {
                const char *k = json_string_value(json_object_get(v, "key"));
                const char *op = json_string_value(json_object_get(v, "operator"));

                if (!xp_selector_requirement_matches(k, op, json_object_get(v, "values"), labels))
                        return false;
        }
        return true;
}

const json_t *xp_owner_controller_ref(const json_t *object)
{
        const json_t *refs =
            json_object_get(json_object_get(object, "metadata"), "ownerReferences");
        size_t i;
        json_t *ref;

        json_array_foreach(
            refs, i, ref) if (json_is_true(json_object_get(ref, "controller"))) return ref;
        return NULL;
}

bool xp_owner_refers_to(const json_t *object, const char *uid)
{
        const json_t *refs =
            json_object_get(json_object_get(object, "metadata"), "ownerReferences");
        size_t i;
        json_t *ref;

        json_array_foreach(refs, i, ref)
        {
                const char *u = json_string_value(json_object_get(ref, "uid"));

                if (u && uid && strcmp(u, uid) == 0)
                        return true;
        }
        return false;
}

enum xp_claim xp_claim_decide(const char *owner_uid,
                              const json_t *selector,
                              bool owner_deleting,
                              const json_t *object)
{
        const json_t *meta = json_object_get(object, "metadata");
        const json_t *ref = xp_owner_controller_ref(object);
        bool matches = xp_selector_json_matches(selector, json_object_get(meta, "labels"));

        if (ref) {
                const char *uid = json_string_value(json_object_get(ref, "uid"));

                if (!uid || !owner_uid || strcmp(uid, owner_uid) != 0)
                        return XP_CLAIM_IGNORE;
                if (matches)
                        return XP_CLAIM_KEEP;
                /* Kubernetes releases only while the owner lives; a deleting owner's GC does it. */
                return owner_deleting ? XP_CLAIM_IGNORE : XP_CLAIM_RELEASE;
        }
        if (!matches || owner_deleting || json_object_get(meta, "deletionTimestamp"))
                return XP_CLAIM_IGNORE;
        return XP_CLAIM_ADOPT;
}

json_t *xp_owner_ref_new(const char *api_version, const char *kind, const json_t *owner)
{
        const json_t *meta = json_object_get(owner, "metadata");

        return json_pack("{s:s, s:s, s:O, s:O, s:b, s:b}",
                         "apiVersion",
                         api_version,
                         "kind",
                         kind,
                         "name",
                         json_object_get(meta, "name"),
                         "uid",
                         json_object_get(meta, "uid"),
                         "controller",
                         1,
                         "blockOwnerDeletion",
                         1);
}
