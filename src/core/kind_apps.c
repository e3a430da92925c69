/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The apps/v1 workload kinds as document kinds (xpool/doc.h): Deployment, ReplicaSet and
 * DaemonSet, with Kubernetes' defaults (SetDefaults_Deployment, _ReplicaSet, _DaemonSet and the
 * pod template's SetDefaults_PodSpec), the status subresource, and the scale subresource of
 * Deployments and ReplicaSets. docs/workloads.md describes them; the controllers that drive them
 * are in src/controller (workloads.c).
 */
#include <errno.h>
#include <string.h>

#include "kind_apps.h"
#include "protobuf_internal.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/poddefaults.h"

static int set_default(json_t *body, const char *path, json_t *value)
{
        if (!value)
                return -ENOMEM;
        if (xp_json_at(body, path)) {
                json_decref(value);
                return 0;
        }
        return xp_json_set_at(body, path, value);
}

/* The pod template's defaults: a pod's, without what admission adds to a pod (service account,
 * priority, default tolerations). */
static int template_defaults(json_t *body)
{
        json_t *template = json_object_get(json_object_get(body, "spec"), "template");
        json_t *spec = json_object_get(template, "spec");
        json_t *pod;
        int r;

        if (!json_is_object(spec))
                return 0; /* validation says what is missing */
        pod = json_pack("{s:O}", "spec", spec);
        if (!pod)
                return -ENOMEM;
        r = xp_pod_defaults_apply(pod, &(struct xp_pod_defaults){.template_only = true});
        if (r >= 0)
                r = json_object_set(template, "spec", json_object_get(pod, "spec")) < 0 ? -ENOMEM
                                                                                        : 0;
        json_decref(pod);
        return r;
}

static int deployment_defaults(struct xp_doc *doc)
{
        json_t *b = doc->body;
        const char *type;
        int r = 0;

        r |= set_default(b, "spec.replicas", json_integer(1));
        r |= set_default(b, "spec.strategy.type", json_string("RollingUpdate"));
        type = xp_json_str_at(b, "spec.strategy.type", "");
        if (strcmp(type, "RollingUpdate") == 0) {
                r |= set_default(
                    b, "spec.strategy.rollingUpdate.maxUnavailable", json_string("25%"));
                r |= set_default(b, "spec.strategy.rollingUpdate.maxSurge", json_string("25%"));
        }
        r |= set_default(b, "spec.revisionHistoryLimit", json_integer(10));
        r |= set_default(b, "spec.progressDeadlineSeconds", json_integer(600));
        if (r < 0)
                return -ENOMEM;
        return template_defaults(b);
}

static int replicaset_defaults(struct xp_doc *doc)
{
        if (set_default(doc->body, "spec.replicas", json_integer(1)) < 0)
                return -ENOMEM;
        return template_defaults(doc->body);
}

static int daemonset_defaults(struct xp_doc *doc)
{
        json_t *b = doc->body;
        int r = 0;

        r |= set_default(b, "spec.updateStrategy.type", json_string("RollingUpdate"));
        if (strcmp(xp_json_str_at(b, "spec.updateStrategy.type", ""), "RollingUpdate") == 0) {
                r |= set_default(
                    b, "spec.updateStrategy.rollingUpdate.maxUnavailable", json_integer(1));
                r |= set_default(b, "spec.updateStrategy.rollingUpdate.maxSurge", json_integer(0));
        }
        r |= set_default(b, "spec.revisionHistoryLimit", json_integer(10));
        if (r < 0)
                return -ENOMEM;
        return template_defaults(b);
}

static const struct xp_scale_paths replicas_scale = {
    .spec_replicas = "spec.replicas",
    .status_replicas = "status.replicas",
    .label_selector = "spec.selector",
};

static const char *const deployment_short_names[] = {"deploy", NULL};
static const char *const replicaset_short_names[] = {"rs", NULL};
static const char *const daemonset_short_names[] = {"ds", NULL};
static const char *const category_all[] = {"all", NULL};

XP_DOC_KIND_DECODER(xp_kind_deployment)
XP_DOC_KIND_DECODER(xp_kind_replicaset)
XP_DOC_KIND_DECODER(xp_kind_daemonset)

const struct xp_kind xp_kind_deployment = {
    .kind = "Deployment",
    .list_kind = "DeploymentList",
    .group = "apps",
    .version = "v1",
    .api_version = "apps/v1",
    .plural = "deployments",
    .singular = "deployment",
    .short_names = deployment_short_names,
    .categories = category_all,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_deployment),
    .doc_defaults = deployment_defaults,
    .doc_validate = xp_apps_deployment_validate,
    .table = &xp_table_deployment,
    .status_subresource = true,
    .scale = &replicas_scale,
    .protobuf = &xp_pb_deployment,
};

const struct xp_kind xp_kind_replicaset = {
    .kind = "ReplicaSet",
    .list_kind = "ReplicaSetList",
    .group = "apps",
    .version = "v1",
    .api_version = "apps/v1",
    .plural = "replicasets",
    .singular = "replicaset",
    .short_names = replicaset_short_names,
    .categories = category_all,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_replicaset),
    .doc_defaults = replicaset_defaults,
    .doc_validate = xp_apps_replicaset_validate,
    .table = &xp_table_replicaset,
    .status_subresource = true,
    .scale = &replicas_scale,
    .protobuf = &xp_pb_replicaset,
};

const struct xp_kind xp_kind_daemonset = {
    .kind = "DaemonSet",
    .list_kind = "DaemonSetList",
    .group = "apps",
    .version = "v1",
    .api_version = "apps/v1",
    .plural = "daemonsets",
    .singular = "daemonset",
    .short_names = daemonset_short_names,
    .categories = category_all,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_daemonset),
    .doc_defaults = daemonset_defaults,
    .doc_validate = xp_apps_daemonset_validate,
    .table = &xp_table_daemonset,
    .status_subresource = true,
    .protobuf = &xp_pb_daemonset,
};
