/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which directories below /run a process container gets a tmpfs of its own for (contain_root.c):
 * the deepest one the node has above a volume's missing mount point, once each, shallower first,
 * /var/run read as /run where it links there; none for a mount point the node has, one outside
 * /run, the token's directory, a shared path or a privileged container.
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
#include <unistd.h>

#include <cmocka.h>

#include "runtime/contain_internal.h"

static void plan_dirs(struct contain_plan *p, struct contain_bind *binds, size_t n)
{
        *p = (struct contain_plan){.namespaces = true, .binds = binds, .n_binds = n};
        assert_int_equal(contain_plan_own_dirs(p), 0);
}

static void own_dirs_below_run(void **state)
{
        char dir[] = "/run/xpool-own-XXXXXX", deep[64], missing[64], via_var[64], in_top[64];
        char gone[64];
        struct contain_bind binds[5] = {0};
        struct contain_plan p;

        (void)state;
        if (!mkdtemp(dir))
                skip(); /* no /run to write here */
        snprintf(deep, sizeof deep, "%s/a/b", dir);
        snprintf(gone, sizeof gone, "/run/xpool-gone-%d", (int)getpid());
        snprintf(missing, sizeof missing, "%s/c", gone);
        snprintf(via_var, sizeof via_var, "/var%s/x", dir);
        snprintf(in_top, sizeof in_top, "%s", dir);
        binds[0].destination = deep;
        binds[1].destination = missing;
        binds[2].destination = in_top; /* the node has it: nothing of its own */
        binds[3].destination = (char *)"/xpool-not-run/a";
        binds[4].destination = via_var;
        plan_dirs(&p, binds, 5);
        /* via_var: the same as deep's where /var/run links to /run, else not below /run */
        assert_int_equal(p.n_own_dirs, 2);
        assert_string_equal(p.own_dirs[0], "/run");
        assert_string_equal(p.own_dirs[1], dir);
        contain_own_dirs_free(&p);
        /* a shared path, a privileged container: the node's own */
        binds[0].shared = true;
        binds[1].shared = true;
        binds[4].shared = true;
        plan_dirs(&p, binds, 5);
        assert_int_equal(p.n_own_dirs, 0);
        binds[0].shared = false;
        p = (struct contain_plan){
            .namespaces = true, .privileged = true, .binds = binds, .n_binds = 5};
        assert_int_equal(contain_plan_own_dirs(&p), 0);
        assert_int_equal(p.n_own_dirs, 0);
        rmdir(dir);
}

/* The token's directory is made on the node once, never copied with all of /run for every pod of
 * a node that has no /run/secrets yet (a freshly booted one). */
static void the_token_directory_gets_none(void **state)
{
        struct contain_bind binds[2] = {
            {.destination = (char *)"/var/run/secrets/kubernetes.io/serviceaccount"},
            {.destination = (char *)"/run/secrets/kubernetes.io/serviceaccount"},
        };
        struct contain_plan p;

        (void)state;
        assert_true(contain_is_token_path(binds[0].destination));
        assert_false(contain_is_token_path("/run/secrets/kubernetes.io/serviceaccount/x"));
        plan_dirs(&p, binds, 2);
        assert_int_equal(p.n_own_dirs, 0);
}

/* fd 0 is a namespace like any other (the shim's stdin closed, the fd reused): a plan that holds
 * none is -1, and one holding fd 0 closes it. */
static void ipc_namespace_on_fd_0(void **state)
{
        int saved = fcntl(0, F_DUPFD_CLOEXEC, 10);
        struct contain_plan p = CONTAIN_PLAN_NONE;

        (void)state;
        close(0);
        assert_int_equal(open("/dev/null", O_RDONLY), 0);
        contain_plan_done(&p);
        assert_int_equal(p.ipc_fd, -1);
        assert_int_equal(p.netns_fd, -1);
        assert_true(fcntl(0, F_GETFD) >= 0);
        p.ipc_fd = 0;
        contain_plan_done(&p);
        assert_int_equal(fcntl(0, F_GETFD), -1);
        assert_int_equal(p.ipc_fd, -1);
        if (saved >= 0) {
                assert_int_equal(dup2(saved, 0), 0);
                close(saved);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(own_dirs_below_run),
            cmocka_unit_test(the_token_directory_gets_none),
            cmocka_unit_test(ipc_namespace_on_fd_0),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
