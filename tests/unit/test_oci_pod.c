/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's own files (src/runtime/oci_pod.c): hosts, hostname and resolv.conf are written without
 * fsync, so what a crash can leave of one (an empty file) must be written again at the next
 * start rather than kept; a pod with a subdomain has its FQDN in hosts, as the kubelet writes
 * it. Needs root (the pod's IPC namespace is a bind mount): skipped without.
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

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(empty_files_written_again),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
