/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod networks (include/xpool/podnet.h): the records, the network namespaces (as root), and the
 * bookkeeping of setup and teardown with fake CNI plugins (shell scripts that touch no real
 * network): one ADD per pod however often it is set up, the DEL of an interrupted ADD or of a
 * namespace that is gone, nothing left after a failed ADD or a teardown.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "podnet_fixture.h"
#include "tmpdir.h"
#include "xpool/podnet.h"

/* Lines of DIR/calls holding text. */
static int calls(const char *dir, const char *text)
{
        char path[256], *all, *p;
        int n = 0;

        snprintf(path, sizeof(path), "%s/calls", dir);
        all = slurp_text(path);
        for (p = all; p && (p = strstr(p, text)); p += strlen(text))
                n++;
        free(all);
        return n;
}

/* ---- records -------------------------------------------------------------------------------- */

static int setup_tmp(void **state)
{
        return tmpdir_setup(state, "podnet", "state");
}

static void records(void **state)
{
        struct tmpdir *t = *state;
        struct xp_podnet_record r = {
            .uid = "0b9e-uid",
            .pod_namespace = "default",
            .pod_name = "web",
            .netns = "/run/xpool/netns/0b9e-uid",
            .ifname = "eth0",
            .ready = true,
        };
        struct xp_podnet_record back = {0};
        struct xp_error err = {0};
        char **uids = NULL, path[256];
        size_t n = 0;

        r.network = json_pack("{s:s}", "name", "pods");
        r.result = json_pack("{s:s}", "cniVersion", "1.0.0");
        assert_int_equal(mkdir(t->path, 0700), 0);
        assert_int_equal(xp_podnet_record_write(t->path, &r, &err), 0);
        assert_int_equal(xp_podnet_record_read(t->path, "0b9e-uid", &back, &err), 0);
        assert_string_equal(back.pod_name, "web");
        assert_string_equal(back.netns, "/run/xpool/netns/0b9e-uid");
        assert_true(back.ready);
        assert_true(json_equal(back.network, r.network));
        assert_true(json_equal(back.result, r.result));
        assert_null(back.runtime_config);
        xp_podnet_record_clear(&back);
        /* its mode, and the list */
        snprintf(path, sizeof(path), "%s/0b9e-uid.json", t->path);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        write_text(strcat(strcpy(path, t->path), "/not-a-record.tmp"), "x", 0600);
        assert_int_equal(xp_podnet_record_list(t->path, &uids, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(uids[0], "0b9e-uid");
        free(uids[0]);
        free(uids);
        assert_int_equal(xp_podnet_record_read(t->path, "other", &back, &err), -ENOENT);
        assert_int_equal(xp_podnet_record_read(t->path, "../x", &back, &err), -EINVAL);
        assert_int_equal(xp_podnet_record_remove(t->path, "0b9e-uid", &err), 0);
        assert_int_equal(xp_podnet_record_remove(t->path, "0b9e-uid", &err), 0);
        assert_int_equal(xp_podnet_record_read(t->path, "0b9e-uid", &back, &err), -ENOENT);
        json_decref(r.network);
        json_decref(r.result);
}

static void record_checks(void **state)
{
        static const struct {
                const char *json, *message;
        } cases[] = {
            {"[]", "not a JSON object"},
            {"{\"uid\":\"u\"}", "namespace: missing"},
            {"{\"uid\":\"a/b\",\"namespace\":\"\",\"name\":\"\",\"netns\":\"/x\",\"ifname\":\"eth0\","
             "\"ready\":false,\"network\":{}}",
             "cannot name a pod's network"},
            {"{\"uid\":\"u\",\"namespace\":\"\",\"name\":\"\",\"netns\":\"x\",\"ifname\":\"eth0\","
             "\"ready\":false,\"network\":{}}",
             "netns: not set"},
            {"{\"uid\":\"u\",\"namespace\":\"\",\"name\":\"\",\"netns\":\"/x\",\"ifname\":\"eth0\","
             "\"ready\":1,\"network\":{}}",
             "of the wrong type"},
            {"{\"uid\":\"u\",\"namespace\":\"\",\"name\":\"\",\"netns\":\"/x\",\"ifname\":\"eth0\","
             "\"ready\":true,\"network\":{}}",
             "result: missing on a ready network"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                json_t *json = json_loads(cases[i].json, 0, NULL);
                struct xp_podnet_record r = {0};
                struct xp_error err = {0};

                assert_non_null(json);
                assert_int_equal(xp_podnet_record_from_json(json, &r, &err), -EINVAL);
                if (!strstr(err.msg, cases[i].message))
                        fail_msg("case %zu: '%s' not in '%s'", i, cases[i].message, err.msg);
                assert_null(r.uid);
                json_decref(json);
        }
        assert_true(xp_podnet_uid_ok("6f1c2a7e-0b1d-4c2e-9f3a-1234567890ab"));
        assert_false(xp_podnet_uid_ok(""));
        assert_false(xp_podnet_uid_ok(".hidden"));
        assert_false(xp_podnet_uid_ok("a b"));
        assert_false(xp_podnet_uid_ok("x.json"));
        assert_false(xp_podnet_uid_ok(NULL));
}

/* ---- network namespaces (root) -------------------------------------------------------------- */

static bool can_netns(void)
{
        return geteuid() == 0 && xp_netns_probe(NULL) == 0;
}

/* Whether the mount at dir has shared propagation (mountinfo's optional "shared:N"). */
static bool shared_mount(const char *dir)
{
        char *info = slurp_text("/proc/self/mountinfo"), *line, *save = NULL;
        char needle[300];
        bool shared = false;

        snprintf(needle, sizeof(needle), " %s ", dir);
        for (line = strtok_r(info, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                if (strstr(line, needle) && strstr(line, " shared:"))
                        shared = true;
        free(info);
        return shared;
}

static void netns(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        char dir[160], path[200], plain[200];

        if (!can_netns())
                skip();
        snprintf(dir, sizeof(dir), "%s/run/netns", t->dir);
        assert_int_equal(xp_netns_dir_prepare(dir, &err), 0);
        assert_true(shared_mount(dir));
        /* again: it is a mount point already */
        assert_int_equal(xp_netns_dir_prepare(dir, &err), 0);
        snprintf(path, sizeof(path), "%s/pod-a", dir);
        assert_int_equal(xp_netns_mounted(path), 0);
        assert_int_equal(xp_netns_create(path, &err), 0);
        assert_int_equal(xp_netns_mounted(path), 1);
        assert_int_equal(xp_netns_create(path, &err), -EEXIST);
        snprintf(plain, sizeof(plain), "%s/plain", dir);
        write_text(plain, "", 0600);
        assert_int_equal(xp_netns_mounted(plain), 0);
        assert_int_equal(xp_netns_remove(path, &err), 0);
        assert_int_equal(xp_netns_mounted(path), 0);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(xp_netns_remove(path, &err), 0);
        assert_int_equal(umount2(dir, MNT_DETACH), 0);
}

/* ---- setup and teardown with fake plugins --------------------------------------------------- */

struct fx {
        struct podnet_fixture p;
        struct xp_podnet *pn;
};

/* A plugin that logs "COMMAND ID NETNS" to DIR/calls and prints a result with the address
 * 10.33.0.N, N counting its ADDs, or what DIR/fail-CMD says (an error, or no address). */
static void fake_plugins(struct fx *f)
{
        char path[256], text[2048];

        snprintf(
            text,
            sizeof(text),
            "#!/bin/sh\n"
            "d=%s\n"
            "cat >/dev/null\n"
            "echo \"$CNI_COMMAND $CNI_CONTAINERID [$CNI_NETNS] $CNI_ARGS\" >>$d/calls\n"
            "if [ -e $d/fail-$CNI_COMMAND ]; then cat $d/fail-$CNI_COMMAND; exit 1; fi\n"
            "[ $CNI_COMMAND = ADD ] || exit 0\n"
            "if [ -e $d/noaddr ]; then echo '{\"cniVersion\":\"1.0.0\"}'; exit 0; fi\n"
            "n=$(grep -c '^ADD' $d/calls)\n"
            "printf '{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"%%s\"}],"
            "\"ips\":[{\"address\":\"10.33.0.%%s/24\",\"interface\":0}]}' \"$CNI_NETNS\" $n\n",
            f->p.t->dir);
        snprintf(path, sizeof(path), "%s/fakenet", f->p.bin_dir);
        write_text(path, text, 0755);
        snprintf(path, sizeof(path), "%s/fakeipam", f->p.bin_dir);
        write_text(path, "#!/bin/sh\nexit 0\n", 0755);
}

static int fx_setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        podnet_fixture_init(&f->p,
                            "podnet",
                            "{\"cniVersion\":\"1.0.0\",\"name\":\"fake\",\"plugins\":[{\"type\":"
                            "\"fakenet\",\"ipam\":{\"type\":\"fakeipam\"}}]}");
        fake_plugins(f);
        *state = f;
        return 0;
}

static int fx_teardown(void **state)
{
        struct fx *f = *state;

        xp_podnet_free(f->pn);
        podnet_fixture_done(&f->p);
        free(f);
        return 0;
}

static void fx_open(struct fx *f)
{
        struct xp_error err = {0};

        assert_int_equal(xp_podnet_open(&(struct xp_podnet_options){.state_dir = f->p.state_dir,
                                                                    .conf_dir = f->p.conf_dir,
                                                                    .bin_dirs = f->p.bin_dir,
                                                                    .netns_dir = f->p.netns_dir,
                                                                    .timeout_ms = 5000},
                                        &f->pn,
                                        &err),
                         0);
}

static void lifecycle(void **state)
{
        struct fx *f = *state;
        struct xp_podnet_pod pod = {.uid = "uid-1", .pod_namespace = "ns", .pod_name = "web"};
        struct xp_podnet_info info, again;
        struct xp_error err = {0};
        char **uids = NULL, path[256];
        size_t n = 0;

        if (!can_netns())
                skip();
        fx_open(f);
        assert_null(xp_podnet_unavailable(f->pn, NULL));
        assert_non_null(strstr(xp_podnet_describe(f->pn), "CNI network \"fake\" (fakenet) from "));
        assert_int_equal(xp_podnet_setup(f->pn, &pod, &info, &err), 0);
        assert_string_equal(info.ips[0].address, "10.33.0.1");
        assert_int_equal(info.n_ips, 1);
        snprintf(path, sizeof(path), "%s/uid-1", f->p.netns_dir);
        assert_string_equal(info.netns, path);
        assert_int_equal(xp_netns_mounted(path), 1);
        assert_int_equal(calls(f->p.t->dir, "ADD uid-1 ["), 1);
        assert_int_equal(calls(f->p.t->dir, "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;"), 1);
        /* set up again (an agent that restarted): the same, no second ADD */
        assert_int_equal(xp_podnet_setup(f->pn, &pod, &again, &err), 1);
        assert_string_equal(again.ips[0].address, "10.33.0.1");
        assert_int_equal(calls(f->p.t->dir, "ADD uid-1"), 1);
        assert_int_equal(xp_podnet_get(f->pn, "uid-1", &again, &err), 0);
        assert_int_equal(xp_podnet_list(f->pn, &uids, &n, &err), 0);
        assert_int_equal(n, 1);
        free(uids[0]);
        free(uids);
        assert_int_equal(xp_podnet_check(f->pn, "uid-1", &err), 0);
        assert_int_equal(calls(f->p.t->dir, "CHECK uid-1"), 1);
        /* teardown: DEL with the namespace, then it and the record are gone */
        assert_int_equal(xp_podnet_teardown(f->pn, "uid-1", &err), 0);
        assert_int_equal(calls(f->p.t->dir, "DEL uid-1 [/"), 1);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(xp_podnet_get(f->pn, "uid-1", &again, &err), -ENOENT);
        assert_int_equal(xp_podnet_teardown(f->pn, "uid-1", &err), 0);
        assert_int_equal(calls(f->p.t->dir, "DEL uid-1"), 1);
}

/* What a crash leaves: a record whose ADD never finished; a namespace gone with a reboot. */
static void interrupted_and_stale(void **state)
{
        struct fx *f = *state;
        struct xp_podnet_pod pod = {.uid = "uid-2", .pod_namespace = "ns", .pod_name = "db"};
        struct xp_podnet_record rec = {
            .uid = "uid-2", .pod_namespace = "ns", .pod_name = "db", .ifname = "eth0"};
        struct xp_podnet_info info;
        struct xp_error err = {0};
        char path[256];

        if (!can_netns())
                skip();
        fx_open(f);
        snprintf(path, sizeof(path), "%s/uid-2", f->p.netns_dir);
        rec.netns = path;
        rec.network = json_loads("{\"cniVersion\":\"1.0.0\",\"name\":\"fake\",\"plugins\":"
                                 "[{\"type\":\"fakenet\"}]}",
                                 0,
                                 NULL);
        assert_int_equal(xp_podnet_record_write(f->p.state_dir, &rec, &err), 0);
        assert_int_equal(xp_netns_create(path, &err), 0);
        assert_int_equal(xp_podnet_get(f->pn, "uid-2", &info, &err), -ESTALE);
        assert_non_null(strstr(err.msg, "its ADD never finished"));
        /* the next setup DELs first (the ADD may have run), then ADDs afresh */
        assert_int_equal(xp_podnet_setup(f->pn, &pod, &info, &err), 0);
        assert_int_equal(calls(f->p.t->dir, "DEL uid-2 [/"), 1);
        assert_int_equal(calls(f->p.t->dir, "ADD uid-2"), 1);
        assert_int_equal(xp_podnet_get(f->pn, "uid-2", &info, &err), 0);
        /* the namespace gone (a reboot): stale; its DEL is told there is none */
        assert_int_equal(umount2(path, MNT_DETACH), 0);
        assert_int_equal(xp_podnet_get(f->pn, "uid-2", &info, &err), -ESTALE);
        assert_non_null(strstr(err.msg, "its namespace is gone"));
        assert_int_equal(xp_podnet_teardown(f->pn, "uid-2", &err), 0);
        assert_int_equal(calls(f->p.t->dir, "DEL uid-2 [] "), 1);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(xp_podnet_get(f->pn, "uid-2", &info, &err), -ENOENT);
        json_decref(rec.network);
}

static void failures(void **state)
{
        struct fx *f = *state;
        struct xp_podnet_pod pod = {.uid = "uid-3", .pod_namespace = "ns", .pod_name = "x"};
        struct xp_podnet_info info;
        struct xp_error err = {0};
        char path[256], nspath[256];

        if (!can_netns())
                skip();
        fx_open(f);
        snprintf(nspath, sizeof(nspath), "%s/uid-3", f->p.netns_dir);
        /* a failed ADD is DELed and leaves nothing */
        snprintf(path, sizeof(path), "%s/fail-ADD", f->p.t->dir);
        write_text(path, "{\"code\":7,\"msg\":\"no bridge\"}", 0644);
        assert_int_equal(xp_podnet_setup(f->pn, &pod, &info, &err), -EIO);
        assert_non_null(strstr(err.msg, "plugin \"fakenet\" (ADD): no bridge (code 7)"));
        assert_int_equal(calls(f->p.t->dir, "DEL uid-3"), 1);
        assert_int_equal(access(nspath, F_OK), -1);
        assert_int_equal(xp_podnet_get(f->pn, "uid-3", &info, &err), -ENOENT);
        unlink(path);
        /* a result without an address, the same */
        snprintf(path, sizeof(path), "%s/noaddr", f->p.t->dir);
        write_text(path, "", 0644);
        assert_int_equal(xp_podnet_setup(f->pn, &pod, &info, &err), -EADDRNOTAVAIL);
        assert_non_null(strstr(err.msg, "has no address for eth0"));
        assert_int_equal(calls(f->p.t->dir, "DEL uid-3"), 2);
        assert_int_equal(access(nspath, F_OK), -1);
        unlink(path);
        /* a failing DEL keeps the record and the namespace: the teardown is tried again */
        assert_int_equal(xp_podnet_setup(f->pn, &pod, &info, &err), 0);
        snprintf(path, sizeof(path), "%s/fail-DEL", f->p.t->dir);
        write_text(path, "{\"code\":999,\"msg\":\"iptables is locked\"}", 0644);
        assert_int_equal(xp_podnet_teardown(f->pn, "uid-3", &err), -EIO);
        assert_int_equal(xp_podnet_get(f->pn, "uid-3", &info, &err), 0);
        assert_int_equal(xp_netns_mounted(nspath), 1);
        unlink(path);
        assert_int_equal(xp_podnet_teardown(f->pn, "uid-3", &err), 0);
        assert_int_equal(access(nspath, F_OK), -1);
        /* a uid that cannot name a file */
        pod.uid = "../../etc";
        assert_int_equal(xp_podnet_setup(f->pn, &pod, &info, &err), -EINVAL);
}

static void unavailable(void **state)
{
        struct fx *f = *state;
        struct xp_podnet_pod pod = {.uid = "uid-4"};
        struct xp_podnet_info info;
        struct xp_error err = {0};
        const char *reason = NULL, *why;
        char path[256];

        /* a plugin that is not there */
        snprintf(path, sizeof(path), "%s/fakeipam", f->p.bin_dir);
        unlink(path);
        fx_open(f);
        why = xp_podnet_unavailable(f->pn, &reason);
        assert_non_null(why);
        assert_string_equal(reason, "CNIPluginNotFound");
        assert_non_null(strstr(why, "network \"fake\": no CNI plugin \"fakeipam\" in "));
        assert_int_equal(xp_podnet_setup(f->pn, &pod, &info, &err), -ENETDOWN);
        assert_non_null(strstr(err.msg, "no pod network: "));
        xp_podnet_free(f->pn);
        f->pn = NULL;
        /* a configuration that does not parse */
        snprintf(path, sizeof(path), "%s/05-bad.conf", f->p.conf_dir);
        write_text(path, "{\"cniVersion\":\"1.0.0\"}", 0644);
        fx_open(f);
        why = xp_podnet_unavailable(f->pn, &reason);
        assert_string_equal(reason, "CNIConfigInvalid");
        assert_non_null(strstr(why, "05-bad.conf: name: missing"));
        xp_podnet_free(f->pn);
        f->pn = NULL;
        /* what the operator gave wrong is an error */
        assert_int_equal(unlink(path), 0);
        assert_int_equal(xp_podnet_open(&(struct xp_podnet_options){.state_dir = f->p.state_dir,
                                                                    .conf_dir = "/nonexistent",
                                                                    .bin_dirs = f->p.bin_dir,
                                                                    .netns_dir = f->p.netns_dir,
                                                                    .pod_cidr = "10.0.0.1/8"},
                                        &f->pn,
                                        &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "pod CIDR \"10.0.0.1/8\""));
        assert_int_equal(xp_podnet_open(&(struct xp_podnet_options){.state_dir = f->p.state_dir,
                                                                    .netns_dir = "run/netns"},
                                        &f->pn,
                                        &err),
                         -EINVAL);
        assert_null(f->pn);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(records, setup_tmp, tmpdir_teardown),
            cmocka_unit_test(record_checks),
            cmocka_unit_test_setup_teardown(netns, setup_tmp, tmpdir_teardown),
            cmocka_unit_test_setup_teardown(lifecycle, fx_setup, fx_teardown),
            cmocka_unit_test_setup_teardown(interrupted_and_stale, fx_setup, fx_teardown),
            cmocka_unit_test_setup_teardown(failures, fx_setup, fx_teardown),
            cmocka_unit_test_setup_teardown(unavailable, fx_setup, fx_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
