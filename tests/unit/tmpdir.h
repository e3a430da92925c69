/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A cmocka fixture of tests that work on files: a fresh /tmp/xpool-test-NAME-XXXXXX directory per
 * test and the path DIR/LEAF in it that the code under test is pointed at; removed with all it
 * holds after the test. Header-only, static inline: each test binary is one source file. Include
 * after <cmocka.h>.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tmpdir {
        char dir[64];
        char path[96]; /* DIR/LEAF */
};

/* The setup half: *state becomes a new struct tmpdir; fails the test when there is none. */
static inline int tmpdir_setup(void **state, const char *name, const char *leaf)
{
        struct tmpdir *t = calloc(1, sizeof(*t));
        int n;

        assert_non_null(t);
        n = snprintf(t->dir, sizeof(t->dir), "/tmp/xpool-test-%s-XXXXXX", name);
        assert_true(n > 0 && (size_t)n < sizeof(t->dir));
        assert_non_null(mkdtemp(t->dir));
        n = snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, leaf);
        assert_true(n > 0 && (size_t)n < sizeof(t->path));
        *state = t;
        return 0;
}

/* The teardown half: removes the directory and everything in it, and frees *state. */
static inline int tmpdir_teardown(void **state)
{
        struct tmpdir *t = *state;
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
        assert_int_equal(system(cmd), 0);
        free(t);
        return 0;
}
