/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which gang a pod belongs to, in the three shapes users write (docs/scheduler.md, "Gangs"):
 *  - Kubernetes' Workload (scheduling.k8s.io/v1alpha1): the pod's spec.workloadRef names the
 *    Workload and one of its podGroups (and a podGroupReplicaKey splitting it into independent
 *    gangs); a podGroup whose policy is gang has policy.gang.minCount;
 *  - Kubernetes' PodGroup (scheduling.k8s.io/v1alpha2): the pod's spec.schedulingGroup names
 *    it (podGroupName); its spec.schedulingPolicy is basic or gang (gang.minCount);
 *  - Volcano's PodGroup (scheduling.volcano.sh/v1beta1): the pod annotation
 *    scheduling.k8s.io/group-name names it; its spec.minMember is the minimum;
 *  - xpool's label xpool.io/gang with xpool.io/gang-min.
 * The loop follows Workloads and PodGroups (their latest state, by namespace/name) and counts
 * each gang's bound members, so that a gang's minimum counts what is already placed without a
 * scan of the snapshot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "queue_ctl.h"
#include "scheduler_state.h"
#include "xpool/gang.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/priority.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

/* A followed Workload or PodGroup. */
struct group_obj {
        char *key; /* "RESOURCE/namespace/name" */
        json_t *object;
};

/* A gang's bound members, and which gang each bound pod counted for. */
struct gang_count {
        char *key;
        int64_t bound;
};

struct gang_member {
        char *pod; /* "namespace/name" */
        struct gang_count *gang;
};

static int64_t json_int(const json_t *o, const char *a, const char *b, const char *c)
{
        const json_t *v = json_object_get(o, a);

        if (b)
                v = json_object_get(v, b);
        if (c)
                v = json_object_get(v, c);
        return json_is_integer(v) ? json_integer_value(v) : 0;
}

static const json_t *
group_find(struct xp_scheduler *s, const char *resource, const char *ns, const char *name)
{
        char key[3 * NAME_MAX_LEN + 8];
        struct group_obj *g;

        if (snprintf(key, sizeof(key), "%s/%s/%s", resource, ns, name) >= (int)sizeof(key))
                return NULL;
        g = xp_map_get(&s->groups, key);
        return g ? g->object : NULL;
}

static int64_t min_in_range(int64_t n)
{
        return n >= 1 && n <= XP_GANG_MEMBERS_MAX ? n : 0;
}

/* spec.workloadRef: 1 a gang, 0 none (a basic policy), -ENOMEM. */
static int
from_workload(struct xp_scheduler *s, const char *ns, const json_t *ref, struct gang_id *ret)
{
        const char *name = json_string_value(json_object_get(ref, "name"));
        const char *group = json_string_value(json_object_get(ref, "podGroup"));
        const char *replica = json_string_value(json_object_get(ref, "podGroupReplicaKey"));
        const json_t *w, *pg;
        size_t i;

        if (!name || !group)
                return 0;
        if (asprintf(&ret->key,
                     "%s/%s/%s%s%s",
                     ns,
                     name,
                     group,
                     replica ? "/" : "",
                     replica ? replica : "") < 0) {
                ret->key = NULL;
                return -ENOMEM;
        }
        ret->what = "workload";
        w = group_find(s, XP_SCHEDULER_WORKLOADS, ns, name);
        if (!w) {
                ret->missing = true;
                return 1;
        }
        json_array_foreach(json_object_get(json_object_get(w, "spec"), "podGroups"), i, pg)
        {
                if (!xp_streq0(json_string_value(json_object_get(pg, "name")), group))
                        continue;
                if (!json_object_get(json_object_get(pg, "policy"), "gang")) {
                        free(ret->key);
                        ret->key = NULL;
                        return 0; /* basic: every pod on its own */
                }
                ret->min = min_in_range(json_int(pg, "policy", "gang", "minCount"));
                return 1;
        }
        ret->missing = true;
        return 1;
}

/* spec.schedulingGroup: 1 a gang, 0 none (no name, or a basic policy), -ENOMEM. */
static int
from_pod_group(struct xp_scheduler *s, const char *ns, const json_t *ref, struct gang_id *ret)
{
        const char *name = json_string_value(json_object_get(ref, "podGroupName"));
        const json_t *pg, *policy;

        if (!name || !name[0])
                return 0;
        pg = group_find(s, XP_SCHEDULER_K8S_PODGROUPS, ns, name);
        policy = json_object_get(json_object_get(pg, "spec"), "schedulingPolicy");
        if (pg && !json_object_get(policy, "gang"))
                return 0; /* basic: every pod on its own */
        if (asprintf(&ret->key, "%s/%s", ns, name) < 0) {
                ret->key = NULL;
                return -ENOMEM;
        }
        ret->what = XP_GANG_SCHEDULING_GROUP;
        ret->missing = !pg;
        ret->min = min_in_range(json_int(policy, "gang", "minCount", NULL));
        return 1;
}

/* Volcano's spec.priorityClassName, the gang's priority: its class's value, when there is one. */
static void podgroup_priority(struct xp_scheduler *s, const json_t *pg, struct gang_id *ret)
{
        const char *name =
            json_string_value(json_object_get(json_object_get(pg, "spec"), "priorityClassName"));
        json_t *class = NULL;

        if (!name || !name[0] ||
            xp_store_get(xp_registry_store(s->registry),
                         XP_PRIORITY_CLASSES_RESOURCE,
                         "",
                         name,
                         &class,
                         NULL,
                         NULL) < 0)
                return; /* no such class (yet): the members' own priorities */
        ret->has_priority = json_is_integer(json_object_get(class, "value"));
        ret->priority = json_integer_value(json_object_get(class, "value"));
        json_decref(class);
}

int gang_identify(struct xp_scheduler *s, const json_t *pod, const char *ns, struct gang_id *ret)
{
        const json_t *meta = json_object_get(pod, "metadata");
        const json_t *spec = json_object_get(pod, "spec");
        const json_t *group = json_object_get(spec, "schedulingGroup");
        const json_t *ref = json_object_get(spec, "workloadRef");
        const char *volcano = json_string_value(
            json_object_get(json_object_get(meta, "annotations"), XP_GANG_VOLCANO_ANNOTATION));
        const json_t *labels = json_object_get(meta, "labels");
        const char *label = json_string_value(json_object_get(labels, XP_GANG_LABEL));
        const char *min = json_string_value(json_object_get(labels, XP_GANG_MIN_LABEL));

        *ret = (struct gang_id){0};
        if (json_is_object(group))
                return from_pod_group(s, ns, group, ret);
        if (json_is_object(ref))
                return from_workload(s, ns, ref, ret);
        if (volcano && volcano[0]) {
                const json_t *pg = group_find(s, XP_SCHEDULER_PODGROUPS, ns, volcano);
                if (asprintf(&ret->key, "%s/%s", ns, volcano) < 0) {
                        ret->key = NULL;
                        return -ENOMEM;
                }
                ret->what = "podgroup";
                ret->missing = !pg;
                ret->min = min_in_range(json_int(pg, "spec", "minMember", NULL));
                podgroup_priority(s, pg, ret);
                return 1;
        }
        if (!label || !label[0])
                return 0;
        if (asprintf(&ret->key, "%s/%s", ns, label) < 0) {
                ret->key = NULL;
                return -ENOMEM;
        }
        ret->what = "label";
        if (min) {
                char *end = NULL;
                long long n;
                errno = 0;
                n = strtoll(min, &end, 10);
                if (!errno && end != min && !*end)
                        ret->min = min_in_range(n);
        }
        return 1;
}

const json_t *gang_volcano_group(struct xp_scheduler *s, const struct pending *p)
{
        if (!p->gang || p->gang_missing || strcmp(p->gang_what, "podgroup") != 0)
                return NULL;
        return group_find(
            s, XP_SCHEDULER_PODGROUPS, p->namespace, p->gang + strlen(p->namespace) + 1);
}

/* ---- bound members -------------------------------------------------------------------------- */

static void member_forget(struct xp_scheduler *s, const char *pod_key)
{
        struct gang_member *m = xp_map_del(&s->gang_members, pod_key);

        if (!m)
                return;
        if (--m->gang->bound == 0) {
                (void)xp_map_del(&s->gang_counts, m->gang->key);
                free(m->gang->key);
                free(m->gang);
        }
        free(m->pod);
        free(m);
}

void gang_bound_seen(
    struct xp_scheduler *s, const json_t *pod, const char *ns, const char *name, bool bound)
{
        char key[2 * NAME_MAX_LEN + 2];
        struct gang_id id;
        struct gang_count *g;
        struct gang_member *m;

        if (snprintf(key, sizeof(key), "%s/%s", ns, name) >= (int)sizeof(key))
                return;
        m = xp_map_get(&s->gang_members, key);
        if (!bound || gang_identify(s, pod, ns, &id) <= 0) {
                member_forget(s, key);
                return;
        }
        if (m && strcmp(m->gang->key, id.key) == 0) {
                free(id.key);
                return;
        }
        member_forget(s, key);
        g = xp_map_get(&s->gang_counts, id.key);
        if (!g) {
                g = calloc(1, sizeof(*g));
                if (!g || xp_map_put(&s->gang_counts, id.key, g) < 0) {
                        free(g);
                        free(id.key);
                        return;
                }
                g->key = TAKE_PTR(id.key);
        }
        free(id.key);
        m = calloc(1, sizeof(*m));
        if (m)
                m->pod = strdup(key);
        if (!m || !m->pod || xp_map_put(&s->gang_members, m->pod, m) < 0) {
                if (m)
                        free(m->pod);
                free(m);
                if (g->bound == 0) {
                        (void)xp_map_del(&s->gang_counts, g->key);
                        free(g->key);
                        free(g);
                }
                return;
        }
        m->gang = g;
        g->bound++;
}

int64_t gang_bound(struct xp_scheduler *s, const char *gang)
{
        const struct gang_count *g = xp_map_get(&s->gang_counts, gang);

        return g ? g->bound : 0;
}

/* ---- the PodGroups' status -------------------------------------------------------------- */

#define PHASE_ATTEMPTS 4 /* stale writes read again before leaving it to the next attempt */

/* Volcano's status.phase: 1 changed, 0 already so, -ENOMEM. */
static int phase_set(json_t *status, const char *phase, int64_t now_s)
{
        (void)now_s;
        if (xp_streq0(json_string_value(json_object_get(status, "phase")), phase))
                return 0;
        return json_object_set_new(status, "phase", json_string(phase)) < 0 ? -ENOMEM : 1;
}

/*
 * Kubernetes' PodGroupScheduled condition (KEP-5832): True (Scheduled) once the gang is placed,
 * False (Unschedulable) while enough members are there but do not fit; a gang still waiting for
 * members is not yet tried, so says nothing. 1 changed, 0 already so, -ENOMEM.
 */
static int condition_set(json_t *status, const char *phase, int64_t now_s)
{
        bool placed = strcmp(phase, "Running") == 0;
        const char *want = placed ? "True" : "False";
        const char *reason = placed ? "Scheduled" : "Unschedulable";
        json_t *conditions = json_object_get(status, "conditions"), *c = NULL, *item;
        char when[XP_RFC3339_MAX];
        size_t i;
        int r;

        if (strcmp(phase, "Pending") == 0)
                return 0;
        if (!json_is_array(conditions)) {
                conditions = json_array();
                if (json_object_set_new(status, "conditions", conditions) < 0)
                        return -ENOMEM;
        }
        json_array_foreach(conditions, i, item)
        {
                if (xp_streq0(json_string_value(json_object_get(item, "type")),
                              "PodGroupScheduled"))
                        c = item;
        }
        if (c && xp_streq0(json_string_value(json_object_get(c, "status")), want) &&
            xp_streq0(json_string_value(json_object_get(c, "reason")), reason))
                return 0;
        if (xp_time_format_rfc3339(now_s, when) < 0)
                return -EINVAL;
        item = json_pack("{s:s, s:s, s:s, s:s, s:s}",
                         "type",
                         "PodGroupScheduled",
                         "status",
                         want,
                         "reason",
                         reason,
                         "message",
                         placed ? "all required pods are placed" : "the gang does not fit",
                         "lastTransitionTime",
                         when);
        if (!item)
                return -ENOMEM;
        if (!c)
                return json_array_append_new(conditions, item) < 0 ? -ENOMEM : 1;
        r = json_object_update(c, item) < 0 ? -ENOMEM : 1;
        json_decref(item);
        return r;
}

void podgroup_phase(struct xp_scheduler *s, const struct pending *p, const char *phase)
{
        struct xp_store *store = xp_registry_store(s->registry);
        int (*edit)(json_t * status, const char *phase, int64_t now_s);
        const char *resource, *name;
        struct xp_error err = {0};
        int r = -ESTALE;

        if (!p->gang || p->gang_missing)
                return;
        if (strcmp(p->gang_what, "podgroup") == 0) {
                resource = XP_SCHEDULER_PODGROUPS;
                edit = phase_set;
        } else if (strcmp(p->gang_what, XP_GANG_SCHEDULING_GROUP) == 0) {
                resource = XP_SCHEDULER_K8S_PODGROUPS;
                edit = condition_set;
        } else {
                return;
        }
        name = p->gang + strlen(p->namespace) + 1;
        for (unsigned attempt = 0; attempt < PHASE_ATTEMPTS && r == -ESTALE; attempt++) {
                json_t *pg = NULL, *status;
                uint64_t version;

                r = xp_store_get(store, resource, p->namespace, name, &pg, &version, &err);
                if (r < 0)
                        break;
                status = json_object_get(pg, "status");
                if (!json_is_object(status)) {
                        status = json_object();
                        json_object_set_new(pg, "status", status);
                }
                r = edit(status, phase, xp_clock_wall_s(s->clock));
                if (r > 0)
                        r = xp_store_update(
                            store, resource, p->namespace, name, version, pg, NULL, &err);
                json_decref(pg);
        }
        if (r < 0 && r != -ENOENT)
                xp_log(LOG_WARNING,
                       "scheduler: the status of PodGroup %s not written: %s",
                       p->gang,
                       err.msg[0] ? err.msg : strerror(-r));
}

/* ---- the followed groups -------------------------------------------------------------------- */

/* A pending pod of Volcano's PodGroup name takes its queue again (it may name one now, or
 * another): the queues count it there, and the fair order reads it. */
static void podgroup_queue_read(struct xp_scheduler *s, struct pending *p, const char *name)
{
        const char *group = json_string_value(
            json_object_get(json_object_get(json_object_get(p->pod, "metadata"), "annotations"),
                            XP_GANG_VOLCANO_ANNOTATION));

        if (p->inflight || !xp_streq0(group, name))
                return; /* one in flight is counted as placed until its binding is seen */
        queue_ctl_pod(s->queues, p->pod, false);
        if (pending_queue_read(s, p) < 0)
                xp_log(LOG_WARNING, "scheduler: pod %s/%s: out of memory", p->namespace, p->name);
}

void group_seen(struct xp_scheduler *s, const char *resource, const json_t *object, bool deleted)
{
        const char *ns =
            json_string_value(json_object_get(json_object_get(object, "metadata"), "namespace"));
        const char *name =
            json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
        struct group_obj *g;
        char *key = NULL;

        if (!ns || !name || asprintf(&key, "%s/%s/%s", resource, ns, name) < 0)
                return;
        if (strcmp(resource, XP_SCHEDULER_PODGROUPS) == 0)
                queue_ctl_podgroup(s->queues, object, deleted);
        g = xp_map_get(&s->groups, key);
        if (deleted) {
                if (g) {
                        (void)xp_map_del(&s->groups, key);
                        free(g->key);
                        json_decref(g->object);
                        free(g);
                }
                free(key);
        } else if (g) {
                json_decref(g->object);
                g->object = json_incref((json_t *)object);
                free(key);
        } else {
                g = calloc(1, sizeof(*g));
                if (!g || xp_map_put(&s->groups, key, g) < 0) {
                        free(g);
                        free(key);
                        return;
                }
                g->key = key;
                g->object = json_incref((json_t *)object);
        }
        /* the pods of the namespace read their gang again and are tried */
        for (size_t i = 0; i < s->n_queue; i++) {
                struct pending *p = s->queue[i];
                if (strcmp(p->namespace, ns) != 0)
                        continue;
                if (strcmp(resource, XP_SCHEDULER_PODGROUPS) == 0)
                        podgroup_queue_read(s, p, name);
                if (pending_gang_read(s, p) < 0)
                        xp_log(LOG_WARNING, "scheduler: pod %s/%s: out of memory", ns, p->name);
                if (p->gang)
                        p->waiting = false;
        }
}

void groups_clear(struct xp_scheduler *s)
{
        for (size_t i = 0; i < s->groups.cap; i++) {
                struct group_obj *g = s->groups.values ? s->groups.values[i] : NULL;
                if (!g)
                        continue;
                free(g->key);
                json_decref(g->object);
                free(g);
        }
        xp_map_done(&s->groups);
        for (size_t i = 0; i < s->gang_members.cap; i++) {
                struct gang_member *m = s->gang_members.values ? s->gang_members.values[i] : NULL;
                if (!m)
                        continue;
                free(m->pod);
                free(m);
        }
        xp_map_done(&s->gang_members);
        for (size_t i = 0; i < s->gang_counts.cap; i++) {
                struct gang_count *g = s->gang_counts.values ? s->gang_counts.values[i] : NULL;
                if (!g)
                        continue;
                free(g->key);
                free(g);
        }
        xp_map_done(&s->gang_counts);
}
