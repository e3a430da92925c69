/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's securityContext, read as the kubelet and containerd read it: the user a container runs
 * as (runAsNonRoot checked with the kubelet's messages), its containment
 * (include/runtime/xpool/contain.h) and whether this node admits the pod at all (privileged pods,
 * limits on a degraded node).
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>

#include "launch.h"
#include "network.h"
#include "xpool/resource.h"

static const char *or_empty(const char *s)
{
        return s ? s : "";
}

/* The kubelet's format.Pod(): name_namespace(uid). */
static void pod_ref(const struct xp_pod *pod, char buf[static 320])
{
        snprintf(buf,
                 320,
                 "%s_%s(%s)",
                 or_empty(pod->metadata.name),
                 or_empty(pod->metadata.namespace),
                 or_empty(pod->metadata.uid));
}

int xp_launch_user(const struct xp_pod *pod,
                   const struct xp_container *c,
                   const char *cpath,
                   const struct xp_launch_policy *policy,
                   struct xp_launch *l,
                   struct xp_error *err)
{
        const struct xp_security_context *sc = c->security_context,
                                         *psc = pod->spec.security_context;
        struct xp_opt_int64 user = {0}, group = {0};
        struct xp_opt_bool non_root = {0};
        char ref[320];

        if (psc) {
                user = psc->run_as_user;
                group = psc->run_as_group;
                non_root = psc->run_as_non_root;
        }
        if (sc && sc->run_as_user.set)
                user = sc->run_as_user;
        if (sc && sc->run_as_group.set)
                group = sc->run_as_group;
        if (sc && sc->run_as_non_root.set)
                non_root = sc->run_as_non_root;
        if (group.set && !user.set)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s.securityContext.runAsGroup: needs runAsUser (xpool has no image to take the user from)",
                    cpath);
        pod_ref(pod, ref);
        /* the kubelet's verifyRunAsNonRoot(); without runAsUser the process runs as the agent */
        if (non_root.set && non_root.value && user.set && user.value == 0)
                return xp_errorf(
                    err,
                    -EPERM,
                    "container's runAsUser breaks non-root policy (pod: \"%s\", container: %s)",
                    ref,
                    or_empty(c->name));
        if (non_root.set && non_root.value && !user.set && (!policy || policy->default_uid == 0))
                return xp_errorf(
                    err,
                    -EPERM,
                    "container has runAsNonRoot and image will run as root (pod: \"%s\", container: %s)",
                    ref,
                    or_empty(c->name));
        if (user.set) {
                if (user.value < 0 || user.value > UINT32_MAX - 1 ||
                    (group.set && (group.value < 0 || group.value > UINT32_MAX - 1)))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "%s.securityContext: user or group id out of range",
                                         cpath);
                l->launch.set_user = true;
                l->launch.uid = (uid_t)user.value;
                l->launch.gid = (gid_t)(group.set ? group.value : user.value);
        }
        return 0;
}

static bool is_privileged(const struct xp_container *c)
{
        const struct xp_security_context *sc = c->security_context;

        return sc && sc->privileged.set && sc->privileged.value;
}

/* The seccomp profile in force: the container's, else the pod's; NULL: the node's default. */
static const struct xp_seccomp_profile *seccomp_of(const struct xp_pod *pod,
                                                   const struct xp_container *c)
{
        if (c->security_context && c->security_context->seccomp_profile)
                return c->security_context->seccomp_profile;
        return pod->spec.security_context ? pod->spec.security_context->seccomp_profile : NULL;
}

static int capabilities(const struct xp_container *c,
                        const char *cpath,
                        bool priv,
                        struct xp_contain *ret,
                        struct xp_error *err)
{
        const struct xp_capabilities *caps =
            c->security_context ? c->security_context->capabilities : NULL;
        int r = xp_caps_compute(priv,
                                caps ? caps->add.items : NULL,
                                caps ? caps->add.n : 0,
                                caps ? caps->drop.items : NULL,
                                caps ? caps->drop.n : 0,
                                &ret->caps,
                                err);

        if (r < 0)
                return xp_error_prefix(err, -EPERM, "%s.securityContext.capabilities", cpath);
        return 0;
}

/* allowPrivilegeEscalation: false beside what grants it anyway, refused as the API server does. */
static int check_escalation(const struct xp_container *c,
                            const char *cpath,
                            const struct xp_contain *contain,
                            struct xp_error *err)
{
        const struct xp_security_context *sc = c->security_context;
        bool no_escalation =
            sc && sc->allow_privilege_escalation.set && !sc->allow_privilege_escalation.value;

        if (no_escalation && contain->privileged)
                return xp_errorf(
                    err,
                    -EPERM,
                    "%s.securityContext.allowPrivilegeEscalation: Invalid value: false: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
                    cpath);
        if (no_escalation && (contain->caps.effective & XP_CAP_BIT(CAP_SYS_ADMIN)))
                return xp_errorf(
                    err,
                    -EPERM,
                    "%s.securityContext.allowPrivilegeEscalation: Invalid value: false: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                    cpath);
        return 0;
}

int xp_launch_contain(const struct xp_pod *pod,
                      const struct xp_container *c,
                      const char *cpath,
                      const struct xp_launch_policy *policy,
                      struct xp_launch *l,
                      struct xp_error *err)
{
        const struct xp_security_context *sc = c->security_context;
        const struct xp_seccomp_profile *seccomp = seccomp_of(pod, c);
        struct xp_contain contain = xp_contain_default();
        int r;

        contain.privileged = is_privileged(c);
        if (contain.privileged && !(policy && policy->allow_privileged))
                return xp_errorf(
                    err,
                    -EPERM,
                    "%s.securityContext.privileged: node %s does not allow privileged containers (its agent runs without --allow-privileged)",
                    cpath,
                    policy && policy->node_name ? policy->node_name : "");
        r = capabilities(c, cpath, contain.privileged, &contain, err);
        if (r >= 0)
                r = check_escalation(c, cpath, &contain, err);
        if (r < 0)
                return r;
        if (seccomp && seccomp->type == XP_SECCOMP_LOCALHOST)
                return xp_errorf(
                    err,
                    -EPERM,
                    "%s.securityContext.seccompProfile: type Localhost (\"%s\") is not supported by xpool's process runtime: use RuntimeDefault or Unconfined",
                    cpath,
                    or_empty(seccomp->localhost_profile));
        contain.seccomp =
            !contain.privileged && !(seccomp && seccomp->type == XP_SECCOMP_UNCONFINED);
        /* stricter than Kubernetes: escalation only when asked for (or privileged) */
        contain.no_new_privs = !contain.privileged && !(sc && sc->allow_privilege_escalation.set &&
                                                        sc->allow_privilege_escalation.value);
        contain.read_only_root =
            sc && sc->read_only_root_filesystem.set && sc->read_only_root_filesystem.value;
        l->contain = contain;
        l->launch.contain = &l->contain;
        return 0;
}

/* ---- admission ------------------------------------------------------------------------------ */

static bool has_limits(const struct xp_container *c)
{
        return xp_resource_list_get(&c->resources.limits, XP_RESOURCE_CPU) ||
               xp_resource_list_get(&c->resources.limits, XP_RESOURCE_MEMORY);
}

/* Calls check on every container, init ones first; the first refusal ends it. */
static int each_container(const struct xp_pod *pod,
                          const struct xp_launch_policy *policy,
                          int (*check)(const struct xp_container *,
                                       const char *cpath,
                                       const struct xp_launch_policy *,
                                       const char **,
                                       struct xp_error *),
                          const char **ret_reason,
                          struct xp_error *err)
{
        for (int pass = 0; pass < 2; pass++) {
                const struct xp_container *items =
                    pass ? pod->spec.containers.items : pod->spec.init_containers.items;
                size_t n = pass ? pod->spec.containers.n : pod->spec.init_containers.n;

                for (size_t i = 0; i < n; i++) {
                        char cpath[64];
                        int r;

                        snprintf(cpath,
                                 sizeof(cpath),
                                 "spec.%s[%zu]",
                                 pass ? "containers" : "initContainers",
                                 i);
                        r = check(&items[i], cpath, policy, ret_reason, err);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int admit_privileged(const struct xp_container *c,
                            const char *cpath,
                            const struct xp_launch_policy *policy,
                            const char **ret_reason,
                            struct xp_error *err)
{
        if (!is_privileged(c) || policy->allow_privileged)
                return 0;
        *ret_reason = "PrivilegedNotAllowed";
        return xp_errorf(
            err,
            -EPERM,
            "container %s (%s) asks for privileged: true, which node %s does not allow: its agent runs without --allow-privileged",
            or_empty(c->name),
            cpath,
            or_empty(policy->node_name));
}

static int admit_isolation(const struct xp_container *c,
                           const char *cpath,
                           const struct xp_launch_policy *policy,
                           const char **ret_reason,
                           struct xp_error *err)
{
        bool cgroups = policy->isolation & XP_ISOLATION_CGROUPS;
        bool devices = cgroups && (policy->isolation & XP_ISOLATION_DEVICES);
        const char *which = NULL, *missing = NULL;

        if (policy->allow_degraded_isolation)
                return 0;
        if (has_limits(c) && !cgroups)
                missing = "it cannot create cgroups, so the limits of";
        else if (xp_launch_requests_devices(c, &which) && !devices)
                missing = cgroups ? "it has no device filter, so the devices of"
                                  : "it cannot create cgroups, so the devices of";
        if (!missing)
                return 0;
        *ret_reason = "IsolationDegraded";
        return xp_errorf(
            err,
            -EPERM,
            "node %s cannot isolate this pod: %s container %s (%s%s%s) would not be enforced; start its agent with --allow-degraded-isolation to run such pods anyway",
            or_empty(policy->node_name),
            missing,
            or_empty(c->name),
            cpath,
            which ? ", " : "",
            which ? which : "");
}

/* A pod that is to have its own network, on a node that cannot give it one. */
static int admit_network(const struct xp_pod *pod,
                         const struct xp_launch_policy *policy,
                         const char **ret_reason,
                         struct xp_error *err)
{
        if (!policy->network_unavailable || policy->allow_degraded_isolation ||
            xp_agent_pod_host_network(pod))
                return 0;
        *ret_reason = "NetworkUnavailable";
        return xp_errorf(
            err,
            -EPERM,
            "node %s cannot give the pod a network of its own (%s); set hostNetwork: true to run it on the node's network, or start the agent with --allow-degraded-isolation to run such pods there anyway",
            or_empty(policy->node_name),
            policy->network_unavailable);
}

int xp_launch_admit(const struct xp_pod *pod,
                    const struct xp_launch_policy *policy,
                    const char **ret_reason,
                    struct xp_error *err)
{
        const struct xp_runtime_class *cls;
        int r = xp_launch_runtime_class(pod, policy, &cls, err);

        if (r < 0) {
                *ret_reason = "RuntimeClassNotFound";
                return -EPERM;
        }
        r = each_container(pod, policy, admit_privileged, ret_reason, err);

        if (r >= 0)
                r = each_container(pod, policy, admit_isolation, ret_reason, err);
        if (r >= 0)
                r = admit_network(pod, policy, ret_reason, err);
        return r;
}
