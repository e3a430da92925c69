/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "xpool/names.h"
#include "xpool/strutil.h"

#define ANNOTATIONS_TOTAL_MAX (256 * 1024)

static int check_map(struct xp_decode_ctx *ctx, const struct xp_strmap *map, bool values_are_labels)
{
        for (size_t i = 0; i < map->n; i++) {
                const char *key = map->items[i].key;
                struct xp_error cause = {0};
                int r;

                if (values_are_labels) {
                        r = xp_check_qualified_name(key, &cause);
                } else {
                        /* annotation keys are checked in lower case, as Kubernetes does */
                        _cleanup_free_ char *lower = strdup(key);

                        if (!lower)
                                return -ENOMEM;
                        for (char *p = lower; *p; p++)
                                *p = (char)tolower((unsigned char)*p);
                        r = xp_check_qualified_name(lower, &cause);
                        if (r < 0)
                                xp_check_qualified_name(
                                    key, &cause); /* the message shows the key as written */
                }
                if (r < 0)
                        return xp_decode_fail_error(ctx, &cause, key, true);
                if (values_are_labels && xp_check_label_value(map->items[i].value, &cause) < 0)
                        return xp_decode_fail_error(ctx, &cause, key, false);
        }
        return 0;
}

int xp_check_label_map(struct xp_decode_ctx *ctx, const void *value)
{
        return check_map(ctx, value, true);
}

int xp_check_annotation_map(struct xp_decode_ctx *ctx, const void *value)
{
        const struct xp_strmap *map = value;
        size_t total = 0;
        int r = check_map(ctx, map, false);

        if (r < 0)
                return r;
        for (size_t i = 0; i < map->n; i++)
                total += strlen(map->items[i].key) + strlen(map->items[i].value);
        if (total > ANNOTATIONS_TOTAL_MAX)
                return xp_decode_fail(ctx,
                                      -E2BIG,
                                      NULL,
                                      false,
                                      "too long: must have at most %d bytes in all, has %zu",
                                      ANNOTATIONS_TOTAL_MAX,
                                      total);
        return 0;
}

static int relay(struct xp_decode_ctx *ctx, int r, const struct xp_error *cause)
{
        return r < 0 ? xp_decode_fail_error(ctx, cause, NULL, false) : 0;
}

int xp_check_subdomain_field(struct xp_decode_ctx *ctx, const void *value)
{
        struct xp_error cause = {0};

        return relay(ctx, xp_check_dns1123_subdomain(*(char *const *)value, &cause), &cause);
}

int xp_check_label_field(struct xp_decode_ctx *ctx, const void *value)
{
        struct xp_error cause = {0};

        return relay(ctx, xp_check_dns1123_label(*(char *const *)value, &cause), &cause);
}

int xp_check_qualified_field(struct xp_decode_ctx *ctx, const void *value)
{
        struct xp_error cause = {0};

        return relay(ctx, xp_check_qualified_name(*(char *const *)value, &cause), &cause);
}

int xp_check_label_value_field(struct xp_decode_ctx *ctx, const void *value)
{
        struct xp_error cause = {0};

        return relay(ctx, xp_check_label_value(*(char *const *)value, &cause), &cause);
}

static int check_int_not_negative(struct xp_decode_ctx *ctx, int64_t v)
{
        struct xp_ge_msg m;

        if (v < 0)
                return xp_decode_fail(ctx, -EINVAL, NULL, false, "%s", xp_ge_msg_int(&m, v, 0));
        return 0;
}

int xp_check_non_negative(struct xp_decode_ctx *ctx, const void *value)
{
        return check_int_not_negative(ctx, *(const int64_t *)value);
}

int xp_check_opt_non_negative(struct xp_decode_ctx *ctx, const void *value)
{
        return check_int_not_negative(ctx, ((const struct xp_opt_int64 *)value)->value);
}

int xp_check_weight(struct xp_decode_ctx *ctx, const void *value)
{
        int64_t weight = *(const int64_t *)value;

        if (weight < 1 || weight > 100)
                return xp_decode_fail(ctx,
                                      -EINVAL,
                                      NULL,
                                      false,
                                      "Invalid value: %lld: must be in the range 1-100",
                                      (long long)weight);
        return 0;
}

int xp_fail_duplicate(struct xp_decode_ctx *ctx,
                      const char *list,
                      size_t index,
                      const char *field,
                      const char *value,
                      const char *why)
{
        char q[XP_QUOTE_MAX];
        int r;

        xp_path_push_field(&ctx->path, list);
        xp_path_push_index(&ctx->path, index);
        xp_path_push_field(&ctx->path, field);
        r = xp_decode_fail(
            ctx, -EINVAL, NULL, false, "Duplicate value: %s: %s", xp_quote(value, q), why);
        xp_path_pop(&ctx->path);
        xp_path_pop(&ctx->path);
        xp_path_pop(&ctx->path);
        return r;
}

/* `field: message`, or `field[key]: message` positioned at the key. */
_printf_(5, 0) static int vfail(struct xp_decode_ctx *ctx,
                                int code,
                                const char *field,
                                const char *key,
                                const char *fmt,
                                va_list ap)
{
        char message[XP_ERROR_MSG_MAX];
        int r;

        vsnprintf(message, sizeof(message), fmt, ap);
        xp_path_push_field(&ctx->path, field);
        r = xp_decode_fail(ctx, code, key, key != NULL, "%s", message);
        xp_path_pop(&ctx->path);
        return r;
}

int xp_fail_field(struct xp_decode_ctx *ctx, int code, const char *field, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vfail(ctx, code, field, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int xp_fail_key(
    struct xp_decode_ctx *ctx, int code, const char *field, const char *key, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vfail(ctx, code, field, key, fmt, ap);
        va_end(ap);
        return r;
}
