/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The whole path a manifest takes: YAML -> objects (validated) -> JSON -> objects again. The first
 * byte picks strict decoding. Every object that loads must encode, its encoding must decode and
 * validate again (what passed once passes always), and encode to the same JSON.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static int encode(const struct xp_manifest_object *object, json_t **ret)
{
        return object->kind == XP_OBJECT_POD ? xp_pod_to_json(object->pod, ret)
                                             : xp_node_to_json(object->node, ret);
}

static void check_round_trip(const struct xp_manifest_object *object, unsigned flags)
{
        struct xp_manifest_object again = {.kind = object->kind};
        struct xp_error err = {0};
        json_t *first = NULL, *second = NULL;
        char *text;
        int r;

        check(encode(object, &first) == 0);
        text = json_dumps(first, JSON_COMPACT);
        check(text != NULL);
        if (object->kind == XP_OBJECT_POD)
                r = xp_pod_from_json_text(text, strlen(text), "again", flags, &again.pod, &err);
        else
                r = xp_node_from_json_text(text, strlen(text), "again", flags, &again.node, &err);
        check(r == 0);
        check(encode(&again, &second) == 0);
        check(json_equal(first, second));
        free(text);
        json_decref(first);
        json_decref(second);
        if (again.kind == XP_OBJECT_POD)
                xp_pod_free(again.pod);
        else
                xp_node_free(again.node);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_manifest manifest = {0};
        struct xp_error err = {0};
        unsigned flags;
        int r;

        if (size < 1)
                return 0;
        flags = (data[0] & 1) ? XP_DECODE_STRICT : 0;
        r = xp_manifest_load_buffer(
            (const char *)data + 1, size - 1, "fuzz.yaml", flags, &manifest, &err);
        if (r < 0) {
                check(err.code == r && err.msg[0] != '\0');
                check(manifest.n == 0 && manifest.objects == NULL);
                return 0;
        }
        for (size_t i = 0; i < manifest.n; i++)
                check_round_trip(&manifest.objects[i], flags);
        xp_manifest_done(&manifest);
        return 0;
}
