/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/quantity.h"
#include "xpool/strutil.h"

/* One base unit in nano-units, the finest precision Kubernetes keeps. */
#define NANO_PER_UNIT 1000000000

/* One milli-unit in nano-units. */
#define NANO_PER_MILLI 1000000

/* The largest magnitude, in nano-units: 2^63-1 base units (about 9.2e27 nano-units). */
#define NANO_MAX ((__int128)INT64_MAX * NANO_PER_UNIT)

/*
 * Decimal exponents are clamped to this magnitude before any arithmetic. Far beyond it, any
 * non-zero value is either out of range or rounds up to one nano-unit, so the clamp changes
 * no result but keeps every loop and every sum small.
 */
#define EXPONENT_CLAMP 100000

/* The most decimal digits a value in range can have in nano-units (NANO_MAX < 10^28). */
#define NANO_DIGITS_MAX 28

/* Room for the significant digits of the input times 1024^6 (at most 19 more digits). */
#define DIGITS_MAX (XP_QUANTITY_INPUT_MAX + 24)

struct suffix {
        const char *name;
        enum xp_quantity_format format;
        int pow10;   /* the value is multiplied by 10^pow10 ... */
        int pow1024; /* ... and by 1024^pow1024 */
};

static const struct suffix suffixes[] = {
    {.name = "", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = 0},
    {.name = "n", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = -9},
    {.name = "u", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = -6},
    {.name = "m", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = -3},
    {.name = "k", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = 3},
    {.name = "M", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = 6},
    {.name = "G", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = 9},
    {.name = "T", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = 12},
    {.name = "P", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = 15},
    {.name = "E", .format = XP_QUANTITY_DECIMAL_SI, .pow10 = 18},
    {.name = "Ki", .format = XP_QUANTITY_BINARY_SI, .pow1024 = 1},
    {.name = "Mi", .format = XP_QUANTITY_BINARY_SI, .pow1024 = 2},
    {.name = "Gi", .format = XP_QUANTITY_BINARY_SI, .pow1024 = 3},
    {.name = "Ti", .format = XP_QUANTITY_BINARY_SI, .pow1024 = 4},
    {.name = "Pi", .format = XP_QUANTITY_BINARY_SI, .pow1024 = 5},
    {.name = "Ei", .format = XP_QUANTITY_BINARY_SI, .pow1024 = 6},
};

/* Decimal SI suffixes for the exponents -9, -6, -3, 0, 3, ..., 18, in that order. */
static const char *const decimal_si_names[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};

/* Binary SI suffixes for 1024^0 .. 1024^6. */
static const char *const binary_si_names[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static int invalid(const char *text, struct xp_error *err)
{
        char quoted[XP_QUOTE_MAX];

        return xp_errorf(err, -EINVAL, "%s is not a valid quantity", xp_quote(text, quoted));
}

static int out_of_range(const char *text, struct xp_error *err)
{
        char quoted[XP_QUOTE_MAX];

        return xp_errorf(err,
                         -ERANGE,
                         "%s is out of range: the largest quantity is %" PRId64,
                         xp_quote(text, quoted),
                         INT64_MAX);
}

static const struct suffix *suffix_lookup(const char *name)
{
        /* the first byte rules out most suffixes without a call (every quantity of a pod) */
        for (size_t i = 0; i < XP_ELEMENTSOF(suffixes); i++)
                if (suffixes[i].name[0] == name[0] && strcmp(suffixes[i].name, name) == 0)
                        return &suffixes[i];
        return NULL;
}

/*
 * Parses the digits of a decimal exponent ("3", "-3", "+03") the way Go's strconv.ParseInt does
 * for Kubernetes: the whole string, an optional sign and at least one digit, and the value must
 * fit in an int64. The result is clamped to +-EXPONENT_CLAMP.
 */
static int exponent_parse(const char *s, long *ret)
{
        bool negative = false;
        uint64_t limit = INT64_MAX;
        uint64_t v = 0;

        if (*s == '+' || *s == '-') {
                negative = *s == '-';
                s++;
        }
        if (negative)
                limit = (uint64_t)INT64_MAX + 1;
        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                unsigned d;

                if (!is_digit(*s))
                        return -EINVAL;
                d = (unsigned)(*s - '0');
                if (v > (limit - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        if (v > EXPONENT_CLAMP)
                v = EXPONENT_CLAMP;
        *ret = negative ? -(long)v : (long)v;
        return 0;
}

/* digits[] holds n decimal digits, least significant first; multiplies them by m in place. */
static size_t digits_multiply(uint8_t digits[static DIGITS_MAX], size_t n, unsigned m)
{
        unsigned carry = 0;

        for (size_t i = 0; i < n; i++) {
                unsigned v = digits[i] * m + carry;

                digits[i] = (uint8_t)(v % 10);
                carry = v / 10;
        }
        while (carry > 0 && n < DIGITS_MAX) {
                digits[n++] = (uint8_t)(carry % 10);
                carry /= 10;
        }
        return n;
}

/* The significant digits of int_part[0..int_len) and frac_part[0..frac_len) into digits, least
 * significant first. Returns how many (0: the number is zero). */
static size_t significant_digits(const char *int_part,
                                 size_t int_len,
                                 const char *frac_part,
                                 size_t frac_len,
                                 uint8_t digits[static DIGITS_MAX])
{
        size_t n = 0;

        /* most significant first for now */
        for (size_t i = 0; i < int_len + frac_len; i++) {
                char c = i < int_len ? int_part[i] : frac_part[i - int_len];

                if (n == 0 && c == '0')
                        continue;
                digits[n++] = (uint8_t)(c - '0');
        }
        for (size_t i = 0; i < n / 2; i++) {
                uint8_t t = digits[i];

                digits[i] = digits[n - 1 - i];
                digits[n - 1 - i] = t;
        }
        return n;
}

/* digits[0..n) * 10^shift, in nano-units whose top digit is not zero: 0 with *ret, or -ERANGE. */
static int nano_magnitude(const uint8_t *digits, size_t n, long shift, unsigned __int128 *ret)
{
        unsigned __int128 mag = 0;

        if ((long)n + shift > NANO_DIGITS_MAX)
                return -ERANGE;
        for (long i = (long)n - 1; i >= 0 && i >= -shift; i--)
                mag = mag * 10 + digits[i];
        for (long i = 0; i < shift; i++)
                mag *= 10;
        /* Anything finer than a nano-unit rounds up, away from zero, as Kubernetes does. */
        for (long i = 0; i < (long)n && i < -shift; i++) {
                if (digits[i] != 0) {
                        mag++;
                        break;
                }
        }
        if (mag > (unsigned __int128)NANO_MAX)
                return -ERANGE;
        *ret = mag;
        return 0;
}

/*
 * What nano_magnitude() makes of a whole number of at most WHOLE_DIGITS_MAX digits times
 * 1024^pow1024 and 10^shift (0 <= shift <= NANO_DIGITS_MAX), without its array of digits: most
 * quantities are written so ("4", "64Gi", "500m"). 0 with *ret, or -ERANGE.
 */
#define WHOLE_DIGITS_MAX 18
static int
whole_magnitude(const char *digits, size_t len, int pow1024, long shift, unsigned __int128 *ret)
{
        unsigned __int128 mag = 0;

        /* below 10^18 to start with, and never past NANO_MAX before a multiplication by at
         * most 1024: no step overflows */
        for (size_t i = 0; i < len; i++)
                mag = mag * 10 + (unsigned)(digits[i] - '0');
        for (int i = 0; i < pow1024; i++)
                if ((mag *= 1024) > (unsigned __int128)NANO_MAX)
                        return -ERANGE;
        for (long i = 0; i < shift; i++)
                if ((mag *= 10) > (unsigned __int128)NANO_MAX)
                        return -ERANGE;
        *ret = mag;
        return 0;
}

/* The digits' magnitude in nano-units (0: the number is zero): 0, or -ERANGE. */
static int digits_magnitude(const char *int_part,
                            size_t int_len,
                            const char *frac_part,
                            size_t frac_len,
                            int pow1024,
                            long exponent,
                            unsigned __int128 *ret)
{
        uint8_t digits[DIGITS_MAX]; /* significant digits, least significant first */
        long shift = exponent - (long)frac_len + 9;
        size_t n;

        if (!frac_part && int_len <= WHOLE_DIGITS_MAX && shift >= 0 && shift <= NANO_DIGITS_MAX)
                return whole_magnitude(int_part, int_len, pow1024, shift, ret);
        n = significant_digits(int_part, int_len, frac_part, frac_len, digits);
        if (n == 0) {
                *ret = 0;
                return 0;
        }
        for (int i = 0; i < pow1024; i++)
                n = digits_multiply(digits, n, 1024);
        return nano_magnitude(digits, n, shift, ret);
}

int xp_quantity_parse(const char *text, struct xp_quantity *ret, struct xp_error *err)
{
        const struct suffix *suffix;
        const char *p, *int_part, *frac_part = NULL;
        size_t len, int_len, frac_len = 0;
        enum xp_quantity_format format;
        bool negative = false;
        unsigned __int128 mag;
        long exponent = 0;
        int pow1024;

        if (!text)
                return invalid(text, err);
        len = strlen(text);
        if (len > XP_QUANTITY_INPUT_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "quantity is too long (%zu characters, at most %d)",
                                 len,
                                 XP_QUANTITY_INPUT_MAX);

        p = text;
        if (*p == '+' || *p == '-') {
                negative = *p == '-';
                p++;
        }
        int_part = p;
        while (is_digit(*p))
                p++;
        int_len = (size_t)(p - int_part);
        if (*p == '.') {
                frac_part = ++p;
                while (is_digit(*p))
                        p++;
                frac_len = (size_t)(p - frac_part);
        }
        if (int_len + frac_len == 0)
                return invalid(text, err);

        suffix = suffix_lookup(p);
        if (suffix) {
                format = suffix->format;
                exponent = suffix->pow10;
                pow1024 = suffix->pow1024;
        } else if ((*p == 'e' || *p == 'E') && exponent_parse(p + 1, &exponent) >= 0) {
                format = XP_QUANTITY_DECIMAL_EXP;
                pow1024 = 0;
        } else {
                return invalid(text, err);
        }

        if (digits_magnitude(int_part, int_len, frac_part, frac_len, pow1024, exponent, &mag) < 0)
                return out_of_range(text, err);
        if (mag == 0) {
                /* Zero, whatever the exponent; "-0" is plain zero. */
                *ret = (struct xp_quantity){.nano = 0, .format = format};
                return 0;
        }
        /*
         * Kubernetes gives a binary quantity strictly between -1 and 1 the decimal format ("2n"
         * from "0.000000000001Ki"); it prints as decimal either way.
         */
        if (format == XP_QUANTITY_BINARY_SI && mag < NANO_PER_UNIT)
                format = XP_QUANTITY_DECIMAL_SI;

        *ret = (struct xp_quantity){
            .nano = negative ? -(__int128)mag : (__int128)mag,
            .format = format,
        };
        return 0;
}

int xp_quantity_from_double(double value, struct xp_quantity *ret, struct xp_error *err)
{
        char text[64];
        struct xp_quantity q;
        int r;

        if (isnan(value))
                return invalid("NaN", err);
        if (isinf(value))
                return invalid(value > 0 ? "+Inf" : "-Inf", err);

        for (int precision = 1; precision <= 17; precision++) {
                snprintf(text, sizeof(text), "%.*g", precision, value);
                if (strtod(text, NULL) == value)
                        break;
        }
        /* A locale may print another decimal point; the grammar wants '.'. */
        for (char *c = text; *c; c++)
                if (!is_digit(*c) && *c != '-' && *c != '+' && *c != 'e')
                        *c = '.';

        r = xp_quantity_parse(text, &q, err);
        if (r < 0)
                return r;
        /* The literal is lost, so the plain decimal form is the natural one: 1000.0 is "1k". */
        q.format = XP_QUANTITY_DECIMAL_SI;
        *ret = q;
        return 0;
}

struct xp_quantity xp_quantity_from_int(int64_t value)
{
        return (struct xp_quantity){
            .nano = (__int128)value * NANO_PER_UNIT,
            .format = XP_QUANTITY_DECIMAL_SI,
        };
}

struct xp_quantity xp_quantity_from_milli(int64_t milli)
{
        return (struct xp_quantity){
            .nano = (__int128)milli * NANO_PER_MILLI,
            .format = XP_QUANTITY_DECIMAL_SI,
        };
}

struct xp_quantity xp_quantity_from_nano(int64_t nano)
{
        return (struct xp_quantity){.nano = nano, .format = XP_QUANTITY_DECIMAL_SI};
}

static unsigned __int128 magnitude(__int128 v)
{
        return v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
}

/* Appends the decimal digits of v at buf + o; returns the new offset. */
static size_t format_u128(unsigned __int128 v, char *buf, size_t o)
{
        char tmp[40];
        size_t n = 0;

        do {
                tmp[n++] = (char)('0' + (int)(v % 10));
                v /= 10;
        } while (v > 0);
        while (n > 0)
                buf[o++] = tmp[--n];
        return o;
}

char *xp_quantity_format(const struct xp_quantity *q, char buf[static XP_QUANTITY_STRING_MAX])
{
        unsigned __int128 mag = magnitude(q->nano);
        enum xp_quantity_format format = q->format;
        size_t o = 0;
        int e = -9;

        if (mag == 0) {
                strcpy(buf, "0");
                return buf;
        }
        if (q->nano < 0)
                buf[o++] = '-';

        /*
         * Binary SI only for whole multiples of 1Ki; decimal SI otherwise. Kubernetes prints a
         * whole binary value such as 2000 bare, which reads back as decimal and prints "2k" the
         * next time; printing it as decimal at once keeps the canonical form stable.
         */
        if (format == XP_QUANTITY_BINARY_SI) {
                const unsigned __int128 kibi = (unsigned __int128)1024 * NANO_PER_UNIT;

                if (mag >= kibi && mag % kibi == 0) {
                        unsigned __int128 units = mag / NANO_PER_UNIT;
                        size_t i = 0;

                        while (i + 1 < XP_ELEMENTSOF(binary_si_names) && units % 1024 == 0) {
                                units /= 1024;
                                i++;
                        }
                        o = format_u128(units, buf, o);
                        strcpy(buf + o, binary_si_names[i]);
                        return buf;
                }
                format = XP_QUANTITY_DECIMAL_SI;
        }

        /* The largest exponent in -9, -6, ..., 18 that leaves a whole mantissa. */
        while (e < 18 && mag % 1000 == 0) {
                mag /= 1000;
                e += 3;
        }
        o = format_u128(mag, buf, o);
        if (format == XP_QUANTITY_DECIMAL_SI)
                strcpy(buf + o, decimal_si_names[(e + 9) / 3]);
        else if (e != 0)
                snprintf(buf + o, XP_QUANTITY_STRING_MAX - o, "e%d", e);
        else
                buf[o] = '\0';
        return buf;
}

int xp_quantity_cmp(const struct xp_quantity *a, const struct xp_quantity *b)
{
        return (a->nano > b->nano) - (a->nano < b->nano);
}

int xp_quantity_sign(const struct xp_quantity *q)
{
        return (q->nano > 0) - (q->nano < 0);
}

bool xp_quantity_is_zero(const struct xp_quantity *q)
{
        return q->nano == 0;
}

bool xp_quantity_is_integer(const struct xp_quantity *q)
{
        return q->nano % NANO_PER_UNIT == 0;
}

static bool in_range(__int128 nano)
{
        return nano >= -NANO_MAX && nano <= NANO_MAX;
}

static int add_nano(const struct xp_quantity *a,
                    const struct xp_quantity *b,
                    __int128 b_nano,
                    struct xp_quantity *ret)
{
        __int128 sum;

        /* Both operands in range first, so the sum itself cannot overflow. */
        if (!in_range(a->nano) || !in_range(b_nano))
                return -ERANGE;
        sum = a->nano + b_nano;
        if (!in_range(sum))
                return -ERANGE;
        *ret = (struct xp_quantity){
            .nano = sum,
            .format = a->nano == 0 ? b->format : a->format,
        };
        return 0;
}

int xp_quantity_add(const struct xp_quantity *a,
                    const struct xp_quantity *b,
                    struct xp_quantity *ret)
{
        return add_nano(a, b, b->nano, ret);
}

int xp_quantity_sub(const struct xp_quantity *a,
                    const struct xp_quantity *b,
                    struct xp_quantity *ret)
{
        if (!in_range(b->nano))
                return -ERANGE;
        return add_nano(a, b, -b->nano, ret);
}

/*
 * The value divided by unit (in nano-units), rounded away from zero as Kubernetes' ScaledValue()
 * does; -ERANGE when the result does not fit in an int64_t.
 */
static int to_scaled_ceil(const struct xp_quantity *q, unsigned unit, int64_t *ret)
{
        unsigned __int128 mag = magnitude(q->nano);
        unsigned __int128 scaled = mag / unit + (mag % unit != 0);

        if (q->nano < 0) {
                if (scaled > (unsigned __int128)INT64_MAX + 1)
                        return -ERANGE;
                *ret = (int64_t) - (__int128)scaled;
        } else {
                if (scaled > INT64_MAX)
                        return -ERANGE;
                *ret = (int64_t)scaled;
        }
        return 0;
}

int xp_quantity_to_nano(const struct xp_quantity *q, int64_t *ret)
{
        return to_scaled_ceil(q, 1, ret);
}

int xp_quantity_to_milli(const struct xp_quantity *q, int64_t *ret)
{
        return to_scaled_ceil(q, NANO_PER_MILLI, ret);
}

int xp_quantity_to_int_ceil(const struct xp_quantity *q, int64_t *ret)
{
        return to_scaled_ceil(q, NANO_PER_UNIT, ret);
}
