/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the kube layer's gRPC code shares, over gRPC's C core and protobuf-c: the library's
 * lifetime, messages to and from byte buffers, Unix socket targets, status codes as -errno, and
 * a blocking unary call for clients (the pod-resources client). Only src/kube/ includes this.
 */

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdint.h>

#include "xpool/error.h"

/* Every user of gRPC holds a reference: grpc_init()/grpc_shutdown() count them. */
void kube_rpc_ref(void);
void kube_rpc_unref(void);

/* A new byte buffer holding msg packed (caller destroys), NULL on -ENOMEM. */
grpc_byte_buffer *kube_rpc_pack(const ProtobufCMessage *msg);

/*
 * Decodes a whole message of type desc from bb (NULL: an absent message, -ENODATA). -EMSGSIZE
 * over max bytes, -EBADMSG when the bytes are not such a message (err says which type and
 * how long), -ENOMEM. Caller frees *ret with protobuf_c_message_free_unpacked(*ret, NULL).
 */
int kube_rpc_unpack(grpc_byte_buffer *bb,
                    const ProtobufCMessageDescriptor *desc,
                    size_t max,
                    ProtobufCMessage **ret,
                    struct xp_error *err);

/* "unix:" + path; -ENAMETOOLONG when path does not fit a sockaddr_un. Caller frees. */
int kube_rpc_target(const char *path, char **ret, struct xp_error *err);

gpr_timespec kube_rpc_deadline_ms(int64_t ms);

const char *kube_rpc_status_name(grpc_status_code status);

/* What a client's unary call sends and receives: one batch, one completion. */
struct kube_unary {
        grpc_metadata_array initial, trailing;
        grpc_byte_buffer *send; /* the request, owned */
        grpc_byte_buffer *recv; /* the answer, owned; NULL when none came */
        grpc_status_code status;
        grpc_slice details;
};

void kube_unary_init(struct kube_unary *u);
void kube_unary_done(struct kube_unary *u);
/* Sends u->send, half-closes and receives the answer and the status, completing on tag. */
grpc_call_error kube_unary_start(grpc_call *call, struct kube_unary *u, void *tag);

/*
 * Calls method ("/v1.PodResourcesLister/List") on channel with req, waiting at most timeout_ms,
 * and decodes the answer as resp_desc (at most max bytes). 0 with *ret (free as above), or -errno
 * with err naming the method and the status the server gave.
 */
int kube_rpc_unary(grpc_channel *channel,
                   const char *method,
                   const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *resp_desc,
                   size_t max,
                   int64_t timeout_ms,
                   ProtobufCMessage **ret,
                   struct xp_error *err);
