/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Who may call the API server: bearer tokens (their file: include/server/xpool/token.h), three
 * roles, and the rules that authorize each request. docs/security.md is the user's view.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/token.h"

struct auth_identity {
        enum xp_token_role role;
        char subject[XP_TOKEN_SUBJECT_MAX +
                     1]; /* the node name for node tokens, a label otherwise */
        char token_id[32];
        /* A service account's token (satoken_auth.c): subject is the account's name, role the
         * one its xpool.io/role annotation grants, 0 when none (discovery and the self reviews
         * only, as Kubernetes' RBAC gives a service account nothing more by default). */
        bool service_account;
        char sa_namespace[64];
        char sa_uid[40];
        char pod_name[XP_TOKEN_SUBJECT_MAX + 1]; /* the pod the token is bound to, or "" */
        char pod_uid[40];
};

struct auth;

/*
 * Opens DATA_DIR/tokens (DATA_DIR must exist). When the file is absent it is created holding
 * one admin token (subject "admin") and *ret_new_admin_token receives that token's text, which
 * the caller shows once and frees; otherwise *ret_new_admin_token is set to NULL. -errno with err
 * naming the file (and the line, for a corrupt file: -EINVAL). Caller frees with auth_free().
 */
int auth_open(const char *data_dir,
              struct auth **ret,
              char **ret_new_admin_token,
              struct xp_error *err);
void auth_free(struct auth *auth);
XP_DEFINE_FREEP(struct auth, auth_free)

/*
 * From an Authorization header value ("Bearer <token>", the scheme case-insensitive; NULL when
 * the header is absent): 0 with *ret filled, or -EACCES (HTTP 401) with err saying why: no
 * token, a malformed header or token, an unknown or revoked token. Reloads the tokens file
 * when it changed on disk (inode, size or mtime; checked at most once per second), so
 * `xpool token create|revoke` takes effect without a restart. When the changed file cannot be
 * read or is corrupt, every token is refused (fail closed) until it is fixed; err then says so
 * without naming the file (the messages are fit for the 401 answer; `xpool token list` and the
 * `XPOOL_DEBUG=auth` log show where the file is broken). The hash is compared in constant time.
 * Thread-safe.
 */
int auth_authenticate(struct auth *auth,
                      const char *authorization,
                      struct auth_identity *ret,
                      struct xp_error *err);

enum auth_verb {
        AUTH_GET = 1,
        AUTH_LIST,
        AUTH_WATCH,
        AUTH_CREATE,
        AUTH_UPDATE,
        AUTH_PATCH,
        AUTH_DELETE,
};

/* "get", "list", ... as Kubernetes names them; NULL for anything else. */
const char *auth_verb_to_string(enum auth_verb verb);

struct auth_request {
        enum auth_verb verb;
        const char *group;       /* "" core, "coordination.k8s.io" */
        const char *resource;    /* "pods", "nodes", ...; NULL for non-resource paths */
        const char *subresource; /* "status", "binding", "log" or NULL */
        const char *namespace;   /* NULL when none (cluster-scoped) */
        const char *name;        /* NULL for collections; for CREATE, the new object's name */
        const char *path;        /* the URL path: named in the reason for non-resource paths */
};

enum auth_decision {
        AUTH_DENY = 0,
        AUTH_ALLOW,
        AUTH_ALLOW_IF_POD_ON_NODE, /* allowed when the pod's spec.nodeName is who->subject */
        /* a node's get of a Secret or ConfigMap: allowed when a pod bound to who->subject names
         * it (xpool/podrefs.h); reason holds the refusal otherwise */
        AUTH_ALLOW_IF_REFERENCED,
};

/*
 * Every role: create of the self reviews (selfsubjectreviews in authentication.k8s.io,
 * selfsubjectaccessreviews and selfsubjectrulesreviews in authorization.k8s.io), as Kubernetes'
 * system:basic-user role allows every user.
 * admin: everything. reader: get/list/watch of everything, and GETs of non-resource paths.
 * node N: every read except pods/log; create/update/patch of node N and nodes/N/status;
 * create/update/patch/get/delete of lease N in namespace kube-node-lease (coordination.k8s.io);
 * create/update/patch of events (core); create of certificatesigningrequests
 * (certificates.k8s.io: the handler signs only N's own names); and, as AUTH_ALLOW_IF_POD_ON_NODE,
 * update/patch of pods/status, get of pods/log and delete of pods (the server loads the pod and
 * denies when its spec.nodeName is not N). Everything else is AUTH_DENY, with a Kubernetes-style
 * message in reason (always NUL-terminated when reason_size > 0), e.g. `nodes "n2" is forbidden:
 * User "system:node:n1" cannot update resource "nodes" in API group "" at the cluster scope`. Users
 * are named system:admin:S, system:reader:S and system:node:S. A service account
 * (who->service_account) has its role's rights; without one, only the self reviews and GETs of the
 * discovery paths (/api, /apis, /openapi, /version, /healthz, ...), as Kubernetes' system:discovery
 * and system:basic-user roles.
 */
enum auth_decision auth_authorize(const struct auth_identity *who,
                                  const struct auth_request *req,
                                  char *reason,
                                  size_t reason_size);

#define AUTH_KEY_LEN 32 /* the stored SHA-256 of a token's text */

/*
 * The id and the stored hash (the key that signs log requests to the node's agent,
 * xpool/logsign.h) of a token of role node for NODE: the one that authenticated most recently,
 * else the newest. -ENOENT when the node has none. Thread-safe.
 */
int auth_node_key(struct auth *auth,
                  const char *node,
                  char ret_id[static XP_TOKEN_ID_LEN + 1],
                  uint8_t ret_key[static AUTH_KEY_LEN]);

/* "system:node:n1", "system:serviceaccount:ns:name" and the like, for logs and messages. */
void auth_user_name(const struct auth_identity *who, char *buf, size_t size);
