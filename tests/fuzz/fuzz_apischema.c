/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the API schema: its check of JSON values and its reader of schema text. The first byte
 * picks what the rest is:
 *
 *   bit 2 set: schema text for xp_apischema_parse(); a schema that reads must hold together
 *              (every type found by its name, every field with a value type);
 *   else:      JSON checked as a Pod (bit 0 clear) or a Node (bit 0 set), strictly with bit 1.
 *              Whatever the codec decodes passed the check, and what the codec encodes passes
 *              it again: xpool never writes a value of the wrong type, nor one nested too deep.
 *
 * A refusal is -EINVAL, -ERANGE or -E2BIG with a message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xpool/apischema.h"
#include "xpool/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static void refused(int r, const struct xp_error *err)
{
        check(r == -EINVAL || r == -ERANGE || r == -E2BIG || r == -ENOMEM);
        check(r == -ENOMEM || (err->code == r && err->msg[0] != '\0'));
}

static void fuzz_schema_text(const char *text, size_t len)
{
        struct xp_apischema *schema = NULL;
        struct xp_error err = {0};
        int r = xp_apischema_parse(text, len, &schema, &err);

        if (r < 0) {
                check(!schema);
                refused(r, &err);
                return;
        }
        for (size_t i = 0; i < xp_apischema_count(schema); i++) {
                const struct xp_apitype *t = xp_apischema_type(schema, i);

                check(xp_apischema_find(schema, t->name) == t);
                for (size_t j = 0; j < t->n_fields; j++) {
                        const struct xp_apivalue *v = t->fields[j].value;

                        check(xp_apitype_field(t, t->fields[j].name) == &t->fields[j]);
                        while (v->kind == XP_APIVALUE_LIST || v->kind == XP_APIVALUE_MAP)
                                v = v->element;
                        check(v->kind != XP_APIVALUE_TYPE || v->type != NULL);
                        check(xp_apivalue_kind_to_string(v->kind) != NULL);
                }
        }
        xp_apischema_free(schema);
}

/* Decodes and encodes json as the kind: 0 with *ret, or < 0. */
static int round_trip(bool node, const json_t *json, unsigned flags, json_t **ret)
{
        struct xp_error err = {0};
        int r;

        if (node) {
                struct xp_node *object = NULL;

                r = xp_node_from_json(json, NULL, flags, &object, &err);
                if (r >= 0)
                        r = xp_node_to_json(object, ret);
                xp_node_free(object);
        } else {
                struct xp_pod *object = NULL;

                r = xp_pod_from_json(json, NULL, flags, &object, &err);
                if (r >= 0)
                        r = xp_pod_to_json(object, ret);
                xp_pod_free(object);
        }
        return r;
}

static void fuzz_check(bool node, unsigned flags, const char *text, size_t len)
{
        const struct xp_apischema *schema = NULL;
        const struct xp_apitype *type;
        struct xp_error err = {0};
        json_t *json = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *out = NULL;
        int checked, r;

        if (!json)
                return;
        check(xp_apischema_builtin(&schema, &err) == 0);
        type = xp_apischema_find(schema, node ? "Node" : "Pod");
        check(type != NULL);
        checked = json_is_object(json) ? xp_apischema_check(type, json, flags, &err) : -EINVAL;
        if (checked < 0 && json_is_object(json))
                refused(checked, &err);
        r = round_trip(node, json, flags, &out);
        if (r >= 0) {
                /* decoding ran the check: it passed, and the encoding passes it too */
                check(checked == 0);
                err = (struct xp_error){0};
                r = xp_apischema_check(type, out, flags, &err);
                if (r < 0) {
                        fprintf(stderr, "the codec wrote what the check refuses: %s\n", err.msg);
                        __builtin_trap();
                }
        }
        json_decref(out);
        json_decref(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        if (data[0] & 4)
                fuzz_schema_text((const char *)data + 1, size - 1);
        else
                fuzz_check(data[0] & 1,
                           (data[0] & 2) ? XP_DECODE_STRICT : 0,
                           (const char *)data + 1,
                           size - 1);
        return 0;
}
