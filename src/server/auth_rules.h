/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What a role may do, as rules (authorization.k8s.io/v1 SubjectRulesReviewStatus): the answer to
 * a SelfSubjectRulesReview, which `kubectl auth can-i --list` prints. The rules say in RBAC's
 * terms what auth_authorize() decides (auth.h); the unit tests check each rule against it. What
 * no rule can say (a node's pods, allowed only when bound to it) makes the list incomplete, with
 * evaluationError saying what is missing, as Kubernetes' node authorizer leaves it.
 */

#include <jansson.h>

#include "auth.h"

/*
 * The status for who, for namespace ns (NULL or "": every namespace; rules that hold only in one
 * namespace are then left out): {"resourceRules": [...], "nonResourceRules": [...],
 * "incomplete": bool[, "evaluationError": "..."]}. 0 with *ret (caller frees), or -ENOMEM.
 */
int auth_rules_review(const struct auth_identity *who, const char *ns, json_t **ret);

/* The groups of who's user ("system:masters", "system:authenticated", ...), as whoami shows. */
json_t *auth_user_groups(const struct auth_identity *who);
