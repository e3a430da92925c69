/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for xp_yaml_dump(): every document xp_yaml_load() reads from any bytes must
 * dump to YAML that loads back as exactly one document equal to it (json_equal), and dumping
 * all of them as one stream must load back as the same documents.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reload(const char *text, size_t len, json_t *const *want, size_t n)
{
        struct xp_yaml_document *docs = NULL;
        struct xp_error err = {0};
        size_t got = 0;
        int r;

        r = xp_yaml_load(text, len, "dump.yaml", &docs, &got, &err);
        if (r < 0) {
                fprintf(stderr, "dump does not load: %s\n--- dump:\n%s\n", err.msg, text);
                __builtin_trap();
        }
        if (got != n) {
                fprintf(stderr, "%zu documents back, %zu dumped\n--- dump:\n%s\n", got, n, text);
                __builtin_trap();
        }
        for (size_t i = 0; i < n; i++)
                if (!json_equal(docs[i].root, want[i])) {
                        char *back = json_dumps(docs[i].root, JSON_ENCODE_ANY);
                        char *orig = json_dumps(want[i], JSON_ENCODE_ANY);

                        fprintf(stderr,
                                "document %zu differs\n--- dumped:\n%s\n--- read back:\n%s\n"
                                "--- dump:\n%s\n",
                                i,
                                orig ? orig : "?",
                                back ? back : "?",
                                text);
                        __builtin_trap();
                }
        xp_yaml_documents_free(docs, got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_yaml_document *docs = NULL;
        struct xp_error err = {0};
        json_t **roots;
        size_t n = 0;
        char *text;
        size_t len;

        if (xp_yaml_load((const char *)data, size, "fuzz.yaml", &docs, &n, &err) < 0)
                return 0;
        roots = calloc(n ? n : 1, sizeof(*roots));
        if (!roots)
                abort();
        for (size_t i = 0; i < n; i++) {
                int r = xp_yaml_dump(docs[i].root, &text, &len);

                if (r < 0) {
                        fprintf(stderr, "dump of document %zu failed: %d\n", i, r);
                        __builtin_trap();
                }
                if (strlen(text) != len)
                        __builtin_trap();
                check_reload(text, len, &docs[i].root, 1);
                free(text);
                roots[i] = docs[i].root;
        }
        if (n > 1) {
                if (xp_yaml_dump_documents(roots, n, &text, &len) < 0)
                        __builtin_trap();
                check_reload(text, len, roots, n);
                free(text);
        }
        free(roots);
        xp_yaml_documents_free(docs, n);
        return 0;
}
