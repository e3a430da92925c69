/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/manifest.h"

#define DATA XPOOL_TEST_DATA "/manifests/"

static void loads_the_seed_pod(void **state)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};
        const struct xp_container *c;
        char text[XP_QUANTITY_STRING_MAX];

        (void)state;
        assert_int_equal(xp_manifest_load_file(DATA "seed-pod.yaml", 0, &m, &err), 0);
        assert_int_equal(m.n, 1);
        assert_int_equal(m.objects[0].kind, XP_OBJECT_POD);
        assert_int_equal(m.objects[0].pos.line, 2);
        assert_string_equal(m.objects[0].pod->metadata.name, "ai-training");
        assert_int_equal(m.objects[0].pod->spec.containers.n, 1);
        c = &m.objects[0].pod->spec.containers.items[0];
        assert_string_equal(c->name, "trainer");
        assert_string_equal(c->image, "ai-framework:latest");
        assert_int_equal(c->resources.limits.n, 2);
        assert_string_equal(
            xp_quantity_format(xp_resource_list_get(&c->resources.limits, "nvidia.com/gpu"), text),
            "1");
        assert_string_equal(
            xp_quantity_format(xp_resource_list_get(&c->resources.limits, "vendor.com/npu"), text),
            "2");
        assert_null(xp_resource_list_get(&c->resources.requests, "nvidia.com/gpu"));
        xp_manifest_done(&m);
        assert_int_equal(m.n, 0);
}

static void loads_multi_document_files_in_order(void **state)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};
        const struct xp_pod *json_pod;

        (void)state;
        assert_int_equal(xp_manifest_load_file(DATA "multi.yaml", 0, &m, &err), 0);
        assert_int_equal(m.n, 4);
        assert_int_equal(m.objects[0].kind, XP_OBJECT_NODE);
        assert_string_equal(m.objects[0].node->metadata.name, "gpu-node-1");
        assert_int_equal(m.objects[1].kind, XP_OBJECT_NODE);
        assert_string_equal(m.objects[1].node->metadata.name, "npu-node-1");
        assert_non_null(
            xp_resource_list_get(&m.objects[1].node->status.allocatable, "huawei.com/Ascend910"));
        assert_int_equal(m.objects[2].kind, XP_OBJECT_POD);
        assert_string_equal(m.objects[2].pod->metadata.namespace, "ml");
        assert_string_equal(xp_strmap_get(&m.objects[2].pod->metadata.labels, "tier"), "1");
        assert_int_equal(m.objects[3].kind, XP_OBJECT_POD);
        json_pod = m.objects[3].pod;
        assert_string_equal(json_pod->metadata.name, "preprocess");
        assert_int_equal(json_pod->spec.containers.items[0].command.n, 3);
        assert_string_equal(json_pod->spec.containers.items[0].command.items[2], "true");
        assert_int_equal(m.objects[3].pos.line, 46);
        xp_manifest_done(&m);
}

static void loads_lists_as_kubectl_prints_them(void **state)
{
        static const char text[] = "apiVersion: v1\n"
                                   "kind: List\n"
                                   "items:\n"
                                   "- apiVersion: v1\n"
                                   "  kind: Node\n"
                                   "  metadata: {name: n1}\n"
                                   "- apiVersion: v1\n"
                                   "  kind: Pod\n"
                                   "  metadata: {name: p1}\n"
                                   "  spec: {containers: [{name: c, image: i}]}\n"
                                   "---\n"
                                   "apiVersion: v1\n"
                                   "kind: PodList\n"
                                   "items:\n"
                                   "- metadata: {name: p2}\n"
                                   "  spec: {containers: [{name: c, image: i}]}\n"
                                   "---\n"
                                   "apiVersion: v1\n"
                                   "kind: NodeList\n"
                                   "items: []\n";
        struct xp_manifest m = {0};
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_manifest_load_buffer(text, sizeof(text) - 1, "list.yaml", 0, &m, &err),
                         0);
        assert_int_equal(m.n, 3);
        assert_int_equal(m.objects[0].kind, XP_OBJECT_NODE);
        assert_int_equal(m.objects[0].pos.line, 4);
        assert_int_equal(m.objects[1].kind, XP_OBJECT_POD);
        assert_string_equal(m.objects[1].pod->metadata.name, "p1");
        assert_int_equal(m.objects[2].kind, XP_OBJECT_POD);
        assert_string_equal(m.objects[2].pod->metadata.name, "p2");
        xp_manifest_done(&m);
}

static void loads_every_kind(void **state)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};
        static const char list[] = "apiVersion: coordination.k8s.io/v1\n"
                                   "kind: LeaseList\n"
                                   "items:\n"
                                   "- metadata: {name: a}\n"
                                   "- apiVersion: coordination.k8s.io/v1\n"
                                   "  kind: Lease\n"
                                   "  metadata: {name: b}\n"
                                   "---\n"
                                   "apiVersion: v1\n"
                                   "kind: List\n"
                                   "items:\n"
                                   "- {apiVersion: v1, kind: Namespace, metadata: {name: ml}}\n"
                                   "- {apiVersion: v1, kind: Event, metadata: {name: e}}\n";

        (void)state;
        if (xp_manifest_load_file(
                XPOOL_TEST_DATA "/manifests/all-kinds.yaml", XP_DECODE_STRICT, &m, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(m.n, 5);
        assert_int_equal(m.objects[0].kind, XP_OBJECT_NAMESPACE);
        assert_ptr_equal(m.objects[0].type, &xp_kind_namespace);
        assert_int_equal(m.objects[0].pos.line, 2);
        assert_string_equal(m.objects[0].namespace->metadata.name, "ml");
        assert_int_equal(m.objects[0].namespace->status.phase, XP_NAMESPACE_ACTIVE);
        assert_int_equal(m.objects[1].kind, XP_OBJECT_POD);
        assert_ptr_equal(m.objects[1].type, &xp_kind_pod);
        assert_int_equal(m.objects[2].kind, XP_OBJECT_NODE);
        assert_int_equal(m.objects[3].kind, XP_OBJECT_EVENT);
        assert_ptr_equal(m.objects[3].type, &xp_kind_event);
        assert_string_equal(m.objects[3].event->involved_object.name, "trainer");
        assert_string_equal(m.objects[3].event->reporting_component, "xpool.io/scheduler");
        assert_int_equal(m.objects[3].event->event_time % 1000000, 123456);
        assert_int_equal(m.objects[4].kind, XP_OBJECT_LEASE);
        assert_ptr_equal(m.objects[4].type, &xp_kind_lease);
        assert_string_equal(m.objects[4].lease->spec.holder_identity, "gpu-node-1");
        assert_int_equal(m.objects[4].lease->spec.lease_duration_seconds.value, 40);
        assert_true(m.objects[4].lease->spec.lease_transitions.set);
        assert_string_equal(xp_kind_lease.meta(m.objects[4].object)->namespace, "kube-node-lease");
        xp_manifest_done(&m);

        /* typed lists of the new kinds, whose items may leave out apiVersion and kind */
        assert_int_equal(xp_manifest_load_buffer(list, sizeof(list) - 1, "list.yaml", 0, &m, &err),
                         0);
        assert_int_equal(m.n, 4);
        assert_int_equal(m.objects[0].kind, XP_OBJECT_LEASE);
        assert_string_equal(m.objects[0].lease->metadata.name, "a");
        assert_int_equal(m.objects[1].kind, XP_OBJECT_LEASE);
        assert_int_equal(m.objects[2].kind, XP_OBJECT_NAMESPACE);
        assert_int_equal(m.objects[3].kind, XP_OBJECT_EVENT);
        xp_manifest_done(&m);
}

static void empty_input_holds_no_objects(void **state)
{
        static const char text[] = "# nothing here\n---\n---\n";
        struct xp_manifest m = {0};
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_manifest_load_buffer(text, sizeof(text) - 1, "empty.yaml", 0, &m, &err),
                         0);
        assert_int_equal(m.n, 0);
        assert_int_equal(xp_manifest_load_buffer("", 0, "empty.yaml", 0, &m, &err), 0);
        assert_int_equal(m.n, 0);
        xp_manifest_done(&m);
}

struct bad_manifest {
        const char *file;
        bool strict;
        const char *text;
        const char *error;
};

/* Each input with the one error a user must see: file, line, column, field path and what is wrong.
 */
static const struct bad_manifest bad_manifests[] = {
    {
        .file = "seed-bad-quantity.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: ai-training\n"
                "spec:\n"
                "  containers:\n"
                "  - name: trainer\n"
                "    image: ai-framework:latest\n"
                "    resources:\n"
                "      limits:\n"
                "        nvidia.com/gpu: 1.5x\n"
                "        vendor.com/npu: 2\n"
                "",
        .error =
            "seed-bad-quantity.yaml:11:25: spec.containers[0].resources.limits[nvidia.com/gpu]: \"1.5x\" is not a valid quantity",
    },
    {
        .file = "no-kind.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "metadata:\n"
                "  name: p\n"
                "",
        .error =
            "no-kind.yaml:1:1: kind: Required value: every object in a manifest needs a kind, e.g. \"kind: Pod\"",
    },
    {
        .file = "no-api-version.yaml",
        .strict = false,
        .text = "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "",
        .error =
            "no-api-version.yaml:1:1: apiVersion: Required value: every object in a manifest needs an apiVersion, e.g. \"apiVersion: v1\"",
    },
    {
        .file = "unsupported-kind.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Frobnicator\n"
                "metadata:\n"
                "  name: p\n"
                "",
        .error =
            "unsupported-kind.yaml:2:7: kind: unsupported kind \"Frobnicator\": xpool manages Pod, Node, Namespace, Event, Lease* objects (and lists of them)",
    },
    {
        .file = "wrong-api-version.yaml",
        .strict = false,
        .text = "apiVersion: apps/v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "",
        .error =
            "wrong-api-version.yaml:1:13: apiVersion: Unsupported value: \"apps/v1\": Pod is in apiVersion \"v1\"",
    },
    {
        .file = "no-name.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  labels: {a: b}\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "no-name.yaml:4:3: metadata.name: Required value: name or generateName is required",
    },
    {
        .file = "bad-name.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: My_Pod\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "bad-name.yaml:4:9: metadata.name: Invalid value: \"My_Pod\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')",
    },
    {
        .file = "bad-namespace.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "  namespace: Team.A\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "bad-namespace.yaml:5:14: metadata.namespace: Invalid value: \"Team.A\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name')",
    },
    {
        .file = "no-containers.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec: {}\n"
                "",
        .error =
            "no-containers.yaml:5:7: spec.containers: Required value: a pod needs at least one container",
    },
    {
        .file = "empty-containers.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers: []\n"
                "",
        .error =
            "empty-containers.yaml:6:15: spec.containers: Required value: a pod needs at least one container",
    },
    {
        .file = "no-spec.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "",
        .error =
            "no-spec.yaml:1:1: spec.containers: Required value: a pod needs at least one container",
    },
    {
        .file = "spec-is-list.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "- name: c\n"
                "",
        .error = "spec-is-list.yaml:6:1: spec: expected a mapping, got a list",
    },
    {
        .file = "duplicate-container.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  - name: c\n"
                "    image: j\n"
                "",
        .error =
            "duplicate-container.yaml:9:11: spec.containers[1].name: Duplicate value: \"c\": container names must be unique within a pod",
    },
    {
        .file = "no-image-no-command.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "",
        .error =
            "no-image-no-command.yaml:7:5: spec.containers[0].image: Required value: a container needs an image or a command",
    },
    {
        .file = "bad-container-name.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: Trainer\n"
                "    image: i\n"
                "",
        .error =
            "bad-container-name.yaml:7:11: spec.containers[0].name: Invalid value: \"Trainer\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name')",
    },
    {
        .file = "bad-hostname.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  hostname: db-0\n"
                "  subdomain: DB.svc\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "bad-hostname.yaml:7:14: spec.subdomain: Invalid value: \"DB.svc\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name')",
    },
    {
        .file = "bad-restart-policy.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  restartPolicy: Sometimes\n"
                "",
        .error =
            "bad-restart-policy.yaml:9:18: spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
    },
    {
        .file = "negative-cpu.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        cpu: -1\n"
                "",
        .error =
            "negative-cpu.yaml:11:14: spec.containers[0].resources.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
    },
    {
        .file = "request-over-limit.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        cpu: 1\n"
                "      requests:\n"
                "        cpu: 2\n"
                "",
        .error =
            "request-over-limit.yaml:13:14: spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
    },
    {
        .file = "extended-request-not-limit.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        nvidia.com/gpu: 1\n"
                "      requests:\n"
                "        nvidia.com/gpu: 2\n"
                "",
        .error =
            "extended-request-not-limit.yaml:13:25: spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: \"2\": must be equal to nvidia.com/gpu limit of 1 (it cannot be overcommitted)",
    },
    {
        .file = "resource-without-domain.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        gpu: 1\n"
                "",
        .error =
            "resource-without-domain.yaml:11:9: spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": a name without a domain must be a standard resource (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>); extended resources need a domain, e.g. \"vendor.com/npu\"",
    },
    {
        .file = "resource-not-for-containers.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        pods: 1\n"
                "",
        .error =
            "resource-not-for-containers.yaml:11:9: spec.containers[0].resources.limits[pods]: Invalid value: \"pods\": a container may request cpu, memory, ephemeral-storage, hugepages-<size> or an extended resource such as \"nvidia.com/gpu\"",
    },
    {
        .file = "resource-reserved-domain.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        kubernetes.io/gpu: 1\n"
                "",
        .error =
            "resource-reserved-domain.yaml:11:9: spec.containers[0].resources.limits[kubernetes.io/gpu]: Invalid value: \"kubernetes.io/gpu\": the kubernetes.io domain is reserved for Kubernetes' own resources",
    },
    {
        .file = "quantity-bad-suffix.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      requests:\n"
                "        memory: 2GB\n"
                "",
        .error =
            "quantity-bad-suffix.yaml:11:17: spec.containers[0].resources.requests[memory]: \"2GB\" is not a valid quantity",
    },
    {
        .file = "quantity-too-large.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      requests:\n"
                "        memory: 99999999999999999999\n"
                "",
        .error =
            "quantity-too-large.yaml:11:17: spec.containers[0].resources.requests[memory]: \"1e+20\" is out of range: the largest quantity is 9223372036854775807",
    },
    {
        .file = "quantity-boolean.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        nvidia.com/gpu: true\n"
                "",
        .error =
            "quantity-boolean.yaml:11:25: spec.containers[0].resources.limits[nvidia.com/gpu]: expected a quantity (a string such as \"500m\" or \"2Gi\", or a number), got a boolean",
    },
    {
        .file = "label-number.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "  labels:\n"
                "    version: 1\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "label-number.yaml:6:14: metadata.labels[version]: expected a string, got a number (quote the value to make it a string)",
    },
    {
        .file = "label-value.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "  labels:\n"
                "    app: -bad-\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "label-value.yaml:6:10: metadata.labels[app]: Invalid value: \"-bad-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    },
    {
        .file = "label-key.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "  labels:\n"
                "    \"bad key\": x\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "label-key.yaml:6:5: metadata.labels[bad key]: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or 'example.com/MyName')",
    },
    {
        .file = "node-selector-value.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  nodeSelector:\n"
                "    gpu: \"a b\"\n"
                "",
        .error = "node-selector-value.yaml:10:10: spec.nodeSelector[gpu]: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    },
    {
        .file = "toleration-exists-value.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  tolerations:\n"
                "  - key: a\n"
                "    operator: Exists\n"
                "    value: b\n"
                "",
        .error =
            "toleration-exists-value.yaml:12:12: spec.tolerations[0].value: Invalid value: value must be empty when `operator` is 'Exists'",
    },
    {
        .file = "toleration-effect.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  tolerations:\n"
                "  - key: a\n"
                "    effect: NoRun\n"
                "",
        .error =
            "toleration-effect.yaml:11:13: spec.tolerations[0].effect: Unsupported value: \"NoRun\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
    },
    {
        .file = "toleration-seconds.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  tolerations:\n"
                "  - key: a\n"
                "    value: b\n"
                "    effect: NoSchedule\n"
                "    tolerationSeconds: 5\n"
                "",
        .error =
            "toleration-seconds.yaml:12:13: spec.tolerations[0].effect: Invalid value: effect must be 'NoExecute' when `tolerationSeconds` is set",
    },
    {
        .file = "toleration-no-key.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  tolerations:\n"
                "  - value: b\n"
                "",
        .error =
            "toleration-no-key.yaml:10:5: spec.tolerations[0].operator: Invalid value: operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
    },
    {
        .file = "anti-affinity-topology.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  affinity:\n"
                "    podAntiAffinity:\n"
                "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                "      - labelSelector:\n"
                "          matchLabels: {app: x}\n"
                "",
        .error =
            "anti-affinity-topology.yaml:12:9: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
    },
    {
        .file = "affinity-weight.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  affinity:\n"
                "    podAntiAffinity:\n"
                "      preferredDuringSchedulingIgnoredDuringExecution:\n"
                "      - weight: 101\n"
                "        podAffinityTerm:\n"
                "          topologyKey: kubernetes.io/hostname\n"
                "",
        .error =
            "affinity-weight.yaml:12:17: spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100",
    },
    {
        .file = "selector-in-without-values.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  affinity:\n"
                "    nodeAffinity:\n"
                "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                "        nodeSelectorTerms:\n"
                "        - matchExpressions:\n"
                "          - key: a\n"
                "            operator: In\n"
                "",
        .error =
            "selector-in-without-values.yaml:14:13: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    },
    {
        .file = "selector-gt-not-integer.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  affinity:\n"
                "    nodeAffinity:\n"
                "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                "        nodeSelectorTerms:\n"
                "        - matchExpressions:\n"
                "          - key: a\n"
                "            operator: Gt\n"
                "            values: [x]\n"
                "",
        .error =
            "selector-gt-not-integer.yaml:16:21: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: must be an integer when `operator` is 'Lt' or 'Gt'",
    },
    {
        .file = "label-selector-gt.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  affinity:\n"
                "    podAffinity:\n"
                "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                "      - topologyKey: zone\n"
                "        labelSelector:\n"
                "          matchExpressions:\n"
                "          - {key: a, operator: Gt, values: [\"1\"]}\n"
                "",
        .error =
            "label-selector-gt.yaml:15:32: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator: Unsupported value: \"Gt\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
    },
    {
        .file = "grace-negative.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  terminationGracePeriodSeconds: -5\n"
                "",
        .error =
            "grace-negative.yaml:9:34: spec.terminationGracePeriodSeconds: Invalid value: -5: must be greater than or equal to 0",
    },
    {
        .file = "priority-out-of-range.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  priority: 3000000000\n"
                "",
        .error =
            "priority-out-of-range.yaml:9:13: spec.priority: Invalid value: 3000000000: must be a 32-bit integer (between -2147483648 and 2147483647)",
    },
    {
        .file = "priority-string.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  priority: high\n"
                "",
        .error = "priority-string.yaml:9:13: spec.priority: expected an integer, got a string",
    },
    {
        .file = "env-name.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    env:\n"
                "    - name: A=B\n"
                "      value: x\n"
                "",
        .error =
            "env-name.yaml:10:13: spec.containers[0].env[0].name: Invalid value: \"A=B\": an environment variable name must consist of printable ASCII characters other than '='",
    },
    {
        .file = "env-value-number.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    env:\n"
                "    - name: A\n"
                "      value: 5\n"
                "",
        .error =
            "env-value-number.yaml:11:14: spec.containers[0].env[0].value: expected a string, got a number (quote the value to make it a string)",
    },
    {
        .file = "command-string.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    command: python train.py\n"
                "",
        .error =
            "command-string.yaml:9:14: spec.containers[0].command: expected a list of strings, got a string",
    },
    {
        .file = "strict-unknown-field.yaml",
        .strict = true,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resoures: {}\n"
                "",
        .error =
            "strict-unknown-field.yaml:9:5: spec.containers[0].resoures: unknown field \"resoures\" in Container",
    },
    {
        .file = "yaml-syntax.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "  labels: a: b\n"
                "",
        .error = "yaml-syntax.yaml:5:12: mapping values are not allowed in this context",
    },
    {
        .file = "yaml-duplicate-key.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "  name: q\n"
                "",
        .error = "yaml-duplicate-key.yaml:5:3: duplicate key \"name\"",
    },
    {
        .file = "yaml-tab.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "\tname: p\n"
                "",
        .error =
            "yaml-tab.yaml:4:1: found character that cannot start any token (tabs are not allowed for indentation)",
    },
    {
        .file = "second-document-bad.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "---\n"
                "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: q\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources: {limits: {cpu: 1m1}}\n"
                "",
        .error =
            "second-document-bad.yaml:18:31: spec.containers[0].resources.limits[cpu]: \"1m1\" is not a valid quantity",
    },
    {
        .file = "list-item-bad.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: List\n"
                "items:\n"
                "- apiVersion: v1\n"
                "  kind: Pod\n"
                "  metadata:\n"
                "    name: p\n"
                "  spec:\n"
                "    containers:\n"
                "    - name: c\n"
                "      image: i\n"
                "      resources:\n"
                "        limits:\n"
                "          cpu: 2x\n"
                "",
        .error =
            "list-item-bad.yaml:14:16: items[0].spec.containers[0].resources.limits[cpu]: \"2x\" is not a valid quantity",
    },
    {
        .file = "document-is-scalar.yaml",
        .strict = false,
        .text = "hello\n"
                "",
        .error =
            "document-is-scalar.yaml:1:1: expected an object with apiVersion and kind, got a scalar",
    },
    {
        .file = "timestamp.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "  creationTimestamp: yesterday\n"
                "",
        .error =
            "timestamp.yaml:5:22: metadata.creationTimestamp: invalid timestamp \"yesterday\": expected RFC 3339, e.g. \"2026-12-02T15:04:05Z\"",
    },
    {
        .file = "node-taint-no-effect.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "spec:\n"
                "  taints:\n"
                "  - key: gpu\n"
                "",
        .error = "node-taint-no-effect.yaml:7:5: spec.taints[0].effect: Required value",
    },
    {
        .file = "node-capacity-quantity.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "status:\n"
                "  capacity:\n"
                "    nvidia.com/gpu: lots\n"
                "",
        .error =
            "node-capacity-quantity.yaml:7:21: status.capacity[nvidia.com/gpu]: \"lots\" is not a valid quantity",
    },
    {
        .file = "node-capacity-negative.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "status:\n"
                "  allocatable:\n"
                "    memory: -1Gi\n"
                "",
        .error =
            "node-capacity-negative.yaml:7:13: status.allocatable[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
    },
    {
        .file = "device-link-unknown.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "status:\n"
                "  xpool:\n"
                "    devices:\n"
                "    - id: GPU-0\n"
                "      kind: gpu\n"
                "      resourceName: nvidia.com/gpu\n"
                "    links:\n"
                "    - a: GPU-0\n"
                "      b: GPU-9\n"
                "      level: NVLink\n"
                "",
        .error =
            "device-link-unknown.yaml:13:10: status.xpool.links[0].b: unknown device \"GPU-9\": a link must join two devices listed in devices",
    },
    {
        .file = "device-kind.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "status:\n"
                "  xpool:\n"
                "    devices:\n"
                "    - id: GPU-0\n"
                "      kind: tpu\n"
                "      resourceName: google.com/tpu\n"
                "",
        .error =
            "device-kind.yaml:9:13: status.xpool.devices[0].kind: Unsupported value: \"tpu\": supported values: \"gpu\", \"npu\", \"fpga\", \"vpu\", \"accelerator\"",
    },
    {
        .file = "device-duplicate-id.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "status:\n"
                "  xpool:\n"
                "    devices:\n"
                "    - {id: GPU-0, kind: gpu, resourceName: nvidia.com/gpu}\n"
                "    - {id: GPU-0, kind: gpu, resourceName: nvidia.com/gpu, index: 1}\n"
                "",
        .error =
            "device-duplicate-id.yaml:9:12: status.xpool.devices[1].id: Duplicate value: \"GPU-0\": device ids must be unique within a node",
    },
    {
        .file = "device-resource-name.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "status:\n"
                "  xpool:\n"
                "    devices:\n"
                "    - {id: GPU-0, kind: gpu, resourceName: gpu}\n"
                "",
        .error =
            "device-resource-name.yaml:8:44: status.xpool.devices[0].resourceName: Invalid value: \"gpu\": a name without a domain must be a standard resource (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>); extended resources need a domain, e.g. \"vendor.com/npu\"",
    },
    {
        .file = "json-bad-quantity.yaml",
        .strict = false,
        .text = "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"},\n"
                " \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\",\n"
                "   \"resources\": {\"limits\": {\"cpu\": \"1x\"}}}]}}\n"
                "",
        .error =
            "json-bad-quantity.yaml:3:36: spec.containers[0].resources.limits[cpu]: \"1x\" is not a valid quantity",
    },
    {
        .file = "extended-request-without-limit.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      requests:\n"
                "        nvidia.com/gpu: 1\n"
                "",
        .error =
            "extended-request-without-limit.yaml:11:25: spec.containers[0].resources.requests[nvidia.com/gpu]: Required value: a limit must be set for nvidia.com/gpu, which cannot be overcommitted (set limits[nvidia.com/gpu] equal to the request)",
    },
    {
        .file = "hugepages-without-cpu-or-memory.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        hugepages-2Mi: 4Mi\n"
                "",
        .error =
            "hugepages-without-cpu-or-memory.yaml:10:7: spec.containers[0].resources: Invalid value: huge pages require a cpu or memory request or limit",
    },
    {
        .file = "hugepages-request-not-limit.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    resources:\n"
                "      limits:\n"
                "        memory: 1Gi\n"
                "        hugepages-2Mi: 4Mi\n"
                "      requests:\n"
                "        hugepages-2Mi: 2Mi\n"
                "",
        .error =
            "hugepages-request-not-limit.yaml:14:24: spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value: \"2Mi\": must be equal to hugepages-2Mi limit of 4Mi (it cannot be overcommitted)",
    },
    {
        .file = "active-deadline-zero.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  activeDeadlineSeconds: 0\n"
                "",
        .error =
            "active-deadline-zero.yaml:9:26: spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
    },
    {
        .file = "image-pull-policy.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "    imagePullPolicy: Sometimes\n"
                "",
        .error =
            "image-pull-policy.yaml:9:22: spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
    },
    {
        .file = "generate-name.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  generateName: Trainer-\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "generate-name.yaml:4:17: metadata.generateName: Invalid value: \"Trainer-\": a name prefix must be a lowercase RFC 1123 subdomain, optionally ending in '-' (e.g. 'trainer-')",
    },
    {
        .file = "empty-name.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: \"\"\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "empty-name.yaml:4:9: metadata.name: Required value: name or generateName is required",
    },
    {
        .file = "finalizer-without-domain.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "  finalizers: [cleanup]\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "",
        .error =
            "finalizer-without-domain.yaml:5:16: metadata.finalizers[0]: Invalid value: \"cleanup\": a finalizer name needs a domain, e.g. \"example.com/cleanup\"",
    },
    {
        .file = "selector-value.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: p\n"
                "spec:\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: i\n"
                "  affinity:\n"
                "    podAntiAffinity:\n"
                "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                "      - topologyKey: zone\n"
                "        labelSelector:\n"
                "          matchExpressions:\n"
                "          - {key: app, operator: In, values: [ok, \"not ok\"]}\n"
                "",
        .error =
            "selector-value.yaml:15:51: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values[1]: Invalid value: \"not ok\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    },
    {
        .file = "pod-list-holds-node.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: PodList\n"
                "items:\n"
                "- apiVersion: v1\n"
                "  kind: Node\n"
                "  metadata: {name: n}\n"
                "",
        .error =
            "pod-list-holds-node.yaml:5:9: items[0].kind: unexpected kind \"Node\": a PodList holds only Pod objects",
    },
    {
        .file = "long-label-key.yaml",
        .strict = false,
        .text =
            "apiVersion: v1\n"
            "kind: Pod\n"
            "metadata:\n"
            "  name: p\n"
            "  labels:\n"
            "    \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\tb\": x\n"
            "spec:\n"
            "  containers:\n"
            "  - name: c\n"
            "    image: i\n"
            "",
        .error =
            "long-label-key.yaml:6:5: metadata.labels[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...]: Invalid value: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"...: the name part must be no more than 63 characters",
    },
    {
        .file = "numa-duplicate-id.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata:\n"
                "  name: n1\n"
                "status:\n"
                "  xpool:\n"
                "    numaNodes:\n"
                "    - {id: 0, cpus: \"0-3\"}\n"
                "    - {id: 1, cpus: \"4-7\"}\n"
                "    - {id: 0, cpus: \"8-11\"}\n"
                "",
        .error =
            "numa-duplicate-id.yaml:10:12: status.xpool.numaNodes[2].id: Duplicate value: 0: NUMA node ids must be unique within a node",
    },
    {
        .file = "device-node-escapes-dev.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Node\n"
                "metadata: {name: n}\n"
                "status:\n"
                "  xpool:\n"
                "    devices:\n"
                "    - id: gpu0\n"
                "      kind: gpu\n"
                "      resourceName: nvidia.com/gpu\n"
                "      deviceNodes: [/dev/nvidia0, /dev/../etc/shadow]\n"
                "",
        .error =
            "device-node-escapes-dev.yaml:10:35: status.xpool.devices[0].deviceNodes[1]: Invalid value: \"/dev/../etc/shadow\": a device node is an absolute path below /dev without '..', e.g. \"/dev/nvidia0\"",
    },
    {
        .file = "ns-with-namespace.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Namespace\n"
                "metadata:\n"
                "  name: ml\n"
                "  namespace: default\n"
                "",
        .error =
            "ns-with-namespace.yaml:5:14: metadata.namespace: Invalid value: \"default\": a Namespace is cluster-scoped and has no namespace",
    },
    {
        .file = "ns-name-not-label.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Namespace\n"
                "metadata:\n"
                "  name: ml.team\n"
                "",
        .error =
            "ns-name-not-label.yaml:4:9: metadata.name: Invalid value: \"ml.team\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name')",
    },
    {
        .file = "ns-finalizer-without-domain.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Namespace\n"
                "metadata: {name: ml}\n"
                "spec:\n"
                "  finalizers: [kubernetes, cleanup]\n"
                "",
        .error =
            "ns-finalizer-without-domain.yaml:5:28: spec.finalizers[1]: Invalid value: \"cleanup\": a finalizer name needs a domain, e.g. \"example.com/cleanup\"",
    },
    {
        .file = "ns-bad-phase.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Namespace\n"
                "metadata: {name: ml}\n"
                "status:\n"
                "  phase: Gone\n"
                "",
        .error =
            "ns-bad-phase.yaml:5:10: status.phase: Unsupported value: \"Gone\": supported values: \"Active\", \"Terminating\"",
    },
    {
        .file = "ns-strict-status.yaml",
        .strict = true,
        .text = "apiVersion: v1\n"
                "kind: Namespace\n"
                "metadata: {name: ml}\n"
                "status:\n"
                "  conditions: []\n"
                "  phasee: Active\n"
                "",
        .error =
            "ns-strict-status.yaml:6:3: status.phasee: unknown field \"phasee\" in NamespaceStatus",
    },
    {
        .file = "lease-core-api-version.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "",
        .error =
            "lease-core-api-version.yaml:1:13: apiVersion: Unsupported value: \"v1\": Lease is in apiVersion \"coordination.k8s.io/v1\"",
    },
    {
        .file = "lease-zero-duration.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  leaseDurationSeconds: 0\n"
                "",
        .error =
            "lease-zero-duration.yaml:5:25: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
    },
    {
        .file = "lease-duration-int32.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  leaseDurationSeconds: 3000000000\n"
                "",
        .error =
            "lease-duration-int32.yaml:5:25: spec.leaseDurationSeconds: Invalid value: 3000000000: must be a 32-bit integer (between -2147483648 and 2147483647)",
    },
    {
        .file = "lease-negative-transitions.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  leaseTransitions: -1\n"
                "",
        .error =
            "lease-negative-transitions.yaml:5:21: spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
    },
    {
        .file = "lease-holder-without-strategy.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  holderIdentity: n1\n"
                "  preferredHolder: n2\n"
                "",
        .error =
            "lease-holder-without-strategy.yaml:6:20: spec.preferredHolder: Forbidden: may only be set together with strategy",
    },
    {
        .file = "lease-unknown-strategy.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  strategy: Newest\n"
                "",
        .error =
            "lease-unknown-strategy.yaml:5:13: spec.strategy: Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\", or a name with a domain, e.g. \"example.com/newest\"",
    },
    {
        .file = "lease-bad-strategy-name.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  strategy: example.com/-newest\n"
                "",
        .error =
            "lease-bad-strategy-name.yaml:5:13: spec.strategy: Invalid value: \"example.com/-newest\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or 'example.com/MyName')",
    },
    {
        .file = "lease-bad-renew-time.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  renewTime: \"2026-12-02T19:20:31.Z\"\n"
                "",
        .error =
            "lease-bad-renew-time.yaml:5:14: spec.renewTime: invalid timestamp \"2026-12-02T19:20:31.Z\": expected RFC 3339 with microseconds, e.g. \"2026-12-02T15:04:05.123456Z\"",
    },
    {
        .file = "lease-renew-time-number.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  renewTime: 1764703231\n"
                "",
        .error =
            "lease-renew-time-number.yaml:5:14: spec.renewTime: expected an RFC 3339 timestamp string, got a number",
    },
    {
        .file = "lease-strict.yaml",
        .strict = true,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: Lease\n"
                "metadata: {name: l}\n"
                "spec:\n"
                "  holderIdentityy: n1\n"
                "",
        .error =
            "lease-strict.yaml:5:3: spec.holderIdentityy: unknown field \"holderIdentityy\" in LeaseSpec",
    },
    {
        .file = "lease-list-with-event.yaml",
        .strict = false,
        .text = "apiVersion: coordination.k8s.io/v1\n"
                "kind: LeaseList\n"
                "items:\n"
                "- metadata: {name: l}\n"
                "- apiVersion: v1\n"
                "  kind: Event\n"
                "  metadata: {name: e}\n"
                "",
        .error =
            "lease-list-with-event.yaml:6:9: items[1].kind: unexpected kind \"Event\": a LeaseList holds only Lease objects",
    },
    {
        .file = "event-namespace-mismatch.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e, namespace: ml}\n"
                "involvedObject:\n"
                "  kind: Pod\n"
                "  name: p\n"
                "  namespace: default\n"
                "",
        .error =
            "event-namespace-mismatch.yaml:7:14: involvedObject.namespace: Invalid value: \"default\": does not match metadata.namespace \"ml\"",
    },
    {
        .file = "event-object-without-namespace.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e, namespace: ml}\n"
                "involvedObject: {kind: Node, name: n1}\n"
                "",
        .error =
            "event-object-without-namespace.yaml:4:17: involvedObject.namespace: Required value: an event in namespace \"ml\" must name its object's namespace (events about cluster-scoped objects go in \"default\")",
    },
    {
        .file = "event-bad-type.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e}\n"
                "involvedObject: {kind: Node, name: n1}\n"
                "type: Error\n"
                "",
        .error =
            "event-bad-type.yaml:5:7: type: Unsupported value: \"Error\": supported values: \"Normal\", \"Warning\"",
    },
    {
        .file = "event-negative-count.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e}\n"
                "involvedObject: {kind: Node, name: n1}\n"
                "count: -1\n"
                "",
        .error =
            "event-negative-count.yaml:5:8: count: Invalid value: -1: must be greater than or equal to 0",
    },
    {
        .file = "event-series-count.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e}\n"
                "series: {count: -2}\n"
                "",
        .error =
            "event-series-count.yaml:4:17: series.count: Invalid value: -2: must be greater than or equal to 0",
    },
    {
        .file = "event-time-needs-reporter.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e, namespace: default}\n"
                "involvedObject: {kind: Node, name: n1}\n"
                "eventTime: \"2026-12-02T19:20:31.123456Z\"\n"
                "action: Bind\n"
                "reason: Scheduled\n"
                "",
        .error =
            "event-time-needs-reporter.yaml:1:1: reportingComponent: Required value: an event with an eventTime needs it",
    },
    {
        .file = "event-time-bad-reporter.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e}\n"
                "eventTime: \"2026-12-02T19:20:31.123456Z\"\n"
                "reportingComponent: xpool scheduler\n"
                "reportingInstance: s0\n"
                "action: Bind\n"
                "reason: Scheduled\n"
                "",
        .error =
            "event-time-bad-reporter.yaml:5:21: reportingComponent: Invalid value: \"xpool scheduler\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or 'example.com/MyName')",
    },
    {
        .file = "event-time-needs-action.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e}\n"
                "eventTime: \"2026-12-02T19:20:31.123456Z\"\n"
                "reportingComponent: xpool.io/scheduler\n"
                "reportingInstance: s0\n"
                "reason: Scheduled\n"
                "",
        .error =
            "event-time-needs-action.yaml:1:1: action: Required value: an event with an eventTime needs it",
    },
    {
        .file = "event-node-in-ml.yaml",
        .strict = false,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e, namespace: ml}\n"
                "involvedObject: {kind: Node, name: n1}\n"
                "eventTime: \"2026-12-02T19:20:31.123456Z\"\n"
                "reportingComponent: xpool.io/scheduler\n"
                "reportingInstance: s0\n"
                "action: Bind\n"
                "reason: Scheduled\n"
                "",
        .error =
            "event-node-in-ml.yaml:4:17: involvedObject.namespace: Required value: an event in namespace \"ml\" must name its object's namespace (events about cluster-scoped objects go in \"default\" or \"kube-system\")",
    },
    {
        .file = "event-strict.yaml",
        .strict = true,
        .text = "apiVersion: v1\n"
                "kind: Event\n"
                "metadata: {name: e}\n"
                "involvedObject: {kind: Node, nam: n1}\n"
                "",
        .error =
            "event-strict.yaml:4:30: involvedObject.nam: unknown field \"nam\" in ObjectReference",
    },
};

/* An expected message with a '*' matches any text there: the list of the kinds table's kinds
 * grows with every kind. */
static bool error_matches(const char *got, const char *expected)
{
        const char *star = strchr(expected, '*');
        size_t head, tail, len = strlen(got);

        if (!star)
                return strcmp(got, expected) == 0;
        head = (size_t)(star - expected);
        tail = strlen(star + 1);
        return len >= head + tail && strncmp(got, expected, head) == 0 &&
               strcmp(got + len - tail, star + 1) == 0;
}

static void every_bad_manifest_gets_its_precise_error(void **state)
{
        (void)state;
        assert_true(XP_ELEMENTSOF(bad_manifests) >= 30);
        for (size_t i = 0; i < XP_ELEMENTSOF(bad_manifests); i++) {
                const struct bad_manifest *b = &bad_manifests[i];
                struct xp_manifest sentinel = {.objects = (void *)&sentinel, .n = 12345};
                struct xp_error err = {0};
                int r = xp_manifest_load_buffer(b->text,
                                                strlen(b->text),
                                                b->file,
                                                b->strict ? XP_DECODE_STRICT : 0,
                                                &sentinel,
                                                &err);

                if (r >= 0 || !error_matches(err.msg, b->error))
                        fail_msg(
                            "%s: got %d \"%s\"\n  expected \"%s\"", b->file, r, err.msg, b->error);
                assert_int_equal(err.code, r);
                /* a failed load changes nothing */
                assert_ptr_equal(sentinel.objects, &sentinel);
                assert_int_equal(sentinel.n, 12345);
        }
}

static void unknown_fields_pass_unless_strict(void **state)
{
        /* ports is a Kubernetes field xpool keeps as sent; portz is a typo */
        static const char text[] =
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, ownerReferences: []}\n"
            "spec:\n  containers: [{name: c, image: i, ports: [{containerPort: 80}], portz: 1}]\n";
        static const char kubernetes_fields[] =
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, ownerReferences: []}\n"
            "spec:\n  volumes: []\n  containers: [{name: c, image: i, ports: [{containerPort: 80}]}]\n";
        struct xp_manifest m = {0};
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_manifest_load_buffer(text, sizeof(text) - 1, "p.yaml", 0, &m, &err), 0);
        assert_non_null(json_object_get(m.objects[0].pod->spec.containers.items[0].extra, "ports"));
        assert_non_null(json_object_get(m.objects[0].pod->spec.containers.items[0].extra, "portz"));
        xp_manifest_done(&m);
        assert_int_equal(
            xp_manifest_load_buffer(text, sizeof(text) - 1, "p.yaml", XP_DECODE_STRICT, &m, &err),
            -EINVAL);
        assert_string_equal(
            err.msg, "p.yaml:5:66: spec.containers[0].portz: unknown field \"portz\" in Container");
        assert_int_equal(xp_manifest_load_buffer(kubernetes_fields,
                                                 sizeof(kubernetes_fields) - 1,
                                                 "k.yaml",
                                                 XP_DECODE_STRICT,
                                                 &m,
                                                 &err),
                         0);
        assert_int_equal(m.n, 1);
        xp_manifest_done(&m);
}

static void file_errors_say_what_to_do(void **state)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_manifest_load_file(DATA "no-such-file.yaml", 0, &m, &err), -ENOENT);
        assert_string_equal(err.msg,
                            "cannot open " DATA "no-such-file.yaml: No such file or directory");
        assert_int_equal(xp_manifest_load_file(DATA, 0, &m, &err), -EISDIR);
        assert_string_equal(err.msg, DATA " is a directory: give a manifest file");
}

static void oversized_input_is_refused_before_parsing(void **state)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};
        size_t size = XP_MANIFEST_MAX_BYTES + 1;
        char *big = malloc(size);

        (void)state;
        assert_non_null(big);
        memset(big, '#', size);
        assert_int_equal(xp_manifest_load_buffer(big, size, "big.yaml", 0, &m, &err), -E2BIG);
        assert_string_equal(err.msg, "big.yaml: too large (33554433 bytes, at most 33554432)");
        free(big);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(loads_the_seed_pod),
            cmocka_unit_test(loads_multi_document_files_in_order),
            cmocka_unit_test(loads_lists_as_kubectl_prints_them),
            cmocka_unit_test(loads_every_kind),
            cmocka_unit_test(empty_input_holds_no_objects),
            cmocka_unit_test(every_bad_manifest_gets_its_precise_error),
            cmocka_unit_test(unknown_fields_pass_unless_strict),
            cmocka_unit_test(file_errors_say_what_to_do),
            cmocka_unit_test(oversized_input_is_refused_before_parsing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
