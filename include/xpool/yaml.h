/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * YAML (and JSON, which is YAML's flow style) into jansson values, remembering where every
 * value came from so that a decoder error can say `pod.yaml:12:20: ...`.
 *
 * Scalars resolve by the YAML 1.2 core schema, as a user of Kubernetes manifests expects:
 * quoted scalars are strings; plain `null`, `~` and empty are null; `true`/`false` (also
 * capitalised or upper case) are booleans; decimal, 0o octal and 0x hex integers are integers
 * (beyond int64 they become reals); decimals and exponents are reals; everything else
 * (including YAML 1.1's yes/no/on/off) is a string. Explicit !!str, !!int, !!float, !!bool and
 * !!null tags are honoured. Merge keys (`<<: *anchor`) are supported. Duplicate keys, complex
 * (non-scalar) keys, .inf and .nan (not representable in JSON) are errors.
 *
 * Bounds against hostile input: nesting depth XP_YAML_MAX_DEPTH and XP_YAML_MAX_VALUES values
 * per document after alias expansion (a "billion laughs" document fails cleanly).
 */

#include <jansson.h>
#include <stddef.h>

#include "xpool/error.h"

#define XP_YAML_MAX_DEPTH  128
#define XP_YAML_MAX_VALUES 1000000
/* Values in all documents of one input together, after alias and merge expansion. */
#define XP_YAML_MAX_TOTAL_VALUES (4 * XP_YAML_MAX_VALUES)

/* A 1-based position in a source text. line == 0 means unknown. */
struct xp_source_pos {
        unsigned line;
        unsigned column;
};

/* Maps a JSON pointer (RFC 6901, "" is the root) to where its value and key were written. */
struct xp_source_map;

struct xp_source_entry {
        struct xp_source_pos value; /* start of the value */
        struct xp_source_pos key;   /* start of the key for mapping members, else == value */
};

/*
 * Returns 0 and fills *ret, or -ENOENT when the pointer has no recorded position
 * (-EINVAL when it is not a JSON pointer: not "" nor starting with '/', or a '~' not followed
 * by '0' or '1'). Array indices are decimal without leading zeros, as RFC 6901 says.
 * Takes O(depth * log(members)) time.
 */
int xp_source_map_lookup(const struct xp_source_map *map,
                         const char *pointer,
                         struct xp_source_entry *ret);
void xp_source_map_free(struct xp_source_map *map);
XP_DEFINE_FREEP(struct xp_source_map, xp_source_map_free)

/*
 * An alias shares its anchor's value: the same json_t is referenced (json_incref) wherever the
 * alias appears, and its descendants' positions point at the anchored text. Callers that modify
 * a returned tree in place should json_deep_copy() it first.
 */
struct xp_yaml_document {
        json_t *root;               /* owned; never NULL in a returned document */
        struct xp_source_map *map;  /* owned */
        struct xp_source_pos start; /* where the document's content starts */
};

/*
 * Parses every document in data[0..size) (size need not include a NUL). Documents that hold
 * nothing (empty, comments only, explicit null) are skipped, as kubectl skips them.
 * source_name is used in error messages ("pod.yaml:3:5: ..."); NULL means "<input>".
 * On success *ret_docs is an array of *ret_n documents (possibly zero) that the caller frees
 * with xp_yaml_documents_free(). On failure returns -EINVAL (or -ENOMEM, -E2BIG for the bounds),
 * writes `name:line:column: what` into err, and returns no documents.
 */
int xp_yaml_load(const char *data,
                 size_t size,
                 const char *source_name,
                 struct xp_yaml_document **ret_docs,
                 size_t *ret_n,
                 struct xp_error *err);

void xp_yaml_documents_free(struct xp_yaml_document *docs, size_t n);
