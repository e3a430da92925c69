/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protobuf messages of the apps/v1 kinds (field numbers of k8s.io/api/apps/v1's
 * generated.proto), so that kubectl's typed commands (create deployment), which send protobuf,
 * work, the strategies' IntOrString fields (maxSurge, maxUnavailable) included.
 */
#include "kind_apps.h"
#include "protobuf_internal.h"

MESSAGE(pod_template_spec,
        "core/v1 PodTemplateSpec",
        MSG(1, "metadata", xp_pb_object_meta),
        MSG(2, "spec", xp_pb_pod_spec));

MESSAGE(rolling_update,
        "apps/v1 RollingUpdateDeployment",
        INTSTR(1, "maxUnavailable"),
        INTSTR(2, "maxSurge"));

MESSAGE(strategy,
        "apps/v1 DeploymentStrategy",
        STR(1, "type"),
        MSG(2, "rollingUpdate", rolling_update));

MESSAGE(deployment_spec,
        "apps/v1 DeploymentSpec",
        I32_P(1, "replicas"),
        MSG(2, "selector", xp_pb_label_selector),
        MSG(3, "template", pod_template_spec),
        MSG(4, "strategy", strategy),
        I32(5, "minReadySeconds"),
        I32_P(6, "revisionHistoryLimit"),
        BOOL(7, "paused"),
        I32_P(9, "progressDeadlineSeconds"));

MESSAGE(deployment_condition,
        "apps/v1 DeploymentCondition",
        STR(1, "type"),
        STR(2, "status"),
        STR(4, "reason"),
        STR(5, "message"),
        TIME(6, "lastUpdateTime"),
        TIME(7, "lastTransitionTime"));

MESSAGE(deployment_status,
        "apps/v1 DeploymentStatus",
        I64(1, "observedGeneration"),
        I32(2, "replicas"),
        I32(3, "updatedReplicas"),
        I32(4, "availableReplicas"),
        I32(5, "unavailableReplicas"),
        MSGS(6, "conditions", deployment_condition),
        I32(7, "readyReplicas"),
        I32_P(8, "collisionCount"),
        I32_P(9, "terminatingReplicas"));

const struct pb_message xp_pb_deployment = {
    .name = "apps/v1 Deployment",
    .fields = (const struct pb_field_desc[]){MSG(1, "metadata", xp_pb_object_meta),
                                             MSG(2, "spec", deployment_spec),
                                             MSG(3, "status", deployment_status)},
    .n_fields = 3,
};

MESSAGE(replicaset_spec,
        "apps/v1 ReplicaSetSpec",
        I32_P(1, "replicas"),
        MSG(2, "selector", xp_pb_label_selector),
        MSG(3, "template", pod_template_spec),
        I32(4, "minReadySeconds"));

MESSAGE(replicaset_status,
        "apps/v1 ReplicaSetStatus",
        I32(1, "replicas"),
        I32(2, "fullyLabeledReplicas"),
        I64(3, "observedGeneration"),
        I32(4, "readyReplicas"),
        I32(5, "availableReplicas"));

const struct pb_message xp_pb_replicaset = {
    .name = "apps/v1 ReplicaSet",
    .fields = (const struct pb_field_desc[]){MSG(1, "metadata", xp_pb_object_meta),
                                             MSG(2, "spec", replicaset_spec),
                                             MSG(3, "status", replicaset_status)},
    .n_fields = 3,
};

MESSAGE(daemonset_rolling_update,
        "apps/v1 RollingUpdateDaemonSet",
        INTSTR(1, "maxUnavailable"),
        INTSTR(2, "maxSurge"));

MESSAGE(daemonset_strategy,
        "apps/v1 DaemonSetUpdateStrategy",
        STR(1, "type"),
        MSG(2, "rollingUpdate", daemonset_rolling_update));

MESSAGE(daemonset_spec,
        "apps/v1 DaemonSetSpec",
        MSG(1, "selector", xp_pb_label_selector),
        MSG(2, "template", pod_template_spec),
        MSG(3, "updateStrategy", daemonset_strategy),
        I32(4, "minReadySeconds"),
        I32_P(6, "revisionHistoryLimit"));

MESSAGE(daemonset_status,
        "apps/v1 DaemonSetStatus",
        I32(1, "currentNumberScheduled"),
        I32(2, "numberMisscheduled"),
        I32(3, "desiredNumberScheduled"),
        I32(4, "numberReady"),
        I64(5, "observedGeneration"),
        I32(6, "updatedNumberScheduled"),
        I32(7, "numberAvailable"),
        I32(8, "numberUnavailable"));

const struct pb_message xp_pb_daemonset = {
    .name = "apps/v1 DaemonSet",
    .fields = (const struct pb_field_desc[]){MSG(1, "metadata", xp_pb_object_meta),
                                             MSG(2, "spec", daemonset_spec),
                                             MSG(3, "status", daemonset_status)},
    .n_fields = 3,
};
