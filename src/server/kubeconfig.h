/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubeconfig `xpool server` writes so that kubectl (and xpool) can reach it. */

#include "xpool/error.h"

/*
 * Writes a kubectl-compatible kubeconfig to path: cluster "xpool" (server_url and, when ca_pem
 * is not NULL, its PEM text base64-encoded as certificate-authority-data), user `user` with the
 * bearer token, context "xpool" (namespace default) and current-context xpool. The file is
 * replaced atomically with mode 0600 (it holds a credential); a symbolic link at path is refused
 * with -ELOOP. All strings are borrowed. -EINVAL for an empty server_url, token or user, -errno
 * else, err naming the file.
 */
int kubeconfig_write(const char *path,
                     const char *server_url,
                     const char *ca_pem,
                     const char *token,
                     const char *user,
                     struct xp_error *err);
