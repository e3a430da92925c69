/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 digests of blobs, through GnuTLS (which the server's TLS already links). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"
#include "xpool/strutil.h"

int xp_sha256_init(struct xp_sha256 *s)
{
        return gnutls_hash_init(&s->h, GNUTLS_DIG_SHA256) < 0 ? -ENOMEM : 0;
}

void xp_sha256_update(struct xp_sha256 *s, const void *data, size_t size)
{
        if (size > 0)
                gnutls_hash(s->h, data, size);
}

static void format_hex(const unsigned char raw[32], char out[static XP_IMAGE_DIGEST_BUFSIZE])
{
        memcpy(out, "sha256:", 7);
        xp_hex_encode(raw, 32, out + 7);
}

void xp_sha256_final(struct xp_sha256 *s, char out[static XP_IMAGE_DIGEST_BUFSIZE])
{
        unsigned char raw[32];

        gnutls_hash_deinit(s->h, raw);
        s->h = NULL;
        format_hex(raw, out);
}

int xp_sha256_digest(const void *data, size_t size, char out[static XP_IMAGE_DIGEST_BUFSIZE])
{
        unsigned char raw[32];

        if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, size, raw) < 0)
                return -ENOMEM;
        format_hex(raw, out);
        return 0;
}

int xp_image_digest_check(
    const void *data, size_t size, const char *digest, const char *what, struct xp_error *err)
{
        char got[XP_IMAGE_DIGEST_BUFSIZE];
        int r;

        r = xp_sha256_digest(data, size, got);
        if (r < 0)
                return r;
        if (strcmp(got, digest) != 0)
                return xp_errorf(err,
                                 -EILSEQ,
                                 "%s does not match its digest: expected %s, got %s",
                                 what,
                                 digest,
                                 got);
        return 0;
}

int xp_image_json_load(
    const char *data, size_t size, size_t max, json_t **ret, struct xp_error *err)
{
        json_error_t jerr;

        if (size > max)
                return xp_errorf(err, -EBADMSG, "larger than %zu bytes", max);
        *ret = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!*ret)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "not JSON: line %d column %d: %s",
                                 jerr.line,
                                 jerr.column,
                                 jerr.text);
        return 0;
}

void xp_image_strv_free(char **v)
{
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

size_t xp_image_strv_length(char *const *v)
{
        size_t n = 0;

        while (v && v[n])
                n++;
        return n;
}

int xp_image_strv_copy(char *const *v, char ***ret)
{
        size_t n = xp_image_strv_length(v);
        char **copy;

        if (!v) {
                *ret = NULL;
                return 0;
        }
        copy = calloc(n + 1, sizeof(*copy));
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(copy[i] = strdup(v[i]))) {
                        xp_image_strv_free(copy);
                        return -ENOMEM;
                }
        *ret = copy;
        return 0;
}
