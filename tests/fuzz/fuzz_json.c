/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the JSON decoders, xp_pod_from_json_text() and xp_node_from_json_text(). The first byte
 * picks the object (bit 0: Node, else Pod) and the flags (bit 1: XP_DECODE_STRICT); the rest is
 * the JSON text. For every input that decodes, checks that the codec round-trips:
 *
 *   e1 = encode(decode(input))
 *   e2 = encode(decode_trusted(json_dumps(e1)))
 *   e1 == e2 (json_equal)
 *
 * On failure the error code must be negative and a message must be set.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xpool/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

/* Decodes text as a Pod or a Node and encodes it again. Returns 0 with *ret set, or < 0. */
static int decode_encode(
    bool node, const char *text, size_t len, unsigned flags, json_t **ret, struct xp_error *err)
{
        int r;

        if (node) {
                struct xp_node *object = NULL;

                r = xp_node_from_json_text(text, len, NULL, flags, &object, err);
                if (r < 0) {
                        check(!object);
                        return r;
                }
                r = xp_node_to_json(object, ret);
                xp_node_free(object);
        } else {
                struct xp_pod *object = NULL;

                r = xp_pod_from_json_text(text, len, NULL, flags, &object, err);
                if (r < 0) {
                        check(!object);
                        return r;
                }
                r = xp_pod_to_json(object, ret);
                xp_pod_free(object);
        }
        check(r == 0 || r == -ENOMEM);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_error err = {0};
        json_t *first = NULL, *second = NULL;
        unsigned flags;
        char *text;
        bool node;
        int r;

        if (size < 1)
                return 0;
        node = data[0] & 1;
        flags = (data[0] & 2) ? XP_DECODE_STRICT : 0;

        r = decode_encode(node, (const char *)data + 1, size - 1, flags, &first, &err);
        if (r < 0) {
                if (r != -ENOMEM)
                        check(err.code == r && err.msg[0] != '\0');
                return 0;
        }

        text = json_dumps(first, JSON_COMPACT);
        check(text != NULL);
        err = (struct xp_error){0};
        r = decode_encode(node, text, strlen(text), XP_DECODE_TRUSTED, &second, &err);
        if (r < 0) {
                /* what we encoded must decode again */
                fprintf(stderr, "decoding our own encoding failed: %s\n  %s\n", err.msg, text);
                __builtin_trap();
        }
        if (!json_equal(first, second)) {
                char *again = json_dumps(second, JSON_COMPACT | JSON_SORT_KEYS);
                char *before = json_dumps(first, JSON_COMPACT | JSON_SORT_KEYS);

                fprintf(stderr, "round trip changed the object:\n  %s\n  %s\n", before, again);
                __builtin_trap();
        }

        free(text);
        json_decref(first);
        json_decref(second);
        return 0;
}
