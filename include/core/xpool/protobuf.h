/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Kubernetes protobuf request bodies (Content-Type application/vnd.kubernetes.protobuf), which
 * kubectl's typed commands (kubectl create namespace) and client-go's typed clients send, read
 * into the JSON object the API accepts. A body is the magic "k8s\0" and a runtime.Unknown
 * envelope: the type (apiVersion, kind) and the object's own protobuf encoding in `raw`.
 *
 * Supported kinds: v1 Namespace and v1 Pod, with what they embed (ObjectMeta, PodSpec,
 * Container, ContainerPort, EnvVar, ResourceRequirements, Toleration, PodStatus, ...). Each
 * message is read through a table of the field numbers we know; a field number the table lacks
 * is an error, never dropped, so no part of what the client asked for is lost silently.
 *
 * Fields come out the way Kubernetes writes JSON: the encoder of Go's non-pointer fields writes
 * zero values ("" , 0, false), which JSON leaves out (omitempty), so those are omitted; a field
 * whose Go type is a pointer (terminationGracePeriodSeconds, enableServiceLinks, ...) is kept
 * whenever present, zero or not. An empty Time (metadata.creationTimestamp) is omitted; others
 * are written as RFC 3339 in UTC, seconds precision.
 */

#include <stddef.h>

#include <jansson.h>

#include "xpool/error.h"

/* The four bytes that start every Kubernetes protobuf body. */
#define XP_PROTOBUF_MAGIC     "k8s\0"
#define XP_PROTOBUF_MAGIC_LEN 4

/* Limits on a body: its size, and how deep messages may nest (the supported kinds need 8). */
#define XP_PROTOBUF_SIZE_MAX  (3 * 1024 * 1024)
#define XP_PROTOBUF_DEPTH_MAX 32

/*
 * Decodes a Kubernetes protobuf body (magic + runtime.Unknown) of one of the supported kinds
 * into the JSON object the API would accept, with apiVersion and kind from the envelope.
 * On success *ret is a new object the caller releases with json_decref().
 *
 * Errors: -EPROTONOSUPPORT for a kind we do not read, or a field number the tables do not know
 * (err names the field's path, the message and the number, and says to use kubectl apply -f);
 * -EBADMSG for malformed input (no magic, a truncated varint or length, a wire type that does
 * not match the field, a string that is not UTF-8 or holds NUL, an envelope with a content
 * encoding); -E2BIG past the limits above; -ENOMEM. *ret is untouched on failure.
 */
int xp_protobuf_to_json(const void *data, size_t size, json_t **ret, struct xp_error *err);
