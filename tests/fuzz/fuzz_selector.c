/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_label_selector_parse() and xp_field_selector_parse() on the same text. The first
 * byte picks the kind for the field selector (Pod, Node, Event, Namespace, Lease, or an unknown
 * one); the rest is the selector text. Checks that:
 *  - a failure is -EINVAL or -E2BIG with the code and a message set, and *ret untouched;
 *  - text longer than XP_SELECTOR_TEXT_MAX never parses;
 *  - a label selector is empty exactly when the text is blank, and matches the same labels
 *    through a JSON object and through a strmap, and NULL labels like an empty object;
 *  - a field selector is empty exactly when the text holds nothing but commas;
 *  - matching against fixed objects of every kind (and non-objects) does not crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xpool/selector.h"
#include "xpool/strmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kinds[] = {"Pod", "Node", "Event", "Namespace", "Lease", "Widget"};

static const char objects_json[] =
    "[{\"metadata\": {\"name\": \"a\", \"namespace\": \"b\", \"labels\": {\"a\": \"b\", \"n\": \"3\"}},"
    "  \"spec\": {\"nodeName\": \"n1\", \"hostNetwork\": true, \"unschedulable\": false},"
    "  \"status\": {\"phase\": \"Running\", \"podIPs\": [{\"ip\": \"10.0.0.1\"}]}},"
    " {\"involvedObject\": {\"kind\": \"Pod\", \"name\": \"a\"}, \"source\": {\"component\": 1},"
    "  \"reportingComponent\": \"x\", \"reason\": \"r,=\\\\\"},"
    " {\"spec\": [], \"status\": {\"podIPs\": \"x\", \"podIP\": 5}, \"metadata\": null},"
    " [], \"x\", null]";

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static bool is_blank(const char *s)
{
        return s[strspn(s, " \t\r\n")] == '\0';
}

static void fuzz_label(const char *text, json_t *objects)
{
        struct xp_label_selector *s = (struct xp_label_selector *)&s;
        struct xp_strmap map = {0};
        struct xp_error err = {0};
        json_t *labels =
            json_object_get(json_object_get(json_array_get(objects, 0), "metadata"), "labels");
        json_t *empty = json_object();
        int r;

        r = xp_label_selector_parse(text, &s, &err);
        if (r < 0) {
                check(r == -EINVAL || r == -E2BIG);
                check(err.code == r && err.msg[0] != '\0');
                check(s == (struct xp_label_selector *)&s);
                json_decref(empty);
                return;
        }
        check(strlen(text) <= XP_SELECTOR_TEXT_MAX);
        check(xp_label_selector_is_empty(s) == is_blank(text));
        check(xp_label_selector_matches(s, NULL) == xp_label_selector_matches(s, empty));
        check(xp_label_selector_matches(s, NULL) == xp_label_selector_matches_map(s, &map));
        check(xp_strmap_set(&map, "a", "b") == 0 && xp_strmap_set(&map, "n", "3") == 0);
        check(xp_label_selector_matches(s, labels) == xp_label_selector_matches_map(s, &map));
        for (size_t i = 0; i < json_array_size(objects); i++)
                (void)xp_label_selector_matches(s, json_array_get(objects, i));
        xp_strmap_done(&map);
        xp_label_selector_free(s);
        json_decref(empty);
}

static void fuzz_field(const char *text, const char *kind, json_t *objects)
{
        struct xp_field_selector *s = (struct xp_field_selector *)&s;
        struct xp_error err = {0};
        int r;

        r = xp_field_selector_parse(text, kind, &s, &err);
        if (r < 0) {
                check(r == -EINVAL || r == -E2BIG);
                check(err.code == r && err.msg[0] != '\0');
                check(s == (struct xp_field_selector *)&s);
                return;
        }
        check(strlen(text) <= XP_SELECTOR_TEXT_MAX);
        check(xp_field_selector_is_empty(s) == (text[strspn(text, ",")] == '\0'));
        for (size_t i = 0; i < json_array_size(objects); i++)
                (void)xp_field_selector_matches(s, json_array_get(objects, i));
        (void)xp_field_selector_matches(s, NULL);
        xp_field_selector_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static json_t *objects;
        const char *kind;
        char *text;

        if (size == 0)
                return 0;
        if (!objects) {
                objects = json_loads(objects_json, 0, NULL);
                check(objects != NULL);
        }
        kind = data[0] < XP_ELEMENTSOF(kinds) ? kinds[data[0]] : NULL;
        text = strndup((const char *)data + 1, size - 1);
        if (!text)
                return 0;
        fuzz_label(text, objects);
        fuzz_field(text, kind, objects);
        free(text);
        return 0;
}
