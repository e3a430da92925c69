/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Encryption at rest of the kinds the store was opened to encrypt (Secrets): a body is sealed
 * where it is bound into SQL (objects and events rows) and opened where it is read back, so no
 * plaintext reaches the database, its WAL or a recovered copy; what the store holds in memory
 * (the ring of recent writes, the writers' texts) stays plaintext, as kube-apiserver's watch
 * cache does.
 *
 * The stored text: "k8s:enc:aesgcm:v1:NAME:" and the base64 of a 12-byte random nonce, the
 * ciphertext and the 16-byte GCM tag, as kube-apiserver's aesgcm provider lays it out (it
 * stores the bytes after the prefix raw; the store's body column is text). The associated data
 * is the object's key (kind/namespace/name), so a body moved to another row does not open.
 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "xpool/base64.h"
#include "xpool/macro.h"

#define PREFIX    "k8s:enc:aesgcm:v1:"
#define NONCE_LEN 12
#define TAG_LEN   16

bool store_encrypts(const struct xp_store *store, const char *kind)
{
        for (size_t i = 0; store->keys && i < store->n_encrypted; i++)
                if (strcmp(store->encrypted[i], kind) == 0)
                        return true;
        return false;
}

bool store_envelope_is(const char *body, size_t len)
{
        return body && len > strlen(PREFIX) && memcmp(body, PREFIX, strlen(PREFIX)) == 0;
}

/* The key name of an envelope into name (size bytes): 0, or -EBADMSG. *ret_rest: the payload. */
static int
envelope_key(const char *body, size_t len, char *name, size_t size, const char **ret_rest)
{
        const char *start = body + strlen(PREFIX), *end = memchr(start, ':', len - strlen(PREFIX));

        if (!end || (size_t)(end - start) >= size || end == start)
                return -EBADMSG;
        memcpy(name, start, (size_t)(end - start));
        name[end - start] = 0;
        *ret_rest = end + 1;
        return 0;
}

static int aad(const char *kind, const char *ns, const char *name, char **ret)
{
        return asprintf(ret, "%s/%s/%s", kind, ns, name) < 0 ? -ENOMEM : 0;
}

static int aead(const struct xp_store_key *key, gnutls_aead_cipher_hd_t *ret)
{
        gnutls_datum_t k = {.data = (unsigned char *)key->secret, .size = XP_STORE_KEY_BYTES};

        return gnutls_aead_cipher_init(ret, GNUTLS_CIPHER_AES_256_GCM, &k) < 0 ? -EIO : 0;
}

/* nonce || ciphertext || tag of body under key, base64, after the prefix: into *ret. */
static int seal_with(const struct xp_store_key *key,
                     const char *ad,
                     const char *body,
                     size_t len,
                     char **ret,
                     size_t *ret_len)
{
        gnutls_aead_cipher_hd_t h = NULL;
        size_t ct_len = len + TAG_LEN;
        _cleanup_free_ unsigned char *raw = malloc(NONCE_LEN + ct_len);
        _cleanup_free_ char *b64 = NULL;
        int r;

        if (!raw)
                return -ENOMEM;
        if (gnutls_rnd(GNUTLS_RND_NONCE, raw, NONCE_LEN) < 0 || aead(key, &h) < 0)
                return -EIO;
        r = gnutls_aead_cipher_encrypt(
            h, raw, NONCE_LEN, ad, strlen(ad), TAG_LEN, body, len, raw + NONCE_LEN, &ct_len);
        gnutls_aead_cipher_deinit(h);
        if (r < 0)
                return -EIO;
        if (xp_base64_encode(raw, NONCE_LEN + ct_len, &b64) < 0)
                return -ENOMEM;
        r = asprintf(ret, PREFIX "%s:%s", key->name, b64);
        if (r < 0)
                return -ENOMEM;
        *ret_len = (size_t)r;
        return 0;
}

int store_envelope_seal(struct xp_store *store,
                        const char *kind,
                        const char *ns,
                        const char *name,
                        const char *body,
                        size_t len,
                        char **ret,
                        size_t *ret_len,
                        struct xp_error *err)
{
        _cleanup_free_ char *ad = NULL;
        int r = aad(kind, ns, name, &ad);

        if (r >= 0)
                r = seal_with(&store->keys->keys[0], ad, body, len, ret, ret_len);
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "%s %s%s%s: cannot encrypt it with key %s: %s",
                                 kind,
                                 ns,
                                 store_key_ns(ns),
                                 name,
                                 store->keys->keys[0].name,
                                 strerror(-r));
        return 0;
}

/* The plaintext of payload (base64 after the prefix) under key into *ret: 0, -EBADMSG when it
 * is not one or the tag does not match (the wrong key, or damaged). */
static int open_with(const struct xp_store_key *key,
                     const char *ad,
                     const char *payload,
                     size_t len,
                     char **ret,
                     size_t *ret_len)
{
        gnutls_aead_cipher_hd_t h = NULL;
        _cleanup_free_ char *raw = NULL;
        size_t raw_len = 0, pt_len;
        char *pt;
        int r;

        if (xp_base64_decode(payload, len, &raw, &raw_len) < 0 || raw_len < NONCE_LEN + TAG_LEN)
                return -EBADMSG;
        pt_len = raw_len - NONCE_LEN - TAG_LEN;
        pt = malloc(pt_len + 1);
        if (!pt)
                return -ENOMEM;
        if (aead(key, &h) < 0) {
                free(pt);
                return -EIO;
        }
        r = gnutls_aead_cipher_decrypt(h,
                                       raw,
                                       NONCE_LEN,
                                       ad,
                                       strlen(ad),
                                       TAG_LEN,
                                       raw + NONCE_LEN,
                                       raw_len - NONCE_LEN,
                                       pt,
                                       &pt_len);
        gnutls_aead_cipher_deinit(h);
        if (r < 0) {
                free(pt);
                return -EBADMSG;
        }
        pt[pt_len] = 0;
        *ret = pt;
        *ret_len = pt_len;
        return 0;
}

int store_envelope_open(struct xp_store *store,
                        const char *kind,
                        const char *ns,
                        const char *name,
                        const char *body,
                        size_t len,
                        char **ret,
                        size_t *ret_len,
                        struct xp_error *err)
{
        char key_name[XP_STORE_KEY_NAME_MAX + 1];
        const struct xp_store_key *key;
        _cleanup_free_ char *ad = NULL;
        const char *payload;
        int r;

        if (!store_envelope_is(body, len))
                return 0; /* written before encryption, or a kind not encrypted */
        if (envelope_key(body, len, key_name, sizeof(key_name), &payload) < 0)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "%s %s%s%s: its encrypted body is damaged (no key name)",
                                 kind,
                                 ns,
                                 store_key_ns(ns),
                                 name);
        key = store->keys ? xp_store_keys_find(store->keys, key_name) : NULL;
        if (!key)
                return xp_errorf(err,
                                 -ENOKEY,
                                 "%s %s%s%s cannot be decrypted with the keys in the data "
                                 "directory's encryption.keys: it is encrypted with key %s, "
                                 "which that file does not hold (a lost or replaced key file; "
                                 "docs/security.md, \"Encryption at rest\")",
                                 kind,
                                 ns,
                                 store_key_ns(ns),
                                 name,
                                 key_name);
        if (aad(kind, ns, name, &ad) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r = open_with(key, ad, payload, len - (size_t)(payload - body), ret, ret_len);
        if (r == -EBADMSG)
                return xp_errorf(err,
                                 -EKEYREJECTED,
                                 "%s %s%s%s cannot be decrypted with the keys in the data "
                                 "directory's encryption.keys: the file's key %s is not the key "
                                 "it was encrypted with (key %s replaced), or the body is damaged",
                                 kind,
                                 ns,
                                 store_key_ns(ns),
                                 name,
                                 key_name,
                                 key_name);
        if (r < 0)
                return xp_errorf(
                    err, r, "%s %s%s%s: %s", kind, ns, store_key_ns(ns), name, strerror(-r));
        return 1;
}

bool store_envelope_primary(const struct xp_store *store, const char *body, size_t len)
{
        char key_name[XP_STORE_KEY_NAME_MAX + 1];
        const char *payload;

        return store_envelope_is(body, len) &&
               envelope_key(body, len, key_name, sizeof(key_name), &payload) == 0 &&
               strcmp(key_name, store->keys->keys[0].name) == 0;
}
