/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/probe.h"

#define NS    INT64_C(1000000000)
#define T0    (INT64_C(1800000000) * NS)
#define AT(s) (T0 + (s)*NS)

static json_t *container(const char *text)
{
        json_error_t e;
        json_t *v = json_loads(text, 0, &e);

        if (!v)
                fail_msg("bad test JSON: %s: %s", e.text, text);
        return v;
}

/* A container of the probes given (JSON members), begun at T0. */
static void begin(struct xp_probe_container *c, const char *probes)
{
        char text[2048];
        static const char *const keys[] = {"startupProbe", "livenessProbe", "readinessProbe"};
        json_t *j;

        snprintf(text,
                 sizeof(text),
                 "{\"name\":\"web\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080}],%s}",
                 probes);
        j = container(text);
        *c = (struct xp_probe_container){0};
        for (int k = 0; k < XP_PROBE_KINDS; k++) {
                struct xp_error err = {0};

                if (xp_probe_spec_parse(j, keys[k], &c->spec[k], &err) < 0)
                        fail_msg("%s: %s", keys[k], err.msg);
        }
        json_decref(j);
        xp_probe_container_begin(c, T0);
}

static void end(struct xp_probe_container *c)
{
        for (int k = 0; k < XP_PROBE_KINDS; k++)
                xp_probe_spec_clear(&c->spec[k]);
}

static void test_parse(void **state)
{
        struct xp_probe_container c;

        (void)state;
        begin(&c,
              "\"livenessProbe\":{\"httpGet\":{\"port\":\"http\",\"path\":\"/healthz\","
              "\"httpHeaders\":[{\"name\":\"X-A\",\"value\":\"b\"},"
              "{\"name\":\"Bad\\r\\nX\",\"value\":\"c\"}]}},"
              "\"readinessProbe\":{\"tcpSocket\":{\"port\":9000},\"periodSeconds\":5,"
              "\"initialDelaySeconds\":3,\"failureThreshold\":2}");
        assert_true(c.spec[XP_PROBE_LIVENESS].set);
        assert_int_equal(c.spec[XP_PROBE_LIVENESS].handler, XP_PROBE_HTTP);
        assert_int_equal(c.spec[XP_PROBE_LIVENESS].port, 8080);
        assert_string_equal(c.spec[XP_PROBE_LIVENESS].scheme, "HTTP");
        assert_string_equal(c.spec[XP_PROBE_LIVENESS].path, "/healthz");
        assert_string_equal(c.spec[XP_PROBE_LIVENESS].headers[0], "X-A: b");
        assert_null(c.spec[XP_PROBE_LIVENESS].headers[1]); /* the line break is refused */
        assert_int_equal(c.spec[XP_PROBE_LIVENESS].period_s, 10);
        assert_int_equal(c.spec[XP_PROBE_LIVENESS].failure_threshold, 3);
        assert_int_equal(c.spec[XP_PROBE_READINESS].handler, XP_PROBE_TCP);
        assert_int_equal(c.spec[XP_PROBE_READINESS].port, 9000);
        assert_false(c.spec[XP_PROBE_STARTUP].set);
        /* readiness waits for its initial delay, liveness is due at once */
        assert_false(xp_probe_due(&c, XP_PROBE_READINESS, AT(2)));
        assert_true(xp_probe_due(&c, XP_PROBE_READINESS, AT(3)));
        assert_true(xp_probe_due(&c, XP_PROBE_LIVENESS, AT(0)));
        assert_true(xp_probe_next_due(&c) == AT(0));
        end(&c);
}

static void test_parse_errors(void **state)
{
        struct xp_probe_spec s;
        struct xp_error err = {0};
        json_t *j;

        (void)state;
        j = container("{\"name\":\"a\",\"livenessProbe\":{\"periodSeconds\":3}}");
        assert_int_equal(xp_probe_spec_parse(j, "livenessProbe", &s, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "no handler"));
        json_decref(j);
        j = container("{\"name\":\"a\",\"livenessProbe\":{\"tcpSocket\":{\"port\":\"nope\"}}}");
        assert_int_equal(xp_probe_spec_parse(j, "livenessProbe", &s, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "nope"));
        json_decref(j);
        j = container(
            "{\"name\":\"a\",\"readinessProbe\":{\"httpGet\":{\"port\":1,\"scheme\":\"FTP\"}}}");
        assert_int_equal(xp_probe_spec_parse(j, "readinessProbe", &s, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "FTP"));
        assert_int_equal(xp_probe_spec_parse(j, "livenessProbe", &s, &err), 0);
        assert_false(s.set);
        json_decref(j);
        /* a path or host too long for a request is refused; huge numbers are cut to int32 */
        j = json_pack("{s:s, s:{s:{s:i, s:s#}, s:I}}",
                      "name",
                      "a",
                      "livenessProbe",
                      "httpGet",
                      "port",
                      80,
                      "path",
                      "/aaaaaaaa",
                      (size_t)9,
                      "timeoutSeconds",
                      (json_int_t)INT64_C(9000000000000000000));
        assert_int_equal(xp_probe_spec_parse(j, "livenessProbe", &s, &err), 0);
        assert_int_equal(s.timeout_s, INT32_MAX);
        xp_probe_spec_clear(&s);
        {
                char long_path[4097];

                memset(long_path, 'a', sizeof(long_path) - 1);
                long_path[0] = '/';
                long_path[sizeof(long_path) - 1] = '\0';
                json_object_set_new(json_object_get(json_object_get(j, "livenessProbe"), "httpGet"),
                                    "path",
                                    json_string(long_path));
                assert_int_equal(xp_probe_spec_parse(j, "livenessProbe", &s, &err), -EINVAL);
                assert_non_null(strstr(err.msg, "httpGet.path: longer than"));
                json_object_set_new(json_object_get(json_object_get(j, "livenessProbe"), "httpGet"),
                                    "host",
                                    json_string(long_path + 1));
                json_object_set_new(json_object_get(json_object_get(j, "livenessProbe"), "httpGet"),
                                    "path",
                                    json_string("/"));
                assert_int_equal(xp_probe_spec_parse(j, "livenessProbe", &s, &err), -EINVAL);
                assert_non_null(strstr(err.msg, "host: longer than"));
        }
        json_decref(j);
}

static void test_readiness_transitions(void **state)
{
        struct xp_probe_container c;
        struct xp_probe_change ch;

        (void)state;
        begin(&c,
              "\"readinessProbe\":{\"exec\":{\"command\":[\"cat\",\"/tmp/ready\"]},"
              "\"successThreshold\":2,\"failureThreshold\":2}");
        assert_true(c.started);
        assert_false(c.ready); /* false until the probe passes */
        ch = xp_probe_record(&c, XP_PROBE_READINESS, XP_PROBE_FAILURE, AT(0));
        assert_false(ch.ready_changed);
        assert_false(ch.kill); /* readiness never kills */
        assert_true(c.t[XP_PROBE_READINESS].next_ns == AT(10));
        ch = xp_probe_record(&c, XP_PROBE_READINESS, XP_PROBE_SUCCESS, AT(10));
        assert_false(c.ready); /* one success of two */
        ch = xp_probe_record(&c, XP_PROBE_READINESS, XP_PROBE_SUCCESS, AT(20));
        assert_true(ch.ready_changed);
        assert_true(c.ready);
        ch = xp_probe_record(&c, XP_PROBE_READINESS, XP_PROBE_FAILURE, AT(30));
        assert_true(c.ready); /* one failure of two */
        ch = xp_probe_record(&c, XP_PROBE_READINESS, XP_PROBE_FAILURE, AT(40));
        assert_true(ch.ready_changed);
        assert_false(c.ready);
        assert_false(c.on_hold);
        end(&c);
}

static void test_liveness_threshold(void **state)
{
        struct xp_probe_container c;
        struct xp_probe_change ch;

        (void)state;
        begin(&c, "\"livenessProbe\":{\"tcpSocket\":{\"port\":80}}");
        assert_true(c.ready); /* no readiness probe: ready once started */
        for (int i = 0; i < 2; i++) {
                ch = xp_probe_record(&c, XP_PROBE_LIVENESS, XP_PROBE_FAILURE, AT(10 * i));
                assert_false(ch.kill);
        }
        /* a success in between starts the count again */
        ch = xp_probe_record(&c, XP_PROBE_LIVENESS, XP_PROBE_SUCCESS, AT(20));
        for (int i = 0; i < 2; i++)
                assert_false(
                    xp_probe_record(&c, XP_PROBE_LIVENESS, XP_PROBE_FAILURE, AT(30 + i)).kill);
        ch = xp_probe_record(&c, XP_PROBE_LIVENESS, XP_PROBE_FAILURE, AT(40));
        assert_true(ch.kill);
        assert_true(c.on_hold);
        assert_false(c.ready);
        assert_false(xp_probe_due(&c, XP_PROBE_LIVENESS, AT(100)));
        assert_true(xp_probe_next_due(&c) == 0);
        end(&c);
}

static void test_startup_gates(void **state)
{
        struct xp_probe_container c;
        struct xp_probe_change ch;

        (void)state;
        begin(&c,
              "\"startupProbe\":{\"tcpSocket\":{\"port\":80},\"failureThreshold\":3,"
              "\"periodSeconds\":1},"
              "\"livenessProbe\":{\"tcpSocket\":{\"port\":80}},"
              "\"readinessProbe\":{\"tcpSocket\":{\"port\":80}}");
        assert_false(c.started);
        assert_true(xp_probe_due(&c, XP_PROBE_STARTUP, AT(0)));
        assert_false(xp_probe_due(&c, XP_PROBE_LIVENESS, AT(0)));
        assert_false(xp_probe_due(&c, XP_PROBE_READINESS, AT(50)));
        ch = xp_probe_record(&c, XP_PROBE_STARTUP, XP_PROBE_FAILURE, AT(0));
        assert_false(ch.kill);
        ch = xp_probe_record(&c, XP_PROBE_STARTUP, XP_PROBE_SUCCESS, AT(1));
        assert_true(ch.started);
        assert_false(ch.ready_changed); /* its readiness probe has not passed yet */
        assert_false(xp_probe_due(&c, XP_PROBE_STARTUP, AT(5)));
        assert_true(xp_probe_due(&c, XP_PROBE_LIVENESS, AT(1)));
        assert_true(xp_probe_due(&c, XP_PROBE_READINESS, AT(1)));
        ch = xp_probe_record(&c, XP_PROBE_READINESS, XP_PROBE_SUCCESS, AT(1));
        assert_true(ch.ready_changed);
        assert_true(c.ready);
        end(&c);

        begin(&c, "\"startupProbe\":{\"tcpSocket\":{\"port\":80},\"failureThreshold\":2}");
        assert_false(c.ready); /* not started: not ready, though it has no readiness probe */
        assert_false(xp_probe_record(&c, XP_PROBE_STARTUP, XP_PROBE_FAILURE, AT(0)).kill);
        assert_true(xp_probe_record(&c, XP_PROBE_STARTUP, XP_PROBE_FAILURE, AT(10)).kill);
        end(&c);
}

static void test_unknown_never_passes(void **state)
{
        struct xp_probe_container c;

        (void)state;
        begin(&c,
              "\"readinessProbe\":{\"grpc\":{\"port\":9090}},"
              "\"livenessProbe\":{\"grpc\":{\"port\":9090},\"failureThreshold\":1}");
        for (int i = 0; i < 5; i++) {
                assert_false(
                    xp_probe_record(&c, XP_PROBE_LIVENESS, XP_PROBE_UNKNOWN, AT(10 * i)).kill);
                xp_probe_record(&c, XP_PROBE_READINESS, XP_PROBE_UNKNOWN, AT(10 * i));
                assert_false(c.ready);
        }
        end(&c);
}

static void test_http_status(void **state)
{
        (void)state;
        assert_int_equal(xp_probe_http_status(200), XP_PROBE_SUCCESS);
        assert_int_equal(xp_probe_http_status(302), XP_PROBE_SUCCESS);
        assert_int_equal(xp_probe_http_status(399), XP_PROBE_SUCCESS);
        assert_int_equal(xp_probe_http_status(199), XP_PROBE_FAILURE);
        assert_int_equal(xp_probe_http_status(400), XP_PROBE_FAILURE);
        assert_int_equal(xp_probe_http_status(500), XP_PROBE_FAILURE);
}

/* A loopback listener: its port; reply (NULL: never answers) to one connection. */
struct server {
        int fd;
        int port;
        const char *reply;
        pthread_t thread;
        char request[2048];
};

static void *serve(void *arg)
{
        struct server *s = arg;
        int c = accept(s->fd, NULL, NULL);
        ssize_t n;

        if (c < 0)
                return NULL;
        n = read(c, s->request, sizeof(s->request) - 1);
        s->request[n > 0 ? n : 0] = '\0';
        if (write(c, s->reply, strlen(s->reply)) < 0)
                s->request[0] = '\0';
        close(c);
        return NULL;
}

static void server_start(struct server *s, const char *reply)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);

        s->fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(s->fd >= 0);
        assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(s->fd, 4), 0);
        assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
        s->port = ntohs(a.sin_port);
        s->reply = reply;
        if (reply)
                assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void server_stop(struct server *s)
{
        if (s->reply)
                pthread_join(s->thread, NULL);
        close(s->fd);
}

static enum xp_probe_result http_probe(int port, char *msg)
{
        char *headers[] = {"X-Probe: yes", NULL};
        struct xp_probe_spec spec = {.set = true,
                                     .handler = XP_PROBE_HTTP,
                                     .scheme = "HTTP",
                                     .path = "/healthz",
                                     .headers = headers,
                                     .port = port,
                                     .timeout_s = 1};
        struct xp_probe_target t = {.pod_ip = "127.0.0.1"};

        return xp_probe_run(&spec, &t, msg);
}

static void test_http_probe(void **state)
{
        struct server s = {0};
        char msg[XP_PROBE_MESSAGE_MAX];

        (void)state;
        server_start(&s, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
        assert_int_equal(http_probe(s.port, msg), XP_PROBE_FAILURE);
        server_stop(&s);
        assert_string_equal(msg, "HTTP probe failed with statuscode: 500");
        assert_non_null(strstr(s.request, "GET /healthz HTTP/1.1\r\n"));
        assert_non_null(strstr(s.request, "User-Agent: kube-probe/1.32\r\n"));
        assert_non_null(strstr(s.request, "X-Probe: yes\r\n"));

        server_start(&s, "HTTP/1.0 204 No Content\r\n\r\n");
        assert_int_equal(http_probe(s.port, msg), XP_PROBE_SUCCESS);
        server_stop(&s);
}

static void test_timeouts_and_refusals(void **state)
{
        struct server s = {0};
        char msg[XP_PROBE_MESSAGE_MAX];
        struct xp_probe_spec tcp = {.set = true, .handler = XP_PROBE_TCP, .timeout_s = 1};
        struct xp_probe_target t = {.pod_ip = "127.0.0.1"};
        int port;

        (void)state;
        /* accepted by the kernel, never answered: the timeout ends it */
        server_start(&s, NULL);
        assert_int_equal(http_probe(s.port, msg), XP_PROBE_FAILURE);
        assert_non_null(strstr(msg, "context deadline exceeded"));
        tcp.port = s.port;
        assert_int_equal(xp_probe_run(&tcp, &t, msg), XP_PROBE_SUCCESS);
        port = s.port;
        server_stop(&s);
        /* closed now: refused */
        tcp.port = port;
        assert_int_equal(xp_probe_run(&tcp, &t, msg), XP_PROBE_FAILURE);
        assert_non_null(strstr(msg, "connect: connection refused"));
        assert_non_null(strstr(msg, "dial tcp 127.0.0.1:"));
}

/* Headers that together do not fit a request: the probe fails saying so, nothing overflows. */
static void test_request_too_long(void **state)
{
        static char big[1000];
        char *headers[12], msg[XP_PROBE_MESSAGE_MAX];
        struct server srv = {0};
        struct xp_probe_spec spec = {.set = true,
                                     .handler = XP_PROBE_HTTP,
                                     .scheme = "HTTP",
                                     .path = "/",
                                     .headers = headers,
                                     .timeout_s = 1};
        struct xp_probe_target t = {.pod_ip = "127.0.0.1"};

        (void)state;
        memset(big, 'v', sizeof(big) - 1);
        for (size_t i = 0; i < 11; i++)
                headers[i] = big;
        headers[11] = NULL;
        server_start(&srv, NULL);
        spec.port = srv.port;
        assert_int_equal(xp_probe_run(&spec, &t, msg), XP_PROBE_FAILURE);
        assert_non_null(strstr(msg, "is longer than 8192 bytes"));
        server_stop(&srv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_parse),
            cmocka_unit_test(test_parse_errors),
            cmocka_unit_test(test_request_too_long),
            cmocka_unit_test(test_readiness_transitions),
            cmocka_unit_test(test_liveness_threshold),
            cmocka_unit_test(test_startup_gates),
            cmocka_unit_test(test_unknown_never_passes),
            cmocka_unit_test(test_http_status),
            cmocka_unit_test(test_http_probe),
            cmocka_unit_test(test_timeouts_and_refusals),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
