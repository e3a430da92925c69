/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device isolation on cgroup v2, where there is no devices controller: a program of type
 * BPF_PROG_TYPE_CGROUP_DEVICE attached to the group. The kernel runs it whenever a process of
 * the group opens or creates a device node (on hybrid machines beside the v1 devices cgroup);
 * returning 0 denies with EPERM. It is a handful of instructions, so it is assembled here, with
 * neither a compiler nor libbpf:
 *
 *   r2 = ctx->access_type; r3 = r2; r2 &= 0xffff (device type); r3 >>= 16 (access asked)
 *   r4 = ctx->major; r5 = ctx->minor
 *   per allowed device: if type, major and minor match (XP_CGROUP_DEVICE_ANY: any) and the access
 *   asked is a subset of the allowed one, return 1
 *   return 0
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup_internal.h"

#define HEADER_INSNS     6 /* the loads and shifts before the first device */
#define INSNS_PER_DEVICE 8 /* with both major and minor checked */
#define FOOTER_INSNS     2 /* return 0 */

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
        return (struct bpf_insn){
            .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

static int sys_bpf(int cmd, union bpf_attr *attr)
{
        return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static int access_bits(const char *access)
{
        int bits = 0;

        for (const char *p = access; *p; p++)
                bits |= *p == 'r'   ? BPF_DEVCG_ACC_READ
                        : *p == 'w' ? BPF_DEVCG_ACC_WRITE
                        : *p == 'm' ? BPF_DEVCG_ACC_MKNOD
                                    : 0;
        return bits;
}

int cgroup_bpf_device_program(const struct xp_cgroup_device *devices,
                              size_t n,
                              struct bpf_insn **ret,
                              size_t *ret_n,
                              struct xp_error *err)
{
        struct bpf_insn *p, *v;

        if (n > 4096)
                return xp_errorf(err, -E2BIG, "device program: %zu devices, at most 4096", n);
        v = calloc(HEADER_INSNS + n * INSNS_PER_DEVICE + FOOTER_INSNS, sizeof(*v));
        if (!v)
                return xp_errorf(err, -ENOMEM, "device program: out of memory");
        p = v;
        *p++ = insn(
            BPF_LDX | BPF_W | BPF_MEM, 2, 1, offsetof(struct bpf_cgroup_dev_ctx, access_type), 0);
        *p++ = insn(BPF_ALU64 | BPF_MOV | BPF_X, 3, 2, 0, 0);
        *p++ = insn(BPF_ALU64 | BPF_AND | BPF_K, 2, 0, 0, 0xffff);
        *p++ = insn(BPF_ALU64 | BPF_RSH | BPF_K, 3, 0, 0, 16);
        *p++ = insn(BPF_LDX | BPF_W | BPF_MEM, 4, 1, offsetof(struct bpf_cgroup_dev_ctx, major), 0);
        *p++ = insn(BPF_LDX | BPF_W | BPF_MEM, 5, 1, offsetof(struct bpf_cgroup_dev_ctx, minor), 0);
        for (size_t i = 0; i < n; i++) {
                const struct xp_cgroup_device *d = &devices[i];
                int type = d->type == 'c'   ? BPF_DEVCG_DEV_CHAR
                           : d->type == 'b' ? BPF_DEVCG_DEV_BLOCK
                                            : 0;
                int allowed = access_bits(d->access);

                if (!type || !allowed ||
                    (d->major > INT32_MAX && d->major != XP_CGROUP_DEVICE_ANY) ||
                    (d->minor > INT32_MAX && d->minor != XP_CGROUP_DEVICE_ANY)) {
                        free(v);
                        return xp_errorf(err,
                                         -EINVAL,
                                         "device program: device %zu (%c %u:%u %s) is not valid",
                                         i,
                                         d->type ? d->type : '?',
                                         d->major,
                                         d->minor,
                                         d->access);
                }
                bool any_major = d->major == XP_CGROUP_DEVICE_ANY;
                bool any_minor = d->minor == XP_CGROUP_DEVICE_ANY;
                /* each jump skips to the next device's block: offsets count from the next insn */
                int16_t len = (int16_t)(INSNS_PER_DEVICE - any_major - any_minor), k = 0;

                *p++ = insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, (int16_t)(len - 1 - k++), type);
                if (!any_major)
                        *p++ = insn(BPF_JMP | BPF_JNE | BPF_K,
                                    4,
                                    0,
                                    (int16_t)(len - 1 - k++),
                                    (int32_t)d->major);
                if (!any_minor)
                        *p++ = insn(BPF_JMP | BPF_JNE | BPF_K,
                                    5,
                                    0,
                                    (int16_t)(len - 1 - k++),
                                    (int32_t)d->minor);
                *p++ = insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 3, 0, 0);
                *p++ = insn(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, ~allowed & 7);
                *p++ = insn(BPF_JMP | BPF_JNE | BPF_K, 1, 0, 2, 0);
                *p++ = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1);
                *p++ = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        }
        *p++ = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
        *p++ = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        *ret = v;
        *ret_n = (size_t)(p - v);
        return 0;
}

static int load_with_log(const struct bpf_insn *insns, size_t n, char *log, size_t log_size)
{
        union bpf_attr attr = {
            .prog_type = BPF_PROG_TYPE_CGROUP_DEVICE,
            .insns = (uint64_t)(uintptr_t)insns,
            .insn_cnt = (uint32_t)n,
            .license = (uint64_t)(uintptr_t) "Apache-2.0",
            .log_buf = (uint64_t)(uintptr_t)log,
            .log_size = (uint32_t)log_size,
            .log_level = log ? 1 : 0,
        };

        return sys_bpf(BPF_PROG_LOAD, &attr);
}

/* Loads the program; -EOPNOTSUPP when the kernel or our privileges do not allow it. */
static int load(const struct bpf_insn *insns, size_t n, struct xp_error *err)
{
        char log[4096] = "";
        int fd = load_with_log(insns, n, NULL, 0), e = errno;

        if (fd >= 0)
                return fd;
        if (e == EPERM || e == ENOSYS)
                return xp_errorf(err,
                                 -EOPNOTSUPP,
                                 "loading the cgroup device program: %s (needs CAP_BPF or root)",
                                 strerror(e));
        /* again with the verifier's log, to say why (its end fits; a longer one is cut) */
        fd = load_with_log(insns, n, log, sizeof(log));
        if (fd >= 0)
                return fd;
        log[sizeof(log) - 1] = '\0';
        log[strcspn(log, "\n")] = '\0';
        return xp_errorf(err,
                         -e,
                         "loading the cgroup device program: %s%s%s",
                         strerror(e),
                         *log ? ": " : "",
                         log);
}

int cgroup_bpf_probe(struct xp_error *err)
{
        static const struct bpf_insn deny_all[] = {
            {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
            {.code = BPF_JMP | BPF_EXIT},
        };
        int fd = load(deny_all, 2, err);

        if (fd < 0)
                return fd;
        close(fd);
        return 0;
}

int cgroup_bpf_restrict_devices(int group_fd,
                                const char *group,
                                const struct xp_cgroup_device *devices,
                                size_t n,
                                struct xp_error *err)
{
        struct bpf_insn *insns = NULL;
        size_t n_insns = 0;
        int prog, r;

        r = cgroup_bpf_device_program(devices, n, &insns, &n_insns, err);
        if (r < 0)
                return r;
        prog = load(insns, n_insns, err);
        free(insns);
        if (prog < 0)
                return prog;
        /* ALLOW_MULTI: the programs of the ancestors (systemd's) run as well; all must allow */
        union bpf_attr attr = {
            .target_fd = (uint32_t)group_fd,
            .attach_bpf_fd = (uint32_t)prog,
            .attach_type = BPF_CGROUP_DEVICE,
            .attach_flags = BPF_F_ALLOW_MULTI,
        };

        r = sys_bpf(BPF_PROG_ATTACH, &attr) < 0 ? -errno : 0;
        /* the group holds the program now; it goes with the group */
        close(prog);
        if (r < 0)
                return xp_errorf(
                    err, r, "cgroup %s: attaching the device program: %s", group, strerror(-r));
        return 0;
}
