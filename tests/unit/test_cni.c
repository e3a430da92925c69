/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI library (include/xpool/cni.h): configuration lists, the directory lookup, the built-in
 * network, each plugin's stdin, results and errors, and running plugins (shell scripts in a
 * scratch directory standing in for bridge, host-local and portmap).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "podnet_fixture.h"
#include "tmpdir.h"
#include "xpool/cni.h"

/* JSON text with ' for " so fixtures stay readable. */
static char *dq(const char *text)
{
        char *s = strdup(text);

        assert_non_null(s);
        for (char *p = s; *p; p++)
                if (*p == '\'')
                        *p = '"';
        return s;
}

static int parse(const char *text, struct xp_cni_conf **ret, struct xp_error *err)
{
        char *s = dq(text);
        int r = xp_cni_conf_parse(s, strlen(s), "net.d/10-x.conflist", ret, err);

        free(s);
        return r;
}

static void write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
        char path[512];

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        write_text(path, text, mode);
}

/* ---- configuration -------------------------------------------------------------------------- */

static void conf_list(void **state)
{
        struct xp_cni_conf *c = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(parse("{'cniVersion':'1.0.0','name':'pods','disableCheck':true,"
                               "'plugins':[{'type':'bridge','ipam':{'type':'host-local'}},"
                               "{'type':'portmap','capabilities':{'portMappings':true}}]}",
                               &c,
                               &err),
                         0);
        assert_string_equal(c->name, "pods");
        assert_string_equal(c->cni_version, "1.0.0");
        assert_string_equal(c->source, "net.d/10-x.conflist");
        assert_true(c->disable_check);
        assert_int_equal(xp_cni_conf_plugins(c), 2);
        assert_string_equal(xp_cni_conf_plugin_type(c, 0), "bridge");
        assert_string_equal(xp_cni_conf_ipam_type(c, 0), "host-local");
        assert_null(xp_cni_conf_ipam_type(c, 1));
        xp_cni_conf_free(c);
        c = NULL;

        /* a single plugin's configuration (.conf) is a list of one */
        assert_int_equal(
            parse("{'cniVersion':'0.4.0','name':'one','type':'ptp','ipMasq':true}", &c, &err), 0);
        assert_int_equal(xp_cni_conf_plugins(c), 1);
        assert_string_equal(xp_cni_conf_plugin_type(c, 0), "ptp");
        assert_string_equal(c->cni_version, "0.4.0");
        xp_cni_conf_free(c);
}

static void conf_errors(void **state)
{
        static const struct {
                const char *text, *message;
        } cases[] = {
            {"{'name':'x'", "net.d/10-x.conflist:1:"},
            {"[]", "net.d/10-x.conflist: not a JSON object"},
            {"{'cniVersion':'1.0.0','plugins':[{'type':'bridge'}]}",
             "name: missing or not a string"},
            {"{'cniVersion':'1.0.0','name':'-x','plugins':[{'type':'bridge'}]}",
             "name: not a network name"},
            {"{'cniVersion':'one','name':'x','plugins':[{'type':'bridge'}]}",
             "cniVersion: not a version such as 1.0.0"},
            {"{'cniVersion':'1.0.0','name':'x','plugins':[]}", "plugins: 1 to 32 plugins expected"},
            {"{'cniVersion':'1.0.0','name':'x','plugins':{}}", "plugins: missing or not an array"},
            {"{'cniVersion':'1.0.0','name':'x','plugins':[{'type':'../../bin/sh'}]}",
             "plugins[0].type: not a plain file name"},
            {"{'cniVersion':'1.0.0','name':'x','plugins':[{'type':'bridge'},3]}",
             "plugins[1]: not an object"},
            {"{'cniVersion':'1.0.0','name':'x','plugins':[{'type':'bridge','ipam':{'type':'/x'}}]}",
             "plugins[0].ipam.type: missing or not a plain file name"},
            {"{'cniVersion':'1.0.0','name':'x','disableCheck':1,'plugins':[{'type':'bridge'}]}",
             "disableCheck: not a boolean"},
            {"{'cniVersion':'1.0.0','name':'x','name':'y','plugins':[{'type':'bridge'}]}",
             "duplicate object key"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                struct xp_cni_conf *c = NULL;
                struct xp_error err = {0};

                assert_int_equal(parse(cases[i].text, &c, &err), -EINVAL);
                assert_null(c);
                if (!strstr(err.msg, cases[i].message))
                        fail_msg("case %zu: '%s' not in '%s'", i, cases[i].message, err.msg);
        }
}

static int setup_dir(void **state)
{
        return tmpdir_setup(state, "cni", "x");
}

static void conf_dir(void **state)
{
        struct tmpdir *t = *state;
        struct xp_cni_conf *c = NULL;
        struct xp_error err = {0};
        char missing[128];

        snprintf(missing, sizeof(missing), "%s/none", t->dir);
        assert_int_equal(xp_cni_conf_load_dir(missing, &c, &err), -ENOENT);
        assert_int_equal(xp_cni_conf_load_dir(t->dir, &c, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "no network configuration in"));
        /* other names are not configurations; the first in byte order is taken */
        write_file(t->dir, "README", "not json", 0644);
        write_file(t->dir,
                   "20-b.conflist",
                   "{\"cniVersion\":\"1.0.0\",\"name\":\"b\",\"plugins\":[{\"type\":\"bridge\"}]}",
                   0644);
        write_file(t->dir,
                   "10-a.conf",
                   "{\"cniVersion\":\"0.4.0\",\"name\":\"a\",\"type\":\"ptp\"}",
                   0644);
        assert_int_equal(xp_cni_conf_load_dir(t->dir, &c, &err), 0);
        assert_string_equal(c->name, "a");
        assert_non_null(strstr(c->source, "/10-a.conf"));
        xp_cni_conf_free(c);
        c = NULL;
        /* a broken first file is an error naming it, not a reason to take the next */
        write_file(t->dir, "05-broken.json", "{\"name\":", 0644);
        assert_int_equal(xp_cni_conf_load_dir(t->dir, &c, &err), -EINVAL);
        assert_null(c);
        assert_non_null(strstr(err.msg, "/05-broken.json:1:"));
}

static void conf_default(void **state)
{
        struct xp_cni_conf *c = NULL;
        struct xp_error err = {0};
        char *text;

        (void)state;
        assert_int_equal(xp_cni_conf_default(NULL, &c, &err), 0);
        assert_string_equal(c->name, "xpool");
        assert_null(c->source);
        assert_int_equal(xp_cni_conf_plugins(c), 2);
        assert_string_equal(xp_cni_conf_plugin_type(c, 0), "bridge");
        assert_string_equal(xp_cni_conf_ipam_type(c, 0), "host-local");
        assert_string_equal(xp_cni_conf_plugin_type(c, 1), "portmap");
        text = json_dumps(c->json, JSON_COMPACT);
        assert_non_null(strstr(text, "\"subnet\":\"10.87.0.0/16\""));
        assert_non_null(strstr(text, "\"bridge\":\"xpool0\""));
        assert_non_null(strstr(text, "\"dst\":\"0.0.0.0/0\""));
        free(text);
        xp_cni_conf_free(c);
        c = NULL;
        assert_int_equal(xp_cni_conf_default("fd00:87::/64", &c, &err), 0);
        text = json_dumps(c->json, JSON_COMPACT);
        assert_non_null(strstr(text, "\"dst\":\"::/0\""));
        free(text);
        xp_cni_conf_free(c);
        c = NULL;
        static const char *const bad[] = {
            "10.87.0.1/16",
            "10.87.0.0",
            "10.87.0.0/31",
            "10.87.0.0/4",
            "10.87.0.0/x",
            "banana/16",
            "fd00::/48",
            "",
        };
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                assert_int_equal(xp_cni_conf_default(bad[i], &c, &err), -EINVAL);
                assert_null(c);
                assert_non_null(strstr(err.msg, "pod CIDR"));
        }
}

static void netconf(void **state)
{
        struct xp_cni_conf *c = NULL;
        json_t *conf = NULL, *prev = json_pack("{s:s}", "cniVersion", "1.0.0");
        json_t *rc = json_pack("{s:[{s:i}], s:s}", "portMappings", "hostPort", 80, "other", "x");
        char *text;

        (void)state;
        assert_int_equal(parse("{'cniVersion':'1.0.0','name':'pods','plugins':[{'type':'bridge',"
                               "'bridge':'br0'},{'type':'portmap','capabilities':"
                               "{'portMappings':true,'bandwidth':true,'other':false}}]}",
                               &c,
                               NULL),
                         0);
        /* the first plugin: name and version, no prevResult, no capabilities: no runtimeConfig */
        assert_int_equal(xp_cni_netconf(c, 0, NULL, rc, &conf), 0);
        text = json_dumps(conf, JSON_COMPACT | JSON_SORT_KEYS);
        assert_string_equal(text,
                            "{\"bridge\":\"br0\",\"cniVersion\":\"1.0.0\",\"name\":\"pods\","
                            "\"type\":\"bridge\"}");
        free(text);
        json_decref(conf);
        /* the second: the previous result, and only what it asks for and is given */
        assert_int_equal(xp_cni_netconf(c, 1, prev, rc, &conf), 0);
        text = json_dumps(json_object_get(conf, "runtimeConfig"), JSON_COMPACT);
        assert_string_equal(text, "{\"portMappings\":[{\"hostPort\":80}]}");
        free(text);
        assert_ptr_equal(json_object_get(conf, "prevResult"), prev);
        json_decref(conf);
        /* the list itself is not changed */
        assert_null(
            json_object_get(json_array_get(json_object_get(c->json, "plugins"), 1), "name"));
        json_decref(prev);
        json_decref(rc);
        xp_cni_conf_free(c);
}

static void versions(void **state)
{
        (void)state;
        assert_true(xp_cni_version_compare("1.0.0", "0.4.0") > 0);
        assert_true(xp_cni_version_compare("0.3.1", "0.4.0") < 0);
        assert_int_equal(xp_cni_version_compare("0.4", "0.4.0"), 0);
        assert_true(xp_cni_version_compare("0.10.0", "0.9.9") > 0);
        assert_int_equal(xp_cni_version_compare("1.0.0", "1.0.0"), 0);
}

/* ---- results -------------------------------------------------------------------------------- */

static void result_current(void **state)
{
        struct xp_cni_result r = {0};
        struct xp_error err = {0};
        char *text = dq("{'cniVersion':'1.0.0','interfaces':[{'name':'cni0','mac':'aa'},"
                        "{'name':'veth1','mac':'bb'},{'name':'eth0','mac':'cc','sandbox':'/run/x'},"
                        "{'name':'net1','sandbox':'/run/x'}],"
                        "'ips':[{'address':'10.0.0.1/16','interface':0},"
                        "{'address':'fd00::0005/64','interface':2},"
                        "{'address':'10.88.0.5/16','gateway':'10.88.0.1','interface':2},"
                        "{'address':'10.88.0.6/16','interface':2},"
                        "{'address':'192.168.9.9/24','interface':3}],"
                        "'routes':[{'dst':'0.0.0.0/0'}],'dns':{}}");

        (void)state;
        assert_int_equal(xp_cni_result_parse(text, strlen(text), "eth0", &r, &err), 0);
        assert_string_equal(r.cni_version, "1.0.0");
        /* eth0's, IPv4 first, one per family */
        assert_int_equal(r.n_ips, 2);
        assert_int_equal(r.ips[0].family, AF_INET);
        assert_string_equal(r.ips[0].address, "10.88.0.5");
        assert_int_equal(r.ips[0].prefix, 16);
        assert_int_equal(r.ips[1].family, AF_INET6);
        assert_string_equal(r.ips[1].address, "fd00::5");
        assert_non_null(json_object_get(r.json, "routes"));
        xp_cni_result_done(&r);
        free(text);

        /* 0.3.x, no interfaces named: every address (host-local alone prints these) */
        text = dq("{'cniVersion':'0.3.1','ips':[{'version':'4','address':'10.1.2.3/24'}]}");
        assert_int_equal(xp_cni_result_parse(text, strlen(text), "eth0", &r, &err), 0);
        assert_int_equal(r.n_ips, 1);
        assert_string_equal(r.ips[0].address, "10.1.2.3");
        xp_cni_result_done(&r);
        free(text);

        /* a result with no address is a result */
        text = dq("{'cniVersion':'1.0.0','interfaces':[]}");
        assert_int_equal(xp_cni_result_parse(text, strlen(text), "eth0", &r, &err), 0);
        assert_int_equal(r.n_ips, 0);
        xp_cni_result_done(&r);
        free(text);
}

static void result_legacy(void **state)
{
        struct xp_cni_result r = {0};
        struct xp_error err = {0};
        char *text = dq("{'cniVersion':'0.2.0','ip4':{'ip':'10.9.0.7/16','gateway':'10.9.0.1'},"
                        "'ip6':{'ip':'2001:db8::7/64'}}");

        (void)state;
        assert_int_equal(xp_cni_result_parse(text, strlen(text), "eth0", &r, &err), 0);
        assert_int_equal(r.n_ips, 2);
        assert_string_equal(r.ips[0].address, "10.9.0.7");
        assert_string_equal(r.ips[1].address, "2001:db8::7");
        xp_cni_result_done(&r);
        free(text);
        /* no cniVersion (0.1.0) */
        text = dq("{'ip4':{'ip':'10.9.0.8/16'}}");
        assert_int_equal(xp_cni_result_parse(text, strlen(text), "eth0", &r, &err), 0);
        assert_null(r.cni_version);
        assert_string_equal(r.ips[0].address, "10.9.0.8");
        xp_cni_result_done(&r);
        free(text);
}

static void result_errors(void **state)
{
        static const struct {
                const char *text, *message;
        } cases[] = {
            {"", "not JSON"},
            {"[1]", "not a JSON object"},
            {"{'cniVersion':1}", "cniVersion: not a string"},
            {"{'ips':{}}", "ips: not an array"},
            {"{'ips':[3]}", "ips[0]: not an object"},
            {"{'ips':[{'address':'10.0.0.1'}]}", "ips[0].address"},
            {"{'ips':[{'address':'10.0.0.300/24'}]}", "ips[0].address"},
            {"{'ips':[{'address':'10.0.0.3/33'}]}", "ips[0].address"},
            {"{'ips':[{'address':'/24'}]}", "ips[0].address"},
            {"{'ips':[{'address':'10.0.0.3/24','interface':'eth0'}]}", "ips[0].interface"},
            {"{'interfaces':[1],'ips':[]}", "interfaces[0]: not an object"},
            {"{'ip4':{'ip':'fd00::1/64'}}", "ip4.ip"},
            {"{'ip6':'x'}", "ip6.ip"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                struct xp_cni_result r = {0};
                struct xp_error err = {0};
                char *text = dq(cases[i].text);

                assert_int_equal(xp_cni_result_parse(text, strlen(text), "eth0", &r, &err),
                                 -EINVAL);
                assert_null(r.json);
                if (!strstr(err.msg, cases[i].message))
                        fail_msg("case %zu: '%s' not in '%s'", i, cases[i].message, err.msg);
                free(text);
        }
}

static void plugin_errors(void **state)
{
        char msg[128];
        int code = 0;
        char *text =
            dq("{'cniVersion':'1.0.0','code':7,'msg':'invalid config','details':'no bridge'}");

        (void)state;
        assert_int_equal(xp_cni_error_parse(text, strlen(text), &code, msg, sizeof(msg)), 0);
        assert_int_equal(code, 7);
        assert_string_equal(msg, "invalid config: no bridge");
        free(text);
        text = dq("{'code':11,'msg':'busy'}");
        assert_int_equal(xp_cni_error_parse(text, strlen(text), &code, msg, sizeof(msg)), 0);
        assert_string_equal(msg, "busy");
        free(text);
        assert_int_equal(xp_cni_error_parse("panic: oops", 11, &code, msg, sizeof(msg)), -EINVAL);
        assert_int_equal(xp_cni_error_parse("{\"msg\":\"x\"}", 11, &code, msg, sizeof(msg)),
                         -EINVAL);
        assert_int_equal(xp_cni_error_parse("", 0, &code, msg, sizeof(msg)), -EINVAL);
}

/* ---- running plugins ------------------------------------------------------------------------ */

/* A fake plugin: records its environment and stdin under DIR/calls, then prints result. */
static void fake_plugin(const char *dir, const char *name, const char *body)
{
        char text[4096];

        snprintf(text,
                 sizeof(text),
                 "#!/bin/sh\n"
                 "n=$(ls %s/calls | grep -c json); n=$(printf %%02d $n)\n"
                 "f=%s/calls/$n-$CNI_COMMAND-%s\n"
                 "env | grep -E '^(CNI_|PATH=)' | sort >$f.env\n"
                 "cat >$f.json\n"
                 "%s\n",
                 dir,
                 dir,
                 name,
                 body);
        write_file(dir, name, text, 0755);
}

#define RESULT_ECHO                                                                                \
        "printf '{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"%s\"}],\"ips\":[{\"address\":\"10.22.0.%s/24\",\"interface\":0}]}' \"$CNI_NETNS\" "

static int setup_plugins(void **state)
{
        struct tmpdir *t;
        char calls[128];

        tmpdir_setup(state, "cniexec", "x");
        t = *state;
        snprintf(calls, sizeof(calls), "%s/calls", t->dir);
        assert_int_equal(mkdir(calls, 0755), 0);
        fake_plugin(t->dir, "first", RESULT_ECHO "5");
        /* a chained plugin prints its prevResult back, as portmap does */
        fake_plugin(t->dir,
                    "second",
                    "sed -n 's/.*\"prevResult\":\\({.*}\\),\"runtimeConfig.*/\\1/p' $f.json");
        fake_plugin(
            t->dir,
            "failing",
            "echo '{\"cniVersion\":\"1.0.0\",\"code\":7,\"msg\":\"no bridge\",\"details\":\"br9\"}'; exit 1");
        fake_plugin(t->dir, "busy", "echo '{\"code\":11,\"msg\":\"busy\"}'; exit 1");
        fake_plugin(t->dir, "crashing", "echo 'panic: runtime error' >&2; exit 2");
        fake_plugin(t->dir, "hanging", "sleep 30 & sleep 30; echo '{}'");
        fake_plugin(t->dir, "noisy", "head -c 1100000 /dev/zero | tr '\\0' x");
        fake_plugin(t->dir, "garbage", "echo 'not json'");
        write_file(t->dir, "notexec", "#!/bin/sh\n", 0644);
        return 0;
}

static struct xp_cni_args args_of(const struct tmpdir *t)
{
        static char bin[128];

        snprintf(bin, sizeof(bin), "/nonexistent:%s", t->dir);
        return (struct xp_cni_args){.container_id = "uid-1",
                                    .netns = "/run/xpool/netns/uid-1",
                                    .ifname = "eth0",
                                    .args = "K8S_POD_NAME=p",
                                    .bin_dirs = bin,
                                    .timeout_ms = 30000}; /* a limit: scripts fork at load */
}

static void find_plugin(void **state)
{
        struct tmpdir *t = *state;
        struct xp_cni_args a = args_of(t);
        struct xp_error err = {0};
        char *path = NULL;

        assert_int_equal(xp_cni_find_plugin(a.bin_dirs, "first", &path, &err), 0);
        assert_non_null(strstr(path, "/first"));
        free(path);
        path = NULL;
        assert_int_equal(xp_cni_find_plugin(a.bin_dirs, "notexec", &path, &err), -ENOENT);
        assert_int_equal(xp_cni_find_plugin(a.bin_dirs, "bridge9", &path, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "no CNI plugin \"bridge9\" in /nonexistent:"));
        assert_non_null(strstr(err.msg, "containernetworking-plugins"));
        assert_int_equal(xp_cni_find_plugin(a.bin_dirs, "../first", &path, &err), -EINVAL);
        assert_int_equal(xp_cni_find_plugin(a.bin_dirs, "calls", &path, &err), -ENOENT);
        assert_null(path);
}

static int64_t mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int exec_one(const struct tmpdir *t,
                    const char *name,
                    struct xp_cni_args *a,
                    char **out,
                    struct xp_error *err)
{
        char exe[256];

        snprintf(exe, sizeof(exe), "%s/%s", t->dir, name);
        return xp_cni_exec(exe, "ADD", a, "{\"x\":1}", 7, out, err);
}

static void exec_plugins(void **state)
{
        struct tmpdir *t = *state;
        struct xp_cni_args a = args_of(t);
        struct xp_error err = {0};
        char *out = NULL, path[256], *text;
        int64_t t0;

        assert_int_equal(exec_one(t, "first", &a, &out, &err), 0);
        assert_non_null(strstr(out, "\"10.22.0.5/24\""));
        free(out);
        out = NULL;
        /* what it was told: the CNI_* variables and PATH only, the configuration on stdin */
        snprintf(path, sizeof(path), "%s/calls/00-ADD-first.env", t->dir);
        text = slurp_text(path);
        assert_non_null(text);
        assert_non_null(strstr(text, "CNI_COMMAND=ADD\n"));
        assert_non_null(strstr(text, "CNI_CONTAINERID=uid-1\n"));
        assert_non_null(strstr(text, "CNI_NETNS=/run/xpool/netns/uid-1\n"));
        assert_non_null(strstr(text, "CNI_IFNAME=eth0\n"));
        assert_non_null(strstr(text, "CNI_ARGS=K8S_POD_NAME=p\n"));
        assert_non_null(strstr(text, "CNI_PATH=/nonexistent:"));
        assert_non_null(strstr(text, "PATH="));
        free(text);
        snprintf(path, sizeof(path), "%s/calls/00-ADD-first.json", t->dir);
        text = slurp_text(path);
        assert_string_equal(text, "{\"x\":1}");
        free(text);

        assert_int_equal(exec_one(t, "failing", &a, &out, &err), -EIO);
        assert_string_equal(err.msg, "plugin \"failing\" (ADD): no bridge: br9 (code 7)");
        assert_int_equal(exec_one(t, "busy", &a, &out, &err), -EAGAIN);
        assert_int_equal(exec_one(t, "crashing", &a, &out, &err), -EIO);
        assert_string_equal(
            err.msg, "plugin \"crashing\" (ADD): exited with status 2: panic: runtime error");
        assert_int_equal(exec_one(t, "noisy", &a, &out, &err), -E2BIG);
        assert_null(out);
        /* past its time it is killed, with what it started */
        a.timeout_ms = 300;
        t0 = mono_ms();
        assert_int_equal(exec_one(t, "hanging", &a, &out, &err), -ETIMEDOUT);
        /* killed, not waited for: the plugin's sleeps take 30 s (5 s was a guess at load) */
        assert_true(mono_ms() - t0 < 20000);
        assert_non_null(strstr(err.msg, "no answer within 0.3 s: killed"));
        assert_null(out);
}

static void chain(void **state)
{
        struct tmpdir *t = *state;
        struct xp_cni_args a = args_of(t);
        struct xp_cni_conf *c = NULL;
        struct xp_cni_result r = {0};
        struct xp_error err = {0};
        json_t *rc = json_pack("{s:[{s:i, s:i, s:s}]}",
                               "portMappings",
                               "hostPort",
                               8080,
                               "containerPort",
                               80,
                               "protocol",
                               "tcp");
        char path[256], *text;

        assert_int_equal(parse("{'cniVersion':'1.0.0','name':'pods','plugins':[{'type':'first'},"
                               "{'type':'second','capabilities':{'portMappings':true}}]}",
                               &c,
                               &err),
                         0);
        assert_int_equal(xp_cni_add(c, &a, rc, &r, &err), 0);
        assert_int_equal(r.n_ips, 1);
        assert_string_equal(r.ips[0].address, "10.22.0.5");
        /* the second got the first's result and its port mappings */
        snprintf(path, sizeof(path), "%s/calls/01-ADD-second.json", t->dir);
        text = slurp_text(path);
        assert_non_null(strstr(text, "\"prevResult\":{\"cniVersion\":\"1.0.0\""));
        assert_non_null(strstr(text, "\"runtimeConfig\":{\"portMappings\":[{\"hostPort\":8080"));
        assert_non_null(strstr(text, "\"name\":\"pods\""));
        free(text);

        /* DEL: reverse order, the ADD's result as prevResult */
        assert_int_equal(xp_cni_del(c, &a, rc, r.json, &err), 0);
        snprintf(path, sizeof(path), "%s/calls/02-DEL-second.json", t->dir);
        text = slurp_text(path);
        assert_non_null(text);
        assert_non_null(strstr(text, "\"prevResult\":{"));
        free(text);
        snprintf(path, sizeof(path), "%s/calls/03-DEL-first.json", t->dir);
        text = slurp_text(path);
        assert_non_null(text);
        free(text);
        /* CHECK: in order */
        assert_int_equal(xp_cni_check(c, &a, rc, r.json, &err), 0);
        snprintf(path, sizeof(path), "%s/calls/04-CHECK-first.json", t->dir);
        text = slurp_text(path);
        assert_non_null(text);
        free(text);
        xp_cni_result_done(&r);
        xp_cni_conf_free(c);
        c = NULL;

        /* a failing plugin stops the ADD; a DEL goes on past it and reports it */
        assert_int_equal(parse("{'cniVersion':'1.0.0','name':'pods','plugins':[{'type':'first'},"
                               "{'type':'failing'},{'type':'second'}]}",
                               &c,
                               &err),
                         0);
        assert_int_equal(xp_cni_add(c, &a, NULL, &r, &err), -EIO);
        assert_null(r.json);
        assert_non_null(strstr(err.msg, "network \"pods\": plugin \"failing\" (ADD): no bridge"));
        snprintf(path, sizeof(path), "%s/calls/07-ADD-second.json", t->dir);
        assert_null(slurp_text(path));
        assert_int_equal(xp_cni_del(c, &a, NULL, NULL, &err), -EIO);
        snprintf(path, sizeof(path), "%s/calls/10-DEL-first.json", t->dir);
        text = slurp_text(path);
        assert_non_null(text); /* first was still told, after failing failed */
        free(text);
        xp_cni_conf_free(c);
        c = NULL;

        /* output that is no result, a missing plugin */
        assert_int_equal(
            parse("{'cniVersion':'1.0.0','name':'g','plugins':[{'type':'garbage'}]}", &c, &err), 0);
        assert_int_equal(xp_cni_add(c, &a, NULL, &r, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "network \"g\": CNI result: not JSON"));
        xp_cni_conf_free(c);
        c = NULL;
        assert_int_equal(
            parse("{'cniVersion':'1.0.0','name':'m','plugins':[{'type':'missing'}]}", &c, &err), 0);
        assert_int_equal(xp_cni_add(c, &a, NULL, &r, &err), -ENOENT);
        /* before 0.4.0 there is no CHECK: nothing runs */
        xp_cni_conf_free(c);
        c = NULL;
        assert_int_equal(
            parse("{'cniVersion':'0.3.1','name':'old','plugins':[{'type':'failing'}]}", &c, &err),
            0);
        assert_int_equal(xp_cni_check(c, &a, NULL, NULL, &err), 0);
        xp_cni_conf_free(c);
        json_decref(rc);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(conf_list),
            cmocka_unit_test(conf_errors),
            cmocka_unit_test_setup_teardown(conf_dir, setup_dir, tmpdir_teardown),
            cmocka_unit_test(conf_default),
            cmocka_unit_test(netconf),
            cmocka_unit_test(versions),
            cmocka_unit_test(result_current),
            cmocka_unit_test(result_legacy),
            cmocka_unit_test(result_errors),
            cmocka_unit_test(plugin_errors),
            cmocka_unit_test_setup_teardown(find_plugin, setup_plugins, tmpdir_teardown),
            cmocka_unit_test_setup_teardown(exec_plugins, setup_plugins, tmpdir_teardown),
            cmocka_unit_test_setup_teardown(chain, setup_plugins, tmpdir_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
