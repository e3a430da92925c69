/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What ConfigMap and Secret share: their keys, sizes and immutability (kind_configmap.c). */

#include <jansson.h>
#include <stddef.h>

#include "xpool/doc.h"

/* Kubernetes' MaxSecretSize and the ConfigMap's limit: 1 MiB of values in all. */
#define XP_CONFIG_SIZE_MAX (1024 * 1024)
/* A key is at most a DNS subdomain's length. */
#define XP_CONFIG_KEY_MAX 253

/* Why key is not a valid config key, in Kubernetes' words (IsConfigMapKey); NULL when it is. */
const char *xp_config_key_problem(const char *key);
/* Every key of map (NULL: none) valid, else `field[key]: Invalid value: ...`. */
int xp_config_check_keys(struct xp_decode_ctx *ctx, const json_t *map, const char *field);
/* Adds the bytes of map's base64 values to *size; `field[key]: Invalid value: ...` for one that
 * is not base64. */
int xp_config_binary_size(struct xp_decode_ctx *ctx,
                          const json_t *map,
                          const char *field,
                          size_t *size);
/* The bytes of map's string values. */
size_t xp_config_string_size(const json_t *map);
/* Once old is immutable: immutable stays true and the fields (NULL-terminated) stay as they
 * were, else `field: Forbidden: field is immutable when `immutable` is set`. */
int xp_config_check_immutable(struct xp_decode_ctx *ctx,
                              const struct xp_doc *doc,
                              const struct xp_doc *old,
                              const char *const *fields);
