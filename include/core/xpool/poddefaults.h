/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What kube-apiserver fills into a Pod it is given, so that a pod read back looks as it would
 * from a Kubernetes cluster (docs/manifests.md, "Defaults"):
 *
 *   - the defaulting of k8s.io/api core/v1 (SetDefaults_Pod, _PodSpec, _Container,
 *     _ContainerPort, _Probe, _HTTPGetAction, _ObjectFieldSelector, _Volume and the volume
 *     sources' defaultMode): requests default to limits, restartPolicy Always, dnsPolicy
 *     ClusterFirst, schedulerName default-scheduler, terminationGracePeriodSeconds 30,
 *     securityContext {}, enableServiceLinks true, imagePullPolicy by the image's tag (Always for
 *     :latest or none, else IfNotPresent), terminationMessagePath /dev/termination-log and
 *     terminationMessagePolicy File, protocol TCP, hostPort = containerPort on the host network;
 *   - what the default admission plugins add: serviceAccountName (and the deprecated
 *     serviceAccount) "default" (ServiceAccount, without the token volume), priority 0 (or the
 *     built-in system-*-critical classes' value) and preemptionPolicy PreemptLowerPriority
 *     (Priority), and the not-ready and unreachable NoExecute tolerations
 * (DefaultTolerationSeconds).
 *
 * Everything works on the JSON of a pod before it is decoded, as Kubernetes defaults before it
 * validates: only what is absent is filled in, and a member of the wrong type is left for the
 * codec to report.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct xp_pod;

/* The default tolerations' tolerationSeconds (kube-apiserver's --default-*-toleration-seconds). */
#define XP_POD_DEFAULT_TOLERATION_SECONDS 300

struct xp_pod_defaults {
        /* tolerationSeconds of the not-ready and unreachable tolerations; 0: 300 */
        int64_t toleration_seconds;
        /*
         * On an update, the stored pod: a priority or preemptionPolicy the update leaves out is
         * kept from it, as the Priority plugin keeps them; NULL for a create.
         */
        const json_t *old;
        /* A pod template's (a Deployment's): SetDefaults_PodSpec only, without what admission
         * adds to a pod (the service account, priority, the default tolerations). */
        bool template_only;
};

/*
 * Fills in pod's defaults (pod: a Pod's JSON, changed in place; options may be NULL). Returns 0,
 * or -ENOMEM (pod then holds part of them).
 */
int xp_pod_defaults_apply(json_t *pod, const struct xp_pod_defaults *options);

/*
 * The pod's QoS class as the kubelet and the API server compute it (GetPodQOS): BestEffort when
 * no container requests or limits cpu or memory, Guaranteed when every container limits both and
 * the requests equal the limits, else Burstable. Static strings.
 */
const char *xp_pod_qos_class(const struct xp_pod *pod);
