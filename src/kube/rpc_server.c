/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The asynchronous gRPC server of rpc_server.h. Each call is a small state machine over three
 * batches that may be outstanding at once: the request (RECV_MESSAGE), the client's end
 * (RECV_CLOSE_ON_SERVER, always, so a stream learns that its client left) and one send (a
 * message, or the final status). The call object goes when none is outstanding; the server when
 * gRPC has confirmed its shutdown and no call and no accept is left.
 */
#include <errno.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rpc_server.h"
#include "xpool/log.h"
#include "xpool/macro.h"

struct kube_server {
        grpc_server *server;
        grpc_completion_queue *cq;
        struct kube_server_config config;
        char *socket_path;
        ino_t socket_ino;
        struct kube_tag accept_tag, shutdown_tag;
        grpc_call *incoming;
        grpc_call_details details;
        grpc_metadata_array metadata;
        bool accepting, stopping, shut_down;
        unsigned calls;
};

struct kube_call {
        struct kube_server *server;
        grpc_call *call;
        const struct kube_method *method;
        struct kube_tag recv_tag, close_tag, send_tag;
        grpc_byte_buffer *received, *sending, *queued;
        grpc_slice status_details;
        int cancelled;
        bool recv_pending, close_pending, send_pending;
        bool initial_sent, stream_open, finished;
};

static unsigned live_servers;

unsigned kube_server_live(void)
{
        return live_servers;
}

int kube_loop_run_once(grpc_completion_queue *cq, int64_t timeout_ms)
{
        grpc_event ev = grpc_completion_queue_next(cq, kube_rpc_deadline_ms(timeout_ms), NULL);
        struct kube_tag *tag;

        if (ev.type != GRPC_OP_COMPLETE)
                return 0;
        tag = ev.tag;
        tag->done(tag, ev.success != 0);
        return 1;
}

/* ---- the server's end ----------------------------------------------------------------------- */

static void server_maybe_free(struct kube_server *s)
{
        if (!s->stopping || !s->shut_down || s->accepting || s->calls > 0)
                return;
        grpc_server_destroy(s->server);
        grpc_call_details_destroy(&s->details);
        grpc_metadata_array_destroy(&s->metadata);
        free(s->socket_path);
        free(s);
        live_servers--;
        kube_rpc_unref();
}

static void shutdown_done(struct kube_tag *tag, bool ok)
{
        struct kube_server *s =
            (struct kube_server *)((char *)tag - offsetof(struct kube_server, shutdown_tag));

        (void)ok;
        s->shut_down = true;
        server_maybe_free(s);
}

void kube_server_stop(struct kube_server *s)
{
        struct stat st;

        if (!s || s->stopping)
                return;
        s->stopping = true;
        /* the socket goes with its server, unless another process has put its own there */
        if (lstat(s->socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == s->socket_ino)
                unlink(s->socket_path);
        grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
        grpc_server_cancel_all_calls(s->server);
}

/* ---- calls ------------------------------------------------------------------------------------
 */

static void call_maybe_release(struct kube_call *c)
{
        struct kube_server *s = c->server;

        if (c->recv_pending || c->close_pending || c->send_pending)
                return;
        grpc_call_unref(c->call);
        if (c->received)
                grpc_byte_buffer_destroy(c->received);
        if (c->queued)
                grpc_byte_buffer_destroy(c->queued);
        grpc_slice_unref(c->status_details);
        free(c);
        s->calls--;
        server_maybe_free(s);
}

/* Starts one send batch: a message (bb, taken), the final status (when finish), or both. */
static int
call_send(struct kube_call *c, grpc_byte_buffer *bb, bool finish, grpc_status_code status)
{
        grpc_op ops[3];
        size_t n = 0;

        memset(ops, 0, sizeof(ops));
        if (!c->initial_sent)
                ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
        if (bb) {
                ops[n].op = GRPC_OP_SEND_MESSAGE;
                ops[n++].data.send_message.send_message = bb;
        }
        if (finish) {
                ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
                ops[n].data.send_status_from_server.status = status;
                ops[n++].data.send_status_from_server.status_details = &c->status_details;
                c->finished = true;
        }
        c->initial_sent = true;
        c->sending = bb;
        if (grpc_call_start_batch(c->call, ops, n, &c->send_tag, NULL) != GRPC_CALL_OK) {
                c->sending = NULL;
                if (bb)
                        grpc_byte_buffer_destroy(bb);
                return -EIO;
        }
        c->send_pending = true;
        return 0;
}

static void call_fail(struct kube_call *c, grpc_status_code status, const char *message)
{
        grpc_slice_unref(c->status_details);
        c->status_details = grpc_slice_from_copied_string(message);
        if (call_send(c, NULL, true, status) < 0)
                xp_debug("kube", "cannot send status %s", kube_rpc_status_name(status));
}

static grpc_status_code errno_status(int r)
{
        switch (r) {
        case -EINVAL:
        case -EBADMSG:
        case -ENODATA:
                return GRPC_STATUS_INVALID_ARGUMENT;
        case -ENOENT:
                return GRPC_STATUS_NOT_FOUND;
        case -EOPNOTSUPP:
                return GRPC_STATUS_UNIMPLEMENTED;
        case -EMSGSIZE:
                return GRPC_STATUS_RESOURCE_EXHAUSTED;
        default:
                return GRPC_STATUS_INTERNAL;
        }
}

static void answer(struct kube_call *c, const ProtobufCMessage *request)
{
        const struct kube_method *m = c->method;
        struct xp_error err = {0};
        ProtobufCMessage *response = NULL;
        grpc_byte_buffer *bb;
        int r;

        if (m->stream) {
                c->stream_open = true;
                m->stream(c->server->config.userdata, c, request);
                return;
        }
        r = m->unary(c->server->config.userdata, request, &response, &err);
        if (r < 0) {
                xp_debug("kube", "%s: %s", m->path, xp_error_message(&err));
                call_fail(c, errno_status(r), xp_error_message(&err));
                return;
        }
        bb = kube_rpc_pack(response);
        m->free_response(response);
        if (!bb) {
                call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
                return;
        }
        if (call_send(c, bb, true, GRPC_STATUS_OK) < 0)
                xp_debug("kube", "%s: cannot send the answer", m->path);
}

static void recv_done(struct kube_tag *tag, bool ok)
{
        struct kube_call *c =
            (struct kube_call *)((char *)tag - offsetof(struct kube_call, recv_tag));
        ProtobufCMessage *request = NULL;
        struct xp_error err = {0};
        int r;

        c->recv_pending = false;
        if (ok && !c->server->stopping) {
                r = kube_rpc_unpack(
                    c->received, c->method->request, KUBE_REQUEST_MAX, &request, &err);
                if (r < 0) {
                        xp_log(LOG_WARNING,
                               "%s: refused a request: %s",
                               c->method->path,
                               xp_error_message(&err));
                        call_fail(c, errno_status(r), xp_error_message(&err));
                } else {
                        answer(c, request);
                        protobuf_c_message_free_unpacked(request, NULL);
                }
        }
        call_maybe_release(c);
}

static void close_done(struct kube_tag *tag, bool ok)
{
        struct kube_call *c =
            (struct kube_call *)((char *)tag - offsetof(struct kube_call, close_tag));

        (void)ok;
        c->close_pending = false;
        if (c->stream_open) {
                c->stream_open = false;
                if (c->server->config.on_close)
                        c->server->config.on_close(c->server->config.userdata, c);
        }
        call_maybe_release(c);
}

static void send_done(struct kube_tag *tag, bool ok)
{
        struct kube_call *c =
            (struct kube_call *)((char *)tag - offsetof(struct kube_call, send_tag));
        grpc_byte_buffer *next;

        c->send_pending = false;
        if (c->sending)
                grpc_byte_buffer_destroy(c->sending);
        c->sending = NULL;
        next = TAKE_PTR(c->queued);
        if (next && ok && c->stream_open && !c->finished)
                call_send(c, next, false, GRPC_STATUS_OK);
        else if (next)
                grpc_byte_buffer_destroy(next);
        call_maybe_release(c);
}

int kube_call_send(struct kube_call *c, const ProtobufCMessage *msg)
{
        grpc_byte_buffer *bb;

        if (!c->stream_open || c->finished)
                return -EPIPE;
        bb = kube_rpc_pack(msg);
        if (!bb)
                return -ENOMEM;
        if (c->send_pending) {
                /* a newer full state replaces the one still waiting */
                if (c->queued)
                        grpc_byte_buffer_destroy(c->queued);
                c->queued = bb;
                return 0;
        }
        return call_send(c, bb, false, GRPC_STATUS_OK);
}

static const struct kube_method *find_method(const struct kube_server *s, grpc_slice path)
{
        for (size_t i = 0; i < s->config.n_methods; i++)
                if (grpc_slice_str_cmp(path, s->config.methods[i].path) == 0)
                        return &s->config.methods[i];
        return NULL;
}

static int start_call(struct kube_server *s, grpc_call *call, const struct kube_method *method)
{
        struct kube_call *c = calloc(1, sizeof(*c));
        grpc_op op;

        if (!c) {
                grpc_call_cancel_with_status(
                    call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL);
                grpc_call_unref(call);
                return -ENOMEM;
        }
        *c = (struct kube_call){.server = s, .call = call, .method = method};
        c->recv_tag.done = recv_done;
        c->close_tag.done = close_done;
        c->send_tag.done = send_done;
        c->status_details = grpc_empty_slice();
        s->calls++;

        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        op.data.recv_close_on_server.cancelled = &c->cancelled;
        if (grpc_call_start_batch(call, &op, 1, &c->close_tag, NULL) == GRPC_CALL_OK)
                c->close_pending = true;
        if (!method) {
                call_fail(c, GRPC_STATUS_UNIMPLEMENTED, "no such method on this device plugin");
        } else {
                memset(&op, 0, sizeof(op));
                op.op = GRPC_OP_RECV_MESSAGE;
                op.data.recv_message.recv_message = &c->received;
                if (grpc_call_start_batch(call, &op, 1, &c->recv_tag, NULL) == GRPC_CALL_OK)
                        c->recv_pending = true;
        }
        call_maybe_release(c);
        return 0;
}

static void request_next(struct kube_server *s)
{
        grpc_call_error e;

        if (s->stopping)
                return;
        e = grpc_server_request_call(
            s->server, &s->incoming, &s->details, &s->metadata, s->cq, s->cq, &s->accept_tag);
        s->accepting = e == GRPC_CALL_OK;
        if (!s->accepting)
                xp_log(LOG_ERR, "%s: gRPC refused to accept calls", s->socket_path);
}

static void accept_done(struct kube_tag *tag, bool ok)
{
        struct kube_server *s =
            (struct kube_server *)((char *)tag - offsetof(struct kube_server, accept_tag));

        s->accepting = false;
        if (ok && s->incoming) {
                const struct kube_method *m = find_method(s, s->details.method);

                if (!m) {
                        char *name = grpc_slice_to_c_string(s->details.method);

                        xp_log(
                            LOG_WARNING, "%s: a call of unknown method %s", s->socket_path, name);
                        gpr_free(name);
                }
                start_call(s, TAKE_PTR(s->incoming), m);
        }
        grpc_call_details_destroy(&s->details);
        grpc_metadata_array_destroy(&s->metadata);
        grpc_call_details_init(&s->details);
        grpc_metadata_array_init(&s->metadata);
        if (ok)
                request_next(s);
        server_maybe_free(s);
}

int kube_server_start(const struct kube_server_config *config,
                      grpc_completion_queue *cq,
                      struct kube_server **ret,
                      struct xp_error *err)
{
        _cleanup_free_ char *target = NULL;
        grpc_server_credentials *creds;
        struct kube_server *s;
        struct stat st;
        int r;

        r = kube_rpc_target(config->socket_path, &target, err);
        if (r < 0)
                return r;
        s = calloc(1, sizeof(*s));
        if (!s || !(s->socket_path = strdup(config->socket_path))) {
                free(s);
                return -ENOMEM;
        }
        kube_rpc_ref();
        live_servers++;
        s->config = *config;
        s->cq = cq;
        s->accept_tag.done = accept_done;
        s->shutdown_tag.done = shutdown_done;
        grpc_call_details_init(&s->details);
        grpc_metadata_array_init(&s->metadata);
        s->server = grpc_server_create(NULL, NULL);
        grpc_server_register_completion_queue(s->server, cq, NULL);
        /* gRPC replaces a stale socket file itself; refuse to replace anything else */
        if (lstat(config->socket_path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
                r = xp_errorf(err, -EEXIST, "%s exists and is not a socket", config->socket_path);
                goto fail;
        }
        creds = grpc_insecure_server_credentials_create();
        r = grpc_server_add_http2_port(s->server, target, creds);
        grpc_server_credentials_release(creds);
        if (r <= 0) {
                r = xp_errorf(err, -EADDRINUSE, "cannot listen on %s", config->socket_path);
                goto fail;
        }
        grpc_server_start(s->server);
        if (lstat(config->socket_path, &st) == 0)
                s->socket_ino = st.st_ino;
        /* owner only: the kubelet runs as root, and nobody else has business here */
        chmod(config->socket_path, 0600);
        request_next(s);
        *ret = s;
        return 0;
fail:
        /* never started: gRPC still wants the shutdown before destroy */
        s->stopping = true;
        grpc_server_shutdown_and_notify(s->server, cq, &s->shutdown_tag);
        return r;
}
