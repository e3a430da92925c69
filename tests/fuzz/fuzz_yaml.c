/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for xp_yaml_load(): any bytes must either fail with a positioned message and
 * no documents, or give documents in which every value the json tree holds has a position in the
 * source map under the JSON pointer derived from walking the tree.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/path.h"
#include "xpool/yaml.h"

#define POINTER_MAX (64 * 1024)
/* Walking a fully expanded document is bounded by XP_YAML_MAX_VALUES; keep runs quick. */
#define LOOKUPS_MAX 200000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct walk {
        const struct xp_source_map *map;
        unsigned max_line;
        size_t lookups;
        char pointer[POINTER_MAX];
};

static void check_pos(const struct walk *w, struct xp_source_pos pos)
{
        if (pos.line == 0 || pos.column == 0 || pos.line > w->max_line) {
                fprintf(
                    stderr, "bad position %u:%u for \"%s\"\n", pos.line, pos.column, w->pointer);
                abort();
        }
}

static void walk(struct walk *w, json_t *value)
{
        size_t len = strlen(w->pointer);
        struct xp_source_entry e;
        const char *key;
        json_t *member;

        if (w->lookups++ >= LOOKUPS_MAX)
                return;
        if (xp_source_map_lookup(w->map, w->pointer, &e) != 0) {
                fprintf(stderr, "no position for \"%s\"\n", w->pointer);
                abort();
        }
        check_pos(w, e.value);
        check_pos(w, e.key);

        if (json_is_object(value)) {
                json_object_foreach(value, key, member)
                {
                        if (xp_json_pointer_append(w->pointer, sizeof(w->pointer), key) == 0)
                                walk(w, member);
                        w->pointer[len] = '\0';
                }
        } else if (json_is_array(value)) {
                for (size_t i = 0; i < json_array_size(value); i++) {
                        char index[24];

                        snprintf(index, sizeof(index), "%zu", i);
                        if (xp_json_pointer_append(w->pointer, sizeof(w->pointer), index) == 0)
                                walk(w, json_array_get(value, i));
                        w->pointer[len] = '\0';
                }
        }
}

/* An upper bound on the lines libyaml counts: \n, \r and the Unicode line breaks, plus one. */
static unsigned max_line(const uint8_t *data, size_t size)
{
        size_t breaks = 0;

        for (size_t i = 0; i < size; i++)
                if (data[i] == '\n' || data[i] == '\r' || data[i] == 0x85 || data[i] == 0xa8 ||
                    data[i] == 0xa9)
                        breaks++;
        return breaks + 2 > UINT32_MAX ? UINT32_MAX : (unsigned)(breaks + 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct walk w;
        struct xp_yaml_document sentinel;
        struct xp_yaml_document *docs = &sentinel;
        size_t n = 12345;
        struct xp_error err = {0};
        int r;

        r = xp_yaml_load((const char *)data, size, "fuzz.yaml", &docs, &n, &err);
        if (r < 0) {
                if (err.code != r || strncmp(err.msg, "fuzz.yaml:", 10) != 0 || docs != &sentinel ||
                    n != 12345) {
                        fprintf(stderr, "bad failure %d: %s\n", r, err.msg);
                        abort();
                }
                return 0;
        }
        if (r != 0 || (n > 0 && !docs)) {
                fprintf(stderr, "bad success %d, %zu documents\n", r, n);
                abort();
        }
        for (size_t i = 0; i < n; i++) {
                if (!docs[i].root || !docs[i].map || json_is_null(docs[i].root))
                        abort();
                w.map = docs[i].map;
                w.max_line = max_line(data, size);
                w.lookups = 0;
                w.pointer[0] = '\0';
                check_pos(&w, docs[i].start);
                walk(&w, docs[i].root);
        }
        xp_yaml_documents_free(docs, n);
        return 0;
}
