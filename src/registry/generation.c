/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metadata.generation of the kinds whose status is a subresource (Deployment, ReplicaSet, ...):
 * 1 when created, and one more on each update that changes the spec, as Kubernetes' strategies
 * do (PrepareForUpdate). Controllers report status.observedGeneration against it, which is how
 * `kubectl rollout status` knows a controller has seen the latest spec.
 */
#include <errno.h>

#include "xpool/registry.h"

int xp_registry_generation(const struct xp_kind *kind, json_t *object, const json_t *stored)
{
        json_t *meta = json_object_get(object, "metadata");
        const json_t *old = json_object_get(json_object_get(stored, "metadata"), "generation");
        json_int_t generation = json_is_integer(old) ? json_integer_value(old) : 1;

        if (!kind->status_subresource || !json_is_object(meta))
                return 0;
        if (!json_equal(json_object_get(object, "spec"), json_object_get(stored, "spec")))
                generation++;
        return json_object_set_new(meta, "generation", json_integer(generation)) < 0 ? -ENOMEM : 0;
}
