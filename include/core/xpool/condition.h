/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The conditions of an object's status (a Pod's, a Node's, a Deployment's...): a list of objects
 * each with a "type", one per type, as Kubernetes keeps them (its patch merge key). Pure: read
 * from the status's JSON, which the caller holds.
 */

#include <jansson.h>
#include <sys/types.h>

/* The index in status.conditions of the condition of type, or -1: none, or no list there. */
ssize_t xp_condition_index(const json_t *status, const char *type);

/* The condition of type in status.conditions, or NULL: borrowed from status. */
json_t *xp_condition_get(const json_t *status, const char *type);
