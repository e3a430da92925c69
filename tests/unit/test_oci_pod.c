/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's own files (src/runtime/oci_pod.c): hosts, hostname and resolv.conf are written without
 * fsync, so what a crash can leave of one (an empty file) must be written again at the next
 * start rather than kept; a pod with a subdomain has its FQDN in hosts, as the kubelet writes
 * it. Needs root (the pod's IPC namespace is a bind mount): skipped without.
 * A subPath through a symbolic link the pod left in its emptyDir makes nothing outside the volume
 * (the agent used to create the missing directories through the link before it checked), and a
 * pod's volume source with a link swapped in after the check is refused by the shim's pinning.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/oci_internal.h"
#include "runtime/shim_internal.h"

static off_t size_of(const char *dir, const char *name)
{
        char path[512];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return stat(path, &st) == 0 ? st.st_size : -1;
}

static void empty_files_written_again(void **state)
{
        char root[] = "/tmp/xpool-test-ocipod-XXXXXX", ipc[64], hosts[512];
        struct xp_container_oci oci = {.hostname = "train-0",
                                       .host_domain = "workers.team.svc.cluster.local",
                                       .pod_ip = "10.1.0.5"};
        char text[1024] = "";
        struct xp_container_launch l = {.pod_uid = "uid-1", .oci = &oci};
        char *dir = NULL, *ipc_path = NULL;
        struct xp_error err = {0};
        int fd;

        (void)state;
        if (geteuid() != 0)
                skip();
        assert_non_null(mkdtemp(root));
        snprintf(ipc, sizeof(ipc), "%s/ipc", root);
        assert_int_equal(oci_pod_prepare(root, ipc, &l, &dir, &ipc_path, &err), 0);
        assert_true(size_of(dir, "hosts") > 0);
        assert_true(size_of(dir, "hostname") > 0);
        snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
        fd = open(hosts, O_RDONLY);
        assert_true(fd >= 0 && read(fd, text, sizeof(text) - 1) > 0);
        close(fd);
        assert_non_null(
            strstr(text, "\n10.1.0.5\ttrain-0.workers.team.svc.cluster.local\ttrain-0\n"));
        /* as a crash after the rename, before the data reached the disk, can leave it */
        snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
        fd = open(hosts, O_WRONLY | O_TRUNC);
        assert_true(fd >= 0);
        close(fd);
        free(dir);
        free(ipc_path);
        assert_int_equal(oci_pod_prepare(root, ipc, &l, &dir, &ipc_path, &err), 0);
        assert_true(size_of(dir, "hosts") > 0);
        assert_int_equal(size_of(dir, "hostname"), (off_t)strlen("train-0\n"));
        assert_int_equal(oci_pod_remove(root, ipc, "uid-1", &err), 0);
        free(dir);
        free(ipc_path);
        rmdir(ipc);
        snprintf(hosts, sizeof(hosts), "%s/.pods", root);
        rmdir(hosts);
        assert_int_equal(rmdir(root), 0);
}

static void sub_path_link_makes_nothing_outside(void **state)
{
        char root[] = "/tmp/xpool-test-ocipod-XXXXXX", path[512], link[512];
        struct xp_container_mount m = {
            .kind = XP_VOLUME_EMPTY_DIR, .volume = "scratch", .sub_path = "escape/made"};
        struct xp_error err = {0};
        char *source = NULL;
        struct stat st;

        (void)state;
        assert_non_null(mkdtemp(root));
        snprintf(path, sizeof(path), "%s/volumes", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/volumes/scratch", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/outside", root);
        assert_int_equal(mkdir(path, 0755), 0);
        /* what a container of the pod can do in its emptyDir: a link to the node's directory */
        snprintf(link, sizeof(link), "%s/volumes/scratch/escape", root);
        assert_int_equal(symlink(path, link), 0);
        assert_true(oci_mount_source(root, &m, &source, &err) < 0);
        assert_null(source);
        assert_non_null(strstr(err.msg, "leaves the volume"));
        snprintf(path, sizeof(path), "%s/outside/made", root);
        assert_int_equal(stat(path, &st), -1);
        /* a link that stays inside the volume is followed, and the missing directory made */
        m.sub_path = "inside/made";
        snprintf(link, sizeof(link), "%s/volumes/scratch/inside", root);
        assert_int_equal(symlink("real", link), 0);
        snprintf(path, sizeof(path), "%s/volumes/scratch/real", root);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(oci_mount_source(root, &m, &source, &err), 0);
        snprintf(path, sizeof(path), "%s/volumes/scratch/real/made", root);
        assert_string_equal(source, path);
        free(source);
        snprintf(path, sizeof(path), "rm -rf '%s'", root);
        assert_int_equal(system(path), 0);
}

static void pinning_refuses_a_swapped_link(void **state)
{
        char root[] = "/tmp/xpool-test-ocipod-XXXXXX", pod[512], dir[512], moved[512];
        json_t *config, *sources;
        struct xp_error err = {0};

        (void)state;
        assert_non_null(mkdtemp(root));
        snprintf(pod, sizeof(pod), "%s/pod", root);
        snprintf(dir, sizeof(dir), "%s/pod/volumes", root);
        assert_int_equal(mkdir(pod, 0755), 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(dir, sizeof(dir), "%s/pod/volumes/v", root);
        assert_int_equal(mkdir(dir, 0755), 0);
        config = json_pack("{s:[{s:s, s:s}, {s:s, s:s}]}",
                           "mounts",
                           "destination",
                           "/data",
                           "source",
                           dir,
                           "destination",
                           "/proc",
                           "source",
                           "proc");
        assert_non_null(config);
        /* the agent checked dir; then the pod put a link to the node's / in its place */
        snprintf(moved, sizeof(moved), "%s/pod/volumes/moved", root);
        assert_int_equal(rename(dir, moved), 0);
        assert_int_equal(symlink("/", dir), 0);
        assert_int_equal(oci_shim_pin_volumes(root, pod, NULL, config, &err), -EPERM);
        assert_non_null(strstr(err.msg, "a symbolic link appeared on its path"));
        /* nothing of it was bound: config.json still names the checked path, the runtime never
         * runs */
        assert_string_equal(json_string_value(json_object_get(
                                json_array_get(json_object_get(config, "mounts"), 0), "source")),
                            dir);
        /* a hostPath's source, outside the pod's directory, is pinned when the spec lists it */
        assert_int_equal(oci_shim_pin_volumes(root, NULL, NULL, config, &err), 0);
        sources = json_pack("[s]", dir);
        assert_int_equal(oci_shim_pin_volumes(root, NULL, sources, config, &err), -EPERM);
        json_decref(sources);
        json_decref(config);
        snprintf(dir, sizeof(dir), "rm -rf '%s'", root);
        assert_int_equal(system(dir), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(empty_files_written_again),
            cmocka_unit_test(sub_path_link_makes_nothing_outside),
            cmocka_unit_test(pinning_refuses_a_swapped_link),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
