/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The start lock of a container's state directory (runtime_internal.h): what tells the next
 * agent whether an interrupted start is still under way (the lock is held), never let the
 * container run (the lock is free and the release marker empty: the start is made again), or
 * died after letting it go (the marker names the container, which is then killed and recorded).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime_internal.h"

int runtime_start_lock(const char *dir, bool create, bool wait, int *ret_fd)
{
        char path[PATH_MAX];
        int fd, r;

        if (snprintf(path, sizeof(path), "%s/" RUNTIME_LOCK_FILE, dir) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | (create ? O_CREAT : 0), 0600);
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

int runtime_release_read(int fd, struct runtime_release *ret)
{
        char buf[128];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        int pid, shim;
        uint64_t start;

        if (n < 0)
                return -errno;
        if (n == 0)
                return 0;
        buf[n] = '\0';
        /* a marker not whole (a crash of the machine in the write) still says it was let go */
        *ret = (struct runtime_release){0};
        if (sscanf(buf, "%d %" SCNu64 " %d", &pid, &start, &shim) == 3 && pid > 0 && shim > 0)
                *ret = (struct runtime_release){.pid = pid, .pid_start = start, .shim_pid = shim};
        return 1;
}

int runtime_release_write(int fd, pid_t pid, uint64_t pid_start, pid_t shim)
{
        char buf[128];
        int n = snprintf(buf, sizeof(buf), RUNTIME_RELEASE_FORMAT, (int)pid, pid_start, (int)shim);

        /* no fsync: after a crash of the machine nothing of the container runs any more */
        if (pwrite(fd, buf, (size_t)n, 0) != n)
                return errno ? -errno : -EIO;
        return 0;
}

int runtime_start_lock_inherited(const char *dir)
{
        char path[PATH_MAX];
        struct stat fd_st, file_st;

        snprintf(path, sizeof(path), "%s/" RUNTIME_LOCK_FILE, dir);
        if (fstat(RUNTIME_LOCK_FD, &fd_st) < 0 || stat(path, &file_st) < 0 ||
            fd_st.st_dev != file_st.st_dev || fd_st.st_ino != file_st.st_ino)
                return -1;
        (void)fcntl(RUNTIME_LOCK_FD, F_SETFD, FD_CLOEXEC);
        return RUNTIME_LOCK_FD;
}
