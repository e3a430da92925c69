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
#include "xpool/resource.h"

#define QMAX "9223372036854775807" /* 2^63-1 base units, the largest quantity */

static struct xp_quantity qty(const char *text)
{
        struct xp_quantity q = {0};

        assert_int_equal(xp_quantity_parse(text, &q, NULL), 0);
        return q;
}

static void set(struct xp_resource_list *list, const char *name, const char *text)
{
        struct xp_quantity q = qty(text);

        assert_int_equal(xp_resource_list_set(list, name, &q), 0);
}

/* Asserts that name is in list with the canonical text expected. */
static void
assert_entry(const struct xp_resource_list *list, const char *name, const char *expected)
{
        const struct xp_quantity *q = xp_resource_list_get(list, name);
        char text[XP_QUANTITY_STRING_MAX];

        if (!q)
                fail_msg("resource \"%s\" is missing", name);
        assert_string_equal(xp_quantity_format(q, text), expected);
}

/* Asserts the names of list, in order. */
static void assert_names(const struct xp_resource_list *list, const char *const *names, size_t n)
{
        assert_int_equal(list->n, n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(list->items[i].name, names[i]);
}

static void set_keeps_entries_sorted(void **state)
{
        static const char *const sorted[] = {
            "amd.com/gpu",
            "cpu",
            "ephemeral-storage",
            "memory",
            "nvidia.com/gpu",
            "pods",
            "xpool.io/accelerator",
        };
        struct xp_resource_list list = {0};

        (void)state;
        set(&list, "xpool.io/accelerator", "1");
        set(&list, "memory", "1Gi");
        set(&list, "cpu", "500m");
        set(&list, "pods", "110");
        set(&list, "amd.com/gpu", "2");
        set(&list, "nvidia.com/gpu", "8");
        set(&list, "ephemeral-storage", "100Gi");
        assert_names(&list, sorted, XP_ELEMENTSOF(sorted));

        assert_entry(&list, "cpu", "500m");
        assert_entry(&list, "memory", "1Gi");
        assert_entry(&list, "nvidia.com/gpu", "8");
        assert_null(xp_resource_list_get(&list, "storage"));
        assert_null(xp_resource_list_get(&list, "CPU"));
        assert_null(xp_resource_list_get(&list, ""));

        xp_resource_list_done(&list);
        assert_null(list.items);
        assert_int_equal(list.n, 0);
        xp_resource_list_done(&list); /* done twice is harmless */
}

static void set_replaces_existing_entry(void **state)
{
        struct xp_resource_list list = {0};
        const struct xp_quantity *q;

        (void)state;
        set(&list, "memory", "1Gi");
        set(&list, "cpu", "1");
        set(&list, "memory", "512Mi");
        assert_int_equal(list.n, 2);
        assert_entry(&list, "memory", "512Mi");
        set(&list, "memory", "2000");
        q = xp_resource_list_get(&list, "memory");
        assert_non_null(q);
        assert_int_equal(q->format, XP_QUANTITY_DECIMAL_SI); /* the new format replaces the old */
        assert_entry(&list, "memory", "2k");
        assert_entry(&list, "cpu", "1");
        xp_resource_list_done(&list);
}

static void get_on_empty_list(void **state)
{
        struct xp_resource_list list = {0};

        (void)state;
        assert_null(xp_resource_list_get(&list, "cpu"));
}

static void copy_is_deep(void **state)
{
        struct xp_resource_list list = {0}, copy = {0}, empty = {0};

        (void)state;
        set(&list, "cpu", "2");
        set(&list, "nvidia.com/gpu", "4");
        assert_int_equal(xp_resource_list_copy(&list, &copy), 0);
        assert_int_equal(copy.n, 2);
        assert_true(copy.items != list.items);
        for (size_t i = 0; i < copy.n; i++) {
                assert_string_equal(copy.items[i].name, list.items[i].name);
                assert_true(copy.items[i].name != list.items[i].name);
        }
        assert_true(xp_resource_list_equal(&list, &copy));

        /* changing the original leaves the copy alone */
        set(&list, "cpu", "8");
        xp_resource_list_done(&list);
        assert_entry(&copy, "cpu", "2");
        assert_entry(&copy, "nvidia.com/gpu", "4");
        xp_resource_list_done(&copy);

        /* an empty source gives an empty copy */
        assert_int_equal(xp_resource_list_copy(&empty, &copy), 0);
        assert_int_equal(copy.n, 0);
        assert_null(copy.items);
}

static void add_sums_and_adds_new_names(void **state)
{
        struct xp_resource_list list = {0}, other = {0};
        struct xp_error err = {0};

        (void)state;
        set(&list, "cpu", "1500m");
        set(&list, "memory", "1Gi");
        set(&other, "cpu", "500m");
        set(&other, "memory", "1Gi");
        set(&other, "nvidia.com/gpu", "2");
        set(&other, "amd.com/gpu", "1");
        assert_int_equal(xp_resource_list_add(&list, &other, &err), 0);
        assert_int_equal(list.n, 4);
        assert_entry(&list, "cpu", "2");
        assert_entry(&list, "memory", "2Gi");
        assert_entry(&list, "nvidia.com/gpu", "2");
        assert_entry(&list, "amd.com/gpu", "1");
        assert_string_equal(list.items[0].name, "amd.com/gpu"); /* still sorted */
        assert_int_equal(err.code, 0);

        /* adding an empty list changes nothing; err may be NULL */
        xp_resource_list_done(&other);
        assert_int_equal(xp_resource_list_add(&list, &other, NULL), 0);
        assert_int_equal(list.n, 4);
        assert_entry(&list, "cpu", "2");

        /* adding to an empty list copies */
        assert_int_equal(xp_resource_list_add(&other, &list, NULL), 0);
        assert_true(xp_resource_list_equal(&other, &list));
        assert_int_equal(other.n, 4);

        xp_resource_list_done(&list);
        xp_resource_list_done(&other);
}

static void sub_may_go_negative(void **state)
{
        struct xp_resource_list list = {0}, other = {0};

        (void)state;
        set(&list, "cpu", "4");
        set(&list, "memory", "8Gi");
        set(&other, "cpu", "6");
        set(&other, "memory", "2Gi");
        set(&other, "nvidia.com/gpu", "1");
        assert_int_equal(xp_resource_list_sub(&list, &other, NULL), 0);
        assert_int_equal(list.n, 3);
        assert_entry(&list, "cpu", "-2");
        assert_entry(&list, "memory", "6Gi");
        assert_entry(&list, "nvidia.com/gpu", "-1"); /* missing counts as zero */

        /* subtracting itself leaves zero entries, which equal an empty list */
        xp_resource_list_done(&other);
        assert_int_equal(xp_resource_list_copy(&list, &other), 0);
        assert_int_equal(xp_resource_list_sub(&list, &other, NULL), 0);
        assert_int_equal(list.n, 3);
        assert_entry(&list, "cpu", "0");
        xp_resource_list_done(&other);
        assert_true(xp_resource_list_equal(&list, &other));

        xp_resource_list_done(&list);
}

static void sub_keeps_format_of_operand_for_new_names(void **state)
{
        struct xp_resource_list list = {0}, other = {0};

        (void)state;
        set(&other, "memory", "1Gi");
        assert_int_equal(xp_resource_list_sub(&list, &other, NULL), 0);
        assert_entry(&list, "memory", "-1Gi");
        xp_resource_list_done(&list);
        xp_resource_list_done(&other);
}

static void add_overflow_leaves_list_unchanged(void **state)
{
        struct xp_resource_list list = {0}, other = {0}, before = {0};
        struct xp_error err = {0};

        (void)state;
        set(&list, "cpu", "1");
        set(&list, "memory", QMAX);
        /* "amd.com/gpu" sorts first, so it is added to the result before memory overflows */
        set(&other, "amd.com/gpu", "1");
        set(&other, "cpu", "1");
        set(&other, "memory", "1");
        assert_int_equal(xp_resource_list_copy(&list, &before), 0);

        assert_int_equal(xp_resource_list_add(&list, &other, &err), -ERANGE);
        assert_int_equal(err.code, -ERANGE);
        assert_string_equal(err.msg, "adding \"memory\" leaves the range of quantities");
        assert_int_equal(list.n, 2);
        assert_null(xp_resource_list_get(&list, "amd.com/gpu"));
        assert_entry(&list, "cpu", "1");
        assert_entry(&list, "memory", QMAX);
        assert_true(xp_resource_list_equal(&list, &before));

        /* without an error struct the code is the same */
        assert_int_equal(xp_resource_list_add(&list, &other, NULL), -ERANGE);
        assert_int_equal(list.n, 2);

        /* the largest quantity itself is reachable */
        xp_resource_list_done(&other);
        set(&other, "memory", "0");
        set(&other, "cpu", "9223372036854775806");
        assert_int_equal(xp_resource_list_add(&list, &other, NULL), 0);
        assert_entry(&list, "cpu", QMAX);
        assert_entry(&list, "memory", QMAX);

        xp_resource_list_done(&list);
        xp_resource_list_done(&other);
        xp_resource_list_done(&before);
}

static void sub_overflow_leaves_list_unchanged(void **state)
{
        struct xp_resource_list list = {0}, other = {0};
        struct xp_error err = {0};

        (void)state;
        set(&list, "cpu", "-" QMAX);
        set(&other, "cpu", "1");
        assert_int_equal(xp_resource_list_sub(&list, &other, &err), -ERANGE);
        assert_int_equal(err.code, -ERANGE);
        assert_string_equal(err.msg, "subtracting \"cpu\" leaves the range of quantities");
        assert_int_equal(list.n, 1);
        assert_entry(&list, "cpu", "-" QMAX);

        /* 0 - (-max) is max: fine; 1 - (-max) is not */
        xp_resource_list_done(&list);
        xp_resource_list_done(&other);
        set(&other, "nvidia.com/gpu", "-" QMAX);
        assert_int_equal(xp_resource_list_sub(&list, &other, NULL), 0);
        assert_entry(&list, "nvidia.com/gpu", QMAX);
        set(&list, "nvidia.com/gpu", "1");
        assert_int_equal(xp_resource_list_sub(&list, &other, NULL), -ERANGE);
        assert_entry(&list, "nvidia.com/gpu", "1");

        xp_resource_list_done(&list);
        xp_resource_list_done(&other);
}

static void fits_compares_each_resource(void **state)
{
        struct xp_resource_list request = {0}, available = {0};
        const char *missing = "unset";

        (void)state;
        set(&available, "cpu", "4");
        set(&available, "memory", "16Gi");
        set(&available, "nvidia.com/gpu", "2");

        /* an empty request always fits and clears ret_missing */
        assert_true(xp_resource_list_fits(&request, &available, &missing));
        assert_null(missing);

        set(&request, "cpu", "4");
        set(&request, "memory", "16Gi");
        set(&request, "nvidia.com/gpu", "2");
        missing = "unset";
        assert_true(xp_resource_list_fits(&request, &available, &missing));
        assert_null(missing);
        assert_true(xp_resource_list_fits(&request, &available, NULL));

        /* the same value in another format fits */
        set(&request, "memory", "17179869184");
        assert_true(xp_resource_list_fits(&request, &available, NULL));

        /* one milli-unit more does not */
        set(&request, "cpu", "4001m");
        assert_false(xp_resource_list_fits(&request, &available, &missing));
        assert_string_equal(missing, "cpu");
        assert_ptr_equal(missing, request.items[0].name); /* borrowed from request */
        assert_false(xp_resource_list_fits(&request, &available, NULL));

        xp_resource_list_done(&request);
        xp_resource_list_done(&available);
}

static void fits_names_first_failing_resource(void **state)
{
        struct xp_resource_list request = {0}, available = {0};
        const char *missing = NULL;

        (void)state;
        set(&available, "cpu", "4");
        set(&request, "amd.com/gpu", "0"); /* missing but zero: fits */
        set(&request, "cpu", "1");
        set(&request, "memory", "1Gi"); /* missing: counts as zero */
        set(&request, "nvidia.com/gpu", "1");
        assert_false(xp_resource_list_fits(&request, &available, &missing));
        assert_string_equal(missing, "memory");

        set(&available, "memory", "1Gi");
        assert_false(xp_resource_list_fits(&request, &available, &missing));
        assert_string_equal(missing, "nvidia.com/gpu");

        set(&available, "nvidia.com/gpu", "1");
        assert_true(xp_resource_list_fits(&request, &available, &missing));
        assert_null(missing);

        /* resources only in available do not matter */
        set(&available, "xpool.io/accelerator", "8");
        assert_true(xp_resource_list_fits(&request, &available, NULL));

        /* nothing requested fits an empty node, anything requested does not */
        xp_resource_list_done(&available);
        assert_false(xp_resource_list_fits(&request, &available, &missing));
        assert_string_equal(missing, "cpu");

        xp_resource_list_done(&request);
}

static void fits_fractions(void **state)
{
        struct xp_resource_list small = {0}, one = {0};
        const char *missing = NULL;

        (void)state;
        set(&small, "cpu", "500m");
        set(&one, "cpu", "1");
        assert_true(xp_resource_list_fits(&small, &one, &missing));
        assert_null(missing);
        assert_false(xp_resource_list_fits(&one, &small, &missing));
        assert_string_equal(missing, "cpu");

        set(&small, "cpu", "0.5");
        assert_true(xp_resource_list_fits(&small, &one, NULL));
        set(&small, "cpu", "1000m");
        assert_true(xp_resource_list_fits(&small, &one, NULL));
        assert_true(xp_resource_list_fits(&one, &small, NULL));

        xp_resource_list_done(&small);
        xp_resource_list_done(&one);
}

static void equal_ignores_format_and_zeros(void **state)
{
        struct xp_resource_list a = {0}, b = {0}, empty = {0};

        (void)state;
        assert_true(xp_resource_list_equal(&a, &b));

        set(&a, "memory", "1Gi");
        set(&b, "memory", "1073741824");
        assert_true(xp_resource_list_equal(&a, &b));
        assert_true(xp_resource_list_equal(&b, &a));

        set(&a, "cpu", "1");
        set(&b, "cpu", "1000m");
        assert_true(xp_resource_list_equal(&a, &b));

        /* zero entries on either side do not count */
        set(&a, "nvidia.com/gpu", "0");
        set(&b, "pods", "0m");
        assert_true(xp_resource_list_equal(&a, &b));
        assert_true(xp_resource_list_equal(&b, &a));

        /* one differing value does */
        set(&b, "cpu", "1001m");
        assert_false(xp_resource_list_equal(&a, &b));
        assert_false(xp_resource_list_equal(&b, &a));
        set(&b, "cpu", "1");

        /* an extra non-zero entry does */
        set(&b, "amd.com/gpu", "1");
        assert_false(xp_resource_list_equal(&a, &b));
        assert_false(xp_resource_list_equal(&b, &a));

        xp_resource_list_done(&b);
        assert_false(xp_resource_list_equal(&a, &empty));
        set(&b, "nvidia.com/gpu", "0");
        assert_true(xp_resource_list_equal(&b, &empty));
        assert_true(xp_resource_list_equal(&empty, &b));

        xp_resource_list_done(&a);
        xp_resource_list_done(&b);
}

static void name_check_accepts(void **state)
{
        static const char *const good[] = {
            "cpu",
            "memory",
            "ephemeral-storage",
            "storage",
            "pods",
            "hugepages-2Mi",
            "hugepages-1Gi",
            "nvidia.com/gpu",
            "amd.com/gpu",
            "huawei.com/Ascend910",
            "cambricon.com/mlu",
            "gpu.intel.com/i915",
            "vendor.com/npu",
            "xpool.io/accelerator",
            "example.com/a_b.c-d",
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(good); i++) {
                struct xp_error err = {0};

                if (xp_resource_name_check(good[i], &err) != 0)
                        fail_msg("\"%s\" rejected: %s", good[i], err.msg);
                assert_int_equal(err.code, 0);
                assert_int_equal(xp_resource_name_check(good[i], NULL), 0);
        }
}

#define NOT_STANDARD                                                                               \
        ": a name without a domain must be a standard resource (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>); extended resources need a domain, e.g. \"vendor.com/npu\""
#define RESERVED ": the kubernetes.io domain is reserved for Kubernetes' own resources"
#define NAME_PART                                                                                  \
        ": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or 'example.com/MyName')"
#define BAD_PREFIX                                                                                 \
        ": the prefix before '/' must be a lowercase RFC 1123 subdomain of at most 253 characters (e.g. 'example.com')"

static void name_check_rejects(void **state)
{
        static const struct {
                const char *name;
                const char *message;
        } bad[] = {
            {"gpu", "Invalid value: \"gpu\"" NOT_STANDARD},
            {"GPU", "Invalid value: \"GPU\"" NOT_STANDARD},
            {"hugepages-", "Invalid value: \"hugepages-\"" NAME_PART},
            {"hugepages-huge", "Invalid value: \"hugepages-huge\"" NOT_STANDARD},
            {"nvidia.com/", "Invalid value: \"nvidia.com/\": the name part must not be empty"},
            {"/gpu", "Invalid value: \"/gpu\": the prefix before '/' must not be empty"},
            {"kubernetes.io/foo", "Invalid value: \"kubernetes.io/foo\"" RESERVED},
            {"node.kubernetes.io/x", "Invalid value: \"node.kubernetes.io/x\"" RESERVED},
            {"nvidia.com/gpu!", "Invalid value: \"nvidia.com/gpu!\"" NAME_PART},
            {"nvidia gpu", "Invalid value: \"nvidia gpu\"" NAME_PART},
            {"nvidia.com/my gpu", "Invalid value: \"nvidia.com/my gpu\"" NAME_PART},
            {" cpu", "Invalid value: \" cpu\"" NAME_PART},
            {"NVIDIA.com/gpu", "Invalid value: \"NVIDIA.com/gpu\"" BAD_PREFIX},
            {"nvidia..com/gpu", "Invalid value: \"nvidia..com/gpu\"" BAD_PREFIX},
            {"nvidia.com/gpu/0", "Invalid value: \"nvidia.com/gpu/0\"" NAME_PART},
            {"", "Invalid value: \"\": the name part must not be empty"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                struct xp_error err = {0};

                if (xp_resource_name_check(bad[i].name, &err) != -EINVAL)
                        fail_msg("\"%s\" not rejected with -EINVAL", bad[i].name);
                assert_int_equal(err.code, -EINVAL);
                assert_string_equal(err.msg, bad[i].message);
                assert_int_equal(xp_resource_name_check(bad[i].name, NULL), -EINVAL);
        }
}

static void name_check_limits_name_part(void **state)
{
        char name[128], message[256];
        struct xp_error err = {0};

        (void)state;
        /* 63 characters after the prefix are fine */
        snprintf(name, sizeof(name), "vendor.com/%s", "");
        memset(name + 11, 'a', 63);
        name[11 + 63] = '\0';
        assert_int_equal(xp_resource_name_check(name, &err), 0);

        /* 64 are not; the message shows the first 64 bytes of the name */
        memset(name + 11, 'a', 64);
        name[11 + 64] = '\0';
        assert_int_equal(xp_resource_name_check(name, &err), -EINVAL);
        snprintf(message,
                 sizeof(message),
                 "Invalid value: \"%.64s\"...: the name part must be no more than 63 characters",
                 name);
        assert_string_equal(err.msg, message);

        /* the same without a prefix */
        memset(name, 'a', 64);
        name[64] = '\0';
        assert_int_equal(xp_resource_name_check(name, &err), -EINVAL);
        snprintf(message,
                 sizeof(message),
                 "Invalid value: \"%s\": the name part must be no more than 63 characters",
                 name);
        assert_string_equal(err.msg, message);
}

static void name_classes(void **state)
{
        static const struct {
                const char *name;
                bool standard, extended, container;
        } names[] = {
            {"cpu", true, false, true},
            {"memory", true, false, true},
            {"ephemeral-storage", true, false, true},
            {"storage", true, false, false},
            {"pods", true, false, false},
            {"hugepages-2Mi", true, false, true},
            {"hugepages-1Gi", true, false, true},
            {"hugepages-", false, false, false},
            {"hugepages-x", false, false, false},
            {"hugepages-0", false, false, false},
            {"hugepages--2Mi", false, false, false},
            {"hugepages-1m", false, false, false},
            {"nvidia.com/gpu", false, true, true},
            {"amd.com/gpu", false, true, true},
            {"huawei.com/Ascend910", false, true, true},
            {"xpool.io/accelerator", false, true, true},
            {"kubernetes.io/foo", false, false, false},
            {"node.kubernetes.io/x", false, false, false},
            {"notkubernetes.io/x", false, true, true},
            {"requests.nvidia.com/gpu", false, false, false},
            {"nvidia.com/gpu!", false, false, false},
            {"gpu", false, false, false},
            {"CPU", false, false, false},
            {"", false, false, false},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(names); i++) {
                const char *name = names[i].name;

                if (xp_resource_name_is_standard(name) != names[i].standard)
                        fail_msg("is_standard(\"%s\") should be %d", name, names[i].standard);
                if (xp_resource_name_is_extended(name) != names[i].extended)
                        fail_msg("is_extended(\"%s\") should be %d", name, names[i].extended);
                if (xp_resource_name_is_container_resource(name) != names[i].container)
                        fail_msg(
                            "is_container_resource(\"%s\") should be %d", name, names[i].container);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(set_keeps_entries_sorted),
            cmocka_unit_test(set_replaces_existing_entry),
            cmocka_unit_test(get_on_empty_list),
            cmocka_unit_test(copy_is_deep),
            cmocka_unit_test(add_sums_and_adds_new_names),
            cmocka_unit_test(sub_may_go_negative),
            cmocka_unit_test(sub_keeps_format_of_operand_for_new_names),
            cmocka_unit_test(add_overflow_leaves_list_unchanged),
            cmocka_unit_test(sub_overflow_leaves_list_unchanged),
            cmocka_unit_test(fits_compares_each_resource),
            cmocka_unit_test(fits_names_first_failing_resource),
            cmocka_unit_test(fits_fractions),
            cmocka_unit_test(equal_ignores_format_and_zeros),
            cmocka_unit_test(name_check_accepts),
            cmocka_unit_test(name_check_rejects),
            cmocka_unit_test(name_check_limits_name_part),
            cmocka_unit_test(name_classes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
