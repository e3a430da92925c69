/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool's default AppArmor profile for OCI containers, loaded where AppArmor is enabled: the
 * mandatory access control the seed asks for on compute containers. It allows what the
 * capability set and the seccomp filter leave a container, and denies what neither can say by
 * path: writing the kernel's knobs under /proc and /sys, reading kernel memory, mounting.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci_internal.h"
#include "runtime_internal.h"
#include "xpool/atomic_file.h"
#include "xpool/fileio.h"

extern char **environ;

#define PARSERS "/usr/sbin/apparmor_parser", "/sbin/apparmor_parser"

static const char profile[] =
    "# xpool's default profile for OCI containers (docs/containers.md), written by the agent.\n"
    "#include <tunables/global>\n"
    "\n"
    "profile " OCI_APPARMOR_PROFILE " flags=(attach_disconnected,mediate_deleted) {\n"
    "  #include <abstractions/base>\n"
    "\n"
    "  network,\n"
    "  capability,\n"
    "  file,\n"
    "  umount,\n"
    "\n"
    "  # signals and tracing stay among the containers this profile confines\n"
    "  signal (receive) peer=unconfined,\n"
    "  signal (send,receive) peer=" OCI_APPARMOR_PROFILE ",\n"
    "  ptrace (trace,read,tracedby,readby) peer=" OCI_APPARMOR_PROFILE ",\n"
    "\n"
    "  # no mounts, whatever the capabilities say\n"
    "  deny mount,\n"
    "  deny pivot_root,\n"
    "\n"
    "  # the kernel's knobs and memory\n"
    "  deny @{PROC}/sys/** wklx,\n"
    "  deny @{PROC}/sysrq-trigger rwklx,\n"
    "  deny @{PROC}/kcore rwklx,\n"
    "  deny @{PROC}/kmem rwklx,\n"
    "  deny @{PROC}/mem rwklx,\n"
    "  deny /sys/firmware/** rwklx,\n"
    "  deny /sys/kernel/security/** rwklx,\n"
    "  deny /sys/kernel/debug/** rwklx,\n"
    "  deny /sys/power/** wklx,\n"
    "  deny /sys/module/** wklx,\n"
    "}\n";

const char *oci_apparmor_profile_text(void)
{
        return profile;
}

/* "Y" in the module's parameter: the kernel enforces AppArmor. */
static bool enabled(void)
{
        char c = 0;
        int fd = open("/sys/module/apparmor/parameters/enabled", O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return false;
        if (read(fd, &c, 1) != 1)
                c = 0;
        close(fd);
        return c == 'Y' && access("/sys/kernel/security/apparmor", F_OK) == 0;
}

/* apparmor_parser -Kr FILE: replaces the profile in the kernel (no cache). */
static int parse(const char *parser, const char *file, struct xp_error *err)
{
        char *argv[] = {(char *)parser, (char *)"-K", (char *)"-r", (char *)file, NULL};
        posix_spawn_file_actions_t fa;
        int status = 0, r;
        pid_t pid;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        r = -posix_spawn(&pid, parser, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r < 0)
                return xp_errorf(err, r, "running %s: %s", parser, strerror(-r));
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s refused the profile %s (exit status %d)",
                                 parser,
                                 file,
                                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return 0;
}

int oci_apparmor_load(const char *dir, const char **why, struct xp_error *err)
{
        static const char *const parsers[] = {PARSERS};
        _cleanup_free_ char *file = NULL;
        int r;

        if (!enabled()) {
                *why =
                    "AppArmor is not enabled in this kernel: OCI containers run without an AppArmor profile";
                return 0;
        }
        if (asprintf(&file, "%s/" OCI_APPARMOR_PROFILE, dir) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r = xp_mkdir_p(dir, 0755, err);
        if (r >= 0)
                r = xp_write_file_atomic(file, profile, strlen(profile), 0644, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < XP_ELEMENTSOF(parsers); i++)
                if (access(parsers[i], X_OK) == 0)
                        return parse(parsers[i], file, err) < 0 ? -EINVAL : 1;
        return xp_errorf(err,
                         -ENOENT,
                         "AppArmor is enabled but apparmor_parser is not installed (Debian's "
                         "apparmor package): OCI containers run without an AppArmor profile");
}
