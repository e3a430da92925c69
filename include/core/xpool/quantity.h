/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Kubernetes resource quantities ("100m", "1.5", "2Gi", "500Mi", "1e3", "1k", "2M", "250n").
 *
 * A quantity is held exactly as a signed count of nano-units (10^-9 of the base unit), which is
 * the precision Kubernetes keeps (k8s.io/apimachinery ParseQuantity): "250n" stays "250n" and
 * "1.5m" is "1500u"; only finer input ("0.1n", "1.0000000001") is rounded up, away from zero, to
 * the next nano-unit, as Kubernetes does. The magnitude is at most 2^63-1 base units; larger
 * input is rejected with -ERANGE. Here xpool is stricter than Kubernetes on purpose: Kubernetes
 * keeps larger decimal values ("10E", "1e30") and silently caps binary ones ("8Ei") at 2^63-1.
 *
 * The format a quantity was written in (decimal SI, binary SI, decimal exponent) is remembered so
 * that printing gives Kubernetes' canonical form: "1500m" stays "1500m", "1024Mi" prints as
 * "1Gi", "1.5Gi" as "1536Mi", "1000" as "1k", "1e3" as "1e3", "0.5" as "500m", "0.5m" as
 * "500u", "0.5e-3" as "500e-6". As in Kubernetes, a binary value strictly between -1 and 1 takes
 * the decimal SI format when parsed.
 *
 * Grammar (as in k8s.io/apimachinery):
 *   quantity ::= [+-] number suffix
 *   number   ::= digits | digits "." | digits "." digits | "." digits
 *   suffix   ::= "" | n | u | m | k | M | G | T | P | E | Ki | Mi | Gi | Ti | Pi | Ei
 *              | (e|E) [+-] digits
 */

#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"

enum xp_quantity_format {
        XP_QUANTITY_DECIMAL_SI,  /* "", m, k, M, ... */
        XP_QUANTITY_BINARY_SI,   /* Ki, Mi, Gi, ... */
        XP_QUANTITY_DECIMAL_EXP, /* 1e3, 5E-3 */
};

struct xp_quantity {
        __int128 nano; /* value * 10^9, exact; read it only through the functions below */
        enum xp_quantity_format format;
};

/*
 * Longest canonical string plus NUL. A value in range needs at most 33 bytes
 * ("-9223372036854775806999999999e-9"); 48 also holds any __int128 count of nano-units
 * (at most 43 characters), so even a value built out of range prints without truncation.
 */
#define XP_QUANTITY_STRING_MAX 48

/* Longest input accepted by the parser, a bound against hostile input. */
#define XP_QUANTITY_INPUT_MAX 128

/*
 * Parses a quantity. On failure returns -EINVAL (bad syntax) or -ERANGE (too large) with a
 * message of the form `"1.5x" is not a valid quantity` (or `... is out of range`) and leaves
 * *ret untouched.
 */
int xp_quantity_parse(const char *text, struct xp_quantity *ret, struct xp_error *err);

/*
 * Converts a JSON/YAML number (which has lost its literal text) into a quantity, using the
 * shortest decimal text that round-trips the double, so 0.1 becomes "100m", not
 * "100000000000000006e-19". Rejects NaN and infinities with -EINVAL.
 */
int xp_quantity_from_double(double value, struct xp_quantity *ret, struct xp_error *err);

/* An integer count of base units ("4" GPUs, 1073741824 bytes) in decimal SI format. */
struct xp_quantity xp_quantity_from_int(int64_t value);

/* An exact count of milli-units in decimal SI format. */
struct xp_quantity xp_quantity_from_milli(int64_t milli);

/* An exact count of nano-units (metrics-server's nanocores) in decimal SI format. */
struct xp_quantity xp_quantity_from_nano(int64_t nano);

/* Writes the canonical form into buf (XP_QUANTITY_STRING_MAX bytes). Returns buf. */
char *xp_quantity_format(const struct xp_quantity *q, char buf[static XP_QUANTITY_STRING_MAX]);

/* -1, 0, 1 as a < b, a == b, a > b. The format does not take part. */
int xp_quantity_cmp(const struct xp_quantity *a, const struct xp_quantity *b);

bool xp_quantity_is_zero(const struct xp_quantity *q);

/* -1, 0 or 1 as the value is negative, zero or positive. */
int xp_quantity_sign(const struct xp_quantity *q);

/* True when the value is a whole number of base units. */
bool xp_quantity_is_integer(const struct xp_quantity *q);

/*
 * a + b and a - b into *ret; -ERANGE when the result leaves the supported range (then *ret is
 * untouched). The result keeps a's format (b's when a is zero), as Kubernetes' Add does.
 */
int xp_quantity_add(const struct xp_quantity *a,
                    const struct xp_quantity *b,
                    struct xp_quantity *ret);
int xp_quantity_sub(const struct xp_quantity *a,
                    const struct xp_quantity *b,
                    struct xp_quantity *ret);

/*
 * The value in milli-units, rounded up, away from zero, to a whole milli-unit as Kubernetes'
 * MilliValue() does: "250n" gives 1, "-1500u" gives -2. -ERANGE when the result does not fit
 * in an int64_t (beyond about +-9.2e15 base units), where MilliValue() would overflow.
 */
int xp_quantity_to_milli(const struct xp_quantity *q, int64_t *ret);

/*
 * The exact value in nano-units; -ERANGE when it does not fit in an int64_t (beyond about
 * +-9.2e9 base units).
 */
int xp_quantity_to_nano(const struct xp_quantity *q, int64_t *ret);

/*
 * The value in base units rounded up (Kubernetes' Value()); -ERANGE when it does not fit.
 * Like Value(), negative values round away from zero too: -1500m gives -2.
 */
int xp_quantity_to_int_ceil(const struct xp_quantity *q, int64_t *ret);
