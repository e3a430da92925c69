/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The containment model (include/runtime/xpool/contain.h): capability names and sets, the default
 * seccomp rules, the paths hidden from containers. Pure: the shim applies it (contain_child.c).
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xpool/contain.h"
#include "xpool/runtime.h"

static const char *const cap_names[XP_CAP_LAST + 1] = {
    [CAP_CHOWN] = "CAP_CHOWN",
    [CAP_DAC_OVERRIDE] = "CAP_DAC_OVERRIDE",
    [CAP_DAC_READ_SEARCH] = "CAP_DAC_READ_SEARCH",
    [CAP_FOWNER] = "CAP_FOWNER",
    [CAP_FSETID] = "CAP_FSETID",
    [CAP_KILL] = "CAP_KILL",
    [CAP_SETGID] = "CAP_SETGID",
    [CAP_SETUID] = "CAP_SETUID",
    [CAP_SETPCAP] = "CAP_SETPCAP",
    [CAP_LINUX_IMMUTABLE] = "CAP_LINUX_IMMUTABLE",
    [CAP_NET_BIND_SERVICE] = "CAP_NET_BIND_SERVICE",
    [CAP_NET_BROADCAST] = "CAP_NET_BROADCAST",
    [CAP_NET_ADMIN] = "CAP_NET_ADMIN",
    [CAP_NET_RAW] = "CAP_NET_RAW",
    [CAP_IPC_LOCK] = "CAP_IPC_LOCK",
    [CAP_IPC_OWNER] = "CAP_IPC_OWNER",
    [CAP_SYS_MODULE] = "CAP_SYS_MODULE",
    [CAP_SYS_RAWIO] = "CAP_SYS_RAWIO",
    [CAP_SYS_CHROOT] = "CAP_SYS_CHROOT",
    [CAP_SYS_PTRACE] = "CAP_SYS_PTRACE",
    [CAP_SYS_PACCT] = "CAP_SYS_PACCT",
    [CAP_SYS_ADMIN] = "CAP_SYS_ADMIN",
    [CAP_SYS_BOOT] = "CAP_SYS_BOOT",
    [CAP_SYS_NICE] = "CAP_SYS_NICE",
    [CAP_SYS_RESOURCE] = "CAP_SYS_RESOURCE",
    [CAP_SYS_TIME] = "CAP_SYS_TIME",
    [CAP_SYS_TTY_CONFIG] = "CAP_SYS_TTY_CONFIG",
    [CAP_MKNOD] = "CAP_MKNOD",
    [CAP_LEASE] = "CAP_LEASE",
    [CAP_AUDIT_WRITE] = "CAP_AUDIT_WRITE",
    [CAP_AUDIT_CONTROL] = "CAP_AUDIT_CONTROL",
    [CAP_SETFCAP] = "CAP_SETFCAP",
    [CAP_MAC_OVERRIDE] = "CAP_MAC_OVERRIDE",
    [CAP_MAC_ADMIN] = "CAP_MAC_ADMIN",
    [CAP_SYSLOG] = "CAP_SYSLOG",
    [CAP_WAKE_ALARM] = "CAP_WAKE_ALARM",
    [CAP_BLOCK_SUSPEND] = "CAP_BLOCK_SUSPEND",
    [CAP_AUDIT_READ] = "CAP_AUDIT_READ",
    [CAP_PERFMON] = "CAP_PERFMON",
    [CAP_BPF] = "CAP_BPF",
    [CAP_CHECKPOINT_RESTORE] = "CAP_CHECKPOINT_RESTORE",
};

_Static_assert(CAP_LAST_CAP >= XP_CAP_LAST, "the kernel headers know every capability named here");

struct xp_contain xp_contain_default(void)
{
        return (struct xp_contain){
            .caps = {.bounding = XP_CAP_DEFAULT,
                     .effective = XP_CAP_DEFAULT,
                     .permitted = XP_CAP_DEFAULT},
            .no_new_privs = true,
            .seccomp = true,
        };
}

int xp_cap_from_name(const char *name)
{
        if (!name)
                return -EINVAL;
        if (strncasecmp(name, "CAP_", 4) == 0)
                name += 4;
        for (int c = 0; c <= XP_CAP_LAST; c++)
                if (strcasecmp(name, cap_names[c] + 4) == 0)
                        return c;
        return -EINVAL;
}

const char *xp_cap_name(int cap)
{
        return cap >= 0 && cap <= XP_CAP_LAST ? cap_names[cap] : NULL;
}

static bool has_all(char *const *names, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (names[i] && strcasecmp(names[i], "ALL") == 0)
                        return true;
        return false;
}

/* Adds (or removes) each named capability except ALL. */
static int apply_names(char *const *names, size_t n, bool add, uint64_t *set, struct xp_error *err)
{
        for (size_t i = 0; i < n; i++) {
                int c;

                if (names[i] && strcasecmp(names[i], "ALL") == 0)
                        continue;
                c = xp_cap_from_name(names[i]);
                if (c < 0)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "%s[%zu]: unknown capability \"%s\" (names as CAP_NET_ADMIN without CAP_, or ALL)",
                            add ? "add" : "drop",
                            i,
                            names[i] ? names[i] : "");
                if (add)
                        *set |= XP_CAP_BIT(c);
                else
                        *set &= ~XP_CAP_BIT(c);
        }
        return 0;
}

int xp_caps_compute(bool privileged,
                    char *const *add,
                    size_t n_add,
                    char *const *drop,
                    size_t n_drop,
                    struct xp_caps *ret,
                    struct xp_error *err)
{
        uint64_t set = XP_CAP_DEFAULT;
        int r;

        if (privileged) {
                set = XP_CAP_ALL;
        } else {
                /* containerd's order: ALL first, so that "add ALL, drop X" works */
                if (has_all(add, n_add))
                        set = XP_CAP_ALL;
                if (has_all(drop, n_drop))
                        set = 0;
                r = apply_names(add, n_add, true, &set, err);
                if (r >= 0)
                        r = apply_names(drop, n_drop, false, &set, err);
                if (r < 0)
                        return r;
        }
        *ret = (struct xp_caps){.bounding = set, .effective = set, .permitted = set};
        return 0;
}

/* ---- seccomp rules -------------------------------------------------------------------------- */

#define ADMIN XP_CAP_BIT(CAP_SYS_ADMIN)

/*
 * Docker's default profile, as a list of what it refuses (it lists what it allows): the calls
 * that reach kernel state a container does not own (mounts, namespaces, modules, the clock, the
 * keyring, swap, accounting) or that bypass the filter's view (io_uring, clone3's flags in
 * memory). ptrace, process_vm_* and kcmp stay allowed as in Docker since Linux 4.8; mbind and
 * the other NUMA calls stay allowed: placing memory is what xpool's pods do, and cpuset.mems
 * bounds it.
 */
static const struct xp_seccomp_rule seccomp_rules[] = {
    /* mounts and namespaces */
    {"mount", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"umount", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"umount2", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"pivot_root", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"fsopen", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"fsconfig", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"fsmount", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"fspick", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"move_mount", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"open_tree", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"mount_setattr", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"unshare", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"setns", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"clone", ADMIN, XP_SECCOMP_NS_FLAGS, EPERM},
    /* its flags are in memory, out of the filter's sight: the C library falls back to clone */
    {"clone3", ADMIN, XP_SECCOMP_ALWAYS, ENOSYS},
    /* file handles open any inode of a file system, past the mount namespace */
    {"open_by_handle_at", XP_CAP_BIT(CAP_DAC_READ_SEARCH), XP_SECCOMP_ALWAYS, EPERM},
    {"name_to_handle_at", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    /* the kernel and the machine */
    {"kexec_load", XP_CAP_BIT(CAP_SYS_BOOT), XP_SECCOMP_ALWAYS, EPERM},
    {"kexec_file_load", XP_CAP_BIT(CAP_SYS_BOOT), XP_SECCOMP_ALWAYS, EPERM},
    {"reboot", XP_CAP_BIT(CAP_SYS_BOOT), XP_SECCOMP_ALWAYS, EPERM},
    {"init_module", XP_CAP_BIT(CAP_SYS_MODULE), XP_SECCOMP_ALWAYS, EPERM},
    {"finit_module", XP_CAP_BIT(CAP_SYS_MODULE), XP_SECCOMP_ALWAYS, EPERM},
    {"delete_module", XP_CAP_BIT(CAP_SYS_MODULE), XP_SECCOMP_ALWAYS, EPERM},
    {"create_module", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"query_module", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"get_kernel_syms", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"bpf", ADMIN | XP_CAP_BIT(CAP_BPF), XP_SECCOMP_ALWAYS, EPERM},
    {"perf_event_open", ADMIN | XP_CAP_BIT(CAP_PERFMON), XP_SECCOMP_ALWAYS, EPERM},
    {"lookup_dcookie", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"fanotify_init", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"quotactl", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"quotactl_fd", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"swapon", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"swapoff", ADMIN, XP_SECCOMP_ALWAYS, EPERM},
    {"acct", XP_CAP_BIT(CAP_SYS_PACCT), XP_SECCOMP_ALWAYS, EPERM},
    {"syslog", XP_CAP_BIT(CAP_SYSLOG), XP_SECCOMP_ALWAYS, EPERM},
    {"vhangup", XP_CAP_BIT(CAP_SYS_TTY_CONFIG), XP_SECCOMP_ALWAYS, EPERM},
    {"iopl", XP_CAP_BIT(CAP_SYS_RAWIO), XP_SECCOMP_ALWAYS, EPERM},
    {"ioperm", XP_CAP_BIT(CAP_SYS_RAWIO), XP_SECCOMP_ALWAYS, EPERM},
    /* the clock is the machine's */
    {"settimeofday", XP_CAP_BIT(CAP_SYS_TIME), XP_SECCOMP_ALWAYS, EPERM},
    {"clock_settime", XP_CAP_BIT(CAP_SYS_TIME), XP_SECCOMP_ALWAYS, EPERM},
    {"clock_adjtime", XP_CAP_BIT(CAP_SYS_TIME), XP_SECCOMP_ALWAYS, EPERM},
    {"stime", XP_CAP_BIT(CAP_SYS_TIME), XP_SECCOMP_ALWAYS, EPERM},
    /* the keyring is not namespaced */
    {"keyctl", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"add_key", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"request_key", 0, XP_SECCOMP_ALWAYS, EPERM},
    /* page faults handled in user space widen kernel races */
    {"userfaultfd", XP_CAP_BIT(CAP_SYS_PTRACE), XP_SECCOMP_ALWAYS, EPERM},
    /* io_uring's operations are not seen by seccomp */
    {"io_uring_setup", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"io_uring_enter", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"io_uring_register", 0, XP_SECCOMP_ALWAYS, EPERM},
    /* obsolete */
    {"nfsservctl", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"uselib", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"ustat", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"sysfs", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"_sysctl", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"vm86", 0, XP_SECCOMP_ALWAYS, EPERM},
    {"vm86old", 0, XP_SECCOMP_ALWAYS, EPERM},
};

const struct xp_seccomp_rule *xp_seccomp_rules(size_t *ret_n)
{
        *ret_n = XP_ELEMENTSOF(seccomp_rules);
        return seccomp_rules;
}

bool xp_seccomp_rule_applies(const struct xp_seccomp_rule *rule, uint64_t effective)
{
        return (rule->unless_caps & effective) == 0;
}

/* ---- paths ---------------------------------------------------------------------------------- */

const char *const xp_contain_masked_paths[] = {
    "/proc/acpi",
    "/proc/asound",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/sys/devices/virtual/powercap",
    "/sys/firmware",
    NULL,
};

const char *const xp_contain_readonly_paths[] = {
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
    NULL,
};

const char *const xp_contain_system_paths[] = {
    "/bin",
    "/boot",
    "/efi",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/sbin",
    "/usr",
    "/var/spool/cron",
    /* what root runs later: the package manager's maintainer scripts (at the next upgrade),
     * systemd's runtime units (at the next daemon-reload), udev's runtime rules (at once) */
    "/var/lib/dpkg",
    "/var/lib/rpm",
    "/run/systemd/system",
    "/run/systemd/transient",
    "/run/udev/rules.d",
    NULL,
};

const char *const xp_contain_node_sockets[] = {
    "/run/systemd/private",
    "/run/dbus/system_bus_socket",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/crio/crio.sock",
    "/run/podman/podman.sock",
    /* root is root to the daemons that trust a socket's peer credentials: every user's session
     * (its D-Bus, through which its systemd runs units as that user; ssh-agent, gpg-agent, a
     * rootless Podman), snapd (installs snaps) and libvirt (runs machines on the node's disks) */
    "/run/user",
    "/run/snapd.socket",
    "/run/libvirt",
    NULL,
};

const char *const xp_contain_node_credentials[] = {
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/kubernetes",
    /* the node's TLS, VPN, Wi-Fi and Kerberos keys */
    "/etc/ssl/private",
    "/etc/letsencrypt",
    "/etc/wireguard",
    "/etc/ipsec.secrets",
    "/etc/ipsec.d/private",
    "/etc/NetworkManager/system-connections",
    "/etc/krb5.keytab",
    "/root/.ssh",
    "/root/.kube",
    "/root/.docker",
    "/root/.config/containers",
    "/var/lib/kubelet/pki",
    NULL,
};

const char *const xp_contain_namespace_pins[] = {
    "/run/netns",
    XP_RUNTIME_RUN_DIR,
    NULL,
};

const char *const xp_contain_node_private[] = {
    "/var/log",
    "/var/lib",
    "/var/backups",
    "/var/spool",
    "/var/mail",
    "/root",
    "/home",
    NULL,
};

static int path_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether path is parent itself or below it. */
static bool under(const char *path, const char *parent)
{
        size_t n = strlen(parent);

        return strncmp(path, parent, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int xp_contain_hide_order(char **paths, size_t n, size_t *ret_n, struct xp_error *err)
{
        size_t kept = 0;

        for (size_t i = 0; i < n; i++) {
                size_t len = paths[i] ? strlen(paths[i]) : 0;

                if (len < 2 || paths[i][0] != '/' || paths[i][len - 1] == '/' ||
                    strstr(paths[i], "//") || strstr(paths[i], "/./") || strstr(paths[i], "/../") ||
                    strcmp(paths[i] + len - 2, "/.") == 0 ||
                    (len >= 3 && strcmp(paths[i] + len - 3, "/..") == 0))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "path to hide \"%s\": not an absolute, normalized path "
                                         "below /",
                                         paths[i] ? paths[i] : "");
        }
        if (n > 1)
                qsort(paths, n, sizeof(*paths), path_cmp);
        /* sorted, a parent comes before what is below it (not always right before: "/a-b"
         * sorts between "/a" and "/a/b") */
        for (size_t i = 0; i < n; i++) {
                bool hidden = false;
                char *p;

                for (size_t k = 0; k < kept && !hidden; k++)
                        hidden = under(paths[i], paths[k]);
                if (hidden)
                        continue;
                p = paths[kept];
                paths[kept++] = paths[i];
                paths[i] = p;
        }
        *ret_n = kept;
        return 0;
}
