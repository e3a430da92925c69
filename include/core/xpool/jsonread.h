/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A request body read into a jansson tree: the tree json_loadb(text, len, JSON_REJECT_DUPLICATES)
 * builds for an object, with its members in the same order, built faster (no token buffer, no
 * second copy of each string). It reads what API clients send; everything else it leaves to
 * json_loadb(), whose tree or error message then stands, so a caller's answers do not change:
 *
 *   if (xp_json_read_object(body, len, &json) < 0)
 *           json = json_loadb(body, len, JSON_REJECT_DUPLICATES, &error);
 */

#include <jansson.h>
#include <stddef.h>

/* Nesting past this is left to jansson (its own bound is 2048). */
#define XP_JSON_READ_DEPTH 256

/*
 * text[0..len) as a JSON object: 0 with *ret (the caller's reference), -ENOMEM, or -EBADMSG for
 * what it leaves to json_loadb(): anything but an object at the top, every syntax error,
 * reals, integers beyond int64, \u0000, unpaired surrogates, duplicate keys, bytes that are not
 * UTF-8, nesting deeper than XP_JSON_READ_DEPTH.
 */
int xp_json_read_object(const char *text, size_t len, json_t **ret);

/*
 * As xp_json_read_object(), and *ret_depth (when not NULL) gets how deep the object nests, as
 * xp_json_deeper_than() counts it ({} is one level): what the reader saw on its way, so that a
 * caller need not walk the tree again to bound it.
 */
int xp_json_read_object_depth(const char *text, size_t len, json_t **ret, unsigned *ret_depth);
