/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_quantity_parse(). For every input that parses, checks that:
 *  - the value stays within +-(2^63-1) base units and its canonical string fits the buffer;
 *  - the canonical string parses back to the same value and prints the same string again;
 *  - q + q - q == q whenever q + q does not leave the range, and q - q == 0;
 *  - to_int_ceil() always succeeds and rounds away from zero.
 * On failure the error code and message must be set.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/quantity.h"

#define MILLI_MAX ((__int128)INT64_MAX * 1000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static void check_round_trip(const struct xp_quantity *q)
{
        char s1[XP_QUANTITY_STRING_MAX], s2[XP_QUANTITY_STRING_MAX];
        struct xp_quantity q2;

        xp_quantity_format(q, s1);
        check(strlen(s1) < XP_QUANTITY_STRING_MAX);
        check(xp_quantity_parse(s1, &q2, NULL) == 0);
        check(xp_quantity_cmp(q, &q2) == 0);
        xp_quantity_format(&q2, s2);
        check(strcmp(s1, s2) == 0);
}

static void check_arithmetic(const struct xp_quantity *q)
{
        struct xp_quantity sum, back, zero;
        int64_t units, milli;
        __int128 diff;
        int r;

        r = xp_quantity_add(q, q, &sum);
        if (r == 0) {
                check(sum.milli == 2 * q->milli);
                check(xp_quantity_sub(&sum, q, &back) == 0);
                check(xp_quantity_cmp(&back, q) == 0);
                check_round_trip(&sum);
        } else {
                check(r == -ERANGE);
                check(2 * q->milli > MILLI_MAX || 2 * q->milli < -MILLI_MAX);
        }
        check(xp_quantity_sub(q, q, &zero) == 0);
        check(xp_quantity_is_zero(&zero));

        check(xp_quantity_to_int_ceil(q, &units) == 0);
        diff = (__int128)units * 1000 - q->milli; /* rounded away from zero by less than 1 */
        if (q->milli >= 0)
                check(diff >= 0 && diff < 1000);
        else
                check(diff <= 0 && diff > -1000);
        check(xp_quantity_is_integer(q) == ((__int128)units * 1000 == q->milli));

        r = xp_quantity_to_milli(q, &milli);
        if (r == 0)
                check(milli == q->milli);
        else
                check(r == -ERANGE && (q->milli > INT64_MAX || q->milli < INT64_MIN));
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
                check(q.milli <= MILLI_MAX && q.milli >= -MILLI_MAX);
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
