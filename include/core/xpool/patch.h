/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * JSON patches over jansson values, for HTTP PATCH in the API server and for the patches kubectl
 * apply computes. Three kinds, chosen by the request's Content-Type:
 *
 *   - RFC 6902 JSON patch: a list of add/remove/replace/move/copy/test operations;
 *   - RFC 7386 JSON merge patch: an object merged member by member, null deletes;
 *   - Kubernetes strategic merge patch: a merge patch where lists with a merge key (containers by
 *     name) merge element by element and `$`-directives delete, replace and reorder.
 *
 * Pure functions: no I/O, inputs are borrowed and never changed, and on failure nothing is
 * returned (the ret_* output is untouched). docs/patch.md is the user documentation.
 */

#include <jansson.h>
#include <stdbool.h>

#include "xpool/error.h"

#define XP_PATCH_MAX_OPS   10000 /* operations in one JSON patch */
#define XP_PATCH_MAX_DEPTH 100   /* nesting of the patch and the object it applies to */

enum xp_patch_type {
        XP_PATCH_JSON = 1,  /* RFC 6902, application/json-patch+json */
        XP_PATCH_MERGE,     /* RFC 7386, application/merge-patch+json */
        XP_PATCH_STRATEGIC, /* Kubernetes strategic merge patch,
                               application/strategic-merge-patch+json */
        XP_PATCH_APPLY,     /* server-side apply, application/apply-patch+yaml: merged by
                               xp_apply() (xpool/managedfields.h), which needs the field manager;
                               xp_patch_apply() refuses it */
};

/*
 * Maps a Content-Type header value (parameters like "; charset=utf-8" ignored, case-insensitive) to
 * a type; -EINVAL (err says which types are supported) otherwise.
 */
int xp_patch_type_from_content_type(const char *content_type,
                                    enum xp_patch_type *ret,
                                    struct xp_error *err);

/* The Content-Type of a type ("application/merge-patch+json"), NULL for an unknown value. */
const char *xp_patch_type_to_content_type(enum xp_patch_type type);

/*
 * Applies patch to original (both borrowed) for an object of `kind` ("Pod", "Node", "Event",
 * "Namespace", "Lease"; kind selects the strategic merge keys; an unknown kind makes STRATEGIC
 * behave like MERGE). *ret is a new object (caller frees with json_decref()). Errors: -EINVAL with
 * err saying what and where (the op index and JSON pointer for JSON patch: `patch[2] (replace
 * /spec/foo): path not found`; the field path for the others), -E2BIG over limits (more than
 * XP_PATCH_MAX_OPS JSON-patch ops, nesting deeper than XP_PATCH_MAX_DEPTH), -ENOMEM. A JSON patch
 * "test" op that fails is -EINVAL "test failed". Nothing changes on failure.
 */
int xp_patch_apply(enum xp_patch_type type,
                   const char *kind,
                   const json_t *original,
                   const json_t *patch,
                   json_t **ret,
                   struct xp_error *err);

/*
 * As xp_patch_apply(), but a strategic merge patch's *ret shares with original the members the
 * patch leaves alone (a status write's spec and metadata) instead of copying them, and with patch
 * the values it adds that the merge would rebuild as they are (a status write's new status):
 * none of the three may change while another is in use. The result is equal to
 * xp_patch_apply()'s, member order too.
 */
int xp_patch_apply_sharing(enum xp_patch_type type,
                           const char *kind,
                           const json_t *original,
                           const json_t *patch,
                           json_t **ret,
                           struct xp_error *err);

/*
 * Two-way JSON merge patch that turns `from` into `to` (null for removed members; arrays replaced
 * whole). *ret is {} when equal objects; when either is not an object, *ret is a copy of `to`
 * (RFC 7386 has no other way to say it). A new value the caller frees. -ENOMEM, or -E2BIG when
 * either is nested deeper than XP_PATCH_MAX_DEPTH. A member whose value in `to` is null cannot be
 * expressed in a merge patch (null means delete) and comes out as a deletion.
 */
int xp_patch_merge_diff(const json_t *from, const json_t *to, json_t **ret);

/*
 * Three-way JSON merge patch as kubectl apply computes for types without strategic info: fields in
 * `last_applied` that are absent from `modified` are deleted (null), fields of `modified` that
 * differ from `current` are set; fields only in `current` (set by others, e.g. status, nodeName)
 * are left alone. last_applied may be NULL (nothing deleted). *ret is a new object ({} when nothing
 * changes). -ENOMEM, -E2BIG as for xp_patch_merge_diff(), -EINVAL when modified or current is not
 * an object.
 */
int xp_patch_merge_three_way(const json_t *last_applied,
                             const json_t *modified,
                             const json_t *current,
                             json_t **ret);

/*
 * The strategic merge strategy of a list field of `kind`, by its field path with "[]" for list
 * elements ("spec.containers[].env"). Returns true when the list merges: *ret_merge_key is then
 * the merge key ("name") or NULL for a list of primitives merged as a set (metadata.finalizers).
 * Returns false for lists that a patch replaces whole, and for unknown kinds.
 */
bool xp_patch_list_strategy(const char *kind, const char *path, const char **ret_merge_key);

/* Whether kind has strategic merge information (the kinds listed for xp_patch_apply()). */
bool xp_patch_kind_known(const char *kind);
