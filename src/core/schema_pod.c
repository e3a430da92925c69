/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "schema_affinity.h"
#include "schema_status.h"
#include "xpool/array.h"
#include "xpool/names.h"
#include "xpool/strutil.h"

static const struct xp_enum_name pull_policy_names[] = {
    {"Always", XP_PULL_ALWAYS},
    {"IfNotPresent", XP_PULL_IF_NOT_PRESENT},
    {"Never", XP_PULL_NEVER},
    {NULL, 0},
};

static const struct xp_enum_name restart_policy_names[] = {
    {"Always", XP_RESTART_ALWAYS},
    {"OnFailure", XP_RESTART_ON_FAILURE},
    {"Never", XP_RESTART_NEVER},
    {NULL, 0},
};

/* ---- containers ---------------------------------------------------------------------------- */

static int check_env_name(struct xp_decode_ctx *ctx, const void *value)
{
        struct xp_error cause = {0};

        if (xp_check_env_name(*(char *const *)value, &cause) < 0)
                return xp_decode_fail_error(ctx, &cause, NULL, false);
        return 0;
}

static const struct xp_field env_var_fields[] = {
    XP_FIELD("name",
             XP_FT_STRING,
             struct xp_env_var,
             name,
             .flags = XP_FIELD_REQUIRED,
             .check = check_env_name),
    XP_FIELD("value", XP_FT_STRING, struct xp_env_var, value),
};
static const struct xp_schema env_var_schema =
    XP_SCHEMA(struct xp_env_var, "EnvVar", env_var_fields);

static int check_container_resources(struct xp_decode_ctx *ctx, const void *value)
{
        const struct xp_resource_list *list = value;

        for (size_t i = 0; i < list->n; i++) {
                const struct xp_resource *res = &list->items[i];
                struct xp_error cause = {0};
                char q[XP_QUOTE_MAX], text[XP_QUANTITY_STRING_MAX];
                struct xp_ge_msg m;

                if (xp_resource_name_check(res->name, &cause) < 0)
                        return xp_decode_fail_error(ctx, &cause, res->name, true);
                if (!xp_resource_name_is_container_resource(res->name))
                        return xp_decode_fail(
                            ctx,
                            -EINVAL,
                            res->name,
                            true,
                            "Invalid value: %s: a container may request cpu, memory, ephemeral-storage, hugepages-<size> or an extended resource such as \"nvidia.com/gpu\"",
                            xp_quote(res->name, q));
                if (xp_quantity_sign(&res->quantity) < 0)
                        return xp_decode_fail(
                            ctx,
                            -EINVAL,
                            res->name,
                            false,
                            "%s",
                            xp_ge_msg_quoted(&m, xp_quantity_format(&res->quantity, text), 0));
        }
        return 0;
}

static int fail_request(struct xp_decode_ctx *ctx, const char *name, const char *fmt, ...)
    _printf_(3, 4);

static int fail_request(struct xp_decode_ctx *ctx, const char *name, const char *fmt, ...)
{
        char message[XP_ERROR_MSG_MAX];
        va_list ap;
        int r;

        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        xp_path_push_field(&ctx->path, "requests");
        r = xp_decode_fail(ctx, -EINVAL, name, false, "%s", message);
        xp_path_pop(&ctx->path);
        return r;
}

static bool has_any(const struct xp_resource_requirements *rr, bool (*match)(const char *))
{
        for (size_t i = 0; i < rr->limits.n; i++)
                if (match(rr->limits.items[i].name))
                        return true;
        for (size_t i = 0; i < rr->requests.n; i++)
                if (match(rr->requests.items[i].name))
                        return true;
        return false;
}

static bool is_cpu_or_memory(const char *name)
{
        return strcmp(name, XP_RESOURCE_CPU) == 0 || strcmp(name, XP_RESOURCE_MEMORY) == 0;
}

/*
 * Kubernetes' rules: a request is at most its limit; devices and huge pages are never
 * overcommitted, so their request needs a limit equal to it; huge pages come with cpu or memory.
 */
static int validate_resource_requirements(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_resource_requirements *rr = object;

        for (size_t i = 0; i < rr->requests.n; i++) {
                const struct xp_resource *req = &rr->requests.items[i];
                const struct xp_quantity *limit = xp_resource_list_get(&rr->limits, req->name);
                bool overcommittable = xp_resource_name_is_overcommittable(req->name);
                char have[XP_QUANTITY_STRING_MAX], want[XP_QUANTITY_STRING_MAX];

                xp_quantity_format(&req->quantity, have);
                if (!limit && !overcommittable)
                        return fail_request(
                            ctx,
                            req->name,
                            "Required value: a limit must be set for %s, which cannot be overcommitted (set limits[%s] equal to the request)",
                            req->name,
                            req->name);
                if (!limit)
                        continue;
                xp_quantity_format(limit, want);
                if (!overcommittable && xp_quantity_cmp(&req->quantity, limit) != 0)
                        return fail_request(
                            ctx,
                            req->name,
                            "Invalid value: \"%s\": must be equal to %s limit of %s (it cannot be overcommitted)",
                            have,
                            req->name,
                            want);
                if (xp_quantity_cmp(&req->quantity, limit) > 0)
                        return fail_request(
                            ctx,
                            req->name,
                            "Invalid value: \"%s\": must be less than or equal to %s limit of %s",
                            have,
                            req->name,
                            want);
        }
        if (has_any(rr, xp_resource_name_is_hugepages) && !has_any(rr, is_cpu_or_memory))
                return xp_decode_fail(
                    ctx,
                    -EINVAL,
                    NULL,
                    false,
                    "Invalid value: huge pages require a cpu or memory request or limit");
        return 0;
}

static const struct xp_field resource_requirements_fields[] = {
    XP_FIELD("limits",
             XP_FT_RESOURCES,
             struct xp_resource_requirements,
             limits,
             .check = check_container_resources),
    XP_FIELD("requests",
             XP_FT_RESOURCES,
             struct xp_resource_requirements,
             requests,
             .check = check_container_resources),
};
static const struct xp_schema resource_requirements_schema =
    XP_SCHEMA(struct xp_resource_requirements,
              "ResourceRequirements",
              resource_requirements_fields,
              .validate = validate_resource_requirements);

/* Who a process runs as: shared by the pod's and each container's security context. */
#define RUN_AS_FIELDS                                                                              \
        XP_FIELD("runAsUser",                                                                      \
                 XP_FT_OPT_INT64,                                                                  \
                 struct xp_security_context,                                                       \
                 run_as_user,                                                                      \
                 .check = xp_check_opt_non_negative),                                              \
            XP_FIELD("runAsGroup",                                                                 \
                     XP_FT_OPT_INT64,                                                              \
                     struct xp_security_context,                                                   \
                     run_as_group,                                                                 \
                     .check = xp_check_opt_non_negative),                                          \
            XP_FIELD("runAsNonRoot", XP_FT_OPT_BOOL, struct xp_security_context, run_as_non_root)

static const struct xp_field capabilities_fields[] = {
    XP_FIELD("add", XP_FT_STRING_LIST, struct xp_capabilities, add),
    XP_FIELD("drop", XP_FT_STRING_LIST, struct xp_capabilities, drop),
};
static const struct xp_schema capabilities_schema =
    XP_SCHEMA(struct xp_capabilities, "Capabilities", capabilities_fields);

static const struct xp_enum_name seccomp_type_names[] = {
    {"RuntimeDefault", XP_SECCOMP_RUNTIME_DEFAULT},
    {"Unconfined", XP_SECCOMP_UNCONFINED},
    {"Localhost", XP_SECCOMP_LOCALHOST},
    {NULL, 0},
};

/* As Kubernetes: localhostProfile exactly when the type is Localhost. */
static int validate_seccomp_profile(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_seccomp_profile *p = object;
        bool localhost = p->type == XP_SECCOMP_LOCALHOST;

        if (localhost && (!p->localhost_profile || !*p->localhost_profile))
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "localhostProfile",
                                     "Required value: must be set when seccomp type is Localhost");
        if (!localhost && p->localhost_profile)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "localhostProfile",
                    "Invalid value: can only be set when seccomp type is Localhost");
        return 0;
}

static const struct xp_field seccomp_profile_fields[] = {
    XP_FIELD("type",
             XP_FT_ENUM,
             struct xp_seccomp_profile,
             type,
             .flags = XP_FIELD_REQUIRED,
             .enum_names = seccomp_type_names),
    XP_FIELD("localhostProfile", XP_FT_STRING, struct xp_seccomp_profile, localhost_profile),
};
static const struct xp_schema seccomp_profile_schema =
    XP_SCHEMA(struct xp_seccomp_profile,
              "SeccompProfile",
              seccomp_profile_fields,
              .validate = validate_seccomp_profile);

#define SECCOMP_PROFILE_FIELD                                                                      \
        XP_FIELD("seccompProfile",                                                                 \
                 XP_FT_STRUCT_PTR,                                                                 \
                 struct xp_security_context,                                                       \
                 seccomp_profile,                                                                  \
                 .schema = &seccomp_profile_schema)

static const struct xp_field security_context_fields[] = {
    RUN_AS_FIELDS,
    XP_FIELD("privileged", XP_FT_OPT_BOOL, struct xp_security_context, privileged),
    XP_FIELD("allowPrivilegeEscalation",
             XP_FT_OPT_BOOL,
             struct xp_security_context,
             allow_privilege_escalation),
    XP_FIELD("capabilities",
             XP_FT_STRUCT_PTR,
             struct xp_security_context,
             capabilities,
             .schema = &capabilities_schema),
    XP_FIELD("readOnlyRootFilesystem",
             XP_FT_OPT_BOOL,
             struct xp_security_context,
             read_only_root_filesystem),
    SECCOMP_PROFILE_FIELD,
};
static const struct xp_schema security_context_schema =
    XP_SCHEMA(struct xp_security_context, "SecurityContext", security_context_fields);

static int validate_container(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_container *c = object;
        int r = 0;

        /* xpool's process runtime runs a command without an image; one of the two is needed */
        if ((!c->image || !*c->image) && c->command.n == 0) {
                xp_path_push_field(&ctx->path, "image");
                r = xp_decode_fail(ctx,
                                   -EINVAL,
                                   NULL,
                                   false,
                                   "Required value: a container needs an image or a command");
                xp_path_pop(&ctx->path);
        }
        return r;
}

static const struct xp_field container_fields[] = {
    XP_FIELD("name",
             XP_FT_STRING,
             struct xp_container,
             name,
             .flags = XP_FIELD_REQUIRED,
             .check = xp_check_label_field),
    XP_FIELD("image", XP_FT_STRING, struct xp_container, image),
    XP_FIELD("command", XP_FT_STRING_LIST, struct xp_container, command),
    XP_FIELD("args", XP_FT_STRING_LIST, struct xp_container, args),
    XP_FIELD("workingDir", XP_FT_STRING, struct xp_container, working_dir),
    XP_FIELD("env", XP_FT_STRUCT_LIST, struct xp_container, env, .schema = &env_var_schema),
    XP_FIELD("resources",
             XP_FT_STRUCT,
             struct xp_container,
             resources,
             .schema = &resource_requirements_schema),
    XP_FIELD("imagePullPolicy",
             XP_FT_ENUM,
             struct xp_container,
             image_pull_policy,
             .enum_names = pull_policy_names),
    XP_FIELD("securityContext",
             XP_FT_STRUCT_PTR,
             struct xp_container,
             security_context,
             .schema = &security_context_schema),
};
static const struct xp_schema container_schema =
    XP_SCHEMA(struct xp_container, "Container", container_fields, .validate = validate_container);

/* ---- spec ---------------------------------------------------------------------------------- */

static int check_active_deadline(struct xp_decode_ctx *ctx, const void *value)
{
        int64_t v = ((const struct xp_opt_int64 *)value)->value;

        if (v < 1 || v > INT32_MAX)
                return xp_decode_fail(
                    ctx,
                    -EINVAL,
                    NULL,
                    false,
                    "Invalid value: %lld: must be between 1 and 2147483647, inclusive",
                    (long long)v);
        return 0;
}

static int check_node_selector(struct xp_decode_ctx *ctx, const void *value)
{
        return xp_check_label_map(ctx, value);
}

static int check_priority_class(struct xp_decode_ctx *ctx, const void *value)
{
        return xp_check_subdomain_field(ctx, value);
}

/* Container names are unique across init and regular containers. */
static int check_unique_names(struct xp_decode_ctx *ctx, const struct xp_pod_spec *spec)
{
        size_t n_init = spec->init_containers.n, total = n_init + spec->containers.n;
        _cleanup_free_ const char **names = calloc(total ? total : 1, sizeof(*names));
        size_t dup;
        int r;

        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < total; i++)
                names[i] = i < n_init ? spec->init_containers.items[i].name
                                      : spec->containers.items[i - n_init].name;
        r = xp_first_duplicate(names, total, &dup);
        if (r <= 0)
                return r;
        return xp_fail_duplicate(ctx,
                                 dup < n_init ? "initContainers" : "containers",
                                 dup < n_init ? dup : dup - n_init,
                                 "name",
                                 names[dup],
                                 "container names must be unique within a pod");
}

/* spec.hostname and spec.subdomain (kept among the spec's other members): DNS labels, as
 * kube-apiserver checks them, since the agent writes them into the pod's /etc/hosts. */
static int check_host_label(struct xp_decode_ctx *ctx, const json_t *extra, const char *name)
{
        const char *value = json_string_value(json_object_get(extra, name));
        struct xp_error cause = {0};
        int r = 0;

        if (!value || !value[0] || xp_check_dns1123_label(value, &cause) == 0)
                return 0;
        xp_path_push_field(&ctx->path, name);
        r = xp_decode_fail_error(ctx, &cause, NULL, false);
        xp_path_pop(&ctx->path);
        return r;
}

static int validate_pod_spec(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_pod_spec *spec = object;
        int r = check_host_label(ctx, spec->extra, "hostname");

        if (r == 0)
                r = check_host_label(ctx, spec->extra, "subdomain");
        if (r < 0)
                return r;

        if (spec->containers.n == 0) {
                xp_path_push_field(&ctx->path, "containers");
                r = xp_decode_fail(ctx,
                                   -EINVAL,
                                   NULL,
                                   false,
                                   "Required value: a pod needs at least one container");
                xp_path_pop(&ctx->path);
                return r;
        }
        return check_unique_names(ctx, spec);
}

static const struct xp_field pod_security_context_fields[] = {
    RUN_AS_FIELDS,
    SECCOMP_PROFILE_FIELD,
};
static const struct xp_schema pod_security_context_schema =
    XP_SCHEMA(struct xp_security_context, "PodSecurityContext", pod_security_context_fields);

static const struct xp_field pod_spec_fields[] = {
    XP_FIELD("initContainers",
             XP_FT_STRUCT_LIST,
             struct xp_pod_spec,
             init_containers,
             .schema = &container_schema),
    XP_FIELD("containers",
             XP_FT_STRUCT_LIST,
             struct xp_pod_spec,
             containers,
             .flags = XP_FIELD_ALWAYS,
             .schema = &container_schema),
    XP_FIELD("restartPolicy",
             XP_FT_ENUM,
             struct xp_pod_spec,
             restart_policy,
             .enum_names = restart_policy_names),
    XP_FIELD("terminationGracePeriodSeconds",
             XP_FT_OPT_INT64,
             struct xp_pod_spec,
             termination_grace_period_seconds,
             .check = xp_check_opt_non_negative),
    XP_FIELD("activeDeadlineSeconds",
             XP_FT_OPT_INT64,
             struct xp_pod_spec,
             active_deadline_seconds,
             .check = check_active_deadline),
    XP_FIELD("nodeSelector",
             XP_FT_STRING_MAP,
             struct xp_pod_spec,
             node_selector,
             .check = check_node_selector),
    XP_FIELD(
        "nodeName", XP_FT_STRING, struct xp_pod_spec, node_name, .check = xp_check_subdomain_field),
    XP_FIELD("securityContext",
             XP_FT_STRUCT_PTR,
             struct xp_pod_spec,
             security_context,
             .schema = &pod_security_context_schema),
    XP_FIELD(
        "affinity", XP_FT_STRUCT_PTR, struct xp_pod_spec, affinity, .schema = &xp_affinity_schema),
    XP_FIELD("schedulerName", XP_FT_STRING, struct xp_pod_spec, scheduler_name),
    XP_FIELD("tolerations",
             XP_FT_STRUCT_LIST,
             struct xp_pod_spec,
             tolerations,
             .schema = &xp_toleration_schema),
    XP_FIELD("priorityClassName",
             XP_FT_STRING,
             struct xp_pod_spec,
             priority_class_name,
             .check = check_priority_class),
    XP_FIELD("priority", XP_FT_OPT_INT32, struct xp_pod_spec, priority),
};
static const struct xp_schema pod_spec_schema =
    XP_SCHEMA(struct xp_pod_spec, "PodSpec", pod_spec_fields, .validate = validate_pod_spec);

/* ---- status -------------------------------------------------------------------------------- */

static const struct xp_enum_name pod_phase_names[] = {
    {"Pending", XP_POD_PENDING},
    {"Running", XP_POD_RUNNING},
    {"Succeeded", XP_POD_SUCCEEDED},
    {"Failed", XP_POD_FAILED},
    {"Unknown", XP_POD_UNKNOWN},
    {NULL, 0},
};

static const struct xp_field waiting_fields[] = {
    XP_FIELD("reason", XP_FT_STRING, struct xp_container_state_waiting, reason),
    XP_FIELD("message", XP_FT_STRING, struct xp_container_state_waiting, message),
};
static const struct xp_schema waiting_schema =
    XP_SCHEMA(struct xp_container_state_waiting, "ContainerStateWaiting", waiting_fields);

static const struct xp_field running_fields[] = {
    XP_FIELD("startedAt", XP_FT_TIME, struct xp_container_state_running, started_at),
};
static const struct xp_schema running_schema =
    XP_SCHEMA(struct xp_container_state_running, "ContainerStateRunning", running_fields);

static const struct xp_field terminated_fields[] = {
    XP_FIELD("exitCode",
             XP_FT_INT32,
             struct xp_container_state_terminated,
             exit_code,
             .flags = XP_FIELD_ALWAYS),
    XP_FIELD("signal", XP_FT_INT32, struct xp_container_state_terminated, signal),
    XP_FIELD("reason", XP_FT_STRING, struct xp_container_state_terminated, reason),
    XP_FIELD("message", XP_FT_STRING, struct xp_container_state_terminated, message),
    XP_FIELD("startedAt", XP_FT_TIME, struct xp_container_state_terminated, started_at),
    XP_FIELD("finishedAt", XP_FT_TIME, struct xp_container_state_terminated, finished_at),
    XP_FIELD("containerID", XP_FT_STRING, struct xp_container_state_terminated, container_id),
};
static const struct xp_schema terminated_schema =
    XP_SCHEMA(struct xp_container_state_terminated, "ContainerStateTerminated", terminated_fields);

static const struct xp_field container_state_fields[] = {
    XP_FIELD(
        "waiting", XP_FT_STRUCT_PTR, struct xp_container_state, waiting, .schema = &waiting_schema),
    XP_FIELD(
        "running", XP_FT_STRUCT_PTR, struct xp_container_state, running, .schema = &running_schema),
    XP_FIELD("terminated",
             XP_FT_STRUCT_PTR,
             struct xp_container_state,
             terminated,
             .schema = &terminated_schema),
};
static const struct xp_schema container_state_schema =
    XP_SCHEMA(struct xp_container_state, "ContainerState", container_state_fields);

static const struct xp_field container_status_fields[] = {
    XP_FIELD("name", XP_FT_STRING, struct xp_container_status, name, .flags = XP_FIELD_REQUIRED),
    XP_FIELD("state",
             XP_FT_STRUCT,
             struct xp_container_status,
             state,
             .schema = &container_state_schema),
    XP_FIELD("lastState",
             XP_FT_STRUCT,
             struct xp_container_status,
             last_state,
             .flags = XP_FIELD_ALWAYS,
             .schema = &container_state_schema),
    XP_FIELD("ready", XP_FT_BOOL, struct xp_container_status, ready, .flags = XP_FIELD_ALWAYS),
    XP_FIELD("restartCount",
             XP_FT_INT32,
             struct xp_container_status,
             restart_count,
             .flags = XP_FIELD_ALWAYS,
             .check = xp_check_non_negative),
    XP_FIELD("image", XP_FT_STRING, struct xp_container_status, image),
    XP_FIELD("imageID", XP_FT_STRING, struct xp_container_status, image_id),
    XP_FIELD("containerID", XP_FT_STRING, struct xp_container_status, container_id),
    XP_FIELD("started", XP_FT_OPT_BOOL, struct xp_container_status, started),
};
static const struct xp_schema container_status_schema =
    XP_SCHEMA(struct xp_container_status, "ContainerStatus", container_status_fields);

static const struct xp_field pod_status_fields[] = {
    XP_FIELD("phase", XP_FT_ENUM, struct xp_pod_status, phase, .enum_names = pod_phase_names),
    XP_FIELD("conditions",
             XP_FT_STRUCT_LIST,
             struct xp_pod_status,
             conditions,
             .schema = &xp_pod_condition_schema),
    XP_FIELD("message", XP_FT_STRING, struct xp_pod_status, message),
    XP_FIELD("reason", XP_FT_STRING, struct xp_pod_status, reason),
    XP_FIELD("nominatedNodeName", XP_FT_STRING, struct xp_pod_status, nominated_node_name),
    XP_FIELD("hostIP", XP_FT_STRING, struct xp_pod_status, host_ip),
    XP_FIELD("podIP", XP_FT_STRING, struct xp_pod_status, pod_ip),
    XP_FIELD("startTime", XP_FT_TIME, struct xp_pod_status, start_time),
    XP_FIELD("initContainerStatuses",
             XP_FT_STRUCT_LIST,
             struct xp_pod_status,
             init_container_statuses,
             .schema = &container_status_schema),
    XP_FIELD("containerStatuses",
             XP_FT_STRUCT_LIST,
             struct xp_pod_status,
             container_statuses,
             .schema = &container_status_schema),
    XP_FIELD("qosClass", XP_FT_STRING, struct xp_pod_status, qos_class),
};
static const struct xp_schema pod_status_schema =
    XP_SCHEMA(struct xp_pod_status, "PodStatus", pod_status_fields);

/* ---- pod ----------------------------------------------------------------------------------- */

static const struct xp_field pod_fields[] = {
    XP_FIELD("metadata",
             XP_FT_STRUCT,
             struct xp_pod,
             metadata,
             .flags = XP_FIELD_REQUIRED | XP_FIELD_ALWAYS,
             .schema = &xp_object_meta_schema),
    XP_FIELD("spec",
             XP_FT_STRUCT,
             struct xp_pod,
             spec,
             .flags = XP_FIELD_REQUIRED | XP_FIELD_ALWAYS,
             .schema = &pod_spec_schema),
    XP_FIELD("status", XP_FT_STRUCT, struct xp_pod, status, .schema = &pod_status_schema),
};
const struct xp_schema xp_pod_schema = XP_SCHEMA(struct xp_pod, "Pod", pod_fields);

const char *xp_pod_phase_to_string(enum xp_pod_phase phase)
{
        return xp_enum_to_string(pod_phase_names, (int)phase);
}

int xp_pod_phase_from_string(const char *s)
{
        return xp_enum_from_string(pod_phase_names, s);
}

const char *xp_restart_policy_to_string(enum xp_restart_policy policy)
{
        return xp_enum_to_string(restart_policy_names, (int)policy);
}

int xp_restart_policy_from_string(const char *s)
{
        return xp_enum_from_string(restart_policy_names, s);
}
