/* SPDX-License-Identifier: Apache-2.0 */
/* The pod garbage collector's decisions (podgc.h): which terminated pods go, which pods are
 * orphans. */
#include <stdlib.h>
#include <string.h>

#include "podgc.h"

bool podgc_terminated(const json_t *pod)
{
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

        return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

static int oldest_first(const void *a, const void *b)
{
        const struct podgc_done *x = a, *y = b;
        int c = strcmp(x->created ? x->created : "", y->created ? y->created : "");

        return c != 0 ? c : strcmp(x->key, y->key);
}

size_t podgc_select_oldest(struct podgc_done *done, size_t n, int64_t threshold)
{
        if (threshold <= 0 || (uint64_t)n <= (uint64_t)threshold)
                return 0;
        qsort(done, n, sizeof(*done), oldest_first);
        return n - (size_t)threshold;
}

enum podgc_verdict podgc_judge(const json_t *pod,
                               bool (*node_exists)(void *userdata, const char *node),
                               void *userdata)
{
        const char *node =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        const json_t *deletion =
            json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");

        if (!node || !*node)
                return json_is_string(deletion) ? PODGC_UNSCHEDULED_TERMINATING : PODGC_KEEP;
        return node_exists(userdata, node) ? PODGC_KEEP : PODGC_ORPHAN;
}
