/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xp_protobuf_to_json() over bodies kubectl 1.32 sent (tests/data/protobuf/, captured with a
 * recording proxy in front of the server) and over bodies built here, field by field, for what
 * kubectl never sends: quantities, times, pointer fields, unknown fields and malformed input.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "xpool/codec.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"
#include "xpool/object.h"
#include "xpool/protobuf.h"

#define DATA XPOOL_TEST_DATA "/protobuf/"

/* A message under construction. */
struct buf {
        uint8_t data[4096];
        size_t len;
};

static void put_byte(struct buf *b, uint8_t byte)
{
        assert_true(b->len < sizeof(b->data));
        b->data[b->len++] = byte;
}

static void put_varint(struct buf *b, uint64_t v)
{
        while (v >= 0x80) {
                put_byte(b, (uint8_t)(v | 0x80));
                v >>= 7;
        }
        put_byte(b, (uint8_t)v);
}

static void put_uint(struct buf *b, uint32_t number, uint64_t v)
{
        put_varint(b, (uint64_t)number << 3);
        put_varint(b, v);
}

static void put_bytes(struct buf *b, uint32_t number, const void *p, size_t n)
{
        put_varint(b, (uint64_t)number << 3 | 2);
        put_varint(b, n);
        assert_true(b->len + n <= sizeof(b->data));
        memcpy(b->data + b->len, p, n);
        b->len += n;
}

static void put_str(struct buf *b, uint32_t number, const char *s)
{
        put_bytes(b, number, s, strlen(s));
}

static void put_msg(struct buf *b, uint32_t number, const struct buf *m)
{
        put_bytes(b, number, m->data, m->len);
}

/* A map entry {key = 1, value = 2} with a string value. */
static void put_map(struct buf *b, uint32_t number, const char *key, const char *value)
{
        struct buf entry = {0};

        put_str(&entry, 1, key);
        put_str(&entry, 2, value);
        put_msg(b, number, &entry);
}

/* A map entry whose value is a resource.Quantity {string = 1}. */
static void put_quantity(struct buf *b, uint32_t number, const char *key, const char *value)
{
        struct buf entry = {0}, quantity = {0};

        put_str(&quantity, 1, value);
        put_str(&entry, 1, key);
        put_msg(&entry, 2, &quantity);
        put_msg(b, number, &entry);
}

/* "k8s\0" + runtime.Unknown{typeMeta{apiVersion, kind}, raw, "", ""}, as kubectl writes it. */
static void
envelope(struct buf *out, const char *api_version, const char *kind, const struct buf *raw)
{
        struct buf type_meta = {0};

        memcpy(out->data, "k8s\0", 4);
        out->len = 4;
        put_str(&type_meta, 1, api_version);
        put_str(&type_meta, 2, kind);
        put_msg(out, 1, &type_meta);
        put_msg(out, 2, raw);
        put_str(out, 3, "");
        put_str(out, 4, "");
}

static void load(const char *name, struct buf *ret)
{
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), DATA "%s", name);
        f = fopen(path, "rbe");
        if (!f)
                fail_msg("cannot open %s", path);
        ret->len = fread(ret->data, 1, sizeof(ret->data), f);
        assert_true(feof(f));
        fclose(f);
}

static void assert_json(const json_t *got, const char *want_text)
{
        json_error_t jerr;
        json_t *want = json_loads(want_text, 0, &jerr);

        if (!want)
                fail_msg("bad expected JSON: %s", jerr.text);
        if (!json_equal(got, want)) {
                char *text = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);

                print_error("got:  %s\nwant: %s\n", text, want_text);
                free(text);
                json_decref(want);
                fail();
        }
        json_decref(want);
}

static json_t *decode_ok(const struct buf *b)
{
        struct xp_error err = {0};
        json_t *json = NULL;
        int r = xp_protobuf_to_json(b->data, b->len, &json, &err);

        if (r < 0)
                fail_msg("decoding failed (%d): %s", r, err.msg);
        assert_non_null(json);
        return json;
}

/* Decoding fails with code, leaves *ret alone and says something containing each of needles. */
static void
decode_fails(const void *data, size_t size, int code, const char *needle, const char *needle2)
{
        json_t *sentinel = json_null(), *json = sentinel;
        struct xp_error err = {0};
        int r = xp_protobuf_to_json(data, size, &json, &err);

        if (r != code)
                fail_msg("expected %d, got %d (%s)", code, r, err.msg);
        assert_ptr_equal(json, sentinel);
        assert_int_equal(err.code, code);
        if (needle && !strstr(err.msg, needle))
                fail_msg("\"%s\" not in: %s", needle, err.msg);
        if (needle2 && !strstr(err.msg, needle2))
                fail_msg("\"%s\" not in: %s", needle2, err.msg);
}

static void kubectl_create_namespace(void **state)
{
        struct xp_namespace *ns = NULL;
        struct xp_error err = {0};
        struct buf b;
        json_t *json;

        (void)state;
        load("namespace-x.pb", &b);
        json = decode_ok(&b);
        /* Go writes every unset string and the empty creationTimestamp: none comes out */
        assert_json(
            json,
            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\"},\"spec\":{},\"status\":{}}");
        if (xp_namespace_from_json(json, NULL, XP_DECODE_STRICT, &ns, &err) < 0)
                fail_msg("the API refuses the namespace: %s", err.msg);
        xp_namespace_free(ns);
        json_decref(json);

        load("namespace-team-a.pb", &b);
        json = decode_ok(&b);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(json, "metadata"), "name")),
            "team-a");
        json_decref(json);
}

static void pod_spec_as_kubectl_encodes_it(void **state)
{
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        struct buf b;
        json_t *json;

        (void)state;
        /* PodTemplateSpec of `kubectl create job j --image=busybox -- sh -c 'echo hi'` */
        load("pod-j.pb", &b);
        json = decode_ok(&b);
        assert_json(json,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"j\",\"image\":\"busybox\","
                    "\"command\":[\"sh\",\"-c\",\"echo hi\"],\"resources\":{}}],"
                    "\"restartPolicy\":\"Never\"},\"status\":{}}");
        json_decref(json);

        /* `kubectl create deployment d --image=nginx --image=cuda:12 --port=8080` */
        load("pod-d.pb", &b);
        json = decode_ok(&b);
        assert_json(
            json,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
            "\"metadata\":{\"name\":\"d\",\"namespace\":\"default\",\"labels\":{\"app\":\"d\"}},"
            "\"spec\":{\"containers\":["
            "{\"name\":\"nginx\",\"image\":\"nginx\",\"ports\":[{\"containerPort\":8080}],\"resources\":{}},"
            "{\"name\":\"cuda\",\"image\":\"cuda:12\",\"resources\":{}}]},\"status\":{}}");
        if (xp_pod_from_json(json, NULL, XP_DECODE_STRICT, &pod, &err) < 0)
                fail_msg("the API refuses the pod: %s", err.msg);
        xp_pod_free(pod);
        json_decref(json);
}

static void every_supported_kind_of_field(void **state)
{
        struct buf meta = {0}, time = {0}, spec = {0}, c = {0}, res = {0}, env = {0}, port = {0};
        struct buf tol = {0}, pod = {0}, body = {0};
        struct xp_pod *object = NULL;
        struct xp_error err = {0};
        json_t *json;

        (void)state;
        put_str(&meta, 1, "gpu-job");
        put_str(&meta, 3, "");
        put_uint(&meta, 7, 0);
        put_uint(&time, 1, 1700000000);
        put_uint(&time, 2, 5);
        put_msg(&meta, 8, &time);
        put_map(&meta, 11, "app", "train");
        put_map(&meta, 11, "tier", "");
        put_map(&meta, 12, "note", "hi");
        put_str(&meta, 14, "example.com/keep");

        put_quantity(&res, 1, "nvidia.com/gpu", "1");
        put_quantity(&res, 1, "memory", "1Gi");
        put_quantity(&res, 2, "cpu", "500m");
        put_str(&env, 1, "A");
        put_str(&env, 2, "1");
        put_str(&port, 1, "");
        put_uint(&port, 3, 8080);
        put_str(&port, 4, "TCP");
        put_str(&c, 1, "main");
        put_str(&c, 2, "cuda:12");
        put_str(&c, 4, "");
        put_str(&c, 4, "--x");
        put_msg(&c, 6, &port);
        put_msg(&c, 7, &env);
        put_msg(&c, 8, &res);
        put_uint(&c, 18, 0);
        put_str(&tol, 1, "gpu");
        put_str(&tol, 2, "Exists");
        put_str(&tol, 4, "NoExecute");
        put_uint(&tol, 5, 0);

        put_msg(&spec, 2, &c);
        put_str(&spec, 3, "OnFailure");
        put_uint(&spec, 4, 0); /* a pointer: 0 is kept */
        put_map(&spec, 7, "gpu", "yes");
        put_uint(&spec, 11, 0);
        put_msg(&spec, 22, &tol);
        put_uint(&spec, 25, (uint64_t)-5); /* int32 travels sign-extended */
        put_uint(&spec, 30, 0);

        put_msg(&pod, 1, &meta);
        put_msg(&pod, 2, &spec);
        envelope(&body, "v1", "Pod", &pod);
        json = decode_ok(&body);
        assert_json(
            json,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"gpu-job\","
            "\"creationTimestamp\":\"2023-11-14T22:13:20Z\",\"labels\":{\"app\":\"train\",\"tier\":\"\"},"
            "\"annotations\":{\"note\":\"hi\"},\"finalizers\":[\"example.com/keep\"]},"
            "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"cuda:12\",\"args\":[\"\",\"--x\"],"
            "\"ports\":[{\"containerPort\":8080,\"protocol\":\"TCP\"}],"
            "\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"500m\"}}}],"
            "\"restartPolicy\":\"OnFailure\",\"terminationGracePeriodSeconds\":0,\"nodeSelector\":{\"gpu\":\"yes\"},"
            "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":0}],"
            "\"priority\":-5,\"enableServiceLinks\":false}}");
        /* what comes out is a pod the API takes */
        if (xp_pod_from_json(json, NULL, 0, &object, &err) < 0)
                fail_msg("the API refuses the pod: %s", err.msg);
        xp_pod_free(object);
        json_decref(json);
}

static void repeated_message_fields_merge(void **state)
{
        struct buf first = {0}, second = {0}, ns = {0}, body = {0};
        json_t *json;

        (void)state;
        /* protobuf merges a message field that occurs twice; a scalar's last value wins */
        put_str(&first, 1, "a");
        put_map(&first, 11, "k", "v");
        put_str(&second, 1, "b");
        put_map(&second, 11, "k", "w");
        put_map(&second, 11, "l", "x");
        put_msg(&ns, 1, &first);
        put_msg(&ns, 1, &second);
        envelope(&body, "v1", "Namespace", &ns);
        json = decode_ok(&body);
        assert_json(
            json,
            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"b\",\"labels\":{\"k\":\"w\",\"l\":\"x\"}}}");
        json_decref(json);
}

static void unknown_fields_and_kinds_are_errors(void **state)
{
        struct buf c = {0}, sc = {0}, spec = {0}, pod = {0}, body = {0}, meta = {0};

        (void)state;
        /* a container's securityContext (15) is not in the tables: refused, never dropped */
        put_uint(&sc, 2, 1);
        put_str(&c, 1, "main");
        put_msg(&c, 15, &sc);
        put_msg(&spec, 2, &c);
        put_msg(&spec, 2, &c);
        put_msg(&pod, 2, &spec);
        envelope(&body, "v1", "Pod", &pod);
        decode_fails(body.data,
                     body.len,
                     -EPROTONOSUPPORT,
                     "spec.containers[0]: field number 15 of core/v1 Container",
                     "kubectl apply -f");

        /* managedFields (17) of ObjectMeta */
        put_str(&meta, 17, "x");
        pod.len = 0;
        put_msg(&pod, 1, &meta);
        envelope(&body, "v1", "Namespace", &pod);
        decode_fails(body.data,
                     body.len,
                     -EPROTONOSUPPORT,
                     "metadata: field number 17 of meta/v1 ObjectMeta",
                     NULL);

        /* an unknown field of the object itself */
        pod.len = 0;
        put_uint(&pod, 9, 1);
        envelope(&body, "v1", "Pod", &pod);
        decode_fails(body.data,
                     body.len,
                     -EPROTONOSUPPORT,
                     "the object: field number 9 of core/v1 Pod",
                     NULL);

        /* a kind with no protobuf message (kubectl create deployment's body, renamed) */
        load("deployment-d.pb", &body);
        for (size_t i = 0; i + 10 <= body.len; i++)
                if (memcmp(body.data + i, "Deployment", 10) == 0)
                        memcpy(body.data + i, "Deploymenx", 10);
        decode_fails(body.data,
                     body.len,
                     -EPROTONOSUPPORT,
                     "kind Deploymenx (apiVersion apps/v1)",
                     "kubectl apply -f");
}

/* kubectl create deployment d: the apps/v1 kinds' messages (kind_apps_proto.c) */
static void document_kind_deployment(void **state)
{
        struct buf body = {0};
        json_t *json;

        (void)state;
        load("deployment-d.pb", &body);
        json = decode_ok(&body);
        assert_string_equal(json_string_value(json_object_get(json, "kind")), "Deployment");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(json, "metadata"), "name")), "d");
        assert_non_null(json_object_get(json_object_get(json_object_get(json, "spec"), "selector"),
                                        "matchLabels"));
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(json, "spec"), "replicas")), 2);
        assert_true(
            json_array_size(json_object_get(
                json_object_get(json_object_get(json_object_get(json, "spec"), "template"), "spec"),
                "containers")) == 2);
        json_decref(json);
}

/* IntOrString (util/intstr): {type 0, intVal} or {type 1, strVal}. */
static void put_intstr(struct buf *b, uint32_t number, int is_string, int32_t n, const char *s)
{
        struct buf v = {0};

        put_uint(&v, 1, (uint64_t)is_string);
        if (is_string)
                put_str(&v, 3, s);
        else
                put_uint(&v, 2, (uint64_t)n);
        put_msg(b, number, &v);
}

/* A rolling update's maxSurge and maxUnavailable, of a Deployment and of a DaemonSet. */
static void apps_rolling_update(void **state)
{
        static const char *const kinds[] = {"Deployment", "DaemonSet"};
        /* DeploymentSpec.strategy is field 4, DaemonSetSpec.updateStrategy field 3 */
        static const uint32_t strategy_field[] = {4, 3};
        static const char *const want[] = {
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
            "\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
            "{\"maxUnavailable\":0,\"maxSurge\":\"50%\"}}}}",
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\"},"
            "\"spec\":{\"updateStrategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
            "{\"maxUnavailable\":0,\"maxSurge\":\"50%\"}}}}",
        };

        (void)state;
        for (size_t i = 0; i < 2; i++) {
                struct buf rolling = {0}, strategy = {0}, spec = {0}, meta = {0}, object = {0},
                           body = {0};
                json_t *json;

                put_intstr(&rolling, 1, 0, 0, NULL);
                put_intstr(&rolling, 2, 1, 0, "50%");
                put_str(&strategy, 1, "RollingUpdate");
                put_msg(&strategy, 2, &rolling);
                put_msg(&spec, strategy_field[i], &strategy);
                put_str(&meta, 1, "d");
                put_msg(&object, 1, &meta);
                put_msg(&object, 2, &spec);
                envelope(&body, "apps/v1", kinds[i], &object);
                json = decode_ok(&body);
                assert_json(json, want[i]);
                json_decref(json);
        }
}

/* kubectl create configmap --from-literal --from-file: a document kind's message (kind_*.c) */
static void document_kind_configmap(void **state)
{
        struct buf meta = {0}, cm = {0}, body = {0}, entry = {0};
        static const uint8_t bytes[] = {0x00, 0x01, 0xff};
        json_t *json = NULL;
        struct xp_error err = {0};

        (void)state;
        put_str(&meta, 1, "settings");
        put_msg(&cm, 1, &meta);
        put_map(&cm, 2, "mode", "fast");
        put_str(&entry, 1, "blob");
        put_bytes(&entry, 2, bytes, sizeof(bytes));
        put_msg(&cm, 3, &entry);
        put_uint(&cm, 4, 1);
        envelope(&body, "v1", "ConfigMap", &cm);
        assert_int_equal(xp_protobuf_to_json(body.data, body.len, &json, &err), 0);
        assert_json(json,
                    "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": "
                    "\"settings\"}, \"data\": {\"mode\": \"fast\"}, \"binaryData\": {\"blob\": "
                    "\"AAH/\"}, \"immutable\": true}");
        json_decref(json);
}

static void malformed_bodies(void **state)
{
        static const uint8_t overlong[] = {'k',
                                           '8',
                                           's',
                                           0,
                                           0x0a,
                                           0x80,
                                           0x80,
                                           0x80,
                                           0x80,
                                           0x80,
                                           0x80,
                                           0x80,
                                           0x80,
                                           0x80,
                                           0x80,
                                           0x01};
        struct buf b, meta = {0}, ns = {0}, body = {0}, sub = {0}, c = {0}, spec = {0};

        (void)state;
        load("namespace-x.pb", &b);
        /* every cut inside the object fails; the envelope's last two (empty) fields may go */
        for (size_t n = 0; n < b.len - 4; n++)
                decode_fails(b.data, n, -EBADMSG, NULL, NULL);
        b.data[0] = 'K';
        decode_fails(b.data, b.len, -EBADMSG, "magic", NULL);
        decode_fails(overlong, sizeof(overlong), -EBADMSG, "byte 0", NULL);

        /* a string field sent as a varint */
        put_uint(&meta, 1, 7);
        put_msg(&ns, 1, &meta);
        envelope(&body, "v1", "Namespace", &ns);
        decode_fails(body.data,
                     body.len,
                     -EBADMSG,
                     "metadata.name: field 1 of meta/v1 ObjectMeta is varint on the wire",
                     NULL);

        /* text that is not UTF-8, or holds NUL */
        meta.len = ns.len = 0;
        put_bytes(&meta, 1, "a\xff", 2);
        put_msg(&ns, 1, &meta);
        envelope(&body, "v1", "Namespace", &ns);
        decode_fails(body.data, body.len, -EBADMSG, "metadata.name", "UTF-8");
        meta.len = ns.len = 0;
        put_map(&meta, 11, "a", "b");
        meta.data[meta.len - 1] = 0; /* the value "b" becomes NUL */
        put_msg(&ns, 1, &meta);
        envelope(&body, "v1", "Namespace", &ns);
        decode_fails(body.data, body.len, -EBADMSG, "metadata.labels", NULL);

        /* an empty quantity */
        ns.len = 0;
        put_quantity(&sub, 1, "cpu", "");
        put_msg(&c, 8, &sub);
        put_msg(&spec, 2, &c);
        put_msg(&ns, 2, &spec);
        envelope(&body, "v1", "Pod", &ns);
        decode_fails(
            body.data, body.len, -EBADMSG, "spec.containers[0].resources.limits[cpu]", "empty");

        /* an envelope with a content encoding, or none at all */
        ns.len = 0;
        envelope(&body, "v1", "Namespace", &ns);
        body.len -= 4;
        put_str(&body, 3, "gzip");
        decode_fails(body.data, body.len, -EBADMSG, "content encoding (gzip)", NULL);
        decode_fails("k8s\0", 4, -EBADMSG, "holds no object", NULL);

        /* a group (wire type 3) */
        ns.len = 0;
        put_varint(&ns, 1 << 3 | 3);
        envelope(&body, "v1", "Namespace", &ns);
        decode_fails(body.data, body.len, -EBADMSG, "wire type 3", NULL);
}

static void size_limit(void **state)
{
        uint8_t *big = calloc(1, XP_PROTOBUF_SIZE_MAX + 1);

        (void)state;
        assert_non_null(big);
        memcpy(big, "k8s\0", 4);
        decode_fails(big, XP_PROTOBUF_SIZE_MAX + 1, -E2BIG, "more than", NULL);
        free(big);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(kubectl_create_namespace),
            cmocka_unit_test(pod_spec_as_kubectl_encodes_it),
            cmocka_unit_test(every_supported_kind_of_field),
            cmocka_unit_test(repeated_message_fields_merge),
            cmocka_unit_test(unknown_fields_and_kinds_are_errors),
            cmocka_unit_test(document_kind_configmap),
            cmocka_unit_test(document_kind_deployment),
            cmocka_unit_test(apps_rolling_update),
            cmocka_unit_test(malformed_bodies),
            cmocka_unit_test(size_limit),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
