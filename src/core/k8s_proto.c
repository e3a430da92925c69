/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes protobuf messages we read, as tables of field number -> JSON name and type,
 * and the envelope around them (the "k8s\0" magic and runtime.Unknown). Field numbers are those
 * of k8s.io/api core/v1 and k8s.io/apimachinery meta/v1 generated.proto, which Kubernetes never
 * renumbers. A message lists every field Go's encoder writes for it even when unset (its
 * non-pointer fields), or no kubectl body would decode; fields that hold what we do not model
 * here (volumes, probes, security contexts, affinity, ...) are left out on purpose, so a body
 * that uses them fails with the field's number instead of losing it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "protobuf_internal.h"
#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/protobuf.h"

/* meta/v1 */

MESSAGE(owner_reference,
        "meta/v1 OwnerReference",
        STR(1, "kind"),
        STR(3, "name"),
        STR(4, "uid"),
        STR(5, "apiVersion"),
        BOOL_P(6, "controller"),
        BOOL_P(7, "blockOwnerDeletion"));

static const struct pb_field_desc object_meta_fields[] = {
    STR(1, "name"),
    STR(2, "generateName"),
    STR(3, "namespace"),
    STR(4, "selfLink"),
    STR(5, "uid"),
    STR(6, "resourceVersion"),
    I64(7, "generation"),
    TIME(8, "creationTimestamp"),
    TIME(9, "deletionTimestamp"),
    I64_P(10, "deletionGracePeriodSeconds"),
    SMAP(11, "labels"),
    SMAP(12, "annotations"),
    MSGS(13, "ownerReferences", owner_reference),
    STRS(14, "finalizers"),
};
const struct pb_message xp_pb_object_meta = {
    .name = "meta/v1 ObjectMeta",
    .fields = object_meta_fields,
    .n_fields = XP_ELEMENTSOF(object_meta_fields),
};
#define object_meta xp_pb_object_meta

/* core/v1 Namespace */

MESSAGE(namespace_spec, "core/v1 NamespaceSpec", STRS(1, "finalizers"));

MESSAGE(namespace_condition,
        "core/v1 NamespaceCondition",
        STR(1, "type"),
        STR(2, "status"),
        TIME(4, "lastTransitionTime"),
        STR(5, "reason"),
        STR(6, "message"));

MESSAGE(namespace_status,
        "core/v1 NamespaceStatus",
        STR(1, "phase"),
        MSGS(2, "conditions", namespace_condition));

MESSAGE(namespace_msg,
        "core/v1 Namespace",
        MSG(1, "metadata", object_meta),
        MSG(2, "spec", namespace_spec),
        MSG(3, "status", namespace_status));

/* core/v1 Pod */

MESSAGE(container_port,
        "core/v1 ContainerPort",
        STR(1, "name"),
        I32(2, "hostPort"),
        I32(3, "containerPort"),
        STR(4, "protocol"),
        STR(5, "hostIP"));

MESSAGE(object_field_selector,
        "core/v1 ObjectFieldSelector",
        STR(1, "apiVersion"),
        STR(2, "fieldPath"));

MESSAGE(resource_field_selector,
        "core/v1 ResourceFieldSelector",
        STR(1, "containerName"),
        STR(2, "resource"),
        QTY(3, "divisor"));

/* configMapKeyRef and secretKeyRef name objects this server does not have */
MESSAGE(env_var_source,
        "core/v1 EnvVarSource",
        MSG(1, "fieldRef", object_field_selector),
        MSG(2, "resourceFieldRef", resource_field_selector));

MESSAGE(env_var,
        "core/v1 EnvVar",
        STR(1, "name"),
        STR(2, "value"),
        MSG(3, "valueFrom", env_var_source));

MESSAGE(resource_claim, "core/v1 ResourceClaim", STR(1, "name"), STR(2, "request"));

MESSAGE(resource_requirements,
        "core/v1 ResourceRequirements",
        QMAP(1, "limits"),
        QMAP(2, "requests"),
        MSGS(3, "claims", resource_claim));

MESSAGE(container,
        "core/v1 Container",
        STR(1, "name"),
        STR(2, "image"),
        STRS(3, "command"),
        STRS(4, "args"),
        STR(5, "workingDir"),
        MSGS(6, "ports", container_port),
        MSGS(7, "env", env_var),
        MSG(8, "resources", resource_requirements),
        STR(13, "terminationMessagePath"),
        STR(14, "imagePullPolicy"),
        BOOL(16, "stdin"),
        BOOL(17, "stdinOnce"),
        BOOL(18, "tty"),
        STR(20, "terminationMessagePolicy"),
        STR_P(24, "restartPolicy"));

MESSAGE(toleration,
        "core/v1 Toleration",
        STR(1, "key"),
        STR(2, "operator"),
        STR(3, "value"),
        STR(4, "effect"),
        I64_P(5, "tolerationSeconds"));

static const struct pb_field_desc local_object_reference_fields[] = {STR(1, "name")};
const struct pb_message xp_pb_local_object_reference = {
    .name = "core/v1 LocalObjectReference",
    .fields = local_object_reference_fields,
    .n_fields = XP_ELEMENTSOF(local_object_reference_fields)};
#define local_object_reference xp_pb_local_object_reference

static const struct pb_field_desc object_reference_fields[] = {STR(1, "kind"),
                                                               STR(2, "namespace"),
                                                               STR(3, "name"),
                                                               STR(4, "uid"),
                                                               STR(5, "apiVersion"),
                                                               STR(6, "resourceVersion"),
                                                               STR(7, "fieldPath")};
const struct pb_message xp_pb_object_reference = {.name = "core/v1 ObjectReference",
                                                  .fields = object_reference_fields,
                                                  .n_fields =
                                                      XP_ELEMENTSOF(object_reference_fields)};

MESSAGE(host_alias, "core/v1 HostAlias", STR(1, "ip"), STRS(2, "hostnames"));

MESSAGE(pod_dns_config_option, "core/v1 PodDNSConfigOption", STR(1, "name"), STR_P(2, "value"));

MESSAGE(pod_dns_config,
        "core/v1 PodDNSConfig",
        STRS(1, "nameservers"),
        STRS(2, "searches"),
        MSGS(3, "options", pod_dns_config_option));

MESSAGE(pod_readiness_gate, "core/v1 PodReadinessGate", STR(1, "conditionType"));

MESSAGE(pod_os, "core/v1 PodOS", STR(1, "name"));

MESSAGE(pod_scheduling_gate, "core/v1 PodSchedulingGate", STR(1, "name"));

MESSAGE(seccomp_profile, "core/v1 SeccompProfile", STR(1, "type"), STR_P(2, "localhostProfile"));

/* What kubectl sends back of a server-defaulted template (create job --from=cronjob/...). */
MESSAGE(pod_security_context,
        "core/v1 PodSecurityContext",
        I64_P(2, "runAsUser"),
        BOOL_P(3, "runAsNonRoot"),
        FIELD(4, "supplementalGroups", PB_INT64, PB_REPEATED, NULL),
        I64_P(5, "fsGroup"),
        I64_P(6, "runAsGroup"),
        STR_P(9, "fsGroupChangePolicy"),
        MSG(10, "seccompProfile", seccomp_profile));

MESSAGE(pod_spec,
        "core/v1 PodSpec",
        MSGS(2, "containers", container),
        STR(3, "restartPolicy"),
        I64_P(4, "terminationGracePeriodSeconds"),
        I64_P(5, "activeDeadlineSeconds"),
        STR(6, "dnsPolicy"),
        SMAP(7, "nodeSelector"),
        STR(8, "serviceAccountName"),
        STR(9, "serviceAccount"),
        STR(10, "nodeName"),
        BOOL(11, "hostNetwork"),
        BOOL(12, "hostPID"),
        BOOL(13, "hostIPC"),
        MSG(14, "securityContext", pod_security_context),
        MSGS(15, "imagePullSecrets", local_object_reference),
        STR(16, "hostname"),
        STR(17, "subdomain"),
        STR(19, "schedulerName"),
        MSGS(20, "initContainers", container),
        BOOL_P(21, "automountServiceAccountToken"),
        MSGS(22, "tolerations", toleration),
        MSGS(23, "hostAliases", host_alias),
        STR(24, "priorityClassName"),
        I32_P(25, "priority"),
        MSG(26, "dnsConfig", pod_dns_config),
        BOOL_P(27, "shareProcessNamespace"),
        MSGS(28, "readinessGates", pod_readiness_gate),
        STR_P(29, "runtimeClassName"),
        BOOL_P(30, "enableServiceLinks"),
        STR_P(31, "preemptionPolicy"),
        QMAP(32, "overhead"),
        BOOL_P(35, "setHostnameAsFQDN"),
        MSG(36, "os", pod_os),
        BOOL_P(37, "hostUsers"),
        MSGS(38, "schedulingGates", pod_scheduling_gate),
        MSG(40, "resources", resource_requirements));

const struct pb_message xp_pb_pod_spec = {.name = "core/v1 PodSpec",
                                          .fields = pod_spec_fields,
                                          .n_fields = XP_ELEMENTSOF(pod_spec_fields)};

MESSAGE(pod_condition,
        "core/v1 PodCondition",
        STR(1, "type"),
        STR(2, "status"),
        TIME(3, "lastProbeTime"),
        TIME(4, "lastTransitionTime"),
        STR(5, "reason"),
        STR(6, "message"),
        I64(7, "observedGeneration"));

/* A client creating a pod writes an empty status (the server drops it): the scalars suffice. */
MESSAGE(pod_status,
        "core/v1 PodStatus",
        STR(1, "phase"),
        MSGS(2, "conditions", pod_condition),
        STR(3, "message"),
        STR(4, "reason"),
        STR(5, "hostIP"),
        STR(6, "podIP"),
        TIME(7, "startTime"),
        STR(9, "qosClass"),
        STR(11, "nominatedNodeName"),
        STR(14, "resize"),
        I64(17, "observedGeneration"));

MESSAGE(pod_msg,
        "core/v1 Pod",
        MSG(1, "metadata", object_meta),
        MSG(2, "spec", pod_spec),
        MSG(3, "status", pod_status));

/* authentication/v1 and authorization/v1: the reviews kubectl auth whoami and can-i send */

MESSAGE(
    user_info, "authentication/v1 UserInfo", STR(1, "username"), STR(2, "uid"), STRS(3, "groups"));

MESSAGE(self_subject_review_status,
        "authentication/v1 SelfSubjectReviewStatus",
        MSG(1, "userInfo", user_info));

MESSAGE(self_subject_review_msg,
        "authentication/v1 SelfSubjectReview",
        MSG(1, "metadata", object_meta),
        MSG(2, "status", self_subject_review_status));

MESSAGE(selector_requirement,
        "meta/v1 selector requirement",
        STR(1, "key"),
        STR(2, "operator"),
        STRS(3, "values"));

MESSAGE(selector_attributes,
        "authorization/v1 selector attributes",
        STR(1, "rawSelector"),
        MSGS(2, "requirements", selector_requirement));

MESSAGE(resource_attributes,
        "authorization/v1 ResourceAttributes",
        STR(1, "namespace"),
        STR(2, "verb"),
        STR(3, "group"),
        STR(4, "version"),
        STR(5, "resource"),
        STR(6, "subresource"),
        STR(7, "name"),
        MSG(8, "fieldSelector", selector_attributes),
        MSG(9, "labelSelector", selector_attributes));

MESSAGE(non_resource_attributes,
        "authorization/v1 NonResourceAttributes",
        STR(1, "path"),
        STR(2, "verb"));

MESSAGE(self_subject_access_review_spec,
        "authorization/v1 SelfSubjectAccessReviewSpec",
        MSG(1, "resourceAttributes", resource_attributes),
        MSG(2, "nonResourceAttributes", non_resource_attributes));

MESSAGE(subject_access_review_status,
        "authorization/v1 SubjectAccessReviewStatus",
        BOOL(1, "allowed"),
        STR(2, "reason"),
        STR(3, "evaluationError"),
        BOOL(4, "denied"));

MESSAGE(self_subject_access_review_msg,
        "authorization/v1 SelfSubjectAccessReview",
        MSG(1, "metadata", object_meta),
        MSG(2, "spec", self_subject_access_review_spec),
        MSG(3, "status", subject_access_review_status));

MESSAGE(self_subject_rules_review_spec,
        "authorization/v1 SelfSubjectRulesReviewSpec",
        STR(1, "namespace"));

MESSAGE(resource_rule,
        "authorization/v1 ResourceRule",
        STRS(1, "verbs"),
        STRS(2, "apiGroups"),
        STRS(3, "resources"),
        STRS(4, "resourceNames"));

MESSAGE(non_resource_rule,
        "authorization/v1 NonResourceRule",
        STRS(1, "verbs"),
        STRS(2, "nonResourceURLs"));

MESSAGE(subject_rules_review_status,
        "authorization/v1 SubjectRulesReviewStatus",
        MSGS(1, "resourceRules", resource_rule),
        MSGS(2, "nonResourceRules", non_resource_rule),
        BOOL(3, "incomplete"),
        STR(4, "evaluationError"));

MESSAGE(self_subject_rules_review_msg,
        "authorization/v1 SelfSubjectRulesReview",
        MSG(1, "metadata", object_meta),
        MSG(2, "spec", self_subject_rules_review_spec),
        MSG(3, "status", subject_rules_review_status));
/* meta/v1 DeleteOptions, and policy/v1 Eviction that carries them (kubectl delete, drain) */

MESSAGE(preconditions, "meta/v1 Preconditions", STR_P(1, "uid"), STR_P(2, "resourceVersion"));

MESSAGE(delete_options,
        "meta/v1 DeleteOptions",
        I64_P(1, "gracePeriodSeconds"),
        MSG(2, "preconditions", preconditions),
        BOOL_P(3, "orphanDependents"),
        STR_P(4, "propagationPolicy"),
        STRS(5, "dryRun"),
        BOOL_P(6, "ignoreStoreReadErrorWithClusterBreakingPotential"));

MESSAGE(eviction,
        "policy/v1 Eviction",
        MSG(1, "metadata", object_meta),
        MSG(2, "deleteOptions", delete_options));

/* authentication/v1 TokenRequest (kubectl create token) */

MESSAGE(bound_object_reference,
        "authentication/v1 BoundObjectReference",
        STR(1, "kind"),
        STR(2, "apiVersion"),
        STR(3, "name"),
        STR(4, "uid"));

MESSAGE(token_request_spec,
        "authentication/v1 TokenRequestSpec",
        STRS(1, "audiences"),
        MSG(3, "boundObjectRef", bound_object_reference),
        I64_P(4, "expirationSeconds"));

MESSAGE(token_request_status,
        "authentication/v1 TokenRequestStatus",
        STR(1, "token"),
        TIME(2, "expirationTimestamp"));

MESSAGE(token_request_msg,
        "authentication/v1 TokenRequest",
        MSG(1, "metadata", object_meta),
        MSG(2, "spec", token_request_spec),
        MSG(3, "status", token_request_status));

struct kind_entry {
        const char *api_version;
        const char *kind;
        const struct pb_message *message;
};

static const struct kind_entry kinds[] = {
    {.api_version = "v1", .kind = "Namespace", .message = &namespace_msg},
    {.api_version = "v1", .kind = "Pod", .message = &pod_msg},
    {.api_version = "authentication.k8s.io/v1",
     .kind = "SelfSubjectReview",
     .message = &self_subject_review_msg},
    {.api_version = "authorization.k8s.io/v1",
     .kind = "SelfSubjectAccessReview",
     .message = &self_subject_access_review_msg},
    {.api_version = "authorization.k8s.io/v1",
     .kind = "SelfSubjectRulesReview",
     .message = &self_subject_rules_review_msg},
    /* client-go encodes DeleteOptions in the meta group, or the request's group version */
    {.api_version = "meta.k8s.io/v1", .kind = "DeleteOptions", .message = &delete_options},
    {.api_version = "v1", .kind = "DeleteOptions", .message = &delete_options},
    {.api_version = "policy/v1", .kind = "DeleteOptions", .message = &delete_options},
    {.api_version = "policy/v1", .kind = "Eviction", .message = &eviction},
    {.api_version = "authentication.k8s.io/v1",
     .kind = "TokenRequest",
     .message = &token_request_msg},
};

/* The envelope's pieces, borrowed from the body. */
struct envelope {
        const uint8_t *api_version, *kind, *raw;
        size_t api_version_len, kind_len, raw_len;
        bool has_raw;
};

static int
read_type_meta(const uint8_t *data, size_t size, struct envelope *env, struct xp_error *err)
{
        struct pb_reader r = {data, data + size};
        struct pb_field f;
        int k;

        while ((k = pb_read_field(&r, data, &f, err)) > 0) {
                if ((f.number != 1 && f.number != 2) || f.wire != PB_WIRE_LEN)
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "the envelope's typeMeta holds field %" PRIu32
                                         "; only apiVersion (1) and kind (2) strings may be there",
                                         f.number);
                if (f.number == 1) {
                        env->api_version = f.bytes;
                        env->api_version_len = f.len;
                } else {
                        env->kind = f.bytes;
                        env->kind_len = f.len;
                }
        }
        if (k < 0)
                return xp_error_prefix(err, k, "the envelope's typeMeta");
        return 0;
}

/* runtime.Unknown: typeMeta = 1, raw = 2, contentEncoding = 3, contentType = 4. */
static int
read_envelope(const uint8_t *data, size_t size, struct envelope *ret, struct xp_error *err)
{
        struct pb_reader r = {data, data + size};
        struct envelope env = {0};
        struct pb_field f;
        int k;

        while ((k = pb_read_field(&r, data, &f, err)) > 0) {
                if (f.number < 1 || f.number > 4 || f.wire != PB_WIRE_LEN)
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "the envelope (runtime.Unknown) holds field %" PRIu32
                                         " (wire type %d), which it does not have",
                                         f.number,
                                         (int)f.wire);
                switch (f.number) {
                case 1:
                        k = read_type_meta(f.bytes, f.len, &env, err);
                        if (k < 0)
                                return k;
                        break;
                case 2:
                        env.raw = f.bytes;
                        env.raw_len = f.len;
                        env.has_raw = true;
                        break;
                case 3:
                        /* Kubernetes never compresses the object inside the envelope */
                        if (f.len != 0)
                                return xp_errorf(
                                    err,
                                    -EBADMSG,
                                    "the envelope has a content encoding (%.*s); only plain objects are read",
                                    (int)(f.len > 32 ? 32 : f.len),
                                    (const char *)f.bytes);
                        break;
                case 4:
                        /* empty means protobuf, the only type a protobuf body nests */
                        if (f.len != 0 &&
                            !(f.len == 35 &&
                              memcmp(f.bytes, "application/vnd.kubernetes.protobuf", 35) == 0))
                                return xp_errorf(
                                    err,
                                    -EBADMSG,
                                    "the envelope holds an object of content type %.*s; only protobuf is read",
                                    (int)(f.len > 64 ? 64 : f.len),
                                    (const char *)f.bytes);
                        break;
                }
        }
        if (k < 0)
                return xp_error_prefix(err, k, "the envelope (runtime.Unknown)");
        if (!env.has_raw)
                return xp_errorf(err, -EBADMSG, "the envelope (runtime.Unknown) holds no object");
        *ret = env;
        return 0;
}

static bool bytes_equal(const uint8_t *bytes, size_t len, const char *s)
{
        return bytes && strlen(s) == len && memcmp(bytes, s, len) == 0;
}

/* A kind of the kinds table (xpool/kind.h) with its protobuf message, or NULL. */
static const struct kind_entry *kind_entry_of(const struct envelope *env, struct kind_entry *ret)
{
        char api_version[128], kind[128];
        const struct xp_kind *k;

        if (!env->api_version || !env->kind || env->api_version_len >= sizeof(api_version) ||
            env->kind_len >= sizeof(kind))
                return NULL;
        snprintf(api_version,
                 sizeof(api_version),
                 "%.*s",
                 (int)env->api_version_len,
                 (const char *)env->api_version);
        snprintf(kind, sizeof(kind), "%.*s", (int)env->kind_len, (const char *)env->kind);
        k = xp_kind_by_api_version(api_version, kind);
        if (!k || !k->protobuf)
                return NULL;
        *ret = (struct kind_entry){
            .api_version = k->api_version, .kind = k->kind, .message = k->protobuf};
        return ret;
}

int xp_protobuf_to_json(const void *data, size_t size, json_t **ret, struct xp_error *err)
{
        struct kind_entry from_table;
        const struct kind_entry *entry = NULL;
        struct envelope env = {0};
        json_t *object;
        int r;

        if (size > XP_PROTOBUF_SIZE_MAX)
                return xp_errorf(err,
                                 -E2BIG,
                                 "the protobuf body has %zu bytes, more than the %d allowed",
                                 size,
                                 XP_PROTOBUF_SIZE_MAX);
        if (size < XP_PROTOBUF_MAGIC_LEN ||
            memcmp(data, XP_PROTOBUF_MAGIC, XP_PROTOBUF_MAGIC_LEN) != 0)
                return xp_errorf(
                    err,
                    -EBADMSG,
                    "the body does not start with the Kubernetes protobuf magic \"k8s\\0\"");
        r = read_envelope(
            (const uint8_t *)data + XP_PROTOBUF_MAGIC_LEN, size - XP_PROTOBUF_MAGIC_LEN, &env, err);
        if (r < 0)
                return r;

        for (size_t i = 0; i < XP_ELEMENTSOF(kinds); i++)
                if (bytes_equal(env.api_version, env.api_version_len, kinds[i].api_version) &&
                    bytes_equal(env.kind, env.kind_len, kinds[i].kind)) {
                        entry = &kinds[i];
                        break;
                }
        if (!entry)
                entry = kind_entry_of(&env, &from_table);
        if (!entry)
                return xp_errorf(
                    err,
                    -EPROTONOSUPPORT,
                    "protobuf bodies of kind %.*s (apiVersion %.*s) are not supported (only v1 Namespace and Pod, the kinds xpool serves as documents, DeleteOptions, policy/v1 Eviction, TokenRequest, and the self reviews of authentication.k8s.io and authorization.k8s.io); send the object as JSON instead (kubectl apply -f with a manifest)",
                    (int)(env.kind_len > 64 ? 64 : env.kind_len),
                    env.kind ? (const char *)env.kind : "",
                    (int)(env.api_version_len > 64 ? 64 : env.api_version_len),
                    env.api_version ? (const char *)env.api_version : "");

        object = json_object();
        if (!object ||
            json_object_set_new(object, "apiVersion", json_string(entry->api_version)) < 0 ||
            json_object_set_new(object, "kind", json_string(entry->kind)) < 0) {
                json_decref(object);
                return -ENOMEM;
        }
        r = pb_decode_message(entry->message, env.raw, env.raw_len, "", 1, object, err);
        if (r < 0) {
                json_decref(object);
                return r;
        }
        *ret = object;
        return 0;
}
