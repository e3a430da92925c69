/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/ephemeral.h"

/* Two containers with limits 5Mi and 5Mi, an init container of 8Mi, a 1Mi emptyDir, a Memory
 * one of 1Mi and one without a limit. */
static const char pod_json[] =
    "{\"spec\": {"
    " \"volumes\": [{\"name\": \"scratch\", \"emptyDir\": {\"sizeLimit\": \"1Mi\"}},"
    "  {\"name\": \"ram\", \"emptyDir\": {\"medium\": \"Memory\", \"sizeLimit\": \"1Mi\"}},"
    "  {\"name\": \"free\", \"emptyDir\": {}}],"
    " \"initContainers\": [{\"name\": \"init\", \"resources\": {\"limits\": {\"ephemeral-storage\": \"8Mi\"}}}],"
    " \"containers\": ["
    "  {\"name\": \"a\", \"resources\": {\"limits\": {\"ephemeral-storage\": \"5Mi\"}}},"
    "  {\"name\": \"b\", \"resources\": {\"limits\": {\"ephemeral-storage\": \"5Mi\"}}},"
    "  {\"name\": \"c\"}]}}";

#define MI (1024 * 1024)

static char *verdict(const char *json, const struct xp_pod_disk_use *use)
{
        json_t *pod = json_loads(json, 0, NULL);
        char *message = NULL;
        int r;

        assert_non_null(pod);
        r = xp_agent_ephemeral_verdict(pod, use, &message);
        json_decref(pod);
        assert_true(r >= 0);
        assert_true((r == 1) == (message != NULL));
        return message;
}

static struct xp_pod_disk_use
use_of(uint64_t scratch, uint64_t free_, uint64_t a, uint64_t b, uint64_t c)
{
        return (struct xp_pod_disk_use){
            .volumes = {{"scratch", scratch}, {"free", free_}},
            .n_volumes = 2,
            .containers = {{"a", a}, {"b", b}, {"c", c}},
            .n_containers = 3,
        };
}

static void within_limits_nothing_is_evicted(void **state)
{
        (void)state;
        /* each at its limit (not over it), 8Mi in all of the pod's 10Mi; c has no limit */
        struct xp_pod_disk_use use = use_of(MI, 2 * MI, 3 * MI, 2 * MI, 0);

        assert_null(verdict(pod_json, &use));
}

static void an_empty_dir_over_its_size_limit_is_first(void **state)
{
        (void)state;
        struct xp_pod_disk_use use = use_of(MI + 1, 0, 6 * MI, 0, 20 * MI);
        char *m = verdict(pod_json, &use);

        assert_string_equal(m, "Usage of EmptyDir volume \"scratch\" exceeds the limit \"1Mi\". ");
        free(m);
}

static void the_pod_total_is_the_sum_of_the_containers_limits(void **state)
{
        (void)state;
        /* each container within its own 5Mi, the pod 10Mi + 1 with the volumes */
        struct xp_pod_disk_use use = use_of(MI, 3 * MI, 4 * MI, 2 * MI, 1);
        char *m = verdict(pod_json, &use);

        assert_string_equal(
            m, "Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ");
        free(m);
}

static void a_container_over_its_own_limit(void **state)
{
        (void)state;
        struct xp_pod_disk_use use = use_of(0, 0, 0, 5 * MI + 4096, 0);
        char *m = verdict(pod_json, &use);

        assert_string_equal(m, "Container b exceeded its local ephemeral storage limit \"5Mi\". ");
        free(m);
}

static void a_memory_empty_dir_and_no_limits_are_not_measured(void **state)
{
        (void)state;
        struct xp_pod_disk_use use = {
            .volumes = {{"ram", 100 * MI}, {"any", 100 * MI}},
            .n_volumes = 2,
            .containers = {{"c", 100 * MI}},
            .n_containers = 1,
        };
        static const char no_limits[] =
            "{\"spec\": {\"volumes\": [{\"name\": \"any\", \"emptyDir\": {}}],"
            " \"containers\": [{\"name\": \"c\"}]}}";
        char *m;

        assert_null(verdict(no_limits, &use));
        /* the agent measures no Memory volume (its tmpfs is of sizeLimit): its use is none */
        use.volumes[0].bytes = 0;
        assert_null(verdict("{\"spec\": {\"volumes\": [{\"name\": \"ram\", \"emptyDir\": "
                            "{\"medium\": \"Memory\", \"sizeLimit\": \"1Mi\"}}]}}",
                            &use));
        /* an init container's larger limit is the pod's */
        use = (struct xp_pod_disk_use){.containers = {{"a", 9 * MI}}, .n_containers = 1};
        m = verdict("{\"spec\": {\"initContainers\": [{\"name\": \"i\", \"resources\": {\"limits\":"
                    " {\"ephemeral-storage\": \"8Mi\"}}}], \"containers\": [{\"name\": \"a\","
                    " \"resources\": {\"limits\": {\"ephemeral-storage\": \"5000000\"}}}]}}",
                    &use);
        assert_string_equal(
            m, "Pod ephemeral local storage usage exceeds the total limit of containers 8Mi. ");
        free(m);
}

static void write_file(const char *path, size_t size)
{
        FILE *f = fopen(path, "w");
        char block[4096];

        assert_non_null(f);
        memset(block, 'x', sizeof(block));
        for (size_t i = 0; i < size / sizeof(block); i++)
                assert_int_equal(fwrite(block, 1, sizeof(block), f), sizeof(block));
        assert_int_equal(fclose(f), 0);
}

static void the_walk_counts_blocks_and_follows_no_link(void **state)
{
        (void)state;
        char dir[] = "/tmp/xp-diskuse-XXXXXX", path[256];
        struct xp_disk_walk walk = {.max_entries = 1000};
        uint64_t bytes = 0;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sub", dir);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/sub/data", dir);
        write_file(path, 256 * 1024);
        /* a link to a large tree is one small entry */
        snprintf(path, sizeof(path), "%s/usr", dir);
        assert_int_equal(symlink("/usr", path), 0);
        assert_int_equal(xp_agent_disk_usage(dir, &walk, &bytes), 0);
        assert_true(bytes >= 256 * 1024);
        assert_true(bytes < 1024 * 1024);
        assert_int_equal(walk.entries, 3);
        assert_false(walk.truncated);

        /* the bound stops the walk and says so */
        walk = (struct xp_disk_walk){.max_entries = 1};
        bytes = 0;
        assert_int_equal(xp_agent_disk_usage(dir, &walk, &bytes), 0);
        assert_true(walk.truncated);
        assert_int_equal(walk.entries, 1);

        /* a missing directory uses nothing */
        bytes = 0;
        assert_int_equal(xp_agent_disk_usage("/nonexistent/xp-diskuse", &walk, &bytes), 0);
        assert_int_equal(bytes, 0);

        snprintf(path, sizeof(path), "rm -rf '%s'", dir);
        assert_int_equal(system(path), 0);
}

/* In a child of its own mount namespace: dir/bound is a bind of node (same file system); the
 * emptying walk leaves the node's file alone. 0: kept; 77: no namespace to try it in. */
static int empty_with_a_bind(const char *dir, const char *node)
{
        char bound[256], kept[256];
        struct xp_disk_walk walk = {.max_entries = 1000, .remove = true};
        uint64_t bytes = 0;

        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 77;
        snprintf(bound, sizeof(bound), "%s/bound", dir);
        snprintf(kept, sizeof(kept), "%s/keep", node);
        if (mkdir(bound, 0755) < 0 || mount(node, bound, NULL, MS_BIND, NULL) < 0)
                return 77;
        if (xp_agent_disk_usage(dir, &walk, &bytes) < 0)
                return 2;
        return access(kept, F_OK) == 0 ? 0 : 1;
}

/* A directory of the same file system bound into an emptyDir (a pod's Bidirectional mount
 * propagated back) is another mount: the reclaim neither counts nor empties it. */
static void the_reclaim_leaves_a_same_device_bind_alone(void **state)
{
        (void)state;
        char dir[] = "/tmp/xp-diskbind-XXXXXX", node[] = "/tmp/xp-disknode-XXXXXX", path[256];
        int status = 0;
        pid_t pid;

        assert_non_null(mkdtemp(dir));
        assert_non_null(mkdtemp(node));
        snprintf(path, sizeof(path), "%s/keep", node);
        write_file(path, 4096);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(empty_with_a_bind(dir, node));
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                fprintf(stderr, "skipped: no mount namespace to bind in (not root)\n");
        else
                assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(access(path, F_OK), 0);
        snprintf(path, sizeof(path), "rm -rf '%s' '%s'", dir, node);
        assert_int_equal(system(path), 0);
}

/* A tree deeper than the walk descends is reported, as it hides what is below. */
static void a_tree_too_deep_is_reported(void **state)
{
        (void)state;
        char dir[] = "/tmp/xp-diskdeep-XXXXXX", path[4096];
        struct xp_disk_walk walk = {.max_entries = 100000};
        uint64_t bytes = 0;
        size_t len;

        assert_non_null(mkdtemp(dir));
        len = (size_t)snprintf(path, sizeof(path), "%s", dir);
        for (int i = 0; i < XP_DISK_WALK_MAX_DEPTH + 1; i++) {
                len += (size_t)snprintf(path + len, sizeof(path) - len, "/d");
                assert_int_equal(mkdir(path, 0755), 0);
        }
        assert_int_equal(xp_agent_disk_usage(dir, &walk, &bytes), 0);
        assert_true(walk.truncated);
        assert_true(walk.too_deep);

        /* 63 levels are walked whole */
        walk = (struct xp_disk_walk){.max_entries = 100000};
        assert_int_equal(rmdir(path), 0);
        path[strlen(path) - 2] = '\0';
        assert_int_equal(rmdir(path), 0);
        assert_int_equal(xp_agent_disk_usage(dir, &walk, &bytes), 0);
        assert_false(walk.truncated);
        assert_false(walk.too_deep);

        snprintf(path, sizeof(path), "rm -rf '%s'", dir);
        assert_int_equal(system(path), 0);
}

/* A pod with a limit whose walk was cut short is over it, in words naming the bound; one
 * without a limit is not evicted for it. */
static void a_truncated_walk_is_over_the_limit(void **state)
{
        (void)state;
        struct xp_pod_disk_use use = use_of(0, 0, 0, 0, 0);
        char *m;

        use.truncated = true;
        use.max_entries = 10000;
        m = verdict(pod_json, &use);
        assert_non_null(m);
        assert_string_equal(m,
                            "Pod ephemeral local storage usage exceeds what the agent measures "
                            "(more than 10000 entries). ");
        free(m);
        use.too_deep = true;
        m = verdict(pod_json, &use);
        assert_non_null(m);
        assert_non_null(strstr(m, "(deeper than 64 directories)"));
        free(m);
        /* a real excess is named first */
        use.volumes[0].bytes = 2 * MI;
        m = verdict(pod_json, &use);
        assert_non_null(strstr(m, "EmptyDir volume \"scratch\""));
        free(m);
        /* no limit: nothing to enforce; a Memory emptyDir's sizeLimit is the kernel's */
        use.volumes[0].bytes = 0;
        assert_null(verdict("{\"spec\": {\"containers\": [{\"name\": \"c\"}]}}", &use));
        assert_null(verdict("{\"spec\": {\"volumes\": [{\"name\": \"r\", \"emptyDir\": "
                            "{\"medium\": \"Memory\", \"sizeLimit\": \"1Mi\"}}]}}",
                            &use));
        assert_non_null(m = verdict("{\"spec\": {\"volumes\": [{\"name\": \"s\", "
                                    "\"emptyDir\": {\"sizeLimit\": \"1Mi\"}}]}}",
                                    &use));
        free(m);
}

/* The pass's entries are shared out, each pod at least the floor. */
static void each_pod_has_its_own_walk_budget(void **state)
{
        (void)state;
        assert_int_equal(xp_agent_pod_walk_budget(200000, 10000, 0), 200000);
        assert_int_equal(xp_agent_pod_walk_budget(200000, 10000, 1), 200000);
        assert_int_equal(xp_agent_pod_walk_budget(200000, 10000, 4), 50000);
        assert_int_equal(xp_agent_pod_walk_budget(200000, 10000, 20), 10000);
        assert_int_equal(xp_agent_pod_walk_budget(200000, 10000, 110), 10000);
}

/* Critical pods are never evicted, as the kubelet's evictPod refuses them. */
static void critical_pods_are_not_evicted(void **state)
{
        (void)state;
        static const char *const cases[][2] = {
            {"{\"spec\": {}}", "1"},
            {"{\"spec\": {\"priority\": 1000}}", "1"},
            {"{\"spec\": {\"priority\": 1999999999}}", "1"},
            {"{\"spec\": {\"priority\": 2000000000}}", "0"},
            {"{\"spec\": {\"priority\": 2000001000}}", "0"},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                json_t *pod = json_loads(cases[i][0], 0, NULL);

                assert_non_null(pod);
                assert_int_equal(xp_agent_pod_evictable(pod), cases[i][1][0] == '1');
                json_decref(pod);
        }
}

static void eviction_hard_thresholds(void **state)
{
        (void)state;
        struct xp_disk_threshold t;
        struct xp_error err = {0};

        assert_int_equal(xp_agent_eviction_hard_parse("nodefs.available<10%", &t, &err), 0);
        assert_true(t.percent);
        assert_int_equal(xp_agent_threshold_bytes(&t, 1000), 100);
        assert_int_equal(xp_agent_threshold_bytes(&t, 1001), 101); /* rounded up */
        assert_int_equal(xp_agent_eviction_hard_parse("nodefs.available<2Gi", &t, &err), 0);
        assert_false(t.percent);
        assert_int_equal(xp_agent_threshold_bytes(&t, 1000), 2147483648LL);
        assert_string_equal(t.text, "2Gi");
        assert_int_equal(
            xp_agent_eviction_hard_parse("nodefs.available<1Mi,nodefs.available<5%", &t, &err), 0);
        assert_true(t.percent);

        /* refused, saying what */
        assert_int_equal(xp_agent_eviction_hard_parse("memory.available<100Mi", &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "\"memory.available\" is not watched"));
        assert_int_equal(xp_agent_eviction_hard_parse("nodefs.available<0%", &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "between 0% and 100%"));
        assert_int_equal(xp_agent_eviction_hard_parse("nodefs.available<lots", &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "not a size"));
        assert_int_equal(xp_agent_eviction_hard_parse("nodefs.available", &t, &err), -EINVAL);
        assert_int_equal(xp_agent_eviction_hard_parse("", &t, &err), -EINVAL);
}

static void the_kubelets_ranking_under_disk_pressure(void **state)
{
        (void)state;
        struct xp_disk_candidate pods[] = {
            {.uid = "within-low", .priority = 0, .usage = 50 * MI, .request = 100 * MI},
            {.uid = "over-high", .priority = 1000, .usage = 20 * MI, .request = 10 * MI},
            {.uid = "over-low-small", .priority = 0, .usage = 2 * MI, .request = 0},
            {.uid = "over-low-big", .priority = 0, .usage = 30 * MI, .request = 0},
            {.uid = "within-neg", .priority = -5, .usage = 0, .request = 0},
        };

        xp_agent_rank_disk_pressure(pods, 5);
        /* over their requests first, lower priority first, then the most beyond the request */
        assert_string_equal(pods[0].uid, "over-low-big");
        assert_string_equal(pods[1].uid, "over-low-small");
        assert_string_equal(pods[2].uid, "over-high");
        assert_string_equal(pods[3].uid, "within-neg");
        assert_string_equal(pods[4].uid, "within-low");
}

static void disk_pressure_message_and_condition(void **state)
{
        (void)state;
        char *m = xp_agent_disk_pressure_message(10 * MI, 3 * 1024);
        json_t *conds =
            json_loads("[{\"type\": \"MemoryPressure\", \"status\": \"False\"},"
                       " {\"type\": \"DiskPressure\", \"status\": \"False\","
                       " \"reason\": \"KubeletHasNoDiskPressure\", \"lastTransitionTime\": \"a\"}]",
                       0,
                       NULL);
        json_t *disk;

        assert_string_equal(m,
                            "The node was low on resource: ephemeral-storage. Threshold quantity: "
                            "10Mi, available: 3Ki. ");
        free(m);
        assert_non_null(conds);
        disk = json_array_get(conds, 1);
        assert_int_equal(xp_agent_disk_pressure_condition(conds, false, NULL), 0);
        assert_string_equal(json_string_value(json_object_get(disk, "status")), "False");
        assert_string_equal(json_string_value(json_object_get(disk, "lastTransitionTime")), "a");
        assert_int_equal(xp_agent_disk_pressure_condition(conds, true, "b"), 0);
        assert_string_equal(json_string_value(json_object_get(disk, "status")), "True");
        assert_string_equal(json_string_value(json_object_get(disk, "reason")),
                            "KubeletHasDiskPressure");
        assert_string_equal(json_string_value(json_object_get(disk, "message")),
                            "kubelet has disk pressure");
        assert_string_equal(json_string_value(json_object_get(disk, "lastTransitionTime")), "b");
        assert_string_equal(json_string_value(json_object_get(json_array_get(conds, 0), "status")),
                            "False");
        json_decref(conds);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(within_limits_nothing_is_evicted),
            cmocka_unit_test(an_empty_dir_over_its_size_limit_is_first),
            cmocka_unit_test(the_pod_total_is_the_sum_of_the_containers_limits),
            cmocka_unit_test(a_container_over_its_own_limit),
            cmocka_unit_test(a_memory_empty_dir_and_no_limits_are_not_measured),
            cmocka_unit_test(the_walk_counts_blocks_and_follows_no_link),
            cmocka_unit_test(a_tree_too_deep_is_reported),
            cmocka_unit_test(the_reclaim_leaves_a_same_device_bind_alone),
            cmocka_unit_test(a_truncated_walk_is_over_the_limit),
            cmocka_unit_test(each_pod_has_its_own_walk_budget),
            cmocka_unit_test(critical_pods_are_not_evicted),
            cmocka_unit_test(eviction_hard_thresholds),
            cmocka_unit_test(the_kubelets_ranking_under_disk_pressure),
            cmocka_unit_test(disk_pressure_message_and_condition),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
