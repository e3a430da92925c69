/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the parsers of kernel text the cgroup layer reads: /proc/self/mountinfo
 * (cgroup_parse_mountinfo) and "KEY N" files such as memory.events (cgroup_keyed_u64). Every
 * failure must be a negative errno with a message; every recorded mount point is relative.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cgroup_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_cgroup_root *root;
        struct xp_error err = {0};
        uint64_t value = 0;
        char *text;
        int r;

        if (size > 64 * 1024)
                return 0;
        text = malloc(size + 1);
        root = calloc(1, sizeof(*root));
        if (!text || !root) {
                free(text);
                free(root);
                return 0;
        }
        memcpy(text, data, size);
        text[size] = '\0';

        r = cgroup_keyed_u64(text, "oom_kill", &value);
        check(r == 0 || r == -ENODATA || r == -EINVAL);

        root->fd = -1;
        r = cgroup_parse_mountinfo(root, text, &err);
        check(r == 0 || (r < 0 && err.code == r && err.msg[0]));
        if (r == 0)
                for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                        check(!root->v1_mounts[c] ||
                              (root->v1_mounts[c][0] && root->v1_mounts[c][0] != '/' &&
                               root->mode == XP_CGROUP_V1));
        xp_cgroup_root_free(root);
        free(text);
        return 0;
}
