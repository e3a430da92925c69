/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods' API address (src/agent/apiproxy.h, include/xpool/localaddr.h): --api-service-address
 * as written and refused; the forwarder relaying megabytes both ways with half-closes, closing a
 * client whose server cannot be reached, and ending live connections when stopped; who may
 * connect (the pod network's subnets and the node's own addresses) and how many connections one
 * address may hold; as root, in a network namespace of the test's own, an address put on lo and
 * removed, and a forwarder on it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/agent_internal.h"
#include "agent/apiproxy.h"
#include "agent/apiproxy_admit.h"
#include "xpool/localaddr.h"

#define UP_BYTES   (1024 * 1024 + 17)
#define DOWN_BYTES (2 * 1024 * 1024 + 5)

static void parse_good(void **state)
{
        struct xp_error err = {0};
        char ip[46];
        unsigned port = 0;

        (void)state;
        /* the default pods reach the API at (25-podnet-api runs on an address of its own) */
        assert_int_equal(xp_apiproxy_parse(XP_APIPROXY_DEFAULT, ip, &port, &err), 0);
        assert_string_equal(ip, "10.96.0.1");
        assert_int_equal(port, 443);
        assert_int_equal(xp_apiproxy_parse("[fd00:10:96::1]:6443", ip, &port, &err), 0);
        assert_string_equal(ip, "fd00:10:96::1");
        assert_int_equal(port, 6443);
        assert_int_equal(xp_apiproxy_parse("192.168.1.2:65535", ip, &port, &err), 0);
        assert_int_equal(port, 65535);
}

static void parse_bad(void **state)
{
        static const char *const bad[] = {"10.96.0.1",
                                          "10.96.0.1:",
                                          "10.96.0.1:0",
                                          "10.96.0.1:65536",
                                          "10.96.0.1:44x",
                                          "10.96.0.1:-1",
                                          "10.96.0.1: 443",
                                          "fd00::1:443",
                                          "[10.0.0.1]:443",
                                          "[fd00::1]",
                                          "kubernetes:443",
                                          ":443",
                                          "",
                                          "10.96.0.256:443"};

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct xp_error err = {0};
                char ip[46], want[128];
                unsigned port = 7;

                if (xp_apiproxy_parse(bad[i], ip, &port, &err) != -EINVAL)
                        fail_msg("'%s' was taken", bad[i]);
                snprintf(want, sizeof(want), "--api-service-address '%s': expected", bad[i]);
                assert_non_null(strstr(err.msg, want));
                assert_int_equal(port, 7);
        }
}

/* The agent's option: kubeadm's first service address by default, none, or refused. */
static void agent_option(void **state)
{
        struct xp_agent *a = calloc(1, sizeof(*a));
        struct xp_error err = {0};

        (void)state;
        assert_non_null(a);
        assert_int_equal(xp_agent_pod_api_parse(a, NULL, &err), 0);
        assert_string_equal(a->pod_api.ip, "10.96.0.1");
        assert_int_equal(a->pod_api.port, 443);
        assert_false(a->pod_api.off);
        assert_int_equal(xp_agent_pod_api_parse(a, "[fd00:10:96::1]:443", &err), 0);
        assert_string_equal(a->pod_api.ip, "fd00:10:96::1");
        assert_int_equal(xp_agent_pod_api_parse(a, "10.96.0.1", &err), -EINVAL);
        assert_false(a->pod_api.off);
        assert_int_equal(xp_agent_pod_api_parse(a, "none", &err), 0);
        assert_true(a->pod_api.off);
        free(a);
}

/* ---- the forwarder, between loopback sockets ---------------------------------------------- */

/* Every read of the tests' sockets ends within 20 s: a forwarder that holds a connection it
 * should have passed on or closed fails the test rather than hanging it. */
static void bounded(int fd)
{
        struct timeval tv = {.tv_sec = 20};

        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
}

static int listener(unsigned *port)
{
        struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(in);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
        assert_int_equal(listen(fd, 128), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&in, &len), 0);
        *port = ntohs(in.sin_port);
        return fd;
}

/* A connection to ip:port from the address from (NULL: the kernel's choice). */
static int dial_from(const char *from, const char *ip, unsigned port)
{
        struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        struct sockaddr_in src = {.sin_family = AF_INET};
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        bounded(fd);
        if (from) {
                assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
                assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
        }
        assert_int_equal(inet_pton(AF_INET, ip, &in.sin_addr), 1);
        assert_int_equal(connect(fd, (struct sockaddr *)&in, sizeof(in)), 0);
        return fd;
}

static int dial(const char *ip, unsigned port)
{
        return dial_from(NULL, ip, port);
}

/* The server side's next connection, its reads bounded. */
static int accept_bounded(int lfd)
{
        int fd = accept(lfd, NULL, NULL);

        if (fd >= 0)
                bounded(fd);
        return fd;
}

static unsigned char pattern(size_t i, unsigned seed)
{
        return (unsigned char)((i * 31 + seed) ^ (i >> 9));
}

/* Reads fd to its end: the byte count, or -1 at the first byte off the pattern. */
static long read_pattern(int fd, unsigned seed)
{
        unsigned char buf[8192];
        long total = 0;
        ssize_t n;

        while ((n = read(fd, buf, sizeof(buf))) > 0)
                for (ssize_t i = 0; i < n; i++, total++)
                        if (buf[i] != pattern((size_t)total, seed))
                                return -1;
        return n < 0 ? -1 : total;
}

static void write_pattern(int fd, size_t count, unsigned seed)
{
        unsigned char buf[8192];

        for (size_t done = 0; done < count;) {
                size_t chunk = count - done < sizeof(buf) ? count - done : sizeof(buf);
                ssize_t n;

                for (size_t i = 0; i < chunk; i++)
                        buf[i] = pattern(done + i, seed);
                n = write(fd, buf, chunk);
                assert_true(n > 0);
                done += (size_t)n;
        }
}

/* The API server's side: one connection read to its end, then DOWN_BYTES back. */
struct server {
        int listen_fd;
        long got;
};

static void *server_thread(void *userdata)
{
        struct server *s = userdata;
        int fd = accept_bounded(s->listen_fd);

        if (fd < 0)
                return NULL;
        s->got = read_pattern(fd, 1);
        write_pattern(fd, DOWN_BYTES, 2);
        close(fd);
        return NULL;
}

static void relays_both_ways(void **state)
{
        struct server s = {.got = -2};
        struct xp_apiproxy *proxy = NULL;
        struct xp_error err = {0};
        pthread_t thread;
        unsigned port;
        int client;

        (void)state;
        s.listen_fd = listener(&port);
        assert_int_equal(xp_apiproxy_start("127.0.0.1", 0, "127.0.0.1", port, NULL, &proxy, &err),
                         0);
        assert_int_equal(pthread_create(&thread, NULL, server_thread, &s), 0);
        client = dial("127.0.0.1", xp_apiproxy_port(proxy));
        /* the server answers only after the client's end: the half-close must get through */
        write_pattern(client, UP_BYTES, 1);
        assert_int_equal(shutdown(client, SHUT_WR), 0);
        assert_int_equal(read_pattern(client, 2), DOWN_BYTES);
        pthread_join(thread, NULL);
        assert_int_equal(s.got, UP_BYTES);
        close(client);
        close(s.listen_fd);
        xp_apiproxy_stop(proxy);
}

static void unreachable_server_closes(void **state)
{
        struct xp_apiproxy *proxy = NULL;
        struct xp_error err = {0};
        unsigned port;
        char byte;
        int fd = listener(&port), client;

        (void)state;
        close(fd); /* nothing listens there any more */
        assert_int_equal(xp_apiproxy_start("127.0.0.1", 0, "127.0.0.1", port, NULL, &proxy, &err),
                         0);
        client = dial("127.0.0.1", xp_apiproxy_port(proxy));
        assert_true(read(client, &byte, 1) <= 0);
        close(client);
        xp_apiproxy_stop(proxy);
}

static void stop_ends_connections(void **state)
{
        struct xp_apiproxy *proxy = NULL;
        struct xp_error err = {0};
        unsigned port;
        int lfd = listener(&port), client, server;
        char byte = 'x';

        (void)state;
        assert_int_equal(xp_apiproxy_start("127.0.0.1", 0, "127.0.0.1", port, NULL, &proxy, &err),
                         0);
        client = dial("127.0.0.1", xp_apiproxy_port(proxy));
        server = accept_bounded(lfd);
        assert_true(server >= 0);
        assert_int_equal(write(client, &byte, 1), 1);
        assert_int_equal(read(server, &byte, 1), 1);
        xp_apiproxy_stop(proxy);
        /* a watch held open by both ends ends with the forwarder */
        assert_true(read(client, &byte, 1) <= 0);
        assert_true(read(server, &byte, 1) <= 0);
        close(client);
        close(server);
        close(lfd);
}

static void refuses_taken_address(void **state)
{
        struct xp_apiproxy *proxy = NULL;
        struct xp_error err = {0};
        unsigned port;
        int lfd = listener(&port);

        (void)state;
        assert_int_equal(
            xp_apiproxy_start("127.0.0.1", port, "127.0.0.1", port, NULL, &proxy, &err),
            -EADDRINUSE);
        assert_null(proxy);
        assert_non_null(strstr(err.msg, "cannot listen on 127.0.0.1:"));
        close(lfd);
}

/* ---- who may connect ---------------------------------------------------------------------- */

static struct sockaddr_storage address(const char *ip)
{
        struct sockaddr_storage ss = {0};
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

        if (strchr(ip, ':')) {
                in6->sin6_family = AF_INET6;
                assert_int_equal(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
        } else {
                in->sin_family = AF_INET;
                assert_int_equal(inet_pton(AF_INET, ip, &in->sin_addr), 1);
        }
        return ss;
}

static bool admitted(const struct xp_apiproxy_admit *admit, const char *ip)
{
        struct sockaddr_storage ss = address(ip);

        return xp_apiproxy_admit_peer(admit, (struct sockaddr *)&ss);
}

/* The pod network's subnets and the host's own addresses; nothing else (documentation
 * addresses, which no host has). */
static void admits_pods_and_node(void **state)
{
        static const char *const nets[] = {"10.87.0.0/16", "10.80.0.0/12", "fd00:87::/64", NULL};
        struct xp_apiproxy_admit admit;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_apiproxy_admit_init(&admit, nets, &err), 0);
        assert_true(admitted(&admit, "10.87.3.4"));
        assert_true(admitted(&admit, "10.95.255.255"));
        assert_true(admitted(&admit, "fd00:87::5"));
        assert_true(admitted(&admit, "127.0.0.1"));
        assert_true(admitted(&admit, "127.0.0.2"));
        assert_false(admitted(&admit, "192.0.2.7"));
        assert_false(admitted(&admit, "198.51.100.1"));
        assert_false(admitted(&admit, "2001:db8::1"));
        assert_false(admitted(&admit, "fd00:88::5"));
        assert_int_equal(xp_apiproxy_admit_init(&admit, NULL, &err), 0);
        assert_false(admitted(&admit, "10.87.3.4"));
        assert_true(admitted(&admit, "127.0.0.1"));
}

static void refuses_bad_subnet(void **state)
{
        static const char *const bad[] = {
            "10.87.0.0", "10.87.0.0/33", "10.87.0.x/16", "/8", "fd00::/129"};

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const char *nets[] = {"10.1.0.0/16", bad[i], NULL};
                struct xp_apiproxy_admit admit;
                struct xp_error err = {0};
                char want[96];

                if (xp_apiproxy_admit_init(&admit, nets, &err) != -EINVAL)
                        fail_msg("'%s' was taken", bad[i]);
                snprintf(want, sizeof(want), "subnet '%s' is not ADDRESS/PREFIX", bad[i]);
                assert_non_null(strstr(err.msg, want));
        }
}

/* A forwarder with an allow-list still serves the node itself (the agent's own check). */
static void serves_node_with_allow_list(void **state)
{
        static const char *const nets[] = {"10.87.0.0/16", NULL};
        struct xp_apiproxy *proxy = NULL;
        struct xp_error err = {0};
        unsigned port;
        int lfd = listener(&port), client, server;
        char byte = 'z';

        (void)state;
        assert_int_equal(xp_apiproxy_start("127.0.0.1", 0, "127.0.0.1", port, nets, &proxy, &err),
                         0);
        client = dial("127.0.0.1", xp_apiproxy_port(proxy));
        server = accept_bounded(lfd);
        assert_true(server >= 0);
        assert_int_equal(write(client, &byte, 1), 1);
        assert_int_equal(read(server, &byte, 1), 1);
        close(client);
        close(server);
        close(lfd);
        xp_apiproxy_stop(proxy);
}

/* One address gets XP_APIPROXY_SOURCE_CONNS_MAX connections; the next is closed, and another
 * address is still served. */
static void caps_one_source(void **state)
{
        int clients[XP_APIPROXY_SOURCE_CONNS_MAX], servers[XP_APIPROXY_SOURCE_CONNS_MAX + 1];
        struct xp_apiproxy *proxy = NULL;
        struct xp_error err = {0};
        unsigned port, proxy_port;
        int lfd = listener(&port), extra, other;
        char byte = 'c';

        (void)state;
        assert_int_equal(xp_apiproxy_start("127.0.0.1", 0, "127.0.0.1", port, NULL, &proxy, &err),
                         0);
        proxy_port = xp_apiproxy_port(proxy);
        for (int i = 0; i < XP_APIPROXY_SOURCE_CONNS_MAX; i++) {
                clients[i] = dial_from("127.0.0.1", "127.0.0.1", proxy_port);
                servers[i] = accept_bounded(lfd);
                assert_true(servers[i] >= 0);
        }
        extra = dial_from("127.0.0.1", "127.0.0.1", proxy_port);
        assert_int_equal(read(extra, &byte, 1), 0);
        other = dial_from("127.0.0.2", "127.0.0.1", proxy_port);
        servers[XP_APIPROXY_SOURCE_CONNS_MAX] = accept_bounded(lfd);
        assert_true(servers[XP_APIPROXY_SOURCE_CONNS_MAX] >= 0);
        assert_int_equal(write(other, &byte, 1), 1);
        assert_int_equal(read(servers[XP_APIPROXY_SOURCE_CONNS_MAX], &byte, 1), 1);
        close(clients[0]);
        close(servers[0]);
        close(extra);
        xp_apiproxy_stop(proxy);
        for (int i = 1; i < XP_APIPROXY_SOURCE_CONNS_MAX; i++) {
                close(clients[i]);
                close(servers[i]);
        }
        close(other);
        close(servers[XP_APIPROXY_SOURCE_CONNS_MAX]);
        close(lfd);
}

/* ---- as root, in a network namespace of the test's own ------------------------------------ */

static bool on_lo(const char *ip)
{
        struct ifaddrs *list = NULL;
        bool found = false;

        if (getifaddrs(&list) < 0)
                return false;
        for (struct ifaddrs *i = list; i; i = i->ifa_next) {
                char text[INET6_ADDRSTRLEN];

                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || strcmp(i->ifa_name, "lo"))
                        continue;
                inet_ntop(
                    AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, text, sizeof(text));
                found = found || strcmp(text, ip) == 0;
        }
        freeifaddrs(list);
        return found;
}

/* The checks, in the child: 0, or the number of the first that failed. */
static int local_address_checks(void)
{
        struct xp_apiproxy *proxy = NULL;
        struct xp_error err = {0};
        bool added = true;
        unsigned port;
        int lfd, client, server;
        char byte = 'y';

        if (xp_localaddr_add("10.96.7.1", &added, &err) < 0 || !added || !on_lo("10.96.7.1"))
                return 1;
        if (xp_localaddr_add("10.96.7.1", &added, &err) < 0 || added)
                return 2;
        if (xp_localaddr_add("10.96.7.x", &added, &err) != -EINVAL || added ||
            !strstr(err.msg, "'10.96.7.x' is not an IP address"))
                return 3;
        lfd = listener(&port);
        if (xp_apiproxy_start("10.96.7.1", 443, "127.0.0.1", port, NULL, &proxy, &err) < 0)
                return 4;
        client = dial("10.96.7.1", 443);
        server = accept_bounded(lfd);
        if (server < 0 || write(client, &byte, 1) != 1 || read(server, &byte, 1) != 1)
                return 5;
        close(client);
        close(server);
        close(lfd);
        xp_apiproxy_stop(proxy);
        if (xp_localaddr_del("10.96.7.1", &err) < 0 || on_lo("10.96.7.1"))
                return 6;
        if (xp_localaddr_del("10.96.7.1", &err) < 0)
                return 7;
        return 0;
}

/* A new namespace's lo is down: up, as in every pod's. */
static int lo_up(void)
{
        struct ifreq ifr = {0};
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

        if (fd < 0)
                return -1;
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
        r = ioctl(fd, SIOCGIFFLAGS, &ifr);
        ifr.ifr_flags |= IFF_UP;
        if (r >= 0)
                r = ioctl(fd, SIOCSIFFLAGS, &ifr);
        close(fd);
        return r;
}

static void local_address(void **state)
{
        int status;
        pid_t pid;

        (void)state;
        if (geteuid() != 0)
                skip();
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (unshare(CLONE_NEWNET) < 0)
                        _exit(77);
                if (lo_up() < 0)
                        _exit(77);
                _exit(local_address_checks());
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                skip();
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(parse_good),
            cmocka_unit_test(parse_bad),
            cmocka_unit_test(agent_option),
            cmocka_unit_test(relays_both_ways),
            cmocka_unit_test(unreachable_server_closes),
            cmocka_unit_test(stop_ends_connections),
            cmocka_unit_test(refuses_taken_address),
            cmocka_unit_test(admits_pods_and_node),
            cmocka_unit_test(refuses_bad_subnet),
            cmocka_unit_test(serves_node_with_allow_list),
            cmocka_unit_test(caps_one_source),
            cmocka_unit_test(local_address),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
