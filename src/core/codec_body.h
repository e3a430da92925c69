/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The codec's side of xp_codec_body_begin() (xpool/codec.h): its decode notes, its encode finds. */

#include <jansson.h>

#include "schema.h"
#include "xpool/resource.h"
#include "xpool/strmap.h"

/*
 * Notes that the model's part at key (a string's copy, a list's or a map's items) was decoded from
 * node, of a body the caller changes no more: the table takes a reference. Nothing while no table
 * is open on this thread, or when it is full (the encode then makes nodes, as before).
 */
void xp_codec_body_note(const void *key, const json_t *node);

/*
 * A new reference to the body's node of a model part when it reads exactly as the encode would
 * write the part (the same members in the same order, the same text), or NULL: the encode makes
 * the node. The model may have changed since the decode; a change is seen here.
 */
json_t *xp_codec_body_string(const char *s);
json_t *xp_codec_body_string_list(const struct xp_list_raw *list);
json_t *xp_codec_body_string_map(const struct xp_strmap *map);
json_t *xp_codec_body_resources(const struct xp_resource_list *list);
