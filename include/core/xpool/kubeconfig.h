/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Reading a kubeconfig (the YAML file kubectl and `xpool server` write): the server, the
 * credentials and the namespace of one context. Only what xpool clients use is read: a cluster's
 * server, certificate-authority-data, certificate-authority and insecure-skip-tls-verify; a
 * user's token; a context's cluster, user and namespace. Other fields are ignored, as kubectl
 * ignores what it does not use.
 */

#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"

/* Larger kubeconfig files are refused before parsing. */
#define XP_KUBECONFIG_MAX_BYTES (4 * 1024 * 1024)

struct xp_kubeconfig {
        char *context;   /* the context used; owned */
        char *server;    /* "https://127.0.0.1:6443"; owned, never NULL after a parse */
        char *token;     /* bearer token; owned, NULL when the user has none */
        char *ca_data;   /* decoded certificate-authority-data (PEM); owned, NULL when none */
        size_t ca_len;   /* bytes in ca_data, the NUL terminator not counted */
        char *ca_file;   /* certificate-authority path; owned, NULL when none */
        char *namespace; /* the context's namespace; owned, NULL when not set */
        bool insecure;   /* insecure-skip-tls-verify */
};

/*
 * Parses data[0..size) and resolves context (NULL: the file's current-context) to its cluster
 * and user. source_name prefixes messages (NULL: "<kubeconfig>"). On success fills *ret (free
 * with xp_kubeconfig_done()). -EINVAL with err saying what and where
 * (`admin.kubeconfig:7:5: clusters[0].cluster.server: must be a string`, or `context "x" is not
 * in admin.kubeconfig`) for bad YAML, a missing current-context, a context naming an absent
 * cluster or user, a cluster without server, or certificate-authority-data that is not base64;
 * -ENOMEM. *ret is untouched on failure.
 */
int xp_kubeconfig_parse(const char *data,
                        size_t size,
                        const char *source_name,
                        const char *context,
                        struct xp_kubeconfig *ret,
                        struct xp_error *err);

/* Reads path and parses it like xp_kubeconfig_parse(); -errno of the open or read, -E2BIG. */
int xp_kubeconfig_load(const char *path,
                       const char *context,
                       struct xp_kubeconfig *ret,
                       struct xp_error *err);

void xp_kubeconfig_done(struct xp_kubeconfig *config);
