/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One import under way (import.c: the tarball's members; import_formats.c: the two formats). */

#include "image_internal.h"
#include "xpool/fileio.h"

#define XP_IMPORT_NAME_MAX 256

struct xp_import {
        struct xp_image_store *s;
        const struct xp_image_import_options *o;
        struct xp_image_platform platform;
        char *dir; /* tmp/import-XXXXXX: the members, flattened */
        int dir_fd;
        struct xp_image **images; /* imported so far */
        size_t n_images;
};

/* A member's name without '/' (-EPERM for '..'). */
int xp_import_flat_name(const char *name,
                        char buf[static XP_IMPORT_NAME_MAX],
                        struct xp_error *err);
/* The tarball's members into dir_fd. */
int xp_import_extract(const char *file, int dir_fd, struct xp_error *err);
/* A member (flat name) into memory, at most max bytes; -EBADMSG when absent or larger. */
int xp_import_read(
    int dir_fd, const char *flat, size_t max, char **ret, size_t *ret_size, struct xp_error *err);
/* The images of an OCI image layout (index.json, blobs/) or a docker-archive (manifest.json). */
int xp_import_oci(struct xp_import *im, struct xp_error *err);
int xp_import_docker(struct xp_import *im, struct xp_error *err);
