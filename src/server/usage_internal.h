/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The usage reader's parts (usage.h): fetching an agent's resource metrics. */

#include <stddef.h>
#include <stdint.h>

#include "usage.h"
#include "xpool/logsign.h"

struct usage_target {
        char node[254];
        char host[64];
        unsigned port;
        const char *path;            /* "/metrics/resource" */
        const struct agent_tls *tls; /* HTTPS to node's agent (agent_tls.h); NULL: plain HTTP */
        char token_id[XP_LOGSIGN_ID_MAX];
        uint8_t key[XP_LOGSIGN_KEY_LEN];
};

/* GET t->path signed with the node's key: the body of a 200 (caller frees), else -errno with err.
 */
int usage_fetch(const struct usage_target *t,
                int timeout_ms,
                char **ret_body,
                size_t *ret_len,
                struct xp_error *err);
