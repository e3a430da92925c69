/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image garbage collection (docs/images.md, "Image garbage collection"), as the kubelet's image
 * manager: each housekeeping pass reads the usage of the image store's file system; at or above
 * --image-gc-high-threshold (85 %) it deletes images no container uses, least recently used
 * first, none that a pod of the node names (running or not) and none pulled within
 * --minimum-image-ttl-duration (2m), until the usage is back at
 * --image-gc-low-threshold (80 %). Short of that, a FreeDiskSpaceFailed Event on the Node, and
 * ImageGCFailed when it falls short again the next time, as the kubelet's. Under disk pressure
 * the eviction step first deletes every image no container uses (xp_agent_images_reclaim()),
 * and evicts a pod only when that was not enough.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>

#include "agent_internal.h"
#include "xpool/image.h"
#include "xpool/log.h"

#define GC_EVENT_EVERY_S 300 /* the kubelet's image GC period: the most often a failure is told */

static bool measure(struct xp_agent *a, uint64_t *capacity, uint64_t *available)
{
        struct statvfs st;

        if (!a->images || statvfs(xp_image_store_layers_dir(a->images), &st) < 0 ||
            st.f_blocks == 0)
                return false;
        *capacity = (uint64_t)st.f_blocks * st.f_frsize;
        *available = (uint64_t)st.f_bavail * st.f_frsize;
        return true;
}

/* The images the node's pods name, as the kubelet counts the images of every container the
 * runtime has (exited ones too) as in use: a pod between restarts, or finished and not deleted
 * yet (done: its containers' images, kept when the pod was made slim), keeps its image. Points
 * into pods and done. */
static const char **pods_images(const json_t *pods, const json_t *done, size_t *ret_n)
{
        static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
        size_t n = 0, i, j, cap = json_array_size(done);
        const char **out;
        const json_t *pod, *c;

        json_array_foreach(pods, i, pod)
        {
                for (size_t l = 0; l < XP_ELEMENTSOF(lists); l++)
                        cap += json_array_size(
                            json_object_get(json_object_get(pod, "spec"), lists[l]));
        }
        out = calloc(cap + 1, sizeof(*out));
        if (!out)
                return NULL; /* none kept: the holds still keep what runs */
        json_array_foreach(done, i, c)
        {
                if (json_is_string(c))
                        out[n++] = json_string_value(c);
        }
        json_array_foreach(pods, i, pod)
        {
                for (size_t l = 0; l < XP_ELEMENTSOF(lists); l++) {
                        json_array_foreach(
                            json_object_get(json_object_get(pod, "spec"), lists[l]), j, c)
                        {
                                const char *image = json_string_value(json_object_get(c, "image"));

                                if (image && *image)
                                        out[n++] = image;
                        }
                }
        }
        *ret_n = n;
        return out;
}

static int
collect(struct xp_agent *a, const json_t *pods, uint64_t want, struct xp_image_gc_result *res)
{
        struct xp_image_gc_options o = {
            .want_bytes = want,
            .min_age_s = a->image_gc.min_age_s,
            .nonblock = true,
        };
        json_auto_t *done = xp_agent_pods_done_images(&a->pods);
        _cleanup_free_ const char **in_use = pods_images(pods, done, &o.n_in_use);
        struct xp_error err = {0};
        int r;

        o.in_use = in_use;
        r = xp_image_gc(a->images, &o, res, &err);
        if (r < 0 && r != -EAGAIN)
                xp_log(LOG_WARNING, "agent: image garbage collection: %s", xp_error_message(&err));
        else if (res->images > 0)
                xp_log(LOG_INFO,
                       "agent: image garbage collection removed %zu images, %" PRIu64
                       " bytes given back",
                       res->images,
                       res->bytes);
        return r;
}

/* Each reason at most once per image GC period: the housekeeping pass runs more often. */
static void tell(struct xp_agent *a, int64_t *told_s, const char *reason, const char *message)
{
        int64_t now_s = xp_agent_now_ns() / 1000000000;

        if (*told_s && now_s - *told_s < GC_EVENT_EVERY_S)
                return;
        *told_s = now_s;
        (void)xp_agent_event_node(a->events, "Warning", reason, message);
}

static void tell_failure(struct xp_agent *a, const char *message)
{
        bool again = a->image_gc.failed;

        if (!again)
                xp_log(LOG_WARNING, "agent: %s", message);
        a->image_gc.failed = true;
        tell(a, &a->image_gc.told_free_s, "FreeDiskSpaceFailed", message);
        /* the kubelet tells ImageGCFailed for failures in a row only */
        if (again)
                tell(a, &a->image_gc.told_gc_s, "ImageGCFailed", message);
}

void xp_agent_image_gc(struct xp_agent *a, const json_t *pods)
{
        uint64_t capacity, available, want;
        struct xp_image_gc_result res = {0};
        char message[256];
        int usage;

        if (a->image_gc.high_percent >= 100 || !measure(a, &capacity, &available))
                return;
        usage = 100 - (int)(available * 100 / capacity);
        if (usage < a->image_gc.high_percent) {
                a->image_gc.failed = false;
                return;
        }
        want = capacity * (uint64_t)(100 - a->image_gc.low_percent) / 100;
        want = want > available ? want - available : 0;
        /* said once for a run of passes that fall short */
        xp_log(a->image_gc.failed ? LOG_DEBUG : LOG_INFO,
               "agent: image file system usage %d%% is at or over the high threshold %d%%: "
               "freeing %" PRIu64 " bytes, down to the low threshold %d%%",
               usage,
               a->image_gc.high_percent,
               want,
               a->image_gc.low_percent);
        if (collect(a, pods, want, &res) == -EAGAIN)
                return; /* a pull is under way: the next pass */
        if (res.bytes >= want) {
                a->image_gc.failed = false;
                return;
        }
        snprintf(message,
                 sizeof(message),
                 "Failed to garbage collect required amount of images. Attempted to free %" PRIu64
                 " bytes, but only found %" PRIu64 " bytes eligible to free.",
                 want,
                 res.bytes);
        tell_failure(a, message);
}

int xp_agent_images_reclaim(struct xp_agent *a, const json_t *pods, uint64_t *freed)
{
        struct xp_image_gc_result res = {0};
        int r;

        *freed = 0;
        if (!a->images)
                return 0;
        xp_log(LOG_INFO, "agent: disk pressure: deleting the images no container uses");
        r = collect(a, pods, UINT64_MAX, &res);
        *freed = res.bytes;
        return r == -EAGAIN ? r : 0;
}

int xp_agent_image_gc_setup(struct xp_agent *a,
                            const struct xp_agent_options *o,
                            struct xp_error *err)
{
        int high = o->image_gc_high_threshold ? o->image_gc_high_threshold : 85;
        int low = o->image_gc_low_threshold ? o->image_gc_low_threshold : 80;

        if (high < 0 || high > 100)
                return xp_errorf(err,
                                 -EINVAL,
                                 "--image-gc-high-threshold %d: not a percent from 0 to 100",
                                 high);
        if (low < 0 || low > 100)
                return xp_errorf(
                    err, -EINVAL, "--image-gc-low-threshold %d: not a percent from 0 to 100", low);
        /* the kubelet's check */
        if (low >= high)
                return xp_errorf(err,
                                 -EINVAL,
                                 "--image-gc-low-threshold %d must be less than "
                                 "--image-gc-high-threshold %d",
                                 low,
                                 high);
        a->image_gc.high_percent = high;
        a->image_gc.low_percent = low;
        a->image_gc.min_age_s = o->minimum_image_ttl_ms < 0    ? 0
                                : o->minimum_image_ttl_ms == 0 ? 120
                                                               : o->minimum_image_ttl_ms / 1000;
        return 0;
}
