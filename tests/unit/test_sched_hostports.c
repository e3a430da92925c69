/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NodePorts filter (src/sched/hostports.c): which hostPorts of a placed pod keep another pod
 * off its node (protocol, port, hostIP with the wildcard), which containers count (containers and
 * sidecars, not plain init containers), and the reason in kube-scheduler's words.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/codec.h"
#include "xpool/sched.h"

#define NO_PORTS_REASON                                                                            \
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."

static void add_node(struct xp_sched *sched, const char *name)
{
        struct xp_node *node = NULL;
        struct xp_error err = {0};
        char *text;

        assert_true(asprintf(&text,
                             "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":"
                             "{\"cpu\":\"8\",\"memory\":\"16Gi\",\"pods\":\"110\"},"
                             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                             name) >= 0);
        if (xp_node_from_json_text(text, strlen(text), "node", XP_DECODE_TRUSTED, &node, &err) < 0)
                fail_msg("node: %s", err.msg);
        if (xp_sched_node_set(sched, node, &err) < 0)
                fail_msg("node_set: %s", err.msg);
        xp_node_free(node);
        free(text);
}

/* A pod whose containers (a JSON array's members) and init containers are given as text. */
static struct xp_pod *
pod_with(const char *name, const char *node, const char *containers, const char *init)
{
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        char *text;

        assert_true(asprintf(&text,
                             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
                             "\"spec\":{%s%s%s\"containers\":[%s]%s%s%s}}",
                             name,
                             init ? "\"initContainers\":[" : "",
                             init ? init : "",
                             init ? "]," : "",
                             containers,
                             node ? ",\"nodeName\":\"" : "",
                             node ? node : "",
                             node ? "\"" : "") >= 0);
        if (xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0)
                fail_msg("pod: %s in %s", err.msg, text);
        free(text);
        return pod;
}

/* A container named name with one port (a JSON object's members). */
static char *container(const char *name, const char *port)
{
        char *text;

        assert_true(
            asprintf(&text, "{\"name\":\"%s\",\"image\":\"i\",\"ports\":[{%s}]}", name, port) >= 0);
        return text;
}

/* Binds a pod with one container's port (and optional init containers) on n1. */
static void bind_port(struct xp_sched *sched, const char *name, const char *port, const char *init)
{
        char *c = container("c", port);
        struct xp_pod *pod = pod_with(name, "n1", c, init);
        struct xp_error err = {0};

        if (xp_sched_pod_add(sched, pod, &err) < 0)
                fail_msg("pod_add: %s", err.msg);
        xp_pod_free(pod);
        free(c);
}

/* Whether a pod with that one port fits n1; *reason (caller frees) when it does not. */
static bool fits(struct xp_sched *sched, const char *port, char **reason)
{
        char *c = container("c", port);
        struct xp_pod *pod = pod_with("asker", NULL, c, NULL);
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        int r = xp_sched_place(sched, pod, &pl, reason, &err);

        if (r < 0)
                fail_msg("place: %s", err.msg);
        xp_placement_done(&pl);
        xp_pod_free(pod);
        free(c);
        return r == 1;
}

static void assert_fits(struct xp_sched *sched, const char *port, bool want)
{
        char *reason = NULL;
        bool got = fits(sched, port, &reason);

        if (got != want)
                fail_msg(
                    "port {%s}: fits %d, wanted %d (%s)", port, got, want, reason ? reason : "");
        if (!want)
                assert_string_equal(reason, NO_PORTS_REASON);
        free(reason);
}

static struct xp_sched *one_node(void)
{
        struct xp_sched *sched = NULL;
        struct xp_sched_options options = {.profile = XP_SCHED_SPREAD, .seed = 1};

        assert_int_equal(xp_sched_new(&options, &sched), 0);
        add_node(sched, "n1");
        return sched;
}

static void test_protocol_and_port(void **state)
{
        _cleanup_(xp_sched_freep) struct xp_sched *sched = one_node();

        (void)state;
        bind_port(sched, "web", "\"containerPort\":80,\"hostPort\":8080", NULL);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":8080", false);
        /* TCP is the default protocol, on either side */
        assert_fits(sched, "\"containerPort\":81,\"hostPort\":8080,\"protocol\":\"TCP\"", false);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":8080,\"protocol\":\"UDP\"", true);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":8080,\"protocol\":\"SCTP\"", true);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":8081", true);
        /* a containerPort alone takes nothing on the node */
        assert_fits(sched, "\"containerPort\":8080", true);
        assert_int_equal(xp_sched_pod_remove(sched, "default", "web"), 0);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":8080", true);
}

static void test_host_ip(void **state)
{
        _cleanup_(xp_sched_freep) struct xp_sched *sched = one_node();

        (void)state;
        bind_port(
            sched, "a", "\"containerPort\":80,\"hostPort\":9000,\"hostIP\":\"127.0.0.1\"", NULL);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":9000,\"hostIP\":\"127.0.0.2\"", true);
        assert_fits(
            sched, "\"containerPort\":80,\"hostPort\":9000,\"hostIP\":\"127.0.0.1\"", false);
        /* unset and 0.0.0.0 are every address: they meet any hostIP */
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":9000", false);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":9000,\"hostIP\":\"0.0.0.0\"", false);
        bind_port(
            sched, "b", "\"containerPort\":80,\"hostPort\":9001,\"hostIP\":\"0.0.0.0\"", NULL);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":9001,\"hostIP\":\"10.0.0.1\"", false);
        assert_fits(sched, "\"containerPort\":80,\"hostPort\":9001,\"protocol\":\"UDP\"", true);
}

static void test_init_containers(void **state)
{
        _cleanup_(xp_sched_freep) struct xp_sched *sched = one_node();
        char *plain = container("setup", "\"containerPort\":1,\"hostPort\":7000");
        char *sidecar = NULL;

        (void)state;
        assert_true(asprintf(&sidecar,
                             "{\"name\":\"proxy\",\"image\":\"i\",\"restartPolicy\":\"Always\","
                             "\"ports\":[{\"containerPort\":2,\"hostPort\":7001}]}") >= 0);
        char *both = NULL;
        assert_true(asprintf(&both, "%s,%s", plain, sidecar) >= 0);
        bind_port(sched, "p", "\"containerPort\":3,\"hostPort\":7002", both);
        /* a plain init container has exited before the containers run: its port is free */
        assert_fits(sched, "\"containerPort\":1,\"hostPort\":7000", true);
        assert_fits(sched, "\"containerPort\":1,\"hostPort\":7001", false);
        assert_fits(sched, "\"containerPort\":1,\"hostPort\":7002", false);
        free(both);
        free(sidecar);
        free(plain);
}

static void test_other_node(void **state)
{
        _cleanup_(xp_sched_freep) struct xp_sched *sched = one_node();
        char *c = container("c", "\"containerPort\":80,\"hostPort\":8080");
        struct xp_pod *pod = pod_with("second", NULL, c, NULL);
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        char *reason = NULL;

        (void)state;
        bind_port(sched, "first", "\"containerPort\":80,\"hostPort\":8080", NULL);
        add_node(sched, "n2");
        for (int i = 0; i < 8; i++) {
                assert_int_equal(xp_sched_place(sched, pod, &pl, &reason, &err), 1);
                assert_string_equal(pl.node, "n2");
                xp_placement_done(&pl);
        }
        /* the extender's question about one named node */
        assert_int_equal(xp_sched_place_on(sched, pod, "n1", &pl, &reason, &err), 0);
        assert_string_equal(reason, "node(s) didn't have free ports for the requested pod ports");
        free(reason);
        xp_pod_free(pod);
        free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_protocol_and_port),
            cmocka_unit_test(test_host_ip),
            cmocka_unit_test(test_init_containers),
            cmocka_unit_test(test_other_node),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
