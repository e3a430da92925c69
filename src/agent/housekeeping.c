/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The housekeeping pass of local ephemeral storage (ephemeral.h): every interval, each pod of
 * the node that is not over is measured (its on-disk emptyDir volumes, STATE/.pods/UID/volumes/
 * NAME; each container's writable layer, STATE/UID/NAME/bundle/upper; its logs,
 * DATA/logs/NS_NAME_UID/NAME) and, over a limit, evicted as the kubelet does it: phase Failed,
 * reason Evicted, the kubelet's message, the DisruptionTarget condition, a Warning Event; the
 * pod sync then stops its containers. Level-triggered like devhealth.c: until the server has
 * the pod Failed the status is put again each pass; the Event goes once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "ephemeral.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define REASON "Evicted"
/* the entries one pass stats, all pods together: at most about 0.8 s of CPU (4 us an entry,
 * cached, on a 2-core VM; docs/agent.md), shared out among the pods, each at least
 * POD_MIN_ENTRIES */
#define PASS_MAX_ENTRIES 200000
#define POD_MIN_ENTRIES  10000

static const char *str(const json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

static bool over(const json_t *pod)
{
        const char *phase = str(json_object_get(pod, "status"), "phase");

        return xp_streq0(phase, "Failed") || xp_streq0(phase, "Succeeded");
}

/* The pod's status as the server has it, evicted for message. NULL: -ENOMEM. */
static json_t *evicted_status(const json_t *pod, const char *message)
{
        const json_t *old = json_object_get(pod, "status"), *c;
        json_t *status = old ? json_deep_copy(old) : json_object(), *conds = json_array();
        char now[XP_RFC3339_MAX];
        size_t i;

        xp_time_format_rfc3339(xp_agent_now_ns() / 1000000000, now);
        json_array_foreach(json_object_get(old, "conditions"), i, c)
        {
                if (!xp_streq0(str(c, "type"), "DisruptionTarget"))
                        (void)json_array_append(conds, (json_t *)c);
        }
        if (!status || !conds ||
            json_array_append_new(conds,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s}",
                                            "type",
                                            "DisruptionTarget",
                                            "status",
                                            "True",
                                            "reason",
                                            "TerminationByKubelet",
                                            "message",
                                            message,
                                            "lastTransitionTime",
                                            now)) < 0 ||
            json_object_set_new(status, "conditions", conds) < 0 ||
            json_object_set_new(status, "phase", json_string("Failed")) < 0 ||
            json_object_set_new(status, "reason", json_string(REASON)) < 0 ||
            json_object_set_new(status, "message", json_string(message)) < 0) {
                json_decref(status);
                return NULL;
        }
        return status;
}

void xp_agent_disk_evict(struct xp_agent *a, const json_t *pod, const char *message, bool first)
{
        const json_t *meta = json_object_get(pod, "metadata");
        const char *ns = str(meta, "namespace"), *name = str(meta, "name"), *uid = str(meta, "uid");
        json_t *status = evicted_status(pod, message);

        if (!status || xp_agent_status_put(a->status, ns, name, uid, status) < 0) {
                xp_log(LOG_ERR, "agent: evicting pod %s/%s: out of memory", ns, name);
                return;
        }
        if (!first)
                return;
        xp_log(LOG_WARNING, "agent: pod %s/%s evicted: %s", ns, name, message);
        (void)xp_agent_event(a->events, ns, name, uid, "Warning", REASON, message);
}

static void measure(struct xp_agent *a,
                    const json_t *pod,
                    struct xp_disk_walk *walk,
                    struct xp_pod_disk_use *use)
{
        const json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
        const char *ns = str(meta, "namespace"), *name = str(meta, "name"), *uid = str(meta, "uid");
        char path[4096];
        const json_t *v;
        size_t i;

        json_array_foreach(json_object_get(spec, "volumes"), i, v)
        {
                const json_t *ed = json_object_get(v, "emptyDir");

                /* a Memory one is a tmpfs of sizeLimit: the kernel bounds it */
                if (!ed || xp_streq0(str(ed, "medium"), "Memory") || !str(v, "name") ||
                    use->n_volumes >= XP_ELEMENTSOF(use->volumes))
                        continue;
                use->volumes[use->n_volumes].name = str(v, "name");
                snprintf(path,
                         sizeof(path),
                         "%s/.pods/%s/volumes/%s",
                         a->state_dir,
                         uid,
                         str(v, "name"));
                (void)xp_agent_disk_usage(path, walk, &use->volumes[use->n_volumes++].bytes);
        }
        json_array_foreach(json_object_get(spec, "containers"), i, v)
        {
                const char *c = str(v, "name");
                uint64_t *bytes;

                if (!c || use->n_containers >= XP_ELEMENTSOF(use->containers))
                        continue;
                use->containers[use->n_containers].name = c;
                bytes = &use->containers[use->n_containers++].bytes;
                snprintf(path, sizeof(path), "%s/%s/%s/bundle/upper", a->state_dir, uid, c);
                (void)xp_agent_disk_usage(path, walk, bytes);
                snprintf(path, sizeof(path), "%s/logs/%s_%s_%s/%s", a->data_dir, ns, name, uid, c);
                (void)xp_agent_disk_usage(path, walk, bytes);
        }
}

/* The pods to look at, copied out of the watch's map (those named). NULL: -ENOMEM. */
static json_t *pods_now(struct xp_agent *a)
{
        json_t *list = json_array(), *pod;
        const char *uid;

        pthread_mutex_lock(&a->pods.lock);
        json_object_foreach(a->pods.pods, uid, pod)
        {
                const json_t *meta = json_object_get(pod, "metadata");

                if (json_is_object(pod) && str(meta, "namespace") && str(meta, "name") &&
                    xp_streq0(str(meta, "uid"), uid))
                        (void)json_array_append_new(list, json_deep_copy(pod));
        }
        pthread_mutex_unlock(&a->pods.lock);
        return list;
}

/* Empties the on-disk emptyDir volumes of a pod evicted here, now over and cleaned up (the agent
 * keeps such a pod slim: its uid is what is left), as the kubelet tears down a terminated pod's
 * volumes: the space is back at once, not when the pod is deleted. A Memory one, a tmpfs, is
 * another device the walk does not enter. */
static void reclaim(struct xp_agent *a, const json_t *pod)
{
        const json_t *meta = json_object_get(pod, "metadata");
        struct xp_disk_walk walk = {.max_entries = PASS_MAX_ENTRIES, .remove = true};
        const char *uid = str(meta, "uid");
        uint64_t bytes = 0;
        char path[4096];

        if (!uid || strchr(uid, '/') || strcmp(uid, "..") == 0)
                return;
        snprintf(path, sizeof(path), "%s/.pods/%s/volumes", a->state_dir, uid);
        (void)xp_agent_disk_usage(path, &walk, &bytes);
        xp_log(LOG_INFO,
               "agent: evicted pod %s/%s: its emptyDir volumes emptied, %llu bytes given back",
               str(meta, "namespace"),
               str(meta, "name"),
               (unsigned long long)bytes);
}

/* The pod's priority and its containers' ephemeral-storage requests, for the ranking. */
static void
candidate(const json_t *pod, const struct xp_pod_disk_use *use, struct xp_disk_candidate *c)
{
        const json_t *spec = json_object_get(pod, "spec"), *k;
        size_t i;

        c->uid = str(json_object_get(pod, "metadata"), "uid");
        c->priority = json_integer_value(json_object_get(spec, "priority"));
        for (i = 0; i < use->n_volumes; i++)
                c->usage += use->volumes[i].bytes;
        for (i = 0; i < use->n_containers; i++)
                c->usage += use->containers[i].bytes;
        json_array_foreach(json_object_get(spec, "containers"), i, k)
        {
                const char *text = str(json_object_get(json_object_get(k, "resources"), "requests"),
                                       "ephemeral-storage");
                struct xp_quantity q;
                int64_t bytes;

                if (text && xp_quantity_parse(text, &q, NULL) >= 0 &&
                    xp_quantity_to_int_ceil(&q, &bytes) >= 0 && bytes > 0)
                        c->request += (uint64_t)bytes;
        }
        if (use->truncated && c->usage <= c->request) /* more than measured: over its request */
                c->usage = c->request + 1;
}

/* One pod of the pass: evicted when over a limit, else a candidate in cands[*n]. */
static void pass_pod(struct xp_agent *a,
                     const json_t *pod,
                     size_t budget,
                     json_t *seen,
                     struct xp_disk_candidate *cands,
                     size_t *n)
{
        const char *uid = str(json_object_get(pod, "metadata"), "uid");
        const char *was = str(a->disk_evicted, uid);
        struct xp_disk_walk walk = {.max_entries = budget};
        struct xp_pod_disk_use use = {0};
        char *message = NULL;

        if (over(pod)) {
                /* evicted here: its space is given back, as the kubelet's teardown of a
                 * terminated pod's emptyDirs, once its cleanup is over (the agent then holds it
                 * slim, without spec): no container of it runs and writes any more */
                if (was && !json_object_get(pod, "spec"))
                        reclaim(a, pod);
                else if (was)
                        (void)json_object_set(seen, uid, json_object_get(a->disk_evicted, uid));
                return;
        }
        if (was) {
                xp_agent_disk_evict(a, pod, was, false);
                (void)json_object_set(seen, uid, json_object_get(a->disk_evicted, uid));
                return;
        }
        if (!xp_agent_pod_evictable(pod)) /* critical: the kubelet's evictPod refuses it */
                return;
        measure(a, pod, &walk, &use);
        use.truncated = walk.truncated;
        use.too_deep = walk.too_deep;
        use.max_entries = budget;
        if (walk.truncated)
                xp_log(LOG_DEBUG, "agent: pod %s: the disk use walk stopped at its bounds", uid);
        if (xp_agent_ephemeral_verdict(pod, &use, &message) > 0) {
                xp_agent_disk_evict(a, pod, message, true);
                (void)json_object_set_new(seen, uid, json_string(message));
        } else if (cands && !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                candidate(pod, &use, &cands[(*n)++]); /* a pod being deleted gives back anyway */
        free(message);
}

/* start: the pass's number, rotating the first pod walked */
static void pass(struct xp_agent *a, size_t start)
{
        json_t *pods = pods_now(a), *seen = json_object();
        size_t total = json_array_size(pods), n = 0;
        struct xp_disk_candidate *cands = calloc(total + 1, sizeof(*cands));
        size_t budget = xp_agent_pod_walk_budget(PASS_MAX_ENTRIES, POD_MIN_ENTRIES, total);

        for (size_t k = 0; k < total; k++)
                pass_pod(a, json_array_get(pods, (start + k) % total), budget, seen, cands, &n);
        xp_agent_image_gc(a, pods);
        xp_agent_node_pressure(a, pods, cands, n, seen);
        /* pods over and cleaned up, or gone, need no memory of their eviction */
        json_decref(a->disk_evicted);
        a->disk_evicted = seen;
        free(cands);
        json_decref(pods);
}

void *xp_agent_housekeeping_thread(void *agent)
{
        struct xp_agent *a = agent;
        size_t passes = 0;

        while (!xp_agent_sleep(a, a->housekeeping_ms))
                pass(a, passes++);
        json_decref(a->disk_evicted);
        a->disk_evicted = NULL;
        return NULL;
}
