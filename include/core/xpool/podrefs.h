/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Secrets and ConfigMaps a pod names, where Kubernetes' podutil.VisitPodSecretNames and
 * VisitPodConfigmapNames look: imagePullSecrets (Secrets), every container's (init, ephemeral
 * too) env[].valueFrom.secretKeyRef / configMapKeyRef and envFrom[].secretRef / configMapRef,
 * and the volumes' secret.secretName / configMap.name and projected.sources[].secret /
 * configMap. Pure: read from the pod's JSON. The node authorizer (a node reads only what its
 * pods name) and the node agent (what a pod waits for) share it.
 */

#include <jansson.h>
#include <stdbool.h>

enum xp_pod_ref_kind {
        XP_POD_REF_SECRET,
        XP_POD_REF_CONFIGMAP,
};

/* Called for each name (may repeat); a nonzero return stops the visit and is returned. */
typedef int (*xp_pod_ref_fn)(const char *name, void *userdata);

int xp_pod_refs_visit(const json_t *pod,
                      enum xp_pod_ref_kind kind,
                      xp_pod_ref_fn fn,
                      void *userdata);

/* Whether pod names the object of kind called name. */
bool xp_pod_references(const json_t *pod, enum xp_pod_ref_kind kind, const char *name);
