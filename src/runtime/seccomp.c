/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The default seccomp filter compiled with libseccomp, before the shim forks: the child only
 * loads the program (one system call), so nothing between fork and exec allocates.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/contain.h"

/* The flags that ask clone for a new namespace. */
static const unsigned long ns_flags[] = {
    0x00020000, /* CLONE_NEWNS */
    0x02000000, /* CLONE_NEWCGROUP */
    0x04000000, /* CLONE_NEWUTS */
    0x08000000, /* CLONE_NEWIPC */
    0x10000000, /* CLONE_NEWUSER */
    0x20000000, /* CLONE_NEWPID */
    0x40000000, /* CLONE_NEWNET */
};

static void ctx_releasep(scmp_filter_ctx *ctx)
{
        if (*ctx)
                seccomp_release(*ctx);
}

/* The compat architectures whose system calls the filter must see too (else they bypass it). */
static int add_arches(scmp_filter_ctx ctx)
{
        uint32_t native = seccomp_arch_native();
        uint32_t extra[2] = {0, 0};

        if (native == SCMP_ARCH_X86_64) {
                extra[0] = SCMP_ARCH_X86;
                extra[1] = SCMP_ARCH_X32;
        } else if (native == SCMP_ARCH_AARCH64) {
                extra[0] = SCMP_ARCH_ARM;
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(extra); i++) {
                int r = extra[i] ? seccomp_arch_add(ctx, extra[i]) : 0;

                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

static int add_rule(scmp_filter_ctx ctx, const struct xp_seccomp_rule *rule, struct xp_error *err)
{
        int nr = seccomp_syscall_resolve_name(rule->syscall);
        uint32_t action = SCMP_ACT_ERRNO((uint32_t)rule->errno_value);
        int r = 0;

        if (nr == __NR_SCMP_ERROR)
                return 0; /* newer than this libseccomp: nothing calls it by that name yet */
        if (rule->match == XP_SECCOMP_ALWAYS)
                r = seccomp_rule_add(ctx, action, nr, 0);
        for (size_t i = 0;
             r >= 0 && rule->match == XP_SECCOMP_NS_FLAGS && i < XP_ELEMENTSOF(ns_flags);
             i++)
                r = seccomp_rule_add(
                    ctx, action, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
        /* a call this architecture lacks (vm86 on x86_64) has a negative pseudo number */
        if (r < 0 && nr < 0)
                return 0;
        if (r < 0)
                return xp_errorf(
                    err, r, "seccomp: the rule for %s: %s", rule->syscall, strerror(-r));
        return 0;
}

/* The compiled program, read back from libseccomp's export. */
static int export_program(scmp_filter_ctx ctx, void **ret, size_t *ret_len, struct xp_error *err)
{
        _cleanup_close_ int fd = memfd_create("xpool-seccomp", MFD_CLOEXEC);
        _cleanup_free_ void *prog = NULL;
        struct stat st;
        ssize_t n;
        int r;

        if (fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "seccomp: memfd_create: %s", strerror(-r));
        }
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return xp_errorf(err, r, "seccomp: exporting the filter: %s", strerror(-r));
        if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
            st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
            st.st_size > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
                return xp_errorf(err, -EIO, "seccomp: the exported filter has a bad size");
        prog = malloc((size_t)st.st_size);
        if (!prog)
                return xp_errorf(err, -ENOMEM, "seccomp: out of memory");
        n = pread(fd, prog, (size_t)st.st_size, 0);
        if (n != st.st_size)
                return xp_errorf(err, -EIO, "seccomp: reading the exported filter back failed");
        *ret = TAKE_PTR(prog);
        *ret_len = (size_t)st.st_size / sizeof(struct sock_filter);
        return 0;
}

int xp_seccomp_build(uint64_t effective, void **ret, size_t *ret_len, struct xp_error *err)
{
        _cleanup_(ctx_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        const struct xp_seccomp_rule *rules;
        size_t n;
        int r;

        if (!ctx)
                return xp_errorf(err, -ENOMEM, "seccomp: out of memory");
        /* we set no_new_privs ourselves, when the container asks for it */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r >= 0)
                r = add_arches(ctx);
        if (r < 0)
                return xp_errorf(err, r, "seccomp: setting up the filter: %s", strerror(-r));
        rules = xp_seccomp_rules(&n);
        for (size_t i = 0; i < n; i++) {
                if (!xp_seccomp_rule_applies(&rules[i], effective))
                        continue;
                r = add_rule(ctx, &rules[i], err);
                if (r < 0)
                        return r;
        }
        return export_program(ctx, ret, ret_len, err);
}
