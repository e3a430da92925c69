/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_quantity_parse(). For every input that parses, checks that:
 *  - the value stays within +-(2^63-1) base units and its canonical string fits the buffer;
 *  - the canonical string parses back to the same value and prints the same string again, and
 *    it is in canonical form: its mantissa is whole and has no three trailing zeros to spare;
 *  - q + q - q == q whenever q + q does not leave the range, and q - q == 0;
 *  - to_int_ceil() always succeeds, to_milli() and to_nano() succeed exactly when the result
 *    fits an int64_t, and all three round away from zero by less than one unit.
 * On failure the error code and message must be set.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/quantity.h"

#define NANO_MAX ((__int128)INT64_MAX * 1000000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

/* The mantissa of a canonical string: the digits before the suffix, without the sign. */
static void check_canonical_form(const char *s, const struct xp_quantity *q)
{
        size_t digits;

        if (xp_quantity_is_zero(q)) {
                check(strcmp(s, "0") == 0);
                return;
        }
        if (*s == '-')
                s++;
        digits = strspn(s, "0123456789");
        check(digits > 0 && s[0] != '0');
        /* Binary mantissas may end in zeros ("1000Ki"); decimal ones only below an exa. */
        if (s[digits] == '\0' || strchr("num", s[digits]) ||
            (strchr("kMGTP", s[digits]) && s[digits + 1] == '\0') ||
            (s[digits] == 'e' && strcmp(s + digits, "e18") != 0))
                check(digits < 3 || strcmp(s + digits - 3, "000") != 0);
}

static void check_round_trip(const struct xp_quantity *q)
{
        char s1[XP_QUANTITY_STRING_MAX], s2[XP_QUANTITY_STRING_MAX];
        struct xp_quantity q2;

        xp_quantity_format(q, s1);
        check(strlen(s1) < XP_QUANTITY_STRING_MAX);
        check_canonical_form(s1, q);
        check(xp_quantity_parse(s1, &q2, NULL) == 0);
        check(xp_quantity_cmp(q, &q2) == 0);
        check(q2.nano == q->nano);
        xp_quantity_format(&q2, s2);
        check(strcmp(s1, s2) == 0);
}

/* Checks that ret (from a conversion that succeeded) is q / unit rounded away from zero. */
static void check_scaled(const struct xp_quantity *q, int64_t unit, int64_t ret)
{
        __int128 diff = (__int128)ret * unit - q->nano;

        if (q->nano >= 0)
                check(diff >= 0 && diff < unit);
        else
                check(diff <= 0 && diff > -unit);
}

static void check_arithmetic(const struct xp_quantity *q)
{
        struct xp_quantity sum, back, zero;
        int64_t units, milli, nano;
        int r;

        r = xp_quantity_add(q, q, &sum);
        if (r == 0) {
                check(sum.nano == 2 * q->nano);
                check(xp_quantity_sub(&sum, q, &back) == 0);
                check(xp_quantity_cmp(&back, q) == 0);
                check_round_trip(&sum);
        } else {
                check(r == -ERANGE);
                check(2 * q->nano > NANO_MAX || 2 * q->nano < -NANO_MAX);
        }
        check(xp_quantity_sub(q, q, &zero) == 0);
        check(xp_quantity_is_zero(&zero));
        check(xp_quantity_sign(q) == (q->nano > 0) - (q->nano < 0));

        check(xp_quantity_to_int_ceil(q, &units) == 0);
        check_scaled(q, 1000000000, units);
        check(xp_quantity_is_integer(q) == ((__int128)units * 1000000000 == q->nano));

        r = xp_quantity_to_milli(q, &milli);
        if (r == 0) {
                check_scaled(q, 1000000, milli);
        } else {
                /* Out of range only when even the value truncated toward zero is. */
                __int128 trunc = q->nano / 1000000;

                check(r == -ERANGE && (trunc >= INT64_MAX || trunc <= INT64_MIN));
        }

        r = xp_quantity_to_nano(q, &nano);
        if (r == 0) {
                check(nano == q->nano);
                back = xp_quantity_from_nano(nano);
                check(xp_quantity_cmp(&back, q) == 0);
        } else {
                check(r == -ERANGE && (q->nano > INT64_MAX || q->nano < INT64_MIN));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_error err = {0};
        struct xp_quantity q;
        char *text;
        int r;

        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        r = xp_quantity_parse(text, &q, &err);
        if (r == 0) {
                check(q.nano <= NANO_MAX && q.nano >= -NANO_MAX);
                check(q.format == XP_QUANTITY_DECIMAL_SI || q.format == XP_QUANTITY_BINARY_SI ||
                      q.format == XP_QUANTITY_DECIMAL_EXP);
                check(strlen(text) <= XP_QUANTITY_INPUT_MAX);
                check_round_trip(&q);
                check_arithmetic(&q);
        } else {
                check(r == -EINVAL || r == -ERANGE);
                check(err.code == r && err.msg[0] != '\0');
        }

        free(text);
        return 0;
}
