/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The naming rules Kubernetes applies, with its wording, so that a manifest rejected here would
 * be rejected by a Kubernetes API server for the same reason. Each check returns 0 or -EINVAL
 * with a message that names the rule and shows the bad value.
 */

#include <stdbool.h>

#include "xpool/error.h"

#define XP_DNS1123_LABEL_MAX     63
#define XP_DNS1123_SUBDOMAIN_MAX 253
#define XP_QUALIFIED_NAME_MAX    63
#define XP_LABEL_VALUE_MAX       63

/* Object names such as a Pod's or a Node's: lower-case RFC 1123 subdomain. */
int xp_check_dns1123_subdomain(const char *value, struct xp_error *err);

/* Namespace and container names: lower-case RFC 1123 label. */
int xp_check_dns1123_label(const char *value, struct xp_error *err);

/* Label and annotation keys, resource names: "[prefix/]name". */
int xp_check_qualified_name(const char *value, struct xp_error *err);

/* Label values: empty, or up to 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends. */
int xp_check_label_value(const char *value, struct xp_error *err);

/* Environment variable names: printable ASCII without '=', not empty. */
/*
 * A label value made from free text (a device's model): characters a label value may not hold
 * become '-', leading and trailing non-alphanumerics are dropped, at most XP_LABEL_VALUE_MAX
 * characters are kept ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3", as NVIDIA's feature
 * discovery writes it). Returns buf ("" when nothing is left).
 */
char *xp_label_value_from(const char *text, char buf[static XP_LABEL_VALUE_MAX + 1]);
int xp_check_env_name(const char *value, struct xp_error *err);
