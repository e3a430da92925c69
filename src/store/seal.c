/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seal: a small file beside the database (state.db.seal, 0600) that says, outside the
 * database and its WAL, how far the store got, so that a database that lost acknowledged writes
 * (a zero-length file, a WAL cut short by a damaged frame, an older copy) is caught at open
 * instead of serving a shorter history with its versions handed out again.
 *
 * Four 512-byte slots, each in its own sector so that a torn write spoils one record at most:
 * two for SEAL_RESERVE records and two for SEAL_COMMIT records, written alternately (by seq), so
 * that the other slot of a kind still holds the previous record while one is being written.
 *
 * - SEAL_COMMIT: the last committed version and the store's digest at it, written after every
 *   commit and before the writers hear of it, without fsync: a killed process leaves it in the
 *   page cache, so the seal is never behind an acknowledged write; after a power cut it may be
 *   behind (never ahead: it is written after the WAL's fsync), which is harmless.
 * - SEAL_RESERVE: versions up to this may be handed out; written with fdatasync before any
 *   version past the previous reservation is used, once per RESERVE_STEP versions. It bounds
 *   every version ever acknowledged, whatever happened to the other files.
 *
 * A record is 64 bytes, little-endian: "xpseal01", kind (u32), format 1 (u32), store id, seq,
 * version, digest, time (u64 each), and the first 8 bytes of the SHA-256 of the 56 before.
 */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_internal.h"
#include "xpool/macro.h"

#define SEAL_MAGIC  "xpseal01"
#define SEAL_FORMAT 1
#define SEAL_BODY   56 /* the bytes the check covers */

static void put64(uint8_t *p, uint64_t v)
{
        for (int i = 0; i < 8; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
        uint64_t v = 0;

        for (int i = 0; i < 8; i++)
                v |= (uint64_t)p[i] << (8 * i);
        return v;
}

static void put32(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
        return (uint32_t)get64((const uint8_t[8]){p[0], p[1], p[2], p[3]});
}

/* The first 8 bytes of the SHA-256 of data, as a number. */
static uint64_t sha64(const void *data, size_t size)
{
        uint8_t out[32];

        if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, size, out) < 0)
                return 0; /* only when GnuTLS cannot run at all; a record then fails its check */
        return get64(out);
}

uint64_t store_op_hash(int type, uint64_t row_hash)
{
        /* the write's type and its row hash (checksum.c): the key and body hashed only once */
        uint8_t buf[9];

        buf[0] = (uint8_t)type;
        put64(buf + 1, row_hash);
        return sha64(buf, sizeof(buf));
}

uint64_t store_digest_next(uint64_t digest, uint64_t version, uint64_t op_hash)
{
        uint8_t buf[24];

        put64(buf, digest);
        put64(buf + 8, version);
        put64(buf + 16, op_hash);
        return sha64(buf, sizeof(buf));
}

char *seal_path(const char *db_path)
{
        char *path;

        return asprintf(&path, "%s" SEAL_SUFFIX, db_path) < 0 ? NULL : path;
}

void seal_encode(const struct seal_record *rec, uint8_t out[SEAL_RECORD])
{
        memset(out, 0, SEAL_RECORD);
        memcpy(out, SEAL_MAGIC, 8);
        put32(out + 8, (uint32_t)rec->kind);
        put32(out + 12, SEAL_FORMAT);
        put64(out + 16, rec->store_id);
        put64(out + 24, rec->seq);
        put64(out + 32, rec->version);
        put64(out + 40, rec->digest);
        put64(out + 48, (uint64_t)rec->time);
        put64(out + SEAL_BODY, sha64(out, SEAL_BODY));
}

int seal_decode(const uint8_t in[SEAL_RECORD], struct seal_record *ret)
{
        static const uint8_t zero[SEAL_RECORD];
        uint32_t kind;

        if (memcmp(in, zero, SEAL_RECORD) == 0)
                return -ENODATA;
        if (memcmp(in, SEAL_MAGIC, 8) != 0 || get64(in + SEAL_BODY) != sha64(in, SEAL_BODY))
                return -EBADMSG;
        kind = get32(in + 8);
        if ((kind != SEAL_RESERVE && kind != SEAL_COMMIT) || get32(in + 12) != SEAL_FORMAT)
                return -EBADMSG;
        *ret = (struct seal_record){
            .kind = (enum seal_kind)kind,
            .store_id = get64(in + 16),
            .seq = get64(in + 24),
            .version = get64(in + 32),
            .digest = get64(in + 40),
            .time = (int64_t)get64(in + 48),
        };
        return 0;
}

void seal_parse(const uint8_t *buf, size_t size, struct seal_state *ret)
{
        bool garbage = false;

        *ret = (struct seal_state){.present = true};
        for (size_t i = 0; i < SEAL_SLOTS; i++) {
                uint8_t slot[SEAL_RECORD] = {0};
                struct seal_record rec;
                struct seal_record *best;
                bool *has;
                int r;

                if (i * SEAL_SLOT < size)
                        memcpy(slot,
                               buf + i * SEAL_SLOT,
                               size - i * SEAL_SLOT < SEAL_RECORD ? size - i * SEAL_SLOT
                                                                  : SEAL_RECORD);
                r = seal_decode(slot, &rec);
                garbage |= r == -EBADMSG;
                if (r < 0)
                        continue;
                best = rec.kind == SEAL_COMMIT ? &ret->commit : &ret->reserve;
                has = rec.kind == SEAL_COMMIT ? &ret->has_commit : &ret->has_reserve;
                if (!*has || rec.seq > best->seq) {
                        *best = rec;
                        *has = true;
                }
        }
        ret->written = ret->has_commit || ret->has_reserve;
        ret->damaged = garbage && !ret->written;
}

static int read_state(int fd, const char *path, struct seal_state *ret, struct xp_error *err)
{
        uint8_t buf[SEAL_SIZE];
        ssize_t n;

        n = pread(fd, buf, sizeof(buf), 0);
        if (n < 0)
                return xp_errorf(err, -errno, "cannot read the seal '%s': %m", path);
        seal_parse(buf, (size_t)n, ret);
        return 0;
}

int seal_read(const char *db_path, struct seal_state *ret, struct xp_error *err)
{
        _cleanup_free_ char *path = seal_path(db_path);
        _cleanup_close_ int fd = -1;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0 && errno == ENOENT) {
                *ret = (struct seal_state){0};
                return 0;
        }
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot open the seal '%s': %m", path);
        return read_state(fd, path, ret, err);
}

/* Opens the seal, creating it when missing: 1 when it was created. */
static int open_file(const char *path, int *ret_fd, struct xp_error *err)
{
        int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;
        int fd, r;

        fd = open(path, flags | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
                /* its blocks now, so that writing a record never needs space the disk may no
                 * longer have; ENOSPC here leaves it unallocated: the writes then say so */
                r = posix_fallocate(fd, 0, SEAL_SIZE);
                if (r != 0 && r != ENOSPC && r != EOPNOTSUPP && r != EDQUOT) {
                        close(fd);
                        unlink(path);
                        return xp_errorf(
                            err, -r, "cannot allocate the seal '%s': %s", path, strerror(r));
                }
                *ret_fd = fd;
                return 1;
        }
        if (errno != EEXIST)
                return xp_errorf(err, -errno, "cannot create the seal '%s': %m", path);
        fd = open(path, flags);
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot open the seal '%s': %m", path);
        /* an earlier xpool (or a copy) may have left it readable by others */
        if (fchmod(fd, 0600) < 0 && errno != EPERM && errno != EROFS) {
                r = -errno;
                close(fd);
                return xp_errorf(err, r, "cannot make the seal '%s' private: %m", path);
        }
        *ret_fd = fd;
        return 0;
}

int seal_open(const char *db_path,
              struct seal *ret,
              struct seal_state *ret_state,
              struct xp_error *err)
{
        _cleanup_free_ char *path = seal_path(db_path);
        _cleanup_close_ int fd = -1;
        int created, r;

        if (!path)
                return -ENOMEM;
        created = open_file(path, &fd, err);
        if (created < 0)
                return created;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                r = errno == EWOULDBLOCK
                        ? xp_errorf(err,
                                    -EBUSY,
                                    "store %s is open in another process (it holds the lock of "
                                    "'%s'): stop that one first",
                                    db_path,
                                    path)
                        : xp_errorf(err, -errno, "cannot lock the seal '%s': %m", path);
                if (created)
                        unlink(path);
                return r;
        }
        r = read_state(fd, path, ret_state, err);
        if (r < 0)
                return r;
        *ret = (struct seal){
            .fd = TAKE_FD(fd),
            .path = TAKE_PTR(path),
            .store_id = ret_state->has_commit ? ret_state->commit.store_id : 0,
            .commit_seq = ret_state->has_commit ? ret_state->commit.seq : 0,
            .reserve_seq = ret_state->has_reserve ? ret_state->reserve.seq : 0,
            .created = created > 0,
        };
        return 0;
}

int seal_write(struct seal *seal,
               enum seal_kind kind,
               uint64_t version,
               uint64_t digest,
               bool sync,
               struct xp_error *err)
{
        uint64_t *seq = kind == SEAL_COMMIT ? &seal->commit_seq : &seal->reserve_seq;
        struct seal_record rec = {
            .kind = kind,
            .store_id = seal->store_id,
            .seq = *seq + 1,
            .version = version,
            .digest = digest,
            .time = (int64_t)time(NULL),
        };
        uint8_t buf[SEAL_RECORD];
        off_t slot = (kind == SEAL_COMMIT ? 2 : 0) + (off_t)(rec.seq & 1);
        ssize_t n;

        seal_encode(&rec, buf);
        n = pwrite(seal->fd, buf, sizeof(buf), slot * SEAL_SLOT);
        if (n < 0)
                return xp_errorf(err, -errno, "cannot write the seal '%s': %m", seal->path);
        if (n != (ssize_t)sizeof(buf))
                return xp_errorf(err, -EIO, "cannot write the seal '%s': short write", seal->path);
        if (sync && fdatasync(seal->fd) < 0)
                return xp_errorf(err, -errno, "cannot sync the seal '%s': %m", seal->path);
        *seq = rec.seq;
        seal->created = false;
        return 0;
}

int seal_sync(struct seal *seal)
{
        if (seal->fd < 0)
                return 0;
        return fdatasync(seal->fd) < 0 ? -errno : 0;
}

void seal_close(struct seal *seal, bool discard)
{
        if (seal->fd >= 0) {
                /* unlink while still locked: no other process can have adopted it */
                if (discard && seal->created)
                        unlink(seal->path);
                close(seal->fd);
        }
        free(seal->path);
        *seal = (struct seal){.fd = -1};
}
