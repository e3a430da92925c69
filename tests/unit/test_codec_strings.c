/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xp_codec_strings_begin()/_end(): a create's encode takes references to the body's string nodes
 * its decode copied, and never a node whose text is not the model's.
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
#include "xpool/object.h"

static const char pod_text[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"trainer\",\"namespace\":"
    "\"default\",\"labels\":{\"app\":\"train\"}},\"spec\":{\"containers\":[{\"name\":\"main\","
    "\"image\":\"registry.example/train:1.2\",\"args\":[\"--epochs\",\"12\"]}]}}";

static json_t *body(void)
{
        json_t *json = json_loads(pod_text, 0, NULL);

        assert_non_null(json);
        return json;
}

static json_t *image_of(json_t *pod)
{
        json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");

        return json_object_get(json_array_get(containers, 0), "image");
}

static struct xp_pod *decode(const json_t *json, unsigned flags)
{
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;

        assert_int_equal(xp_pod_from_json(json, NULL, flags, &pod, &err), 0);
        return pod;
}

static char *text_of(const struct xp_pod *pod)
{
        json_t *json = NULL;
        char *text;

        assert_int_equal(xp_pod_to_json(pod, &json), 0);
        text = json_dumps(json, JSON_COMPACT);
        json_decref(json);
        assert_non_null(text);
        return text;
}

/* The encode's image is the body's node, which outlives the body it came from. */
static void encode_shares_the_bodys_nodes(void **state)
{
        json_t *json = body(), *image = json_incref(image_of(json)), *out = NULL;
        struct xp_pod *pod;
        char *plain;
        (void)state;

        pod = decode(json, XP_DECODE_SHARE);
        plain = text_of(pod); /* no table open: nodes of its own */
        xp_pod_free(pod);

        xp_codec_strings_begin();
        pod = decode(json, XP_DECODE_SHARE);
        json_decref(json); /* as create_json() does, right after the decode */
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        xp_pod_free(pod);
        xp_codec_strings_end();
        assert_ptr_equal(image_of(out), image);
        assert_int_equal(image->refcount, 2); /* the test's and the tree's */
        char *shared = json_dumps(out, JSON_COMPACT);
        assert_string_equal(shared, plain);
        json_decref(out);
        assert_int_equal(image->refcount, 1);
        json_decref(image);
        free(shared);
        free(plain);
}

/* Without the table, or a decode that may not keep the body (no XP_DECODE_SHARE), nothing is
 * shared. */
static void shares_only_inside_and_with_share(void **state)
{
        json_t *json = body(), *out = NULL;
        struct xp_pod *pod;
        (void)state;

        pod = decode(json, XP_DECODE_SHARE);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        assert_ptr_not_equal(image_of(out), image_of(json));
        json_decref(out);
        xp_pod_free(pod);

        xp_codec_strings_begin();
        pod = decode(json, 0);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        assert_ptr_not_equal(image_of(out), image_of(json));
        assert_int_equal(image_of(json)->refcount, 1);
        json_decref(out);
        xp_pod_free(pod);
        xp_codec_strings_end();
        json_decref(json);
}

/* A model string changed after the decode, in place or made anew, is encoded as it now reads. */
static void a_changed_string_is_not_shared(void **state)
{
        json_t *json = body(), *out = NULL;
        struct xp_pod *pod;
        (void)state;

        xp_codec_strings_begin();
        pod = decode(json, XP_DECODE_SHARE);
        pod->spec.containers.items[0].image[0] = 'R'; /* same address, other text */
        free(pod->metadata.name);
        pod->metadata.name = strdup("trainer-2");
        assert_non_null(pod->metadata.name);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        assert_string_equal(json_string_value(image_of(out)), "Registry.example/train:1.2");
        assert_ptr_not_equal(image_of(out), image_of(json));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(out, "metadata"), "name")),
            "trainer-2");
        /* the body's own nodes are as they were */
        assert_string_equal(json_string_value(image_of(json)), "registry.example/train:1.2");
        json_decref(out);
        xp_pod_free(pod);
        xp_codec_strings_end();
        json_decref(json);
}

/* More strings than the table holds: the rest get nodes of their own, the text is the same. */
static void a_pod_past_the_table(void **state)
{
        json_t *json = body(), *labels, *out = NULL;
        struct xp_pod *pod;
        char key[32], *plain, *shared;
        (void)state;

        labels = json_object_get(json_object_get(json, "metadata"), "labels");
        for (int i = 0; i < 600; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                assert_int_equal(json_object_set_new(labels, key, json_sprintf("v%d", i)), 0);
        }
        pod = decode(json, XP_DECODE_SHARE);
        plain = text_of(pod);
        xp_pod_free(pod);

        xp_codec_strings_begin();
        xp_codec_strings_begin(); /* a second begin ends the first: nothing held twice */
        pod = decode(json, XP_DECODE_SHARE);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        xp_pod_free(pod);
        xp_codec_strings_end();
        xp_codec_strings_end();
        json_decref(json);
        shared = json_dumps(out, JSON_COMPACT);
        json_decref(out);
        assert_string_equal(shared, plain);
        free(shared);
        free(plain);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(encode_shares_the_bodys_nodes),
            cmocka_unit_test(shares_only_inside_and_with_share),
            cmocka_unit_test(a_changed_string_is_not_shared),
            cmocka_unit_test(a_pod_past_the_table),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
