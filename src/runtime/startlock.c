/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The start lock of a container's state directory (runtime_internal.h): what tells the next
 * agent whether an interrupted start is still under way (the lock is held), never let the
 * container run (the lock is free and there is no release marker: the start is made again), or
 * died after letting it go (the marker names the container, which is then killed and recorded).
 * The lock is an flock on the directory itself and the marker a second name of spec.json, so a
 * start creates no inode for them (a file creation costs ext4 a tenth of a millisecond).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime_internal.h"

int runtime_start_lock(const char *dir, bool wait, int *ret_fd)
{
        int fd, r;

        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        while ((r = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB))) < 0 && errno == EINTR)
                ;
        if (r < 0) {
                r = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

/* Calls fn with each release marker's name in the directory dir_fd; stops at fn's nonzero. */
static int each_marker(int dir_fd, int (*fn)(int dir_fd, const char *name, void *userdata), void *u)
{
        int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent *e;
        DIR *d;
        int r = 0;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }
        while (r == 0 && (e = readdir(d)))
                if (strncmp(e->d_name, RUNTIME_RELEASE_PREFIX, strlen(RUNTIME_RELEASE_PREFIX)) == 0)
                        r = fn(dirfd(d), e->d_name, u);
        closedir(d);
        return r;
}

static int parse_marker(int dir_fd, const char *name, void *userdata)
{
        struct runtime_release *ret = userdata;
        int pid, shim;
        uint64_t start;

        (void)dir_fd;
        /* a name not of our making still says the container was let go; pid 0: let go before
         * its pid was known (a one-call start, oci_shim.c), its cgroup holds it */
        *ret = (struct runtime_release){0};
        if (sscanf(
                name + strlen(RUNTIME_RELEASE_PREFIX), "%d.%" SCNu64 ".%d", &pid, &start, &shim) ==
                3 &&
            pid >= 0 && shim > 0)
                *ret = (struct runtime_release){.pid = pid, .pid_start = start, .shim_pid = shim};
        return 1;
}

int runtime_release_read(int dir_fd, struct runtime_release *ret)
{
        return each_marker(dir_fd, parse_marker, ret);
}

int runtime_release_write(int dir_fd, pid_t pid, uint64_t pid_start, pid_t shim)
{
        char name[128];

        snprintf(name,
                 sizeof(name),
                 RUNTIME_RELEASE_PREFIX "%d.%" PRIu64 ".%d",
                 (int)pid,
                 pid_start,
                 (int)shim);
        /* no fsync: after a crash of the machine nothing of the container runs any more */
        return linkat(dir_fd, RUNTIME_SPEC_FILE, dir_fd, name, 0) < 0 ? -errno : 0;
}

static int unlink_marker(int dir_fd, const char *name, void *userdata)
{
        (void)userdata;
        return unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

int runtime_release_clear(int dir_fd)
{
        return each_marker(dir_fd, unlink_marker, NULL);
}

int runtime_start_lock_inherited(const char *dir)
{
        struct stat fd_st, dir_st;

        if (fstat(RUNTIME_LOCK_FD, &fd_st) < 0 || stat(dir, &dir_st) < 0 ||
            fd_st.st_dev != dir_st.st_dev || fd_st.st_ino != dir_st.st_ino)
                return -1;
        /* the state directory must never reach the container */
        (void)fcntl(RUNTIME_LOCK_FD, F_SETFD, FD_CLOEXEC);
        return RUNTIME_LOCK_FD;
}
