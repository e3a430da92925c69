/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's teardown of pods that are over, on its own thread (podclean.h): what is queued is
 * removed by the time the cleaner is freed, each pod's volumes, and only the pods asked for.
 */
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

#include "agent/podclean.h"

static void make_volume(const char *data, const char *uid)
{
        char path[512];
        FILE *fp;

        snprintf(path, sizeof(path), "%s/volumes", data);
        (void)mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/volumes/%s", data, uid);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/volumes/%s/cfg", data, uid);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/volumes/%s/cfg/key", data, uid);
        fp = fopen(path, "w");
        assert_non_null(fp);
        fputs("value\n", fp);
        fclose(fp);
}

static bool volume_exists(const char *data, const char *uid)
{
        char path[512];

        snprintf(path, sizeof(path), "%s/volumes/%s", data, uid);
        return access(path, F_OK) == 0;
}

static void queued_removals_are_done_by_free(void **state)
{
        char data[] = "/tmp/test-podclean-XXXXXX";
        struct xp_agent_podclean *c = NULL;
        struct xp_error err = {0};
        char cmd[128];

        (void)state;
        assert_non_null(mkdtemp(data));
        for (int i = 0; i < 20; i++) {
                char uid[32];

                snprintf(uid, sizeof(uid), "uid-%d", i);
                make_volume(data, uid);
        }
        make_volume(data, "kept");
        assert_int_equal(xp_agent_podclean_new(NULL, data, &c, &err), 0);
        for (int i = 0; i < 20; i++) {
                char uid[32];

                snprintf(uid, sizeof(uid), "uid-%d", i);
                xp_agent_podclean_submit(c, "default", uid, uid, false);
        }
        xp_agent_podclean_free(c);
        for (int i = 0; i < 20; i++) {
                char uid[32];

                snprintf(uid, sizeof(uid), "uid-%d", i);
                assert_false(volume_exists(data, uid));
        }
        assert_true(volume_exists(data, "kept"));
        snprintf(cmd, sizeof(cmd), "rm -rf %s", data);
        assert_int_equal(system(cmd), 0);
}

static void make_path(const char *data, const char *rel)
{
        char cmd[1024];

        snprintf(cmd, sizeof(cmd), "mkdir -p %s/%s && echo x >%s/%s/f", data, rel, data, rel);
        assert_int_equal(system(cmd), 0);
}

static bool path_exists(const char *data, const char *rel)
{
        char path[512];

        snprintf(path, sizeof(path), "%s/%s", data, rel);
        return access(path, F_OK) == 0;
}

/* A runtime whose state, logs and IPC pins are in data/containers, data/logs, data/ipc. */
static struct xp_runtime *open_runtime(const char *data)
{
        char containers[256], logs[256], ipc[256];
        struct xp_runtime *rt = NULL;
        struct xp_error err = {0};

        snprintf(containers, sizeof(containers), "%s/containers", data);
        snprintf(logs, sizeof(logs), "%s/logs", data);
        snprintf(ipc, sizeof(ipc), "%s/ipc", data);
        assert_int_equal(xp_runtime_open(&(struct xp_runtime_options){.state_dir = containers,
                                                                      .log_dir = logs,
                                                                      .ipc_dir = ipc},
                                         &rt,
                                         &err),
                         0);
        return rt;
}

/* A pod over, then gone: its volumes-only removal, then its whole one (logs and the runtime's
 * .pods/<uid>), queued in that order, are both done by free; another pod's logs stay. */
static void whole_removal_takes_logs_and_leftovers(void **state)
{
        char data[] = "/tmp/test-podclean-XXXXXX";
        char cmd[128];
        struct xp_agent_podclean *c = NULL;
        struct xp_runtime *rt;
        struct xp_error err = {0};

        (void)state;
        assert_non_null(mkdtemp(data));
        rt = open_runtime(data);
        make_volume(data, "uid-a");
        make_path(data, "logs/default_a_uid-a/c");
        make_path(data, "logs/default_b_uid-b/c");
        make_path(data, "containers/.pods/uid-a");
        assert_int_equal(xp_agent_podclean_new(rt, data, &c, &err), 0);
        xp_agent_podclean_submit(c, "default", "a", "uid-a", false);
        xp_agent_podclean_submit(c, "default", "a", "uid-a", true);
        xp_agent_podclean_free(c);
        assert_false(volume_exists(data, "uid-a"));
        assert_false(path_exists(data, "logs/default_a_uid-a"));
        assert_false(path_exists(data, "containers/.pods/uid-a"));
        assert_true(path_exists(data, "logs/default_b_uid-b/c/f"));
        xp_runtime_free(rt);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", data);
        assert_int_equal(system(cmd), 0);
}

static bool known_if_kept(const char *uid, void *userdata)
{
        (void)userdata;
        return strncmp(uid, "kept", 4) == 0;
}

/* What an agent killed with removals queued left: the next one's sweep removes the volumes, the
 * logs and the runtime's .pods/<uid> of the uids no pod claims; those of the pods it has stay, and
 * so do entries that name no pod and a .pods/<uid> whose pod still has a container's state. */
static void sweep_removes_unknown_leftovers_only(void **state)
{
        char data[] = "/tmp/test-podclean-XXXXXX";
        char path[512], containers[256];
        char cmd[128];
        struct xp_runtime *rt;
        const char *planted[] = {"logs/default_a_lost-1/c",
                                 "logs/kube-system_b_kept-1/c",
                                 "logs/not-a-pod/c",
                                 "logs/_x_lost-3/c",
                                 "containers/.pods/lost-1/volumes",
                                 "containers/.pods/lost-4",
                                 "containers/.pods/kept-1",
                                 "containers/.pods/lost-5",
                                 "containers/lost-5/c"};

        (void)state;
        assert_non_null(mkdtemp(data));
        rt = open_runtime(data);
        snprintf(containers, sizeof(containers), "%s/containers", data);
        assert_int_equal(xp_agent_podclean_sweep(rt, data, containers, known_if_kept, NULL), 0);
        make_volume(data, "lost-1");
        make_volume(data, "lost-2");
        make_volume(data, "kept-1");
        snprintf(path, sizeof(path), "%s/volumes/.hidden", data);
        assert_int_equal(mkdir(path, 0755), 0);
        for (size_t i = 0; i < sizeof(planted) / sizeof(planted[0]); i++)
                make_path(data, planted[i]);
        /* volumes lost-1 lost-2, logs of lost-1, .pods/lost-1 and lost-4 */
        assert_int_equal(xp_agent_podclean_sweep(rt, data, containers, known_if_kept, NULL), 5);
        assert_false(volume_exists(data, "lost-1"));
        assert_false(volume_exists(data, "lost-2"));
        assert_true(volume_exists(data, "kept-1"));
        assert_true(volume_exists(data, ".hidden"));
        assert_false(path_exists(data, "logs/default_a_lost-1"));
        assert_true(path_exists(data, "logs/kube-system_b_kept-1/c/f"));
        assert_true(path_exists(data, "logs/not-a-pod/c/f"));
        assert_true(path_exists(data, "logs/_x_lost-3/c/f"));
        assert_false(path_exists(data, "containers/.pods/lost-1"));
        assert_false(path_exists(data, "containers/.pods/lost-4"));
        assert_true(path_exists(data, "containers/.pods/kept-1/f"));
        assert_true(path_exists(data, "containers/.pods/lost-5/f"));
        assert_int_equal(xp_agent_podclean_sweep(rt, data, containers, known_if_kept, NULL), 0);
        xp_runtime_free(rt);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", data);
        assert_int_equal(system(cmd), 0);
}

static void free_of_null_is_fine(void **state)
{
        (void)state;
        xp_agent_podclean_free(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(queued_removals_are_done_by_free),
            cmocka_unit_test(whole_removal_takes_logs_and_leftovers),
            cmocka_unit_test(sweep_removes_unknown_leftovers_only),
            cmocka_unit_test(free_of_null_is_fine),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
