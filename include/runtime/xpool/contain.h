/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * How one container is contained: the model the process runtime applies between fork and exec,
 * laid out as an OCI runtime spec has it, so that the OCI runtime can be given the same:
 *
 *   struct xp_contain        OCI runtime spec
 *   privileged               no masked or read-only paths, every device, no seccomp
 *   caps                     process.capabilities (bounding, effective, permitted, inheritable,
 *                            ambient)
 *   no_new_privs             process.noNewPrivileges
 *   read_only_root           root.readonly
 *   seccomp                  linux.seccomp: defaultAction SCMP_ACT_ALLOW, one SCMP_ACT_ERRNO entry
 *                            per xp_seccomp_rules() row that applies (xp_seccomp_rule_applies())
 *   netns                    linux.namespaces network with its path (the pod's, made by the
 *                            agent: include/xpool/podnet.h); NULL: none (the node's network)
 *   (the runtime's own)      linux.namespaces pid, mount, cgroup; linux.maskedPaths
 *                            (xp_contain_masked_paths and the node's secrets, see runtime.h);
 *                            linux.readonlyPaths (xp_contain_readonly_paths)
 *
 * docs/security.md ("Threat model") says what each setting keeps a pod from doing. Pure apart
 * from xp_seccomp_build(), which compiles the filter with libseccomp.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

/* The highest capability this table knows (CAP_CHECKPOINT_RESTORE, Linux 5.9). */
#define XP_CAP_LAST   40
#define XP_CAP_BIT(c) (UINT64_C(1) << (c))
#define XP_CAP_ALL    (XP_CAP_BIT(XP_CAP_LAST + 1) - 1)

/*
 * Docker's and containerd's default set: CHOWN, DAC_OVERRIDE, FSETID, FOWNER, MKNOD, NET_RAW,
 * SETGID, SETUID, SETFCAP, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, KILL, AUDIT_WRITE
 * (0x00000000a80425fb).
 */
#define XP_CAP_DEFAULT UINT64_C(0x00000000a80425fb)

/* The five capability sets of a process (bit c: capability c). */
struct xp_caps {
        uint64_t bounding, effective, permitted, inheritable, ambient;
};

struct xp_contain {
        bool privileged;
        struct xp_caps caps;
        bool no_new_privs;
        bool read_only_root;
        bool seccomp; /* the runtime's default filter (RuntimeDefault); false: Unconfined */
        /* the network namespace to join, a bind mount of it (the pod's); NULL: the node's own
         * network (hostNetwork). Borrowed: it must outlive the start. */
        const char *netns;
};

/* The default containment: XP_CAP_DEFAULT, no_new_privs, seccomp, root writable. */
struct xp_contain xp_contain_default(void);

/*
 * The capability named as Kubernetes names them ("NET_ADMIN"; any case, "CAP_" accepted), or
 * -EINVAL. "ALL" is not a capability: xp_caps_compute() handles it.
 */
int xp_cap_from_name(const char *name);
/* "CAP_NET_ADMIN" for a capability up to XP_CAP_LAST, else NULL. */
const char *xp_cap_name(int cap);

/*
 * The sets of a container as containerd computes them from a securityContext: privileged gives
 * every capability (add and drop ignored); else the default set, every capability when add
 * holds ALL, none when drop holds ALL, then each named add, then each named drop. Bounding,
 * effective and permitted get the result; inheritable and ambient stay empty (containerd and
 * Docker since CVE-2022-24769; Kubernetes clears ambient, so a non-root process has no
 * capability after exec). -EINVAL naming the unknown capability ("add[1]: ...").
 */
int xp_caps_compute(bool privileged,
                    char *const *add,
                    size_t n_add,
                    char *const *drop,
                    size_t n_drop,
                    struct xp_caps *ret,
                    struct xp_error *err);

/* ---- seccomp -------------------------------------------------------------------------------- */

/* Which arguments a rule looks at. */
enum xp_seccomp_match {
        XP_SECCOMP_ALWAYS,   /* every call */
        XP_SECCOMP_NS_FLAGS, /* clone: only when its flags ask for a new namespace */
};

/*
 * One call the default filter refuses: with errno_value (EPERM; ENOSYS where the C library falls
 * back to an older call the filter can inspect), unless the container has one of the
 * capabilities unless_caps (0: always refused), as Docker's default profile allows those calls
 * to containers given the capability the kernel checks anyway.
 */
struct xp_seccomp_rule {
        const char *syscall;
        uint64_t unless_caps;
        enum xp_seccomp_match match;
        int errno_value;
};

/* The table, in a static array. */
const struct xp_seccomp_rule *xp_seccomp_rules(size_t *ret_n);
/* Whether the rule refuses the call to a container whose effective set is effective. */
bool xp_seccomp_rule_applies(const struct xp_seccomp_rule *rule, uint64_t effective);

/*
 * The default filter for a container whose effective set is effective, compiled for this
 * machine's architecture and its compat ones (x86 and x32 beside x86_64, arm beside aarch64),
 * as the classic BPF program prctl(PR_SET_SECCOMP) loads: *ret (caller frees) holds *ret_len
 * struct sock_filter instructions. Calls this libseccomp does not know are left out.
 * -errno with err.
 */
int xp_seccomp_build(uint64_t effective, void **ret, size_t *ret_len, struct xp_error *err);

/* ---- paths ---------------------------------------------------------------------------------- */

/* OCI's default masked paths (NULL-terminated): empty and read-only in a container. */
extern const char *const xp_contain_masked_paths[];
/* OCI's default read-only paths (NULL-terminated). */
extern const char *const xp_contain_readonly_paths[];
/*
 * The node's programs and configuration, read-only in every container but a privileged one (as
 * systemd's ProtectSystem=full, and cron's spool): a file written there is code the node runs
 * as root (NULL-terminated).
 */
extern const char *const xp_contain_system_paths[];
/*
 * The node's control sockets, hidden from every container as the secrets are: root on any of
 * them is root on the node (systemd, D-Bus, container engines). NULL-terminated.
 */
extern const char *const xp_contain_node_sockets[];
/*
 * The node's own credentials at their usual places, hidden from every container as the agent's
 * are: password hashes, SSH host and user keys, TLS, VPN, Wi-Fi and Kerberos keys, the
 * kubeconfigs and registry logins in root's home. NULL-terminated.
 */
extern const char *const xp_contain_node_credentials[];

/*
 * Where the node pins namespaces (iproute2's /run/netns, the agents' XP_RUNTIME_RUN_DIR): a
 * listing there names every other pod of the node, and opening a pin is joining that pod's
 * network or IPC. Hidden from every container as the secrets are. NULL-terminated.
 */
extern const char *const xp_contain_namespace_pins[];
/*
 * The node's private data: its logs, its daemons' state, backups, spools, mail and its users'
 * homes. An empty directory in a process container's view unless a volume or a share (--share)
 * lies at, below or above one (a log shipper's hostPath /var/log), and in a privileged one,
 * which sees the node as it is. NULL-terminated.
 */
extern const char *const xp_contain_node_private[];

/*
 * Orders paths to hide for mounting: sorted, duplicates and paths below another one left out
 * (hiding the parent hides them). Paths must be absolute and not "/": -EINVAL naming the path.
 * Reorders paths in place; *ret_n is how many of the first are kept.
 */
int xp_contain_hide_order(char **paths, size_t n, size_t *ret_n, struct xp_error *err);
