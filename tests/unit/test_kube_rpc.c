/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC on libnghttp2 (src/kube/rpc*.c): framing, grpc-message's encoding, and a server and its
 * clients on one loop: unary answers, a stream that outlives bad input, errors as statuses. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "deviceplugin.pb-c.h"
#include "kube/rpc_server.h"

static void frame_round_trip(void **state)
{
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
        struct kube_bytes b = {0};
        ProtobufCMessage *m = NULL;
        struct xp_error err = {0};

        (void)state;
        req.version = "v1beta1";
        req.resource_name = "nvidia.com/gpu";
        assert_int_equal(kube_rpc_frame(&req.base, &b), 0);
        assert_int_equal(b.data[0], 0);
        assert_int_equal(b.len, 5 + protobuf_c_message_get_packed_size(&req.base));
        assert_int_equal(
            kube_rpc_unframe(&b, &v1beta1__register_request__descriptor, 1024, &m, &err), 0);
        assert_string_equal(((V1beta1__RegisterRequest *)m)->resource_name, "nvidia.com/gpu");
        protobuf_c_message_free_unpacked(m, NULL);
        /* over the limit, compressed, a prefix that lies, nothing at all */
        assert_int_equal(kube_rpc_unframe(&b, &v1beta1__register_request__descriptor, 4, &m, &err),
                         -EMSGSIZE);
        b.data[0] = 1;
        assert_int_equal(
            kube_rpc_unframe(&b, &v1beta1__register_request__descriptor, 1024, &m, &err),
            -EOPNOTSUPP);
        b.data[0] = 0;
        b.len--;
        assert_int_equal(
            kube_rpc_unframe(&b, &v1beta1__register_request__descriptor, 1024, &m, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "its prefix says"));
        kube_bytes_done(&b);
        assert_int_equal(
            kube_rpc_unframe(&b, &v1beta1__register_request__descriptor, 1024, &m, &err), -ENODATA);
}

static void percent_encoding(void **state)
{
        char enc[64], dec[64];

        (void)state;
        kube_rpc_percent_encode("50% off\n\xc3\xa9", enc, sizeof(enc));
        assert_string_equal(enc, "50%25 off%0A%C3%A9");
        kube_rpc_percent_decode(enc, strlen(enc), dec, sizeof(dec));
        assert_string_equal(dec, "50% off\n\xc3\xa9");
        /* a cut output stays terminated */
        kube_rpc_percent_encode("%%%%%%", enc, 8);
        assert_true(strlen(enc) < 8);
}

/* ---- a server and clients on one loop ------------------------------------------------------ */

struct fixture {
        struct kube_loop *loop;
        struct kube_server *server;
        char dir[64], path[96];
        struct kube_call *stream;
        unsigned closed;
};

static int
echo(void *userdata, const ProtobufCMessage *request, ProtobufCMessage **ret, struct xp_error *err)
{
        const V1beta1__RegisterRequest *in = (const void *)request;
        V1beta1__RegisterRequest *out;

        (void)userdata;
        if (in->resource_name && strcmp(in->resource_name, "bad") == 0)
                return xp_errorf(err, -EINVAL, "no resource named bad: 100%% refused");
        out = malloc(sizeof(*out));
        v1beta1__register_request__init(out);
        out->resource_name = strdup(in->resource_name ? in->resource_name : "");
        *ret = &out->base;
        return 0;
}

static void free_response(ProtobufCMessage *m)
{
        V1beta1__RegisterRequest *r = (void *)m;

        free(r->resource_name);
        free(r);
}

static void watch(void *userdata, struct kube_call *call, const ProtobufCMessage *request)
{
        struct fixture *f = userdata;
        V1beta1__Empty e = V1BETA1__EMPTY__INIT;

        (void)request;
        f->stream = call;
        assert_int_equal(kube_call_send(call, &e.base), 0);
}

static void on_close(void *userdata, struct kube_call *call)
{
        struct fixture *f = userdata;

        if (call == f->stream)
                f->stream = NULL;
        f->closed++;
}

static const struct kube_method methods[] = {
    {.path = "/t.T/Echo",
     .request = &v1beta1__register_request__descriptor,
     .unary = echo,
     .free_response = free_response},
    {.path = "/t.T/Watch", .request = &v1beta1__empty__descriptor, .stream = watch},
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct xp_error err = {0};

        snprintf(f->dir, sizeof(f->dir), "/tmp/xpool-test-rpc-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/s.sock", f->dir);
        assert_int_equal(kube_loop_new(&f->loop), 0);
        assert_int_equal(kube_server_start(&(struct kube_server_config){.socket_path = f->path,
                                                                        .methods = methods,
                                                                        .n_methods = 2,
                                                                        .userdata = f,
                                                                        .on_close = on_close},
                                           f->loop,
                                           &f->server,
                                           &err),
                         0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        kube_server_stop(f->server);
        kube_loop_free(f->loop);
        rmdir(f->dir);
        free(f);
        return 0;
}

struct outcome {
        bool done;
        int status;
        char details[256];
        size_t len;
};

static void done(void *userdata, const struct kube_reply *reply)
{
        struct outcome *o = userdata;

        o->done = true;
        o->status = reply->status;
        o->len = reply->body.len;
        snprintf(o->details, sizeof(o->details), "%s", reply->details);
}

static void call(struct fixture *f, const char *method, const char *name, struct outcome *o)
{
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
        struct kube_client_call *c = NULL;
        struct xp_error err = {0};

        *o = (struct outcome){0};
        req.resource_name = (char *)name;
        assert_int_equal(kube_client_call_start(
                             f->loop, f->path, method, &req.base, 1024, 5000, done, o, &c, &err),
                         0);
        for (int k = 0; k < 500 && !o->done; k++)
                kube_loop_run_once(f->loop, 10);
        assert_true(o->done);
}

static void unary_calls(void **state)
{
        struct fixture *f = *state;
        struct outcome o;

        call(f, "/t.T/Echo", "nvidia.com/gpu", &o);
        assert_int_equal(o.status, KUBE_STATUS_OK);
        assert_true(o.len > 5);
        call(f, "/t.T/Echo", "bad", &o);
        assert_int_equal(o.status, KUBE_STATUS_INVALID_ARGUMENT);
        assert_string_equal(o.details, "no resource named bad: 100% refused");
        call(f, "/t.T/Nope", "x", &o);
        assert_int_equal(o.status, KUBE_STATUS_UNIMPLEMENTED);
}

static void stream_outlives_bad_input(void **state)
{
        struct fixture *f = *state;
        V1beta1__Empty e = V1BETA1__EMPTY__INIT;
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        struct outcome watch_o = {0}, o;
        struct kube_client_call *c = NULL;
        struct xp_error err = {0};
        int fd;

        assert_int_equal(
            kube_client_call_start(
                f->loop, f->path, "/t.T/Watch", &e.base, 1024, 5000, done, &watch_o, &c, &err),
            0);
        for (int k = 0; k < 500 && !f->stream; k++)
                kube_loop_run_once(f->loop, 10);
        assert_non_null(f->stream);
        /* bytes that are no HTTP/2 on a connection of their own */
        strcpy(sun.sun_path, f->path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
        assert_int_equal(write(fd, "GET / HTTP/1.1\r\n\r\n", 18), 18);
        for (int k = 0; k < 20; k++)
                kube_loop_run_once(f->loop, 5);
        close(fd);
        call(f, "/t.T/Echo", "still", &o);
        assert_int_equal(o.status, KUBE_STATUS_OK);
        assert_non_null(f->stream);
        assert_int_equal(kube_call_send(f->stream, &e.base), 0);
        /* the client cancels: the server's stream ends with on_close */
        kube_client_call_cancel(c);
        for (int k = 0; k < 500 && f->stream; k++)
                kube_loop_run_once(f->loop, 10);
        assert_null(f->stream);
        assert_false(watch_o.done);
}

static void unreachable(void **state)
{
        V1beta1__Empty e = V1BETA1__EMPTY__INIT;
        ProtobufCMessage *m = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(kube_rpc_unary("/nonexistent/x.sock",
                                        "/t.T/Echo",
                                        &e.base,
                                        &v1beta1__empty__descriptor,
                                        1024,
                                        100,
                                        &m,
                                        &err),
                         -ENOENT);
        assert_non_null(strstr(err.msg, "/nonexistent/x.sock"));
        assert_null(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(frame_round_trip),
            cmocka_unit_test(percent_encoding),
            cmocka_unit_test_setup_teardown(unary_calls, setup, teardown),
            cmocka_unit_test_setup_teardown(stream_outlives_bad_input, setup, teardown),
            cmocka_unit_test(unreachable),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
