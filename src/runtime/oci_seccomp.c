/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtime/default seccomp profile as OCI seccomp JSON: the process runtime's rule table
 * (src/runtime/contain.c, xp_seccomp_rules()) written for the OCI runtime, so both runtimes refuse
 * the same calls with the same errors, and a rule is lifted for a container that holds the
 * capability the call needs anyway, as in Docker.
 */
#include <errno.h>
#include <seccomp.h>

#include "oci_internal.h"
#include "xpool/contain.h"

/* The flags that ask clone for a new namespace (as the process runtime's filter). */
static const unsigned long ns_flags[] = {
    0x00020000, /* CLONE_NEWNS */
    0x02000000, /* CLONE_NEWCGROUP */
    0x04000000, /* CLONE_NEWUTS */
    0x08000000, /* CLONE_NEWIPC */
    0x10000000, /* CLONE_NEWUSER */
    0x20000000, /* CLONE_NEWPID */
    0x40000000, /* CLONE_NEWNET */
};

/* This machine's architecture and its compat ones, which must be filtered too. */
static json_t *architectures(void)
{
#if defined(__x86_64__)
        return json_pack("[s, s, s]", "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32");
#elif defined(__aarch64__)
        return json_pack("[s, s]", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM");
#else
        return json_array(); /* the runtime's native architecture */
#endif
}

/* The entry refusing names with errno_value, created when first needed. */
static json_t *errno_entry(json_t *syscalls, int errno_value)
{
        json_t *e;
        size_t i;

        json_array_foreach(syscalls, i, e)
        {
                if (!json_object_get(e, "args") &&
                    json_integer_value(json_object_get(e, "errnoRet")) == errno_value)
                        return json_object_get(e, "names");
        }
        e = json_pack(
            "{s:[], s:s, s:i}", "names", "action", "SCMP_ACT_ERRNO", "errnoRet", errno_value);
        if (!e || json_array_append_new(syscalls, e) < 0)
                return NULL;
        return json_object_get(e, "names");
}

/* One entry per namespace flag: seccomp ORs the entries and ANDs the arguments of one. */
static int add_ns_flags(json_t *syscalls, const struct xp_seccomp_rule *rule)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(ns_flags); i++) {
                json_t *e = json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:I, s:s}]}",
                                      "names",
                                      rule->syscall,
                                      "action",
                                      "SCMP_ACT_ERRNO",
                                      "errnoRet",
                                      rule->errno_value,
                                      "args",
                                      "index",
                                      0,
                                      "value",
                                      (json_int_t)ns_flags[i],
                                      "valueTwo",
                                      (json_int_t)ns_flags[i],
                                      "op",
                                      "SCMP_CMP_MASKED_EQ");

                if (!e || json_array_append_new(syscalls, e) < 0)
                        return -ENOMEM;
        }
        return 0;
}

json_t *oci_seccomp_json(uint64_t effective)
{
        json_t *syscalls = json_array();
        json_t *o = json_pack("{s:s, s:o, s:o}",
                              "defaultAction",
                              "SCMP_ACT_ALLOW",
                              "architectures",
                              architectures(),
                              "syscalls",
                              syscalls);
        const struct xp_seccomp_rule *rules;
        size_t n;

        if (!o)
                return NULL;
        rules = xp_seccomp_rules(&n);
        for (size_t i = 0; i < n; i++) {
                json_t *names;

                /* a call newer than this libseccomp: nothing calls it by that name yet (and the
                 * runtime's libseccomp would only warn about it) */
                if (!xp_seccomp_rule_applies(&rules[i], effective) ||
                    seccomp_syscall_resolve_name(rules[i].syscall) == __NR_SCMP_ERROR)
                        continue;
                if (rules[i].match == XP_SECCOMP_NS_FLAGS) {
                        if (add_ns_flags(syscalls, &rules[i]) < 0)
                                goto fail;
                        continue;
                }
                names = errno_entry(syscalls, rules[i].errno_value);
                if (!names || json_array_append_new(names, json_string(rules[i].syscall)) < 0)
                        goto fail;
        }
        return o;
fail:
        json_decref(o);
        return NULL;
}
