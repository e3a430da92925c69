/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The whole path a manifest takes: YAML -> objects (validated) -> JSON -> objects again. The first
 * byte picks strict decoding. Every object that loads must encode, its encoding must decode and
 * validate again (what passed once passes always), and encode to the same JSON.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/kind.h"
#include "xpool/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

/* Every kind through its table entry, so a kind added to the table is fuzzed too. */
static void check_round_trip(const struct xp_manifest_object *object, unsigned flags)
{
        const struct xp_kind *type = object->type;
        struct xp_error err = {0};
        json_t *first = NULL, *second = NULL, *parsed;
        void *again = NULL;
        char *text;

        check(type != NULL && type == xp_kind_by_name(xp_object_kind_to_string(object->kind)));
        check(type->to_json(object->object, &first) == 0);
        check(type->validate(object->object, &err) == 0);
        text = json_dumps(first, JSON_COMPACT);
        check(text != NULL);
        parsed = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        check(parsed != NULL);
        check(type->from_json(parsed, NULL, flags, &again, &err) == 0);
        check(type->to_json(again, &second) == 0);
        check(json_equal(first, second));
        free(text);
        json_decref(parsed);
        json_decref(first);
        json_decref(second);
        type->free(again);
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
