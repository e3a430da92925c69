/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC C core and protobuf-c glue for the kube layer (rpc.h). */
#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "rpc.h"

void kube_rpc_ref(void)
{
        grpc_init();
}

void kube_rpc_unref(void)
{
        /* blocking: the last user's shutdown waits for gRPC's own threads, so none outlives it
         * (and LeakSanitizer sees what gRPC freed) */
        grpc_shutdown_blocking();
}

grpc_byte_buffer *kube_rpc_pack(const ProtobufCMessage *msg)
{
        size_t size = protobuf_c_message_get_packed_size(msg);
        grpc_slice slice = grpc_slice_malloc(size);
        grpc_byte_buffer *bb;

        protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(slice));
        bb = grpc_raw_byte_buffer_create(&slice, 1);
        grpc_slice_unref(slice);
        return bb;
}

int kube_rpc_unpack(grpc_byte_buffer *bb,
                    const ProtobufCMessageDescriptor *desc,
                    size_t max,
                    ProtobufCMessage **ret,
                    struct xp_error *err)
{
        grpc_byte_buffer_reader reader;
        ProtobufCMessage *msg;
        grpc_slice slice;
        size_t size;

        if (!bb)
                return xp_errorf(err, -ENODATA, "no %s message", desc->name);
        size = grpc_byte_buffer_length(bb);
        if (size > max)
                return xp_errorf(err,
                                 -EMSGSIZE,
                                 "%s message of %zu bytes, the limit is %zu",
                                 desc->name,
                                 size,
                                 max);
        if (!grpc_byte_buffer_reader_init(&reader, bb))
                return xp_errorf(err, -EBADMSG, "%s message: cannot be decompressed", desc->name);
        slice = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        msg = protobuf_c_message_unpack(
            desc, NULL, GRPC_SLICE_LENGTH(slice), GRPC_SLICE_START_PTR(slice));
        grpc_slice_unref(slice);
        if (!msg)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "%zu bytes that are not a protobuf %s message",
                                 size,
                                 desc->name);
        *ret = msg;
        return 0;
}

int kube_rpc_target(const char *path, char **ret, struct xp_error *err)
{
        struct sockaddr_un sun;
        char *target;

        if (!path || !*path)
                return xp_errorf(err, -EINVAL, "no socket path");
        if (strlen(path) >= sizeof(sun.sun_path))
                return xp_errorf(err,
                                 -ENAMETOOLONG,
                                 "%s: longer than a Unix socket path may be (%zu bytes)",
                                 path,
                                 sizeof(sun.sun_path) - 1);
        if (asprintf(&target, "unix:%s", path) < 0)
                return -ENOMEM;
        *ret = target;
        return 0;
}

gpr_timespec kube_rpc_deadline_ms(int64_t ms)
{
        return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* A gRPC status as -errno: UNAVAILABLE -ECONNREFUSED, DEADLINE_EXCEEDED -ETIMEDOUT, UNIMPLEMENTED
 * -EOPNOTSUPP, NOT_FOUND -ENOENT, INVALID_ARGUMENT -EINVAL, RESOURCE_EXHAUSTED -EMSGSIZE, other
 * -EIO; OK 0. */
static int kube_rpc_status_errno(grpc_status_code status)
{
        switch (status) {
        case GRPC_STATUS_OK:
                return 0;
        case GRPC_STATUS_UNAVAILABLE:
                return -ECONNREFUSED;
        case GRPC_STATUS_DEADLINE_EXCEEDED:
                return -ETIMEDOUT;
        case GRPC_STATUS_UNIMPLEMENTED:
                return -EOPNOTSUPP;
        case GRPC_STATUS_NOT_FOUND:
                return -ENOENT;
        case GRPC_STATUS_INVALID_ARGUMENT:
                return -EINVAL;
        case GRPC_STATUS_RESOURCE_EXHAUSTED:
                return -EMSGSIZE;
        default:
                return -EIO;
        }
}

const char *kube_rpc_status_name(grpc_status_code status)
{
        static const char *const names[] = {
            "OK",
            "CANCELLED",
            "UNKNOWN",
            "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND",
            "ALREADY_EXISTS",
            "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED",
            "FAILED_PRECONDITION",
            "ABORTED",
            "OUT_OF_RANGE",
            "UNIMPLEMENTED",
            "INTERNAL",
            "UNAVAILABLE",
            "DATA_LOSS",
            "UNAUTHENTICATED",
        };

        if ((unsigned)status < sizeof(names) / sizeof(names[0]))
                return names[status];
        return "UNKNOWN";
}

void kube_unary_init(struct kube_unary *u)
{
        *u = (struct kube_unary){.status = GRPC_STATUS_UNKNOWN, .details = grpc_empty_slice()};
        grpc_metadata_array_init(&u->initial);
        grpc_metadata_array_init(&u->trailing);
}

void kube_unary_done(struct kube_unary *u)
{
        if (u->send)
                grpc_byte_buffer_destroy(u->send);
        if (u->recv)
                grpc_byte_buffer_destroy(u->recv);
        grpc_metadata_array_destroy(&u->initial);
        grpc_metadata_array_destroy(&u->trailing);
        grpc_slice_unref(u->details);
        u->send = u->recv = NULL;
}

grpc_call_error kube_unary_start(grpc_call *call, struct kube_unary *u, void *tag)
{
        grpc_op ops[6];

        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = u->send;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &u->initial;
        ops[4].op = GRPC_OP_RECV_MESSAGE;
        ops[4].data.recv_message.recv_message = &u->recv;
        ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        ops[5].data.recv_status_on_client.trailing_metadata = &u->trailing;
        ops[5].data.recv_status_on_client.status = &u->status;
        ops[5].data.recv_status_on_client.status_details = &u->details;
        return grpc_call_start_batch(call, ops, 6, tag, NULL);
}

int kube_rpc_unary(grpc_channel *channel,
                   const char *method,
                   const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *resp_desc,
                   size_t max,
                   int64_t timeout_ms,
                   ProtobufCMessage **ret,
                   struct xp_error *err)
{
        gpr_timespec deadline = kube_rpc_deadline_ms(timeout_ms);
        struct kube_unary u;
        grpc_slice method_slice = grpc_slice_from_static_string(method);
        grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
        grpc_call *call;
        grpc_event ev;
        int r = 0;

        kube_unary_init(&u);
        call = grpc_channel_create_call(
            channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method_slice, NULL, deadline, NULL);
        u.send = kube_rpc_pack(req);
        if (!call || !u.send) {
                r = xp_errorf(err, -ENOMEM, "%s: cannot start the call", method);
                goto out;
        }
        if (kube_unary_start(call, &u, &u) != GRPC_CALL_OK) {
                r = xp_errorf(err, -EIO, "%s: gRPC refused the call", method);
                goto out;
        }
        /* the call's own deadline ends it; the margin only guards against a stuck queue */
        ev = grpc_completion_queue_pluck(cq, &u, kube_rpc_deadline_ms(timeout_ms + 5000), NULL);
        if (ev.type != GRPC_OP_COMPLETE) {
                grpc_call_cancel(call, NULL);
                grpc_completion_queue_pluck(cq, &u, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
                r = xp_errorf(
                    err, -ETIMEDOUT, "%s: no answer in %" PRId64 " ms", method, timeout_ms);
                goto out;
        }
        if (u.status != GRPC_STATUS_OK) {
                char *details = grpc_slice_to_c_string(u.details);

                r = xp_errorf(err,
                              kube_rpc_status_errno(u.status),
                              "%s: %s: %s",
                              method,
                              kube_rpc_status_name(u.status),
                              details && *details ? details : "(no details)");
                gpr_free(details);
                goto out;
        }
        r = kube_rpc_unpack(u.recv, resp_desc, max, ret, err);
        if (r < 0)
                xp_error_prefix(err, r, "%s", method);
out:
        if (call)
                grpc_call_unref(call);
        grpc_completion_queue_shutdown(cq);
        while (
            grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
            GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(cq);
        kube_unary_done(&u);
        return r;
}
