/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A read at a resourceVersion newer than the store's latest write. kube-apiserver's watch cache
 * blocks such a get, list or watch until it has caught up with the version, for at most 3 s,
 * and then answers 504 Timeout "Too large resource version" with a retry hint, so a client that
 * read a version from another replica waits for this one instead of seeing the past. Here the
 * store is the only source, so a newer version can only come from a client's mistake or from a
 * write that is just landing; the wait and the answer are the same.
 */
#include <inttypes.h>
#include <string.h>

#include "internal.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/timeutil.h"

#define FRESH_WAIT_MS 3000 /* kube-apiserver's blockTimeout */

static int reply_too_large(struct reply *ret, uint64_t want, uint64_t current)
{
        json_t *details, *cause;
        int r;

        r = reply_status(ret,
                         504,
                         "Timeout",
                         NULL,
                         NULL,
                         "Timeout: Too large resource version: %" PRIu64 ", current: %" PRIu64,
                         want,
                         current);
        if (r < 0)
                return r;
        details = json_object_get(ret->body, "details");
        cause = json_pack("[{s:s, s:s}]",
                          "reason",
                          "ResourceVersionTooLarge",
                          "message",
                          "Too large resource version");
        if (!cause || json_object_set_new(details, "causes", cause) < 0 ||
            json_object_set_new(details, "retryAfterSeconds", json_integer(1)) < 0)
                return -ENOMEM;
        return 0;
}

int wait_fresh(const struct request *req, const char *rv, struct reply *ret)
{
        struct xp_store *store = req->api->store;
        int64_t deadline = xp_monotonic_ms() + FRESH_WAIT_MS;
        uint64_t want, current;

        if (!rv || !xp_registry_version_parse(rv, &want))
                return 1; /* none, "0" (any version) or one the caller refuses itself */
        for (;;) {
                int64_t left = deadline - xp_monotonic_ms();

                current = xp_store_version(store);
                if (current >= want)
                        return 1;
                if (left <= 0 || atomic_load(&req->api->stopping))
                        break;
                xp_store_wait(store, current, left < 250 ? (int)left : 250);
        }
        return reply_too_large(ret, want, current);
}
