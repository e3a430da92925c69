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

/*
 * jansson values as YAML, as `kubectl get -o yaml` prints objects: block style, 2-space
 * indentation, a list under a key not indented further (`containers:\n- name: x`), members in
 * the object's order, empty collections as {} and [], long lines never folded, UTF-8 kept.
 *
 * A string is double-quoted when, written plain, some reader would resolve it to anything but
 * that string: the YAML 1.2 core schema (xp_yaml_load), YAML 1.1 (yes/no/on/off/y/n, 0b101,
 * 017, 1_000, 1:20, timestamps, <<, =) or go-yaml as kubectl uses it. Other strings are plain
 * unless libyaml needs quotes for their syntax (`'- a'`, `'a: b'`, `"tab\there"`); multi-line
 * strings are literal blocks (`|`) where a literal block holds them exactly. Integers print as
 * integers, reals with a '.' and enough digits to read back the same double (`2.0`, `0.1`),
 * booleans as true/false, null as null. What this writes, xp_yaml_load() reads back to a
 * json_equal() value, within the loader's bounds (XP_YAML_MAX_DEPTH, XP_YAML_MAX_VALUES).
 */

/* Deeper values (or a cycle) are refused with -EINVAL. */
#define XP_YAML_DUMP_MAX_DEPTH 1024

/*
 * Writes value (borrowed) as one YAML document. On success *ret_text holds the NUL-terminated
 * text, which the caller frees with free(), and *ret_len (when not NULL) its length. Returns
 * -EINVAL for a NULL value, a string that is not valid UTF-8, a value nested deeper than
 * XP_YAML_DUMP_MAX_DEPTH, and -ENOMEM; the outputs are untouched on failure.
 */
int xp_yaml_dump(const json_t *value, char **ret_text, size_t *ret_len);

/*
 * Like xp_yaml_dump() for n values (borrowed, not modified): one document each, every one after
 * the first starting with `---`. n == 0 gives "".
 */
int xp_yaml_dump_documents(json_t *const *values, size_t n, char **ret_text, size_t *ret_len);
