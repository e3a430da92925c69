/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_patch_apply() and the merge diffs. The first byte picks the kind for strategic merge
 * patches; the rest is JSON text: either a patch, or a list [patch, a] where a replaces the fixed
 * Pod as the second operand of the diff check. For each input:
 *
 *   - every patch type is applied to the fixed Pod: the Pod never changes, success gives a value,
 *     failure gives -EINVAL, -E2BIG or -ENOMEM with a message; xp_patch_apply_sharing() gives
 *     the same, written byte for byte alike, and changes neither the Pod nor the patch;
 *   - a strategic patch for an unknown kind gives what the merge patch gives;
 *   - with b = the patch value: merge_diff(a, b) applied to a is b, and so is the three-way patch
 *     three_way(a, b, a), whenever b is expressible as a merge patch (no null object members).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xpool/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kinds[] = {"Pod", "Node", "Event", "Namespace", "Lease", "Widget"};

static const char pod_text[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"web\"},"
    "\"finalizers\":[\"a\",\"b\"],\"ownerReferences\":[{\"uid\":\"u1\",\"name\":\"rs\"}]},"
    "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"web\",\"image\":\"nginx\","
    "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}],"
    "\"ports\":[{\"containerPort\":80}],\"volumeMounts\":[{\"mountPath\":\"/d\",\"name\":\"v\"}]},"
    "{\"name\":\"side\",\"image\":\"busybox\"}],\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],"
    "\"tolerations\":[{\"key\":\"k\"}]},"
    "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static void dump_and_trap(const char *what, const json_t *x, const json_t *y)
{
        char *a = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
        char *b = json_dumps(y, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);

        fprintf(stderr, "%s:\n  %s\n  %s\n", what, a ? a : "?", b ? b : "?");
        __builtin_trap();
}

/* Whether a merge patch can produce v: no object member may be null (null means delete). */
static bool expressible(const json_t *v)
{
        const char *key;
        json_t *member;

        if (!json_is_object(v))
                return true;
        json_object_foreach((json_t *)v, key, member) if (json_is_null(member) ||
                                                          !expressible(member)) return false;
        return true;
}

/* The API's sharing variant gives the same answer, member order too, and changes no operand. */
static void check_sharing(enum xp_patch_type type,
                          const char *kind,
                          const json_t *original,
                          const json_t *patch,
                          int r,
                          const struct xp_error *err,
                          const json_t *result)
{
        json_t *original_copy = json_deep_copy(original), *patch_copy = json_deep_copy(patch);
        json_t *shared = NULL;
        struct xp_error shared_err = {0};
        int s = xp_patch_apply_sharing(type, kind, original, patch, &shared, &shared_err);

        check(original_copy != NULL && patch_copy != NULL);
        check(s == r);
        if (r < 0) {
                check(shared == NULL && strcmp(shared_err.msg, err->msg) == 0);
        } else {
                char *want = json_dumps(result, JSON_COMPACT | JSON_ENCODE_ANY);
                char *got = json_dumps(shared, JSON_COMPACT | JSON_ENCODE_ANY);

                check(want != NULL && got != NULL);
                if (strcmp(want, got) != 0)
                        dump_and_trap("the sharing merge differs", result, shared);
                free(want);
                free(got);
        }
        json_decref(shared);
        if (!json_equal(original_copy, original))
                dump_and_trap("the sharing merge changed the original", original_copy, original);
        if (!json_equal(patch_copy, patch))
                dump_and_trap("the sharing merge changed the patch", patch_copy, patch);
        json_decref(original_copy);
        json_decref(patch_copy);
}

static json_t *
apply(enum xp_patch_type type, const char *kind, const json_t *original, const json_t *patch)
{
        json_t *copy = json_deep_copy(original), *result = NULL;
        struct xp_error err = {0};
        int r;

        check(copy != NULL);
        r = xp_patch_apply(type, kind, original, patch, &result, &err);
        if (!json_equal(copy, original))
                dump_and_trap("the original changed", copy, original);
        json_decref(copy);
        check_sharing(type, kind, original, patch, r, &err, result);
        if (r < 0) {
                check(r == -EINVAL || r == -E2BIG || r == -ENOMEM);
                check(err.code == r && err.msg[0] != '\0');
                check(result == NULL);
                return NULL;
        }
        check(r == 0 && result != NULL);
        return result;
}

static void check_diffs(const json_t *a, const json_t *b)
{
        json_t *patch = NULL, *applied;
        int r;

        if (!expressible(b))
                return;
        r = xp_patch_merge_diff(a, b, &patch);
        if (r < 0) {
                check(r == -E2BIG || r == -ENOMEM);
                return;
        }
        applied = apply(XP_PATCH_MERGE, NULL, a, patch);
        if (applied && !json_equal(applied, b))
                dump_and_trap("merge_diff(a, b) applied to a is not b", applied, b);
        json_decref(applied);
        json_decref(patch);

        if (!json_is_object(a) || !json_is_object(b))
                return;
        patch = NULL;
        r = xp_patch_merge_three_way(a, b, a, &patch);
        if (r < 0) {
                check(r == -E2BIG || r == -ENOMEM);
                return;
        }
        applied = apply(XP_PATCH_MERGE, NULL, a, patch);
        if (applied && !json_equal(applied, b))
                dump_and_trap("three_way(a, b, a) applied to a is not b", applied, b);
        json_decref(applied);
        json_decref(patch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static json_t *pod;
        const json_t *patch, *a;
        json_t *input, *merged, *result;
        const char *kind;

        if (!pod) {
                pod = json_loads(pod_text, 0, NULL);
                check(pod != NULL);
        }
        if (size < 1)
                return 0;
        kind = kinds[data[0] % (sizeof(kinds) / sizeof(kinds[0]))];
        input = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY, NULL);
        if (!input)
                return 0;
        patch = input;
        a = pod;
        if (json_is_array(input) && json_array_size(input) == 2 &&
            json_is_object(json_array_get(input, 1))) {
                /* [patch, a]; a list of two JSON patch operations is still applied as a patch */
                result = apply(XP_PATCH_JSON, kind, pod, input);
                json_decref(result);
                patch = json_array_get(input, 0);
                a = json_array_get(input, 1);
        }

        json_decref(apply(XP_PATCH_JSON, kind, pod, patch));
        merged = apply(XP_PATCH_MERGE, kind, pod, patch);
        result = apply(XP_PATCH_STRATEGIC, kind, pod, patch);
        if (strcmp(kind, "Widget") == 0 && !json_equal(merged, result))
                dump_and_trap("strategic for an unknown kind differs from merge", merged, result);
        json_decref(merged);
        json_decref(result);

        check_diffs(a, patch);
        json_decref(input);
        return 0;
}
