/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Graceful pod deletion (docs/server.md): a DELETE of a running pod marks it with a deadline and
 * leaves the stopping to the node's agent, which deletes it with grace 0 once nothing runs.
 * Every write carries the version read as precondition; a write that loses a race reads again.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "lifecycle.h"
#include "xpool/strutil.h"

#define DELETE_ATTEMPTS 8

/* 1 when the preconditions hold, else -ECANCELED with err in Kubernetes' words. */
static int check_preconditions(const json_t *pod,
                               uint64_t version,
                               const struct pod_delete_options *o,
                               struct xp_error *err)
{
        const char *uid =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));

        if (o->uid && !xp_streq0(o->uid, uid))
                return xp_errorf(
                    err,
                    -ECANCELED,
                    "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                    o->uid,
                    uid ? uid : "");
        if (o->version && o->version != version)
                return xp_errorf(err,
                                 -ECANCELED,
                                 "Precondition failed: ResourceVersion in precondition: %" PRIu64
                                 ", ResourceVersion in object meta: %" PRIu64,
                                 o->version,
                                 version);
        return 1;
}

int pod_delete(struct api *api,
               const char *ns,
               const char *name,
               const struct pod_delete_options *o,
               json_t **ret_pod,
               bool *ret_removed,
               struct xp_error *err)
{
        int r = -ESTALE;

        for (unsigned attempt = 0; attempt < DELETE_ATTEMPTS && r == -ESTALE; attempt++) {
                enum lifecycle_delete plan;
                json_t *pod, *last = NULL;
                uint64_t version, written;
                int64_t grace, deadline = 0;

                r = xp_store_get(api->store, "pods", ns, name, &pod, &version, err);
                if (r < 0)
                        return r;
                r = check_preconditions(pod, version, o, err);
                if (r < 0) {
                        json_decref(pod);
                        return r;
                }
                grace = lifecycle_grace_seconds(pod, o->has_grace, o->grace_seconds);
                plan = lifecycle_delete_plan(pod, grace, time(NULL), &deadline);
                if (plan == LIFECYCLE_DELETE_KEEP || o->dry) {
                        r = plan == LIFECYCLE_DELETE_MARK
                                ? lifecycle_mark_deleted(pod, deadline, grace)
                                : 0;
                        if (r < 0) {
                                json_decref(pod);
                                return r;
                        }
                        *ret_pod = pod;
                        *ret_removed = plan == LIFECYCLE_DELETE_REMOVE;
                        return 0;
                }
                if (plan == LIFECYCLE_DELETE_REMOVE) {
                        r = xp_store_delete(
                            api->store, "pods", ns, name, version, &last, &written, err);
                        json_decref(pod);
                        if (r == 0) {
                                *ret_pod = last;
                                *ret_removed = true;
                        }
                        continue;
                }
                r = lifecycle_mark_deleted(pod, deadline, grace);
                if (r == 0)
                        r = xp_store_update(
                            api->store, "pods", ns, name, version, pod, &written, err);
                if (r == 0) {
                        *ret_pod = pod;
                        *ret_removed = false;
                        return 0;
                }
                json_decref(pod);
        }
        return r;
}
