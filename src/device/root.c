/* SPDX-License-Identifier: Apache-2.0 */
/* Reading sysfs and procfs below a settable root, through a directory fd and openat(). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"

#define ROOT_FILE_MAX (1024 * 1024)

/* Paths are relative to the root; a leading '/' is tolerated. */
static const char *relative(const char *path)
{
        while (*path == '/')
                path++;
        return *path ? path : ".";
}

int xp_root_read(struct xp_discovery *d, const char *path, char **ret)
{
        /* non-blocking, and only regular files: a FIFO or device in a tree must not hang us */
        _cleanup_close_ int fd =
            openat(d->root_fd, relative(path), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        size_t size = 0, allocated = 4096;
        struct stat st;
        char *buf;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        buf = malloc(allocated);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;

                if (size + 1 >= allocated) {
                        char *grown;

                        if (allocated > ROOT_FILE_MAX) {
                                free(buf);
                                return -EFBIG;
                        }
                        /* room for ROOT_FILE_MAX bytes, the NUL, and one more to see the end */
                        allocated =
                            allocated * 2 > ROOT_FILE_MAX ? ROOT_FILE_MAX + 2 : allocated * 2;
                        grown = realloc(buf, allocated);
                        if (!grown) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = grown;
                }
                n = read(fd, buf + size, allocated - size - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = -errno;

                        free(buf);
                        return r;
                }
                if (n == 0)
                        break;
                size += (size_t)n;
                if (size > ROOT_FILE_MAX) {
                        free(buf);
                        return -EFBIG;
                }
        }
        while (size > 0 && isspace((unsigned char)buf[size - 1]))
                size--;
        buf[size] = '\0';
        *ret = buf;
        return 0;
}

/* Decimal, or hexadecimal after "0x"; never octal, never leading blanks or signs for unsigned. */
static int parse_number(const char *text, bool is_signed, uint64_t *ret_u, int64_t *ret_i)
{
        const char *digits = text;
        int base = 10;
        char *end;

        if (is_signed && (*digits == '-' || *digits == '+'))
                digits++;
        if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
                base = 16;
                digits += 2;
        }
        if (!isxdigit((unsigned char)*digits) || (base == 10 && !isdigit((unsigned char)*digits)))
                return -EINVAL;
        errno = 0;
        if (is_signed) {
                long long v = strtoll(text, &end, base == 16 ? 16 : 10);

                if (errno || *end)
                        return -EINVAL;
                *ret_i = v;
        } else {
                unsigned long long v = strtoull(text, &end, base == 16 ? 16 : 10);

                if (errno || *end)
                        return -EINVAL;
                *ret_u = v;
        }
        return 0;
}

int xp_root_read_u64(struct xp_discovery *d, const char *path, uint64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        int r = xp_root_read(d, path, &text);

        if (r < 0)
                return r;
        return parse_number(text, false, ret, NULL);
}

int xp_root_read_i64(struct xp_discovery *d, const char *path, int64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        int r = xp_root_read(d, path, &text);

        if (r < 0)
                return r;
        return parse_number(text, true, NULL, ret);
}

int xp_root_readlink(struct xp_discovery *d, const char *path, char **ret)
{
        char buf[4096];
        ssize_t n = readlinkat(d->root_fd, relative(path), buf, sizeof(buf) - 1);
        char *copy;

        if (n < 0)
                return -errno;
        buf[n] = '\0';
        copy = strdup(buf);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

bool xp_root_exists(struct xp_discovery *d, const char *path)
{
        return faccessat(d->root_fd, relative(path), F_OK, 0) == 0;
}

void xp_strv_free(char **names, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int xp_root_list(struct xp_discovery *d, const char *path, char ***ret, size_t *ret_n)
{
        int fd = openat(d->root_fd, relative(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char **names = NULL;
        size_t n = 0;
        struct dirent *entry;
        DIR *dir;

        if (fd < 0)
                return -errno;
        dir = fdopendir(fd);
        if (!dir) {
                int r = -errno;

                close(fd);
                return r;
        }
        while ((entry = readdir(dir))) {
                char **grown;

                if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
                        continue;
                grown = realloc(names, (n + 1) * sizeof(*names));
                if (!grown || !(grown[n] = strdup(entry->d_name))) {
                        closedir(dir);
                        xp_strv_free(grown ? grown : names, n);
                        return -ENOMEM;
                }
                names = grown;
                n++;
        }
        closedir(dir);
        if (n > 1)
                qsort(names, n, sizeof(*names), compare_names);
        *ret = names;
        *ret_n = n;
        return 0;
}
