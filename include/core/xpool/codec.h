/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * JSON <-> objects. Decoding checks types, then validates the object the way a Kubernetes API
 * server would (names, quantities, enums, cross-field rules), and reports the first problem with
 * its field path and, when the input came from a file with a source map, its line and column:
 *
 *   pod.yaml:12:20: spec.containers[0].resources.limits[nvidia.com/gpu]: "1.5x" is not a valid
 * quantity
 *
 * Members the model does not know are kept (struct member `extra`) and encoded back, so objects
 * round-trip. Decoding never half-applies: on failure nothing is returned and nothing leaks.
 */

#include <jansson.h>
#include <stdbool.h>

#include "xpool/error.h"
#include "xpool/object.h"
#include "xpool/path.h"
#include "xpool/yaml.h"

/*
 * How deep an object may nest: mappings and lists inside one another, the object itself being
 * the first level. Decoding refuses a deeper object (-E2BIG), so that every object the server
 * stores can still be patched (XP_PATCH_MAX_DEPTH, the same bound, in xpool/patch.h).
 */
#define XP_OBJECT_MAX_DEPTH 100

/* Whether value holds mappings and lists nested more than max_depth levels ({} is one level). */
bool xp_json_deeper_than(const json_t *value, unsigned max_depth);

enum xp_decode_flags {
        XP_DECODE_STRICT = 1u << 0, /* unknown fields are errors (kubectl --validate=strict) */
        XP_DECODE_TRUSTED =
            1u << 1, /* skip semantic validation: objects read back from our store */
        /* unknown members that are mappings or lists are kept by reference, not copied: the
         * caller changes the JSON no more (a create's body, freed once it is decoded), nor does
         * the decode: a kind whose defaults or conversion write the body copies what it keeps */
        XP_DECODE_SHARE = 1u << 2,
        /* the caller knows the JSON nests at most XP_OBJECT_MAX_DEPTH levels (its reader
         * counted them): the walk that checks the bound is skipped */
        XP_DECODE_SHALLOW = 1u << 3,
};

/*
 * Between xp_codec_body_begin() and xp_codec_body_end() on one thread, a decode with
 * XP_DECODE_SHARE remembers the body's nodes the model's strings, lists and maps of strings and
 * resource lists were decoded from, and an encode of a model part that still reads as its node
 * takes a reference to that node instead of making new ones (a create: the body decoded, its model
 * encoded into the stored tree; the text is the same). The body must be changed in place no more
 * (xpool/jsonliteral.h's rule). _end() drops the table's references; _begin() ends an open table
 * first. Each thread has its own; nothing is remembered outside them. The server's create opens
 * the table and the registry's create_object() ends it right after its one encode, before the
 * store's write (whose writer would otherwise look up every container the table holds): a table
 * meant to span several creates would lose its notes there.
 */
void xp_codec_body_begin(void);
void xp_codec_body_end(void);

/* Where the JSON came from, for error messages. Every member may be NULL. */
struct xp_decode_source {
        const char *name;                /* "pod.yaml"; prefixes messages */
        const struct xp_source_map *map; /* adds line:column */
        const struct xp_path *base;      /* where the object sits in its document (List items) */
};

/*
 * Decodes and validates. `source` may be NULL. The JSON's apiVersion and kind, when present, must
 * be "v1" and "Pod" (or "Node"). On success *ret owns a new object (free with xp_pod_free()).
 */
int xp_pod_from_json(const json_t *json,
                     const struct xp_decode_source *source,
                     unsigned flags,
                     struct xp_pod **ret,
                     struct xp_error *err);
int xp_node_from_json(const json_t *json,
                      const struct xp_decode_source *source,
                      unsigned flags,
                      struct xp_node **ret,
                      struct xp_error *err);

/* Validates an object built or changed in code, with the same rules and messages as decoding. */
int xp_pod_validate(const struct xp_pod *pod, struct xp_error *err);
int xp_node_validate(const struct xp_node *node, struct xp_error *err);

/*
 * Encodes with apiVersion and kind first, modeled fields in API order, unknown members after.
 * -ENOMEM, or -ERANGE for a value JSON cannot hold (NaN, a time outside the years 0-9999), which
 * validation reports with its field first.
 */
int xp_pod_to_json(const struct xp_pod *pod, json_t **ret);
int xp_node_to_json(const struct xp_node *node, json_t **ret);

/*
 * xpool's device inventory on its own (what status.xpool of a Node holds): a node description
 * file for simulated devices, `xpool devices -o json`. No apiVersion or kind.
 */
int xp_node_inventory_from_json(const json_t *json,
                                const struct xp_decode_source *source,
                                unsigned flags,
                                struct xp_node_inventory **ret,
                                struct xp_error *err);
int xp_node_inventory_to_json(const struct xp_node_inventory *inventory, json_t **ret);
int xp_node_inventory_validate(const struct xp_node_inventory *inventory, struct xp_error *err);

/* Convenience: parse JSON text (a request body) and decode. Syntax errors carry line:column. */
int xp_pod_from_json_text(const char *text,
                          size_t len,
                          const char *source_name,
                          unsigned flags,
                          struct xp_pod **ret,
                          struct xp_error *err);
int xp_node_from_json_text(const char *text,
                           size_t len,
                           const char *source_name,
                           unsigned flags,
                           struct xp_node **ret,
                           struct xp_error *err);

/*
 * Namespace (v1), Event (v1) and Lease (coordination.k8s.io/v1): the same contract as the Pod
 * functions above. apiVersion, when present, must be the kind's ("coordination.k8s.io/v1" for a
 * Lease). Free with xp_namespace_free(), xp_event_free(), xp_lease_free().
 */
int xp_namespace_from_json(const json_t *json,
                           const struct xp_decode_source *source,
                           unsigned flags,
                           struct xp_namespace **ret,
                           struct xp_error *err);
int xp_event_from_json(const json_t *json,
                       const struct xp_decode_source *source,
                       unsigned flags,
                       struct xp_event **ret,
                       struct xp_error *err);
int xp_lease_from_json(const json_t *json,
                       const struct xp_decode_source *source,
                       unsigned flags,
                       struct xp_lease **ret,
                       struct xp_error *err);
int xp_namespace_validate(const struct xp_namespace *ns, struct xp_error *err);
int xp_event_validate(const struct xp_event *event, struct xp_error *err);
int xp_lease_validate(const struct xp_lease *lease, struct xp_error *err);
int xp_namespace_to_json(const struct xp_namespace *ns, json_t **ret);
int xp_event_to_json(const struct xp_event *event, json_t **ret);
int xp_lease_to_json(const struct xp_lease *lease, json_t **ret);
