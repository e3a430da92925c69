/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/codec.h"
#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/manifest.h"
#include "xpool/timeutil.h"

#define DATA XPOOL_TEST_DATA "/manifests/"

static struct xp_pod *load_pod(const char *file)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};
        struct xp_pod *pod;

        if (xp_manifest_load_file(file, 0, &m, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(m.n, 1);
        assert_int_equal(m.objects[0].kind, XP_OBJECT_POD);
        pod = m.objects[0].pod;
        m.objects[0].pod = NULL;
        free(m.objects);
        return pod;
}

static struct xp_node *load_node(const char *file)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};
        struct xp_node *node;

        if (xp_manifest_load_file(file, 0, &m, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(m.n, 1);
        assert_int_equal(m.objects[0].kind, XP_OBJECT_NODE);
        node = m.objects[0].node;
        m.objects[0].node = NULL;
        free(m.objects);
        return node;
}

/* The value at an RFC 6901 pointer without the leading '/' ("a/0/nvidia.com~1gpu"). */
static json_t *at(json_t *json, const char *path)
{
        char *copy = strdup(path), *save = NULL;

        for (char *t = strtok_r(copy, "/", &save); t && json; t = strtok_r(NULL, "/", &save)) {
                char *tilde;

                while ((tilde = strstr(t, "~1"))) {
                        *tilde = '/';
                        memmove(tilde + 1, tilde + 2, strlen(tilde + 2) + 1);
                }
                json = json_is_array(json) ? json_array_get(json, strtoul(t, NULL, 10))
                                           : json_object_get(json, t);
        }
        free(copy);
        return json;
}

static const char *str_at(json_t *json, const char *path)
{
        json_t *v = at(json, path);

        if (!json_is_string(v))
                fail_msg("%s is not a string", path);
        return json_string_value(v);
}

static void decodes_every_modeled_pod_field(void **state)
{
        struct xp_pod *pod = load_pod(DATA "full-pod.yaml");
        const struct xp_container *c = &pod->spec.containers.items[0];
        const struct xp_affinity *a = pod->spec.affinity;
        char text[XP_QUANTITY_STRING_MAX];

        (void)state;
        assert_string_equal(pod->metadata.namespace, "research");
        assert_string_equal(pod->metadata.resource_version, "42");
        assert_int_equal(pod->metadata.generation, 3);
        assert_int_equal(pod->metadata.creation_timestamp, 1796223845);
        assert_string_equal(xp_strmap_get(&pod->metadata.labels, "job"), "llm");
        assert_int_equal(pod->metadata.finalizers.n, 1);
        assert_int_equal(pod->spec.init_containers.n, 1);
        assert_string_equal(pod->spec.init_containers.items[0].args.items[0], "cp /data/* /work/");
        assert_string_equal(c->working_dir, "/work");
        assert_int_equal(c->args.n, 3);
        assert_int_equal(c->env.n, 2);
        assert_null(c->env.items[1].value);
        assert_non_null(json_object_get(c->env.items[1].extra, "valueFrom"));
        assert_string_equal(
            xp_quantity_format(xp_resource_list_get(&c->resources.requests, "cpu"), text), "4");
        assert_string_equal(
            xp_quantity_format(xp_resource_list_get(&c->resources.limits, "memory"), text), "64Gi");
        assert_true(c->security_context->run_as_user.set);
        assert_int_equal(c->security_context->run_as_user.value, 1000);
        assert_true(c->security_context->allow_privilege_escalation.set);
        assert_false(c->security_context->allow_privilege_escalation.value);
        assert_false(c->security_context->run_as_non_root.set);
        assert_int_equal(pod->spec.restart_policy, XP_RESTART_ON_FAILURE);
        assert_true(pod->spec.termination_grace_period_seconds.set);
        assert_int_equal(pod->spec.termination_grace_period_seconds.value, 60);
        assert_int_equal(pod->spec.priority.value, 1000);
        assert_string_equal(xp_strmap_get(&pod->spec.node_selector, "xpool.io/gpu-product"),
                            "H100-SXM");
        assert_int_equal(a->node_affinity->required->terms.items[0].match_expressions.items[0].op,
                         XP_SELECTOR_OP_GT);
        assert_int_equal(a->node_affinity->preferred.items[0].weight, 50);
        assert_string_equal(a->pod_anti_affinity->required.items[0].topology_key,
                            "kubernetes.io/hostname");
        assert_string_equal(
            xp_strmap_get(&a->pod_anti_affinity->required.items[0].label_selector->match_labels,
                          "job"),
            "llm");
        assert_int_equal(a->pod_anti_affinity->preferred.items[0]
                             .term.label_selector->match_expressions.items[0]
                             .op,
                         XP_SELECTOR_OP_EXISTS);
        assert_null(a->pod_affinity);
        assert_int_equal(pod->spec.tolerations.n, 2);
        assert_int_equal(pod->spec.tolerations.items[1].effect, XP_TAINT_EFFECT_NO_EXECUTE);
        assert_int_equal(pod->spec.tolerations.items[1].toleration_seconds.value, 300);
        assert_int_equal(pod->status.phase, XP_POD_RUNNING);
        assert_int_equal(pod->status.conditions.items[0].status, XP_CONDITION_TRUE);
        assert_string_equal(pod->status.host_ip, "10.0.0.5");
        assert_true(pod->status.container_statuses.items[0].ready);
        assert_non_null(pod->status.container_statuses.items[0].state.running);
        assert_int_equal(pod->status.container_statuses.items[0].last_state.terminated->exit_code,
                         137);
        assert_string_equal(pod->status.container_statuses.items[0].last_state.terminated->reason,
                            "OOMKilled");
        xp_pod_free(pod);
}

static void encoding_keeps_what_the_client_sent(void **state)
{
        struct xp_pod *pod = load_pod(DATA "full-pod.yaml");
        json_t *json;
        const char *first_key;
        void *iter;

        (void)state;
        assert_int_equal(xp_pod_to_json(pod, &json), 0);
        iter = json_object_iter(json);
        first_key = json_object_iter_key(iter);
        assert_string_equal(first_key, "apiVersion");
        assert_string_equal(json_object_iter_key(json_object_iter_next(json, iter)), "kind");
        assert_string_equal(str_at(json, "kind"), "Pod");
        /* fields xpool does not model, at every depth */
        assert_string_equal(str_at(json, "metadata/ownerReferences/0/kind"), "Job");
        assert_string_equal(str_at(json, "metadata/ownerReferences/0/uid"),
                            "1b4c5e2f-58d0-4c3a-9a1e-6a7d2f0c1234");
        assert_int_equal(json_integer_value(at(json, "metadata/ownerReferences/0/futureField")),
                         1234);
        assert_string_equal(str_at(json, "spec/containers/0/env/1/valueFrom/fieldRef/fieldPath"),
                            "metadata.name");
        assert_string_equal(str_at(json, "spec/containers/0/securityContext/capabilities/drop/0"),
                            "ALL");
        assert_int_equal(json_integer_value(at(json, "spec/containers/0/ports/0/containerPort")),
                         29500);
        assert_string_equal(str_at(json, "spec/volumes/0/hostPath/path"), "/data");
        assert_int_equal(json_integer_value(at(json, "spec/securityContext/fsGroup")), 2000);
        /* modeled fields in Kubernetes' shapes */
        assert_string_equal(str_at(json, "metadata/creationTimestamp"), "2026-12-02T15:04:05Z");
        assert_string_equal(str_at(json, "spec/containers/0/resources/requests/cpu"), "4");
        assert_string_equal(str_at(json, "spec/containers/0/resources/limits/nvidia.com~1gpu"),
                            "4");
        assert_true(
            json_is_false(at(json, "spec/containers/0/securityContext/allowPrivilegeEscalation")));
        assert_string_equal(str_at(json, "spec/restartPolicy"), "OnFailure");
        assert_string_equal(
            str_at(
                json,
                "spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/operator"),
            "Gt");
        assert_int_equal(json_integer_value(at(json, "status/containerStatuses/0/restartCount")),
                         0);
        assert_true(json_is_true(at(json, "status/containerStatuses/0/ready")));
        assert_int_equal(json_integer_value(
                             at(json, "status/containerStatuses/0/lastState/terminated/exitCode")),
                         137);
        assert_string_equal(str_at(json, "status/conditions/0/status"), "True");
        assert_null(at(json, "spec/nodeName"));
        json_decref(json);
        xp_pod_free(pod);
}

/*
 * A decode reads the body without changing it (apiVersion and kind stay), keeps members it does
 * not model with the body's own values (its lists copied: an integral 80.0 becomes 80 only in
 * the copy); an empty securityContext the client sent stays, and the order is the model's.
 */
static void decoding_leaves_the_body_alone(void **state)
{
        static const char body[] =
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"team\":\"ml\"},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"securityContext\":{},"
            "\"terminationMessagePath\":\"/dev/termination-log\",\"ports\":[{\"containerPort\":80,"
            "\"weight\":80.0}]}],\"enableServiceLinks\":true}}";
        static const char expected[] =
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"team\":\"ml\"},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"securityContext\":{},"
            "\"terminationMessagePath\":\"/dev/termination-log\",\"ports\":[{\"containerPort\":80,"
            "\"weight\":80}]}],\"enableServiceLinks\":true}}";
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;
        json_t *json = json_loads(body, 0, NULL), *before = json_deep_copy(json), *out = NULL;
        char *text;

        (void)state;
        assert_non_null(json);
        if (xp_pod_from_json(json, NULL, 0, &pod, &err) < 0)
                fail_msg("%s", err.msg);
        assert_true(json_equal(json, before));
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        text = json_dumps(out, JSON_COMPACT);
        assert_string_equal(text, expected);
        assert_true(json_is_real(at(json, "spec/containers/0/ports/0/weight")));
        assert_ptr_not_equal(at(out, "spec/containers/0/ports"),
                             at(json, "spec/containers/0/ports"));
        free(text);
        json_decref(out);
        json_decref(before);
        json_decref(json);
        xp_pod_free(pod);
}

/*
 * With XP_DECODE_SHARE (a create's body, not changed once decoded) a list or object the model
 * does not hold is kept by reference, not copied, unless it holds an integral real, which only
 * a copy turns into an integer; without the flag both are copied. The body is not changed.
 */
static void shared_decoding_keeps_unknown_members_by_reference(void **state)
{
        static const char body[] =
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],"
            "\"plain\":{\"a\":[1,\"x\",{\"b\":true}]},\"integral\":{\"r\":[2.0]}}}";
        static const unsigned flags[] = {XP_DECODE_SHARE, 0};

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(flags); i++) {
                struct xp_error err = {0};
                struct xp_pod *pod = NULL;
                json_t *json = json_loads(body, 0, NULL), *before = json_deep_copy(json);
                json_t *out = NULL;

                assert_non_null(json);
                if (xp_pod_from_json(json, NULL, flags[i], &pod, &err) < 0)
                        fail_msg("%s", err.msg);
                assert_int_equal(xp_pod_to_json(pod, &out), 0);
                assert_true(json_equal(json, before));
                if (flags[i] & XP_DECODE_SHARE)
                        assert_ptr_equal(at(out, "spec/plain"), at(json, "spec/plain"));
                else
                        assert_ptr_not_equal(at(out, "spec/plain"), at(json, "spec/plain"));
                assert_true(json_equal(at(out, "spec/plain"), at(json, "spec/plain")));
                assert_ptr_not_equal(at(out, "spec/integral"), at(json, "spec/integral"));
                assert_true(json_is_integer(at(out, "spec/integral/r/0")));
                assert_true(json_is_real(at(json, "spec/integral/r/0")));
                json_decref(out);
                json_decref(before);
                xp_pod_free(pod);
                json_decref(json);
        }
}

/* json -> object -> json -> object -> json: the two encodings are equal. */
static void assert_pod_round_trips(struct xp_pod *pod)
{
        struct xp_error err = {0};
        struct xp_pod *again = NULL;
        json_t *first, *second;
        char *text;

        assert_int_equal(xp_pod_to_json(pod, &first), 0);
        text = json_dumps(first, JSON_COMPACT);
        assert_non_null(text);
        if (xp_pod_from_json_text(text, strlen(text), "round-trip", 0, &again, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(xp_pod_to_json(again, &second), 0);
        assert_true(json_equal(first, second));
        free(text);
        json_decref(first);
        json_decref(second);
        xp_pod_free(again);
}

static void pods_and_nodes_round_trip(void **state)
{
        struct xp_pod *pod = load_pod(DATA "full-pod.yaml");
        struct xp_pod *seed = load_pod(DATA "seed-pod.yaml");
        struct xp_node *node = load_node(DATA "gpu-node.yaml");
        struct xp_node *again = NULL;
        struct xp_error err = {0};
        json_t *first, *second;

        (void)state;
        assert_pod_round_trips(pod);
        assert_pod_round_trips(seed);

        assert_int_equal(xp_node_to_json(node, &first), 0);
        assert_int_equal(xp_node_from_json(first, NULL, 0, &again, &err), 0);
        assert_int_equal(xp_node_to_json(again, &second), 0);
        assert_true(json_equal(first, second));
        assert_string_equal(str_at(first, "status/xpool/links/0/level"), "NVLink");
        assert_int_equal(json_integer_value(at(first, "status/xpool/links/0/nvlinks")), 18);
        assert_string_equal(str_at(first, "status/xpool/devices/1/health"), "Unhealthy");
        assert_true(json_is_true(at(first, "status/xpool/devices/0/simulated")));
        assert_int_equal(json_integer_value(at(first, "status/xpool/devices/0/index")), 0);
        assert_true(json_real_value(at(first, "status/xpool/devices/0/metrics/powerWatts")) ==
                    540.25);
        assert_int_equal(
            json_integer_value(at(first, "status/daemonEndpoints/kubeletEndpoint/Port")), 10250);
        assert_string_equal(str_at(first, "status/allocatable/cpu"), "3800m");
        json_decref(first);
        json_decref(second);
        xp_pod_free(pod);
        xp_pod_free(seed);
        xp_node_free(node);
        xp_node_free(again);
}

static void node_inventory_is_decoded(void **state)
{
        struct xp_node *node = load_node(DATA "gpu-node.yaml");
        const struct xp_node_inventory *inv = node->status.xpool;
        const struct xp_device *d;

        (void)state;
        assert_non_null(inv);
        assert_int_equal(inv->cpu->threads, 4);
        assert_int_equal(inv->numa_nodes.n, 1);
        assert_int_equal(inv->numa_nodes.items[0].memory_bytes, 68719476736LL);
        assert_int_equal(inv->devices.n, 2);
        d = &inv->devices.items[0];
        assert_int_equal(d->kind, XP_DEVICE_GPU);
        assert_string_equal(d->resource_name, "nvidia.com/gpu");
        assert_int_equal(d->device_nodes.n, 3);
        assert_int_equal(d->memory_bytes, 85899345920LL);
        assert_true(d->fp16_tflops == 989.5);
        assert_true(d->numa_node.set);
        assert_int_equal(d->numa_node.value, 0);
        assert_string_equal(d->pci_address, "0000:18:00.0");
        assert_int_equal(d->health, XP_DEVICE_HEALTHY);
        assert_true(d->simulated);
        assert_int_equal(d->metrics->memory_used_bytes, 42949672960LL);
        assert_int_equal(inv->devices.items[1].health, XP_DEVICE_UNHEALTHY);
        assert_string_equal(inv->devices.items[1].health_reason,
                            "Xid 79: GPU has fallen off the bus");
        assert_int_equal(inv->links.items[0].level, XP_LINK_NVLINK);
        assert_true(inv->links.items[0].bandwidth_gbps == 450);
        assert_int_equal(node->spec.taints.items[0].effect, XP_TAINT_EFFECT_NO_SCHEDULE);
        assert_int_equal(node->status.conditions.items[0].last_heartbeat_time, 1796223845);
        assert_string_equal(node->status.node_info.kernel_version, "6.1.0-26-amd64");
        xp_node_free(node);
}

static void json_bodies_decode_with_line_and_column(void **state)
{
        static const char body[] =
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n"
            " \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}";
        static const char broken[] = "{\"apiVersion\": \"v1\",\n \"kind\": }";
        static const char duplicate[] = "{\"kind\": \"Pod\", \"kind\": \"Pod\"}";
        static const char wrong_kind[] =
            "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}}";
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;

        (void)state;
        assert_int_equal(xp_pod_from_json_text(body, sizeof(body) - 1, NULL, 0, &pod, &err), 0);
        assert_string_equal(pod->spec.containers.items[0].name, "c");
        xp_pod_free(pod);
        pod = NULL;
        assert_int_equal(xp_pod_from_json_text(broken, sizeof(broken) - 1, "body", 0, &pod, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "body:2:10: invalid JSON: unexpected token near '}'");
        assert_int_equal(
            xp_pod_from_json_text(duplicate, sizeof(duplicate) - 1, "body", 0, &pod, &err),
            -EINVAL);
        assert_string_equal(err.msg,
                            "body:1:22: invalid JSON: duplicate object key near '\"kind\"'");
        assert_int_equal(
            xp_pod_from_json_text(wrong_kind, sizeof(wrong_kind) - 1, NULL, 0, &pod, &err),
            -EINVAL);
        assert_string_equal(err.msg, "kind: unexpected kind \"Node\": expected \"Pod\"");
        assert_null(pod);
}

static void objects_built_in_code_validate_and_encode(void **state)
{
        struct xp_pod *pod = calloc(1, sizeof(*pod));
        struct xp_container *c = calloc(1, sizeof(*c));
        struct xp_quantity half = xp_quantity_from_milli(500);
        struct xp_error err = {0};
        json_t *json;

        (void)state;
        pod->metadata.name = strdup("built");
        pod->spec.containers.items = c;
        pod->spec.containers.n = 1;
        /* required fields are checked for objects built in code, as when decoding */
        assert_int_equal(xp_pod_validate(pod, &err), -EINVAL);
        assert_string_equal(err.msg, "spec.containers[0].name: Required value");
        c->name = strdup("main");
        assert_int_equal(xp_pod_validate(pod, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "spec.containers[0].image: Required value: a container needs an image or a command");
        c->image = strdup("busybox");
        c->env.items = calloc(1, sizeof(*c->env.items));
        c->env.n = 1;
        assert_int_equal(xp_pod_validate(pod, &err), -EINVAL);
        assert_string_equal(err.msg, "spec.containers[0].env[0].name: Required value");
        c->env.items[0].name = strdup("A");
        assert_int_equal(xp_resource_list_set(&c->resources.limits, "nvidia.com/gpu", &half), 0);
        assert_int_equal(xp_pod_validate(pod, &err), 0);
        pod->status.phase = XP_POD_PENDING;
        assert_int_equal(xp_pod_to_json(pod, &json), 0);
        assert_string_equal(str_at(json, "spec/containers/0/resources/limits/nvidia.com~1gpu"),
                            "500m");
        assert_string_equal(str_at(json, "status/phase"), "Pending");
        assert_null(at(json, "status/conditions"));
        json_decref(json);
        xp_pod_free(pod);
}

static void values_json_cannot_hold_are_invalid(void **state)
{
        struct xp_node *node = load_node(DATA "gpu-node.yaml");
        struct xp_error err = {0};
        json_t *json = NULL;

        (void)state;
        node->status.xpool->devices.items[0].metrics->power_watts = NAN;
        assert_int_equal(xp_node_validate(node, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "status.xpool.devices[0].metrics.powerWatts: Invalid value: must be a finite number");
        assert_int_equal(xp_node_to_json(node, &json), -ERANGE);
        assert_null(json);
        node->status.xpool->devices.items[0].metrics->power_watts = 300;
        node->status.conditions.items[0].last_heartbeat_time = INT64_MAX;
        assert_int_equal(xp_node_validate(node, &err), -ERANGE);
        assert_string_equal(
            err.msg,
            "status.conditions[0].lastHeartbeatTime: Invalid value: the time is outside the years 0000 to 9999");
        assert_int_equal(xp_node_to_json(node, &json), -ERANGE);
        node->status.conditions.items[0].last_heartbeat_time = 1796223845;
        assert_int_equal(xp_node_validate(node, &err), 0);
        assert_int_equal(xp_node_to_json(node, &json), 0);
        json_decref(json);
        xp_node_free(node);
}

/* capabilities, readOnlyRootFilesystem and seccompProfile: decoded, encoded back, validated */
static void security_contexts_decode_and_validate(void **state)
{
        static const char good[] =
            "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"securityContext\": {\"seccompProfile\": {\"type\": \"Unconfined\"}}, \"containers\": [{\"name\": \"c\", \"image\": \"i\", \"securityContext\": {\"capabilities\": {\"add\": [\"NET_ADMIN\"], \"drop\": [\"ALL\"]}, \"readOnlyRootFilesystem\": true, \"seccompProfile\": {\"type\": \"Localhost\", \"localhostProfile\": \"p.json\"}}}]}}";
        static const char *const bad[][2] = {
            {"{\"type\": \"Sometimes\"}",
             "spec.containers[0].securityContext.seccompProfile.type: Unsupported value"},
            {"{\"type\": \"Localhost\"}",
             "spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"},
            {"{\"type\": \"RuntimeDefault\", \"localhostProfile\": \"x\"}",
             "spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: can only be set when seccomp type is Localhost"},
            {"{}", "spec.containers[0].securityContext.seccompProfile.type: Required value"},
        };
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;
        const struct xp_security_context *sc;
        const char *dropped = NULL;
        int read_only = 0;
        json_t *json = NULL;

        (void)state;
        assert_int_equal(xp_pod_from_json_text(good, sizeof(good) - 1, NULL, 0, &pod, &err), 0);
        sc = pod->spec.containers.items[0].security_context;
        assert_int_equal(sc->capabilities->add.n, 1);
        assert_string_equal(sc->capabilities->add.items[0], "NET_ADMIN");
        assert_string_equal(sc->capabilities->drop.items[0], "ALL");
        assert_true(sc->read_only_root_filesystem.set && sc->read_only_root_filesystem.value);
        assert_int_equal(sc->seccomp_profile->type, XP_SECCOMP_LOCALHOST);
        assert_string_equal(sc->seccomp_profile->localhost_profile, "p.json");
        assert_int_equal(pod->spec.security_context->seccomp_profile->type, XP_SECCOMP_UNCONFINED);
        assert_int_equal(xp_pod_to_json(pod, &json), 0);
        assert_int_equal(json_unpack(json,
                                     "{s:{s:[{s:{s:{s:[s]}, s:b}}]}}",
                                     "spec",
                                     "containers",
                                     "securityContext",
                                     "capabilities",
                                     "drop",
                                     &dropped,
                                     "readOnlyRootFilesystem",
                                     &read_only),
                         0);
        assert_string_equal(dropped, "ALL");
        assert_true(read_only);
        json_decref(json);
        xp_pod_free(pod);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *text = NULL;

                assert_true(
                    asprintf(
                        &text,
                        "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\", \"securityContext\": {\"seccompProfile\": %s}}]}}",
                        bad[i][0]) > 0);
                pod = NULL;
                assert_int_equal(xp_pod_from_json_text(text, strlen(text), NULL, 0, &pod, &err),
                                 -EINVAL);
                assert_null(pod);
                if (strncmp(err.msg, bad[i][1], strlen(bad[i][1])) != 0)
                        fail_msg("%s: got \"%s\"", bad[i][0], err.msg);
                free(text);
        }
}

static void trusted_decoding_skips_validation_not_types(void **state)
{
        static const char invalid_name[] =
            "{\"metadata\": {\"name\": \"Not_Valid\"}, \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}";
        static const char bad_type[] = "{\"metadata\": {\"name\": 5}, \"spec\": {}}";
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;

        (void)state;
        assert_int_equal(
            xp_pod_from_json_text(invalid_name, sizeof(invalid_name) - 1, NULL, 0, &pod, &err),
            -EINVAL);
        assert_int_equal(
            xp_pod_from_json_text(
                invalid_name, sizeof(invalid_name) - 1, NULL, XP_DECODE_TRUSTED, &pod, &err),
            0);
        assert_string_equal(pod->metadata.name, "Not_Valid");
        xp_pod_free(pod);
        pod = NULL;
        assert_int_equal(xp_pod_from_json_text(
                             bad_type, sizeof(bad_type) - 1, NULL, XP_DECODE_TRUSTED, &pod, &err),
                         -EINVAL);
        assert_string_equal(
            err.msg,
            "metadata.name: expected a string, got a number (quote the value to make it a string)");
}

static void null_and_empty_enums_mean_absent(void **state)
{
        static const char text[] =
            "{\"metadata\": {\"name\": \"p\", \"labels\": null, \"creationTimestamp\": null},"
            " \"spec\": {\"nodeName\": null, \"restartPolicy\": \"\", \"tolerations\": [{\"operator\": \"Exists\", \"effect\": \"\"}],"
            " \"containers\": [{\"name\": \"c\", \"image\": \"i\", \"resources\": {\"limits\": {\"cpu\": null}}}]}}";
        static const char empty_required[] =
            "{\"metadata\": {\"name\": \"n\"}, \"spec\": {\"taints\": [{\"key\": \"k\", \"effect\": \"\"}]}}";
        struct xp_error err = {0};
        struct xp_node *node = NULL;
        struct xp_pod *pod = NULL;

        (void)state;
        assert_int_equal(xp_pod_from_json_text(text, sizeof(text) - 1, NULL, 0, &pod, &err), 0);
        assert_null(pod->spec.node_name);
        assert_int_equal(pod->metadata.labels.n, 0);
        assert_int_equal(pod->spec.restart_policy, XP_RESTART_UNSET);
        assert_int_equal(pod->spec.tolerations.items[0].effect, XP_TAINT_EFFECT_UNSET);
        assert_int_equal(pod->spec.containers.items[0].resources.limits.n, 0);
        xp_pod_free(pod);
        assert_int_equal(xp_node_from_json_text(
                             empty_required, sizeof(empty_required) - 1, NULL, 0, &node, &err),
                         -EINVAL);
        assert_string_equal(
            err.msg,
            "spec.taints[0].effect: Unsupported value: \"\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"");
}

static void json_integer_quantities_keep_the_range(void **state)
{
        static const char lowest[] =
            "{\"metadata\": {\"name\": \"n\"}, \"status\": {\"capacity\": {\"cpu\": -9223372036854775808}}}";
        static const char highest[] =
            "{\"metadata\": {\"name\": \"n\"}, \"status\": {\"capacity\": {\"cpu\": 9223372036854775807}}}";
        struct xp_error err = {0};
        struct xp_node *node = NULL;
        json_t *json;

        (void)state;
        assert_int_equal(xp_node_from_json_text(
                             lowest, sizeof(lowest) - 1, NULL, XP_DECODE_TRUSTED, &node, &err),
                         -ERANGE);
        assert_string_equal(
            err.msg,
            "status.capacity[cpu]: \"-9223372036854775808\" is out of range: the largest quantity is 9223372036854775807");
        assert_int_equal(xp_node_from_json_text(highest, sizeof(highest) - 1, NULL, 0, &node, &err),
                         0);
        assert_int_equal(xp_node_to_json(node, &json), 0);
        assert_string_equal(str_at(json, "status/capacity/cpu"), "9223372036854775807");
        json_decref(json);
        xp_node_free(node);
}

static void inventories_stand_alone(void **state)
{
        static const char text[] =
            "{\"memoryBytes\": 8589934592, \"cpu\": {\"sockets\": 1, \"cores\": 2, \"threads\": 2},"
            " \"devices\": [{\"id\": \"sim-npu-0\", \"index\": 0, \"kind\": \"npu\", \"resourceName\": \"vendor.com/npu\","
            " \"pciID\": \"19e5:d801\", \"computeCapability\": \"9.0\", \"migEnabled\": false, \"simulated\": true}]}";
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        json_t *json, *encoded;

        (void)state;
        json = json_loads(text, 0, NULL);
        assert_non_null(json);
        assert_int_equal(xp_node_inventory_from_json(json, NULL, XP_DECODE_STRICT, &inv, &err), 0);
        assert_int_equal(inv->memory_bytes, 8589934592LL);
        assert_string_equal(inv->devices.items[0].pci_id, "19e5:d801");
        assert_true(inv->devices.items[0].mig_enabled.set);
        assert_false(inv->devices.items[0].mig_enabled.value);
        assert_int_equal(xp_node_inventory_validate(inv, &err), 0);
        assert_int_equal(xp_node_inventory_to_json(inv, &encoded), 0);
        assert_null(json_object_get(encoded, "kind"));
        assert_true(json_equal(json, encoded));
        json_decref(encoded);
        json_decref(json);
        xp_node_inventory_free(inv);

        json = json_loads("[1]", 0, NULL);
        assert_int_equal(xp_node_inventory_from_json(json, NULL, 0, &inv, &err), -EINVAL);
        assert_string_equal(err.msg, "expected a node inventory object (a mapping), got a list");
        json_decref(json);
}

static void enum_names_round_trip(void **state)
{
        (void)state;
        assert_string_equal(xp_pod_phase_to_string(XP_POD_SUCCEEDED), "Succeeded");
        assert_int_equal(xp_pod_phase_from_string("Failed"), XP_POD_FAILED);
        assert_int_equal(xp_pod_phase_from_string("failed"), -EINVAL);
        assert_null(xp_pod_phase_to_string(XP_POD_PHASE_UNSET));
        assert_string_equal(xp_restart_policy_to_string(XP_RESTART_NEVER), "Never");
        assert_int_equal(xp_restart_policy_from_string("OnFailure"), XP_RESTART_ON_FAILURE);
        assert_string_equal(xp_condition_status_to_string(XP_CONDITION_UNKNOWN), "Unknown");
        assert_int_equal(xp_condition_status_from_string("True"), XP_CONDITION_TRUE);
        assert_string_equal(xp_taint_effect_to_string(XP_TAINT_EFFECT_PREFER_NO_SCHEDULE),
                            "PreferNoSchedule");
        assert_int_equal(xp_taint_effect_from_string("NoExecute"), XP_TAINT_EFFECT_NO_EXECUTE);
        assert_string_equal(xp_device_kind_to_string(XP_DEVICE_FPGA), "fpga");
        assert_int_equal(xp_device_kind_from_string("npu"), XP_DEVICE_NPU);
        assert_string_equal(xp_link_level_to_string(XP_LINK_PXB), "PXB");
        assert_int_equal(xp_link_level_from_string("SYS"), XP_LINK_SYS);
        assert_int_equal(xp_link_level_from_string("NV4"), -EINVAL);
        assert_string_equal(xp_device_health_to_string(XP_DEVICE_UNHEALTHY), "Unhealthy");
        assert_int_equal(xp_device_health_from_string("Healthy"), XP_DEVICE_HEALTHY);
        assert_null(xp_device_health_to_string(XP_DEVICE_HEALTH_UNKNOWN));
}

static void microtime_parses_and_prints(void **state)
{
        static const struct {
                const char *text;
                int64_t micros;
                const char *printed; /* NULL: as text */
        } good[] = {
            {"2026-12-02T19:20:31.123456Z", 1796239231123456, NULL},
            {"2026-12-02T19:20:31Z", 1796239231000000, "2026-12-02T19:20:31.000000Z"},
            {"2026-12-02T19:20:31.5Z", 1796239231500000, "2026-12-02T19:20:31.500000Z"},
            /* digits past the sixth are dropped, as Go's formatting truncates */
            {"2026-12-02T19:20:31.123456789Z", 1796239231123456, "2026-12-02T19:20:31.123456Z"},
            {"2026-12-03T03:20:31.000001+08:00", 1796239231000001, "2026-12-02T19:20:31.000001Z"},
            {"2026-12-02t19:20:31.25z", 1796239231250000, "2026-12-02T19:20:31.250000Z"},
            /* a leap second is the second before it, fraction kept */
            {"2016-12-31T23:59:60.5Z", 1483228799500000, "2016-12-31T23:59:59.500000Z"},
            /* before 1970 the fraction still counts forward from the second */
            {"1969-12-31T23:59:59.999999Z", -1, NULL},
            {"1969-12-31T23:59:58.000001Z", -1999999, NULL},
            {"0000-01-01T00:00:00.000000Z", -62167219200000000, NULL},
            {"9999-12-31T23:59:59.999999Z", 253402300799999999, NULL},
        };
        static const char *const bad[] = {
            "",
            "2026-12-02T19:20:31.Z",
            "2026-12-02T19:20:31.12a456Z",
            "2026-12-02 19:20:31.123456Z",
            "2026-12-02T19:20:31.123456",
            "2026-02-30T00:00:00.000000Z",
            "9999-12-31T23:59:59.999999-01:00",
        };
        char text[XP_MICROTIME_MAX];

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(good); i++) {
                int64_t micros = 0;

                if (xp_time_parse_microtime(good[i].text, &micros) < 0)
                        fail_msg("%s does not parse", good[i].text);
                if (micros != good[i].micros)
                        fail_msg("%s: got %lld", good[i].text, (long long)micros);
                assert_int_equal(xp_time_format_microtime(micros, text), 0);
                assert_string_equal(text, good[i].printed ? good[i].printed : good[i].text);
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                int64_t micros = 42;

                if (xp_time_parse_microtime(bad[i], &micros) != -EINVAL)
                        fail_msg("%s parses", bad[i]);
                assert_int_equal(micros, 42);
        }
        assert_int_equal(xp_time_format_microtime(0, text), 0);
        assert_string_equal(text, "1970-01-01T00:00:00.000000Z");
        assert_int_equal(xp_time_format_microtime(253402300800000000, text), -ERANGE);
        assert_int_equal(xp_time_format_microtime(-62167219200000001, text), -ERANGE);
        assert_int_equal(xp_time_format_microtime(INT64_MIN, text), -ERANGE);
        assert_int_equal(xp_time_format_microtime(INT64_MAX, text), -ERANGE);
}

/* Each manifest object encodes, decodes from its encoding through the kind table, and encodes to
 * the same JSON; returns the first encoding (caller frees). */
static json_t *assert_object_round_trips(const struct xp_manifest_object *object)
{
        struct xp_error err = {0};
        json_t *first, *second;
        void *again = NULL;

        assert_int_equal(object->type->to_json(object->object, &first), 0);
        if (object->type->from_json(first, NULL, XP_DECODE_STRICT, &again, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(object->type->to_json(again, &second), 0);
        if (!json_equal(first, second)) {
                char *a = json_dumps(first, 0), *b = json_dumps(second, 0);

                fail_msg("%s\n!=\n%s", a, b);
        }
        json_decref(second);
        object->type->free(again);
        return first;
}

static void new_kinds_round_trip(void **state)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};
        json_t *ns, *event, *lease;

        (void)state;
        if (xp_manifest_load_file(DATA "all-kinds.yaml", 0, &m, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(m.n, 5);
        for (size_t i = 0; i < m.n; i++)
                json_decref(assert_object_round_trips(&m.objects[i]));

        ns = assert_object_round_trips(&m.objects[0]);
        assert_string_equal(str_at(ns, "apiVersion"), "v1");
        assert_string_equal(str_at(ns, "kind"), "Namespace");
        assert_string_equal(str_at(ns, "spec/finalizers/0"), "kubernetes");
        assert_string_equal(str_at(ns, "status/phase"), "Active");
        /* kept as sent, not modeled */
        assert_string_equal(str_at(ns, "status/conditions/0/type"),
                            "NamespaceDeletionDiscoveryFailure");

        event = assert_object_round_trips(&m.objects[3]);
        assert_string_equal(str_at(event, "kind"), "Event");
        assert_string_equal(str_at(event, "involvedObject/fieldPath"), "spec.containers{c}");
        assert_string_equal(str_at(event, "involvedObject/resourceVersion"), "42");
        assert_string_equal(str_at(event, "source/component"), "xpool-scheduler");
        assert_string_equal(str_at(event, "firstTimestamp"), "2026-12-02T19:20:31Z");
        assert_string_equal(str_at(event, "eventTime"), "2026-12-02T19:20:31.123456Z");
        assert_string_equal(str_at(event, "series/lastObservedTime"),
                            "2026-12-02T19:25:00.000001Z");
        assert_string_equal(str_at(event, "series/state"), "Ongoing");
        assert_int_equal(json_integer_value(at(event, "series/count")), 2);
        assert_int_equal(json_integer_value(at(event, "count")), 3);
        assert_string_equal(str_at(event, "type"), "Normal");
        assert_string_equal(str_at(event, "related/kind"), "Node");
        assert_string_equal(str_at(event, "reportingInstance"), "scheduler-0");

        lease = assert_object_round_trips(&m.objects[4]);
        assert_string_equal(str_at(lease, "apiVersion"), "coordination.k8s.io/v1");
        assert_string_equal(str_at(lease, "spec/acquireTime"), "2026-12-02T19:00:00.000000Z");
        assert_string_equal(str_at(lease, "spec/renewTime"), "2026-12-02T19:20:31.123456Z");
        assert_int_equal(json_integer_value(at(lease, "spec/leaseDurationSeconds")), 40);
        /* 0 was sent, and Kubernetes' pointer field tells 0 from absent */
        assert_true(json_is_integer(at(lease, "spec/leaseTransitions")));
        assert_int_equal(json_integer_value(at(lease, "spec/leaseTransitions")), 0);
        assert_string_equal(str_at(lease, "spec/preferredHolder"), "gpu-node-2");

        json_decref(ns);
        json_decref(event);
        json_decref(lease);
        xp_manifest_done(&m);
}

static void new_kinds_built_in_code_validate(void **state)
{
        struct xp_event *event = calloc(1, sizeof(*event));
        struct xp_lease *lease = calloc(1, sizeof(*lease));
        struct xp_namespace *ns = calloc(1, sizeof(*ns));
        struct xp_error err = {0};
        char long_reason[130];
        json_t *json = NULL;

        (void)state;
        event->metadata.name = strdup("e");
        event->metadata.namespace = strdup("default");
        assert_int_equal(xp_event_validate(event, &err), 0);
        /* the newer shape: who reported it and why, within Kubernetes' limits */
        event->event_time = 1796239231123456;
        assert_int_equal(xp_event_validate(event, &err), -EINVAL);
        assert_string_equal(
            err.msg, "reportingComponent: Required value: an event with an eventTime needs it");
        event->reporting_component = strdup("xpool.io/scheduler");
        event->reporting_instance = strdup("s0");
        event->action = strdup("Binding");
        memset(long_reason, 'a', 129);
        long_reason[129] = '\0';
        event->reason = strdup(long_reason);
        assert_int_equal(xp_event_validate(event, &err), -EINVAL);
        assert_string_equal(err.msg, "reason: too long: must have at most 128 characters, has 129");
        event->reason[128] = '\0';
        assert_int_equal(xp_event_validate(event, &err), 0);
        event->event_time = INT64_MAX;
        assert_int_equal(xp_event_validate(event, &err), -ERANGE);
        assert_string_equal(err.msg,
                            "eventTime: Invalid value: the time is outside the years 0000 to 9999");
        assert_int_equal(xp_event_to_json(event, &json), -ERANGE);
        assert_null(json);
        event->event_time = -1; /* 1969-12-31T23:59:59.999999Z: present, unlike 0 */
        assert_int_equal(xp_event_to_json(event, &json), 0);
        assert_string_equal(str_at(json, "eventTime"), "1969-12-31T23:59:59.999999Z");
        json_decref(json);

        lease->metadata.name = strdup("l");
        lease->spec.lease_duration_seconds = (struct xp_opt_int64){true, 0};
        assert_int_equal(xp_lease_validate(lease, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0");
        lease->spec.lease_duration_seconds.value = 15;
        lease->spec.renew_time = 1;
        assert_int_equal(xp_lease_validate(lease, &err), 0);
        assert_int_equal(xp_lease_to_json(lease, &json), 0);
        assert_string_equal(str_at(json, "spec/renewTime"), "1970-01-01T00:00:00.000001Z");
        assert_null(at(json, "spec/acquireTime"));
        json_decref(json);

        ns->metadata.name = strdup("ml");
        ns->metadata.namespace = strdup("ml");
        assert_int_equal(xp_namespace_validate(ns, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "metadata.namespace: Invalid value: \"ml\": a Namespace is cluster-scoped and has no namespace");
        free(ns->metadata.namespace);
        ns->metadata.namespace = NULL;
        assert_int_equal(xp_namespace_validate(ns, &err), 0);
        assert_string_equal(xp_namespace_phase_to_string(XP_NAMESPACE_TERMINATING), "Terminating");
        assert_int_equal(xp_namespace_phase_from_string("Active"), XP_NAMESPACE_ACTIVE);
        assert_string_equal(xp_event_type_to_string(XP_EVENT_WARNING), "Warning");
        assert_int_equal(xp_event_type_from_string("Normal"), XP_EVENT_NORMAL);
        assert_int_equal(xp_event_type_from_string("normal"), -EINVAL);
        assert_null(xp_event_type_to_string(XP_EVENT_TYPE_UNSET));

        xp_event_free(event);
        xp_lease_free(lease);
        xp_namespace_free(ns);
}

static void events_about_other_namespaces_are_refused(void **state)
{
        static const char body[] =
            "{\"apiVersion\": \"v1\", \"kind\": \"Event\", \"metadata\": {\"name\": \"e\", \"namespace\": \"kube-system\"},\n"
            " \"involvedObject\": {\"kind\": \"Node\", \"name\": \"n1\"}}";
        struct xp_decode_source source = {.name = "event.json"};
        struct xp_event *event = NULL;
        struct xp_error err = {0};
        json_t *json = json_loads(body, 0, NULL);

        (void)state;
        /* the old shape (no eventTime): events about cluster-scoped objects belong in default */
        assert_int_equal(xp_event_from_json(json, &source, 0, &event, &err), -EINVAL);
        assert_null(event);
        assert_string_equal(
            err.msg,
            "event.json: involvedObject.namespace: Required value: an event in namespace \"kube-system\" must name its object's namespace (events about cluster-scoped objects go in \"default\")");
        /* the newer shape allows kube-system too */
        json_object_set_new(json, "eventTime", json_string("2026-12-02T19:20:31.000000Z"));
        json_object_set_new(json, "reportingComponent", json_string("kubelet"));
        json_object_set_new(json, "reportingInstance", json_string("n1"));
        json_object_set_new(json, "action", json_string("Starting"));
        json_object_set_new(json, "reason", json_string("Starting"));
        if (xp_event_from_json(json, &source, 0, &event, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(event->event_time, 1796239231000000);
        xp_event_free(event);
        json_decref(json);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(decodes_every_modeled_pod_field),
            cmocka_unit_test(encoding_keeps_what_the_client_sent),
            cmocka_unit_test(decoding_leaves_the_body_alone),
            cmocka_unit_test(shared_decoding_keeps_unknown_members_by_reference),
            cmocka_unit_test(pods_and_nodes_round_trip),
            cmocka_unit_test(node_inventory_is_decoded),
            cmocka_unit_test(json_bodies_decode_with_line_and_column),
            cmocka_unit_test(objects_built_in_code_validate_and_encode),
            cmocka_unit_test(values_json_cannot_hold_are_invalid),
            cmocka_unit_test(security_contexts_decode_and_validate),
            cmocka_unit_test(trusted_decoding_skips_validation_not_types),
            cmocka_unit_test(null_and_empty_enums_mean_absent),
            cmocka_unit_test(json_integer_quantities_keep_the_range),
            cmocka_unit_test(inventories_stand_alone),
            cmocka_unit_test(enum_names_round_trip),
            cmocka_unit_test(microtime_parses_and_prints),
            cmocka_unit_test(new_kinds_round_trip),
            cmocka_unit_test(new_kinds_built_in_code_validate),
            cmocka_unit_test(events_about_other_namespaces_are_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
