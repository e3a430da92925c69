/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the pod network tests share (test_cni.c, test_podnet.c, test_agent_network.c): writing
 * and reading small files, and a fixture of a scratch directory with net.d/ (one network), bin/
 * (the fake CNI plugins a test writes), netns/ and network/ (the records), whose teardown
 * unmounts whatever a failed test left mounted below netns/. Header-only, static inline: each
 * test binary is one source file. Include after <cmocka.h>.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tmpdir.h"

/* Writes text to path with mode; fails the test when it cannot. */
static inline void write_text(const char *path, const char *text, mode_t mode)
{
        FILE *f = fopen(path, "w");

        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        assert_int_equal(chmod(path, mode), 0);
}

/* The file at path (at most 64 KiB, caller frees), NULL when there is none. */
/* The whole file: /proc/self/mountinfo on a busy host passes 64 KiB, and a
 * capped read would miss the mounts a test looks for. */
static inline char *slurp_text(const char *path)
{
        FILE *f = fopen(path, "r");
        size_t cap = 65536, n = 0, got;
        char *buf;

        if (!f)
                return NULL;
        buf = malloc(cap);
        assert_non_null(buf);
        while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
                n += got;
                if (n + 1 == cap) {
                        cap *= 2;
                        buf = realloc(buf, cap);
                        assert_non_null(buf);
                }
        }
        buf[n] = '\0';
        fclose(f);
        return buf;
}

struct podnet_fixture {
        struct tmpdir *t;
        char conf_dir[160], bin_dir[160], netns_dir[160], state_dir[160];
};

/* The directories, and conflist as net.d/10-fake.conflist. */
static inline void
podnet_fixture_init(struct podnet_fixture *f, const char *name, const char *conflist)
{
        char path[256];

        tmpdir_setup((void **)&f->t, name, "x");
        snprintf(f->conf_dir, sizeof(f->conf_dir), "%s/net.d", f->t->dir);
        snprintf(f->bin_dir, sizeof(f->bin_dir), "%s/bin", f->t->dir);
        snprintf(f->netns_dir, sizeof(f->netns_dir), "%s/netns", f->t->dir);
        snprintf(f->state_dir, sizeof(f->state_dir), "%s/network", f->t->dir);
        assert_int_equal(mkdir(f->conf_dir, 0755), 0);
        assert_int_equal(mkdir(f->bin_dir, 0755), 0);
        snprintf(path, sizeof(path), "%s/10-fake.conflist", f->conf_dir);
        write_text(path, conflist, 0644);
}

/* Unmounts what is left below netns/ and removes the directory. */
static inline void podnet_fixture_done(struct podnet_fixture *f)
{
        char cmd[256];

        snprintf(cmd, sizeof(cmd), "umount -R -l %s 2>/dev/null", f->netns_dir);
        if (system(cmd) < 0)
                fail_msg("%s failed", cmd);
        tmpdir_teardown((void **)&f->t);
}
