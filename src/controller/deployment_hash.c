/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod-template-hash and the revisions of a Deployment's ReplicaSets. The hash names the
 * ReplicaSet of one template ("web-5d8f9c7b4"), so it must be the same in every process and after
 * every restart: it is taken over the template's canonical JSON (sorted keys, compact).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deployment.h"
#include "xpool/macro.h"
#include "xpool/quantity.h"

/* Kubernetes' rand.SafeEncodeString alphabet: no vowels, no look-alikes. */
static const char safe_alphabet[] = "bcdfghjklmnpqrstvwxz2456789";

static uint32_t fnv1a32(uint32_t h, const void *data, size_t len)
{
        const unsigned char *p = data;

        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= 16777619u;
        }
        return h;
}

/*
 * A copy of template without its pod-template-hash label, and without a null creationTimestamp:
 * Go clients write an unset one as null (kubectl rollout undo sends the old ReplicaSet's template
 * so), where Kubernetes hashes the struct and null and absent are the same; kept, it made the
 * undone template another ReplicaSet than the revision it came from. NULL on -ENOMEM.
 */
static json_t *without_hash(const json_t *template)
{
        json_t *copy = json_deep_copy(template ? template : json_null());
        json_t *metadata = json_object_get(copy, "metadata");
        json_t *labels = json_object_get(metadata, "labels");

        if (labels)
                json_object_del(labels, XP_DEPLOY_HASH_LABEL);
        if (json_is_null(json_object_get(metadata, "creationTimestamp")))
                json_object_del(metadata, "creationTimestamp");
        return copy;
}

/* Writes each quantity of map (limits or requests) in its canonical form, a string: Go clients
 * send a stored YAML number (1) back as "1", and "1024Mi" as "1Gi". A value that is no quantity
 * is left as it is (validation speaks of it). -ENOMEM. */
static int canonical_quantities(json_t *map)
{
        const char *key;
        json_t *value;

        json_object_foreach(map, key, value)
        {
                struct xp_quantity q;
                struct xp_error err = {0};
                char text[XP_QUANTITY_STRING_MAX];
                int r = -EINVAL;

                if (json_is_string(value))
                        r = xp_quantity_parse(json_string_value(value), &q, &err);
                else if (json_is_number(value))
                        r = xp_quantity_from_double(json_number_value(value), &q, &err);
                xp_error_clear(&err);
                if (r >= 0 &&
                    json_object_set_new(map, key, json_string(xp_quantity_format(&q, text))) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Each container of the array containers (borrowed) as Go writes it back: its quantities
 * canonical, and without resources that are empty ({}, what Go writes for none). -ENOMEM. */
static int canonical_containers(json_t *containers)
{
        size_t i;
        json_t *container;

        json_array_foreach(containers, i, container)
        {
                json_t *resources = json_object_get(container, "resources");

                if (canonical_quantities(json_object_get(resources, "limits")) < 0 ||
                    canonical_quantities(json_object_get(resources, "requests")) < 0)
                        return -ENOMEM;
                if (json_is_object(resources) && json_object_size(resources) == 0)
                        json_object_del(container, "resources");
        }
        return 0;
}

/*
 * without_hash(template) with its containers as Go clients write them back: kubectl rollout undo
 * sends the old ReplicaSet's template with each quantity Go's way ("1" for a stored 1) and
 * resources: {} where it has none, where Kubernetes compares structs, in which they are the same.
 * Only the comparison reads it: the hash stays the one stored ReplicaSets and pods are labelled
 * with. NULL on -ENOMEM.
 */
static json_t *as_go_writes(const json_t *template)
{
        json_t *copy = without_hash(template);
        json_t *spec = json_object_get(copy, "spec");

        if (copy && (canonical_containers(json_object_get(spec, "containers")) < 0 ||
                     canonical_containers(json_object_get(spec, "initContainers")) < 0)) {
                json_decref(copy);
                return NULL;
        }
        return copy;
}

static char *canonical(const json_t *template)
{
        json_t *copy = without_hash(template);
        char *text;

        if (!copy)
                return NULL;
        text = json_dumps(copy, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(copy);
        return text;
}

int xp_deploy_template_hash(const json_t *template,
                            int32_t collision_count,
                            char ret[static XP_DEPLOY_HASH_MAX])
{
        _cleanup_free_ char *text = canonical(template);
        unsigned char count[4];
        char digits[XP_DEPLOY_HASH_MAX];
        uint32_t h;
        int len;

        if (!text)
                return -ENOMEM;
        h = fnv1a32(2166136261u, text, strlen(text));
        if (collision_count > 0) {
                /* little-endian, as Kubernetes writes the count into the hasher */
                for (int i = 0; i < 4; i++)
                        count[i] = (unsigned char)((uint32_t)collision_count >> (8 * i));
                h = fnv1a32(h, count, sizeof(count));
        }
        len = snprintf(digits, sizeof(digits), "%u", h);
        for (int i = 0; i < len; i++)
                ret[i] = safe_alphabet[(unsigned char)digits[i] % (sizeof(safe_alphabet) - 1)];
        ret[len] = '\0';
        return 0;
}

bool xp_deploy_template_equal(const json_t *a, const json_t *b)
{
        json_t *ca = as_go_writes(a), *cb = as_go_writes(b);
        bool equal = ca && cb && json_equal(ca, cb);

        json_decref(ca);
        json_decref(cb);
        return equal;
}

int64_t xp_deploy_revision(const json_t *replicaset)
{
        const json_t *ann = json_object_get(json_object_get(replicaset, "metadata"), "annotations");
        const char *text = json_string_value(json_object_get(ann, XP_DEPLOY_REVISION));
        char *end;
        long long v;

        if (!text || !*text)
                return 0;
        errno = 0;
        v = strtoll(text, &end, 10);
        if (errno || *end || v < 0)
                return 0;
        return v;
}
