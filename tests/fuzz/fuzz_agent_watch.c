/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes what the agent parses from the server and its command line: a watch event line
 * (xp_agent_pods_apply_event()) and, from the same bytes, a duration
 * as its flags take it (xp_duration_parse(), 1 ms to a day). An event either is taken (its pod
 * recorded or deleted, a resourceVersion string or none) or fails with a negative code and a
 * message, leaving the pod map as it was.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent/agent_internal.h"
#include "xpool/agent.h"
#include "xpool/duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_agent_pods pods;
        struct xp_error err = {0};
        char *text = malloc(size + 1), *rv = NULL;
        int64_t ms = -1;
        size_t before;
        int r;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        check(xp_agent_pods_init(&pods) == 0);
        before = json_object_size(pods.pods);
        r = xp_agent_pods_apply_event(&pods, text, &rv, &err);
        if (r < 0) {
                check(r == -ENOMEM || (err.code == r && err.msg[0] != '\0'));
                check(rv == NULL && json_object_size(pods.pods) == before);
        }
        free(rv);
        xp_agent_pods_done(&pods);

        r = xp_duration_parse(text, 1, XP_DURATION_DAY_MS, &ms, NULL);
        check(r == 0 ? ms >= 1 && ms <= XP_DURATION_DAY_MS
                     : (r == -EINVAL || r == -ERANGE) && ms == -1);
        free(text);
        return 0;
}
