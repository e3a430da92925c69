/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A client of one registry endpoint for one repository (remote.c). */

#include <stdatomic.h>
#include <stdint.h>

#include "image_internal.h"

struct xp_image_remote_opts {
        const char *base; /* "https://host:port[/prefix]": the endpoint, no trailing '/' */
        const char *host; /* host[:port] of base: its TLS settings in conf */
        const char *repo; /* the repository path */
        const struct xp_regconf *conf;
        const struct xp_image_cred *creds; /* candidates, tried in order; borrowed */
        size_t n_creds;
        const atomic_bool *cancel;
};

struct xp_image_remote;

/* o's base and host are copied; repo, conf, creds and cancel are borrowed while it lives. */
int xp_image_remote_new(const struct xp_image_remote_opts *o,
                        struct xp_image_remote **ret,
                        struct xp_error *err);
void xp_image_remote_free(struct xp_image_remote *reg);
XP_DEFINE_FREEP(struct xp_image_remote, xp_image_remote_free)

struct xp_image_remote_blob {
        char *data; /* NUL-terminated beyond size */
        size_t size;
        char *content_type; /* NULL: none */
        char *digest;       /* Docker-Content-Digest, NULL: none */
};
void xp_image_remote_blob_done(struct xp_image_remote_blob *b);

/* GET /v2/REPO/KIND/REF (KIND "manifests" or "blobs") into memory, at most max bytes. */
int xp_image_remote_fetch(struct xp_image_remote *reg,
                          const char *kind,
                          const char *ref,
                          const char *accept,
                          size_t max,
                          struct xp_image_remote_blob *ret,
                          struct xp_error *err);

/* GET the blob digest into fd (a socket: written with MSG_NOSIGNAL). *ret_bytes: bytes written. */
int xp_image_remote_stream(struct xp_image_remote *reg,
                           const char *digest,
                           int fd,
                           uint64_t *ret_bytes,
                           struct xp_error *err);
