/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the agent keeps of a done pod: the server keeps Succeeded and Failed pods until they are
 * deleted (by their owner, or the pod GC at its threshold of thousands), and the agent holds
 * every pod of its node, so a node that runs short jobs for days held each whole one (its spec,
 * its status, decoded once more: about 35 KiB a pod) until then. Once its cleanup is over a done
 * pod needs only who it is and that it is over; the rest comes back with nothing to do.
 */
#include <errno.h>

#include "agent_internal.h"
#include "xpool/macro.h"

static int copy_key(json_t *to, const json_t *from, const char *key)
{
        json_t *value = json_object_get(from, key);

        return value ? json_object_set(to, key, value) : 0;
}

json_t *xp_agent_pod_slim(const json_t *pod)
{
        const json_t *meta = json_object_get(pod, "metadata");
        json_auto_t *slim = json_pack("{s:{}, s:{}}", "metadata", "status");
        json_t *to_meta = json_object_get(slim, "metadata");
        static const char *const keys[] = {
            "uid", "name", "namespace", "resourceVersion", "deletionTimestamp"};

        if (!slim)
                return NULL;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                if (copy_key(to_meta, meta, keys[i]) < 0)
                        return NULL;
        if (copy_key(json_object_get(slim, "status"), json_object_get(pod, "status"), "phase") < 0)
                return NULL;
        return TAKE_PTR(slim);
}

/* The images pod's containers name: a done pod's containers still count as using them for image
 * garbage collection (imagegc.c), as the kubelet counts its dead containers' images. */
static json_t *images_of(const json_t *pod)
{
        static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
        json_t *images = json_array(), *c;
        size_t i;

        for (size_t l = 0; images && l < XP_ELEMENTSOF(lists); l++)
                json_array_foreach(json_object_get(json_object_get(pod, "spec"), lists[l]), i, c)
                {
                        json_t *image = json_object_get(c, "image");

                        if (json_is_string(image) && json_array_append(images, image) < 0) {
                                json_decref(images);
                                return NULL;
                        }
                }
        return images;
}

json_t *xp_agent_pods_done_images(struct xp_agent_pods *pods)
{
        json_t *all = json_array(), *images;
        const char *uid;

        pthread_mutex_lock(&pods->lock);
        json_object_foreach(pods->done, uid, images)
        {
                if (all && json_is_array(images) && json_array_extend(all, images) < 0) {
                        json_decref(all);
                        all = NULL;
                }
        }
        pthread_mutex_unlock(&pods->lock);
        return all;
}

int xp_agent_pods_mark_done(struct xp_agent_pods *pods, const char *uid, json_t **ret_slim)
{
        json_t *pod, *slim = NULL;
        int r = 0;

        pthread_mutex_lock(&pods->lock);
        pod = json_object_get(pods->pods, uid);
        /* absent or deleted: nothing is held, and no later event can bring it back */
        if (json_is_object(pod)) {
                slim = xp_agent_pod_slim(pod);
                if (!slim || json_object_set_new(pods->done, uid, images_of(pod)) < 0 ||
                    json_object_set(pods->pods, uid, slim) < 0) {
                        json_decref(slim);
                        slim = NULL;
                        r = -ENOMEM;
                }
        }
        pthread_mutex_unlock(&pods->lock);
        if (ret_slim)
                *ret_slim = slim;
        else
                json_decref(slim);
        return r;
}
