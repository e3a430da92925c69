/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * JSON for the tests that hold two readers or writers of JSON to the same bytes (include it after
 * cmocka.h): the documents of a manifest file, and random trees of every kind of value, keys and
 * strings that need escapes, non-ASCII text, and (with_nul) a string holding a NUL. A fixed seed
 * gives the same trees each run.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/yaml.h"

/* The documents of the YAML file at path as JSON trees (*ret_n of them; free each, and roots). */
static json_t **load_manifest_roots(const char *path, size_t *ret_n)
{
        struct xp_yaml_document *docs = NULL;
        struct xp_error err = {0};
        char *data = NULL;
        size_t size = 0, n = 0;
        FILE *f = fopen(path, "r");
        json_t **roots;

        assert_non_null(f);
        assert_true(getdelim(&data, &size, '\0', f) > 0);
        fclose(f);
        assert_int_equal(xp_yaml_load(data, strlen(data), path, &docs, &n, &err), 0);
        free(data);
        roots = calloc(n + 1, sizeof(*roots));
        assert_non_null(roots);
        for (size_t i = 0; i < n; i++)
                roots[i] = json_deep_copy(docs[i].root);
        xp_yaml_documents_free(docs, n);
        *ret_n = n;
        return roots;
}

static json_t *random_json_value(unsigned *seed, int level, bool with_nul)
{
        static const char *const words[] = {
            "",
            "a",
            "name",
            "x\"y\\z",
            "tab\tnew\nline",
            "ü",
            "\x7f",
            "<&>",
            "😀",
            "metadata",
            "resourceVersion",
        };
        const unsigned n_words = sizeof(words) / sizeof(words[0]);
        unsigned pick = (unsigned)rand_r(seed) % (level > 4 ? 5 : 7);
        json_t *v;

        switch (pick) {
        case 0:
                return json_string(words[(unsigned)rand_r(seed) % n_words]);
        case 1:
                return json_integer((json_int_t)rand_r(seed) * (rand_r(seed) % 3 - 1) * 4099);
        case 2:
                return json_boolean(rand_r(seed) & 1);
        case 3:
                return json_null();
        case 4:
                return with_nul ? json_stringn("\0z", 2) : json_string("z");
        case 5:
                v = json_object();
                for (int i = rand_r(seed) % 5; i > 0; i--)
                        json_object_set_new(v,
                                            words[(unsigned)rand_r(seed) % n_words],
                                            random_json_value(seed, level + 1, with_nul));
                return v;
        default:
                v = json_array();
                for (int i = rand_r(seed) % 5; i > 0; i--)
                        json_array_append_new(v, random_json_value(seed, level + 1, with_nul));
                return v;
        }
}

/* Every document of the test data's manifests of pods, services, config maps and more: *ret_n
 * trees (free each, and the array). */
static json_t **load_corpus(size_t *ret_n)
{
        static const char *const files[] = {
            "all-kinds.yaml",
            "full-pod.yaml",
            "real-world-pod.yaml",
            "multi.yaml",
            "seed-pod.yaml",
            "gpu-node.yaml",
        };
        json_t **all = NULL;
        size_t n_all = 0;

        for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
                char path[512];
                size_t n = 0;
                json_t **roots;

                snprintf(path, sizeof(path), "%s/manifests/%s", XPOOL_TEST_DATA, files[f]);
                roots = load_manifest_roots(path, &n);
                all = realloc(all, (n_all + n) * sizeof(*all));
                assert_non_null(all);
                memcpy(all + n_all, roots, n * sizeof(*roots));
                n_all += n;
                free(roots);
        }
        *ret_n = n_all;
        return all;
}
