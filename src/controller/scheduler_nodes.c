/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which node updates may make a waiting pod fit. Every agent writes its node's status every
 * node_status_ms to refresh the Ready condition's heartbeat, and each write comes back as a
 * MODIFIED event; releasing every waiting pod on each (kube-scheduler's QueueingHints skip
 * them) would try the whole unschedulable set once a minute per node, for nothing. So a node
 * is remembered by a digest of what it says without the fields that change on every write
 * (the version, managedFields, the conditions' heartbeat times), and only an update that
 * changes the digest counts as a cluster event.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scheduler_state.h"
#include "xpool/map.h"

/* The node's content that a placement may depend on, as a digest; 0 when it cannot be made
 * (out of memory: then every update counts). */
static uint64_t node_digest(const json_t *node)
{
        json_t *copy = json_deep_copy(node), *metadata, *conditions, *c;
        char *text;
        uint64_t digest = 0;
        size_t i;

        if (!copy)
                return 0;
        metadata = json_object_get(copy, "metadata");
        json_object_del(metadata, "resourceVersion");
        json_object_del(metadata, "managedFields");
        conditions = json_object_get(json_object_get(copy, "status"), "conditions");
        json_array_foreach(conditions, i, c) json_object_del(c, "lastHeartbeatTime");
        text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
        if (text)
                digest = xp_map_hash(text) | 1; /* never 0: 0 says "unknown" */
        free(text);
        json_decref(copy);
        return digest;
}

/* What a node said last: the map's key is name. */
struct node_seen {
        char *name;
        uint64_t digest;
};

bool node_update_matters(struct xp_scheduler *s, const char *name, const json_t *node)
{
        uint64_t digest = node_digest(node);
        struct node_seen *seen = xp_map_get(&s->node_digests, name);

        if (digest != 0 && seen && seen->digest == digest)
                return false;
        if (!seen) {
                seen = calloc(1, sizeof(*seen));
                if (!seen || !(seen->name = strdup(name)) ||
                    xp_map_put(&s->node_digests, seen->name, seen) < 0) {
                        if (seen)
                                free(seen->name);
                        free(seen);
                        return true; /* not remembered: the next update counts too */
                }
        }
        seen->digest = digest;
        return true;
}

static void node_seen_free(struct node_seen *seen)
{
        if (seen)
                free(seen->name);
        free(seen);
}

void node_forget(struct xp_scheduler *s, const char *name)
{
        node_seen_free(xp_map_del(&s->node_digests, name));
}

void nodes_forget(struct xp_scheduler *s)
{
        for (size_t i = 0; i < s->node_digests.cap; i++)
                node_seen_free(s->node_digests.values[i]);
        xp_map_done(&s->node_digests);
}
