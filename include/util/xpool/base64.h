/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/*
 * Decodes standard base64 (RFC 4648 section 4, '=' padding optional), as kubeconfig
 * certificate-authority-data holds it. ASCII whitespace (line breaks of wrapped PEM or YAML
 * folding) is skipped. On success *ret is a new NUL-terminated buffer (caller frees) of
 * *ret_len bytes, the terminator not counted. -EINVAL for a character outside the alphabet,
 * padding anywhere but the end, or a length that no encoding has; -ENOMEM. Outputs untouched on
 * failure.
 */
int xp_base64_decode(const char *text, size_t len, char **ret, size_t *ret_len);

/* Encodes len bytes as standard base64 with padding; *ret is a new NUL-terminated string (caller
 * frees). 0 or -ENOMEM (then *ret is untouched). */
int xp_base64_encode(const void *data, size_t len, char **ret);
