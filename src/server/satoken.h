/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Service account tokens: JSON Web Tokens signed ES256 (ECDSA P-256, SHA-256) with the server's
 * key, DATA_DIR/serviceaccount.key (PKCS #8 PEM, 0600, made at the first start), as
 * kube-apiserver's --service-account-signing-key-file. The claims are Kubernetes' (the handler
 * of TokenRequest builds them: api_token.c); this file signs, and checks a token's shape,
 * signature, issuer, audience and times. Who the token names (the ServiceAccount, the pod it is
 * bound to) is checked against the store by the caller (satoken_auth.c).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

/* kube-apiserver's default --service-account-issuer, also its --api-audiences. */
#define SATOKEN_ISSUER             "https://kubernetes.default.svc.cluster.local"
#define SATOKEN_KEY_FILE           "serviceaccount.key"
#define SATOKEN_MAX                8192 /* a token's text */
#define SATOKEN_EXPIRATION_MIN     600  /* TokenRequest's expirationSeconds, as Kubernetes */
#define SATOKEN_EXPIRATION_MAX     (1LL << 32)
#define SATOKEN_EXPIRATION_DEFAULT 3600

struct satoken_key;

/* Loads path, or makes it (0600) when absent. -errno with err naming the file. */
int satoken_key_open(const char *path, struct satoken_key **ret, struct xp_error *err);
void satoken_key_free(struct satoken_key *key);

/* A signed token of claims (borrowed): *ret (caller frees), or -ENOMEM/-EINVAL. */
int satoken_sign(const struct satoken_key *key, const json_t *claims, char **ret);

/* Whether text has a JWT's shape (three base64url parts), so it is not an xpool token. */
bool satoken_looks_like_jwt(const char *text, size_t len);

/*
 * The claims of token (len bytes) when it is signed by key, names SATOKEN_ISSUER, has
 * SATOKEN_ISSUER among its audiences, and holds at now (nbf <= now < exp): 0 with *ret_claims
 * (caller frees), else -EACCES with err saying why (fit for a 401), or -ENOMEM.
 */
int satoken_verify(const struct satoken_key *key,
                   const char *token,
                   size_t len,
                   int64_t now,
                   json_t **ret_claims,
                   struct xp_error *err);

struct auth_identity;
struct xp_store;

/* The annotation of a ServiceAccount that grants it one of xpool's roles: "admin" or "reader"
 * (only an admin may write ServiceAccounts: docs/security.md). */
#define SATOKEN_ROLE_ANNOTATION "xpool.io/role"

/*
 * Authenticates a service account token (satoken_auth.c): satoken_verify(), then the store must
 * still hold the ServiceAccount it names, with the uid it names, and the pod it is bound to (if
 * any), with its uid and not being deleted, as kube-apiserver's legacy and bound token checks.
 * 0 with *ret filled (user system:serviceaccount:NS:NAME, role from SATOKEN_ROLE_ANNOTATION),
 * else -EACCES with err saying why, or -ENOMEM.
 */
int satoken_authenticate(const struct satoken_key *key,
                         struct xp_store *store,
                         const char *token,
                         size_t len,
                         int64_t now,
                         struct auth_identity *ret,
                         struct xp_error *err);

/* The token of an Authorization header "Bearer <JWT>" (the scheme in any case): true with
 * *ret_token and *ret_len pointing into authorization; false for anything else. */
bool satoken_in_header(const char *authorization, const char **ret_token, size_t *ret_len);
