/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A gRPC server on a Unix socket (rpc.h), driven by the caller's kube_loop: every handler runs
 * on the loop's thread, so handlers need no locks.
 *
 * Unary methods answer from their handler at once. Server-streaming methods keep the call: the
 * handler gets it and sends with kube_call_send() for as long as the client stays; a send while
 * the previous message has not started out replaces it (a stream of full states: only the newest
 * matters). A request that does not decode is answered INVALID_ARGUMENT with what was wrong, an
 * unknown method UNIMPLEMENTED; the server goes on serving either way.
 */

#include <stdbool.h>

#include "rpc.h"
#include "xpool/error.h"

struct kube_call;
struct kube_server;

/* Requests larger than this are refused (RESOURCE_EXHAUSTED) before they are decoded. */
#define KUBE_REQUEST_MAX (4 << 20)

struct kube_method {
        const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
        const ProtobufCMessageDescriptor *request;
        /*
         * Unary: 0 with *ret_response (freed with protobuf_c_message_free_unpacked-compatible
         * free_response), or -errno with err: -EINVAL is INVALID_ARGUMENT, -ENOENT NOT_FOUND,
         * -EOPNOTSUPP UNIMPLEMENTED, other INTERNAL; the message is err's.
         */
        int (*unary)(void *userdata,
                     const ProtobufCMessage *request,
                     ProtobufCMessage **ret_response,
                     struct xp_error *err);
        void (*free_response)(ProtobufCMessage *response);
        /* Streaming: the call is the handler's until on_close. */
        void (*stream)(void *userdata, struct kube_call *call, const ProtobufCMessage *request);
};

struct kube_server_config {
        const char *socket_path;
        const struct kube_method *methods;
        size_t n_methods;
        void *userdata;
        /* A stream ended (client gone, server shut down): the handler forgets the call. */
        void (*on_close)(void *userdata, struct kube_call *call);
};

/*
 * Listens on socket_path (a stale socket file there is replaced; anything else is refused with
 * -EEXIST) and serves on loop. -EADDRINUSE with err when the socket cannot be bound.
 */
int kube_server_start(const struct kube_server_config *config,
                      struct kube_loop *loop,
                      struct kube_server **ret,
                      struct xp_error *err);

/*
 * Stops accepting, ends every call (streams get on_close, at once) and frees the server. The
 * socket file is removed when it is still the one the server made. NULL is allowed.
 */
void kube_server_stop(struct kube_server *server);

/* Sends msg on a streaming call (packed at once: msg stays the caller's). -ENOMEM, -EPIPE when
 * the call has ended. */
int kube_call_send(struct kube_call *call, const ProtobufCMessage *msg);
