/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The codec's side of xp_codec_strings_begin() (xpool/codec.h): its decode notes, its encode finds.
 */

#include <jansson.h>

/*
 * Notes that the model's copy was made from node, a string node of a body the caller changes no
 * more: the table takes a reference. Nothing while no table is open on this thread, or when it is
 * full (the encode then makes a node, as before).
 */
void xp_codec_strings_note(const char *copy, const json_t *node);

/* A new reference to the noted node of s, when s was noted and still reads as the node; or NULL. */
json_t *xp_codec_strings_find(const char *s);
