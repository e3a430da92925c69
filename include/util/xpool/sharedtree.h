/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The table of the program's shared trees, known by address: the JSON trees that every new object
 * holds by reference (a pod's kube-api-access projected source, its default tolerations). core
 * marks them (xp_json_shared_tree_mark(), xpool/jsonliteral.h) and skips their checks; the store,
 * which does not link core, finds their place here to copy the text it made of each once. In util
 * because both layers read it and neither links the other; it holds addresses only.
 */

/* The most trees the table keeps. */
#define XP_SHARED_TREES 8

/*
 * Adds tree (NULL: nothing) to the table, for the process's life; past XP_SHARED_TREES it is not
 * added. Safe from any thread.
 */
void xp_shared_tree_add(const void *tree);

/* The place of tree in the table, 0 to XP_SHARED_TREES - 1, fixed once added; -1 if not there. */
int xp_shared_tree_index(const void *tree);
