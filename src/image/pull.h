/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One pull under way (pull.c: the manifest; pull_layers.c: config, layers, the record). */

#include "image_internal.h"

struct xp_image_remote;

struct xp_pull {
        struct xp_image_store *s;
        const struct xp_image_pull_options *o;
        struct xp_image_ref ref;
        char *canonical;
        struct xp_image_platform platform;
        bool untrusted;
        struct xp_image_cred *creds;
        size_t n_creds;
        struct xp_image_remote *reg; /* the endpoint that served the manifest */
        char *top_digest;            /* what the reference resolved to (an index or a manifest) */
        char *manifest_digest;       /* the platform's manifest */
        char *top_data, *manifest_data, *config_data;
        size_t top_size, manifest_size, config_size;
        struct xp_image_manifest manifest;
        struct xp_image_config config;
        char **diff_ids;
        size_t n_diff_ids;
        uint64_t size;
};

void xp_pull_done(struct xp_pull *p);
/* The manifest (through an index to the platform's), checked: p->manifest and its digests. */
int xp_pull_manifest(struct xp_pull *p, struct xp_error *err);
/* The candidate credentials: the pull secrets, the registries file's, the node's file. */
int xp_pull_gather_creds(struct xp_pull *p, struct xp_error *err);
