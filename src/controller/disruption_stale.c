/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stale DisruptionTarget conditions (kube-controller-manager's disruption controller,
 * syncStalePodDisruption): a pod marked for a disruption (an eviction, a preemption) is deleted
 * right after; when the delete never came (the server stopped between the two writes, the
 * delete failed), the mark would say forever that the pod is going. After 2 minutes without a
 * deletionTimestamp, the condition is set False. Marks of the kubelet's own
 * (TerminationByKubelet) and pods already finished are left as they are.
 *
 * An nsqueue of its own whose informer queues a namespace only for a pod carrying a live mark,
 * so that namespaces without one are never listed for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "controller.h"
#include "disruption_stale.h"
#include "xpool/doc.h"
#include "xpool/lifecycle.h"
#include "xpool/macro.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

/* The pod's live DisruptionTarget condition (True, not the kubelet's own), or NULL. */
static const json_t *disruption_mark(const json_t *status)
{
        const json_t *c;
        size_t i;

        json_array_foreach(json_object_get(status, "conditions"), i, c)
        {
                if (xp_streq0(xp_json_str_at(c, "type", NULL), "DisruptionTarget") &&
                    xp_streq0(xp_json_str_at(c, "status", NULL), "True") &&
                    !xp_streq0(xp_json_str_at(c, "reason", NULL), "TerminationByKubelet"))
                        return c;
        }
        return NULL;
}

/*
 * When the pod's mark becomes stale (wall seconds), or 0 when it has none that can. The mark is
 * looked for first: nearly every pod has none, and then neither its metadata nor its phase is
 * read (each informer event's tree is cold by the time the controller reads it).
 */
static int64_t stale_at(const json_t *pod)
{
        const json_t *status = json_object_get(pod, "status");
        const json_t *mark = disruption_mark(status);
        const char *phase;
        int64_t since;

        if (!mark)
                return 0;
        phase = json_string_value(json_object_get(status, "phase"));
        if (xp_json_at(pod, "metadata.deletionTimestamp") || xp_streq0(phase, "Succeeded") ||
            xp_streq0(phase, "Failed"))
                return 0;
        if (xp_time_parse_rfc3339(xp_json_str_at(mark, "lastTransitionTime", ""), &since) < 0)
                since = 0; /* no time to count from: stale at once */
        return since + XP_DISRUPTION_STALE_SECONDS;
}

static void on_pod(void *nsqueue, const json_t *pod, uint64_t version)
{
        if (stale_at(pod))
                xp_nsqueue_object(nsqueue, pod, version);
}

static const struct xp_informer_handler followed[] = {
    {.resource = "pods", .add = on_pod, .update = on_pod},
};

/* The registry's change: the mark cleared if it is (still) stale. */
static int clear_mark(json_t *pod, void *userdata)
{
        const int64_t *now = userdata;
        char text[XP_RFC3339_MAX];
        int64_t at = stale_at(pod);

        if (!at || at > *now)
                return 0;
        if (xp_time_format_rfc3339(*now, text) < 0)
                return -EINVAL;
        return xp_lifecycle_pod_clear_disrupted(pod, text);
}

static int sync_namespace(void *userdata, const char *ns, int64_t *recheck, struct xp_error *err)
{
        struct xp_registry *registry = userdata;
        json_t *pods = NULL, *pod;
        int64_t now = time(NULL);
        uint64_t version;
        size_t i;
        int r = xp_store_list(xp_registry_store(registry), "pods", ns, &pods, &version, err);

        json_array_foreach(pods, i, pod)
        {
                int64_t at = stale_at(pod);

                if (r < 0)
                        break;
                if (at && at > now) {
                        if (*recheck == 0 || at < *recheck)
                                *recheck = at;
                } else if (at) {
                        r = xp_registry_change(registry,
                                               "pods",
                                               ns,
                                               xp_json_str_at(pod, "metadata.name", ""),
                                               clear_mark,
                                               &now,
                                               NULL,
                                               err);
                        if (r == -ENOENT) /* deleted meanwhile */
                                r = 0;
                }
        }
        json_decref(pods);
        return r;
}

static const struct xp_nsqueue_ops stale_ops = {
    .name = "disruption conditions",
    .handlers = followed,
    .n_handlers = XP_ELEMENTSOF(followed),
    .sync = sync_namespace,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
};

int disruption_stale_new(struct xp_registry *registry,
                         struct xp_nsqueue **ret,
                         struct xp_error *err)
{
        return xp_nsqueue_new(registry, &stale_ops, registry, ret, err);
}
