/* SPDX-License-Identifier: Apache-2.0 */
/* The node inventory for Kubernetes: the annotation both ways, its bound, labels, the patch. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube_internal.h"
#include "xpool/device.h"
#include "xpool/kubeinventory.h"

static struct xp_node_inventory *discover(const char *description)
{
        static const char *const sim[] = {"sim", NULL};
        struct xp_discovery_config config = {.node_description = description, .backends = sim};
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        char path[1024];

        snprintf(path, sizeof(path), "%s/../../examples/nodes/%s", XPOOL_TEST_DATA, description);
        config.node_description = path;
        if (xp_device_discover(&config, &inv, &err) < 0)
                fail_msg("discover %s: %s", path, err.msg);
        return inv;
}

static void
decode_ok(const char *text, struct xp_node_inventory **inv, struct xp_kube_allocation *a)
{
        struct xp_error err = {0};

        if (xp_kube_inventory_decode(text, strlen(text), inv, a, &err) < 0)
                fail_msg("decode: %s in %s", err.msg, text);
}

static void assert_same_devices(const struct xp_node_inventory *a,
                                const struct xp_node_inventory *b)
{
        assert_int_equal(a->devices.n, b->devices.n);
        assert_int_equal(a->numa_nodes.n, b->numa_nodes.n);
        for (size_t i = 0; i < a->devices.n; i++) {
                const struct xp_device *x = &a->devices.items[i], *y = &b->devices.items[i];
                assert_string_equal(x->id, y->id);
                assert_int_equal(x->kind, y->kind);
                assert_string_equal(x->vendor, y->vendor);
                assert_string_equal(x->model, y->model);
                assert_string_equal(x->resource_name, y->resource_name);
                assert_int_equal(x->index, y->index);
                assert_int_equal(x->memory_bytes, y->memory_bytes);
                assert_int_equal(x->numa_node.set, y->numa_node.set);
                assert_int_equal(x->numa_node.value, y->numa_node.value);
                assert_true(x->fp16_tflops == y->fp16_tflops);
                assert_int_equal(x->health == XP_DEVICE_UNHEALTHY,
                                 y->health == XP_DEVICE_UNHEALTHY);
        }
        /* every pair has the same level and NVLink count both ways */
        for (size_t i = 0; i < a->devices.n; i++)
                for (size_t j = i + 1; j < a->devices.n; j++) {
                        const char *p = a->devices.items[i].id, *q = a->devices.items[j].id;
                        const struct xp_device_link *l = xp_device_link_find(a, p, q),
                                                    *m = xp_device_link_find(b, p, q);
                        assert_int_equal(l != NULL, m != NULL);
                        if (!l)
                                continue;
                        assert_int_equal(l->level, m->level);
                        if (l->level == XP_LINK_NVLINK)
                                assert_int_equal(l->nvlinks, m->nvlinks);
                }
}

static void annotation_round_trip(void **state)
{
        static const char *const boxes[] = {
            "dgx-h100.yaml", "mixed-box.yaml", "ascend-8npu.yaml", "seed-gpu-npu.yaml"};

        (void)state;
        for (size_t b = 0; b < XP_ELEMENTSOF(boxes); b++) {
                struct xp_node_inventory *inv = discover(boxes[b]), *back = NULL;
                struct xp_kube_allocation alloc = {0}, got = {0};
                struct xp_error err = {0};
                char *text = NULL;

                /* one device unhealthy, one held by a pod */
                inv->devices.items[inv->devices.n - 1].health = XP_DEVICE_UNHEALTHY;
                assert_int_equal(xp_kube_allocation_add(&alloc,
                                                        "ml",
                                                        "train-0",
                                                        inv->devices.items[0].resource_name,
                                                        inv->devices.items[0].id),
                                 0);
                assert_int_equal(xp_kube_inventory_encode(inv, &alloc, 0, &text, &err), 0);
                printf("# %s: %zu devices, %zu bytes\n", boxes[b], inv->devices.n, strlen(text));
                decode_ok(text, &back, &got);
                assert_same_devices(inv, back);
                assert_int_equal(got.uses.n, 1);
                assert_string_equal(got.uses.items[0].namespace, "ml");
                assert_string_equal(got.uses.items[0].name, "train-0");
                assert_string_equal(got.uses.items[0].device_id, inv->devices.items[0].id);
                assert_string_equal(got.uses.items[0].resource,
                                    inv->devices.items[0].resource_name);
                free(text);
                xp_kube_allocation_done(&alloc);
                xp_kube_allocation_done(&got);
                xp_node_inventory_free(back);
                xp_node_inventory_free(inv);
        }
}

static void annotation_is_small_and_bounded(void **state)
{
        struct xp_node_inventory *inv = discover("dgx-h100.yaml"), *back = NULL;
        struct xp_error err = {0};
        char *full = NULL, *text = NULL;

        (void)state;
        assert_int_equal(xp_kube_inventory_encode(inv, NULL, 0, &full, &err), 0);
        /* 8 GPUs: the fields shared by all are written once */
        assert_true(strlen(full) < 1500);
        assert_non_null(strstr(full, "\"links\":[\"NV18 NV18"));
        /* over the bound, the links go first ... */
        assert_int_equal(xp_kube_inventory_encode(inv, NULL, strlen(full) - 1, &text, &err), 0);
        assert_null(strstr(text, "\"links\""));
        assert_non_null(strstr(text, "\"linksOmitted\":true"));
        assert_true(strlen(text) < strlen(full));
        decode_ok(text, &back, NULL);
        assert_int_equal(back->devices.n, 8);
        assert_int_equal(back->links.n, 0);
        /* ... and without them it must still fit */
        free(text);
        text = NULL;
        assert_int_equal(xp_kube_inventory_encode(inv, NULL, 200, &text, &err), -E2BIG);
        assert_null(text);
        assert_non_null(strstr(err.msg, "over the bound of 200"));
        free(full);
        xp_node_inventory_free(back);
        xp_node_inventory_free(inv);
}

static void decode_refuses_bad_input(void **state)
{
        static const struct {
                const char *text, *message;
        } cases[] = {
            {"{", "xpool.io/inventory: 1:"},
            {"[]", "must be a JSON object"},
            {"{\"version\":2,\"devices\":[]}", "version: this xpool reads version 1"},
            {"{\"version\":1,\"devices\":{}}", "devices: must be a list"},
            {"{\"version\":1,\"devices\":[{\"index\":0}]}", "devices[0].id: required"},
            {"{\"version\":1,\"devices\":[{\"id\":\"a\",\"index\":-1}]}",
             "devices[0].index: must be a non-negative integer"},
            {"{\"version\":1,\"devices\":[{\"id\":\"a\",\"memoryBytes\":\"x\"}]}",
             "devices[0].memoryBytes: must be a non-negative number"},
            {"{\"version\":1,\"devices\":[{\"id\":\"a\",\"pod\":\"nopod\"}]}",
             "devices[0].pod: \"nopod\" is not namespace/name"},
            {"{\"version\":1,\"devices\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"links\":[]}",
             "links: must be a list of 1 rows"},
            {"{\"version\":1,\"devices\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"links\":[\"NVX\"]}",
             "links[0]: \"NVX\" is not a level"},
            {"{\"version\":1,\"devices\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"links\":[\"PIX SYS\"]}",
             "links[0]: expected 1 levels"},
            {"{\"version\":1,\"devices\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"links\":[\"FOO\"]}",
             "links[0]: \"FOO\" is not a level"},
            {"{\"version\":1,\"devices\":[{\"id\":\"a\",\"kind\":\"toaster\"}]}",
             "xpool.io/inventory: devices[0].kind"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                struct xp_node_inventory *inv = NULL;
                struct xp_kube_allocation a = {0};
                struct xp_error err = {0};
                int r =
                    xp_kube_inventory_decode(cases[i].text, strlen(cases[i].text), &inv, &a, &err);

                if (r >= 0 || !strstr(err.msg, cases[i].message))
                        fail_msg(
                            "case %zu: %d '%s', expected '%s'", i, r, err.msg, cases[i].message);
                assert_null(inv);
                assert_int_equal(a.uses.n, 0);
        }
}

static void decode_bounds_sizes(void **state)
{
        size_t n = XP_INVENTORY_DEVICES_MAX + 1, len = 0;
        char *text = malloc(n * 16 + 64), *big = malloc(XP_INVENTORY_STRING_MAX + 64);
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        (void)state;
        len += (size_t)sprintf(text, "{\"version\":1,\"devices\":[");
        for (size_t i = 0; i < n; i++)
                len += (size_t)sprintf(text + len, "%s{\"id\":\"d%zu\"}", i ? "," : "", i);
        sprintf(text + len, "]}");
        assert_int_equal(xp_kube_inventory_decode(text, strlen(text), &inv, NULL, &err), -E2BIG);
        assert_non_null(strstr(err.msg, "devices: more than 1024"));
        len = (size_t)sprintf(big, "{\"version\":1,\"devices\":[{\"id\":\"");
        memset(big + len, 'x', XP_INVENTORY_STRING_MAX + 1);
        sprintf(big + len + XP_INVENTORY_STRING_MAX + 1, "\"}]}");
        assert_int_equal(xp_kube_inventory_decode(big, strlen(big), &inv, NULL, &err), -E2BIG);
        assert_non_null(strstr(err.msg, "devices[0].id: longer than 512 bytes"));
        free(text);
        free(big);
}

static const char *label(const json_t *labels, const char *key)
{
        return json_string_value(json_object_get(labels, key));
}

static void labels_like_feature_discovery(void **state)
{
        static const char *const leave[] = {"nvidia.com/gpu"};
        struct xp_node_inventory *inv = discover("dgx-h100.yaml"),
                                 *mixed = discover("seed-gpu-npu.yaml");
        json_t *labels = NULL;

        (void)state;
        assert_int_equal(xp_kube_inventory_labels(inv, NULL, 0, &labels), 0);
        assert_string_equal(label(labels, "nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
        assert_string_equal(label(labels, "nvidia.com/gpu.memory"), "81559");
        assert_string_equal(label(labels, "nvidia.com/gpu.count"), "8");
        assert_string_equal(label(labels, "nvidia.com/gpu.present"), "true");
        assert_string_equal(label(labels, "nvidia.com/gpu.compute.major"), "9");
        assert_string_equal(label(labels, "nvidia.com/gpu.compute.minor"), "0");
        assert_string_equal(label(labels, "xpool.io/gpu.count"), "8");
        assert_string_equal(label(labels, "xpool.io/gpu.product"), "NVIDIA-H100-80GB-HBM3");
        assert_string_equal(label(labels, "xpool.io/gpu.vendor"), "NVIDIA");
        assert_string_equal(label(labels, "xpool.io/gpu.nvlink"), "true");
        assert_string_equal(label(labels, "xpool.io/accelerator.count"), "8");
        assert_string_equal(label(labels, "xpool.io/numa-nodes"), "2");
        json_decref(labels);
        /* a resource left to NVIDIA's plugin keeps only xpool's vendor-neutral labels */
        assert_int_equal(xp_kube_inventory_labels(inv, leave, 1, &labels), 0);
        assert_null(label(labels, "nvidia.com/gpu.count"));
        assert_null(label(labels, "nvidia.com/gpu.product"));
        assert_string_equal(label(labels, "xpool.io/gpu.count"), "8");
        json_decref(labels);
        /* every vendor and kind gets the same */
        assert_int_equal(xp_kube_inventory_labels(mixed, NULL, 0, &labels), 0);
        assert_string_equal(label(labels, "vendor.com/npu.count"), "2");
        assert_string_equal(label(labels, "vendor.com/npu.product"), "Example-NPU");
        assert_string_equal(label(labels, "vendor.com/npu.memory"), "32768");
        assert_string_equal(label(labels, "xpool.io/npu.count"), "2");
        assert_string_equal(label(labels, "xpool.io/npu.nvlink"), "true");
        assert_string_equal(label(labels, "nvidia.com/gpu.count"), "1");
        assert_null(label(labels, "xpool.io/gpu.nvlink"));
        assert_string_equal(label(labels, "xpool.io/accelerator.count"), "3");
        json_decref(labels);
        xp_node_inventory_free(inv);
        xp_node_inventory_free(mixed);
}

static json_t *parse(const char *text)
{
        json_error_t jerr;
        json_t *j = json_loads(text, 0, &jerr);

        if (!j)
                fail_msg("%s: %s", text, jerr.text);
        return j;
}

static void patch_touches_only_its_own(void **state)
{
        json_t *node = parse(
            "{\"metadata\":{\"name\":\"n\",\"labels\":{\"kubernetes.io/hostname\":\"n\","
            "\"team\":\"a\",\"nvidia.com/gpu.count\":\"8\",\"xpool.io/fpga.count\":\"1\"},"
            "\"annotations\":{\"xpool.io/labels\":\"nvidia.com/gpu.count,xpool.io/fpga.count,team-not\","
            "\"other\":\"x\"}}}");
        json_t *labels = parse("{\"nvidia.com/gpu.count\":\"8\",\"xpool.io/gpu.count\":\"8\"}");
        json_t *ann = parse("{\"xpool.io/inventory\":\"{}\"}"), *patch = NULL, *want;

        (void)state;
        assert_int_equal(xp_kube_inventory_patch(node, labels, ann, &patch), 0);
        /* the fpga label was ours and is gone; team is someone else's; gpu.count unchanged */
        want = parse(
            "{\"metadata\":{\"labels\":{\"xpool.io/gpu.count\":\"8\",\"xpool.io/fpga.count\":null},"
            "\"annotations\":{\"xpool.io/inventory\":\"{}\","
            "\"xpool.io/labels\":\"nvidia.com/gpu.count,xpool.io/gpu.count\"}}}");
        if (!json_equal(patch, want))
                fail_msg("patch: %s", json_dumps(patch, JSON_COMPACT));
        json_decref(want);
        json_decref(patch);
        json_decref(node);
        /* a Node that carries it all already needs no patch */
        node = parse(
            "{\"metadata\":{\"labels\":{\"nvidia.com/gpu.count\":\"8\",\"xpool.io/gpu.count\":\"8\"},"
            "\"annotations\":{\"xpool.io/inventory\":\"{}\",\"xpool.io/labels\":\"nvidia.com/gpu.count,xpool.io/gpu.count\"}}}");
        assert_int_equal(xp_kube_inventory_patch(node, labels, ann, &patch), 0);
        assert_null(patch);
        json_decref(node);
        json_decref(labels);
        json_decref(ann);
}

static void publishing_is_rate_limited(void **state)
{
        (void)state;
        /* the first publish is at once, changed or not */
        assert_int_equal(xp_kube_publish_wait_ms(5000, false, -1, 10000, 600000), 0);
        /* a change soon after a patch waits for the interval, then goes */
        assert_int_equal(xp_kube_publish_wait_ms(12000, true, 10000, 10000, 600000), 8000);
        assert_int_equal(xp_kube_publish_wait_ms(20000, true, 10000, 10000, 600000), 0);
        /* nothing changed: only the resync is due */
        assert_int_equal(xp_kube_publish_wait_ms(20000, false, 10000, 10000, 600000), 590000);
        assert_int_equal(xp_kube_publish_wait_ms(610000, false, 10000, 10000, 600000), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(annotation_round_trip),
            cmocka_unit_test(annotation_is_small_and_bounded),
            cmocka_unit_test(decode_refuses_bad_input),
            cmocka_unit_test(decode_bounds_sizes),
            cmocka_unit_test(labels_like_feature_discovery),
            cmocka_unit_test(patch_touches_only_its_own),
            cmocka_unit_test(publishing_is_rate_limited),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
