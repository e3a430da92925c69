/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libcurl (registry pulls) and libarchive (layer unpacking), loaded when first needed
 * (dlopen) instead of with the executable: the node agent links the image store, but most of its
 * life it pulls nothing, and the two bring some thirty libraries (OpenSSL's libcrypto, Kerberos,
 * LDAP, libxml2, ICU, libstdc++, ...) whose pages would be a third of its resident size
 * (docs/agent.md, "The agent's executable"). The image store calls them through image_libs:
 * image_libs.curl_easy_init() after image_curl_load(), image_libs.archive_read_new() after
 * image_archive_load().
 */

#include <archive.h>
#include <archive_entry.h>
/* curl_easy_setopt() and curl_easy_getinfo() as functions: typecheck-gcc.h makes them macros */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "xpool/error.h"

#define IMAGE_CURL_FUNCTIONS(X)                                                                    \
        X(curl_easy_cleanup)                                                                       \
        X(curl_easy_escape)                                                                        \
        X(curl_easy_getinfo)                                                                       \
        X(curl_easy_init)                                                                          \
        X(curl_easy_perform)                                                                       \
        X(curl_easy_reset)                                                                         \
        X(curl_easy_setopt)                                                                        \
        X(curl_easy_strerror)                                                                      \
        X(curl_free)                                                                               \
        X(curl_slist_append)                                                                       \
        X(curl_slist_free_all)

#define IMAGE_ARCHIVE_FUNCTIONS(X)                                                                 \
        X(archive_entry_atime)                                                                     \
        X(archive_entry_atime_is_set)                                                              \
        X(archive_entry_atime_nsec)                                                                \
        X(archive_entry_filetype)                                                                  \
        X(archive_entry_gid)                                                                       \
        X(archive_entry_hardlink)                                                                  \
        X(archive_entry_mtime)                                                                     \
        X(archive_entry_mtime_nsec)                                                                \
        X(archive_entry_pathname)                                                                  \
        X(archive_entry_perm)                                                                      \
        X(archive_entry_rdev)                                                                      \
        X(archive_entry_size)                                                                      \
        X(archive_entry_symlink)                                                                   \
        X(archive_entry_uid)                                                                       \
        X(archive_entry_xattr_next)                                                                \
        X(archive_entry_xattr_reset)                                                               \
        X(archive_error_string)                                                                    \
        X(archive_read_data_block)                                                                 \
        X(archive_read_free)                                                                       \
        X(archive_read_new)                                                                        \
        X(archive_read_next_header)                                                                \
        X(archive_read_open)                                                                       \
        X(archive_read_open_filename)                                                              \
        X(archive_read_support_filter_gzip)                                                        \
        X(archive_read_support_filter_zstd)                                                        \
        X(archive_read_support_format_raw)                                                         \
        X(archive_read_support_format_tar)

#define IMAGE_LIBS_POINTER(f) __typeof__(f) *f;
struct image_libs {
        IMAGE_CURL_FUNCTIONS(IMAGE_LIBS_POINTER)
        IMAGE_ARCHIVE_FUNCTIONS(IMAGE_LIBS_POINTER)
};
#undef IMAGE_LIBS_POINTER

/* The functions; each library's are set once its load has succeeded. */
extern struct image_libs image_libs;

/* Loads libcurl (once; thread-safe): 0, or -ELIBACC with err naming the library and why. */
int image_curl_load(struct xp_error *err);
/* Loads libarchive likewise. */
int image_archive_load(struct xp_error *err);
