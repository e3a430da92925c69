/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xp_codec_body_begin()/_end(): a create's encode takes references to the body's nodes its decode
 * read (strings, lists and maps of strings, resource lists), and never a node that does not read
 * as the model now does.
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
#include "xpool/quantity.h"
#include "xpool/resource.h"
#include "xpool/strmap.h"

static const char pod_text[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"trainer\",\"namespace\":"
    "\"default\",\"labels\":{\"app\":\"train\"}},\"spec\":{\"containers\":[{\"name\":\"main\","
    "\"image\":\"registry.example/train:1.2\",\"args\":[\"--epochs\",\"12\"]}]}}";

/* Members in the order the encode writes them: sorted keys, canonical quantities. */
static const char parts_text[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"trainer\",\"labels\":{"
    "\"app\":\"train\",\"job\":\"llm\"}},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":"
    "\"train:1\",\"command\":[\"python\",\"train.py\"],\"resources\":{\"limits\":{\"cpu\":\"8\","
    "\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"4\"}}}],\"nodeSelector\":{\"gpu\":\"H100\"}}}";

static json_t *parse(const char *text)
{
        json_t *json = json_loads(text, 0, NULL);

        assert_non_null(json);
        return json;
}

static json_t *at(json_t *pod, const char *path)
{
        char copy[128], *save = NULL;

        snprintf(copy, sizeof(copy), "%s", path);
        for (char *step = strtok_r(copy, ".", &save); pod && step;
             step = strtok_r(NULL, ".", &save))
                pod = json_is_array(pod) ? json_array_get(pod, (size_t)atoi(step))
                                         : json_object_get(pod, step);
        return pod;
}

static const char *const parts[] = {"metadata.labels",
                                    "spec.nodeSelector",
                                    "spec.containers.0.command",
                                    "spec.containers.0.resources.limits"};

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

        xp_codec_body_begin();
        pod = decode(json, XP_DECODE_SHARE);
        json_decref(json); /* as create_json() does, right after the decode */
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        xp_pod_free(pod);
        xp_codec_body_end();
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

        xp_codec_body_begin();
        pod = decode(json, 0);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        assert_ptr_not_equal(image_of(out), image_of(json));
        assert_int_equal(image_of(json)->refcount, 1);
        json_decref(out);
        xp_pod_free(pod);
        xp_codec_body_end();
        json_decref(json);
}

/* A model string changed after the decode, in place or made anew, is encoded as it now reads. */
static void a_changed_string_is_not_shared(void **state)
{
        json_t *json = body(), *out = NULL;
        struct xp_pod *pod;
        (void)state;

        xp_codec_body_begin();
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
        xp_codec_body_end();
        json_decref(json);
}

/* More strings than the table holds: the rest get nodes of their own, the text is the same. */
static void a_pod_past_the_table(void **state)
{
        json_t *json = body(), *args, *out = NULL;
        struct xp_pod *pod;
        char *plain, *shared;
        (void)state;

        args = json_object_get(json_array_get(at(json, "spec.containers"), 0), "args");
        for (int i = 0; i < 600; i++) /* each noted: the table fills */
                assert_int_equal(json_array_append_new(args, json_sprintf("--a%d", i)), 0);
        pod = decode(json, XP_DECODE_SHARE);
        plain = text_of(pod);
        xp_pod_free(pod);

        xp_codec_body_begin();
        xp_codec_body_begin(); /* a second begin ends the first: nothing held twice */
        pod = decode(json, XP_DECODE_SHARE);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        xp_pod_free(pod);
        xp_codec_body_end();
        xp_codec_body_end();
        json_decref(json);
        shared = json_dumps(out, JSON_COMPACT);
        json_decref(out);
        assert_string_equal(shared, plain);
        free(shared);
        free(plain);
}

/* A map's values are copies the map makes: noted once, as the map, they leave room for the rest. */
static void many_labels_leave_room(void **state)
{
        json_t *json = body(), *labels, *out = NULL;
        struct xp_pod *pod;
        char key[32];
        (void)state;

        labels = at(json, "metadata.labels");
        for (int i = 0; i < 600; i++) {
                snprintf(key, sizeof(key), "k%03d", i);
                assert_int_equal(json_object_set_new(labels, key, json_sprintf("v%d", i)), 0);
        }
        xp_codec_body_begin();
        pod = decode(json, XP_DECODE_SHARE);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        xp_pod_free(pod);
        xp_codec_body_end();
        assert_ptr_equal(image_of(out), image_of(json)); /* decoded after the labels */
        json_decref(out);
        json_decref(json);
}

/* Lists, maps and resource lists that read as the encode writes them are the body's nodes. */
static void parts_are_shared(void **state)
{
        json_t *json = parse(parts_text), *out = NULL;
        struct xp_pod *pod;
        char *plain, *shared;
        (void)state;

        pod = decode(json, XP_DECODE_SHARE);
        plain = text_of(pod);
        xp_pod_free(pod);

        xp_codec_body_begin();
        pod = decode(json, XP_DECODE_SHARE);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        xp_pod_free(pod);
        xp_codec_body_end();
        for (size_t i = 0; i < sizeof(parts) / sizeof(*parts); i++) {
                assert_non_null(at(out, parts[i]));
                assert_ptr_equal(at(out, parts[i]), at(json, parts[i]));
        }
        json_decref(json); /* the stored tree holds what it shares */
        shared = json_dumps(out, JSON_COMPACT);
        json_decref(out);
        assert_string_equal(shared, plain);
        free(shared);
        free(plain);
}

/* A part changed after the decode (an entry added, an item rewritten, a value set) is made anew. */
static void changed_parts_are_made_anew(void **state)
{
        json_t *json = parse(parts_text), *out = NULL;
        struct xp_pod *pod;
        struct xp_container *c;
        struct xp_quantity q;
        (void)state;

        xp_codec_body_begin();
        pod = decode(json, XP_DECODE_SHARE);
        c = &pod->spec.containers.items[0];
        assert_int_equal(xp_strmap_set(&pod->metadata.labels, "tier", "gpu"), 0);
        assert_int_equal(xp_strmap_set(&pod->spec.node_selector, "gpu", "A100"), 0);
        c->command.items[1][0] = 'T'; /* the same address, other text */
        assert_int_equal(xp_quantity_parse("6", &q, NULL), 0);
        assert_int_equal(xp_resource_list_set(&c->resources.limits, "cpu", &q), 0);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        xp_pod_free(pod);
        xp_codec_body_end();
        for (size_t i = 0; i < sizeof(parts) / sizeof(*parts); i++)
                assert_ptr_not_equal(at(out, parts[i]), at(json, parts[i]));
        assert_string_equal(json_string_value(at(out, "metadata.labels.tier")), "gpu");
        assert_string_equal(json_string_value(at(out, "spec.nodeSelector.gpu")), "A100");
        assert_string_equal(json_string_value(at(out, "spec.containers.0.command.1")), "Train.py");
        assert_string_equal(json_string_value(at(out, "spec.containers.0.resources.limits.cpu")),
                            "6");
        /* and the body reads as it did */
        assert_int_equal(json_object_size(at(json, "metadata.labels")), 2);
        assert_string_equal(json_string_value(at(json, "spec.nodeSelector.gpu")), "H100");
        assert_string_equal(json_string_value(at(json, "spec.containers.0.command.1")), "train.py");
        assert_string_equal(json_string_value(at(json, "spec.containers.0.resources.limits.cpu")),
                            "8");
        json_decref(out);
        json_decref(json);
}

/* A body that does not read as the encode writes (order, a quantity's form, a null) keeps its text.
 */
static void parts_written_otherwise_are_made_anew(void **state)
{
        json_t *json = parse(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"t\",\"labels\":{"
            "\"job\":\"llm\",\"app\":\"train\"}},\"spec\":{\"containers\":[{\"name\":\"main\","
            "\"image\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"8000m\"},\"requests\":{\"cpu\":4}}}],"
            "\"nodeSelector\":{\"gpu\":\"H100\",\"zone\":null}}}");
        json_t *out = NULL;
        struct xp_pod *pod;
        const char *const written_otherwise[] = {"metadata.labels",
                                                 "spec.nodeSelector",
                                                 "spec.containers.0.resources.limits",
                                                 "spec.containers.0.resources.requests"};
        char *text;
        (void)state;

        xp_codec_body_begin();
        pod = decode(json, XP_DECODE_SHARE);
        assert_int_equal(xp_pod_to_json(pod, &out), 0);
        xp_pod_free(pod);
        xp_codec_body_end();
        for (size_t i = 0; i < sizeof(written_otherwise) / sizeof(*written_otherwise); i++)
                assert_ptr_not_equal(at(out, written_otherwise[i]), at(json, written_otherwise[i]));
        text = json_dumps(at(out, "metadata"), JSON_COMPACT);
        assert_string_equal(text,
                            "{\"name\":\"t\",\"labels\":{\"app\":\"train\",\"job\":\"llm\"}}");
        free(text);
        text = json_dumps(at(out, "spec.containers.0.resources"), JSON_COMPACT);
        assert_string_equal(text, "{\"limits\":{\"cpu\":\"8\"},\"requests\":{\"cpu\":\"4\"}}");
        free(text);
        text = json_dumps(at(out, "spec.nodeSelector"), JSON_COMPACT);
        assert_string_equal(text, "{\"gpu\":\"H100\"}");
        free(text);
        json_decref(out);
        json_decref(json);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(encode_shares_the_bodys_nodes),
            cmocka_unit_test(shares_only_inside_and_with_share),
            cmocka_unit_test(a_changed_string_is_not_shared),
            cmocka_unit_test(a_pod_past_the_table),
            cmocka_unit_test(many_labels_leave_room),
            cmocka_unit_test(parts_are_shared),
            cmocka_unit_test(changed_parts_are_made_anew),
            cmocka_unit_test(parts_written_otherwise_are_made_anew),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
