/* SPDX-License-Identifier: Apache-2.0 */
/*
 * IANA time zones from the system's zoneinfo (TZif, RFC 8536), read without touching the
 * process' TZ: the controllers run beside other threads, and setenv() + localtime() would race.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tz_internal.h"
#include "xpool/cron.h"
#include "xpool/macro.h"

#define TZIF_MAX (1 << 20)

void xp_tz_free(struct xp_tz *tz)
{
        if (!tz)
                return;
        free(tz->at);
        free(tz->idx);
        free(tz->off);
        free(tz->isdst);
        free(tz);
}

static bool name_ok(const char *name)
{
        if (!*name || *name == '/' || strlen(name) > 255 || strcasecmp(name, "Local") == 0)
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                      (*p >= '0' && *p <= '9') || strchr("/_+-.", *p)))
                        return false;
        /* no component that climbs out of the root, or hides */
        for (const char *p = name; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
                if (*p == '.' || *p == '/' || *p == '\0')
                        return false;
        return true;
}

static int read_all(const char *root, const char *name, unsigned char **ret, size_t *ret_len)
{
        _cleanup_close_ int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        /* aliases are links within the system's zoneinfo: followed */
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_free_ unsigned char *buf = malloc(TZIF_MAX);
        if (!buf)
                return -ENOMEM;
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, TZIF_MAX - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == TZIF_MAX)
                        return -EFBIG;
        }
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

static uint32_t be32(const unsigned char *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
        return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct counts {
        uint32_t isut, isstd, leap, time, type, chars;
};

static int header(const unsigned char *p, size_t left, struct counts *c)
{
        if (left < 44 || memcmp(p, "TZif", 4) != 0)
                return -EINVAL;
        *c = (struct counts){
            be32(p + 20), be32(p + 24), be32(p + 28), be32(p + 32), be32(p + 36), be32(p + 40)};
        if (c->type == 0 || c->type > 256 || c->time > 100000 || c->chars > 65536 ||
            c->leap > 10000 || c->isut > 256 || c->isstd > 256)
                return -EINVAL;
        return 0;
}

static size_t block_size(const struct counts *c, size_t tsize)
{
        return c->time * tsize + c->time + c->type * 6 + c->chars + c->leap * (tsize + 4) +
               c->isstd + c->isut;
}

/* The data block at p (times of tsize bytes) into tz. */
static int
data_block(const unsigned char *p, const struct counts *c, size_t tsize, struct xp_tz *tz)
{
        tz->n = c->time;
        tz->n_types = c->type;
        tz->at = calloc(c->time + 1, sizeof(*tz->at));
        tz->idx = calloc(c->time + 1, 1);
        tz->off = calloc(c->type, sizeof(*tz->off));
        tz->isdst = calloc(c->type, 1);
        if (!tz->at || !tz->idx || !tz->off || !tz->isdst)
                return -ENOMEM;
        for (size_t i = 0; i < c->time; i++)
                tz->at[i] = tsize == 8 ? be64(p + i * 8) : (int32_t)be32(p + i * 4);
        p += c->time * tsize;
        for (size_t i = 0; i < c->time; i++) {
                if (p[i] >= c->type)
                        return -EINVAL;
                tz->idx[i] = p[i];
        }
        p += c->time;
        for (size_t i = 0; i < c->type; i++) {
                tz->off[i] = (int32_t)be32(p + i * 6);
                tz->isdst[i] = p[i * 6 + 4];
        }
        return 0;
}

static int parse_tzif(const unsigned char *buf, size_t len, struct xp_tz *tz)
{
        struct counts c;
        int r = header(buf, len, &c);
        if (r < 0)
                return r;
        size_t v1 = 44 + block_size(&c, 4);
        if (v1 > len)
                return -EINVAL;
        if (buf[4] == '\0') /* version 1: 32-bit times, no rule */
                return data_block(buf + 44, &c, 4, tz);
        const unsigned char *p = buf + v1;
        r = header(p, len - v1, &c);
        if (r < 0)
                return r;
        size_t v2 = block_size(&c, 8);
        if (44 + v2 > len - v1)
                return -EINVAL;
        r = data_block(p + 44, &c, 8, tz);
        if (r < 0)
                return r;
        /* the footer: "\n<POSIX TZ>\n" */
        const unsigned char *f = p + 44 + v2, *end = buf + len;
        if (f < end && *f == '\n') {
                const unsigned char *nl = memchr(f + 1, '\n', (size_t)(end - f - 1));
                char rule[128];
                if (nl && nl - f - 1 > 0 && (size_t)(nl - f - 1) < sizeof(rule)) {
                        memcpy(rule, f + 1, (size_t)(nl - f - 1));
                        rule[nl - f - 1] = '\0';
                        tz->has_rule = tz_rule_parse(rule, &tz->rule) == 0;
                }
        }
        return 0;
}

int xp_tz_load(const char *root, const char *name, struct xp_tz **ret, struct xp_error *err)
{
        if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0) {
                struct xp_tz *utc = calloc(1, sizeof(*utc));
                if (!utc)
                        return -ENOMEM;
                utc->has_rule = true; /* std_off 0, no daylight time */
                *ret = utc;
                return 0;
        }
        if (!name_ok(name))
                return xp_errorf(err, -EINVAL, "unknown time zone %s", name);
        _cleanup_free_ unsigned char *buf = NULL;
        size_t len = 0;
        int r = read_all(root, name, &buf, &len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return xp_errorf(err, -EINVAL, "unknown time zone %s", name);
        struct xp_tz *tz = calloc(1, sizeof(*tz));
        if (!tz)
                return -ENOMEM;
        r = parse_tzif(buf, len, tz);
        if (r < 0) {
                xp_tz_free(tz);
                return r == -ENOMEM ? r : xp_errorf(err, -EINVAL, "unknown time zone %s", name);
        }
        *ret = tz;
        return 0;
}

int32_t xp_tz_offset(const struct xp_tz *tz, int64_t t)
{
        if (!tz)
                return 0;
        if (tz->n == 0 || t >= tz->at[tz->n - 1]) {
                if (tz->has_rule)
                        return tz_rule_offset(&tz->rule, t);
                if (tz->n == 0)
                        return tz->n_types ? tz->off[0] : 0;
        }
        if (t < tz->at[0]) {
                /* before the table: the first standard-time type (RFC 8536 3.2) */
                for (size_t i = 0; i < tz->n_types; i++)
                        if (!tz->isdst[i])
                                return tz->off[i];
                return tz->off[0];
        }
        size_t lo = 0, hi = tz->n; /* the last at[i] <= t */
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (tz->at[mid] <= t)
                        lo = mid;
                else
                        hi = mid;
        }
        return tz->off[tz->idx[lo]];
}
