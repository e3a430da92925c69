/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/devenv.h"
#include "xpool/macro.h"

#define DEV(res, id_, idx, m)                                                                      \
        {                                                                                          \
                .resource = (char *)(res), .id = (char *)(id_), .index = (idx), .milli = (m)       \
        }
#define PLACEMENT(arr)                                                                             \
        {                                                                                          \
                .node = (char *)"n1", .devices = {.items = (arr), .n = XP_ELEMENTSOF(arr) }        \
        }

/* Builds the environment and compares it, entry by entry, with the NULL-terminated expected. */
static void check_env(const struct xp_placement *placement,
                      const struct xp_node *node,
                      const char *const *expected)
{
        _cleanup_(xp_devenv_freep) char **env = NULL;
        struct xp_error err = {0};
        size_t i;

        assert_int_equal(xp_devenv_build(placement, node, &env, &err), 0);
        assert_non_null(env);
        for (i = 0; expected[i]; i++) {
                if (!env[i])
                        fail_msg("entry %zu missing, expected \"%s\"", i, expected[i]);
                if (strcmp(env[i], expected[i]) != 0)
                        fail_msg("entry %zu: \"%s\", expected \"%s\"", i, env[i], expected[i]);
        }
        if (env[i])
                fail_msg("extra entry %zu: \"%s\"", i, env[i]);
}

static void nvidia_uuids(void **state)
{
        struct xp_placement_device devs[] = {
            DEV("nvidia.com/gpu", "GPU-bbbb", 3, 1000),
            DEV("nvidia.com/gpu", "GPU-aaaa", 1, 1000),
        };
        struct xp_placement p = PLACEMENT(devs);
        const char *expected[] = {
            "CUDA_VISIBLE_DEVICES=GPU-bbbb,GPU-aaaa",
            "NVIDIA_VISIBLE_DEVICES=GPU-bbbb,GPU-aaaa",
            "XPOOL_DEVICES=[{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-bbbb\",\"index\":3,\"milli\":1000},"
            "{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-aaaa\",\"index\":1,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=GPU-bbbb,GPU-aaaa",
            NULL,
        };

        (void)state;
        check_env(&p, NULL, expected);
}

static void nvidia_indices_and_mig(void **state)
{
        /* ids that are not UUIDs (PCI addresses): indices, in the bus order NVML uses */
        struct xp_placement_device pci[] = {
            DEV("nvidia.com/gpu", "0000:3b:00.0", 2, 1000),
            DEV("nvidia.com/gpu", "0000:18:00.0", 0, 1000),
        };
        struct xp_placement p = PLACEMENT(pci);
        const char *expected[] = {
            "CUDA_DEVICE_ORDER=PCI_BUS_ID",
            "CUDA_VISIBLE_DEVICES=2,0",
            "NVIDIA_VISIBLE_DEVICES=2,0",
            "XPOOL_DEVICES=[{\"resource\":\"nvidia.com/gpu\",\"id\":\"0000:3b:00.0\",\"index\":2,\"milli\":1000},"
            "{\"resource\":\"nvidia.com/gpu\",\"id\":\"0000:18:00.0\",\"index\":0,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=0000:3b:00.0,0000:18:00.0",
            NULL,
        };
        struct xp_placement_device mig[] = {
            DEV("nvidia.com/mig-1g.10gb", "MIG-1234", 0, 1000),
        };
        struct xp_placement pm = PLACEMENT(mig);
        const char *expected_mig[] = {
            "CUDA_VISIBLE_DEVICES=MIG-1234",
            "NVIDIA_VISIBLE_DEVICES=MIG-1234",
            "XPOOL_DEVICES=[{\"resource\":\"nvidia.com/mig-1g.10gb\",\"id\":\"MIG-1234\",\"index\":0,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=MIG-1234",
            NULL,
        };

        (void)state;
        check_env(&p, NULL, expected);
        check_env(&pm, NULL, expected_mig);
}

static void other_vendors(void **state)
{
        struct xp_placement_device amd[] = {DEV("amd.com/gpu", "0000:c1:00.0", 4, 1000)};
        struct xp_placement_device amd_uuid[] = {
            DEV("amd.com/gpu", "GPU-0123456789abcdef", 4, 1000)};
        /* Ascend's runtime reads ascending lists only */
        struct xp_placement_device ascend[] = {
            DEV("huawei.com/Ascend910", "0000:c1:00.0", 6, 1000),
            DEV("huawei.com/Ascend910", "0000:81:00.0", 2, 1000),
        };
        struct xp_placement_device mlu[] = {DEV("cambricon.com/mlu", "m5", 5, 1000)};
        struct xp_placement_device i915[] = {DEV("gpu.intel.com/i915", "card1", 1, 1000)};
        struct xp_placement_device xe[] = {DEV("gpu.intel.com/xe", "card0", 0, 1000)};
        struct xp_placement_device gaudi[] = {DEV("habana.ai/gaudi", "hl7", 7, 1000)};
        struct xp_placement pa = PLACEMENT(amd), pau = PLACEMENT(amd_uuid), pn = PLACEMENT(ascend),
                            pm = PLACEMENT(mlu), pi = PLACEMENT(i915), px = PLACEMENT(xe),
                            pg = PLACEMENT(gaudi);
        const char *e_amd[] = {
            "ROCR_VISIBLE_DEVICES=4",
            "XPOOL_DEVICES=[{\"resource\":\"amd.com/gpu\",\"id\":\"0000:c1:00.0\",\"index\":4,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=0000:c1:00.0",
            NULL,
        };
        const char *e_amd_uuid[] = {
            "ROCR_VISIBLE_DEVICES=GPU-0123456789abcdef",
            "XPOOL_DEVICES=[{\"resource\":\"amd.com/gpu\",\"id\":\"GPU-0123456789abcdef\",\"index\":4,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=GPU-0123456789abcdef",
            NULL,
        };
        const char *e_ascend[] = {
            "ASCEND_RT_VISIBLE_DEVICES=2,6",
            "ASCEND_VISIBLE_DEVICES=2,6",
            "XPOOL_DEVICES=[{\"resource\":\"huawei.com/Ascend910\",\"id\":\"0000:c1:00.0\",\"index\":6,\"milli\":1000},"
            "{\"resource\":\"huawei.com/Ascend910\",\"id\":\"0000:81:00.0\",\"index\":2,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=0000:c1:00.0,0000:81:00.0",
            NULL,
        };
        const char *e_mlu[] = {
            "MLU_VISIBLE_DEVICES=5",
            "XPOOL_DEVICES=[{\"resource\":\"cambricon.com/mlu\",\"id\":\"m5\",\"index\":5,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=m5",
            NULL,
        };
        const char *e_i915[] = {
            "XPOOL_DEVICES=[{\"resource\":\"gpu.intel.com/i915\",\"id\":\"card1\",\"index\":1,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=card1",
            "ZE_AFFINITY_MASK=1",
            NULL,
        };
        const char *e_xe[] = {
            "XPOOL_DEVICES=[{\"resource\":\"gpu.intel.com/xe\",\"id\":\"card0\",\"index\":0,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=card0",
            "ZE_AFFINITY_MASK=0",
            NULL,
        };
        const char *e_gaudi[] = {
            "HABANA_VISIBLE_DEVICES=7",
            "XPOOL_DEVICES=[{\"resource\":\"habana.ai/gaudi\",\"id\":\"hl7\",\"index\":7,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=hl7",
            NULL,
        };

        (void)state;
        check_env(&pa, NULL, e_amd);
        check_env(&pau, NULL, e_amd_uuid);
        check_env(&pn, NULL, e_ascend);
        check_env(&pm, NULL, e_mlu);
        check_env(&pi, NULL, e_i915);
        check_env(&px, NULL, e_xe);
        check_env(&pg, NULL, e_gaudi);
}

/* The seed's pod: one GPU and two NPUs of a vendor the table does not know. */
static void mixed_gpu_npu_with_node(void **state)
{
        struct xp_device node_devs[] = {
            {.id = (char *)"GPU-1111",
             .kind = XP_DEVICE_GPU,
             .vendor = (char *)"NVIDIA",
             .model = (char *)"H100"},
            {.id = (char *)"npu-0",
             .kind = XP_DEVICE_NPU,
             .vendor = (char *)"Vendor",
             .model = (char *)"N1"},
            {.id = (char *)"npu-1",
             .kind = XP_DEVICE_NPU,
             .vendor = (char *)"Vendor",
             .model = (char *)"N1"},
        };
        struct xp_node_inventory inventory = {.devices = {.items = node_devs, .n = 3}};
        struct xp_node node = {.status = {.xpool = &inventory}};
        struct xp_placement_device devs[] = {
            DEV("nvidia.com/gpu", "GPU-1111", 0, 1000),
            DEV("vendor.com/npu", "npu-0", 0, 1000),
            DEV("vendor.com/npu", "npu-1", 1, 1000),
        };
        struct xp_placement p = PLACEMENT(devs);
        const char *expected[] = {
            "CUDA_VISIBLE_DEVICES=GPU-1111",
            "NVIDIA_VISIBLE_DEVICES=GPU-1111",
            "XPOOL_DEVICES=[{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-1111\",\"index\":0,\"milli\":1000,"
            "\"kind\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"H100\"},"
            "{\"resource\":\"vendor.com/npu\",\"id\":\"npu-0\",\"index\":0,\"milli\":1000,"
            "\"kind\":\"npu\",\"vendor\":\"Vendor\",\"model\":\"N1\"},"
            "{\"resource\":\"vendor.com/npu\",\"id\":\"npu-1\",\"index\":1,\"milli\":1000,"
            "\"kind\":\"npu\",\"vendor\":\"Vendor\",\"model\":\"N1\"}]",
            "XPOOL_VISIBLE_DEVICES=GPU-1111,npu-0,npu-1",
            NULL,
        };

        (void)state;
        check_env(&p, &node, expected);
}

/* A resource name the table lacks takes the variables of the vendor the node reports. */
static void vendor_fallback(void **state)
{
        struct xp_device node_devs[] = {
            {.id = (char *)"npu-9",
             .kind = XP_DEVICE_NPU,
             .vendor = (char *)"huawei",
             .model = (char *)"910B"},
            {.id = (char *)"GPU-x", .kind = XP_DEVICE_FPGA, .vendor = (char *)"NVIDIA"},
        };
        struct xp_node_inventory inventory = {.devices = {.items = node_devs, .n = 2}};
        struct xp_node node = {.status = {.xpool = &inventory}};
        struct xp_placement_device devs[] = {
            DEV("example.com/npu", "npu-9", 3, 1000),
            /* the vendor matches but not the kind: neutral variables only */
            DEV("example.com/thing", "GPU-x", 1, 1000),
        };
        struct xp_placement p = PLACEMENT(devs);
        const char *expected[] = {
            "ASCEND_RT_VISIBLE_DEVICES=3",
            "ASCEND_VISIBLE_DEVICES=3",
            "XPOOL_DEVICES=[{\"resource\":\"example.com/npu\",\"id\":\"npu-9\",\"index\":3,\"milli\":1000,"
            "\"kind\":\"npu\",\"vendor\":\"huawei\",\"model\":\"910B\"},"
            "{\"resource\":\"example.com/thing\",\"id\":\"GPU-x\",\"index\":1,\"milli\":1000,"
            "\"kind\":\"fpga\",\"vendor\":\"NVIDIA\"}]",
            "XPOOL_VISIBLE_DEVICES=npu-9,GPU-x",
            NULL,
        };

        (void)state;
        check_env(&p, &node, expected);
}

static void shares(void **state)
{
        struct xp_placement_device gpu[] = {DEV("nvidia.com/gpu", "GPU-s", 0, 333)};
        struct xp_placement_device tiny[] = {DEV("nvidia.com/gpu", "GPU-t", 0, 5)};
        /* a whole GPU beside a share: no MPS limit, it would throttle the whole one too */
        struct xp_placement_device mixed[] = {
            DEV("nvidia.com/gpu", "GPU-w", 0, 1000),
            DEV("nvidia.com/gpu", "GPU-s", 1, 500),
        };
        struct xp_placement_device npu[] = {DEV("cambricon.com/mlu", "m0", 0, 250)};
        struct xp_placement pg = PLACEMENT(gpu), pt = PLACEMENT(tiny), pm = PLACEMENT(mixed),
                            pn = PLACEMENT(npu);
        const char *e_gpu[] = {
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=33",
            "CUDA_VISIBLE_DEVICES=GPU-s",
            "NVIDIA_VISIBLE_DEVICES=GPU-s",
            "XPOOL_DEVICES=[{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-s\",\"index\":0,\"milli\":333}]",
            "XPOOL_DEVICE_SHARE=GPU-s=333",
            "XPOOL_VISIBLE_DEVICES=GPU-s",
            NULL,
        };
        const char *e_tiny[] = {
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1",
            "CUDA_VISIBLE_DEVICES=GPU-t",
            "NVIDIA_VISIBLE_DEVICES=GPU-t",
            "XPOOL_DEVICES=[{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-t\",\"index\":0,\"milli\":5}]",
            "XPOOL_DEVICE_SHARE=GPU-t=5",
            "XPOOL_VISIBLE_DEVICES=GPU-t",
            NULL,
        };
        const char *e_mixed[] = {
            "CUDA_VISIBLE_DEVICES=GPU-w,GPU-s",
            "NVIDIA_VISIBLE_DEVICES=GPU-w,GPU-s",
            "XPOOL_DEVICES=[{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-w\",\"index\":0,\"milli\":1000},"
            "{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-s\",\"index\":1,\"milli\":500}]",
            "XPOOL_DEVICE_SHARE=GPU-s=500",
            "XPOOL_VISIBLE_DEVICES=GPU-w,GPU-s",
            NULL,
        };
        const char *e_npu[] = {
            "MLU_VISIBLE_DEVICES=0",
            "XPOOL_DEVICES=[{\"resource\":\"cambricon.com/mlu\",\"id\":\"m0\",\"index\":0,\"milli\":250}]",
            "XPOOL_DEVICE_SHARE=m0=250",
            "XPOOL_VISIBLE_DEVICES=m0",
            NULL,
        };

        (void)state;
        check_env(&pg, NULL, e_gpu);
        check_env(&pt, NULL, e_tiny);
        check_env(&pm, NULL, e_mixed);
        check_env(&pn, NULL, e_npu);
}

static void empty_and_unknown(void **state)
{
        struct xp_placement empty = {.node = (char *)"n1"};
        const char *e_empty[] = {"XPOOL_DEVICES=[]", "XPOOL_VISIBLE_DEVICES=", NULL};
        struct xp_placement_device unknown[] = {DEV("example.com/tpu", "t0", 0, 1000)};
        struct xp_placement pu = PLACEMENT(unknown);
        const char *e_unknown[] = {
            "XPOOL_DEVICES=[{\"resource\":\"example.com/tpu\",\"id\":\"t0\",\"index\":0,\"milli\":1000}]",
            "XPOOL_VISIBLE_DEVICES=t0",
            NULL,
        };
        /* a node that does not know the device adds nothing */
        struct xp_node bare = {0};

        (void)state;
        check_env(&empty, NULL, e_empty);
        check_env(&pu, NULL, e_unknown);
        check_env(&pu, &bare, e_unknown);
}

static void expect_error(const struct xp_placement *placement, int code, const char *message)
{
        char **env = (char **)0x1;
        struct xp_error err = {0};

        assert_int_equal(xp_devenv_build(placement, NULL, &env, &err), code);
        assert_ptr_equal(env, (char **)0x1);
        assert_int_equal(err.code, code);
        if (strcmp(err.msg, message) != 0)
                fail_msg("message \"%s\", expected \"%s\"", err.msg, message);
}

static void bad_input(void **state)
{
        struct xp_placement_device no_resource[] = {DEV(NULL, "a", 0, 1000)};
        struct xp_placement_device empty_resource[] = {DEV("", "a", 0, 1000)};
        struct xp_placement_device no_id[] = {DEV("nvidia.com/gpu", NULL, 0, 1000)};
        struct xp_placement_device comma[] = {DEV("x.com/y", "ok", 0, 1000),
                                              DEV("x.com/y", "a,b", 1, 1000)};
        struct xp_placement_device equals[] = {DEV("x.com/y", "a=b", 0, 1000)};
        struct xp_placement_device space[] = {DEV("x.com/y", "a b", 0, 1000)};
        struct xp_placement_device ctl[] = {DEV("x.com/y", "a\nb", 0, 1000)};
        struct xp_placement_device empty_id[] = {DEV("x.com/y", "", 0, 1000)};
        struct xp_placement_device negative[] = {DEV("x.com/y", "a", -1, 1000)};
        struct xp_placement_device zero[] = {DEV("x.com/y", "a", 0, 0)};
        struct xp_placement_device over[] = {DEV("x.com/y", "a", 0, 1001)};
        struct xp_placement_device twice[] = {
            DEV("nvidia.com/gpu", "GPU-a", 0, 500),
            DEV("nvidia.com/gpu", "GPU-b", 1, 1000),
            DEV("nvidia.com/gpu", "GPU-a", 0, 500),
        };
        /* the same id under two resources is two devices (a GPU and its memory share) */
        struct xp_placement_device two_resources[] = {
            DEV("x.com/a", "d0", 0, 1000),
            DEV("x.com/b", "d0", 0, 1000),
        };
        struct xp_placement p1 = PLACEMENT(no_resource), p2 = PLACEMENT(empty_resource),
                            p3 = PLACEMENT(no_id), p4 = PLACEMENT(comma), p5 = PLACEMENT(equals),
                            p6 = PLACEMENT(space), p7 = PLACEMENT(ctl), p8 = PLACEMENT(empty_id),
                            p9 = PLACEMENT(negative), p10 = PLACEMENT(zero), p11 = PLACEMENT(over),
                            p12 = PLACEMENT(twice), ok = PLACEMENT(two_resources);
        struct xp_placement big = {
            .devices = {.items = no_resource, .n = XP_DEVENV_DEVICES_MAX + 1}};
        char **env = NULL;
        const char *invalid = "contains a comma, '=', space or control character";
        char msg[256];

        (void)state;
        expect_error(NULL, -EINVAL, "placement: missing");
        expect_error(&p1, -EINVAL, "placement.devices[0].resource: missing");
        expect_error(&p2, -EINVAL, "placement.devices[0].resource: missing");
        expect_error(&p3, -EINVAL, "placement.devices[0].id: missing");
        snprintf(msg, sizeof(msg), "placement.devices[1].id: %s", invalid);
        expect_error(&p4, -EINVAL, msg);
        snprintf(msg, sizeof(msg), "placement.devices[0].id: %s", invalid);
        expect_error(&p5, -EINVAL, msg);
        expect_error(&p6, -EINVAL, msg);
        expect_error(&p7, -EINVAL, msg);
        expect_error(&p8, -EINVAL, msg);
        expect_error(&p9, -EINVAL, "placement.devices[0].index: -1 is negative");
        expect_error(&p10, -EINVAL, "placement.devices[0].milli: 0 is outside 1..1000");
        expect_error(&p11, -EINVAL, "placement.devices[0].milli: 1001 is outside 1..1000");
        expect_error(&p12,
                     -EINVAL,
                     "placement.devices[2]: nvidia.com/gpu GPU-a is also placement.devices[0]");
        snprintf(msg,
                 sizeof(msg),
                 "placement.devices: %d devices, at most %d",
                 XP_DEVENV_DEVICES_MAX + 1,
                 XP_DEVENV_DEVICES_MAX);
        expect_error(&big, -E2BIG, msg);

        /* NULL err is allowed */
        assert_int_equal(xp_devenv_build(&p1, NULL, &env, NULL), -EINVAL);
        assert_null(env);
        assert_int_equal(xp_devenv_build(&ok, NULL, &env, NULL), 0);
        assert_string_equal(
            env[0],
            "XPOOL_DEVICES=[{\"resource\":\"x.com/a\",\"id\":\"d0\",\"index\":0,\"milli\":1000},"
            "{\"resource\":\"x.com/b\",\"id\":\"d0\",\"index\":0,\"milli\":1000}]");
        assert_string_equal(env[1], "XPOOL_VISIBLE_DEVICES=d0,d0");
        assert_null(env[2]);
        xp_devenv_free(env);
        xp_devenv_free(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(nvidia_uuids),
            cmocka_unit_test(nvidia_indices_and_mig),
            cmocka_unit_test(other_vendors),
            cmocka_unit_test(mixed_gpu_npu_with_node),
            cmocka_unit_test(vendor_fallback),
            cmocka_unit_test(shares),
            cmocka_unit_test(empty_and_unknown),
            cmocka_unit_test(bad_input),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
