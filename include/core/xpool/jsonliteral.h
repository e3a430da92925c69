/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One JSON string node per literal of the program (an enum's name, a default's value), and one
 * integer node per small integer, shared by reference by every tree that holds it, instead of
 * blocks (a string's node and its text, an integer's node) made for each tree and freed with it: a
 * pod's create set about fifteen such strings, each made for the body or the stored tree and freed
 * later, most by the store's leader when the ring let the write go, long after they had left the
 * cache.
 *
 * Sharing rests on the rule the store's ring already needs: nothing changes a JSON scalar in
 * place (xpool calls no json_string_set() or json_integer_set()), and jansson counts references
 * atomically. A shared node is never freed: the table keeps a reference for the process's life.
 */

#include <jansson.h>
#include <stdbool.h>

#include "xpool/sharedtree.h"

/*
 * A new reference to the process's node of literal, a string of static storage that never
 * changes, valid UTF-8 (it is not checked): known by its address, not its text. NULL only
 * without memory. Safe from any thread.
 */
json_t *xp_json_literal(const char *literal);

/* The most integers shared: 0 to XP_JSON_SHARED_INTEGERS - 1 (ports, modes, seconds, counts). */
#define XP_JSON_SHARED_INTEGERS 1024

/*
 * A new reference to the process's node of value, when it is one of the small integers above;
 * json_integer(value) otherwise. NULL only without memory. Safe from any thread.
 */
json_t *xp_json_integer(json_int_t value);

/* The most trees xp_json_shared_tree_mark() keeps (its table is util's: xpool/sharedtree.h). */
#define XP_JSON_SHARED_TREES XP_SHARED_TREES

/*
 * Marks tree, one of the program's own that every new object shares by reference (the
 * kube-api-access volume's projected sources, the default tolerations), as one a body's checks
 * need not walk again on every create: the API schema's check of its members and the decode's
 * search for integral reals. Its maker's tests hold it to both (it passes the check of its type,
 * strictly, and holds no real). Past XP_JSON_SHARED_TREES, a tree is not marked (and is walked,
 * as before); the store's writer copies the text it made of it once (src/store/compact.c). Safe
 * from any thread.
 */
void xp_json_shared_tree_mark(const json_t *tree);

/* Whether json is a marked tree (by address). */
bool xp_json_is_shared_tree(const json_t *json);
