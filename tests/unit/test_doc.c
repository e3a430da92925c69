/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Document kinds (xpool/doc.h): decoding checked against the API schema with the codec's words,
 * a kind's defaults and validation (with the old object on update), the Scale of a kind with a
 * scale subresource, the path accessors, and ConfigMap (kind_configmap.c) as the worked example.
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

#include "core/schema.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/table.h"

/* JSON written with single quotes, for readability. */
static json_t *js(const char *text)
{
        char *copy = strdup(text);
        json_error_t error;
        json_t *json;

        for (char *p = copy; *p; p++)
                if (*p == '\'')
                        *p = '"';
        json = json_loads(copy, JSON_DECODE_ANY, &error);
        if (!json)
                fail_msg("bad JSON in the test: %s: %s", error.text, copy);
        free(copy);
        return json;
}

static void assert_json_is(const json_t *got, const char *want_text)
{
        json_t *want = js(want_text);

        if (!json_equal((json_t *)got, want)) {
                char *text = json_dumps(got, JSON_COMPACT);

                fail_msg("got %s\nwant %s", text, want_text);
        }
        json_decref(want);
}

/* Decoding text as kind fails with code and exactly message. */
static void decode_fails(
    const struct xp_kind *kind, unsigned flags, const char *text, int code, const char *message)
{
        json_t *json = js(text);
        struct xp_doc *doc = (void *)0x1;
        struct xp_error err = {0};
        int r = xp_doc_from_json(kind, json, NULL, flags, &doc, &err);

        if (r != code || strcmp(err.msg, message) != 0)
                fail_msg("%s\ngot %d \"%s\"\nwant %d \"%s\"", text, r, err.msg, code, message);
        assert_ptr_equal(doc, (void *)0x1);
        json_decref(json);
}

static struct xp_doc *decode(const struct xp_kind *kind, const char *text)
{
        json_t *json = js(text);
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};

        if (xp_doc_from_json(kind, json, NULL, XP_DECODE_STRICT, &doc, &err) < 0)
                fail_msg("%s: %s", text, err.msg);
        json_decref(json);
        return doc;
}

static void configmap_round_trip(void **state)
{
        struct xp_doc *doc;
        json_t *out = NULL;
        const char *first;
        void *it;

        (void)state;
        doc = decode(
            &xp_kind_configmap,
            "{'kind': 'ConfigMap', 'apiVersion': 'v1',"
            " 'metadata': {'name': 'settings', 'namespace': 'default', 'labels': {'a': 'b'}},"
            " 'data': {'mode': 'fast', 'x.y_z-1': ''}, 'binaryData': {'blob': 'AAH/'},"
            " 'immutable': false}");
        assert_string_equal(doc->metadata.name, "settings");
        assert_string_equal(xp_json_str_at(doc->body, "data.mode", NULL), "fast");
        assert_null(json_object_get(doc->body, "metadata"));
        assert_int_equal(xp_doc_to_json(doc, &out), 0);
        /* apiVersion and kind first, then metadata, then the body in its order */
        it = json_object_iter(out);
        first = json_object_iter_key(it);
        assert_string_equal(first, "apiVersion");
        assert_string_equal(json_object_iter_key(json_object_iter_next(out, it)), "kind");
        assert_json_is(json_object_get(out, "binaryData"), "{'blob': 'AAH/'}");
        assert_string_equal(xp_json_str_at(out, "metadata.labels.a", ""), "b");
        json_decref(out);
        xp_doc_free(doc);
}

static void configmap_refusals(void **state)
{
        char *big;
        size_t n = 1024 * 1024 + 1;
        json_t *json;
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};

        (void)state;
        decode_fails(
            &xp_kind_configmap,
            0,
            "{'metadata': {'name': 'c'}, 'data': {'a b': 'x'}}",
            -EINVAL,
            "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");
        decode_fails(&xp_kind_configmap,
                     0,
                     "{'metadata': {'name': 'c'}, 'binaryData': {'..x': 'AA=='}}",
                     -EINVAL,
                     "binaryData[..x]: Invalid value: \"..x\": must not start with '..'");
        decode_fails(&xp_kind_configmap,
                     0,
                     "{'metadata': {'name': 'c'}, 'data': {'k': 'x'}, 'binaryData': {'k': 'AA=='}}",
                     -EINVAL,
                     "data[k]: Invalid value: \"k\": duplicate of key present in binaryData");
        decode_fails(&xp_kind_configmap,
                     0,
                     "{'metadata': {'name': 'c'}, 'binaryData': {'k': 'not base64!'}}",
                     -EINVAL,
                     "binaryData[k]: Invalid value: illegal base64 data");
        /* the schema's types, in the codec's words */
        decode_fails(
            &xp_kind_configmap,
            0,
            "{'metadata': {'name': 'c'}, 'data': {'k': 5}}",
            -EINVAL,
            "data[k]: expected a string, got a number (quote the value to make it a string)");
        decode_fails(&xp_kind_configmap,
                     0,
                     "{'metadata': {'name': 'c'}, 'immutable': 'yes'}",
                     -EINVAL,
                     "immutable: expected a boolean (true or false), got a string");
        decode_fails(&xp_kind_configmap,
                     XP_DECODE_STRICT,
                     "{'metadata': {'name': 'c'}, 'datta': {}}",
                     -EINVAL,
                     "datta: unknown field \"datta\" in ConfigMap");
        decode_fails(&xp_kind_configmap,
                     0,
                     "{'kind': 'Pod', 'metadata': {'name': 'c'}}",
                     -EINVAL,
                     "kind: unexpected kind \"Pod\": expected \"ConfigMap\"");
        decode_fails(&xp_kind_configmap,
                     0,
                     "{'data': {}}",
                     -EINVAL,
                     "metadata.name: Required value: name or generateName is required");
        decode_fails(&xp_kind_configmap,
                     0,
                     "[]",
                     -EINVAL,
                     "expected a ConfigMap object (a mapping), got a list");
        /* without strict decoding an unknown member is kept as it came */
        doc = decode(&xp_kind_configmap, "{'metadata': {'name': 'c'}}");
        xp_doc_free(doc);

        /* 1 MiB of values at most */
        big = malloc(n + 64);
        memset(big, 'x', n);
        big[n] = '\0';
        json = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "name", "c", "data", "k", big);
        assert_int_equal(xp_doc_from_json(&xp_kind_configmap, json, NULL, 0, &doc, &err), -EINVAL);
        assert_string_equal(err.msg, "[]: Too long: may not be more than 1048576 bytes");
        json_decref(json);
        big[n - 1] = '\0';
        json = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "name", "c", "data", "k", big);
        assert_int_equal(xp_doc_from_json(&xp_kind_configmap, json, NULL, 0, &doc, &err), 0);
        xp_doc_free(doc);
        json_decref(json);
        free(big);
}

/* ---- a kind with defaults, validation and a scale subresource, made up for the test ------- */

/* A Lease's schema (spec.leaseDurationSeconds is an int32) under another kind's name. */
static int widget_defaults(struct xp_doc *doc)
{
        if (!xp_json_at(doc->body, "spec.leaseTransitions"))
                return xp_json_set_int_at(doc->body, "spec.leaseTransitions", 1);
        return 0;
}

static int
widget_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const char *holder = xp_json_str_at(doc->body, "spec.holderIdentity", "");

        if (old && strcmp(holder, xp_json_str_at(old->body, "spec.holderIdentity", "")) != 0)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.holderIdentity",
                                     "Invalid value: \"%s\": field is immutable",
                                     holder);
        if (xp_json_int_at(doc->body, "spec.leaseTransitions", 0) > 3)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.leaseTransitions",
                    "Invalid value: %lld: must be no more than 3",
                    (long long)xp_json_int_at(doc->body, "spec.leaseTransitions", 0));
        return 0;
}

static const struct xp_scale_paths widget_scale = {
    .spec_replicas = "spec.leaseTransitions",
    .status_replicas = "status.replicas",
    .label_selector = "spec.selector",
};

XP_DOC_KIND_DECODER(widget_kind)

const struct xp_kind widget_kind = {
    .kind = "Widget",
    .list_kind = "WidgetList",
    .group = "example.com",
    .version = "v1",
    .api_version = "example.com/v1",
    .plural = "widgets",
    .singular = "widget",
    .namespaced = true,
    XP_DOC_KIND_OPS(widget_kind),
    .schema_type = "Lease",
    .doc_defaults = widget_defaults,
    .doc_validate = widget_validate,
    .scale = &widget_scale,
};

static void defaults_and_checks(void **state)
{
        struct xp_doc *doc;
        void *any = NULL;
        struct xp_error err = {0};
        json_t *json;

        (void)state;
        doc = decode(&widget_kind,
                     "{'apiVersion': 'example.com/v1', 'metadata': {'name': 'w'}, 'spec': {}}");
        assert_int_equal(xp_json_int_at(doc->body, "spec.leaseTransitions", 0), 1);
        xp_doc_free(doc);
        /* objects read back from the store are neither defaulted nor checked */
        json = js("{'metadata': {'name': 'w'}, 'spec': {'leaseTransitions': 9}}");
        assert_int_equal(widget_kind.from_json(json, NULL, XP_DECODE_TRUSTED, &any, &err), 0);
        assert_int_equal(xp_json_int_at(((struct xp_doc *)any)->body, "spec.leaseTransitions", 0),
                         9);
        widget_kind.free(any);
        json_decref(json);

        decode_fails(&widget_kind,
                     0,
                     "{'metadata': {'name': 'w'}, 'spec': {'leaseTransitions': 9}}",
                     -EINVAL,
                     "spec.leaseTransitions: Invalid value: 9: must be no more than 3");
        decode_fails(
            &widget_kind,
            0,
            "{'metadata': {'name': 'w'}, 'spec': {'leaseDurationSeconds': 99999999999}}",
            -ERANGE,
            "spec.leaseDurationSeconds: Invalid value: 99999999999: must be a 32-bit integer (between -2147483648 and 2147483647)");
        decode_fails(
            &widget_kind,
            0,
            "{'apiVersion': 'v1', 'metadata': {'name': 'w'}}",
            -EINVAL,
            "apiVersion: Unsupported value: \"v1\": Widget is in apiVersion \"example.com/v1\"");
        decode_fails(
            &widget_kind,
            0,
            "{'metadata': {'name': 'W_1'}}",
            -EINVAL,
            "metadata.name: Invalid value: \"W_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')");
}

static void nesting_is_bounded(void **state)
{
        json_t *json = js("{'metadata': {'name': 'w'}}"), *deep = json_object(), *at = deep;
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};

        (void)state;
        for (int i = 0; i < XP_OBJECT_MAX_DEPTH + 5; i++) {
                json_t *next = json_object();

                json_object_set_new(at, "x", next);
                at = next;
        }
        json_object_set_new(json, "spec", deep);
        assert_int_equal(xp_doc_from_json(&widget_kind, json, NULL, 0, &doc, &err), -E2BIG);
        assert_null(doc);
        json_decref(json);
}

static void update_sees_the_old_object(void **state)
{
        struct xp_doc *doc;
        json_t *stored;
        struct xp_error err = {0};

        (void)state;
        stored = js(
            "{'apiVersion': 'example.com/v1', 'kind': 'Widget', 'metadata': {'name': 'w'}, 'spec': {'holderIdentity': 'a'}}");
        doc = decode(&widget_kind, "{'metadata': {'name': 'w'}, 'spec': {'holderIdentity': 'b'}}");
        assert_int_equal(widget_kind.validate_update(doc, stored, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "spec.holderIdentity: Invalid value: \"b\": field is immutable");
        xp_doc_free(doc);
        doc = decode(&widget_kind, "{'metadata': {'name': 'w'}, 'spec': {'holderIdentity': 'a'}}");
        assert_int_equal(widget_kind.validate_update(doc, stored, &err), 0);
        xp_doc_free(doc);
        json_decref(stored);

        /* an immutable ConfigMap keeps its data, and stays immutable */
        stored = js("{'metadata': {'name': 'c'}, 'data': {'a': 'b'}, 'immutable': true}");
        doc = decode(&xp_kind_configmap,
                     "{'metadata': {'name': 'c'}, 'data': {'a': 'c'}, 'immutable': true}");
        assert_int_equal(xp_kind_configmap.validate_update(doc, stored, &err), -EINVAL);
        assert_string_equal(err.msg, "data: Forbidden: field is immutable when `immutable` is set");
        xp_doc_free(doc);
        doc = decode(&xp_kind_configmap,
                     "{'metadata': {'name': 'c', 'labels': {'x': 'y'}}, 'data': {'a': 'b'}}");
        assert_int_equal(xp_kind_configmap.validate_update(doc, stored, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "immutable: Forbidden: field is immutable when `immutable` is set");
        xp_doc_free(doc);
        doc = decode(
            &xp_kind_configmap,
            "{'metadata': {'name': 'c', 'labels': {'x': 'y'}}, 'data': {'a': 'b'}, 'immutable': true}");
        assert_int_equal(xp_kind_configmap.validate_update(doc, stored, &err), 0);
        xp_doc_free(doc);
        json_decref(stored);
        /* a mutable one changes freely */
        stored = js("{'metadata': {'name': 'c'}, 'data': {'a': 'b'}}");
        doc = decode(&xp_kind_configmap,
                     "{'metadata': {'name': 'c'}, 'data': {'a': 'c'}, 'immutable': true}");
        assert_int_equal(xp_kind_configmap.validate_update(doc, stored, &err), 0);
        xp_doc_free(doc);
        json_decref(stored);
}

static void scale_of_a_kind(void **state)
{
        json_t *object, *scale = NULL;

        (void)state;
        object = js(
            "{'apiVersion': 'example.com/v1', 'kind': 'Widget',"
            " 'metadata': {'name': 'w', 'namespace': 'ns', 'uid': 'u1', 'resourceVersion': '7', 'labels': {'a': 'b'}},"
            " 'spec': {'leaseTransitions': 3, 'selector': {'matchLabels': {'tier': 'a', 'app': 'web'},"
            "   'matchExpressions': [{'key': 'env', 'operator': 'In', 'values': ['prod', 'dev']},"
            "                        {'key': 'canary', 'operator': 'DoesNotExist'},"
            "                        {'key': 'gpu', 'operator': 'Exists'},"
            "                        {'key': 'zone', 'operator': 'NotIn', 'values': ['b']}]}},"
            " 'status': {'replicas': 2}}");
        assert_int_equal(xp_doc_scale(&widget_kind, object, &scale), 0);
        assert_json_is(
            scale,
            "{'kind': 'Scale', 'apiVersion': 'autoscaling/v1',"
            " 'metadata': {'name': 'w', 'namespace': 'ns', 'uid': 'u1', 'resourceVersion': '7'},"
            " 'spec': {'replicas': 3},"
            " 'status': {'replicas': 2, 'selector': 'app=web,!canary,env in (dev,prod),gpu,tier=a,zone notin (b)'}}");
        json_decref(scale);
        json_decref(object);
        /* nothing set: zeros, no selector */
        object = js("{'metadata': {'name': 'w'}}");
        assert_int_equal(xp_doc_scale(&widget_kind, object, &scale), 0);
        assert_json_is(
            scale,
            "{'kind': 'Scale', 'apiVersion': 'autoscaling/v1', 'metadata': {'name': 'w'}, 'spec': {'replicas': 0}, 'status': {'replicas': 0}}");
        json_decref(scale);
        assert_int_equal(xp_doc_scale(&xp_kind_configmap, object, &scale), -EINVAL);
        json_decref(object);
}

static void paths(void **state)
{
        json_t *o = js("{'spec': {'replicas': 3, 'name': 'x', 'on': true, 'list': [1]}}");

        (void)state;
        assert_int_equal(xp_json_int_at(o, "spec.replicas", -1), 3);
        assert_int_equal(xp_json_int_at(o, "spec.missing", -1), -1);
        assert_int_equal(xp_json_int_at(o, "spec.name", -1), -1);
        assert_string_equal(xp_json_str_at(o, "spec.name", "d"), "x");
        assert_string_equal(xp_json_str_at(o, "spec.replicas", "d"), "d");
        assert_true(xp_json_bool_at(o, "spec.on", false));
        assert_false(xp_json_bool_at(o, "spec.off", false));
        assert_non_null(xp_json_object_at(o, "spec"));
        assert_null(xp_json_object_at(o, "spec.list"));
        assert_null(xp_json_at(o, "spec.list.x"));
        assert_int_equal(xp_json_set_int_at(o, "status.conditions.count", 2), 0);
        assert_int_equal(xp_json_int_at(o, "status.conditions.count", 0), 2);
        assert_int_equal(xp_json_set_str_at(o, "spec.name", "y"), 0);
        assert_string_equal(xp_json_str_at(o, "spec.name", ""), "y");
        assert_int_equal(xp_json_set_int_at(o, "spec.list.x", 1), -EINVAL);
        assert_int_equal(xp_json_set_at(o, "spec.name", NULL), 0);
        assert_null(xp_json_at(o, "spec.name"));
        json_decref(o);
}

static void configmap_table(void **state)
{
        json_t *items =
            js("[{'metadata': {'name': 'c', 'creationTimestamp': '2026-12-02T11:57:00Z'},"
               " 'data': {'a': 'b', 'c': 'd'}, 'binaryData': {'e': 'AA=='}}]");
        json_t *table = NULL;

        (void)state;
        assert_int_equal(
            xp_table_build("ConfigMap", items, "1", 1764676800, XP_TABLE_INCLUDE_NONE, &table), 0);
        assert_json_is(
            json_object_get(json_array_get(json_object_get(table, "columnDefinitions"), 1), "name"),
            "'Data'");
        assert_json_is(
            json_array_get(
                json_object_get(json_array_get(json_object_get(table, "rows"), 0), "cells"), 1),
            "3");
        json_decref(table);
        json_decref(items);
}

static void serviceaccount_table(void **state)
{
        json_t *items =
            js("[{'metadata': {'name': 'web', 'creationTimestamp': '2025-12-02T11:57:00Z'},"
               " 'secrets': [{'name': 'a'}, {'name': 'b'}]}, {'metadata': {'name': 'default',"
               " 'creationTimestamp': '2025-12-02T11:57:00Z'}}]");
        json_t *table = NULL, *rows;

        (void)state;
        assert_int_equal(
            xp_table_build("ServiceAccount", items, "1", 1764676800, XP_TABLE_INCLUDE_NONE, &table),
            0);
        assert_json_is(
            json_object_get(json_array_get(json_object_get(table, "columnDefinitions"), 1), "name"),
            "'Secrets'");
        rows = json_object_get(table, "rows");
        assert_json_is(json_object_get(json_array_get(rows, 0), "cells"), "['web', 2, '3m']");
        assert_json_is(json_object_get(json_array_get(rows, 1), "cells"), "['default', 0, '3m']");
        json_decref(table);
        json_decref(items);
}

/* Decoding text as an update of old fails with exactly message. */
static void update_fails(const struct xp_kind *kind,
                         const char *old_text,
                         const char *text,
                         const char *message)
{
        struct xp_doc *old = decode(kind, old_text), *doc = decode(kind, text);
        struct xp_error err = {0};

        assert_int_equal(xp_doc_validate(doc, old, &err), -EINVAL);
        if (strcmp(err.msg, message) != 0)
                fail_msg("got \"%s\"\nwant \"%s\"", err.msg, message);
        xp_doc_free(doc);
        xp_doc_free(old);
}

static void quota_update_rules(void **state)
{
        const char *best =
            "{'metadata': {'name': 'q'}, 'spec': {'hard': {'pods': '2'}, 'scopes': ['BestEffort']}}";
        struct xp_doc *old = decode(&xp_kind_resourcequota, best), *doc;
        struct xp_error err = {0};

        (void)state;
        /* the spec is checked again on an update, as on a create */
        doc = decode(&xp_kind_resourcequota, best);
        assert_int_equal(json_object_set_new((json_t *)xp_json_at(doc->body, "spec.hard"),
                                             "pods",
                                             json_string("-1")),
                         0);
        assert_int_equal(xp_doc_validate(doc, old, &err), -EINVAL);
        assert_string_equal(
            err.msg, "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0");
        xp_doc_free(doc);
        /* scopes are immutable (compared as sets) */
        update_fails(
            &xp_kind_resourcequota,
            best,
            "{'metadata': {'name': 'q'}, 'spec': {'hard': {'pods': '2'}, 'scopes': ['NotBestEffort']}}",
            "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"NotBestEffort\"}: field is immutable");
        update_fails(
            &xp_kind_resourcequota,
            best,
            "{'metadata': {'name': 'q'}, 'spec': {'hard': {'pods': '2'}}}",
            "spec.scopes: Invalid value: []core.ResourceQuotaScope(nil): field is immutable");
        doc = decode(
            &xp_kind_resourcequota,
            "{'metadata': {'name': 'q'}, 'spec': {'hard': {'pods': '5'}, 'scopes': ['BestEffort']}}");
        assert_int_equal(xp_doc_validate(doc, old, &err), 0);
        xp_doc_free(doc);
        xp_doc_free(old);
}

static void secret_rules(void **state)
{
        struct xp_doc *doc;
        json_t *stored;
        struct xp_error err = {0};

        (void)state;
        /* stringData lands in data (base64, over a key of the same name), type defaults */
        doc = decode(
            &xp_kind_secret,
            "{'metadata': {'name': 's'}, 'data': {'a': 'eA==', 'b': 'eA=='}, 'stringData': {'b': 'hunter2'}}");
        assert_json_is(doc->body, "{'data': {'a': 'eA==', 'b': 'aHVudGVyMg=='}, 'type': 'Opaque'}");
        stored = js("{'metadata': {'name': 's'}, 'data': {'a': 'eA=='}, 'type': 'Opaque'}");
        xp_doc_free(doc);
        doc = decode(&xp_kind_secret, "{'metadata': {'name': 's'}, 'type': 'Other'}");
        assert_int_equal(xp_kind_secret.validate_update(doc, stored, &err), -EINVAL);
        assert_string_equal(err.msg, "type: Invalid value: \"Other\": field is immutable");
        xp_doc_free(doc);
        json_decref(stored);
        decode_fails(
            &xp_kind_secret,
            0,
            "{'metadata': {'name': 's'}, 'type': 'kubernetes.io/tls', 'data': {'tls.crt': 'AA=='}}",
            -EINVAL,
            "data[tls.key]: Required value");
        decode_fails(
            &xp_kind_secret,
            0,
            "{'metadata': {'name': 's'}, 'type': 'kubernetes.io/dockerconfigjson', 'data': {'.dockerconfigjson': 'eA=='}}",
            -EINVAL,
            "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": not a JSON object");
        decode_fails(&xp_kind_secret,
                     0,
                     "{'metadata': {'name': 's'}, 'type': 'kubernetes.io/service-account-token'}",
                     -EINVAL,
                     "metadata.annotations[kubernetes.io/service-account.name]: Required value");
        decode_fails(&xp_kind_secret,
                     0,
                     "{'metadata': {'name': 's'}, 'data': {'k': '%%%'}}",
                     -EINVAL,
                     "data[k]: Invalid value: illegal base64 data");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(configmap_round_trip),
            cmocka_unit_test(configmap_refusals),
            cmocka_unit_test(defaults_and_checks),
            cmocka_unit_test(nesting_is_bounded),
            cmocka_unit_test(update_sees_the_old_object),
            cmocka_unit_test(scale_of_a_kind),
            cmocka_unit_test(paths),
            cmocka_unit_test(configmap_table),
            cmocka_unit_test(serviceaccount_table),
            cmocka_unit_test(quota_update_rules),
            cmocka_unit_test(secret_rules),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
