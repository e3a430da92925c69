/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A document decoded by reference (XP_DECODE_SHARE) never writes into the JSON it read: an
 * update's candidate shares nodes with the request's patch and with the stored object
 * (xp_patch_apply_sharing()), and a kind's defaults or conversion must change neither.
 */
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
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/patch.h"

/* A Deployment as a client writes it: none of the server's defaults. */
static const char stored_text[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","
    "\"namespace\":\"n\"},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
    "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":"
    "\"c\",\"image\":\"x:1\"}]}}}}";

static json_t *parse(const char *text)
{
        json_t *json = json_loads(text, 0, NULL);

        assert_non_null(json);
        return json;
}

static char *text_of(const json_t *json)
{
        char *text = json_dumps(json, JSON_COMPACT | JSON_SORT_KEYS);

        assert_non_null(text);
        return text;
}

/*
 * The update path: patch merged into stored by reference, the result decoded by reference. The
 * patch and stored read as before; the decoded object has the kind's defaults.
 */
static void patch_then_decode(const char *patch_text)
{
        json_t *stored = parse(stored_text), *patch = parse(patch_text), *patched = NULL, *out;
        char *stored_before = text_of(stored), *patch_before = text_of(patch), *after;
        struct xp_error err = {0};
        void *object = NULL;

        assert_int_equal(
            xp_patch_apply_sharing(XP_PATCH_STRATEGIC, "Deployment", stored, patch, &patched, &err),
            0);
        assert_int_equal(
            xp_kind_deployment.from_json(patched, NULL, XP_DECODE_SHARE, &object, &err), 0);
        after = text_of(patch);
        assert_string_equal(after, patch_before);
        free(after);
        after = text_of(stored);
        assert_string_equal(after, stored_before);
        free(after);
        assert_int_equal(xp_kind_deployment.to_json(object, &out), 0);
        assert_string_equal(xp_json_str_at(out, "spec.strategy.type", ""), "RollingUpdate");
        assert_string_equal(
            xp_json_str_at(json_array_get(xp_json_at(out, "spec.template.spec.containers"), 0),
                           "imagePullPolicy",
                           ""),
            "IfNotPresent");
        json_decref(out);
        xp_kind_deployment.free(object);
        json_decref(patched);
        free(patch_before);
        free(stored_before);
        json_decref(patch);
        json_decref(stored);
}

/* The reviewer's case: a container the patch adds gets its defaults in the object only. */
static void strategic_patch_unchanged(void **state)
{
        (void)state;
        patch_then_decode("{\"spec\":{\"template\":{\"spec\":{\"initContainers\":[{\"name\":\"i\","
                          "\"image\":\"y:1\"}]}}}}");
}

/* A metadata-only patch leaves spec shared with stored: stored gets no defaults. */
static void stored_unchanged(void **state)
{
        (void)state;
        patch_then_decode("{\"metadata\":{\"labels\":{\"x\":\"y\"}}}");
}

/* body decoded by reference as kind: the object, body reading as before. */
static void *decode_unchanged(const struct xp_kind *kind, const json_t *body)
{
        char *before = text_of(body), *after;
        struct xp_error err = {0};
        void *object = NULL;

        assert_int_equal(kind->from_json(body, NULL, XP_DECODE_SHARE, &object, &err), 0);
        after = text_of(body);
        assert_string_equal(after, before);
        free(after);
        free(before);
        return object;
}

/* A create's body decoded by reference: the defaults land in the object, not in the body. */
static void create_body_unchanged(void **state)
{
        json_t *body = parse(stored_text);
        struct xp_doc *doc = decode_unchanged(&xp_kind_deployment, body);

        (void)state;
        assert_string_equal(xp_json_str_at(doc->body, "spec.strategy.type", ""), "RollingUpdate");
        xp_doc_free(doc);
        json_decref(body);
}

/* A Workload written in v1alpha2 is converted to v1alpha1 in the object, not in the body. */
static void workload_conversion_unchanged(void **state)
{
        json_t *body = parse(
            "{\"apiVersion\":\"scheduling.k8s.io/v1alpha2\",\"kind\":\"Workload\",\"metadata\":{"
            "\"name\":\"w\"},\"spec\":{\"podGroupTemplates\":[{\"name\":\"workers\","
            "\"schedulingPolicy\":{\"gang\":{\"minCount\":3}}}]}}");
        struct xp_doc *doc = decode_unchanged(&xp_kind_workload_v1alpha2, body);

        (void)state;
        assert_non_null(xp_json_at(doc->body, "spec.podGroups"));
        xp_doc_free(doc);
        json_decref(body);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(strategic_patch_unchanged),
            cmocka_unit_test(stored_unchanged),
            cmocka_unit_test(create_body_unchanged),
            cmocka_unit_test(workload_conversion_unchanged),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
