/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One tar entry of a layer into the layer's directory, never outside it. Every parent is
 * resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): a name with '..', an absolute
 * symbolic link or one climbing out on the way fails, where a plain tar would follow it onto the
 * node. The final component is never followed: whatever is there is removed first (a tar may
 * name a path twice; the later entry wins), then created with O_EXCL/O_NOFOLLOW semantics.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "image_internal.h"
#include "libs.h"

#define NAME_MAX_BYTES 4096
#define TREE_DEPTH_MAX 256
#define WHITEOUT       ".wh."
#define OPAQUE         ".wh..wh..opq"

/*
 * A tar name made relative and clean, in buf: leading '/' and './' dropped, '.' and empty
 * components dropped; -EPERM for '..'. "" is the root itself.
 */
static int clean_name(const char *name, char buf[static NAME_MAX_BYTES], struct xp_error *err)
{
        size_t len = 0;

        if (strlen(name) >= NAME_MAX_BYTES)
                return xp_errorf(
                    err, -EBADMSG, "an entry name longer than %d bytes", NAME_MAX_BYTES);
        for (const char *p = name; *p;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);

                if (n == 2 && p[0] == '.' && p[1] == '.')
                        return xp_errorf(
                            err, -EPERM, "entry \"%s\": '..' leads out of the layer root", name);
                if (n > 0 && !(n == 1 && p[0] == '.')) {
                        if (len > 0)
                                buf[len++] = '/';
                        memcpy(buf + len, p, n);
                        len += n;
                }
                p += n + (slash ? 1 : 0);
        }
        buf[len] = '\0';
        return 0;
}

static int open_beneath(int root_fd, const char *path, int flags)
{
        struct open_how how = {
            .flags = (uint64_t)(flags | O_CLOEXEC),
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };
        long fd;

        if (!*path)
                path = ".";
        fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
        return fd < 0 ? -errno : (int)fd;
}

static int escape_error(int r, const char *name, struct xp_error *err)
{
        if (r == -EXDEV || r == -ELOOP)
                return xp_errorf(
                    err,
                    -EPERM,
                    "entry \"%s\": its path leads out of the layer root through a symbolic link",
                    name);
        if (r == -ENOTDIR)
                return xp_errorf(err, -EBADMSG, "entry \"%s\": a parent is not a directory", name);
        return xp_errorf(err, r, "entry \"%s\": %s", name, strerror(-r));
}

/* mkdir -p of path beneath the root (0755), each component resolved beneath: the last one's
 * fd, or -errno. path is restored before returning. */
static int make_parents(int root_fd, char *path)
{
        int dir = open_beneath(root_fd, "", O_PATH | O_DIRECTORY);

        for (char *p = path; dir >= 0 && p;) {
                char *next = strchr(p, '/');
                int child = 0;

                if (next)
                        *next = '\0';
                if (mkdirat(dir, p, 0755) < 0 && errno != EEXIST)
                        child = -errno;
                if (child == 0)
                        child = open_beneath(root_fd, path, O_PATH | O_DIRECTORY);
                close(dir);
                dir = child;
                if (next)
                        *next = '/';
                p = next ? next + 1 : NULL;
        }
        return dir;
}

/* Opens the parent directory of clean (made when missing), beneath the root. */
static int open_parent(int root_fd, char *clean, const char *name, struct xp_error *err)
{
        char *slash = strrchr(clean, '/');
        int fd;

        if (!slash) {
                fd = open_beneath(root_fd, "", O_PATH | O_DIRECTORY);
        } else {
                *slash = '\0';
                fd = open_beneath(root_fd, clean, O_PATH | O_DIRECTORY);
                if (fd == -ENOENT)
                        fd = make_parents(root_fd, clean);
                *slash = '/';
        }
        return fd < 0 ? escape_error(fd, name, err) : fd;
}

static int remove_tree(int dir_fd, const char *name, unsigned depth)
{
        _cleanup_close_ int fd = -1;
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth >= TREE_DEPTH_MAX)
                return -ELOOP;
        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -1; /* the DIR has it */
        while (r >= 0 && (de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        r = remove_tree(dirfd(d), de->d_name, depth + 1);
        closedir(d);
        if (r >= 0 && unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                r = -errno;
        return r;
}

int xp_remove_tree_at(int dir_fd, const char *name)
{
        return remove_tree(dir_fd, name, 0);
}

/* Clears the place of a new entry: what is there goes, but a directory stays for a directory. */
static int make_room(int parent, const char *base, bool for_dir)
{
        struct stat s;

        if (fstatat(parent, base, &s, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (for_dir && S_ISDIR(s.st_mode))
                return 1;
        return remove_tree(parent, base, 0);
}

/* Owner, mode and times of what was just made (parent/base), as the entry says. */
static int set_attrs(
    struct xp_unpack_state *st, int parent, const char *base, struct archive_entry *e, mode_t mode)
{
        struct timespec ts[2] = {
            {.tv_sec = image_libs.archive_entry_atime(e),
             .tv_nsec = image_libs.archive_entry_atime_nsec(e)},
            {.tv_sec = image_libs.archive_entry_mtime(e),
             .tv_nsec = image_libs.archive_entry_mtime_nsec(e)},
        };
        bool link = image_libs.archive_entry_filetype(e) == AE_IFLNK;

        if (!image_libs.archive_entry_atime_is_set(e))
                ts[0] = ts[1];
        if (st->root && fchownat(parent,
                                 base,
                                 (uid_t)image_libs.archive_entry_uid(e),
                                 (gid_t)image_libs.archive_entry_gid(e),
                                 AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        /* after the chown, which clears setuid and setgid */
        if (!link && fchmodat(parent, base, mode, 0) < 0)
                return -errno;
        if (utimensat(parent, base, ts, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return 0;
}

/* The entry's mode with what an untrusted image may not have taken out. */
static mode_t safe_mode(struct xp_unpack_state *st, struct archive_entry *e)
{
        mode_t mode = image_libs.archive_entry_perm(e) & 07777;

        if (st->untrusted && image_libs.archive_entry_filetype(e) == AE_IFREG &&
            (mode & (S_ISUID | S_ISGID))) {
                mode &= ~(mode_t)(S_ISUID | S_ISGID);
                st->stripped++;
        }
        return mode;
}

/* File capabilities (security.capability) for trusted images; other xattrs are not applied
 * (trusted.overlay.* from a layer would change how overlayfs reads it). */
static int set_xattrs(struct xp_unpack_state *st, int fd, struct archive_entry *e)
{
        const char *name;
        const void *value;
        size_t size;

        image_libs.archive_entry_xattr_reset(e);
        while (image_libs.archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
                if (strcmp(name, "security.capability") != 0)
                        continue;
                if (st->untrusted || !st->root) {
                        st->stripped += st->untrusted;
                        continue;
                }
                if (fsetxattr(fd, name, value, size, 0) < 0)
                        return -errno;
        }
        return 0;
}

static int write_data(struct archive *a, int fd, int64_t size)
{
        const void *buf;
        size_t len;
        la_int64_t off;
        int r;

        while ((r = image_libs.archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
                const char *p = buf;

                while (len > 0) {
                        ssize_t n = pwrite(fd, p, len, off);

                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return -errno;
                        p += n;
                        off += n;
                        len -= (size_t)n;
                }
        }
        if (r != ARCHIVE_EOF)
                return -EBADMSG;
        /* a sparse file's hole at the end */
        return ftruncate(fd, size) < 0 ? -errno : 0;
}

static int make_file(struct xp_unpack_state *st,
                     struct archive *a,
                     struct archive_entry *e,
                     int parent,
                     const char *base)
{
        _cleanup_close_ int fd = -1;
        int64_t size = image_libs.archive_entry_size(e);
        mode_t mode = safe_mode(st, e);
        int r;

        fd = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = write_data(a, fd, size > 0 ? size : 0);
        if (r < 0)
                return r;
        if (size > 0)
                st->size += (uint64_t)size;
        r = set_xattrs(st, fd, e);
        if (r < 0)
                return r;
        return set_attrs(st, parent, base, e, mode);
}

/* A hard link to an entry of this layer: its target resolved beneath the root like any name. */
static int make_hardlink(struct xp_unpack_state *st,
                         const char *name,
                         const char *target,
                         int parent,
                         const char *base,
                         struct xp_error *err)
{
        char clean[NAME_MAX_BYTES];
        _cleanup_close_ int tparent = -1;
        char *tbase;
        int r;

        r = clean_name(target, clean, err);
        if (r < 0)
                return xp_error_prefix(err, r, "entry \"%s\": hard link", name);
        if (!*clean)
                return xp_errorf(err, -EPERM, "entry \"%s\": a hard link to the layer root", name);
        tparent = open_parent(st->root_fd, clean, name, err);
        if (tparent < 0)
                return tparent;
        tbase = strrchr(clean, '/') ? strrchr(clean, '/') + 1 : clean;
        if (linkat(tparent, tbase, parent, base, 0) < 0) {
                if (errno == ENOENT)
                        return xp_errorf(
                            err,
                            -EBADMSG,
                            "entry \"%s\": a hard link to \"%s\", which the layer does not hold",
                            name,
                            target);
                return xp_errorf(err, -errno, "entry \"%s\": linking to \"%s\": %m", name, target);
        }
        return 0;
}

static int make_node(struct xp_unpack_state *st,
                     struct archive_entry *e,
                     int parent,
                     const char *base,
                     const char *name,
                     struct xp_error *err)
{
        mode_t type = image_libs.archive_entry_filetype(e) == AE_IFBLK ? S_IFBLK : S_IFCHR;
        dev_t dev = image_libs.archive_entry_rdev(e);
        bool whiteout = type == S_IFCHR && dev == 0;

        /* 0:0 is overlayfs' whiteout, a layer exported from an overlay may hold it */
        if (st->untrusted && !whiteout)
                return xp_errorf(err,
                                 -EPERM,
                                 "entry \"%s\": a %s device node (%u:%u) in an untrusted image",
                                 name,
                                 type == S_IFBLK ? "block" : "character",
                                 major(dev),
                                 minor(dev));
        if (mknodat(parent, base, type | 0600, dev) < 0)
                return xp_errorf(err,
                                 -errno,
                                 "entry \"%s\": making the device node: %m%s",
                                 name,
                                 errno == EPERM ? " (needs root)" : "");
        return set_attrs(st, parent, base, e, safe_mode(st, e));
}

/* .wh.NAME hides NAME of the layers below: overlayfs' whiteout, a 0:0 character device. */
static int make_whiteout(int parent, const char *base, const char *name, struct xp_error *err)
{
        const char *hidden = base + strlen(WHITEOUT);
        int r;

        if (strcmp(base, OPAQUE) == 0) {
                _cleanup_close_ int fd = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                if (fd < 0 || fsetxattr(fd, "trusted.overlay.opaque", "y", 1, 0) < 0)
                        return xp_errorf(err,
                                         -errno,
                                         "entry \"%s\": marking the directory opaque: %m%s",
                                         name,
                                         errno == EPERM ? " (needs root)" : "");
                return 0;
        }
        if (strncmp(hidden, WHITEOUT, strlen(WHITEOUT)) == 0 || !*hidden ||
            strcmp(hidden, ".") == 0 || strcmp(hidden, "..") == 0)
                return 0; /* aufs' own metadata (.wh..wh.plnk, ...): nothing for overlayfs */
        r = make_room(parent, hidden, false);
        if (r < 0)
                return xp_errorf(err, r, "entry \"%s\": %s", name, strerror(-r));
        if (mknodat(parent, hidden, S_IFCHR | 0, makedev(0, 0)) < 0)
                return xp_errorf(err,
                                 -errno,
                                 "entry \"%s\": making the whiteout: %m%s",
                                 name,
                                 errno == EPERM ? " (needs root)" : "");
        return 0;
}

static int make_one(struct xp_unpack_state *st,
                    struct archive *a,
                    struct archive_entry *e,
                    int parent,
                    const char *base,
                    const char *name,
                    struct xp_error *err)
{
        const char *hardlink = image_libs.archive_entry_hardlink(e);
        unsigned type = image_libs.archive_entry_filetype(e);
        int r;

        r = make_room(parent, base, type == AE_IFDIR && !hardlink);
        if (r < 0)
                return xp_errorf(
                    err, r, "entry \"%s\": replacing what was there: %s", name, strerror(-r));
        if (hardlink)
                return make_hardlink(st, name, hardlink, parent, base, err);
        switch (type) {
        case AE_IFREG:
                r = make_file(st, a, e, parent, base);
                break;
        case AE_IFDIR:
                r = mkdirat(parent, base, 0700) < 0 && errno != EEXIST ? -errno : 0;
                if (r >= 0)
                        r = set_attrs(st, parent, base, e, safe_mode(st, e));
                break;
        case AE_IFLNK:
                r = symlinkat(image_libs.archive_entry_symlink(e)
                                  ? image_libs.archive_entry_symlink(e)
                                  : "",
                              parent,
                              base) < 0
                        ? -errno
                        : 0;
                if (r >= 0)
                        r = set_attrs(st, parent, base, e, 0777);
                break;
        case AE_IFCHR:
        case AE_IFBLK:
                return make_node(st, e, parent, base, name, err);
        case AE_IFIFO:
                r = mkfifoat(parent, base, 0600) < 0 ? -errno : 0;
                if (r >= 0)
                        r = set_attrs(st, parent, base, e, safe_mode(st, e));
                break;
        default:
                return 0; /* sockets and the like: nothing to keep */
        }
        if (r == -EBADMSG)
                return xp_errorf(err, r, "entry \"%s\": the layer is damaged or truncated", name);
        return r < 0 ? xp_errorf(err, r, "entry \"%s\": %s", name, strerror(-r)) : 0;
}

int xp_unpack_entry(struct xp_unpack_state *st,
                    struct archive *a,
                    struct archive_entry *e,
                    struct xp_error *err)
{
        const char *name = image_libs.archive_entry_pathname(e), *base;
        char clean[NAME_MAX_BYTES];
        _cleanup_close_ int parent = -1;
        int r;

        if (!name)
                return xp_errorf(err, -EBADMSG, "an entry without a name");
        r = clean_name(name, clean, err);
        if (r < 0)
                return r;
        if (!*clean)
                return 0; /* the root: the layer's directory is made by the store */
        parent = open_parent(st->root_fd, clean, name, err);
        if (parent < 0)
                return parent;
        base = strrchr(clean, '/') ? strrchr(clean, '/') + 1 : clean;
        if (strncmp(base, WHITEOUT, strlen(WHITEOUT)) == 0)
                return make_whiteout(parent, base, name, err);
        return make_one(st, a, e, parent, base, name, err);
}
