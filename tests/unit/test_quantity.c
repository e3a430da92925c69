/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/quantity.h"

#define RANGE_MSG   " is out of range: the largest quantity is 9223372036854775807"
#define INVALID_MSG " is not a valid quantity"
#define NANO        ((__int128)1000000000)
#define NANO_MAX    ((__int128)INT64_MAX * NANO)

/* A value no parse can produce, to check that failures leave *ret alone. */
static const struct xp_quantity sentinel = {.nano = 4242, .format = XP_QUANTITY_BINARY_SI};

static void assert_untouched(const struct xp_quantity *q)
{
        assert_true(q->nano == sentinel.nano);
        assert_int_equal(q->format, sentinel.format);
}

struct valid_case {
        const char *input;
        const char *canonical;
        enum xp_quantity_format format;
};

#define DSI XP_QUANTITY_DECIMAL_SI
#define BSI XP_QUANTITY_BINARY_SI
#define DEX XP_QUANTITY_DECIMAL_EXP

static const struct valid_case valid_cases[] = {
    /* zero in every spelling */
    {"0", "0", DSI},
    {"-0", "0", DSI},
    {"+0", "0", DSI},
    {"0m", "0", DSI},
    {"0.000", "0", DSI},
    {"0Gi", "0", BSI},
    {"0e999999", "0", DEX},
    {"-0.0e-5", "0", DEX},
    /* plain numbers, signs, "1." and ".5" */
    {"1", "1", DSI},
    {"+1", "1", DSI},
    {"-1", "-1", DSI},
    {"1.", "1", DSI},
    {".5", "500m", DSI},
    {"-.5", "-500m", DSI},
    {"+.5", "500m", DSI},
    {"0.5", "500m", DSI},
    {"1.5", "1500m", DSI},
    {"00001", "1", DSI},
    {"1.000", "1", DSI},
    {"1500", "1500", DSI},
    {"1000", "1k", DSI},
    {"2000000", "2M", DSI},
    {"-2000000", "-2M", DSI},
    {"123456789", "123456789", DSI},
    /* every decimal SI suffix */
    {"1n", "1n", DSI},
    {"1u", "1u", DSI},
    {"100m", "100m", DSI},
    {"1000m", "1", DSI},
    {"1500m", "1500m", DSI},
    {"1k", "1k", DSI},
    {"1.5k", "1500", DSI},
    {"0001.5000k", "1500", DSI},
    {"1M", "1M", DSI},
    {"2.5M", "2500k", DSI},
    {"1G", "1G", DSI},
    {"1T", "1T", DSI},
    {"1P", "1P", DSI},
    {"1E", "1E", DSI},
    {"8E", "8E", DSI},
    {"-2k", "-2k", DSI},
    /* nano precision is kept: n and u values print as such */
    {"250n", "250n", DSI},
    {"-250n", "-250n", DSI},
    {"1000n", "1u", DSI},
    {"1080n", "1080n", DSI},
    {"1000u", "1m", DSI},
    {"999999999n", "999999999n", DSI},
    {"1000000000n", "1", DSI},
    {"1000000n", "1m", DSI},
    {"1000001n", "1000001n", DSI},
    {"1500000n", "1500u", DSI},
    {"0.1m", "100u", DSI},
    {"0.5m", "500u", DSI},
    {"1.5m", "1500u", DSI},
    {"-0.1m", "-100u", DSI},
    {"-1.5m", "-1500u", DSI},
    {"-1.5u", "-1500n", DSI},
    {"0.0005k", "500m", DSI},
    {"1.000000001", "1000000001n", DSI},
    {"0.000000123", "123n", DSI},
    {"100.035k", "100035", DSI},
    /* finer than a nano-unit rounds up, away from zero */
    {"0.1n", "1n", DSI},
    {"0.9n", "1n", DSI},
    {"-0.1n", "-1n", DSI},
    {"1.5n", "2n", DSI},
    {"-1.5n", "-2n", DSI},
    {"3.001n", "4n", DSI},
    {"0.0000000001", "1n", DSI},
    {"0.0000000005", "1n", DSI},
    {"0.00000012345", "124n", DSI},
    {"0.00000012354", "124n", DSI},
    {"0.00000012300001", "124n", DSI},
    {"1.00000000001", "1000000001n", DSI},
    {"-1.00000000001", "-1000000001n", DSI},
    {"999999999.1n", "1", DSI},
    {"0.000000000000000000000001", "1n", DSI},
    {"0.00100000000000000000000000000000000000000000000000001", "1000001n", DSI},
    {"1.0000000000000000000000000000000000000000000000000000000000", "1", DSI},
    /* every binary SI suffix and canonicalisation */
    {"1Ki", "1Ki", BSI},
    {"1Mi", "1Mi", BSI},
    {"1Gi", "1Gi", BSI},
    {"1Ti", "1Ti", BSI},
    {"1Pi", "1Pi", BSI},
    {"1Ei", "1Ei", BSI},
    {"7Ei", "7Ei", BSI},
    {"-1Ki", "-1Ki", BSI},
    {"1024Mi", "1Gi", BSI},
    {"1.5Gi", "1536Mi", BSI},
    {"1025Ki", "1025Ki", BSI},
    {"2Ki", "2Ki", BSI},
    {"0.5Ki", "512", BSI},
    {"1.5Ki", "1536", BSI},
    {"0.001Ki", "1024m", BSI},
    /* binary values strictly between -1 and 1 take the decimal format, as in Kubernetes */
    {"0.000001Ki", "1024u", DSI},
    {".000000001Ki", "1024n", DSI},
    {"-.000000001Ki", "-1024n", DSI},
    {"0.000000000001Ki", "2n", DSI},
    {"0.00048828125Ki", "500m", DSI},
    {"1.953125Ki", "2k", BSI},
    {"0.0009765625Ki", "1", BSI},
    {"1048576Ki", "1Gi", BSI},
    /* decimal exponents */
    {"1e3", "1e3", DEX},
    {"1E3", "1e3", DEX},
    {"1e-3", "1e-3", DEX},
    {"1E-3", "1e-3", DEX},
    {"5e+2", "500", DEX},
    {"1.5e7", "15e6", DEX},
    {"1e0", "1", DEX},
    {"0.5e0", "500e-3", DEX},
    {"12e-1", "1200e-3", DEX},
    {"1e18", "1e18", DEX},
    {"-1e-9", "-1e-9", DEX},
    {"1e-6", "1e-6", DEX},
    {"0.5e-3", "500e-6", DEX},
    {"1.5e-3", "1500e-6", DEX},
    {"25e-8", "250e-9", DEX},
    {"1.1E-9", "2e-9", DEX},
    {"0.5e-9", "1e-9", DEX},
    {"-0.5e-9", "-1e-9", DEX},
    {"1e-999999999", "1e-9", DEX},
    {"1e000003", "1e3", DEX},
    {".5e-2", "5e-3", DEX},
    /* the edges of the range */
    {"9223372036854775807", "9223372036854775807", DSI},
    {"-9223372036854775807", "-9223372036854775807", DSI},
    {"+9223372036854775807", "9223372036854775807", DSI},
    {"9223372036854775807000m", "9223372036854775807", DSI},
    {"9223372036854775806.5", "9223372036854775806500m", DSI},
    {"9223372036854775806.9999", "9223372036854775806999900u", DSI},
    {"9223372036854775806.999999999", "9223372036854775806999999999n", DSI},
    {"9223372036854775806.9999999991", "9223372036854775807", DSI},
    {"9223372036854775807000000000n", "9223372036854775807", DSI},
    {"-9223372036854775806999999999n", "-9223372036854775806999999999n", DSI},
    {"-9223372036854775806999999999e-9", "-9223372036854775806999999999e-9", DEX},
    {"9223372036.854775807", "9223372036854775807n", DSI},
    {"-9223372036.854775808", "-9223372036854775808n", DSI},
    {"9.223372036854775807E", "9223372036854775807", DSI},
    {"9223372036854775807e0", "9223372036854775807", DEX},
    {"0.9223372036854775807e19", "9223372036854775807", DEX},
    {"-9223372036854775806999m", "-9223372036854775806999m", DSI},
};

struct invalid_case {
        const char *input;
        int code;
        const char *message;
};

static const struct invalid_case invalid_cases[] = {
    {"", -EINVAL, "\"\"" INVALID_MSG},
    {" 1", -EINVAL, "\" 1\"" INVALID_MSG},
    {"1 ", -EINVAL, "\"1 \"" INVALID_MSG},
    {"1 k", -EINVAL, "\"1 k\"" INVALID_MSG},
    {"1\t", -EINVAL, "\"1\\x09\"" INVALID_MSG},
    {"1.5x", -EINVAL, "\"1.5x\"" INVALID_MSG},
    {"1..5", -EINVAL, "\"1..5\"" INVALID_MSG},
    {"--1", -EINVAL, "\"--1\"" INVALID_MSG},
    {"+-1", -EINVAL, "\"+-1\"" INVALID_MSG},
    {"+", -EINVAL, "\"+\"" INVALID_MSG},
    {"-", -EINVAL, "\"-\"" INVALID_MSG},
    {".", -EINVAL, "\".\"" INVALID_MSG},
    {"-.", -EINVAL, "\"-.\"" INVALID_MSG},
    {".k", -EINVAL, "\".k\"" INVALID_MSG},
    {"1e", -EINVAL, "\"1e\"" INVALID_MSG},
    {"1e+", -EINVAL, "\"1e+\"" INVALID_MSG},
    {"1E-", -EINVAL, "\"1E-\"" INVALID_MSG},
    {"1e3e3", -EINVAL, "\"1e3e3\"" INVALID_MSG},
    {"1e3.5", -EINVAL, "\"1e3.5\"" INVALID_MSG},
    {"1e3k", -EINVAL, "\"1e3k\"" INVALID_MSG},
    {"1e99999999999999999999", -EINVAL, "\"1e99999999999999999999\"" INVALID_MSG},
    {"0e-9223372036854775809", -EINVAL, "\"0e-9223372036854775809\"" INVALID_MSG},
    {"1Kb", -EINVAL, "\"1Kb\"" INVALID_MSG},
    {"1K", -EINVAL, "\"1K\"" INVALID_MSG},
    {"1ki", -EINVAL, "\"1ki\"" INVALID_MSG},
    {"1mi", -EINVAL, "\"1mi\"" INVALID_MSG},
    {"1i", -EINVAL, "\"1i\"" INVALID_MSG},
    {"1mm", -EINVAL, "\"1mm\"" INVALID_MSG},
    {"1KiB", -EINVAL, "\"1KiB\"" INVALID_MSG},
    {"Ki", -EINVAL, "\"Ki\"" INVALID_MSG},
    {"e3", -EINVAL, "\"e3\"" INVALID_MSG},
    {"k", -EINVAL, "\"k\"" INVALID_MSG},
    {"1.5.5", -EINVAL, "\"1.5.5\"" INVALID_MSG},
    {"0x10", -EINVAL, "\"0x10\"" INVALID_MSG},
    {"1,5", -EINVAL, "\"1,5\"" INVALID_MSG},
    {"1Gi1", -EINVAL, "\"1Gi1\"" INVALID_MSG},
    {"1\"", -EINVAL, "\"1\\\"\"" INVALID_MSG},
    {"\xe2\x88\x9e", -EINVAL, "\"\\xe2\\x88\\x9e\"" INVALID_MSG},
    {"NaN", -EINVAL, "\"NaN\"" INVALID_MSG},
    {"inf", -EINVAL, "\"inf\"" INVALID_MSG},
    {"1e30", -ERANGE, "\"1e30\"" RANGE_MSG},
    {"99999999999999999999", -ERANGE, "\"99999999999999999999\"" RANGE_MSG},
    {"9223372036854775808", -ERANGE, "\"9223372036854775808\"" RANGE_MSG},
    {"-9223372036854775808", -ERANGE, "\"-9223372036854775808\"" RANGE_MSG},
    {"9223372036854775807.0001", -ERANGE, "\"9223372036854775807.0001\"" RANGE_MSG},
    {"9223372036854775807001m", -ERANGE, "\"9223372036854775807001m\"" RANGE_MSG},
    {"9223372036854775807000001u", -ERANGE, "\"9223372036854775807000001u\"" RANGE_MSG},
    {"9223372036854775807000000001n", -ERANGE, "\"9223372036854775807000000001n\"" RANGE_MSG},
    {"9223372036854775807.000000001", -ERANGE, "\"9223372036854775807.000000001\"" RANGE_MSG},
    {"9223372036854775807.0000000001", -ERANGE, "\"9223372036854775807.0000000001\"" RANGE_MSG},
    {"-9223372036854775807.0000000001", -ERANGE, "\"-9223372036854775807.0000000001\"" RANGE_MSG},
    {"8Ei", -ERANGE, "\"8Ei\"" RANGE_MSG},
    {"10E", -ERANGE, "\"10E\"" RANGE_MSG},
    {"1e999999999", -ERANGE, "\"1e999999999\"" RANGE_MSG},
    {"1e9223372036854775807", -ERANGE, "\"1e9223372036854775807\"" RANGE_MSG},
    {"-1e19", -ERANGE, "\"-1e19\"" RANGE_MSG},
};

static struct xp_quantity parse_ok(const char *text)
{
        struct xp_error err = {0};
        struct xp_quantity q = sentinel;
        int r = xp_quantity_parse(text, &q, &err);

        if (r != 0)
                fail_msg("parsing \"%s\" failed: %d %s", text, r, err.msg);
        return q;
}

static void parses_valid_quantities(void **state)
{
        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(valid_cases); i++) {
                const struct valid_case *c = &valid_cases[i];
                char buf[XP_QUANTITY_STRING_MAX];
                struct xp_quantity q = parse_ok(c->input), again;

                xp_quantity_format(&q, buf);
                if (strcmp(buf, c->canonical) != 0)
                        fail_msg("\"%s\" printed \"%s\", want \"%s\"", c->input, buf, c->canonical);
                if (q.format != c->format)
                        fail_msg("\"%s\" has format %d, want %d", c->input, q.format, c->format);
                again = parse_ok(buf);
                if (xp_quantity_cmp(&q, &again) != 0)
                        fail_msg("\"%s\" does not reparse to the same value", c->input);
        }
}

static void rejects_invalid_quantities(void **state)
{
        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(invalid_cases); i++) {
                const struct invalid_case *c = &invalid_cases[i];
                struct xp_error err = {0};
                struct xp_quantity q = sentinel;
                int r = xp_quantity_parse(c->input, &q, &err);

                if (r != c->code)
                        fail_msg("\"%s\" gave %d, want %d", c->input, r, c->code);
                if (err.code != c->code || strcmp(err.msg, c->message) != 0)
                        fail_msg("\"%s\" said '%s', want '%s'", c->input, err.msg, c->message);
                assert_untouched(&q);
                /* A NULL error is allowed too. */
                assert_int_equal(xp_quantity_parse(c->input, &q, NULL), c->code);
        }
}

static void rejects_long_input(void **state)
{
        char text[256];
        struct xp_error err = {0};
        struct xp_quantity q = sentinel;
        char buf[XP_QUANTITY_STRING_MAX];

        (void)state;
        memset(text, '1', 200);
        text[200] = '\0';
        assert_int_equal(xp_quantity_parse(text, &q, &err), -EINVAL);
        assert_int_equal(err.code, -EINVAL);
        assert_string_equal(err.msg, "quantity is too long (200 characters, at most 128)");
        assert_untouched(&q);

        /* One past the limit is rejected, the limit itself is fine. */
        memset(text, '0', XP_QUANTITY_INPUT_MAX + 1);
        text[XP_QUANTITY_INPUT_MAX] = '7';
        text[XP_QUANTITY_INPUT_MAX + 1] = '\0';
        assert_int_equal(xp_quantity_parse(text, &q, &err), -EINVAL);
        assert_string_equal(err.msg, "quantity is too long (129 characters, at most 128)");
        q = parse_ok(text + 1);
        assert_string_equal(xp_quantity_format(&q, buf), "7");

        /* Long garbage is quoted with a cut. */
        memset(text, 'x', 100);
        text[100] = '\0';
        assert_int_equal(xp_quantity_parse(text, &q, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"... "
            "is not a valid quantity");

        /* The longest fraction the limit allows still rounds up to one nano-unit. */
        memset(text, '0', XP_QUANTITY_INPUT_MAX);
        text[1] = '.';
        text[XP_QUANTITY_INPUT_MAX - 1] = '1';
        text[XP_QUANTITY_INPUT_MAX] = '\0';
        q = parse_ok(text);
        assert_string_equal(xp_quantity_format(&q, buf), "1n");

        assert_int_equal(xp_quantity_parse(NULL, &q, &err), -EINVAL);
        assert_string_equal(err.msg, "(null) is not a valid quantity");
}

static void keeps_exact_nano_values(void **state)
{
        struct xp_quantity q;
        int64_t v;

        (void)state;
        q = parse_ok("1.5Gi");
        assert_true(q.nano == (__int128)1536 * 1024 * 1024 * NANO);
        q = parse_ok("1Ei");
        assert_true(q.nano == (__int128)1152921504606846976 * NANO);
        q = parse_ok("9223372036854775807");
        assert_true(q.nano == NANO_MAX);
        q = parse_ok("-9223372036854775807");
        assert_true(q.nano == -NANO_MAX);
        q = parse_ok("9223372036854775806.999999999");
        assert_true(q.nano == NANO_MAX - 1);
        q = parse_ok("250n");
        assert_true(q.nano == 250);
        assert_int_equal(xp_quantity_to_nano(&q, &v), 0);
        assert_int_equal(v, 250);
        q = parse_ok("-250n");
        assert_true(q.nano == -250);
        q = parse_ok("1.5m");
        assert_true(q.nano == 1500000);
        q = parse_ok("0.1n");
        assert_true(q.nano == 1);
        q = parse_ok("-0.1n");
        assert_true(q.nano == -1);
        q = parse_ok("1e-999999999");
        assert_true(q.nano == 1);
}

static void compares_values(void **state)
{
        struct xp_quantity a, b;

        (void)state;
        a = parse_ok("1");
        b = parse_ok("1000m");
        assert_int_equal(xp_quantity_cmp(&a, &b), 0);
        b = parse_ok("1e0");
        assert_int_equal(xp_quantity_cmp(&a, &b), 0);
        a = parse_ok("1Ki");
        b = parse_ok("1k");
        assert_int_equal(xp_quantity_cmp(&a, &b), 1);
        assert_int_equal(xp_quantity_cmp(&b, &a), -1);
        a = parse_ok("-1");
        b = parse_ok("1m");
        assert_int_equal(xp_quantity_cmp(&a, &b), -1);
        a = parse_ok("9223372036854775807");
        b = parse_ok("-9223372036854775807");
        assert_int_equal(xp_quantity_cmp(&a, &b), 1);
        a = parse_ok("1001m");
        b = parse_ok("1");
        assert_int_equal(xp_quantity_cmp(&a, &b), 1);
        a = parse_ok("1000000001n");
        assert_int_equal(xp_quantity_cmp(&a, &b), 1);
        a = parse_ok("999999999n");
        assert_int_equal(xp_quantity_cmp(&a, &b), -1);
        a = parse_ok("250n");
        b = parse_ok("0.25u");
        assert_int_equal(xp_quantity_cmp(&a, &b), 0);
        b = parse_ok("251n");
        assert_int_equal(xp_quantity_cmp(&a, &b), -1);
        b = parse_ok("1m");
        assert_int_equal(xp_quantity_cmp(&a, &b), -1);
        a = parse_ok("-1n");
        b = parse_ok("0");
        assert_int_equal(xp_quantity_cmp(&a, &b), -1);
        assert_int_equal(xp_quantity_sign(&a), -1);
        a = parse_ok("1n");
        assert_int_equal(xp_quantity_sign(&a), 1);
        assert_int_equal(xp_quantity_sign(&b), 0);

        a = parse_ok("0");
        assert_true(xp_quantity_is_zero(&a));
        assert_true(xp_quantity_is_integer(&a));
        a = parse_ok("1n");
        assert_false(xp_quantity_is_zero(&a));
        assert_false(xp_quantity_is_integer(&a));
        a = parse_ok("-3k");
        assert_true(xp_quantity_is_integer(&a));
        a = parse_ok("-1500m");
        assert_false(xp_quantity_is_integer(&a));
        a = parse_ok("999999999n");
        assert_false(xp_quantity_is_integer(&a));
        a = parse_ok("1000000000n");
        assert_true(xp_quantity_is_integer(&a));
        a = parse_ok("-1000000001n");
        assert_false(xp_quantity_is_integer(&a));
}

static void adds_and_subtracts(void **state)
{
        struct xp_quantity a, b, r;
        char buf[XP_QUANTITY_STRING_MAX];

        (void)state;
        a = parse_ok("1");
        b = parse_ok("500m");
        assert_int_equal(xp_quantity_add(&a, &b, &r), 0);
        assert_string_equal(xp_quantity_format(&r, buf), "1500m");
        assert_int_equal(xp_quantity_sub(&b, &a, &r), 0);
        assert_string_equal(xp_quantity_format(&r, buf), "-500m");

        /* Nano-units add up exactly (metrics-server's nanocores). */
        a = parse_ok("250n");
        b = parse_ok("750n");
        assert_int_equal(xp_quantity_add(&a, &b, &r), 0);
        assert_string_equal(xp_quantity_format(&r, buf), "1u");
        b = parse_ok("1m");
        assert_int_equal(xp_quantity_sub(&b, &a, &r), 0);
        assert_string_equal(xp_quantity_format(&r, buf), "999750n");
        a = parse_ok("1.5m");
        b = parse_ok("500u");
        assert_int_equal(xp_quantity_add(&a, &b, &r), 0);
        assert_string_equal(xp_quantity_format(&r, buf), "2m");

        /* The result keeps a's format, or b's when a is zero. */
        a = parse_ok("1Gi");
        b = parse_ok("1Gi");
        assert_int_equal(xp_quantity_add(&a, &b, &r), 0);
        assert_int_equal(r.format, XP_QUANTITY_BINARY_SI);
        assert_string_equal(xp_quantity_format(&r, buf), "2Gi");
        a = parse_ok("0e3");
        b = parse_ok("1Ki");
        assert_int_equal(xp_quantity_add(&a, &b, &r), 0);
        assert_int_equal(r.format, XP_QUANTITY_BINARY_SI);
        assert_string_equal(xp_quantity_format(&r, buf), "1Ki");
        assert_int_equal(xp_quantity_sub(&a, &b, &r), 0);
        assert_string_equal(xp_quantity_format(&r, buf), "-1Ki");
        a = parse_ok("1e3");
        assert_int_equal(xp_quantity_add(&a, &b, &r), 0);
        assert_int_equal(r.format, XP_QUANTITY_DECIMAL_EXP);
        assert_string_equal(xp_quantity_format(&r, buf), "2024");
        a = parse_ok("2k");
        b = parse_ok("2k");
        assert_int_equal(xp_quantity_sub(&a, &b, &r), 0);
        assert_true(xp_quantity_is_zero(&r));
        assert_string_equal(xp_quantity_format(&r, buf), "0");

        /* The edges: reaching them is fine, passing them is -ERANGE with *ret untouched. */
        a = parse_ok("9223372036854775806");
        b = parse_ok("1");
        assert_int_equal(xp_quantity_add(&a, &b, &r), 0);
        assert_string_equal(xp_quantity_format(&r, buf), "9223372036854775807");
        a = r;
        r = sentinel;
        b = parse_ok("1n");
        assert_int_equal(xp_quantity_add(&a, &b, &r), -ERANGE);
        assert_untouched(&r);
        assert_int_equal(xp_quantity_add(&a, &a, &r), -ERANGE);
        assert_untouched(&r);
        b = parse_ok("-1n");
        assert_int_equal(xp_quantity_sub(&a, &b, &r), -ERANGE);
        assert_untouched(&r);
        assert_int_equal(xp_quantity_sub(&a, &a, &r), 0);
        assert_true(xp_quantity_is_zero(&r));
        b = parse_ok("1n");
        assert_int_equal(xp_quantity_sub(&a, &b, &r), 0);
        assert_string_equal(xp_quantity_format(&r, buf), "9223372036854775806999999999n");

        a = parse_ok("-9223372036854775807");
        b = parse_ok("1n");
        r = sentinel;
        assert_int_equal(xp_quantity_sub(&a, &b, &r), -ERANGE);
        assert_untouched(&r);
        b = parse_ok("9223372036854775807");
        assert_int_equal(xp_quantity_sub(&a, &b, &r), -ERANGE);
        assert_int_equal(xp_quantity_add(&a, &b, &r), 0);
        assert_true(xp_quantity_is_zero(&r));

        /* Operands outside the range (built by hand) are refused, not overflowed. */
        a = (struct xp_quantity){.nano = ((__int128)1) << 126};
        b = parse_ok("1");
        r = sentinel;
        assert_int_equal(xp_quantity_add(&a, &a, &r), -ERANGE);
        assert_int_equal(xp_quantity_sub(&b, &a, &r), -ERANGE);
        assert_int_equal(xp_quantity_add(&b, &a, &r), -ERANGE);
        assert_untouched(&r);
}

static void converts_to_integers(void **state)
{
        struct xp_quantity q;
        int64_t v = 77;

        (void)state;
        q = parse_ok("1.5");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_int_equal(v, 1500);
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_int_equal(v, 2);
        q = parse_ok("-1500m");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_int_equal(v, -2);
        q = parse_ok("1m");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_int_equal(v, 1);
        q = parse_ok("-1m");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_int_equal(v, -1);
        q = parse_ok("2");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_int_equal(v, 2);
        q = parse_ok("0");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_int_equal(v, 0);
        q = parse_ok("1Gi");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_int_equal(v, 1073741824);
        q = parse_ok("9223372036854775806.001");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_true(v == INT64_MAX);
        q = parse_ok("-9223372036854775807");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_true(v == -INT64_MAX);

        /* to_milli rounds up, away from zero, to whole milli-units, as MilliValue() does. */
        q = parse_ok("250n");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_int_equal(v, 1);
        q = parse_ok("-250n");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_int_equal(v, -1);
        q = parse_ok("1000001n");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_int_equal(v, 2);
        q = parse_ok("-1500u");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_int_equal(v, -2);
        q = parse_ok("1m");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_int_equal(v, 1);
        q = parse_ok("0");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_int_equal(v, 0);
        q = parse_ok("2Ki");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_int_equal(v, 2048000);

        /* to_milli covers +-9.2e15 base units only. */
        q = parse_ok("9223372036854775.807");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_true(v == INT64_MAX);
        q = parse_ok("-9223372036854775.808");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_true(v == INT64_MIN);
        v = 77;
        q = parse_ok("9223372036854775.808");
        assert_int_equal(xp_quantity_to_milli(&q, &v), -ERANGE);
        q = parse_ok("-9223372036854775.809");
        assert_int_equal(xp_quantity_to_milli(&q, &v), -ERANGE);
        q = parse_ok("9223372036854775807");
        assert_int_equal(xp_quantity_to_milli(&q, &v), -ERANGE);
        assert_int_equal(v, 77);
        /* Rounding up may be what leaves the range. */
        q = parse_ok("9223372036854775.806001");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_true(v == INT64_MAX);
        v = 77;
        q = parse_ok("9223372036854775.807001");
        assert_int_equal(xp_quantity_to_milli(&q, &v), -ERANGE);
        q = parse_ok("-9223372036854775.808001");
        assert_int_equal(xp_quantity_to_milli(&q, &v), -ERANGE);
        assert_int_equal(v, 77);

        /* to_nano is exact and covers +-9.2e9 base units only. */
        q = parse_ok("1");
        assert_int_equal(xp_quantity_to_nano(&q, &v), 0);
        assert_int_equal(v, 1000000000);
        q = parse_ok("-1500u");
        assert_int_equal(xp_quantity_to_nano(&q, &v), 0);
        assert_int_equal(v, -1500000);
        q = parse_ok("9223372036.854775807");
        assert_int_equal(xp_quantity_to_nano(&q, &v), 0);
        assert_true(v == INT64_MAX);
        q = parse_ok("-9223372036.854775808");
        assert_int_equal(xp_quantity_to_nano(&q, &v), 0);
        assert_true(v == INT64_MIN);
        v = 77;
        q = parse_ok("9223372036.854775808");
        assert_int_equal(xp_quantity_to_nano(&q, &v), -ERANGE);
        q = parse_ok("-9223372036.854775809");
        assert_int_equal(xp_quantity_to_nano(&q, &v), -ERANGE);
        q = parse_ok("10G");
        assert_int_equal(xp_quantity_to_nano(&q, &v), -ERANGE);
        assert_int_equal(v, 77);

        /* to_int_ceil can only fail for values built by hand beyond the range. */
        q = (struct xp_quantity){.nano = ((__int128)INT64_MAX + 1) * NANO};
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), -ERANGE);
        q = (struct xp_quantity){.nano = NANO_MAX + 1};
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), -ERANGE);
        assert_int_equal(v, 77);
        q = (struct xp_quantity){.nano = -((__int128)INT64_MAX + 1) * NANO};
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_true(v == INT64_MIN);
        v = 77;
        q = (struct xp_quantity){.nano = -((__int128)INT64_MAX + 1) * NANO - 1};
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), -ERANGE);
        assert_int_equal(v, 77);
}

static void converts_doubles(void **state)
{
        static const struct {
                double value;
                const char *canonical;
        } cases[] = {
            {0.1, "100m"},
            {1.5, "1500m"},
            {-2.5, "-2500m"},
            {1000.0, "1k"},
            {1e6, "1M"},
            {0.0, "0"},
            {-0.0, "0"},
            {0.0001, "100u"},
            {1e-9, "1n"},
            {2.5e-7, "250n"},
            {1e-300, "1n"},
            {-1e-300, "-1n"},
            {1234.5678, "1234567800u"},
            {0.3, "300m"},
            {1.0 / 3.0, "333333334n"},
            {4294967296.0, "4294967296"},
            {9.2e18, "9200P"},
        };
        struct xp_error err = {0};
        struct xp_quantity q;
        char buf[XP_QUANTITY_STRING_MAX];

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                q = sentinel;
                if (xp_quantity_from_double(cases[i].value, &q, &err) != 0)
                        fail_msg("%g: %s", cases[i].value, err.msg);
                assert_int_equal(q.format, XP_QUANTITY_DECIMAL_SI);
                assert_string_equal(xp_quantity_format(&q, buf), cases[i].canonical);
        }

        q = sentinel;
        assert_int_equal(xp_quantity_from_double(1e20, &q, &err), -ERANGE);
        assert_int_equal(err.code, -ERANGE);
        assert_string_equal(err.msg, "\"1e+20\"" RANGE_MSG);
        assert_int_equal(xp_quantity_from_double(-1e300, &q, &err), -ERANGE);
        assert_int_equal(xp_quantity_from_double(NAN, &q, &err), -EINVAL);
        assert_string_equal(err.msg, "\"NaN\"" INVALID_MSG);
        assert_int_equal(xp_quantity_from_double(INFINITY, &q, &err), -EINVAL);
        assert_string_equal(err.msg, "\"+Inf\"" INVALID_MSG);
        assert_int_equal(xp_quantity_from_double(-INFINITY, &q, NULL), -EINVAL);
        assert_untouched(&q);
}

static void builds_from_integers(void **state)
{
        struct xp_quantity q;
        char buf[XP_QUANTITY_STRING_MAX];
        int64_t v;

        (void)state;
        q = xp_quantity_from_int(4);
        assert_int_equal(q.format, XP_QUANTITY_DECIMAL_SI);
        assert_string_equal(xp_quantity_format(&q, buf), "4");
        q = xp_quantity_from_int(1073741824);
        assert_string_equal(xp_quantity_format(&q, buf), "1073741824");
        q = xp_quantity_from_int(-3000);
        assert_string_equal(xp_quantity_format(&q, buf), "-3k");
        q = xp_quantity_from_int(0);
        assert_true(xp_quantity_is_zero(&q));
        q = xp_quantity_from_int(INT64_MAX);
        assert_string_equal(xp_quantity_format(&q, buf), "9223372036854775807");
        assert_int_equal(xp_quantity_to_int_ceil(&q, &v), 0);
        assert_true(v == INT64_MAX);

        q = xp_quantity_from_milli(1500);
        assert_int_equal(q.format, XP_QUANTITY_DECIMAL_SI);
        assert_string_equal(xp_quantity_format(&q, buf), "1500m");
        q = xp_quantity_from_milli(-250);
        assert_string_equal(xp_quantity_format(&q, buf), "-250m");
        q = xp_quantity_from_milli(INT64_MIN);
        assert_string_equal(xp_quantity_format(&q, buf), "-9223372036854775808m");
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_true(v == INT64_MIN);
        q = xp_quantity_from_milli(5000);
        assert_string_equal(xp_quantity_format(&q, buf), "5");
        q = xp_quantity_from_milli(INT64_MAX);
        assert_string_equal(xp_quantity_format(&q, buf), "9223372036854775807m");

        q = xp_quantity_from_nano(250);
        assert_int_equal(q.format, XP_QUANTITY_DECIMAL_SI);
        assert_string_equal(xp_quantity_format(&q, buf), "250n");
        q = xp_quantity_from_nano(-1500);
        assert_string_equal(xp_quantity_format(&q, buf), "-1500n");
        q = xp_quantity_from_nano(1500000);
        assert_string_equal(xp_quantity_format(&q, buf), "1500u");
        q = xp_quantity_from_nano(1000000000);
        assert_string_equal(xp_quantity_format(&q, buf), "1");
        q = xp_quantity_from_nano(0);
        assert_true(xp_quantity_is_zero(&q));
        q = xp_quantity_from_nano(INT64_MAX);
        assert_string_equal(xp_quantity_format(&q, buf), "9223372036854775807n");
        assert_int_equal(xp_quantity_to_nano(&q, &v), 0);
        assert_true(v == INT64_MAX);
        q = xp_quantity_from_nano(INT64_MIN);
        assert_string_equal(xp_quantity_format(&q, buf), "-9223372036854775808n");
        assert_int_equal(xp_quantity_to_nano(&q, &v), 0);
        assert_true(v == INT64_MIN);
        assert_int_equal(xp_quantity_to_milli(&q, &v), 0);
        assert_true(v == -9223372036855);
}

static void formats_every_style(void **state)
{
        struct xp_quantity q;
        char buf[XP_QUANTITY_STRING_MAX];

        (void)state;
        /* The same value prints differently in each format. */
        q = (struct xp_quantity){.nano = 2048 * NANO, .format = XP_QUANTITY_BINARY_SI};
        assert_string_equal(xp_quantity_format(&q, buf), "2Ki");
        q.format = XP_QUANTITY_DECIMAL_SI;
        assert_string_equal(xp_quantity_format(&q, buf), "2048");
        q.nano = 15000000 * NANO;
        q.format = XP_QUANTITY_DECIMAL_EXP;
        assert_string_equal(xp_quantity_format(&q, buf), "15e6");
        q.format = XP_QUANTITY_DECIMAL_SI;
        assert_string_equal(xp_quantity_format(&q, buf), "15M");
        /* not a multiple of 1Ki: decimal, so the canonical form reads back the same */
        q.format = XP_QUANTITY_BINARY_SI;
        assert_string_equal(xp_quantity_format(&q, buf), "15M");
        /* Binary below 1024 in magnitude, or not whole, prints as decimal SI. */
        q.nano = -1023 * NANO;
        assert_string_equal(xp_quantity_format(&q, buf), "-1023");
        q.nano = -1024 * NANO;
        assert_string_equal(xp_quantity_format(&q, buf), "-1Ki");
        q.nano = 1024500000000;
        assert_string_equal(xp_quantity_format(&q, buf), "1024500m");
        q.nano = 1024000000001;
        assert_string_equal(xp_quantity_format(&q, buf), "1024000000001n");
        /* Below milli: u and n, or exponents -6 and -9. */
        q.nano = 500000;
        q.format = XP_QUANTITY_DECIMAL_SI;
        assert_string_equal(xp_quantity_format(&q, buf), "500u");
        q.format = XP_QUANTITY_DECIMAL_EXP;
        assert_string_equal(xp_quantity_format(&q, buf), "500e-6");
        q.nano = -250;
        assert_string_equal(xp_quantity_format(&q, buf), "-250e-9");
        q.format = XP_QUANTITY_DECIMAL_SI;
        assert_string_equal(xp_quantity_format(&q, buf), "-250n");
        /* Exponents stop at E; the longest strings fit. */
        q.nano = (__int128)9 * 1000000000000000000 * NANO;
        q.format = XP_QUANTITY_DECIMAL_EXP;
        assert_string_equal(xp_quantity_format(&q, buf), "9e18");
        q.format = XP_QUANTITY_DECIMAL_SI;
        assert_string_equal(xp_quantity_format(&q, buf), "9E");
        q.nano = (__int128)-123456789012 * 1000000000000000000 * NANO;
        assert_string_equal(xp_quantity_format(&q, buf), "-123456789012E");
        q.format = XP_QUANTITY_DECIMAL_EXP;
        assert_string_equal(xp_quantity_format(&q, buf), "-123456789012e18");
        q.format = XP_QUANTITY_DECIMAL_SI;
        q.nano = -NANO_MAX + 1;
        assert_string_equal(xp_quantity_format(&q, buf), "-9223372036854775806999999999n");
        q.format = XP_QUANTITY_DECIMAL_EXP;
        assert_string_equal(xp_quantity_format(&q, buf), "-9223372036854775806999999999e-9");
        q.format = XP_QUANTITY_DECIMAL_SI;
        q.nano = -NANO_MAX - 1;
        assert_string_equal(xp_quantity_format(&q, buf), "-9223372036854775807000000001n");
        q.nano = -((__int128)1 << 126) - 1;
        assert_string_equal(xp_quantity_format(&q, buf),
                            "-85070591730234615865843651857942052865n");
        assert_true(strlen(buf) < XP_QUANTITY_STRING_MAX);
        /* Any __int128 fits the buffer, even in the longest style. */
        q.nano = -(__int128)(((unsigned __int128)1 << 127) - 1);
        q.format = XP_QUANTITY_DECIMAL_EXP;
        assert_string_equal(xp_quantity_format(&q, buf),
                            "-170141183460469231731687303715884105727e-9");
        assert_true(strlen(buf) < XP_QUANTITY_STRING_MAX);
}

/* Parses text and text with a fractional ".0" before its suffix (the digits' general path) and
 * asserts the same answer: a whole number takes a shorter path (whole_magnitude()). */
static void assert_whole_as_fraction(const char *sign, const char *digits, const char *suffix)
{
        struct xp_quantity whole = sentinel, fraction = sentinel;
        struct xp_error err = {0};
        char a[96], b[96];
        int rw, rf;

        snprintf(a, sizeof(a), "%s%s%s", sign, digits, suffix);
        snprintf(b, sizeof(b), "%s%s.0%s", sign, digits, suffix);
        rw = xp_quantity_parse(a, &whole, &err);
        rf = xp_quantity_parse(b, &fraction, &err);
        if (rw != rf || whole.nano != fraction.nano || whole.format != fraction.format)
                fail_msg("%s: %d, %s: %d, or their values differ", a, rw, b, rf);
}

static void parses_whole_numbers_as_fractions(void **state)
{
        static const char *const digits[] = {"0",
                                             "000",
                                             "1",
                                             "4",
                                             "8",
                                             "64",
                                             "500",
                                             "1024",
                                             "0001",
                                             "999999999",
                                             "9223372036",
                                             "9223372037",
                                             "9007199254740993",
                                             "99999999999999999",
                                             "922337203685477580",
                                             "999999999999999999",
                                             "9223372036854775807",
                                             "9223372036854775808",
                                             "18446744073709551616"};
        static const char *const suffixes[] = {
            "",    "n",    "u",   "m",   "k",   "M",   "G",  "T",   "P",       "E",
            "Ki",  "Mi",   "Gi",  "Ti",  "Pi",  "Ei",  "e0", "e3",  "e-3",     "e9",
            "e-9", "e-10", "e18", "e19", "e27", "e28", "E2", "e+5", "e999999", "e-999999"};
        static const char *const signs[] = {"", "-", "+"};
        uint64_t seed = 0x9e3779b97f4a7c15u;
        (void)state;

        for (size_t s = 0; s < 3; s++)
                for (size_t d = 0; d < sizeof(digits) / sizeof(digits[0]); d++)
                        for (size_t x = 0; x < sizeof(suffixes) / sizeof(suffixes[0]); x++)
                                assert_whole_as_fraction(signs[s], digits[d], suffixes[x]);
        /* random digits, 1 to 20 of them, with every suffix */
        for (int i = 0; i < 2000; i++) {
                char random[24];
                size_t n;

                seed = seed * 6364136223846793005u + 1442695040888963407u;
                n = 1 + (size_t)(seed >> 59) % 20;
                for (size_t k = 0; k < n; k++) {
                        seed = seed * 6364136223846793005u + 1442695040888963407u;
                        random[k] = (char)('0' + (seed >> 60) % 10);
                }
                random[n] = '\0';
                assert_whole_as_fraction(
                    "", random, suffixes[(size_t)i % (sizeof(suffixes) / sizeof(suffixes[0]))]);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(parses_valid_quantities),
            cmocka_unit_test(rejects_invalid_quantities),
            cmocka_unit_test(rejects_long_input),
            cmocka_unit_test(keeps_exact_nano_values),
            cmocka_unit_test(compares_values),
            cmocka_unit_test(adds_and_subtracts),
            cmocka_unit_test(converts_to_integers),
            cmocka_unit_test(converts_doubles),
            cmocka_unit_test(builds_from_integers),
            cmocka_unit_test(formats_every_style),
            cmocka_unit_test(parses_whole_numbers_as_fractions),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
