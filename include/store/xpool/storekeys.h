/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The keys the store encrypts some kinds with at rest (Secrets: docs/security.md, docs/store.md).
 * A key file (DIR/encryption.keys, 0600) holds one key a line, the primary first:
 *
 *   # comment
 *   NAME aesgcm BASE64-OF-32-BYTES
 *
 * Each stored body of an encrypted kind is AES-256-GCM under one key, with the key's name in
 * its prefix as kube-apiserver writes it ("k8s:enc:aesgcm:v1:NAME:"), so that a body written
 * under an older key still decrypts while that key is in the file. New writes use the primary.
 */

#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"
#include "xpool/macro.h"

#define XP_STORE_KEY_BYTES    32 /* AES-256 */
#define XP_STORE_KEY_NAME_MAX 64
#define XP_STORE_KEYS_MAX     16

/* The kinds (as stored) the server encrypts: xp_store_options.encrypted_kinds. */
#define XP_STORE_ENCRYPTED_KINDS ((const char *const[]){"secrets", NULL})

struct xp_store_key {
        char name[XP_STORE_KEY_NAME_MAX + 1]; /* [A-Za-z0-9._-]+ */
        unsigned char secret[XP_STORE_KEY_BYTES];
};

struct xp_store_keys {
        struct xp_store_key keys[XP_STORE_KEYS_MAX]; /* keys[0] is the primary */
        size_t n;
};

/*
 * Reads the key file at path into *ret (caller frees with xp_store_keys_free()). When the file
 * is missing and create is set, a new file with one random key ("key1") is written durably
 * (0600; the file and its directory fsync'ed) first. -ENOENT (missing, !create), -EBADMSG with
 * the line that is wrong, -EPERM when others may read the file, -errno with err naming it.
 */
int xp_store_keys_load(const char *path,
                       bool create,
                       struct xp_store_keys **ret,
                       struct xp_error *err);
void xp_store_keys_free(struct xp_store_keys *keys);
XP_DEFINE_FREEP(struct xp_store_keys, xp_store_keys_free)

/* Writes keys to path, replacing it atomically and durably (0600). */
int xp_store_keys_save(const char *path, const struct xp_store_keys *keys, struct xp_error *err);

/* Adds a new random key as the primary, named "keyN" (N one above the highest in use);
 * *ret_name (may be NULL) points at its name. -E2BIG when XP_STORE_KEYS_MAX are there. */
int xp_store_keys_add(struct xp_store_keys *keys, const char **ret_name, struct xp_error *err);

/* Keeps the primary key only. */
void xp_store_keys_retire(struct xp_store_keys *keys);

/* The key called name, or NULL. */
const struct xp_store_key *xp_store_keys_find(const struct xp_store_keys *keys, const char *name);
