/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's update and the Event that reports it, in one group of the store's: the scheduler's
 * PodScheduled=False and its FailedScheduling Event were two commits, each a wait for the disk,
 * for every pod that did not fit at its first attempt.
 */
#include <errno.h>

#include "registry_internal.h"
#include "xpool/store.h"

int xp_registry_pod_update_reported(struct xp_registry *registry,
                                    json_t *pod,
                                    uint64_t expected_version,
                                    const struct xp_registry_event *event,
                                    uint64_t *ret_version,
                                    struct xp_error *err)
{
        const json_t *meta = json_object_get(pod, "metadata");
        char event_name[XP_STORE_KEY_MAX + 1];
        struct xp_store_group_write w[2] = {
            {.update = true,
             .kind = "pods",
             .namespace = json_string_value(json_object_get(meta, "namespace")),
             .name = json_string_value(json_object_get(meta, "name")),
             .expected_version = expected_version,
             .object = pod,
             /* the event log's readers share it instead of each parsing its text again */
             .share = true}};
        const char *event_ns[1] = {NULL};
        bool prepared = false, held = false;
        size_t n = 1;
        int r;

        if (!w[0].namespace || !w[0].name || expected_version == 0)
                return xp_errorf(
                    err, -EINVAL, "pod update: a pod with its name and version is required");
        /* no Event into a namespace going away: the update alone */
        prepared = registry_event_write(registry, event, event_name, &w[1]) >= 0;
        if (prepared)
                event_ns[0] = w[1].namespace;
        registry_namespaces_hold(registry, event_ns, 1, &held);
        if (prepared && held) {
                w[1].after_previous = true;
                n = 2;
        }
        r = xp_store_write_group(registry->store, w, n);
        xp_registry_namespace_release(registry, "");
        if (r >= 0)
                r = w[0].result;
        if (r == 0) {
                *ret_version = w[0].version;
                /* an Event that lost a race (or was never prepared) is recorded now */
                if (!prepared || (held && w[1].result < 0))
                        (void)xp_registry_event_record(registry, event, NULL);
        } else if (err && r != -ENOMEM) {
                *err = w[0].err;
        }
        json_decref(w[1].object);
        return r;
}
