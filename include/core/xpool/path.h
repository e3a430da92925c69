/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Field paths, as decoders and validators descend into an object. One path prints two ways:
 *   - for people, in Kubernetes' field-path style:
 * spec.containers[0].resources.limits[nvidia.com/gpu] (struct fields joined by '.', list indices
 * and map keys in brackets);
 *   - as an RFC 6901 JSON pointer: /spec/containers/0/resources/limits/nvidia.com~1gpu, the key
 *     into a YAML source map (see yaml.h).
 */

#include <stddef.h>

#define XP_PATH_MAX_DEPTH 64
#define XP_PATH_TEXT_MAX  1024

enum xp_path_segment_kind {
        XP_PATH_FIELD, /* a struct member: ".name" */
        XP_PATH_INDEX, /* a list element: "[3]" */
        XP_PATH_KEY,   /* a map entry: "[nvidia.com/gpu]" */
};

struct xp_path_segment {
        enum xp_path_segment_kind kind;
        const char *name; /* borrowed until popped; FIELD and KEY */
        size_t index;     /* INDEX */
};

struct xp_path {
        struct xp_path_segment segments[XP_PATH_MAX_DEPTH];
        size_t depth; /* may exceed XP_PATH_MAX_DEPTH; deeper segments are not recorded */
};

void xp_path_push_field(struct xp_path *path, const char *name);
void xp_path_push_index(struct xp_path *path, size_t index);
void xp_path_push_key(struct xp_path *path, const char *key);
void xp_path_pop(struct xp_path *path);

/* Formats the human path into buf ("" for the root). Returns buf. */
char *xp_path_format(const struct xp_path *path, char *buf, size_t size);

/* Formats the JSON pointer into buf ("" for the root). Returns buf. */
char *xp_path_pointer(const struct xp_path *path, char *buf, size_t size);

/*
 * Appends "/" and the RFC 6901 escape of token ('~' -> "~0", '/' -> "~1") to the NUL-terminated
 * pointer in buf. Returns 0, or -ENAMETOOLONG when it does not fit (buf is then unchanged).
 */
int xp_json_pointer_append(char *buf, size_t size, const char *token);
