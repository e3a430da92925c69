/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Manifests: the files users write and `kubectl apply -f` takes. YAML or JSON, one or many
 * documents separated by `---`, each an object with apiVersion and kind, or a List of them (as
 * `kubectl get -o yaml` prints). Loading is all-or-nothing: the first bad document fails the
 * whole file with `file:line:column: field.path: what is wrong`, and no object is returned.
 */

#include <stddef.h>

#include "xpool/codec.h"
#include "xpool/error.h"
#include "xpool/kind.h"
#include "xpool/object.h"
#include "xpool/yaml.h"

/* Larger files are refused before parsing. */
#define XP_MANIFEST_MAX_BYTES (32 * 1024 * 1024)

enum xp_object_kind {
        XP_OBJECT_POD = 1,
        XP_OBJECT_NODE,
        XP_OBJECT_NAMESPACE,
        XP_OBJECT_EVENT,
        XP_OBJECT_LEASE,
};

struct xp_manifest_object {
        enum xp_object_kind kind;
        const struct xp_kind *type; /* the same kind, as its table entry: type->to_json(object) */
        union {
                void *object;                   /* any kind, owned: type->free(object) */
                struct xp_pod *pod;             /* XP_OBJECT_POD */
                struct xp_node *node;           /* XP_OBJECT_NODE */
                struct xp_namespace *namespace; /* XP_OBJECT_NAMESPACE */
                struct xp_event *event;         /* XP_OBJECT_EVENT */
                struct xp_lease *lease;         /* XP_OBJECT_LEASE */
        };
        struct xp_source_pos pos; /* where the object starts in its file */
};

struct xp_manifest {
        struct xp_manifest_object *objects; /* owned, in file order */
        size_t n;
};

/*
 * Loads every object in data[0..size). flags are xp_decode_flags (XP_DECODE_STRICT rejects
 * unknown fields). source_name prefixes error messages (NULL: "<input>"). On success *ret holds
 * the objects (free with xp_manifest_done()); on failure *ret is untouched.
 */
int xp_manifest_load_buffer(const char *data,
                            size_t size,
                            const char *source_name,
                            unsigned flags,
                            struct xp_manifest *ret,
                            struct xp_error *err);

/* Reads path ("-" for standard input) and loads it like xp_manifest_load_buffer(). */
int xp_manifest_load_file(const char *path,
                          unsigned flags,
                          struct xp_manifest *ret,
                          struct xp_error *err);

void xp_manifest_done(struct xp_manifest *manifest);

const char *xp_object_kind_to_string(enum xp_object_kind kind);
