/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-apiserver's words for a value under its minimum (field.ErrorList's "Invalid value" of
 * ValidateNonnegativeField and its kin), written in one place so that every kind says it alike
 * and clients that match the text keep matching it (schema.h).
 */
#include <stdio.h>

#include "schema.h"

const char *xp_ge_msg(struct xp_ge_msg *m, const char *value, const char *bound)
{
        snprintf(m->text,
                 sizeof(m->text),
                 "Invalid value: %s%smust be greater than or equal to %s",
                 value ? value : "",
                 value ? ": " : "",
                 bound);
        return m->text;
}

const char *xp_ge_msg_int(struct xp_ge_msg *m, long long value, long long min)
{
        char v[24], b[24];

        snprintf(v, sizeof(v), "%lld", value);
        snprintf(b, sizeof(b), "%lld", min);
        return xp_ge_msg(m, v, b);
}

const char *xp_ge_msg_quoted(struct xp_ge_msg *m, const char *value, long long min)
{
        char v[sizeof(m->text)], b[24];

        snprintf(v, sizeof(v), "\"%s\"", value);
        snprintf(b, sizeof(b), "%lld", min);
        return xp_ge_msg(m, v, b);
}
