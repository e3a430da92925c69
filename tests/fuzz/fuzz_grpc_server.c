/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the kube layer's gRPC server (src/kube/rpc_server.c on libnghttp2) with what a client
 * sends after the HTTP/2 preface and an empty SETTINGS frame: frames, header blocks, messages,
 * on a real Unix socket to a server with a unary and a streaming method. Whatever comes, the
 * server must end or keep the connection without crashing, leaking or blocking, and answer a
 * well-formed call on a fresh connection afterwards.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "deviceplugin.pb-c.h"
#include "kube/rpc_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct kube_loop *loop;
static struct kube_server *server;
static char path[96];
static struct kube_call *stream;

static int
empty(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret, struct xp_error *err)
{
        V1beta1__Empty *e = malloc(sizeof(*e));

        (void)userdata;
        (void)req;
        if (!e)
                return xp_errorf(err, -ENOMEM, "out of memory");
        v1beta1__empty__init(e);
        *ret = &e->base;
        return 0;
}

static void free_message(ProtobufCMessage *m)
{
        protobuf_c_message_free_unpacked(m, NULL);
}

static void watch(void *userdata, struct kube_call *call, const ProtobufCMessage *req)
{
        V1beta1__Empty e = V1BETA1__EMPTY__INIT;

        (void)userdata;
        (void)req;
        stream = call;
        kube_call_send(call, &e.base);
}

static void on_close(void *userdata, struct kube_call *call)
{
        (void)userdata;
        if (call == stream)
                stream = NULL;
}

static const struct kube_method methods[] = {
    {.path = "/v1beta1.DevicePlugin/Allocate",
     .request = &v1beta1__allocate_request__descriptor,
     .unary = empty,
     .free_response = free_message},
    {.path = "/v1beta1.DevicePlugin/ListAndWatch",
     .request = &v1beta1__empty__descriptor,
     .stream = watch},
};

static char dir[] = "/tmp/xpool-fuzz-grpc-XXXXXX";

static void stop(void)
{
        kube_server_stop(server);
        kube_loop_free(loop);
        rmdir(dir);
}

static void start(void)
{
        struct xp_error err = {0};

        if (!mkdtemp(dir))
                abort();
        snprintf(path, sizeof(path), "%s/s.sock", dir);
        if (kube_loop_new(&loop) < 0 ||
            kube_server_start(
                &(struct kube_server_config){
                    .socket_path = path, .methods = methods, .n_methods = 2, .on_close = on_close},
                loop,
                &server,
                &err) < 0)
                abort();
        atexit(stop);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        char sink[4096];
        int fd;

        if (!loop)
                start();
        if (size > 65536)
                return 0;
        strcpy(sun.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
                abort();
        (void)!write(fd, preface, sizeof(preface) - 1);
        (void)!write(fd, data, size);
        shutdown(fd, SHUT_WR);
        /* until the server closes the connection (the client's end is shut), bounded */
        for (int k = 0; k < 200; k++) {
                ssize_t n;

                kube_loop_run_once(loop, k < 20 ? 0 : 1);
                n = read(fd, sink, sizeof(sink));
                if (n == 0 || (n < 0 && errno != EAGAIN))
                        break;
        }
        close(fd);
        for (int k = 0; k < 5; k++)
                kube_loop_run_once(loop, 0);
        return 0;
}
