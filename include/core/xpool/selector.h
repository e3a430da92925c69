/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Kubernetes label selectors (`?labelSelector=`, `xpool get -l`) and field selectors
 * (`?fieldSelector=`), parsed once and matched against many objects. Pure code over jansson
 * values: no I/O, no global state. docs/selectors.md is the user's description.
 *
 * Label selector syntax, as k8s.io/apimachinery/pkg/labels parses it: comma-separated
 * requirements, all of which must hold, each one of
 *   key            key exists            !key           key does not exist
 *   key=value      key==value            key!=value     (absent key matches !=)
 *   key in (v1, v2)                      key notin (v1, v2)  (absent key matches notin)
 *   key>N          key<N                 (the label's value is an integer greater/less than N)
 * Whitespace (space, tab, CR, LF) may surround every token. A key is a qualified name
 * ("[prefix/]name"), a value a label value (possibly empty: `a=`, `a in (x,)`). "" selects
 * everything.
 *
 * Field selector syntax, as k8s.io/apimachinery/pkg/fields parses it: comma-separated terms
 * `field=value`, `field==value` or `field!=value`, all of which must hold. Nothing is trimmed.
 * In a value, `\,` `\=` and `\\` stand for `,` `=` and `\`; any other backslash sequence and an
 * unescaped '=' are errors. Empty terms are skipped, so "" selects everything. Which fields a
 * kind supports is Kubernetes' choice, listed in docs/selectors.md.
 *
 * Errors are -EINVAL (syntax, validation, unsupported field) or -E2BIG (a limit below) with a
 * message naming the selector and the byte offset (from 0) where it went wrong:
 *   labelSelector: "a in (x": unterminated value list at position 7
 * except for an unsupported field, which carries Kubernetes' own message:
 *   field label not supported: spec.foo
 * Parsing changes nothing on failure: *ret is only set on success.
 */

#include <stdbool.h>

#include <jansson.h>

#include "xpool/error.h"
#include "xpool/strmap.h"

#define XP_SELECTOR_TEXT_MAX         1024 /* bytes of selector text */
#define XP_SELECTOR_REQUIREMENTS_MAX 64   /* requirements (label) or terms (field) */
#define XP_SELECTOR_VALUES_MAX       64   /* values in one `in`/`notin` list */

struct xp_label_selector;

/* Parses text (see above) into *ret; the caller frees it with xp_label_selector_free(). */
int xp_label_selector_parse(const char *text, struct xp_label_selector **ret, struct xp_error *err);

/*
 * True when labels satisfy every requirement. labels is a JSON object of string -> string, or
 * NULL for an object without labels; a member whose value is not a string counts as absent.
 * A NULL selector is the empty one and matches everything.
 */
bool xp_label_selector_matches(const struct xp_label_selector *selector, const json_t *labels);

/* The same over the object model's label map; labels may be NULL (no labels). */
bool xp_label_selector_matches_map(const struct xp_label_selector *selector,
                                   const struct xp_strmap *labels);

/* True when the selector has no requirement (it came from "" or whitespace), or is NULL. */
bool xp_label_selector_is_empty(const struct xp_label_selector *selector);

void xp_label_selector_free(struct xp_label_selector *selector);
XP_DEFINE_FREEP(struct xp_label_selector, xp_label_selector_free)

struct xp_field_selector;

/*
 * Parses text (see above) for objects of kind ("Pod", "Node", "Event", "Namespace", "Lease"; any
 * other kind, or NULL, supports metadata.name and metadata.namespace only) into *ret; the caller
 * frees it with xp_field_selector_free().
 */
int xp_field_selector_parse(const char *text,
                            const char *kind,
                            struct xp_field_selector **ret,
                            struct xp_error *err);

/*
 * True when object (the whole JSON object of the kind given to the parser) satisfies every
 * term. A missing field compares as "" (so `spec.nodeName=` selects unbound pods), except the
 * booleans spec.hostNetwork (Pod) and spec.unschedulable (Node), which compare as "false" when
 * missing, as in Kubernetes; booleans compare as "true"/"false". A NULL selector matches
 * everything.
 */
bool xp_field_selector_matches(const struct xp_field_selector *selector, const json_t *object);

/* True when the selector has no term, or is NULL. */
bool xp_field_selector_is_empty(const struct xp_field_selector *selector);

void xp_field_selector_free(struct xp_field_selector *selector);
XP_DEFINE_FREEP(struct xp_field_selector, xp_field_selector_free)
