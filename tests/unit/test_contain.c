/* SPDX-License-Identifier: Apache-2.0 */
/* The containment model: capability names and sets, the seccomp rules, the paths to hide. */
#include <errno.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/contain_internal.h"
#include "xpool/contain.h"

static void cap_names(void **state)
{
        (void)state;
        assert_int_equal(xp_cap_from_name("NET_ADMIN"), CAP_NET_ADMIN);
        assert_int_equal(xp_cap_from_name("net_admin"), CAP_NET_ADMIN);
        assert_int_equal(xp_cap_from_name("CAP_SYS_ADMIN"), CAP_SYS_ADMIN);
        assert_int_equal(xp_cap_from_name("CHECKPOINT_RESTORE"), 40);
        assert_int_equal(xp_cap_from_name("ALL"), -EINVAL);
        assert_int_equal(xp_cap_from_name("NET_ADMINS"), -EINVAL);
        assert_int_equal(xp_cap_from_name(""), -EINVAL);
        assert_string_equal(xp_cap_name(CAP_CHOWN), "CAP_CHOWN");
        assert_string_equal(xp_cap_name(XP_CAP_LAST), "CAP_CHECKPOINT_RESTORE");
        assert_null(xp_cap_name(XP_CAP_LAST + 1));
        assert_null(xp_cap_name(-1));
        /* every name round-trips */
        for (int c = 0; c <= XP_CAP_LAST; c++)
                assert_int_equal(xp_cap_from_name(xp_cap_name(c)), c);
}

static uint64_t
caps_of(bool privileged, char *const *add, size_t n_add, char *const *drop, size_t n_drop)
{
        struct xp_caps caps = {0};
        struct xp_error err = {0};

        assert_int_equal(xp_caps_compute(privileged, add, n_add, drop, n_drop, &caps, &err), 0);
        assert_true(caps.bounding == caps.effective && caps.effective == caps.permitted);
        assert_int_equal(caps.inheritable, 0);
        assert_int_equal(caps.ambient, 0);
        return caps.effective;
}

static void cap_sets(void **state)
{
        char *all[] = {"ALL"}, *chown_[] = {"CHOWN"}, *admin[] = {"sys_admin", "NET_ADMIN"};
        char *bind[] = {"NET_BIND_SERVICE"}, *bad[] = {"CHOWN", "FLY"};
        struct xp_caps caps = {.effective = 7};
        struct xp_error err = {0};

        (void)state;
        /* Docker's default set, by its names */
        assert_true(caps_of(false, NULL, 0, NULL, 0) == XP_CAP_DEFAULT);
        assert_true(XP_CAP_DEFAULT ==
                    (XP_CAP_BIT(CAP_CHOWN) | XP_CAP_BIT(CAP_DAC_OVERRIDE) | XP_CAP_BIT(CAP_FSETID) |
                     XP_CAP_BIT(CAP_FOWNER) | XP_CAP_BIT(CAP_MKNOD) | XP_CAP_BIT(CAP_NET_RAW) |
                     XP_CAP_BIT(CAP_SETGID) | XP_CAP_BIT(CAP_SETUID) | XP_CAP_BIT(CAP_SETFCAP) |
                     XP_CAP_BIT(CAP_SETPCAP) | XP_CAP_BIT(CAP_NET_BIND_SERVICE) |
                     XP_CAP_BIT(CAP_SYS_CHROOT) | XP_CAP_BIT(CAP_KILL) |
                     XP_CAP_BIT(CAP_AUDIT_WRITE)));
        /* privileged: everything, add and drop ignored */
        assert_true(caps_of(true, NULL, 0, all, 1) == XP_CAP_ALL);
        /* drop ALL: nothing; then an add still counts (containerd's order) */
        assert_true(caps_of(false, NULL, 0, all, 1) == 0);
        assert_true(caps_of(false, bind, 1, all, 1) == XP_CAP_BIT(CAP_NET_BIND_SERVICE));
        /* add ALL, drop one */
        assert_true(caps_of(false, all, 1, chown_, 1) == (XP_CAP_ALL & ~XP_CAP_BIT(CAP_CHOWN)));
        /* names in any case */
        assert_true(caps_of(false, admin, 2, chown_, 1) ==
                    ((XP_CAP_DEFAULT | XP_CAP_BIT(CAP_SYS_ADMIN) | XP_CAP_BIT(CAP_NET_ADMIN)) &
                     ~XP_CAP_BIT(CAP_CHOWN)));
        /* an unknown name is refused, naming it, and changes nothing */
        assert_int_equal(xp_caps_compute(false, NULL, 0, bad, 2, &caps, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "drop[1]: unknown capability \"FLY\" (names as CAP_NET_ADMIN without CAP_, or ALL)");
        assert_int_equal(caps.effective, 7);
        assert_int_equal(xp_caps_compute(false, bad + 1, 1, NULL, 0, &caps, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "add[0]"));
}

static const struct xp_seccomp_rule *rule(const char *name)
{
        size_t n;
        const struct xp_seccomp_rule *rules = xp_seccomp_rules(&n);

        for (size_t i = 0; i < n; i++)
                if (strcmp(rules[i].syscall, name) == 0)
                        return &rules[i];
        return NULL;
}

static void seccomp_table(void **state)
{
        static const char *const refused[] = {
            "mount",        "umount2",         "pivot_root",
            "kexec_load",   "kexec_file_load", "init_module",
            "finit_module", "delete_module",   "bpf",
            "keyctl",       "add_key",         "request_key",
            "unshare",      "setns",           "swapon",
            "swapoff",      "reboot",          "acct",
            "settimeofday", "clock_settime",   "open_by_handle_at",
            "userfaultfd",  "syslog",          "quotactl",
            "iopl",         "ioperm",          "fsopen",
            "fsconfig",     "fsmount",         "fspick",
            "move_mount",   "open_tree",       "mount_setattr",
            "clone",        "clone3",
        };
        size_t n;
        const struct xp_seccomp_rule *rules = xp_seccomp_rules(&n);

        (void)state;
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                const struct xp_seccomp_rule *r = rule(refused[i]);

                if (!r)
                        fail_msg("%s is not in the table", refused[i]);
                /* the default set never lifts a rule */
                assert_true(xp_seccomp_rule_applies(r, XP_CAP_DEFAULT));
        }
        /* each name once; EPERM but for clone3 (ENOSYS: the C library falls back to clone) */
        for (size_t i = 0; i < n; i++) {
                for (size_t k = i + 1; k < n; k++)
                        assert_string_not_equal(rules[i].syscall, rules[k].syscall);
                assert_int_equal(rules[i].errno_value,
                                 strcmp(rules[i].syscall, "clone3") == 0 ? ENOSYS : EPERM);
        }
        assert_int_equal(rule("clone")->match, XP_SECCOMP_NS_FLAGS);
        assert_int_equal(rule("unshare")->match, XP_SECCOMP_ALWAYS);
        /* a capability the kernel checks anyway lifts its rules, as in Docker's profile */
        assert_false(xp_seccomp_rule_applies(rule("mount"), XP_CAP_BIT(CAP_SYS_ADMIN)));
        assert_false(xp_seccomp_rule_applies(rule("reboot"), XP_CAP_BIT(CAP_SYS_BOOT)));
        assert_false(xp_seccomp_rule_applies(rule("bpf"), XP_CAP_BIT(CAP_BPF)));
        assert_true(xp_seccomp_rule_applies(rule("reboot"), XP_CAP_BIT(CAP_SYS_ADMIN)));
        /* the keyring is not namespaced: never */
        assert_true(xp_seccomp_rule_applies(rule("keyctl"), XP_CAP_ALL));
        /* what Docker allows stays allowed */
        assert_null(rule("ptrace"));
        assert_null(rule("mbind"));
        assert_null(rule("chroot"));
}

static void seccomp_program(void **state)
{
        struct xp_error err = {0};
        void *prog = NULL, *admin = NULL;
        size_t len = 0, admin_len = 0;

        (void)state;
        assert_int_equal(xp_seccomp_build(XP_CAP_DEFAULT, &prog, &len, &err), 0);
        assert_non_null(prog);
        assert_true(len > 10 && len <= BPF_MAXINSNS);
        /* with CAP_SYS_ADMIN the mount and namespace rules go: a shorter program */
        assert_int_equal(
            xp_seccomp_build(XP_CAP_DEFAULT | XP_CAP_BIT(CAP_SYS_ADMIN), &admin, &admin_len, &err),
            0);
        assert_true(admin_len < len);
        free(prog);
        free(admin);
}

static void hide_order(void **state)
{
        char *paths[] = {strdup("/var/lib/xpool/agent/logs"),
                         strdup("/var/lib/xpool-b"),
                         strdup("/var/lib/xpool"),
                         strdup("/etc/xpool/node.token"),
                         strdup("/var/lib/xpool/agent"),
                         strdup("/etc/xpool/node.token")};
        char *bad[] = {strdup("relative/path"), strdup("/"), strdup("/a/../b"), strdup("/a/")};
        struct xp_error err = {0};
        size_t n = 0;

        (void)state;
        assert_int_equal(xp_contain_hide_order(paths, 6, &n, &err), 0);
        assert_int_equal(n, 3);
        assert_string_equal(paths[0], "/etc/xpool/node.token");
        assert_string_equal(paths[1], "/var/lib/xpool");
        assert_string_equal(paths[2], "/var/lib/xpool-b");
        for (size_t i = 0; i < 4; i++) {
                n = 99;
                assert_int_equal(xp_contain_hide_order(bad + i, 1, &n, &err), -EINVAL);
                assert_non_null(strstr(err.msg, bad[i]));
                assert_int_equal(n, 99);
        }
        for (size_t i = 0; i < 6; i++)
                free(paths[i]);
        for (size_t i = 0; i < 4; i++)
                free(bad[i]);
}

static void default_containment(void **state)
{
        struct xp_contain c = xp_contain_default();

        (void)state;
        assert_false(c.privileged);
        assert_true(c.no_new_privs);
        assert_true(c.seccomp);
        assert_false(c.read_only_root);
        assert_true(c.caps.effective == XP_CAP_DEFAULT && c.caps.bounding == XP_CAP_DEFAULT);
        assert_int_equal(c.caps.inheritable | c.caps.ambient, 0);
        /* OCI's lists */
        assert_string_equal(xp_contain_readonly_paths[3], "/proc/sys");
        assert_non_null(xp_contain_masked_paths[0]);
}

/* A root of its own needs mount_setattr (Linux 5.12) to turn the node's entries read-only: a
 * kernel without it refuses the start rather than leave them writable. */
static void own_root_needs_mount_setattr(void **state)
{
        (void)state;
        assert_true(contain_own_root_refused(ENOSYS));
        assert_false(contain_own_root_refused(EBADF));
        assert_false(contain_own_root_refused(EINVAL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(cap_names),
            cmocka_unit_test(cap_sets),
            cmocka_unit_test(seccomp_table),
            cmocka_unit_test(seccomp_program),
            cmocka_unit_test(hide_order),
            cmocka_unit_test(default_containment),
            cmocka_unit_test(own_root_needs_mount_setattr),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
