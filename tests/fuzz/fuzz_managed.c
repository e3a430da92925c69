/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_managed_update() (the Update entries of writes other than apply) on the built-in
 * Pod type. The input is JSON: [live, object] (live may be null: a create), where either may
 * carry managedFields of any shape, as a client's write can. For each input:
 *
 *   - the update succeeds (or -ENOMEM) and leaves managedFields absent or a list of entries
 *     that each have a manager and a fieldsV1 object;
 *   - recording the result again over itself changes nothing (a write that changes no field
 *     leaves the entries alone).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xpool/apischema.h"
#include "xpool/managedfields.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "fuzz_managed: %s\n", what);
                __builtin_trap();
        }
}

static void check_entries(const json_t *object)
{
        const json_t *fields =
            json_object_get(json_object_get(object, "metadata"), "managedFields");
        const json_t *e;
        size_t i;

        if (!fields)
                return;
        check(json_is_array(fields) && json_array_size(fields) > 0, "managedFields not a list");
        json_array_foreach(fields, i, e)
        {
                check(json_is_object(e), "an entry is not an object");
                check(json_is_object(json_object_get(e, "fieldsV1")), "an entry without fieldsV1");
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const struct xp_apischema *schema;
        static const struct xp_apitype *pod;
        const struct xp_apply_request req = {.manager = "fuzz", .api_version = "v1", .now = "t"};
        json_t *input, *live, *object, *again;
        int r;

        if (!schema) {
                check(xp_apischema_builtin(&schema, NULL) == 0, "the built-in schema");
                pod = xp_apischema_find(schema, "Pod");
                check(pod != NULL, "no Pod type");
        }
        input = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
        if (!input)
                return 0;
        live = json_array_get(input, 0);
        object = json_deep_copy(json_array_get(input, 1));
        if (!json_is_array(input) || json_array_size(input) != 2 || !json_is_object(object) ||
            (!json_is_null(live) && !json_is_object(live))) {
                json_decref(object);
                json_decref(input);
                return 0;
        }
        if (json_is_null(live))
                live = NULL;
        r = xp_managed_update(pod, live, object, &req);
        check(r == 0 || r == -ENOMEM, "an error other than -ENOMEM");
        if (r == 0) {
                check_entries(object);
                again = json_deep_copy(object);
                check(again != NULL, "copy");
                if (xp_managed_update(pod, object, again, &req) == 0)
                        check(json_equal(again, object), "an unchanged write changed the entries");
                json_decref(again);
        }
        json_decref(object);
        json_decref(input);
        return 0;
}
