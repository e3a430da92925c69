/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_protobuf_to_json() with whole request bodies (seeds: the captured kubectl bodies).
 * A body that decodes must give an object with apiVersion and kind that prints as JSON, the same
 * object every time, and one the Pod or Namespace decoder can take or refuse cleanly; a body
 * that fails must leave *ret alone and say why.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xpool/codec.h"
#include "xpool/object.h"
#include "xpool/protobuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_t *sentinel = json_null(), *json = sentinel, *again = NULL;
        struct xp_error err = {0};
        const char *kind;
        char *text;
        int r;

        r = xp_protobuf_to_json(data, size, &json, &err);
        if (r < 0) {
                check(json == sentinel);
                check(r == -EBADMSG || r == -EPROTONOSUPPORT || r == -E2BIG || r == -ENOMEM);
                if (r != -ENOMEM)
                        check(err.code == r && err.msg[0] != '\0');
                return 0;
        }
        check(json_is_object(json));
        check(json_is_string(json_object_get(json, "apiVersion")));
        kind = json_string_value(json_object_get(json, "kind"));
        check(kind != NULL);
        text = json_dumps(json, JSON_COMPACT);
        check(text != NULL);
        free(text);

        check(xp_protobuf_to_json(data, size, &again, NULL) == 0);
        check(json_equal(json, again));
        json_decref(again);

        err = (struct xp_error){0};
        if (strcmp(kind, "Pod") == 0) {
                struct xp_pod *pod = NULL;

                r = xp_pod_from_json(json, NULL, XP_DECODE_STRICT, &pod, &err);
                check(r == 0 || (r < 0 && err.msg[0] != '\0') || r == -ENOMEM);
                xp_pod_free(pod);
        } else {
                struct xp_namespace *ns = NULL;

                r = xp_namespace_from_json(json, NULL, XP_DECODE_STRICT, &ns, &err);
                check(r == 0 || (r < 0 && err.msg[0] != '\0') || r == -ENOMEM);
                xp_namespace_free(ns);
        }
        json_decref(json);
        return 0;
}
