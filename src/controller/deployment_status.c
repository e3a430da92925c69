/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Deployment's ReplicaSets as the arithmetic reads them, its revision history, and its status:
 * the counts summed over the ReplicaSets and the Available and Progressing conditions with
 * Kubernetes' reasons and messages (kubectl rollout status and describe read them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deployment.h"
#include "xpool/timeutil.h"

static int32_t annotation_int(const json_t *annotations, const char *key)
{
        const char *text = json_string_value(json_object_get(annotations, key));
        char *end;
        long v;

        if (!text || !*text)
                return -1;
        errno = 0;
        v = strtol(text, &end, 10);
        if (errno || *end || v < 0 || v > INT32_MAX)
                return -1;
        return (int32_t)v;
}

static int32_t int_of(const json_t *object, const char *key)
{
        json_int_t v = json_integer_value(json_object_get(object, key));

        return v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

void xp_deploy_rs_read(const json_t *replicaset, struct xp_deploy_rs *rs)
{
        const json_t *meta = json_object_get(replicaset, "metadata");
        const json_t *ann = json_object_get(meta, "annotations");
        const json_t *spec = json_object_get(replicaset, "spec");
        const json_t *status = json_object_get(replicaset, "status");
        const json_t *replicas = json_object_get(spec, "replicas");
        int64_t created = 0;
        const char *ts = json_string_value(json_object_get(meta, "creationTimestamp"));

        if (ts)
                (void)xp_time_parse_rfc3339(ts, &created);
        *rs = (struct xp_deploy_rs){
            .name = json_string_value(json_object_get(meta, "name")),
            .replicas = replicas ? int_of(spec, "replicas") : 1,
            .status_replicas = int_of(status, "replicas"),
            .ready = int_of(status, "readyReplicas"),
            .available = int_of(status, "availableReplicas"),
            .created_s = created,
            .revision = xp_deploy_revision(replicaset),
            .desired = annotation_int(ann, XP_DEPLOY_DESIRED),
            .max = annotation_int(ann, XP_DEPLOY_MAX),
            .deleting = json_object_get(meta, "deletionTimestamp") != NULL,
        };
}

struct candidate {
        size_t index;
        int64_t revision, created_s;
};

static int by_revision(const void *pa, const void *pb)
{
        const struct candidate *a = pa, *b = pb;

        if (a->revision != b->revision)
                return a->revision < b->revision ? -1 : 1;
        if (a->created_s != b->created_s)
                return a->created_s < b->created_s ? -1 : 1;
        return a->index < b->index ? -1 : 1;
}

size_t
xp_deploy_history_cleanup(const struct xp_deploy_rs *old, size_t n_old, int32_t limit, size_t *ret)
{
        struct candidate *c = calloc(n_old ? n_old : 1, sizeof(*c));
        size_t n = 0, out = 0;

        if (!c)
                return 0; /* nothing cleaned this time; the next sync tries again */
        for (size_t i = 0; i < n_old; i++)
                if (old[i].replicas == 0 && old[i].status_replicas == 0 && !old[i].deleting)
                        c[n++] = (struct candidate){i, old[i].revision, old[i].created_s};
        if (limit < 0)
                limit = 0;
        if (n > (size_t)limit) {
                if (n > 1) /* an empty array may be NULL, which qsort may not take */
                        qsort(c, n, sizeof(*c), by_revision);
                for (size_t i = 0; i < n - (size_t)limit; i++)
                        ret[out++] = c[i].index;
        }
        free(c);
        return out;
}

int64_t xp_deploy_next_revision(const struct xp_deploy_rs *old, size_t n_old)
{
        int64_t max = 0;

        for (size_t i = 0; i < n_old; i++)
                if (old[i].revision > max)
                        max = old[i].revision;
        return max + 1;
}

void xp_deploy_count(int32_t replicas,
                     const struct xp_deploy_rs *all,
                     size_t n,
                     const struct xp_deploy_rs *new_rs,
                     struct xp_deploy_counts *ret)
{
        struct xp_deploy_counts c = {0};

        for (size_t i = 0; i < n; i++) {
                c.replicas += all[i].status_replicas;
                c.ready += all[i].ready;
                c.available += all[i].available;
        }
        c.updated = new_rs ? new_rs->status_replicas : 0;
        c.unavailable = replicas - c.available;
        if (c.unavailable < 0)
                c.unavailable = 0;
        *ret = c;
}
