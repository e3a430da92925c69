/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/macro.h"
#include "xpool/names.h"

typedef int (*check_fn)(const char *value, struct xp_error *err);

struct bad_value {
        const char *value;
        const char *message;
};

#define SUBDOMAIN_RULE                                                                             \
        ": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')"
#define LABEL_RULE                                                                                 \
        ": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name')"
#define NAME_PART_RULE                                                                             \
        ": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or 'example.com/MyName')"
#define PREFIX_RULE                                                                                \
        ": the prefix before '/' must be a lowercase RFC 1123 subdomain of at most 253 characters (e.g. 'example.com')"
#define LABEL_VALUE_RULE                                                                           \
        ": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
#define ENV_RULE                                                                                   \
        ": an environment variable name must consist of printable ASCII characters other than '='"

static void expect_valid(check_fn check, const char *const *values, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                struct xp_error err = {0};

                if (check(values[i], &err) != 0)
                        fail_msg("\"%s\" rejected: %s", values[i], err.msg);
                assert_int_equal(err.code, 0);
                assert_string_equal(err.msg, "");
                assert_int_equal(check(values[i], NULL), 0);
        }
}

static void expect_invalid(check_fn check, const char *value, const char *message)
{
        struct xp_error err = {0};

        if (check(value, &err) != -EINVAL)
                fail_msg("\"%s\" was not rejected with -EINVAL", value);
        assert_int_equal(err.code, -EINVAL);
        assert_string_equal(err.msg, message);
        assert_int_equal(check(value, NULL), -EINVAL);
}

static void expect_invalid_table(check_fn check, const struct bad_value *bad, size_t n)
{
        for (size_t i = 0; i < n; i++)
                expect_invalid(check, bad[i].value, bad[i].message);
}

/* Fills buf with n copies of c and a NUL; returns buf. */
static char *repeat(char *buf, char c, size_t n)
{
        memset(buf, c, n);
        buf[n] = '\0';
        return buf;
}

/* "Invalid value: \"<first 64 bytes>\"...<rule>", the message for a value longer than 64 bytes. */
static char *long_message(char *buf, size_t size, const char *value, const char *rule)
{
        snprintf(buf, size, "Invalid value: \"%.64s\"...%s", value, rule);
        return buf;
}

/* ---- DNS-1123 subdomains -------------------------------------------------------------------- */

static void subdomain_valid(void **state)
{
        static const char *const good[] = {
            "a",
            "0",
            "my-pod",
            "example.com",
            "a.b.c",
            "a-b.c-d",
            "node-01.rack-7.dc",
            "123",
            "a--b",
        };
        char max[XP_DNS1123_SUBDOMAIN_MAX + 1];
        const char *longest[] = {max};

        (void)state;
        expect_valid(xp_check_dns1123_subdomain, good, XP_ELEMENTSOF(good));

        /* 253 characters: one long run, and labels joined by dots */
        repeat(max, 'a', 253);
        expect_valid(xp_check_dns1123_subdomain, longest, 1);
        for (size_t i = 1; i < 253; i += 2)
                max[i] = '.';
        expect_valid(xp_check_dns1123_subdomain, longest, 1);
}

static void subdomain_invalid(void **state)
{
        static const struct bad_value bad[] = {
            {"", "Invalid value: \"\"" SUBDOMAIN_RULE},
            {"A", "Invalid value: \"A\"" SUBDOMAIN_RULE},
            {"My-Pod", "Invalid value: \"My-Pod\"" SUBDOMAIN_RULE},
            {"a..b", "Invalid value: \"a..b\"" SUBDOMAIN_RULE},
            {"-a", "Invalid value: \"-a\"" SUBDOMAIN_RULE},
            {"a-", "Invalid value: \"a-\"" SUBDOMAIN_RULE},
            {".a", "Invalid value: \".a\"" SUBDOMAIN_RULE},
            {"a.", "Invalid value: \"a.\"" SUBDOMAIN_RULE},
            {"a.-b", "Invalid value: \"a.-b\"" SUBDOMAIN_RULE},
            {"a-.b", "Invalid value: \"a-.b\"" SUBDOMAIN_RULE},
            {"a_b", "Invalid value: \"a_b\"" SUBDOMAIN_RULE},
            {"a b", "Invalid value: \"a b\"" SUBDOMAIN_RULE},
            {"a/b", "Invalid value: \"a/b\"" SUBDOMAIN_RULE},
            {"caf\xc3\xa9", "Invalid value: \"caf\\xc3\\xa9\"" SUBDOMAIN_RULE},
            {"a\nb", "Invalid value: \"a\\x0ab\"" SUBDOMAIN_RULE},
        };
        char value[300], message[512];

        (void)state;
        expect_invalid_table(xp_check_dns1123_subdomain, bad, XP_ELEMENTSOF(bad));

        /* 254 characters: the length is reported, not the pattern */
        repeat(value, 'a', 254);
        expect_invalid(
            xp_check_dns1123_subdomain,
            value,
            long_message(message, sizeof(message), value, ": must be no more than 253 characters"));
        value[0] = '-';
        expect_invalid(
            xp_check_dns1123_subdomain,
            value,
            long_message(message, sizeof(message), value, ": must be no more than 253 characters"));

        /* a bad 253-character value gets the pattern message, shown cut */
        repeat(value, 'a', 253);
        value[252] = '-';
        expect_invalid(xp_check_dns1123_subdomain,
                       value,
                       long_message(message, sizeof(message), value, SUBDOMAIN_RULE));
}

/* ---- DNS-1123 labels ------------------------------------------------------------------------ */

static void label_valid(void **state)
{
        static const char *const good[] = {"a", "0", "default", "my-name", "kube-system", "a1-b2"};
        char max[XP_DNS1123_LABEL_MAX + 1];
        const char *longest[] = {repeat(max, 'z', 63)};

        (void)state;
        expect_valid(xp_check_dns1123_label, good, XP_ELEMENTSOF(good));
        expect_valid(xp_check_dns1123_label, longest, 1);
}

static void label_invalid(void **state)
{
        static const struct bad_value bad[] = {
            {"", "Invalid value: \"\"" LABEL_RULE},
            {"A", "Invalid value: \"A\"" LABEL_RULE},
            {"a.b", "Invalid value: \"a.b\"" LABEL_RULE},
            {"-a", "Invalid value: \"-a\"" LABEL_RULE},
            {"a-", "Invalid value: \"a-\"" LABEL_RULE},
            {"a_b", "Invalid value: \"a_b\"" LABEL_RULE},
            {"my name", "Invalid value: \"my name\"" LABEL_RULE},
        };
        char value[80], message[256];

        (void)state;
        expect_invalid_table(xp_check_dns1123_label, bad, XP_ELEMENTSOF(bad));

        /* 64 characters: exactly what xp_quote shows, so no "..." */
        repeat(value, 'a', 64);
        snprintf(message,
                 sizeof(message),
                 "Invalid value: \"%s\": must be no more than 63 characters",
                 value);
        expect_invalid(xp_check_dns1123_label, value, message);

        repeat(value, 'a', 65);
        expect_invalid(
            xp_check_dns1123_label,
            value,
            long_message(message, sizeof(message), value, ": must be no more than 63 characters"));
}

/* ---- qualified names ------------------------------------------------------------------------ */

static void qualified_name_valid(void **state)
{
        static const char *const good[] = {
            "a",
            "MyName",
            "my.name",
            "my_name",
            "my-name",
            "A1",
            "app",
            "example.com/MyName",
            "example.com/my.name",
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "nvidia.com/gpu",
            "a/b",
            "a-b.c/d_e",
        };
        char name[80], prefixed[300];
        const char *longest[] = {name, prefixed};

        (void)state;
        expect_valid(xp_check_qualified_name, good, XP_ELEMENTSOF(good));

        /* 63-character name part, 253-character prefix */
        repeat(name, 'N', 63);
        repeat(prefixed, 'p', 253);
        snprintf(prefixed + 253, sizeof(prefixed) - 253, "/x");
        expect_valid(xp_check_qualified_name, longest, XP_ELEMENTSOF(longest));
}

static void qualified_name_invalid(void **state)
{
        static const struct bad_value bad[] = {
            {"", "Invalid value: \"\": the name part must not be empty"},
            {"/", "Invalid value: \"/\": the prefix before '/' must not be empty"},
            {"/a", "Invalid value: \"/a\": the prefix before '/' must not be empty"},
            {"a/", "Invalid value: \"a/\": the name part must not be empty"},
            {"a/b/c", "Invalid value: \"a/b/c\"" NAME_PART_RULE},
            {"Example.com/a", "Invalid value: \"Example.com/a\"" PREFIX_RULE},
            {"example..com/a", "Invalid value: \"example..com/a\"" PREFIX_RULE},
            {"-example.com/a", "Invalid value: \"-example.com/a\"" PREFIX_RULE},
            {"example.com-/a", "Invalid value: \"example.com-/a\"" PREFIX_RULE},
            {"exa_mple.com/a", "Invalid value: \"exa_mple.com/a\"" PREFIX_RULE},
            {"-a", "Invalid value: \"-a\"" NAME_PART_RULE},
            {"a-", "Invalid value: \"a-\"" NAME_PART_RULE},
            {"_a", "Invalid value: \"_a\"" NAME_PART_RULE},
            {"a.", "Invalid value: \"a.\"" NAME_PART_RULE},
            {"a b", "Invalid value: \"a b\"" NAME_PART_RULE},
            {"a:b", "Invalid value: \"a:b\"" NAME_PART_RULE},
            {"example.com/-a", "Invalid value: \"example.com/-a\"" NAME_PART_RULE},
            {"example.com/My Name", "Invalid value: \"example.com/My Name\"" NAME_PART_RULE},
        };
        char value[300], message[512];

        (void)state;
        expect_invalid_table(xp_check_qualified_name, bad, XP_ELEMENTSOF(bad));

        /* a 64-character name part, with and without a prefix */
        repeat(value, 'a', 64);
        snprintf(message,
                 sizeof(message),
                 "Invalid value: \"%s\": the name part must be no more than 63 characters",
                 value);
        expect_invalid(xp_check_qualified_name, value, message);
        snprintf(value, sizeof(value), "example.com/");
        repeat(value + 12, 'a', 64);
        expect_invalid(xp_check_qualified_name,
                       value,
                       long_message(message,
                                    sizeof(message),
                                    value,
                                    ": the name part must be no more than 63 characters"));

        /* a 254-character prefix */
        repeat(value, 'p', 254);
        snprintf(value + 254, sizeof(value) - 254, "/x");
        expect_invalid(xp_check_qualified_name,
                       value,
                       long_message(message, sizeof(message), value, PREFIX_RULE));
}

/* ---- label values --------------------------------------------------------------------------- */

static void label_value_valid(void **state)
{
        static const char *const good[] = {
            "",
            "a",
            "A",
            "0",
            "v1.2.3",
            "my_value",
            "my-value",
            "MixedCase",
            "a.b_c-d",
        };
        char max[XP_LABEL_VALUE_MAX + 1];
        const char *longest[] = {repeat(max, 'v', 63)};

        (void)state;
        expect_valid(xp_check_label_value, good, XP_ELEMENTSOF(good));
        expect_valid(xp_check_label_value, longest, 1);
}

static void label_value_invalid(void **state)
{
        static const struct bad_value bad[] = {
            {"-a", "Invalid value: \"-a\"" LABEL_VALUE_RULE},
            {"a-", "Invalid value: \"a-\"" LABEL_VALUE_RULE},
            {"_a", "Invalid value: \"_a\"" LABEL_VALUE_RULE},
            {".a", "Invalid value: \".a\"" LABEL_VALUE_RULE},
            {"a b", "Invalid value: \"a b\"" LABEL_VALUE_RULE},
            {"a/b", "Invalid value: \"a/b\"" LABEL_VALUE_RULE},
            {"a=b", "Invalid value: \"a=b\"" LABEL_VALUE_RULE},
            {" ", "Invalid value: \" \"" LABEL_VALUE_RULE},
        };
        char value[80], message[256];

        (void)state;
        expect_invalid_table(xp_check_label_value, bad, XP_ELEMENTSOF(bad));

        repeat(value, 'v', 64);
        snprintf(message,
                 sizeof(message),
                 "Invalid value: \"%s\": must be no more than 63 characters",
                 value);
        expect_invalid(xp_check_label_value, value, message);
}

/* ---- environment variable names ------------------------------------------------------------- */

static void env_name_valid(void **state)
{
        static const char *const good[] = {
            "MY_VAR",
            "my.var",
            "PATH",
            "_",
            "a",
            "1ABC",
            "my-var",
            "with space",
            "~!@#$%^&*()",
        };

        (void)state;
        expect_valid(xp_check_env_name, good, XP_ELEMENTSOF(good));
}

static void env_name_invalid(void **state)
{
        static const struct bad_value bad[] = {
            {"", "Required value: an environment variable needs a name"},
            {"A=B", "Invalid value: \"A=B\"" ENV_RULE},
            {"=", "Invalid value: \"=\"" ENV_RULE},
            {"A\tB", "Invalid value: \"A\\x09B\"" ENV_RULE},
            {"A\n", "Invalid value: \"A\\x0a\"" ENV_RULE},
            {"A\x7f", "Invalid value: \"A\\x7f\"" ENV_RULE},
            {"caf\xc3\xa9", "Invalid value: \"caf\\xc3\\xa9\"" ENV_RULE},
        };

        (void)state;
        expect_invalid_table(xp_check_env_name, bad, XP_ELEMENTSOF(bad));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(subdomain_valid),
            cmocka_unit_test(subdomain_invalid),
            cmocka_unit_test(label_valid),
            cmocka_unit_test(label_invalid),
            cmocka_unit_test(qualified_name_valid),
            cmocka_unit_test(qualified_name_invalid),
            cmocka_unit_test(label_value_valid),
            cmocka_unit_test(label_value_invalid),
            cmocka_unit_test(env_name_valid),
            cmocka_unit_test(env_name_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
