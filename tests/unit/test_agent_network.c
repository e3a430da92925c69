/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's network step (src/agent/network.h): what a pod asks for (hostNetwork, hostPorts as
 * CNI portMappings), and, as root with fake CNI plugins, the table and its workers: a setup
 * announced when it ends, a failure kept until its retry time, a teardown after release, an
 * agent that starts again adopting what was set up (no second ADD) and tearing down what no
 * pod owns.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/agent_internal.h"
#include "agent/network.h"
#include "podnet_fixture.h"
#include "tmpdir.h"
#include "xpool/codec.h"
#include "xpool/log.h"

static struct xp_pod *pod_of(const char *uid, const char *spec)
{
        char text[2048];
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;
        json_t *json;

        snprintf(text,
                 sizeof(text),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%s\","
                 "\"namespace\":\"default\",\"uid\":\"%s\"},\"spec\":%s}",
                 uid,
                 uid,
                 spec);
        json = json_loads(text, 0, NULL);
        assert_non_null(json);
        if (xp_pod_from_json(json, NULL, 0, &pod, &err) < 0)
                fail_msg("pod: %s", err.msg);
        json_decref(json);
        return pod;
}

#define C(x) "{\"containers\":[" x "]}"

static void host_network(void **state)
{
        struct xp_pod *a = pod_of(
            "a", "{\"hostNetwork\":true,\"containers\":[{\"name\":\"c\",\"command\":[\"true\"]}]}");
        struct xp_pod *b = pod_of("b", C("{\"name\":\"c\",\"command\":[\"true\"]}"));
        struct xp_agent_netview v;

        (void)state;
        assert_true(xp_agent_pod_host_network(a));
        assert_false(xp_agent_pod_host_network(b));
        /* no pod network at all (--pod-network host): every pod is the node's */
        xp_agent_network_peek(NULL, b, "192.0.2.7", &v);
        assert_int_equal(v.state, XP_AGENT_NET_READY);
        assert_true(v.host);
        assert_int_equal(v.n_ips, 1);
        assert_string_equal(v.ips[0], "192.0.2.7");
        xp_pod_free(a);
        xp_pod_free(b);
}

static void port_mappings(void **state)
{
        struct xp_pod *p = pod_of(
            "p",
            C("{\"name\":\"a\",\"command\":[\"x\"],\"ports\":[{\"containerPort\":8080,\"hostPort\":"
              "80},{\"containerPort\":9000},{\"containerPort\":53,\"hostPort\":5353,\"protocol\":"
              "\"UDP\",\"hostIP\":\"127.0.0.1\"},{\"containerPort\":1,\"hostPort\":70000}]},"
              "{\"name\":\"b\",\"command\":[\"x\"],\"ports\":[{\"containerPort\":7,\"hostPort\":7,"
              "\"protocol\":\"SCTP\"},{\"containerPort\":8,\"hostPort\":8,\"protocol\":\"QUIC\"}]}"));
        struct xp_pod *none = pod_of(
            "n", C("{\"name\":\"a\",\"command\":[\"x\"],\"ports\":[{\"containerPort\":80}]}"));
        json_t *rc = NULL;
        char *text;

        (void)state;
        assert_int_equal(xp_agent_port_mappings(p, &rc), 0);
        text = json_dumps(rc, JSON_COMPACT);
        assert_string_equal(
            text,
            "{\"portMappings\":[{\"hostPort\":80,\"containerPort\":8080,\"protocol\":"
            "\"tcp\"},{\"hostPort\":5353,\"containerPort\":53,\"protocol\":\"udp\","
            "\"hostIP\":\"127.0.0.1\"},{\"hostPort\":7,\"containerPort\":7,"
            "\"protocol\":\"sctp\"}]}");
        free(text);
        json_decref(rc);
        assert_int_equal(xp_agent_port_mappings(none, &rc), 0);
        assert_null(rc);
        xp_pod_free(p);
        xp_pod_free(none);
}

/* ---- the workers, with fake plugins (as root) ----------------------------------------------- */

struct fx {
        struct podnet_fixture p;
        struct xp_agent_network *net;
};

static int calls(const struct fx *f, const char *text)
{
        char path[256], line[512];
        FILE *fp;
        int n = 0;

        snprintf(path, sizeof(path), "%s/calls", f->p.t->dir);
        fp = fopen(path, "r");
        while (fp && fgets(line, sizeof(line), fp))
                n += strstr(line, text) != NULL;
        if (fp)
                fclose(fp);
        return n;
}

static int fx_setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        char path[256], text[2048];

        assert_non_null(f);
        podnet_fixture_init(&f->p,
                            "agentnet",
                            "{\"cniVersion\":\"1.0.0\",\"name\":\"fake\",\"plugins\":[{\"type\":"
                            "\"fakenet\",\"capabilities\":{\"portMappings\":true}}]}");
        snprintf(
            text,
            sizeof(text),
            "#!/bin/sh\nd=%s\nin=$(cat)\n"
            "echo \"$CNI_COMMAND $CNI_CONTAINERID $in\" >>$d/calls\n"
            "if [ -e $d/fail ]; then echo '{\"code\":7,\"msg\":\"bridge is down\"}'; exit 1; fi\n"
            "[ $CNI_COMMAND = ADD ] || exit 0\n"
            "n=$(grep -c '^ADD' $d/calls)\n"
            "printf '{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":"
            "\"x\"}],\"ips\":[{\"address\":\"10.44.0.%%s/24\",\"interface\":0}]}' $n\n",
            f->p.t->dir);
        snprintf(path, sizeof(path), "%s/fakenet", f->p.bin_dir);
        write_text(path, text, 0755);
        *state = f;
        return 0;
}

static int fx_teardown(void **state)
{
        struct fx *f = *state;

        xp_agent_network_free(f->net);
        podnet_fixture_done(&f->p);
        free(f);
        return 0;
}

static void fx_open(struct fx *f, int64_t backoff_ms)
{
        struct xp_podnet *pn = NULL;
        struct xp_error err = {0};

        assert_int_equal(xp_podnet_open(&(struct xp_podnet_options){.state_dir = f->p.state_dir,
                                                                    .conf_dir = f->p.conf_dir,
                                                                    .bin_dirs = f->p.bin_dir,
                                                                    .netns_dir = f->p.netns_dir,
                                                                    .timeout_ms = 30000},
                                        &pn,
                                        &err),
                         0);
        assert_null(xp_podnet_unavailable(pn, NULL));
        if (xp_agent_network_new(pn,
                                 &(struct xp_agent_network_config){.backoff_initial_ms = backoff_ms,
                                                                   .backoff_max_ms = backoff_ms * 4,
                                                                   .workers = 2},
                                 &f->net,
                                 &err) < 0)
                fail_msg("network: %s", err.msg);
}

/* Waits (at most 60 s: a limit, the fake plugins are scripts forked at load) until the setup of
 * uid is announced. */
static void wait_announced(struct fx *f, const char *uid)
{
        for (int i = 0; i < 600; i++) {
                struct pollfd p = {.fd = xp_agent_network_fd(f->net), .events = POLLIN};
                char **uids = NULL;
                size_t n = 0;
                bool found = false;

                if (poll(&p, 1, 100) <= 0)
                        continue;
                assert_int_equal(xp_agent_network_take(f->net, &uids, &n), 0);
                for (size_t i2 = 0; i2 < n; i2++) {
                        found |= strcmp(uids[i2], uid) == 0;
                        free(uids[i2]);
                }
                free(uids);
                if (found)
                        return;
        }
        fail_msg("the setup of %s was not announced within 60 s", uid);
}

/* Waits (at most 60 s) until text appears in the calls n times. */
static void wait_calls(struct fx *f, const char *text, int n)
{
        for (int i = 0; i < 1200 && calls(f, text) < n; i++)
                usleep(50000);
        assert_int_equal(calls(f, text), n);
}

static bool can_netns(void)
{
        return geteuid() == 0 && xp_netns_probe(NULL) == 0;
}

static void setup_and_release(void **state)
{
        struct fx *f = *state;
        struct xp_pod *pod = pod_of(
            "u1",
            C("{\"name\":\"c\",\"command\":[\"x\"],\"ports\":[{\"containerPort\":80,\"hostPort\":8080}]}"));
        struct xp_agent_netview v;
        char path[256];

        if (!can_netns())
                skip();
        fx_open(f, 200);
        xp_agent_network_peek(f->net, pod, "192.0.2.7", &v);
        assert_int_equal(v.state, XP_AGENT_NET_NONE);
        xp_agent_network_want(f->net, pod, "192.0.2.7", xp_agent_now_ns(), &v);
        assert_int_equal(v.state, XP_AGENT_NET_PENDING);
        wait_announced(f, "u1");
        xp_agent_network_peek(f->net, pod, "192.0.2.7", &v);
        assert_int_equal(v.state, XP_AGENT_NET_READY);
        assert_false(v.host);
        assert_string_equal(v.ips[0], "10.44.0.1");
        snprintf(path, sizeof(path), "%s/u1", f->p.netns_dir);
        assert_string_equal(v.netns, path);
        /* the hostPort went to the plugin that asks for portMappings */
        assert_int_equal(
            calls(
                f,
                "\"runtimeConfig\":{\"portMappings\":[{\"hostPort\":8080,\"containerPort\":80,\"protocol\":\"tcp\"}]}"),
            1);
        /* wanted again: nothing more */
        xp_agent_network_want(f->net, pod, "192.0.2.7", xp_agent_now_ns(), &v);
        assert_int_equal(v.state, XP_AGENT_NET_READY);
        assert_int_equal(calls(f, "ADD u1"), 1);
        /* released: torn down */
        xp_agent_network_release(f->net, "u1");
        wait_calls(f, "DEL u1", 1);
        for (int i = 0; i < 1200 && access(path, F_OK) == 0; i++)
                usleep(50000);
        assert_int_equal(access(path, F_OK), -1);
        xp_pod_free(pod);
}

static void failure_and_retry(void **state)
{
        struct fx *f = *state;
        struct xp_pod *pod = pod_of("u2", C("{\"name\":\"c\",\"command\":[\"x\"]}"));
        struct xp_agent_netview v;
        char fail[256];
        int64_t t0;

        if (!can_netns())
                skip();
        fx_open(f, 300);
        snprintf(fail, sizeof(fail), "%s/fail", f->p.t->dir);
        write_text(fail, "", 0644);
        t0 = xp_agent_now_ns();
        xp_agent_network_want(f->net, pod, "192.0.2.7", t0, &v);
        wait_announced(f, "u2");
        xp_agent_network_peek(f->net, pod, "192.0.2.7", &v);
        assert_int_equal(v.state, XP_AGENT_NET_FAILED);
        assert_non_null(strstr(v.message, "plugin \"fakenet\" (ADD): bridge is down (code 7)"));
        assert_true(v.retry_at_ns >= t0 + 300 * 1000000LL);
        /* before its retry time it is not tried again */
        xp_agent_network_want(f->net, pod, "192.0.2.7", v.retry_at_ns - 1, &v);
        assert_int_equal(v.state, XP_AGENT_NET_FAILED);
        assert_int_equal(calls(f, "ADD u2"), 1);
        unlink(fail);
        xp_agent_network_want(f->net, pod, "192.0.2.7", v.retry_at_ns, &v);
        assert_int_equal(v.state, XP_AGENT_NET_PENDING);
        wait_announced(f, "u2");
        xp_agent_network_peek(f->net, pod, "192.0.2.7", &v);
        assert_int_equal(v.state, XP_AGENT_NET_READY);
        assert_int_equal(calls(f, "ADD u2"), 2);
        xp_pod_free(pod);
}

static bool only_u3(const char *uid, void *userdata)
{
        (void)userdata;
        return strcmp(uid, "u3") == 0;
}

static void adoption(void **state)
{
        struct fx *f = *state;
        struct xp_pod *kept = pod_of("u3", C("{\"name\":\"c\",\"command\":[\"x\"]}"));
        struct xp_pod *gone = pod_of("u4", C("{\"name\":\"c\",\"command\":[\"x\"]}"));
        struct xp_agent_netview v;

        if (!can_netns())
                skip();
        fx_open(f, 200);
        xp_agent_network_want(f->net, kept, "192.0.2.7", xp_agent_now_ns(), &v);
        xp_agent_network_want(f->net, gone, "192.0.2.7", xp_agent_now_ns(), &v);
        wait_calls(f, "ADD u", 2);
        /* the agent goes (its workers finish what they run) and another one starts; with
         * XPOOL_DEBUG=net it CHECKs what it adopts */
        xp_agent_network_free(f->net);
        f->net = NULL;
        setenv("XPOOL_DEBUG", "net", 1);
        xp_log_init();
        fx_open(f, 200);
        unsetenv("XPOOL_DEBUG");
        xp_log_init();
        xp_agent_network_peek(f->net, kept, "192.0.2.7", &v);
        assert_int_equal(v.state, XP_AGENT_NET_READY);
        xp_agent_network_want(f->net, kept, "192.0.2.7", xp_agent_now_ns(), &v);
        assert_int_equal(v.state, XP_AGENT_NET_READY);
        /* adopted ones are not ADDed again (but CHECKed, as asked) */
        wait_calls(f, "CHECK u", 2);
        assert_int_equal(calls(f, "ADD u3"), 1);
        /* the pod no one knows any more is torn down, the other kept */
        xp_agent_network_release_unknown(f->net, only_u3, NULL);
        wait_calls(f, "DEL u4", 1);
        assert_int_equal(calls(f, "DEL u3"), 0);
        xp_pod_free(kept);
        xp_pod_free(gone);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(host_network),
            cmocka_unit_test(port_mappings),
            cmocka_unit_test_setup_teardown(setup_and_release, fx_setup, fx_teardown),
            cmocka_unit_test_setup_teardown(failure_and_retry, fx_setup, fx_teardown),
            cmocka_unit_test_setup_teardown(adoption, fx_setup, fx_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
