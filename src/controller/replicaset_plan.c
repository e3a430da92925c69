/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The arithmetic of one ReplicaSet sync: how far the pods are from the spec, and the counts its
 * status reports.
 */
#include <string.h>

#include "replicaset.h"

int32_t xp_rs_diff(int32_t desired, int32_t active)
{
        int64_t diff = (int64_t)desired - active;

        if (diff > XP_RS_BURST)
                return XP_RS_BURST;
        if (diff < -XP_RS_BURST)
                return -XP_RS_BURST;
        return (int32_t)diff;
}

/* Whether labels hold every label of the template (Kubernetes' fullyLabeledReplicas). */
static bool fully_labeled(const json_t *labels, const json_t *template_labels)
{
        const char *key;
        json_t *v;

        json_object_foreach((json_t *)template_labels, key, v)
        {
                const char *have = json_string_value(json_object_get(labels, key));

                if (!have || !json_is_string(v) || strcmp(have, json_string_value(v)) != 0)
                        return false;
        }
        return true;
}

void xp_rs_count(const struct xp_rs_pod *pods,
                 size_t n,
                 const json_t *template_labels,
                 int32_t min_ready_s,
                 int64_t now_s,
                 struct xp_rs_counts *ret)
{
        struct xp_rs_counts c = {0};

        for (size_t i = 0; i < n; i++) {
                const struct xp_rs_pod *p = &pods[i];
                const json_t *labels =
                    json_object_get(json_object_get(p->object, "metadata"), "labels");

                if (!xp_rs_pod_active(p))
                        continue;
                c.replicas++;
                if (fully_labeled(labels, template_labels))
                        c.fully_labeled++;
                if (!p->ready)
                        continue;
                c.ready++;
                if (xp_rs_pod_available(p, min_ready_s, now_s)) {
                        c.available++;
                } else if (p->ready_since_s) {
                        int64_t at = p->ready_since_s + min_ready_s;

                        if (c.next_available_s == 0 || at < c.next_available_s)
                                c.next_available_s = at;
                }
        }
        *ret = c;
}
