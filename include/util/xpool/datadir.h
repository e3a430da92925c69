/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The data directory's layout: the one place that names the files xpool keeps, for the server,
 * the node agent and the CLI alike (docs/store.md, docs/security.md and docs/agent.md describe
 * what each holds).
 *
 *   DIR/                      mode 0700; the default is xp_datadir_default()
 *     state.db                the store (SQLite), with state.db-wal, state.db-shm and
 *     state.db.seal           the store's seal (its last version, outside the WAL); all 0600
 *     tokens, tokens.lock     the bearer tokens' hashes; 0600
 *     pki/                    0700: ca.crt, ca.key, server.crt, server.key (src/server/tls.h)
 *     admin.kubeconfig        the admin's kubeconfig; 0600
 *     encryption.keys         the keys Secrets are encrypted with in the store; 0600
 *     agent/                  a node agent's own directory (0700): the default of `xpool agent`
 *       containers/ logs/     and the one `xpool up` gives its agent; node.token and
 *                             simulated-node.yaml are `xpool up`'s
 *       images/               the node's image store (include/xpool/image.h, docs/images.md):
 *                             blobs/, layers/, refs.json, holds/, tmp/
 *       network/              one record per pod network (include/xpool/podnet.h)
 *
 * One default root for server and agent: $XDG_STATE_HOME/xpool when XDG_STATE_HOME is set
 * (absolute), else /var/lib/xpool for root, else ~/.local/state/xpool. The agent's default is
 * that root's agent/.
 */

#include <stddef.h>

#include "xpool/error.h"

#define XP_DATADIR_SYSTEM "/var/lib/xpool" /* root's default root */

#define XP_DATADIR_STORE          "state.db"
#define XP_DATADIR_TOKENS         "tokens"
#define XP_DATADIR_TOKENS_LOCK    "tokens.lock"
#define XP_DATADIR_PKI            "pki"
#define XP_DATADIR_CA_CERT        "pki/ca.crt"
#define XP_DATADIR_KUBECONFIG     "admin.kubeconfig"
#define XP_DATADIR_ENCRYPTION     "encryption.keys" /* Secrets' keys (xpool/storekeys.h) */
#define XP_DATADIR_AGENT          "agent"
#define XP_DATADIR_CONTAINERS     "containers" /* in the agent's directory */
#define XP_DATADIR_LOGS           "logs"       /* in the agent's directory */
#define XP_DATADIR_IMAGES         "images"     /* in the agent's directory: the image store */
#define XP_DATADIR_NETWORK        "network"    /* in the agent's directory: pods' networks */
#define XP_DATADIR_NODE_TOKEN     "node.token" /* in the agent's directory (xpool up) */
#define XP_DATADIR_SIMULATED_NODE "simulated-node.yaml"

/*
 * The default root into *ret (caller frees): see above. -ENOENT (err says to give one) when
 * neither XDG_STATE_HOME nor HOME is set for a user other than root; -ENOMEM.
 */
int xp_datadir_default(char **ret, struct xp_error *err);

/* The default agent directory: the default root's agent/. As xp_datadir_default(). */
int xp_datadir_agent_default(char **ret, struct xp_error *err);

/* "dir/name" (caller frees), or NULL when out of memory. */
char *xp_datadir_path(const char *dir, const char *name);

/*
 * mkdir -p DIR: missing parents 0755, DIR itself 0700; what exists is kept as it is. -errno with
 * err naming the directory that could not be made.
 */
int xp_datadir_make(const char *dir, struct xp_error *err);

/*
 * Whether the existing directory (or file) at path is open to others: 1 when group or others
 * may read, write or enter it, with a sentence saying so in err (mode and what to do); 0 when
 * it is private; -errno when it cannot be examined.
 */
int xp_datadir_check_private(const char *path, struct xp_error *err);

/*
 * The server's state in root's default before the layout above existed (~/.local/state/xpool),
 * when dir is the default XP_DATADIR_SYSTEM, has no store of its own, and that older directory
 * has one: 1 with its path in *ret (caller frees). 0 otherwise (nothing in *ret); -ENOMEM.
 */
int xp_datadir_legacy(const char *dir, char **ret);
